package gitwriter

import (
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/go-git/go-git/v5/plumbing/transport"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	gitssh "github.com/go-git/go-git/v5/plumbing/transport/ssh"
	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"

	"github.com/imagebump/imagebump/internal/secretfile"
)

// Auth holds the credentials for the remote, as files read at each use so
// that they can be rotated between cycles. Which fields apply depends on the
// URL's scheme; fields for another scheme are an error.
type Auth struct {
	// TokenFile holds an HTTPS access token, sent as the password of basic
	// auth with the username "x-access-token" (GitHub, GitLab and Gitea
	// accept any username with a token).
	TokenFile string
	// UsernameFile and PasswordFile hold HTTPS basic auth credentials. Set
	// both, or neither; they exclude TokenFile.
	UsernameFile, PasswordFile string
	// SSHKeyFile holds an SSH private key (PEM or OpenSSH format); required
	// for ssh:// and scp-like URLs.
	SSHKeyFile string
	// SSHKeyPassphraseFile holds the passphrase of an encrypted SSHKeyFile.
	SSHKeyPassphraseFile string
	// KnownHostsFile lists the SSH server's accepted host keys (OpenSSH
	// known_hosts format); required for SSH unless InsecureIgnoreHostKey.
	KnownHostsFile string
	// InsecureIgnoreHostKey accepts any SSH host key. It excludes
	// KnownHostsFile.
	InsecureIgnoreHostKey bool
}

// describe says which credentials a remote of kind k is sent, naming files,
// never their content.
func (a Auth) describe(k kind) string {
	switch {
	case k == kindSSH && a.SSHKeyFile != "":
		return "the SSH key in " + a.SSHKeyFile
	case k == kindSSH:
		return "no SSH key (git.auth.sshKeyFile is not set)"
	case a.TokenFile != "":
		return "the token in " + a.TokenFile + " as the password of user " + tokenUsername
	case a.UsernameFile != "":
		return "the user name in " + a.UsernameFile + " and the password in " + a.PasswordFile
	}
	return "no credentials (git.auth is not set)"
}

// tokenUsername is the basic auth username sent with a token.
const tokenUsername = "x-access-token"

// kind is how the remote is reached.
type kind int

const (
	kindHTTP kind = iota
	kindSSH
	kindFile
)

// validate checks that the fields set fit the transport.
func (a Auth) validate(k kind) error {
	httpSet := a.TokenFile != "" || a.UsernameFile != "" || a.PasswordFile != ""
	sshSet := a.SSHKeyFile != "" || a.SSHKeyPassphraseFile != "" || a.KnownHostsFile != "" || a.InsecureIgnoreHostKey
	switch k {
	case kindHTTP:
		if sshSet {
			return errors.New("ssh key and known hosts settings do not apply to an http(s) URL")
		}
		if a.TokenFile != "" && (a.UsernameFile != "" || a.PasswordFile != "") {
			return errors.New("token file and username/password files are exclusive")
		}
		if (a.UsernameFile == "") != (a.PasswordFile == "") {
			return errors.New("username file and password file go together")
		}
	case kindSSH:
		if httpSet {
			return errors.New("token, username and password files do not apply to an ssh URL")
		}
		if a.SSHKeyFile == "" {
			return errors.New("an ssh URL needs an ssh key file")
		}
		if a.KnownHostsFile == "" && !a.InsecureIgnoreHostKey {
			return errors.New("an ssh URL needs a known hosts file (or host key checking turned off explicitly)")
		}
		if a.KnownHostsFile != "" && a.InsecureIgnoreHostKey {
			return errors.New("known hosts file and ignoring host keys are exclusive")
		}
	case kindFile:
		if httpSet || sshSet {
			return errors.New("credentials do not apply to a file URL")
		}
	}
	return nil
}

// readSecret reads a secret file and drops its trailing line endings. Its
// errors name the file and never its content.
func readSecret(what, path string) (string, error) {
	s, err := secretfile.Read(path)
	switch {
	case errors.Is(err, secretfile.ErrEmpty):
		return "", fmt.Errorf("%s %s is empty", what, secretfile.Shown(path))
	case err != nil:
		return "", fmt.Errorf("reading %s: %w", what, err)
	}
	return s, nil
}

// authMethod builds the transport credentials for one network operation,
// reading the secret files anew. It returns nil for anonymous access.
func (r *Repo) authMethod() (transport.AuthMethod, error) {
	a := r.opts.Auth
	switch r.kind {
	case kindHTTP:
		switch {
		case a.TokenFile != "":
			token, err := readSecret("token file", a.TokenFile)
			if err != nil {
				return nil, err
			}
			r.noteSecret("token", token)
			// The pair travels base64-encoded in the Authorization
			// header, which servers echo in their error bodies.
			r.noteSecret("token basic auth", tokenUsername+":"+token)
			return &githttp.BasicAuth{Username: tokenUsername, Password: token}, nil
		case a.UsernameFile != "":
			user, err := readSecret("username file", a.UsernameFile)
			if err != nil {
				return nil, err
			}
			pass, err := readSecret("password file", a.PasswordFile)
			if err != nil {
				return nil, err
			}
			r.noteSecret("password", pass)
			r.noteSecret("basic auth", user+":"+pass)
			return &githttp.BasicAuth{Username: user, Password: pass}, nil
		}
		return nil, nil
	case kindSSH:
		return r.sshAuth()
	}
	return nil, nil
}

// sshAuth is the SSH credential for one operation: the private key, the
// host key check and the dial timeout.
type sshAuth struct {
	gitssh.PublicKeys
	timeout time.Duration

	// remote, hostPort and knownHosts name the remote (redacted), the
	// server (host:port) and the known hosts file, for a HostKeyError
	// built after the handshake; knownHosts is "" when host keys are not
	// checked.
	remote, hostPort, knownHosts string

	mu         sync.Mutex
	hostKeyErr *HostKeyError
}

var _ gitssh.AuthMethod = (*sshAuth)(nil)

// ClientConfig implements gitssh.AuthMethod, adding the dial timeout.
func (a *sshAuth) ClientConfig() (*ssh.ClientConfig, error) {
	c, err := a.PublicKeys.ClientConfig()
	if err != nil {
		return nil, err
	}
	c.Timeout = a.timeout
	return c, nil
}

// String implements transport.AuthMethod without naming any secret.
func (a *sshAuth) String() string { return "ssh public key for user " + a.User }

// rejected returns the host key error seen during the handshake, if any.
func (a *sshAuth) rejected() *HostKeyError {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.hostKeyErr
}

func (r *Repo) sshAuth() (*sshAuth, error) {
	a := r.opts.Auth
	key, err := secretfile.ReadBytes(a.SSHKeyFile)
	if err != nil {
		return nil, fmt.Errorf("reading ssh key file: %w", err)
	}
	var signer ssh.Signer
	if a.SSHKeyPassphraseFile != "" {
		pass, err := readSecret("ssh key passphrase file", a.SSHKeyPassphraseFile)
		if err != nil {
			return nil, err
		}
		r.noteSecret("ssh key passphrase", pass)
		signer, err = ssh.ParsePrivateKeyWithPassphrase(key, []byte(pass))
		if err != nil {
			return nil, fmt.Errorf("decrypting ssh key file %s with the passphrase file: %w", a.SSHKeyFile, err)
		}
	} else {
		signer, err = ssh.ParsePrivateKey(key)
		if err != nil {
			var missing *ssh.PassphraseMissingError
			if errors.As(err, &missing) {
				return nil, fmt.Errorf("ssh key file %s is encrypted and no passphrase file is set: %w", a.SSHKeyFile, err)
			}
			return nil, fmt.Errorf("parsing ssh key file %s: %w", a.SSHKeyFile, err)
		}
	}
	auth := &sshAuth{timeout: r.timeout("")}
	auth.User = r.sshUser
	auth.Signer = signer
	hostPort := net.JoinHostPort(r.sshHost, strconv.Itoa(r.sshPort))
	if a.InsecureIgnoreHostKey {
		auth.HostKeyCallback = ssh.InsecureIgnoreHostKey()
		return auth, nil
	}
	if _, err := os.Stat(a.KnownHostsFile); err != nil {
		// go-git's own words point to SSH_KNOWN_HOSTS, which is not read.
		return nil, fmt.Errorf("reading the known hosts file git.auth.knownHostsFile names, %s: %w; make it with %s, checked against the server's published fingerprints", a.KnownHostsFile, err, keyscan(hostPort))
	}
	auth.remote, auth.hostPort, auth.knownHosts = r.remote, hostPort, a.KnownHostsFile
	db, err := gitssh.NewKnownHostsDb(a.KnownHostsFile)
	if err != nil {
		return nil, fmt.Errorf("reading the known hosts file %s: %w", a.KnownHostsFile, err)
	}
	check := db.HostKeyCallback()
	auth.HostKeyCallback = func(hostname string, remote net.Addr, key ssh.PublicKey) error {
		err := check(hostname, remote, key)
		if err == nil {
			return nil
		}
		var ke *knownhosts.KeyError
		hk := &HostKeyError{Remote: r.remote, Host: hostname, File: a.KnownHostsFile, Err: err}
		hk.Unknown = errors.As(err, &ke) && len(ke.Want) == 0
		auth.mu.Lock()
		auth.hostKeyErr = hk
		auth.mu.Unlock()
		return hk
	}
	// Offer the server only the key types known_hosts has for it, so that
	// it does not pick another type of its keys and fail the check.
	auth.HostKeyAlgorithms = db.HostKeyAlgorithms(hostPort)
	return auth, nil
}

// hostKeyError returns the host key error of an SSH operation that failed
// with err, so that the caller can report it whatever the SSH package
// wrapped around it or flattened: the one the host key check recorded,
// or, when the server offered no host key of a type the known hosts file
// has for it (the check never ran), one saying which types each side has.
func hostKeyError(auth transport.AuthMethod, err error) *HostKeyError {
	a, ok := auth.(*sshAuth)
	if !ok {
		return nil
	}
	if hk := a.rejected(); hk != nil {
		return hk
	}
	var ne *ssh.AlgorithmNegotiationError
	if a.knownHosts != "" && errors.As(err, &ne) && ne.What == "host key" {
		return &HostKeyError{Remote: a.remote, Host: a.hostPort, File: a.knownHosts, KnownTypes: ne.SupportedAlgorithms, ServerTypes: ne.RequestedAlgorithms, Err: err}
	}
	return nil
}
