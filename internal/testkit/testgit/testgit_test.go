package testgit

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestNewBareAndCommit(t *testing.T) {
	bare := NewBare(t, map[string]string{"a.yaml": "a: 1\n", "dir/b.yaml": "b: 2\n"})
	got, ok := ReadFile(t, bare, "main", "dir/b.yaml")
	if !ok || got != "b: 2\n" {
		t.Fatalf("ReadFile(main, dir/b.yaml) = %q, %v; want %q, true", got, ok, "b: 2\n")
	}
	sha := Commit(t, bare, "main", map[string]string{"c.yaml": "c: 3\n"}, []string{"a.yaml"}, "second")
	if diff := cmp.Diff(map[string]string{"refs/heads/main": sha}, Refs(t, bare)); diff != "" {
		t.Errorf("Refs() mismatch (-got +want):\n%s", diff)
	}
	if _, ok := ReadFile(t, bare, "main", "a.yaml"); ok {
		t.Errorf("a.yaml still exists after Commit removed it")
	}
	if diff := cmp.Diff([]string{"second", "initial commit"}, Log(t, bare, "main")); diff != "" {
		t.Errorf("Log() mismatch (-got +want):\n%s", diff)
	}
	branchSHA := Commit(t, bare, "feature", map[string]string{"d.yaml": "d\n"}, nil, "on feature")
	if got := Git(t, bare, "rev-parse", "feature~1"); got != sha {
		t.Errorf("feature's parent = %s, want main's head %s", got, sha)
	}
	if got := Refs(t, bare)["refs/heads/feature"]; got != branchSHA {
		t.Errorf("refs/heads/feature = %s, want %s", got, branchSHA)
	}
}

func TestStartHTTP(t *testing.T) {
	bare := NewBare(t, map[string]string{"a.yaml": "a: 1\n"})
	tests := []struct {
		name     string
		withAuth bool
		password string // "" uses the server's
		wantErr  bool
	}{
		{name: "no auth", withAuth: false},
		{name: "right password", withAuth: true},
		{name: "wrong password", withAuth: true, password: "nope", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := StartHTTP(t, bare, tt.withAuth)
			url := s.URL
			if tt.withAuth {
				pw := s.Password
				if tt.password != "" {
					pw = tt.password
				}
				url = strings.Replace(url, "http://", "http://"+s.Username+":"+pw+"@", 1)
			}
			work := filepath.Join(t.TempDir(), "clone")
			_, err := GitErr(t, t.TempDir(), nil, "clone", "--quiet", url, work)
			if gotErr := err != nil; gotErr != tt.wantErr {
				t.Fatalf("git clone error = %v, want error: %v", err, tt.wantErr)
			}
			if s.Requests() == 0 {
				t.Errorf("Requests() = 0 after a clone")
			}
			if tt.wantErr {
				if s.AuthFailures() == 0 {
					t.Errorf("AuthFailures() = 0 after a wrong password")
				}
				return
			}
			if err := os.WriteFile(filepath.Join(work, "new.yaml"), []byte("n\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			Git(t, work, "add", "new.yaml")
			Git(t, work, "commit", "--quiet", "-m", "over http")
			Git(t, work, "push", "--quiet", "origin", "HEAD:refs/heads/"+strings.ReplaceAll(tt.name, " ", "-"))
			if s.Pushes() != 1 {
				t.Errorf("Pushes() = %d, want 1", s.Pushes())
			}
		})
	}
}

func TestFailReceivePack(t *testing.T) {
	bare := NewBare(t, map[string]string{"a.yaml": "a: 1\n"})
	before := Refs(t, bare)
	s := StartHTTP(t, bare, false)
	work := filepath.Join(t.TempDir(), "clone")
	Git(t, t.TempDir(), "clone", "--quiet", s.URL, work)
	Git(t, work, "commit", "--quiet", "--allow-empty", "-m", "x")
	s.FailReceivePack(true)
	if _, err := GitErr(t, work, nil, "push", "--quiet", "origin", "HEAD:main"); err == nil {
		t.Fatal("push succeeded with FailReceivePack(true)")
	}
	if diff := cmp.Diff(before, Refs(t, bare)); diff != "" {
		t.Errorf("refs changed by a failed push (-got +want):\n%s", diff)
	}
	s.FailReceivePack(false)
	Git(t, work, "push", "--quiet", "origin", "HEAD:main")
	if got, want := Refs(t, bare)["refs/heads/main"], Git(t, work, "rev-parse", "HEAD"); got != want {
		t.Errorf("main = %s after a push, want %s", got, want)
	}
}

func TestStartSSH(t *testing.T) {
	bare := NewBare(t, map[string]string{"a.yaml": "a: 1\n"})
	s := StartSSH(t, bare)
	tests := []struct {
		name       string
		key        string
		knownHosts string
		wantErr    bool
	}{
		{name: "plain key", key: s.KeyFile, knownHosts: s.KnownHostsFile},
		{name: "wrong host key", key: s.KeyFile, knownHosts: s.WrongKnownHostsFile, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			RequireProgram(t, "ssh", "openssh-client")
			sshCmd := "ssh -F /dev/null -i " + tt.key + " -o IdentitiesOnly=yes -o BatchMode=yes" +
				" -o StrictHostKeyChecking=yes -o UserKnownHostsFile=" + tt.knownHosts
			work := filepath.Join(t.TempDir(), "clone")
			_, err := GitErr(t, t.TempDir(), []string{"GIT_SSH_COMMAND=" + sshCmd}, "clone", "--quiet", s.URL, work)
			if gotErr := err != nil; gotErr != tt.wantErr {
				t.Fatalf("git clone over ssh error = %v, want error: %v", err, tt.wantErr)
			}
			if tt.wantErr {
				return
			}
			if got, _ := ReadFile(t, work, "HEAD", "a.yaml"); got != "a: 1\n" {
				t.Errorf("cloned a.yaml = %q, want %q", got, "a: 1\n")
			}
		})
	}
	if got := readFile(t, s.KeyPassphraseFile); got != s.KeyPassphrase {
		t.Errorf("KeyPassphraseFile holds %q, want %q", got, s.KeyPassphrase)
	}
	// The encrypted key really is encrypted: ssh-keygen cannot read it
	// without the passphrase.
	if err := exec.Command("ssh-keygen", "-y", "-P", "", "-f", s.EncryptedKeyFile).Run(); err == nil {
		t.Errorf("ssh-keygen read EncryptedKeyFile without a passphrase")
	}
}
