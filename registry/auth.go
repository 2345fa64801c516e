package registry

import (
	"bytes"
	"context"
	"errors"
	"regexp"

	"github.com/docker/cli/cli/config"
	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"

	"github.com/imagebump/imagebump/internal/secretfile"
)

// configuredAuth returns the authenticator for a host's username, password
// or token files, or nil when the host has none of them.
func configuredAuth(hc Host) authn.Authenticator {
	switch {
	case hc.TokenFile != "":
		return &fileAuth{tokenFile: hc.TokenFile}
	case hc.UsernameFile != "" && hc.PasswordFile != "":
		return &fileAuth{usernameFile: hc.UsernameFile, passwordFile: hc.PasswordFile}
	}
	return nil
}

// authKey returns the registries[].auth key that gives hc's credentials,
// or "" when they come from Options.Keychain.
func authKey(hc Host) string {
	switch {
	case hc.TokenFile != "":
		return "tokenFile"
	case hc.UsernameFile != "" && hc.PasswordFile != "":
		return "usernameFile"
	case hc.DockerConfig != "":
		return "dockerConfig"
	}
	return ""
}

// fileAuth reads credentials from files at each use, so that they can be
// rotated without a restart.
type fileAuth struct {
	usernameFile string
	passwordFile string
	tokenFile    string
}

var _ authn.Authenticator = (*fileAuth)(nil)

// Authorization implements authn.Authenticator.
func (a *fileAuth) Authorization() (*authn.AuthConfig, error) {
	if a.tokenFile != "" {
		token, err := readSecret("tokenFile", a.tokenFile)
		if err != nil {
			return nil, err
		}
		return &authn.AuthConfig{RegistryToken: token}, nil
	}
	user, err := readSecret("usernameFile", a.usernameFile)
	if err != nil {
		return nil, err
	}
	pass, err := readSecret("passwordFile", a.passwordFile)
	if err != nil {
		return nil, err
	}
	return &authn.AuthConfig{Username: user, Password: pass}, nil
}

// readSecret reads a one-line secret file and drops its trailing line endings.
// Its errors name the file and never its content.
// key is the registries[].auth key that names the file.
func readSecret(key, path string) (string, error) {
	s, err := secretfile.Read(path)
	if err != nil {
		return "", &credentialError{key: key, path: path, err: err}
	}
	return s, nil
}

// dockerConfigKeychain resolves credentials from one Docker config file:
// its "auths", and the helpers named by "credHelpers" and "credsStore".
type dockerConfigKeychain struct {
	path string
}

var _ authn.Keychain = dockerConfigKeychain{}

// Resolve implements authn.Keychain. The file is read at each call.
func (k dockerConfigKeychain) Resolve(target authn.Resource) (authn.Authenticator, error) {
	b, err := secretfile.ReadFile(k.path, secretfile.MaxSize)
	if err != nil {
		return nil, &credentialError{key: "dockerConfig", path: k.path, err: err}
	}
	cf, err := config.LoadFromReader(bytes.NewReader(b))
	if err != nil {
		// The decoder's message may quote part of the file: leave it out.
		return nil, &credentialError{key: "dockerConfig", path: k.path, err: errors.New("not a valid docker config.json")}
	}
	// The most specific key first: a config may hold credentials for one
	// repository and others for the whole registry.
	keys := []string{target.String(), target.RegistryStr()}
	if dockerHubAliases[target.RegistryStr()] {
		keys = append(keys, authn.DefaultAuthKey, "docker.io", "registry-1.docker.io")
	}
	for _, key := range keys {
		ac, err := cf.GetAuthConfig(key)
		if err != nil {
			return nil, &credentialError{key: "dockerConfig", path: k.path, err: err, helper: missingHelper(err)}
		}
		cfg := authn.AuthConfig{
			Username:      ac.Username,
			Password:      ac.Password,
			Auth:          ac.Auth,
			IdentityToken: ac.IdentityToken,
			RegistryToken: ac.RegistryToken,
		}
		if cfg != (authn.AuthConfig{}) {
			return authn.FromConfig(cfg), nil
		}
	}
	return authn.Anonymous, nil
}

// authenticator returns the credentials to use for repo on host h.
func (c *Client) authenticator(ctx context.Context, h *host, repo name.Repository) (authn.Authenticator, error) {
	if h.auth != nil {
		return h.auth, nil
	}
	kc := c.keychain
	if h.cfg.DockerConfig != "" {
		kc = dockerConfigKeychain{path: h.cfg.DockerConfig}
	}
	a, err := authn.Resolve(ctx, kc, repo)
	if err != nil {
		var ce *credentialError
		if errors.As(err, &ce) {
			return nil, err
		}
		return nil, &credentialError{path: repo.RegistryStr(), err: err, helper: missingHelper(err)}
	}
	return a, nil
}

// helperNotFound matches the error Docker's credential store code returns
// when the helper program a config names is not on PATH. The code formats
// the cause with %v, so its text is all there is to go on.
var helperNotFound = regexp.MustCompile(`exec: "(docker-credential-[^"\s]+)": executable file not found`)

// missingHelper returns the credential helper program err says is not
// installed, or "".
func missingHelper(err error) string {
	if m := helperNotFound.FindStringSubmatch(err.Error()); m != nil {
		return m[1]
	}
	return ""
}
