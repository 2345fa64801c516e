//go:build unix

package gitwriter

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/imagebump/imagebump/internal/testkit/testgit"
)

// Writes that fail as on a full disk: a child process opens the working
// copy under a 4 KB file size limit (EFBIG), with the git server in this
// process.

// openUnderLimit runs the calling test again in a child process, where
// childOpen opens the working copy of opts under the limit, and returns
// what the child printed: Open's error and its log.
func openUnderLimit(t *testing.T, opts Options) string {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^"+t.Name()+"$", "-test.count=1")
	cmd.Env = append(os.Environ(), "GITWRITER_FSIZE_WORKDIR="+opts.Workdir, "GITWRITER_FSIZE_URL="+opts.URL)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the child: %v\n%s", err, out)
	}
	return string(out)
}

// childOpen is the child's side of openUnderLimit: in the child, it opens
// the working copy under the limit, prints the error and the log, and
// reports true.
func childOpen(t *testing.T) bool {
	wd := os.Getenv("GITWRITER_FSIZE_WORKDIR")
	if wd == "" {
		return false
	}
	signal.Ignore(syscall.SIGXFSZ)
	if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &syscall.Rlimit{Cur: 4 << 10, Max: 4 << 10}); err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	r, err := Open(context.Background(), Options{URL: os.Getenv("GITWRITER_FSIZE_URL"), Workdir: wd, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err == nil {
		err = r.Close()
	}
	fmt.Printf("error: %v\nlogs: %s\n", err, logs.String())
	return true
}

const efbigHint = "could not be written (a file size limit (ulimit -f) stopped a write: raise it; see --workdir)"

// TestThinFetchUnwritable: a thin fetch whose pack cannot be written fails
// the Open with what to do, and does not fetch the whole tree again
// (which must fail the same way, after more bytes); once the limit is
// gone, the next Open fetches the change.
func TestThinFetchUnwritable(t *testing.T) {
	if childOpen(t) {
		return
	}
	bare := testgit.NewBare(t, map[string]string{"clusters/app.yaml": "image: app:1.0.0\n"})
	opts := Options{URL: testgit.StartHTTP(t, bare, false).URL, Workdir: t.TempDir()}
	openClose(t, opts)
	testgit.Commit(t, bare, "main", map[string]string{"clusters/app.yaml": "image: app:1.1.0\n", "blob": string(randomBytes(t, 64<<10))}, nil, "bump")
	out := openUnderLimit(t, opts)
	if !strings.Contains(out, efbigHint+"; the remote is not at fault") {
		t.Errorf("Open under a file size limit did not say the working copy could not be written:\n%s", out)
	}
	if strings.Contains(out, "fetching the whole tree") {
		t.Errorf("a full disk was taken for a bad thin pack:\n%s", out)
	}
	checkRecovers(t, opts, "clusters/app.yaml", "image: app:1.1.0\n")
}

// TestStoreThinUnwritable: the likelier case on a full disk, a small
// change to a large file: the thin pack (a delta) is written, the object
// it resolves to is not. The fetch fails as above, without a whole-tree
// fetch.
func TestStoreThinUnwritable(t *testing.T) {
	if childOpen(t) {
		return
	}
	big := string(randomBytes(t, 32<<10))
	bare := testgit.NewBare(t, map[string]string{"big.bin": big})
	opts := Options{URL: testgit.StartHTTP(t, bare, false).URL, Workdir: t.TempDir()}
	openClose(t, opts)
	testgit.Commit(t, bare, "main", map[string]string{"big.bin": big + "one more line\n"}, nil, "append")
	out := openUnderLimit(t, opts)
	if !strings.Contains(out, efbigHint+"; the remote is not at fault") || strings.Contains(out, "fetching the whole tree") {
		t.Errorf("Open under a file size limit, storing a resolved delta:\n%s", out)
	}
	checkRecovers(t, opts, "big.bin", big+"one more line\n")
}

// TestResetUnwritable: when moving the worktree to a fetched head fails
// to write a file, Open fails with what to do, and the working copy stays
// to be reset by the next Open: it was taken for a damaged one, deleted
// and cloned again in the same cycle (which failed the same way).
func TestResetUnwritable(t *testing.T) {
	if childOpen(t) {
		return
	}
	bare := testgit.NewBare(t, map[string]string{"clusters/app.yaml": "image: app:1.0.0\n"})
	opts := Options{URL: testgit.StartHTTP(t, bare, false).URL, Workdir: t.TempDir()}
	openClose(t, opts)
	// 64 KB of zeros: a few bytes in the pack, too big for the worktree.
	big := strings.Repeat("0", 64<<10)
	testgit.Commit(t, bare, "main", map[string]string{"big.txt": big}, nil, "big")
	out := openUnderLimit(t, opts)
	if !strings.Contains(out, "moving the worktree to ") || !strings.Contains(out, efbigHint) {
		t.Errorf("Open under a file size limit did not say the worktree could not be written:\n%s", out)
	}
	if strings.Contains(out, "re-cloning") || strings.Contains(out, "not as imagebump left it") {
		t.Errorf("a full disk was taken for a damaged working copy, or for someone else's doing:\n%s", out)
	}
	checkRecovers(t, opts, "big.txt", big)
}

// checkRecovers opens the working copy without the limit, and checks that
// file holds want and that git finds the store whole.
func checkRecovers(t *testing.T, opts Options, file, want string) {
	t.Helper()
	openClose(t, opts)
	if got, _ := os.ReadFile(filepath.Join(opts.Workdir, filepath.FromSlash(file))); string(got) != want {
		t.Errorf("after the limit went, %s holds %d bytes, want %d", file, len(got), len(want))
	}
	if out, err := testgit.GitErr(t, opts.Workdir, nil, "fsck", "--no-progress", "--no-dangling"); err != nil {
		t.Fatalf("git fsck on the working copy: %v\n%s", err, out)
	}
}
