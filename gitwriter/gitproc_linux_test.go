package gitwriter

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/imagebump/imagebump/internal/testkit/testgit"
)

// TestLockOfARunningGit: git commit -a holds index.lock, unchanged, for
// as long as its editor is open. Open took a lock unchanged for leftAge for
// a killed cycle's and removed it, under the running commit; it now fails
// the cycle while a git process works in the working copy, naming it,
// and removes the lock once that process is gone.
func TestLockOfARunningGit(t *testing.T) {
	gitBin := testgit.RequireProgram(t, "git", "git")
	bare := testgit.NewBare(t, seed)
	opts := Options{URL: fileURL(bare), Branch: "main", Workdir: t.TempDir()}
	openClose(t, opts)

	write(t, filepath.Join(opts.Workdir, "README.md"), "fleet, edited by hand\n")
	commit := exec.Command(gitBin, "-c", "user.name=someone", "-c", "user.email=someone@example.invalid", "commit", "-a")
	commit.Dir = opts.Workdir
	commit.Env = append(os.Environ(), "GIT_EDITOR=touch .git/editor-started; sleep 60; :")
	if err := commit.Start(); err != nil {
		t.Fatal(err)
	}
	gone := make(chan struct{})
	go func() { commit.Wait(); close(gone) }()
	t.Cleanup(func() { commit.Process.Kill(); <-gone })

	// git writes the index to its lock, then starts the editor, which
	// says so.
	lock := filepath.Join(opts.Workdir, ".git", "index.lock")
	started := filepath.Join(opts.Workdir, ".git", "editor-started")
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if _, err := os.Lstat(started); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("git commit -a started no editor within 10s")
		}
	}
	leaveOld(t, lock) // as an editor left open for a minute leaves it

	r, err := Open(t.Context(), opts)
	if err == nil {
		r.Close()
		t.Fatal("Open succeeded while git commit held index.lock")
	}
	for _, want := range []string{lock, fmt.Sprintf("git (process %d)", commit.Process.Pid), "next cycle looks again"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q: %v", want, err)
		}
	}
	if _, err := os.Lstat(lock); err != nil {
		t.Fatalf("Open removed the lock of a running git commit: %v", err)
	}

	// Killed, git leaves its lock behind (its editor, a sleep, goes on in
	// the working copy: not a git process).
	commit.Process.Kill()
	<-gone
	r = mustOpen(t, opts)
	r.Close()
	if _, err := os.Lstat(lock); !os.IsNotExist(err) {
		t.Errorf("the lock of a killed git is still there (%v)", err)
	}
}
