package testgit

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// SSHServer is an sshd on loopback through which a bare repository is
// reached as ssh://USER@127.0.0.1:PORT/abs/path/repo.git.
type SSHServer struct {
	// URL is the repository's ssh:// URL. Its user is the current user,
	// whom sshd runs as and logs in.
	URL string
	// KeyFile is an unencrypted OpenSSH private key that sshd accepts.
	KeyFile string
	// EncryptedKeyFile is another accepted key, encrypted with
	// KeyPassphrase, which KeyPassphraseFile holds (no newline).
	EncryptedKeyFile, KeyPassphrase, KeyPassphraseFile string
	// KnownHostsFile lists the server's host key for [127.0.0.1]:PORT.
	KnownHostsFile string
	// WrongKnownHostsFile lists another key for the same host, as after a
	// host key change or a man in the middle.
	WrongKnownHostsFile string
	// OtherTypeKnownHostsFile lists a key of another type (ECDSA) for the
	// same host, whose only host key is Ed25519: as when a server dropped
	// the type of key known_hosts has for it.
	OtherTypeKnownHostsFile string
}

// StartSSH runs /usr/sbin/sshd -D -e -f <own config> on a random loopback
// port, as the current user, with its own host key, its own pid file, no
// PAM and no password logins; the authorized keys are the two client keys
// it generates. sshd is killed when the test ends.
func StartSSH(t testing.TB, bareDir string) *SSHServer {
	t.Helper()
	sshd := RequireProgram(t, "sshd", "openssh-server", "/usr/sbin", "/usr/local/sbin")
	keygen := RequireProgram(t, "ssh-keygen", "openssh-client")
	RequireProgram(t, "git", "git")
	if !filepath.IsAbs(sshd) {
		// sshd re-executes itself and refuses a relative path.
		p, err := filepath.Abs(sshd)
		if err != nil {
			t.Fatal(err)
		}
		sshd = p
	}
	abs, err := filepath.Abs(bareDir)
	if err != nil {
		t.Fatal(err)
	}
	u, err := user.Current()
	if err != nil {
		t.Fatal(err)
	}
	if os.Geteuid() == 0 {
		// sshd running as root wants its privilege separation directory.
		if err := os.MkdirAll("/run/sshd", 0o755); err != nil {
			t.Fatalf("testgit: creating /run/sshd for sshd: %v", err)
		}
	}

	dir := t.TempDir()
	path := func(name string) string { return filepath.Join(dir, name) }
	genKeyType := func(name, typ, passphrase string) {
		cmd := exec.Command(keygen, "-q", "-t", typ, "-N", passphrase, "-C", name, "-f", path(name))
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("testgit: ssh-keygen %s: %v: %s", name, err, out)
		}
	}
	genKey := func(name, passphrase string) { genKeyType(name, "ed25519", passphrase) }
	genKey("host_key", "")
	genKeyType("ecdsa_host_key", "ecdsa", "")
	genKey("wrong_host_key", "")
	genKey("client_key", "")
	passphrase := "pp-" + randomHex(t, 12)
	genKey("client_key_encrypted", passphrase)
	writeFile(t, path("passphrase"), passphrase)

	var authorized bytes.Buffer
	for _, k := range []string{"client_key.pub", "client_key_encrypted.pub"} {
		b, err := os.ReadFile(path(k))
		if err != nil {
			t.Fatal(err)
		}
		authorized.Write(b)
	}
	writeFile(t, path("authorized_keys"), authorized.String())

	s := &SSHServer{
		KeyFile:             path("client_key"),
		EncryptedKeyFile:    path("client_key_encrypted"),
		KeyPassphrase:       passphrase,
		KeyPassphraseFile:   path("passphrase"),
		KnownHostsFile:      path("known_hosts"),
		WrongKnownHostsFile: path("wrong_known_hosts"),

		OtherTypeKnownHostsFile: path("other_type_known_hosts"),
	}

	// A port picked by the kernel may be taken again before sshd binds it;
	// try a few times.
	var lastErr error
	for range 5 {
		port := freePort(t)
		config := strings.Join([]string{
			"Port " + strconv.Itoa(port),
			"ListenAddress 127.0.0.1",
			"HostKey " + path("host_key"),
			"PidFile " + path("sshd.pid"),
			"AuthorizedKeysFile " + path("authorized_keys"),
			"UsePAM no",
			"StrictModes no",
			"PermitRootLogin prohibit-password",
			"PubkeyAuthentication yes",
			"PasswordAuthentication no",
			"KbdInteractiveAuthentication no",
			"AllowTcpForwarding no",
			"X11Forwarding no",
			"AllowAgentForwarding no",
			"PermitTTY no",
			"PrintMotd no",
			"AcceptEnv LANG",
			"LogLevel ERROR",
			"",
		}, "\n")
		writeFile(t, path("sshd_config"), config)
		stderr := &lockedBuffer{}
		cmd := exec.Command(sshd, "-D", "-e", "-f", path("sshd_config"))
		cmd.Stderr = stderr
		if err := cmd.Start(); err != nil {
			t.Fatalf("testgit: starting sshd: %v", err)
		}
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait() }()
		if err := waitListening(port, exited); err != nil {
			lastErr = fmt.Errorf("%w: %s", err, stderr.String())
			_ = cmd.Process.Kill()
			continue
		}
		t.Cleanup(func() {
			_ = cmd.Process.Kill()
			<-exited
		})
		hostPub := readFile(t, path("host_key.pub"))
		wrongPub := readFile(t, path("wrong_host_key.pub"))
		hostPattern := "[127.0.0.1]:" + strconv.Itoa(port)
		writeFile(t, s.KnownHostsFile, hostPattern+" "+keyField(hostPub)+"\n")
		writeFile(t, s.WrongKnownHostsFile, hostPattern+" "+keyField(wrongPub)+"\n")
		writeFile(t, s.OtherTypeKnownHostsFile, hostPattern+" "+keyField(readFile(t, path("ecdsa_host_key.pub")))+"\n")
		s.URL = "ssh://" + u.Username + "@127.0.0.1:" + strconv.Itoa(port) + abs
		return s
	}
	t.Fatalf("testgit: sshd did not start: %v", lastErr)
	return nil
}

// keyField returns "TYPE BASE64" from a .pub line, dropping its comment.
func keyField(pub string) string {
	f := strings.Fields(pub)
	if len(f) < 2 {
		return pub
	}
	return f[0] + " " + f[1]
}

func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	_ = l.Close()
	return port
}

// waitListening waits until something accepts connections on port, or
// until the process reports on exited.
func waitListening(port int, exited <-chan error) error {
	deadline := time.Now().Add(10 * time.Second)
	addr := "127.0.0.1:" + strconv.Itoa(port)
	for time.Now().Before(deadline) {
		select {
		case err := <-exited:
			return fmt.Errorf("sshd exited: %v", err)
		default:
		}
		c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
		if err == nil {
			_ = c.Close()
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("sshd not listening on %s after 10s", addr)
}

// lockedBuffer collects a child's standard error; it may be read while the
// child still writes.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func writeFile(t testing.TB, p, content string) {
	t.Helper()
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

func readFile(t testing.TB, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
