//go:build unix

package setters

import (
	"errors"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"syscall"
	"testing"
)

// TestWriteTempFailureLeavesNothing: a temporary file whose write fails
// (here EFBIG, under a file size limit; ENOSPC on a full disk takes the
// same way) is removed. Every error return emptied the name the cleanup
// removed, and a full disk left an empty .FILE.imagebump-N beside each
// file apply tried to edit, in the user's checkout. The limit is set in a
// child process, which runs this test alone.
func TestWriteTempFailureLeavesNothing(t *testing.T) {
	dir := os.Getenv("SETTERS_FSIZE_DIR")
	if dir == "" {
		dir = t.TempDir()
		cmd := exec.Command(os.Args[0], "-test.run=^TestWriteTempFailureLeavesNothing$", "-test.count=1")
		cmd.Env = append(os.Environ(), "SETTERS_FSIZE_DIR="+dir)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("the child: %v\n%s", err, out)
		}
		if left, _ := os.ReadDir(dir); len(left) > 0 {
			t.Errorf("left in the folder: %v", left)
		}
		return
	}
	signal.Ignore(syscall.SIGXFSZ)
	if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &syscall.Rlimit{Cur: 1024, Max: 1024}); err != nil {
		t.Fatal(err)
	}
	_, err := writeTemp(dir+string(filepath.Separator), "app.yaml", 0o644, owner{uid: -1, gid: -1}, make([]byte, 64<<10), false)
	if !errors.Is(err, syscall.EFBIG) {
		t.Fatalf("writeTemp over the size limit: %v, want EFBIG", err)
	}
}
