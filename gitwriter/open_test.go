package gitwriter

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/imagebump/imagebump/internal/testkit/testgit"
)

func TestOpenTransports(t *testing.T) {
	bare := testgit.NewBare(t, seed)
	want := mainSHA(t, bare)
	httpAuth := testgit.StartHTTP(t, bare, true)
	httpAuth.AllowUser(tokenUsername)
	httpAnon := testgit.StartHTTP(t, bare, false)
	sshd := testgit.StartSSH(t, bare)

	tests := []struct {
		name       string
		url        string
		auth       Auth
		wantStored string // the URL in .git/config
	}{
		{
			name:       "http basic auth",
			url:        httpAuth.URL,
			auth:       Auth{UsernameFile: writeSecret(t, httpAuth.Username), PasswordFile: writeSecret(t, httpAuth.Password)},
			wantStored: httpAuth.URL,
		},
		{
			name:       "http token",
			url:        httpAuth.URL,
			auth:       Auth{TokenFile: writeSecret(t, httpAuth.Password)},
			wantStored: httpAuth.URL,
		},
		{
			name:       "http user name in URL is dropped",
			url:        strings.Replace(httpAnon.URL, "http://", "http://someone@", 1),
			wantStored: httpAnon.URL,
		},
		{
			name:       "ssh with known hosts",
			url:        sshd.URL,
			auth:       Auth{SSHKeyFile: sshd.KeyFile, KnownHostsFile: sshd.KnownHostsFile},
			wantStored: sshd.URL,
		},
		{
			name:       "ssh encrypted key",
			url:        sshd.URL,
			auth:       Auth{SSHKeyFile: sshd.EncryptedKeyFile, SSHKeyPassphraseFile: writeSecret(t, sshd.KeyPassphrase), KnownHostsFile: sshd.KnownHostsFile},
			wantStored: sshd.URL,
		},
		{
			name:       "ssh ignoring a wrong host key when told to",
			url:        sshd.URL,
			auth:       Auth{SSHKeyFile: sshd.KeyFile, InsecureIgnoreHostKey: true},
			wantStored: sshd.URL,
		},
		{
			name:       "file",
			url:        fileURL(bare),
			wantStored: fileURL(bare),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			workdir := filepath.Join(t.TempDir(), "wc")
			r := mustOpen(t, Options{URL: tt.url, Branch: "main", Auth: tt.auth, Workdir: workdir})
			if got := r.Head(); got != want {
				t.Errorf("Head() = %s, want %s", got, want)
			}
			if got := r.Dir(); got != workdir {
				t.Errorf("Dir() = %s, want %s", got, workdir)
			}
			b, err := os.ReadFile(filepath.Join(workdir, "clusters", "prod", "app.yaml"))
			if err != nil || string(b) != seed["clusters/prod/app.yaml"] {
				t.Errorf("app.yaml in the worktree = %q, %v; want %q", b, err, seed["clusters/prod/app.yaml"])
			}
			if got := testgit.Git(t, workdir, "config", "--get", "remote.origin.url"); got != tt.wantStored {
				t.Errorf("remote.origin.url = %q, want %q", got, tt.wantStored)
			}
			// Shallow: the clone holds the head commit only.
			if got := testgit.Git(t, workdir, "rev-parse", "--is-shallow-repository"); got != "true" {
				t.Errorf("rev-parse --is-shallow-repository = %q, want true", got)
			}
			if got := testgit.Git(t, workdir, "status", "--porcelain"); got != "" {
				t.Errorf("git status --porcelain after Open = %q, want clean", got)
			}
		})
	}
}

func TestOpenDefaultBranch(t *testing.T) {
	bare := testgit.NewBare(t, seed)
	testgit.Commit(t, bare, "trunk", map[string]string{"trunk.txt": "t\n"}, nil, "on trunk")
	testgit.Git(t, bare, "symbolic-ref", "HEAD", "refs/heads/trunk")
	r := mustOpen(t, Options{URL: fileURL(bare)})
	if got := r.Branch(); got != "trunk" {
		t.Errorf("Branch() = %q, want the remote HEAD's branch %q", got, "trunk")
	}
	if got, want := r.Head(), testgit.Refs(t, bare)["refs/heads/trunk"]; got != want {
		t.Errorf("Head() = %s, want %s", got, want)
	}
	if _, err := os.Stat(filepath.Join(r.Dir(), "trunk.txt")); err != nil {
		t.Errorf("trunk.txt not checked out: %v", err)
	}
}

func TestOpenTempDir(t *testing.T) {
	bare := testgit.NewBare(t, seed)
	r, err := Open(t.Context(), Options{URL: fileURL(bare), Branch: "main"})
	if err != nil {
		t.Fatal(err)
	}
	dir := r.Dir()
	if _, err := os.Stat(filepath.Join(dir, "README.md")); err != nil {
		t.Fatalf("README.md not in the temporary worktree: %v", err)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("temporary workdir %s still exists after Close: %v", dir, err)
	}
}

func TestOpenKeepsGivenWorkdirOnClose(t *testing.T) {
	bare := testgit.NewBare(t, seed)
	workdir := t.TempDir()
	r, err := Open(t.Context(), Options{URL: fileURL(bare), Branch: "main", Workdir: workdir})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(workdir, ".git")); err != nil {
		t.Errorf("Close removed the given workdir's clone: %v", err)
	}
}

func TestOpenReuse(t *testing.T) {
	tests := []struct {
		name string
		// damage changes the working copy between the two Opens.
		damage     func(t *testing.T, dir string)
		wantReused bool
	}{
		{
			name:       "clean",
			damage:     func(t *testing.T, dir string) {},
			wantReused: true,
		},
		{
			name: "dirty and untracked files",
			damage: func(t *testing.T, dir string) {
				write(t, filepath.Join(dir, "clusters/prod/app.yaml"), "image: app:9.9.9\n")
				write(t, filepath.Join(dir, "stray.yaml"), "x\n")
				write(t, filepath.Join(dir, "newdir/deep/stray.yaml"), "x\n")
				write(t, filepath.Join(dir, ".gitignore"), "ignored.txt\n")
				write(t, filepath.Join(dir, "ignored.txt"), "x\n")
				if err := os.Remove(filepath.Join(dir, "README.md")); err != nil {
					t.Fatal(err)
				}
			},
			wantReused: true,
		},
		{
			name: "staged change",
			damage: func(t *testing.T, dir string) {
				write(t, filepath.Join(dir, "staged.yaml"), "x\n")
				testgit.Git(t, dir, "add", "staged.yaml")
			},
			wantReused: true,
		},
		{
			name: "garbage HEAD",
			damage: func(t *testing.T, dir string) {
				write(t, filepath.Join(dir, ".git/HEAD"), "garbage\n")
			},
		},
		{
			name: "objects deleted",
			damage: func(t *testing.T, dir string) {
				if err := os.RemoveAll(filepath.Join(dir, ".git/objects")); err != nil {
					t.Fatal(err)
				}
				if err := os.MkdirAll(filepath.Join(dir, ".git/objects"), 0o755); err != nil {
					t.Fatal(err)
				}
			},
		},
		{
			name: "garbage index",
			damage: func(t *testing.T, dir string) {
				write(t, filepath.Join(dir, ".git/index"), "not an index")
			},
		},
		{
			name: "garbage config",
			damage: func(t *testing.T, dir string) {
				write(t, filepath.Join(dir, ".git/config"), "[[[")
			},
		},
		{
			name: "clone of another URL",
			damage: func(t *testing.T, dir string) {
				testgit.Git(t, dir, "remote", "set-url", "origin", "file:///elsewhere.git")
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bare := testgit.NewBare(t, seed)
			workdir := t.TempDir()
			opts := Options{URL: fileURL(bare), Branch: "main", Workdir: workdir}
			mustOpen(t, opts)
			// A marker in .git tells a reuse from a new clone.
			marker := filepath.Join(workdir, ".git", "test-marker")
			write(t, marker, "x")
			moved := testgit.Commit(t, bare, "main", map[string]string{"clusters/prod/new.yaml": "new\n"}, nil, "meanwhile")
			tt.damage(t, workdir)

			logger, logs := newLogger()
			opts.Logger = logger
			r := mustOpen(t, opts)
			if got := r.Head(); got != moved {
				t.Errorf("Head() = %s, want the commit pushed meanwhile %s", got, moved)
			}
			_, err := os.Stat(marker)
			if reused := err == nil; reused != tt.wantReused {
				t.Errorf("working copy reused = %v, want %v; log:\n%s", reused, tt.wantReused, logs)
			}
			if got := testgit.Git(t, workdir, "status", "--porcelain", "--ignored", "--untracked-files=all"); got != "" {
				t.Errorf("git status after Open = %q, want clean", got)
			}
			if got := testgit.Git(t, workdir, "rev-parse", "HEAD"); got != moved {
				t.Errorf("HEAD = %s, want %s", got, moved)
			}
			for name, content := range seed {
				b, err := os.ReadFile(filepath.Join(workdir, filepath.FromSlash(name)))
				if err != nil || string(b) != content {
					t.Errorf("%s = %q, %v; want %q", name, b, err, content)
				}
			}
			if _, err := os.Stat(filepath.Join(workdir, "clusters/prod/new.yaml")); err != nil {
				t.Errorf("the file committed meanwhile is missing: %v", err)
			}
		})
	}
}

func TestOpenRefusesForeignWorkdir(t *testing.T) {
	bare := testgit.NewBare(t, seed)
	workdir := t.TempDir()
	precious := filepath.Join(workdir, "precious.txt")
	write(t, precious, "keep me")
	_, err := Open(t.Context(), Options{URL: fileURL(bare), Branch: "main", Workdir: workdir})
	if err == nil || !strings.Contains(err.Error(), "holds no git repository") {
		t.Fatalf("Open on a non-empty workdir without .git: error = %v, want a refusal", err)
	}
	if b, err := os.ReadFile(precious); err != nil || string(b) != "keep me" {
		t.Errorf("precious.txt = %q, %v after Open; want it untouched", b, err)
	}
}

func TestOpenErrors(t *testing.T) {
	bare := testgit.NewBare(t, seed)
	httpd := testgit.StartHTTP(t, bare, true)
	sshd := testgit.StartSSH(t, bare)
	emptyKnownHosts := writeSecret(t, "")
	wrongPassword := "wrong-" + httpd.Password

	tests := []struct {
		name        string
		opts        Options
		wantAuth    bool
		wantHostKey bool
		wantUnknown bool
		wantBranch  bool
		wantIn      []string // substrings of the error
		secrets     []string // must not be in the error
	}{
		{
			name: "wrong password",
			opts: Options{URL: httpd.URL, Branch: "main", Auth: Auth{
				UsernameFile: writeSecret(t, httpd.Username), PasswordFile: writeSecret(t, wrongPassword)}},
			wantAuth: true,
			wantIn:   []string{"127.0.0.1", "credentials refused", `branch "main"`, "sent the user name in ", "and the password in ", "write access"},
			secrets:  []string{wrongPassword, httpd.Password},
		},
		{
			name:     "no credentials",
			opts:     Options{URL: httpd.URL, Branch: "main"},
			wantAuth: true,
			wantIn:   []string{"127.0.0.1", "sent no credentials (git.auth is not set)"},
		},
		{
			name:   "missing token file",
			opts:   Options{URL: httpd.URL, Branch: "main", Auth: Auth{TokenFile: "/nonexistent/token"}},
			wantIn: []string{"token file", "/nonexistent/token"},
		},
		{
			name:        "changed ssh host key",
			opts:        Options{URL: sshd.URL, Branch: "main", Auth: Auth{SSHKeyFile: sshd.KeyFile, KnownHostsFile: sshd.WrongKnownHostsFile}},
			wantHostKey: true,
			wantIn:      []string{"does not match", "127.0.0.1", "cloning ssh://", sshd.WrongKnownHostsFile, "ssh-keyscan -p "},
		},
		{
			// known_hosts has only an ECDSA key for the host, whose
			// sshd has only an Ed25519 one: the handshake found no
			// common host key type, and said only that.
			name:        "ssh host key of another type",
			opts:        Options{URL: sshd.URL, Branch: "main", Auth: Auth{SSHKeyFile: sshd.KeyFile, KnownHostsFile: sshd.OtherTypeKnownHostsFile}},
			wantHostKey: true,
			wantIn:      []string{"ecdsa-sha2-nistp256", "ssh-ed25519", sshd.OtherTypeKnownHostsFile, "ssh-keyscan -p ", "cloning ssh://"},
		},
		{
			name:        "unknown ssh host",
			opts:        Options{URL: sshd.URL, Branch: "main", Auth: Auth{SSHKeyFile: sshd.KeyFile, KnownHostsFile: emptyKnownHosts}},
			wantHostKey: true,
			wantUnknown: true,
			wantIn:      []string{"not in the known hosts file " + emptyKnownHosts, "ssh-keyscan -p ", "[host]:port"},
		},
		{
			// go-git's words sent users to SSH_KNOWN_HOSTS, which is
			// not read; the file's name was not given.
			name:   "missing known hosts file",
			opts:   Options{URL: sshd.URL, Branch: "main", Auth: Auth{SSHKeyFile: sshd.KeyFile, KnownHostsFile: "/nonexistent/known_hosts"}},
			wantIn: []string{"git.auth.knownHostsFile", "/nonexistent/known_hosts", "ssh-keyscan -p "},
		},
		{
			name: "wrong ssh key passphrase",
			opts: Options{URL: sshd.URL, Branch: "main", Auth: Auth{
				SSHKeyFile: sshd.EncryptedKeyFile, SSHKeyPassphraseFile: writeSecret(t, "not-"+sshd.KeyPassphrase), KnownHostsFile: sshd.KnownHostsFile}},
			wantIn:  []string{"decrypting ssh key file"},
			secrets: []string{sshd.KeyPassphrase},
		},
		{
			name:     "ssh key not authorized",
			opts:     Options{URL: sshd.URL, Branch: "main", Auth: Auth{SSHKeyFile: sshKey(t), KnownHostsFile: sshd.KnownHostsFile}},
			wantAuth: true,
			wantIn:   []string{"credentials refused", "ssh://127.0.0.1", " as the user ", "deploy key"},
		},
		{
			name:   "encrypted ssh key without passphrase",
			opts:   Options{URL: sshd.URL, Branch: "main", Auth: Auth{SSHKeyFile: sshd.EncryptedKeyFile, KnownHostsFile: sshd.KnownHostsFile}},
			wantIn: []string{"is encrypted"},
		},
		{
			name: "missing branch over http",
			opts: Options{URL: httpd.URL, Branch: "nope", Auth: Auth{
				UsernameFile: writeSecret(t, httpd.Username), PasswordFile: writeSecret(t, httpd.Password)}},
			wantBranch: true,
			wantIn:     []string{`"nope"`, "127.0.0.1"},
		},
		{
			name:       "missing branch over file",
			opts:       Options{URL: fileURL(bare), Branch: "nope"},
			wantBranch: true,
			wantIn:     []string{`"nope"`, bare},
		},
		{
			name:   "no repository",
			opts:   Options{URL: fileURL(filepath.Join(t.TempDir(), "missing.git")), Branch: "main"},
			wantIn: []string{"missing.git"},
		},
		{
			name:    "password in URL",
			opts:    Options{URL: strings.Replace(httpd.URL, "http://", "http://u:inline-secret@", 1), Branch: "main"},
			wantIn:  []string{"holds a password"},
			secrets: []string{"inline-secret"},
		},
		{
			name:   "ssh without known hosts",
			opts:   Options{URL: sshd.URL, Branch: "main", Auth: Auth{SSHKeyFile: sshd.KeyFile}},
			wantIn: []string{"known hosts file"},
		},
		{
			name:   "ssh key for an http URL",
			opts:   Options{URL: httpd.URL, Branch: "main", Auth: Auth{SSHKeyFile: sshd.KeyFile}},
			wantIn: []string{"do not apply"},
		},
		{
			name:   "token and password",
			opts:   Options{URL: httpd.URL, Auth: Auth{TokenFile: "t", UsernameFile: "u", PasswordFile: "p"}},
			wantIn: []string{"exclusive"},
		},
		{
			name:   "invalid branch name",
			opts:   Options{URL: fileURL(bare), Branch: "a..b"},
			wantIn: []string{"not a valid branch name"},
		},
		{
			name:   "git protocol",
			opts:   Options{URL: "git://example.invalid/repo.git"},
			wantIn: []string{"not supported"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			logger, logs := newLogger()
			tt.opts.Logger = logger
			tt.opts.Workdir = filepath.Join(t.TempDir(), "wc")
			r, err := Open(t.Context(), tt.opts)
			if err == nil {
				_ = r.Close()
				t.Fatal("Open succeeded, want an error")
			}
			msg := err.Error()
			for _, s := range tt.wantIn {
				if !strings.Contains(msg, s) {
					t.Errorf("error %q does not contain %q", msg, s)
				}
			}
			for _, s := range tt.secrets {
				if strings.Contains(msg, s) || strings.Contains(logs.String(), s) {
					t.Errorf("error or log reveals the secret %q: %q\n%s", s, msg, logs)
				}
			}
			var ae *AuthError
			if got := errors.As(err, &ae); got != tt.wantAuth {
				t.Errorf("errors.As(*AuthError) = %v, want %v (error: %v)", got, tt.wantAuth, err)
			}
			var hk *HostKeyError
			if got := errors.As(err, &hk); got != tt.wantHostKey {
				t.Errorf("errors.As(*HostKeyError) = %v, want %v (error: %v)", got, tt.wantHostKey, err)
			} else if got && hk.Unknown != tt.wantUnknown {
				t.Errorf("HostKeyError.Unknown = %v, want %v", hk.Unknown, tt.wantUnknown)
			}
			if got := errors.Is(err, ErrBranchNotFound); got != tt.wantBranch {
				t.Errorf("errors.Is(ErrBranchNotFound) = %v, want %v (error: %v)", got, tt.wantBranch, err)
			}
			if msg != strings.ToLower(msg[:1])+msg[1:] {
				t.Errorf("error %q does not start in lowercase", msg)
			}
			// Nothing half-written: a failed clone leaves no .git behind.
			if _, err := os.Stat(filepath.Join(tt.opts.Workdir, ".git")); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("failed Open left %s/.git behind (stat: %v)", tt.opts.Workdir, err)
			}
		})
	}
}

func TestParseURL(t *testing.T) {
	tests := []struct {
		raw        string
		wantKind   kind
		wantStored string
		wantShown  string
	}{
		{raw: "https://github.com/acme/fleet.git", wantKind: kindHTTP, wantStored: "https://github.com/acme/fleet.git", wantShown: "https://github.com/acme/fleet.git"},
		{raw: "https://bot@github.com/acme/fleet.git", wantKind: kindHTTP, wantStored: "https://github.com/acme/fleet.git", wantShown: "https://github.com/acme/fleet.git"},
		{raw: "https://github.com/acme/fleet.git?token=abc", wantKind: kindHTTP, wantStored: "https://github.com/acme/fleet.git?token=abc", wantShown: "https://github.com/acme/fleet.git?token=REDACTED"},
		{raw: "ssh://git@github.com:2222/acme/fleet.git", wantKind: kindSSH, wantStored: "ssh://git@github.com:2222/acme/fleet.git", wantShown: "ssh://github.com:2222/acme/fleet.git"},
		{raw: "git@github.com:acme/fleet.git", wantKind: kindSSH, wantStored: "git@github.com:acme/fleet.git", wantShown: "github.com:acme/fleet.git"},
		{raw: "file:///srv/git/fleet.git", wantKind: kindFile, wantStored: "file:///srv/git/fleet.git", wantShown: "file:///srv/git/fleet.git"},
	}
	for _, tt := range tests {
		t.Run(tt.raw, func(t *testing.T) {
			r := &Repo{}
			if err := r.parseURL(tt.raw); err != nil {
				t.Fatal(err)
			}
			got := []any{r.kind, r.url, r.remote}
			want := []any{tt.wantKind, tt.wantStored, tt.wantShown}
			if diff := cmp.Diff(got, want); diff != "" {
				t.Errorf("parseURL(%q) mismatch (-got +want):\n%s", tt.raw, diff)
			}
		})
	}
}

func write(t *testing.T, p, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestOpenReuseSameHead covers the reuse of a working copy when the
// remote did not move: a worktree the last reset left alone is checked
// file by file and not reset again; anything else gets a hard reset.
func TestOpenReuseSameHead(t *testing.T) {
	tests := []struct {
		name      string
		damage    func(t *testing.T, dir string)
		wantReset bool
		quiet     bool // the reset is not logged as a warning
	}{
		{name: "untouched", damage: func(t *testing.T, dir string) {}},
		{name: "untracked files only", damage: func(t *testing.T, dir string) {
			write(t, filepath.Join(dir, "stray.yaml"), "x\n")
			write(t, filepath.Join(dir, "clusters/prod/extra/stray.yaml"), "x\n")
		}},
		{name: "same content rewritten", damage: func(t *testing.T, dir string) {
			write(t, filepath.Join(dir, "clusters/prod/app.yaml"), seed["clusters/prod/app.yaml"])
		}},
		{name: "same size edit", wantReset: true, damage: func(t *testing.T, dir string) {
			write(t, filepath.Join(dir, "clusters/prod/app.yaml"), "image: app:9.9.9\n")
		}},
		{name: "longer edit", wantReset: true, damage: func(t *testing.T, dir string) {
			write(t, filepath.Join(dir, "clusters/prod/app.yaml"), "image: app:10.0.0\n")
		}},
		{name: "file deleted", wantReset: true, damage: func(t *testing.T, dir string) {
			if err := os.Remove(filepath.Join(dir, "README.md")); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "made executable", wantReset: true, damage: func(t *testing.T, dir string) {
			if err := os.Chmod(filepath.Join(dir, "README.md"), 0o755); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "file replaced by a directory", wantReset: true, damage: func(t *testing.T, dir string) {
			if err := os.Remove(filepath.Join(dir, "README.md")); err != nil {
				t.Fatal(err)
			}
			write(t, filepath.Join(dir, "README.md", "inner"), "x\n")
		}},
		{name: "staged change", wantReset: true, damage: func(t *testing.T, dir string) {
			write(t, filepath.Join(dir, "staged.yaml"), "x\n")
			testgit.Git(t, dir, "add", "staged.yaml")
			if err := os.Remove(filepath.Join(dir, "staged.yaml")); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "local commit", wantReset: true, damage: func(t *testing.T, dir string) {
			testgit.Git(t, dir, "commit", "--quiet", "--allow-empty", "-m", "local")
		}},
		{name: "other branch checked out", wantReset: true, damage: func(t *testing.T, dir string) {
			testgit.Git(t, dir, "checkout", "--quiet", "-b", "other")
		}},
		{name: "git status refreshed the index", wantReset: true, damage: func(t *testing.T, dir string) {
			later := time.Now().Add(time.Hour)
			if err := os.Chtimes(filepath.Join(dir, "README.md"), later, later); err != nil {
				t.Fatal(err)
			}
			testgit.Git(t, dir, "status", "--porcelain")
		}},
		// Not someone else's doing: reset without a warning.
		{name: "state file removed", wantReset: true, quiet: true, damage: func(t *testing.T, dir string) {
			if err := os.Remove(filepath.Join(dir, ".git", resetStateFile)); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bare := testgit.NewBare(t, seed)
			head := mainSHA(t, bare)
			workdir := t.TempDir()
			opts := Options{URL: fileURL(bare), Branch: "main", Workdir: workdir}
			mustOpen(t, opts)
			tt.damage(t, workdir)

			logger, logs := newLogger()
			opts.Logger = logger
			mustOpen(t, opts)
			if got := strings.Contains(logs.String(), "hard-resetting the worktree"); got != tt.wantReset {
				t.Errorf("hard reset = %v, want %v; log:\n%s", got, tt.wantReset, logs)
			}
			// The operator's changes go: say so.
			if got := strings.Contains(logs.String(), `level=WARN msg="hard-resetting the worktree`); got != (tt.wantReset && !tt.quiet) {
				t.Errorf("the reset logged as a warning = %v, want %v; log:\n%s", got, tt.wantReset && !tt.quiet, logs)
			}
			if got := testgit.Git(t, workdir, "status", "--porcelain", "--ignored", "--untracked-files=all"); got != "" {
				t.Errorf("git status after Open = %q, want clean", got)
			}
			if got := testgit.Git(t, workdir, "rev-parse", "HEAD"); got != head {
				t.Errorf("HEAD = %s, want %s", got, head)
			}
			if got := testgit.Git(t, workdir, "symbolic-ref", "HEAD"); got != "refs/heads/main" {
				t.Errorf("HEAD points at %s, want refs/heads/main", got)
			}
			for name, content := range seed {
				b, err := os.ReadFile(filepath.Join(workdir, filepath.FromSlash(name)))
				if err != nil || string(b) != content {
					t.Errorf("%s = %q, %v; want %q", name, b, err, content)
				}
			}
		})
	}
}

func TestOpenReclonesAfterManyPacks(t *testing.T) {
	bare := testgit.NewBare(t, seed)
	workdir := t.TempDir()
	opts := Options{URL: fileURL(bare), Branch: "main", Workdir: workdir}
	mustOpen(t, opts)
	marker := filepath.Join(workdir, ".git", "test-marker")
	write(t, marker, "x")
	// Copies of the clone's one pack, as a long series of fetches leaves.
	packs, err := filepath.Glob(filepath.Join(workdir, ".git/objects/pack/pack-*"))
	if err != nil || len(packs) == 0 {
		t.Fatalf("no pack in the clone: %v", err)
	}
	for i := range maxPacks {
		for _, p := range packs {
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			ext := filepath.Ext(p)
			write(t, filepath.Join(filepath.Dir(p), fmt.Sprintf("pack-%040x%s", i+1, ext)), string(b))
		}
	}
	logger, logs := newLogger()
	opts.Logger = logger
	r := mustOpen(t, opts)
	if _, err := os.Stat(marker); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("working copy with %d packs was reused, want a new clone; log:\n%s", maxPacks+1, logs)
	}
	if !strings.Contains(logs.String(), "pack files") {
		t.Errorf("the log does not say why it re-cloned:\n%s", logs)
	}
	if r.Head() != mainSHA(t, bare) {
		t.Errorf("Head() = %s, want %s", r.Head(), mainSHA(t, bare))
	}
}

// TestRecloneStoppedPartWay: a re-clone stopped while it empties the
// working copy (a kill, a full disk) leaves .git, removed last, so the
// next Open clones afresh instead of refusing a folder of files it did
// not make.
func TestRecloneStoppedPartWay(t *testing.T) {
	bare := testgit.NewBare(t, seed)
	workdir := t.TempDir()
	opts := Options{URL: fileURL(bare), Branch: "main", Workdir: workdir}
	mustOpen(t, opts).Close()
	testgit.Git(t, workdir, "remote", "set-url", "origin", "file:///elsewhere.git")

	var removed []string
	defer func(was func(string) error) { removeAll = was }(removeAll)
	removeAll = func(p string) error {
		removed = append(removed, filepath.Base(p))
		if len(removed) == 2 {
			return errors.New("stopped")
		}
		return os.RemoveAll(p)
	}
	if _, err := Open(t.Context(), opts); err == nil || !strings.Contains(err.Error(), "stopped") {
		t.Fatalf("Open() error = %v, want the stop", err)
	}
	if slices.Contains(removed, ".git") {
		t.Fatalf("removed %q before the other entries", removed)
	}
	removeAll = os.RemoveAll
	r := mustOpen(t, opts)
	if got, want := r.Head(), mainSHA(t, bare); got != want {
		t.Errorf("Head() = %s after the stopped re-clone, want %s", got, want)
	}
	if b, err := os.ReadFile(filepath.Join(workdir, "clusters/prod/app.yaml")); err != nil || string(b) != seed["clusters/prod/app.yaml"] {
		t.Errorf("clusters/prod/app.yaml = %q, %v", b, err)
	}
}

// TestDiscardStoppedPartWay: Close empties a working copy it must
// discard; stopped after some worktree files went, the record of the
// commit the worktree held is already gone, so the next Open, though it
// trusts the worktree, checks it whole and writes the missing files.
func TestDiscardStoppedPartWay(t *testing.T) {
	bare := testgit.NewBare(t, seed)
	opts := Options{URL: fileURL(bare), Branch: "main", Workdir: t.TempDir(), TrustWorktree: true}
	mustOpen(t, opts).Close()
	r := mustOpen(t, opts)
	r.discard = "an object in it does not hash to its name"
	n := 0
	defer func(was func(string) error) { removeAll = was }(removeAll)
	removeAll = func(p string) error {
		if n++; n == 2 {
			return errors.New("stopped")
		}
		return os.RemoveAll(p)
	}
	if err := r.Close(); err == nil {
		t.Fatal("Close: no error from the stopped removal")
	}
	removeAll = os.RemoveAll
	r = mustOpen(t, opts)
	for p, want := range seed {
		if b, err := os.ReadFile(filepath.Join(opts.Workdir, filepath.FromSlash(p))); err != nil || string(b) != want {
			t.Errorf("%s after the next Open: %q, %v; want %q", p, b, err, want)
		}
	}
	if st := testgit.Git(t, opts.Workdir, "status", "--porcelain"); st != "" {
		t.Errorf("git status = %q, want clean", st)
	}
}
