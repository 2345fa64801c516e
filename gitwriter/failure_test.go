package gitwriter

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/ProtonMail/go-crypto/openpgp/armor"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/transport"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	"github.com/google/go-cmp/cmp"

	"github.com/imagebump/imagebump/internal/testkit/testgit"
)

func TestRemoteGoesAwayMidPush(t *testing.T) {
	for _, pushBranch := range []string{"", "imagebump/main"} {
		t.Run("push branch "+pushBranch, func(t *testing.T) {
			bare, s, auth := httpRemote(t)
			workdir := t.TempDir()
			opts := Options{URL: s.URL, Branch: "main", Auth: auth, Workdir: workdir}
			u := Update{Commit: author, PushBranch: pushBranch}
			edit := setFiles(map[string]string{"clusters/prod/app.yaml": "image: app:1.1.0\n"}, "Bump app", nil)
			before := testgit.Refs(t, bare)

			r := mustOpen(t, opts)
			s.FailReceivePack(true)
			_, err := r.Update(t.Context(), u, edit)
			if err == nil {
				t.Fatal("Update succeeded while the remote hung up on every push")
			}
			wantBranch := "main"
			if pushBranch != "" {
				wantBranch = pushBranch
			}
			for _, want := range []string{"pushing to " + s.URL, `"` + wantBranch + `"`} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not contain %q", err, want)
				}
			}
			if s.ReceivePackRequests() == 0 {
				t.Fatal("no push reached the server")
			}
			if diff := cmp.Diff(testgit.Refs(t, bare), before); diff != "" {
				t.Errorf("remote refs changed by a failed push (-got +want):\n%s", diff)
			}
			if got := testgit.Git(t, bare, "fsck", "--no-dangling"); got != "" {
				t.Errorf("git fsck on the remote after a failed push: %s", got)
			}

			// The remote comes back; the next run recovers.
			s.FailReceivePack(false)
			got, err := mustOpen(t, opts).Update(t.Context(), u, edit)
			if err != nil {
				t.Fatal(err)
			}
			if !got.Pushed {
				t.Errorf("Update after recovery = %+v, want a push", got)
			}
			if diff := cmp.Diff(testgit.Log(t, bare, wantBranch), []string{"Bump app", "initial commit"}); diff != "" {
				t.Errorf("remote log after recovery mismatch (-got +want):\n%s", diff)
			}
		})
	}
}

func TestRemoteGoneDuringOpen(t *testing.T) {
	bare, s, auth := httpRemote(t)
	workdir := t.TempDir()
	opts := Options{URL: s.URL, Branch: "main", Auth: auth, Workdir: workdir}
	mustOpen(t, opts)
	moved := testgit.Commit(t, bare, "main", map[string]string{"new.yaml": "n\n"}, nil, "meanwhile")

	s.FailAll(true)
	if _, err := Open(t.Context(), opts); err == nil || !strings.Contains(err.Error(), "fetching "+s.URL) {
		t.Fatalf("Open with the remote gone: error = %v, want a fetch error naming the remote", err)
	}
	// A network failure keeps the working copy for the next run.
	if _, err := os.Stat(filepath.Join(workdir, ".git")); err != nil {
		t.Fatalf("the working copy was deleted after a network failure: %v", err)
	}
	fresh := filepath.Join(t.TempDir(), "fresh")
	if _, err := Open(t.Context(), Options{URL: s.URL, Branch: "main", Auth: auth, Workdir: fresh}); err == nil {
		t.Fatal("clone with the remote gone succeeded")
	}
	if entries, _ := os.ReadDir(fresh); len(entries) != 0 {
		t.Errorf("a failed clone left %d entries in the workdir", len(entries))
	}

	s.FailAll(false)
	for _, dir := range []string{workdir, fresh} {
		r := mustOpen(t, Options{URL: s.URL, Branch: "main", Auth: auth, Workdir: dir})
		if r.Head() != moved {
			t.Errorf("Head() after recovery = %s, want %s", r.Head(), moved)
		}
	}
}

func TestUpdateMissingBranchLater(t *testing.T) {
	bare := testgit.NewBare(t, seed)
	testgit.Commit(t, bare, "release", nil, nil, "release branch")
	workdir := t.TempDir()
	opts := Options{URL: fileURL(bare), Branch: "release", Workdir: workdir}
	mustOpen(t, opts)
	testgit.Git(t, bare, "branch", "-D", "release")
	_, err := Open(t.Context(), opts)
	if !errors.Is(err, ErrBranchNotFound) {
		t.Fatalf("Open after the branch was deleted: error = %v, want ErrBranchNotFound", err)
	}
	if !strings.Contains(err.Error(), `"release"`) || !strings.Contains(err.Error(), bare) {
		t.Errorf("error %q does not name the branch and the remote", err)
	}
}

func TestCancelledContext(t *testing.T) {
	bare, s, auth := httpRemote(t)
	opts := Options{URL: s.URL, Branch: "main", Auth: auth, Workdir: t.TempDir()}
	cancelled, cancel := context.WithCancel(t.Context())
	cancel()

	t.Run("open", func(t *testing.T) {
		requests := s.Requests()
		_, err := Open(cancelled, Options{URL: s.URL, Branch: "main", Auth: auth, Workdir: t.TempDir()})
		if !errors.Is(err, context.Canceled) {
			t.Errorf("Open(cancelled) error = %v, want context.Canceled", err)
		}
		if s.Requests() != requests {
			t.Errorf("Open(cancelled) made %d requests", s.Requests()-requests)
		}
	})
	t.Run("reopen", func(t *testing.T) {
		mustOpen(t, opts)
		_, err := Open(cancelled, opts)
		if !errors.Is(err, context.Canceled) {
			t.Errorf("Open(cancelled) on a working copy: error = %v, want context.Canceled", err)
		}
	})
	for _, pushBranch := range []string{"", "imagebump/main"} {
		t.Run("update push branch "+pushBranch, func(t *testing.T) {
			before := testgit.Refs(t, bare)
			r := mustOpen(t, opts)
			_, err := r.Update(cancelled, Update{Commit: author, PushBranch: pushBranch}, setFiles(map[string]string{"a.yaml": "a\n"}, "a", nil))
			if !errors.Is(err, context.Canceled) {
				t.Errorf("Update(cancelled) error = %v, want context.Canceled", err)
			}
			if diff := cmp.Diff(testgit.Refs(t, bare), before); diff != "" {
				t.Errorf("Update(cancelled) changed the remote (-got +want):\n%s", diff)
			}
		})
	}
	t.Run("cancelled during the edit", func(t *testing.T) {
		before := testgit.Refs(t, bare)
		r := mustOpen(t, opts)
		ctx, cancel := context.WithCancel(t.Context())
		_, err := r.Update(ctx, Update{Commit: author}, func(ctx context.Context, dir string) ([]string, string, error) {
			cancel()
			return setFiles(map[string]string{"a.yaml": "a\n"}, "a", nil)(ctx, dir)
		})
		if !errors.Is(err, context.Canceled) {
			t.Errorf("Update cancelled during the edit: error = %v, want context.Canceled", err)
		}
		if diff := cmp.Diff(testgit.Refs(t, bare), before); diff != "" {
			t.Errorf("a cancelled Update changed the remote (-got +want):\n%s", diff)
		}
	})
}

// TestTimeout points Open at a server that accepts connections and never
// answers: each network operation must give up after Options.Timeout.
func TestTimeout(t *testing.T) {
	addr, _ := silentServer(t)
	for _, scheme := range []string{"http", "ssh"} {
		t.Run(scheme, func(t *testing.T) {
			opts := silentRemote(t, scheme, addr)
			opts.Timeout = 300 * time.Millisecond
			start := time.Now()
			_, err := Open(t.Context(), opts)
			elapsed := time.Since(start)
			if err == nil {
				t.Fatal("Open against a silent server succeeded")
			}
			if elapsed > 5*time.Second {
				t.Errorf("Open took %v with a 300ms timeout", elapsed)
			}
			if !strings.Contains(err.Error(), addr) {
				t.Errorf("error %q does not name the remote", err)
			}
			t.Logf("error after %v: %v", elapsed.Round(time.Millisecond), err)
		})
	}
}

// TestCancelledWithCause stops Open, as it waits on a silent server, with
// a context cancelled with a cause (imagebump's is the signal that stopped
// it): the error says the cancellation once, as "context canceled" or as
// the cause. net/http returns the cause itself, which network wrapped in
// "context canceled (...)": read with the signal named in place of
// "context canceled", that said "interrupted by SIGINT (Get ...:
// interrupted by SIGINT)".
func TestCancelledWithCause(t *testing.T) {
	cause := errors.New("stopped by the test")
	for _, scheme := range []string{"http", "ssh"} {
		t.Run(scheme, func(t *testing.T) {
			addr, accepted := silentServer(t)
			opts := silentRemote(t, scheme, addr)
			ctx, cancel := context.WithCancelCause(t.Context())
			errc := make(chan error, 1)
			go func() {
				_, err := Open(ctx, opts)
				errc <- err
			}()
			select {
			case <-accepted:
			case <-time.After(30 * time.Second):
				t.Fatal("Open never reached the server")
			}
			cancel(cause)
			var err error
			select {
			case err = <-errc:
			case <-time.After(30 * time.Second):
				t.Fatal("Open did not return after its context was cancelled")
			}
			if !errors.Is(err, context.Canceled) {
				t.Errorf("error %v, want context.Canceled", err)
			}
			msg := err.Error()
			if n := strings.Count(msg, cause.Error()) + strings.Count(msg, context.Canceled.Error()); n != 1 {
				t.Errorf("error %q says the cancellation %d times, want once", msg, n)
			}
			t.Logf("error: %v", err)
		})
	}
}

// silentServer accepts connections on a loopback address and never
// answers; accepted receives a value for each connection it can hold.
func silentServer(t *testing.T) (addr string, accepted <-chan struct{}) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	acc := make(chan struct{}, 100)
	go func() {
		var conns []net.Conn
		defer func() {
			for _, c := range conns {
				_ = c.Close()
			}
		}()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c) // held open, never answered
			select {
			case acc <- struct{}{}:
			default:
			}
		}
	}()
	return l.Addr().String(), acc
}

// silentRemote returns the options of the remote at addr (a
// silentServer's) by scheme, "http" or "ssh", with a workdir of its own.
func silentRemote(t *testing.T, scheme, addr string) Options {
	t.Helper()
	opts := Options{URL: "http://" + addr + "/repo.git", Branch: "main", Workdir: t.TempDir()}
	if scheme == "ssh" {
		opts.URL = "ssh://git@" + addr + "/repo.git"
		opts.Auth = Auth{SSHKeyFile: sshKey(t), InsecureIgnoreHostKey: true}
	}
	return opts
}

// sshKey returns the path of a new unencrypted ed25519 key.
func sshKey(t *testing.T) string {
	t.Helper()
	keygen := testgit.RequireProgram(t, "ssh-keygen", "openssh-client")
	p := filepath.Join(t.TempDir(), "key")
	if out, err := exec.Command(keygen, "-q", "-t", "ed25519", "-N", "", "-f", p).CombinedOutput(); err != nil {
		t.Fatalf("ssh-keygen: %v: %s", err, out)
	}
	return p
}

// newSigningKey writes an armored OpenPGP private key, encrypted with
// passphrase when it is not empty, and returns the key file, the armored
// public key and the entity.
func newSigningKey(t *testing.T, passphrase string) (keyFile string, public []byte) {
	t.Helper()
	e, err := openpgp.NewEntity("imagebump test", "", "imagebump@example.invalid", nil)
	if err != nil {
		t.Fatal(err)
	}
	var pub bytes.Buffer
	w, err := armor.Encode(&pub, openpgp.PublicKeyType, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Serialize(w); err != nil {
		t.Fatal(err)
	}
	_ = w.Close()
	if passphrase != "" {
		if err := e.EncryptPrivateKeys([]byte(passphrase), nil); err != nil {
			t.Fatal(err)
		}
	}
	var priv bytes.Buffer
	w, err = armor.Encode(&priv, openpgp.PrivateKeyType, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.SerializePrivateWithoutSigning(w, nil); err != nil {
		t.Fatal(err)
	}
	_ = w.Close()
	keyFile = filepath.Join(t.TempDir(), "key.asc")
	if err := os.WriteFile(keyFile, priv.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	return keyFile, pub.Bytes()
}

func TestSignedCommit(t *testing.T) {
	gpg := testgit.RequireProgram(t, "gpg", "gnupg")
	tests := []struct {
		name       string
		passphrase string
	}{
		{name: "plain key"},
		{name: "encrypted key", passphrase: "sign-pass-" + t.Name()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			keyFile, public := newSigningKey(t, tt.passphrase)
			signer := &Signer{KeyFile: keyFile}
			if tt.passphrase != "" {
				signer.PassphraseFile = writeSecret(t, tt.passphrase)
			}
			bare := testgit.NewBare(t, seed)
			r := mustOpen(t, Options{URL: fileURL(bare), Branch: "main", Workdir: t.TempDir()})
			c := author
			c.Signer = signer
			got, err := r.Update(t.Context(), Update{Commit: c}, setFiles(map[string]string{"clusters/prod/app.yaml": "image: app:1.1.0\n"}, "Bump app", nil))
			if err != nil {
				t.Fatal(err)
			}

			// gpg wants a short home path for its agent socket.
			home, err := os.MkdirTemp("", "gnupg")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				_ = exec.Command("gpgconf", "--homedir", home, "--kill", "all").Run()
				_ = os.RemoveAll(home)
			})
			if err := os.Chmod(home, 0o700); err != nil {
				t.Fatal(err)
			}
			imp := exec.Command(gpg, "--homedir", home, "--batch", "--import")
			imp.Stdin = bytes.NewReader(public)
			if out, err := imp.CombinedOutput(); err != nil {
				t.Fatalf("gpg --import: %v: %s", err, out)
			}
			env := []string{"GNUPGHOME=" + home}
			out, err := testgit.GitErr(t, bare, env, "verify-commit", "--raw", got.Commit)
			if err != nil {
				t.Fatalf("git verify-commit %s: %v\n%s", got.Commit, err, out)
			}
			// A commit from another key does not verify: the check is real.
			other, _ := newSigningKey(t, "")
			c.Signer = &Signer{KeyFile: other}
			got2, err := r.Update(t.Context(), Update{Commit: c}, setFiles(map[string]string{"clusters/prod/app.yaml": "image: app:1.2.0\n"}, "Bump app again", nil))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := testgit.GitErr(t, bare, env, "verify-commit", got2.Commit); err == nil {
				t.Errorf("git verify-commit accepted a commit signed by an unknown key")
			}
		})
	}
}

func TestSigningKeyErrors(t *testing.T) {
	encrypted, _ := newSigningKey(t, "the-passphrase")
	notAKey := writeSecret(t, "not a key")
	tests := []struct {
		name   string
		signer Signer
		wantIn string
	}{
		{name: "wrong passphrase", signer: Signer{KeyFile: encrypted, PassphraseFile: writeSecret(t, "wrong-passphrase")}, wantIn: "wrong passphrase?"},
		{name: "no passphrase", signer: Signer{KeyFile: encrypted}, wantIn: "no passphrase file"},
		{name: "not a key", signer: Signer{KeyFile: notAKey}, wantIn: "armored OpenPGP key"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := loadSigningKey(tt.signer, func(string) {})
			if err == nil || !strings.Contains(err.Error(), tt.wantIn) {
				t.Fatalf("loadSigningKey() error = %v, want one containing %q", err, tt.wantIn)
			}
			for _, secret := range []string{"the-passphrase", "wrong-passphrase"} {
				if strings.Contains(err.Error(), secret) {
					t.Errorf("error %q reveals %q", err, secret)
				}
			}
		})
	}
}

// TestNoSecretLeaks runs successful and failing operations with every kind
// of secret and searches the logs, the errors, the commits and every file
// of the working copy and the remote for each secret.
func TestNoSecretLeaks(t *testing.T) {
	bare := testgit.NewBare(t, seed)
	httpd := testgit.StartHTTP(t, bare, true)
	httpd.AllowUser(tokenUsername)
	sshd := testgit.StartSSH(t, bare)
	signPass := "sign-secret-passphrase"
	keyFile, _ := newSigningKey(t, signPass)
	wrongPass := "wrong-secret-password"
	secrets := []string{httpd.Password, sshd.KeyPassphrase, signPass, wrongPass}

	logger, logs := newLogger()
	var errs []string
	var workdirs []string
	run := func(name string, opts Options, pushBranch string) {
		opts.Branch = "main"
		opts.Logger = logger
		opts.Workdir = t.TempDir()
		workdirs = append(workdirs, opts.Workdir)
		r, err := Open(t.Context(), opts)
		if err != nil {
			errs = append(errs, err.Error())
			return
		}
		defer r.Close()
		c := author
		c.Signer = &Signer{KeyFile: keyFile, PassphraseFile: writeSecret(t, signPass)}
		edit := setFiles(map[string]string{"clusters/prod/" + name + ".yaml": "x\n"}, "Bump "+name, nil)
		if _, err := r.Update(t.Context(), Update{Commit: c, PushBranch: pushBranch}, edit); err != nil {
			errs = append(errs, err.Error())
		}
		// And a signing failure.
		c.Signer = &Signer{KeyFile: keyFile, PassphraseFile: writeSecret(t, wrongPass)}
		if _, err := r.Update(t.Context(), Update{Commit: c}, edit); err != nil {
			errs = append(errs, err.Error())
		}
	}
	run("token", Options{URL: httpd.URL, Auth: Auth{TokenFile: writeSecret(t, httpd.Password)}}, "")
	run("basic", Options{URL: httpd.URL, Auth: Auth{UsernameFile: writeSecret(t, httpd.Username), PasswordFile: writeSecret(t, httpd.Password)}}, "imagebump/main")
	run("wrong", Options{URL: httpd.URL, Auth: Auth{UsernameFile: writeSecret(t, httpd.Username), PasswordFile: writeSecret(t, wrongPass)}}, "")
	run("ssh", Options{URL: sshd.URL, Auth: Auth{SSHKeyFile: sshd.EncryptedKeyFile, SSHKeyPassphraseFile: writeSecret(t, sshd.KeyPassphrase), KnownHostsFile: sshd.KnownHostsFile}}, "")
	run("sshwrong", Options{URL: sshd.URL, Auth: Auth{SSHKeyFile: sshd.EncryptedKeyFile, SSHKeyPassphraseFile: writeSecret(t, wrongPass), KnownHostsFile: sshd.KnownHostsFile}}, "")

	// The runs did something: commits landed, failures were reported.
	if got := testgit.Log(t, bare, "main"); len(got) != 3 {
		t.Errorf("remote main log = %q, want the token and ssh bumps on the initial commit", got)
	}
	if len(errs) != 5 {
		t.Errorf("got %d errors, want 5 (3 signing, 1 auth, 1 ssh key): %q", len(errs), errs)
	}
	if !strings.Contains(logs.String(), "pushed") {
		t.Errorf("the log has no push in it:\n%s", logs)
	}

	messages := testgit.Git(t, bare, "log", "--all", "--format=%H %an %ae %cn %ce %B")
	for _, secret := range secrets {
		if strings.Contains(logs.String(), secret) {
			t.Errorf("the log reveals %q", secret)
		}
		for _, e := range errs {
			if strings.Contains(e, secret) {
				t.Errorf("error %q reveals %q", e, secret)
			}
		}
		if strings.Contains(messages, secret) {
			t.Errorf("a commit reveals %q", secret)
		}
		for _, dir := range append(workdirs, bare) {
			searchTree(t, dir, secret)
		}
	}
}

// searchTree fails the test when a file under dir contains secret.
func searchTree(t *testing.T, dir, secret string) {
	t.Helper()
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if bytes.Contains(b, []byte(secret)) {
			t.Errorf("%s reveals %q", p, secret)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestIndexFailsDuringPush: the index is written while the push runs.
// When writing it fails (here another git holds .git/index.lock), the
// error says so, with the result of a push that succeeded, or with the
// push's own error; either way the working copy is recorded nowhere and is
// reset before it is used again.
func TestIndexFailsDuringPush(t *testing.T) {
	for _, pushFails := range []bool{false, true} {
		t.Run(fmt.Sprintf("pushFails=%v", pushFails), func(t *testing.T) {
			bare, s, auth := httpRemote(t)
			base := mainSHA(t, bare)
			workdir := t.TempDir()
			opts := Options{URL: s.URL, Branch: "main", Auth: auth, Workdir: workdir}
			r := mustOpen(t, opts)
			lock := filepath.Join(workdir, ".git", "index.lock")
			edit := func(ctx context.Context, dir string) ([]string, string, error) {
				if err := os.WriteFile(lock, nil, 0o644); err != nil {
					return nil, "", err
				}
				return setFiles(map[string]string{"clusters/prod/app.yaml": "image: app:1.1.0\n"}, "Bump app", nil)(ctx, dir)
			}
			s.FailReceivePack(pushFails)
			res, err := r.Update(t.Context(), Update{Commit: author, MaxAttempts: 1}, edit)
			if err == nil {
				t.Fatalf("Update = %+v with the index locked", res)
			}
			wants := []string{"updating the working copy to the new commit failed", "locking the index: " + lock + " exists"}
			if pushFails {
				wants = append(wants, "pushing to "+s.URL)
				if res != nil {
					t.Errorf("Update = %+v with every push refused, want no result", res)
				}
				if got := mainSHA(t, bare); got != base {
					t.Errorf("remote main = %s after a refused push, want %s", got, base)
				}
			} else {
				if res == nil || !res.Pushed || res.Commit != mainSHA(t, bare) {
					t.Errorf("Update = %+v; want the pushed commit %s reported with the error", res, mainSHA(t, bare))
				}
				if content, _ := testgit.ReadFile(t, bare, "main", "clusters/prod/app.yaml"); content != "image: app:1.1.0\n" {
					t.Errorf("the pushed commit holds app.yaml = %q", content)
				}
			}
			for _, want := range wants {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not contain %q", err, want)
				}
			}
			if _, err := os.Stat(filepath.Join(workdir, ".git", resetStateFile)); err == nil {
				t.Error("the state file records a working copy whose index was not written")
			}

			// The lock's holder is done. The same Repo resets the working
			// copy before its next edit, and commits from a clean one.
			if err := os.Remove(lock); err != nil {
				t.Fatal(err)
			}
			s.FailReceivePack(false)
			res, err = r.Update(t.Context(), Update{Commit: author}, func(ctx context.Context, dir string) ([]string, string, error) {
				if got, _ := os.ReadFile(filepath.Join(dir, "clusters/prod/app.yaml")); pushFails && string(got) != seed["clusters/prod/app.yaml"] {
					t.Errorf("the next edit found app.yaml = %q, not the remote's", got)
				}
				return setFiles(map[string]string{"clusters/prod/web.yaml": "image: web:2.0.0\n"}, "Bump web", nil)(ctx, dir)
			})
			if err != nil || !res.Pushed {
				t.Fatalf("the next Update = %+v, %v", res, err)
			}
			checkWorkdir(t, workdir, bare, mainSHA(t, bare))
			r.Close()
			r = mustOpen(t, opts)
			checkWorkdir(t, workdir, bare, mainSHA(t, bare))
		})
	}
}

// checkPushedNotFollowed checks an Update whose push of app.yaml's bump
// landed while the working copy could not follow it: err says so, and
// each of wants; res reports the remote's new commit; and no state file
// records the working copy, which is reset before its next use.
func checkPushedNotFollowed(t *testing.T, res *Result, err error, bare, workdir string, wants ...string) {
	t.Helper()
	for _, want := range append([]string{"updating the working copy to the new commit failed"}, wants...) {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("Update error = %v, want one containing %q", err, want)
		}
	}
	if res == nil || !res.Pushed || res.Commit != mainSHA(t, bare) {
		t.Fatalf("Update = %+v; want the pushed commit %s reported with the error", res, mainSHA(t, bare))
	}
	if content, _ := testgit.ReadFile(t, bare, "main", "clusters/prod/app.yaml"); content != "image: app:1.1.0\n" {
		t.Errorf("the pushed commit holds app.yaml = %q", content)
	}
	if _, err := os.Stat(filepath.Join(workdir, ".git", resetStateFile)); err == nil {
		t.Error("the state file records a working copy that did not follow the push")
	}
}

// TestRefFailsAfterPush: the branch's local ref moves once the push has
// sent the commit (its objects are stored meanwhile). When it cannot be
// moved, the pushed commit is reported with the error, as when the index
// cannot be written, and the working copy is reset before its next use.
func TestRefFailsAfterPush(t *testing.T) {
	bare := testgit.NewBare(t, seed)
	workdir := t.TempDir()
	opts := Options{URL: fileURL(bare), Branch: "main", Workdir: workdir}
	r := mustOpen(t, opts)
	ref := filepath.Join(workdir, ".git", "refs", "heads", "main")
	res, err := r.Update(t.Context(), Update{Commit: author, MaxAttempts: 1}, func(ctx context.Context, dir string) ([]string, string, error) {
		// A folder where the branch's ref file goes.
		if err := os.RemoveAll(ref); err != nil {
			return nil, "", err
		}
		if err := os.MkdirAll(filepath.Join(ref, "x"), 0o755); err != nil {
			return nil, "", err
		}
		return setFiles(map[string]string{"clusters/prod/app.yaml": "image: app:1.1.0\n"}, "Bump app", nil)(ctx, dir)
	})
	checkPushedNotFollowed(t, res, err, bare, workdir, `setting branch "main"`)
	r.Close()
	if err := os.RemoveAll(ref); err != nil {
		t.Fatal(err)
	}
	r = mustOpen(t, opts)
	defer r.Close()
	checkWorkdir(t, workdir, bare, mainSHA(t, bare))
}

// TestObjectsFailAfterPush: a commit's objects are stored in the working
// copy while the push sends them from memory. When they cannot be stored
// (with the index locked too, or not), the pushed commit is reported with
// the error, no local ref names the commit, and the working copy is reset
// before its next use, by the same Repo as by the next Open.
func TestObjectsFailAfterPush(t *testing.T) {
	for _, indexLocked := range []bool{false, true} {
		t.Run(fmt.Sprintf("indexLocked=%v", indexLocked), func(t *testing.T) {
			bare := testgit.NewBare(t, seed)
			workdir := t.TempDir()
			opts := Options{URL: fileURL(bare), Branch: "main", Workdir: workdir}
			r := mustOpen(t, opts)
			defer func() { r.Close() }()
			base := mainSHA(t, bare)
			// Objects go into a folder that is a file.
			blocked := filepath.Join(t.TempDir(), "objects")
			if err := os.WriteFile(blocked, nil, 0o644); err != nil {
				t.Fatal(err)
			}
			r.objects = blocked
			lock := filepath.Join(workdir, ".git", "index.lock")
			edit := setFiles(map[string]string{"clusters/prod/app.yaml": "image: app:1.1.0\n"}, "Bump app", nil)
			res, err := r.Update(t.Context(), Update{Commit: author, MaxAttempts: 1}, func(ctx context.Context, dir string) ([]string, string, error) {
				if indexLocked {
					if err := os.WriteFile(lock, nil, 0o644); err != nil {
						return nil, "", err
					}
				}
				return edit(ctx, dir)
			})
			wants := []string{"in the working copy"}
			if indexLocked {
				wants = append(wants, "locking the index")
			}
			checkPushedNotFollowed(t, res, err, bare, workdir, wants...)
			if got := testgit.Git(t, workdir, "rev-parse", "refs/heads/main"); got != base {
				t.Errorf("the local branch is at %s, want %s: it names a commit not stored", got, base)
			}
			// The same Repo, objects stored again, resets the working copy,
			// finds the remote moved (to the commit it could not store) and
			// commits on it; so does the next cycle's Open.
			os.Remove(lock)
			r.objects = filepath.Join(workdir, ".git", "objects")
			res, err = r.Update(t.Context(), Update{Commit: author}, setFiles(map[string]string{"clusters/prod/web.yaml": "image: web:2.0.0\n"}, "Bump web", nil))
			if err != nil || !res.Pushed {
				t.Fatalf("the next Update = %+v, %v", res, err)
			}
			if content, _ := testgit.ReadFile(t, bare, "main", "clusters/prod/app.yaml"); content != "image: app:1.1.0\n" {
				t.Errorf("the next commit lost app.yaml's bump: %q", content)
			}
			checkWorkdir(t, workdir, bare, mainSHA(t, bare))
			r.Close()
			r = mustOpen(t, opts)
			checkWorkdir(t, workdir, bare, mainSHA(t, bare))
		})
	}
}

// TestObjectsFailBeforePushBranch: a push to a branch of imagebump's own
// reads the commit from the store, so objects that cannot be stored stop
// it before it sends anything; the error says why once, and that the
// working copy is reset.
func TestObjectsFailBeforePushBranch(t *testing.T) {
	bare := testgit.NewBare(t, seed)
	r := mustOpen(t, Options{URL: fileURL(bare), Branch: "main", Workdir: t.TempDir()})
	defer r.Close()
	before := testgit.Refs(t, bare)
	blocked := filepath.Join(t.TempDir(), "objects")
	if err := os.WriteFile(blocked, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	r.objects = blocked
	res, err := r.Update(t.Context(), Update{Commit: author, MaxAttempts: 1, PushBranch: "imagebump/main"},
		setFiles(map[string]string{"clusters/prod/app.yaml": "image: app:1.1.0\n"}, "Bump app", nil))
	if res != nil || err == nil {
		t.Fatalf("Update = %+v, %v; want an error and no result", res, err)
	}
	msg := err.Error()
	if n := strings.Count(msg, "in the working copy: "); n != 1 {
		t.Errorf("the store's error is said %d times, want once: %s", n, msg)
	}
	if !strings.Contains(msg, "the next cycle resets the working copy") {
		t.Errorf("error %q does not say the working copy is reset", msg)
	}
	if diff := cmp.Diff(testgit.Refs(t, bare), before); diff != "" {
		t.Errorf("the remote changed (-got +want):\n%s", diff)
	}
}

// TestFilesSyncedBeforeIndex: the files an edit wrote are synced, once,
// before the Git index records them, and no local ref names the new
// commit before that sync has made its objects durable too: not the
// branch, nor the remote-tracking ref a push records, nor the push
// branch's or the refspec's own ref. An error syncing is reported like
// one writing the index; the working copy is not recorded and no local
// ref names the commit.
func TestFilesSyncedBeforeIndex(t *testing.T) {
	kinds := []struct {
		name string
		u    Update
		refs []string // the local refs that name the commit after a push
	}{
		{"tracked", Update{}, []string{"refs/heads/main", "refs/remotes/origin/main"}},
		{"push branch", Update{PushBranch: "imagebump/main"}, []string{"refs/heads/imagebump/main", "refs/remotes/origin/imagebump/main"}},
		{"refspec", Update{Refspec: "HEAD:refs/for/main"}, []string{"refs/heads/main", "refs/imagebump/refspec", "refs/remotes/origin/main"}},
	}
	for _, kind := range kinds {
		for _, fail := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/fail=%v", kind.name, fail), func(t *testing.T) {
				bare := testgit.NewBare(t, seed)
				workdir := t.TempDir()
				r := mustOpen(t, Options{URL: fileURL(bare), Branch: "main", Workdir: workdir})
				defer r.Close()
				index := filepath.Join(workdir, ".git", "index")
				before, err := os.ReadFile(index)
				if err != nil {
					t.Fatal(err)
				}
				refsBefore := localRefs(t, workdir)
				var synced [][]string
				orig := syncFiles
				defer func() { syncFiles = orig }()
				syncFiles = func(dir string, paths []string) error {
					if len(synced) > 0 {
						// The worktree moving back to the tracked branch,
						// after a push to another.
						synced = append(synced, paths)
						return orig(dir, paths)
					}
					if now, _ := os.ReadFile(index); !bytes.Equal(now, before) {
						t.Error("the index was written before the files were synced")
					}
					if now := localRefs(t, workdir); !maps.Equal(now, refsBefore) {
						t.Errorf("local refs moved before the sync: %v, were %v", now, refsBefore)
					}
					// The commit's objects are stored by then, and synced too.
					var files []string
					objects := 0
					for _, p := range paths {
						if !strings.HasPrefix(p, ".git/objects/") {
							files = append(files, p)
							continue
						}
						objects++
						if fi, err := os.Stat(filepath.Join(dir, p)); err != nil || fi.Size() == 0 {
							t.Errorf("object %s is not stored when the files are synced: %v", p, err)
						}
					}
					// The blobs of two files, the trees of clusters/prod,
					// clusters and the root, and the commit.
					if objects != 6 {
						t.Errorf("%d objects synced, want 6", objects)
					}
					synced = append(synced, files)
					if fail {
						return errors.New("disk on fire")
					}
					return orig(dir, paths)
				}
				u := kind.u
				u.Commit, u.MaxAttempts = author, 1
				res, err := r.Update(t.Context(), u, setFiles(map[string]string{
					"clusters/prod/app.yaml": "image: app:1.1.0\n", "clusters/prod/web.yaml": "image: web:1.1.0\n",
				}, "Bump", nil))
				want := [][]string{{"clusters/prod/app.yaml", "clusters/prod/web.yaml"}}
				if kind.u.PushBranch != "" && !fail {
					want = append(want, want[0])
				}
				if !reflect.DeepEqual(synced, want) {
					t.Errorf("synced %q, want %q", synced, want)
				}
				if res == nil || !res.Pushed {
					t.Fatalf("Update = %+v, %v; want the commit pushed", res, err)
				}
				var naming []string
				for name, h := range localRefs(t, workdir) {
					if h == res.Commit {
						naming = append(naming, name)
					}
				}
				slices.Sort(naming)
				_, stateErr := os.Stat(filepath.Join(workdir, ".git", resetStateFile))
				if !fail {
					if err != nil || stateErr != nil {
						t.Errorf("Update error %v, state file %v", err, stateErr)
					}
					if !slices.Equal(naming, kind.refs) {
						t.Errorf("local refs naming the commit: %q, want %q", naming, kind.refs)
					}
					return
				}
				if err == nil || !strings.Contains(err.Error(), "syncing the files written: disk on fire") {
					t.Errorf("Update error = %v, want the sync's", err)
				}
				if stateErr == nil {
					t.Error("the state file records a working copy whose files were not synced")
				}
				if now, _ := os.ReadFile(index); !bytes.Equal(now, before) {
					t.Error("the index records files that were not synced")
				}
				if len(naming) > 0 {
					t.Errorf("local refs %q name a commit whose objects were not synced", naming)
				}
				// What the commit wrote may be lost: Close drops the
				// working copy, and the next Open clones afresh.
				if err := r.Close(); err != nil {
					t.Fatal(err)
				}
				if entries, err := os.ReadDir(workdir); err != nil || len(entries) != 0 {
					t.Errorf("the working copy after Close: %d entries, %v; want it emptied", len(entries), err)
				}
				logger, logs := newLogger()
				r2 := mustOpen(t, Options{URL: fileURL(bare), Branch: "main", Workdir: workdir, Logger: logger})
				defer r2.Close()
				if !strings.Contains(logs.String(), "msg=cloned") {
					t.Errorf("the next Open did not clone: %s", logs)
				}
				checkWorkdir(t, workdir, bare, mainSHA(t, bare))
			})
		}
	}
}

// localRefs returns the working copy's refs (name to commit). It may run
// on another goroutine than the test's.
func localRefs(t *testing.T, workdir string) map[string]string {
	out, err := testgit.GitErr(t, workdir, nil, "for-each-ref", "--format=%(refname) %(objectname)")
	if err != nil {
		t.Errorf("listing the working copy's refs: %v", err)
	}
	refs := map[string]string{}
	for line := range strings.Lines(out) {
		name, h, _ := strings.Cut(strings.TrimSpace(line), " ")
		refs[name] = h
	}
	return refs
}

// TestLostPushAnswerWaitsForSync: a push whose answer is lost is followed
// by a fetch to see whether it landed, and that fetch points the
// remote-tracking ref at the commit when it did. No ref may name the
// commit before the sync that makes its objects durable: with the sync
// failing, no local ref may name it after Update; with it passing, the
// landed push is found.
func TestLostPushAnswerWaitsForSync(t *testing.T) {
	for _, fail := range []bool{true, false} {
		t.Run(fmt.Sprintf("sync fails=%v", fail), func(t *testing.T) {
			bare := testgit.NewBare(t, seed)
			workdir := t.TempDir()
			r := mustOpen(t, Options{URL: fileURL(bare), Branch: "main", Workdir: workdir})
			defer r.Close()
			good := r.url
			var commit string
			r.beforePush = func() {
				// The push lands, and its answer is lost.
				_ = r.waitStored(false)
				for _, o := range r.written {
					if o.typ == plumbing.CommitObject {
						commit = o.hash.String()
					}
				}
				testgit.Git(t, workdir, "push", "-q", bare, commit+":refs/heads/main")
				r.url = fileURL(filepath.Join(t.TempDir(), "gone.git"))
			}
			orig := syncFiles
			defer func() { syncFiles = orig }()
			syncFiles = func(dir string, paths []string) error {
				if fail {
					return errors.New("disk on fire")
				}
				return orig(dir, paths)
			}
			res, err := r.Update(t.Context(), Update{Commit: author, MaxAttempts: 1},
				setFiles(map[string]string{"clusters/prod/app.yaml": "image: app:1.1.0\n"}, "Bump", nil))
			r.url = good
			if commit == "" || mainSHA(t, bare) != commit {
				t.Fatalf("the push did not land: main = %s, commit %q", mainSHA(t, bare), commit)
			}
			var naming []string
			for name, h := range localRefs(t, workdir) {
				if h == commit {
					naming = append(naming, name)
				}
			}
			slices.Sort(naming)
			if fail {
				if err == nil {
					t.Errorf("Update = %+v with the sync failing, want an error", res)
				}
				if len(naming) > 0 {
					t.Errorf("local refs %q name a commit whose objects were not synced", naming)
				}
				return
			}
			if err != nil || res == nil || !res.Pushed || res.Commit != commit {
				t.Errorf("Update = %+v, %v; want the landed push found", res, err)
			}
			if !slices.Contains(naming, "refs/remotes/origin/main") {
				t.Errorf("local refs naming the commit: %q, want the remote-tracking ref among them", naming)
			}
		})
	}
}

// TestNetErrorWording: what a failed network operation says: a server's
// HTML page cut to its title, a long or many-line answer to its first
// line, a 5xx as the server's failure, a 404 on a push as what the
// credential may lack, and a local write error as the working copy's.
func TestNetErrorWording(t *testing.T) {
	dir := t.TempDir()
	r := &Repo{dir: dir, remote: "https://git.example.com/acme/fleet.git"}
	page := "<!DOCTYPE html>\n<html><head><title>403 Forbidden\n by WAF</title></head><body>" + strings.Repeat("x", 20000) + "</body></html>\n"
	resp := func(code int) *http.Response {
		req, _ := http.NewRequest(http.MethodGet, "https://git.example.com/acme/fleet.git/info/refs", nil)
		return &http.Response{StatusCode: code, Request: req}
	}
	for _, c := range []struct {
		name, op string
		err      error
		want     []string
		notWant  string
	}{
		{"an HTML page", "fetching", fmt.Errorf("%w: %s", transport.ErrAuthorizationFailed, page),
			[]string{"authorization failed: an HTML page: 403 Forbidden by WAF"}, "xxxx"},
		{"many lines", "fetching", fmt.Errorf("%w: %s", transport.ErrAuthenticationRequired, "bad credentials\nline two\n"),
			[]string{"authentication required: bad credentials (cut)"}, "line two"},
		{"a trailing newline", "fetching", fmt.Errorf("%w: %s", transport.ErrAuthenticationRequired, "bad credentials\n"),
			[]string{"authentication required: bad credentials"}, "(cut)"},
		{"a 503", "fetching", plumbing.NewUnexpectedError(&githttp.Err{Response: resp(503)}),
			[]string{"the server failed on its side (HTTP 503); the next cycle (or run) tries again"}, ""},
		{"a 404 on a push", "pushing to", fmt.Errorf("%w: %s", transport.ErrRepositoryNotFound, "not found"),
			[]string{"or the credential may read but not write it"}, ""},
		{"a 404 on a fetch", "fetching", fmt.Errorf("%w: %s", transport.ErrRepositoryNotFound, "not found"),
			[]string{"or the credential may not see it"}, ""},
		{"a branch that is not there", "fetching", plumbing.ErrReferenceNotFound,
			[]string{`remote has no branch "main" (check git.branch, or whether the branch was renamed or deleted)`}, ""},
		{"connection refused", "fetching", &url.Error{Op: "Get", URL: "https://git.example.com/acme/fleet.git/info/refs", Err: &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}},
			[]string{"connection refused; check that the server is reachable from here", "the next cycle (or run) tries again"}, ""},
		{"a TLS refusal is no network failure", "fetching", &url.Error{Op: "Get", URL: "https://git.example.com/acme/fleet.git/info/refs", Err: &net.OpError{Op: "remote error", Err: tls.AlertError(42)}},
			[]string{"bad certificate"}, "reachable from here"},
		{"cut before an answer", "fetching", fmt.Errorf(`Get "https://git.example.com/acme/fleet.git/info/refs": %w`, io.EOF),
			[]string{"EOF; check that the server is reachable from here"}, ""},
		{"a full disk", "fetching", &fs.PathError{Op: "write", Path: filepath.Join(dir, ".git", "objects", "pack", "tmp_pack_1"), Err: syscall.ENOSPC},
			[]string{"the working copy in " + dir + " could not be written", "the remote is not at fault", "no space left on device"}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := r.netError(context.Background(), c.op, "main", DefaultTimeout, c.err)
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
			if c.notWant != "" && strings.Contains(err.Error(), c.notWant) {
				t.Errorf("error %q holds %q", err, c.notWant)
			}
			if !errors.Is(err, c.err) && !errors.Is(err, errors.Unwrap(c.err)) && !errors.Is(err, ErrBranchNotFound) {
				t.Errorf("error %v does not unwrap to the cause", err)
			}
		})
	}
}
