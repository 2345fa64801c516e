// Package testgit starts real Git servers on loopback for tests: git
// http-backend over smart HTTP with basic auth, and sshd with its own host
// key.
//
// The servers are the real programs from Debian's git and openssh-server
// packages, run with their state in t.TempDir() and stopped by t.Cleanup.
// Bare repositories are made and inspected with the git CLI, which is fine
// in tests (product code must not shell out to git). When a program is
// missing, the helper fails the test if CI=true and skips it otherwise.
package testgit

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/imagebump/imagebump/internal/testkit/ci"
)

// IdentityName and IdentityEmail are the author and committer of the
// commits testgit makes.
const (
	IdentityName  = "testgit"
	IdentityEmail = "testgit@example.invalid"
)

// RequireProgram returns the path of program, looked up in PATH and then in
// the extra directories given. When it is missing, the test fails if
// CI=true and is skipped otherwise, with a hint naming the Debian package.
func RequireProgram(t testing.TB, program, debianPackage string, extraDirs ...string) string {
	t.Helper()
	if p, err := exec.LookPath(program); err == nil {
		return p
	}
	for _, d := range extraDirs {
		p := filepath.Join(d, program)
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
			return p
		}
	}
	ci.Missing(t, "testgit: "+program+" not found; install the Debian package "+debianPackage)
	return ""
}

// gitEnv is the environment every git command of this package runs with:
// no system or global config, a fixed identity, English messages.
func gitEnv() []string {
	env := make([]string, 0, len(os.Environ())+8)
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "GIT_") {
			continue
		}
		env = append(env, kv)
	}
	return append(env,
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_CONFIG_GLOBAL=/dev/null",
		"GIT_AUTHOR_NAME="+IdentityName,
		"GIT_AUTHOR_EMAIL="+IdentityEmail,
		"GIT_COMMITTER_NAME="+IdentityName,
		"GIT_COMMITTER_EMAIL="+IdentityEmail,
		"GIT_TERMINAL_PROMPT=0",
		"LC_ALL=C",
	)
}

// Git runs git with args in dir and returns its standard output with the
// trailing newline removed. It fails the test when git fails.
func Git(t testing.TB, dir string, args ...string) string {
	t.Helper()
	out, err := GitErr(t, dir, nil, args...)
	if err != nil {
		t.Fatalf("git %s in %s: %v", strings.Join(args, " "), dir, err)
	}
	return out
}

// GitErr is Git that returns the error, with git's standard error in it,
// instead of failing the test. extraEnv is added to the environment.
func GitErr(t testing.TB, dir string, extraEnv []string, args ...string) (string, error) {
	t.Helper()
	out, err := run(t, dir, extraEnv, args...)
	return strings.TrimSuffix(out, "\n"), err
}

// run runs git and returns its standard output as is.
func run(t testing.TB, dir string, extraEnv []string, args ...string) (string, error) {
	t.Helper()
	bin := RequireProgram(t, "git", "git")
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.Env = append(gitEnv(), extraEnv...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout = &stdout
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), &gitError{err: err, stderr: strings.TrimSpace(stderr.String())}
	}
	return stdout.String(), nil
}

type gitError struct {
	err    error
	stderr string
}

func (e *gitError) Error() string { return e.err.Error() + ": " + e.stderr }
func (e *gitError) Unwrap() error { return e.err }

// NewBare returns the path of a new bare repository, named repo.git in a
// temporary directory, whose branch main holds one commit with files
// (slash-separated path to content). HEAD points at main.
func NewBare(t testing.TB, files map[string]string) (dir string) {
	t.Helper()
	root := t.TempDir()
	dir = filepath.Join(root, "repo.git")
	Git(t, root, "init", "--quiet", "--bare", "--initial-branch=main", dir)
	Commit(t, dir, "main", files, nil, "initial commit")
	return dir
}

// Commit adds a commit to branch in the bare repository: files are written
// (created or replaced), remove are deleted, and the commit gets message.
// A branch that does not exist yet starts from main. It returns the new
// commit's SHA.
func Commit(t testing.TB, bareDir, branch string, files map[string]string, remove []string, message string) string {
	t.Helper()
	return commit(t, bareDir, branch, nil, files, remove, message)
}

// CommitAs is Commit with the commit authored and committed by name and
// email instead of the package's identity.
func CommitAs(t testing.TB, bareDir, branch, name, email string, files map[string]string, remove []string, message string) string {
	t.Helper()
	env := []string{"GIT_AUTHOR_NAME=" + name, "GIT_AUTHOR_EMAIL=" + email, "GIT_COMMITTER_NAME=" + name, "GIT_COMMITTER_EMAIL=" + email}
	return commit(t, bareDir, branch, env, files, remove, message)
}

func commit(t testing.TB, bareDir, branch string, env []string, files map[string]string, remove []string, message string) string {
	t.Helper()
	work := t.TempDir()
	Git(t, work, "init", "--quiet", "--initial-branch="+branch)
	base := ""
	if _, err := GitErr(t, bareDir, nil, "rev-parse", "--verify", "--quiet", "refs/heads/"+branch); err == nil {
		base = "refs/heads/" + branch
	} else if _, err := GitErr(t, bareDir, nil, "rev-parse", "--verify", "--quiet", "refs/heads/main"); err == nil {
		base = "refs/heads/main"
	}
	if base != "" {
		Git(t, work, "fetch", "--quiet", bareDir, base)
		Git(t, work, "reset", "--quiet", "--hard", "FETCH_HEAD")
	}
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		p := filepath.Join(work, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(files[name]), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range remove {
		Git(t, work, "rm", "--quiet", "--", name)
	}
	Git(t, work, "add", "--all")
	if _, err := GitErr(t, work, env, "commit", "--quiet", "--allow-empty", "-m", message); err != nil {
		t.Fatalf("git commit in %s: %v", work, err)
	}
	Git(t, work, "push", "--quiet", bareDir, "HEAD:refs/heads/"+branch)
	return Git(t, work, "rev-parse", "HEAD")
}

// Refs returns every ref of the repository with the SHA it points at
// (tags peeled are not included). HEAD is left out.
func Refs(t testing.TB, gitDir string) map[string]string {
	t.Helper()
	out := Git(t, gitDir, "for-each-ref", "--format=%(refname) %(objectname)")
	refs := make(map[string]string)
	for _, line := range strings.Split(out, "\n") {
		if line == "" {
			continue
		}
		name, sha, _ := strings.Cut(line, " ")
		refs[name] = sha
	}
	return refs
}

// ReadFile returns the content of path at rev in the repository, and false
// when the path does not exist there.
func ReadFile(t testing.TB, gitDir, rev, path string) (string, bool) {
	t.Helper()
	out, err := run(t, gitDir, nil, "cat-file", "blob", rev+":"+path)
	if err != nil {
		return "", false
	}
	return out, true
}

// Log returns the subjects of the commits reachable from rev, newest first.
func Log(t testing.TB, gitDir, rev string) []string {
	t.Helper()
	out := Git(t, gitDir, "log", "--format=%s", rev)
	if out == "" {
		return nil
	}
	return strings.Split(out, "\n")
}
