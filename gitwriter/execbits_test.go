package gitwriter

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/imagebump/imagebump/internal/testkit/testgit"
)

// TestProbeExecBits: the file systems tests run on here keep executable
// bits, and the probe leaves nothing behind.
func TestProbeExecBits(t *testing.T) {
	dir := t.TempDir()
	kept, err := probeExecBits(dir)
	if err != nil || !kept {
		t.Fatalf("probeExecBits(%s) = %v, %v; want the bits kept", dir, kept, err)
	}
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Errorf("the probe left %v", left)
	}
	if _, err := probeExecBits(filepath.Join(dir, "missing")); err == nil {
		t.Error("probeExecBits of a missing folder: no error")
	}
}

// TestExecBitNotKept: where the file system keeps executable bits, a
// file whose bit was changed by hand is written again by the next Open
// that checks the worktree; where it keeps none (given by execBitsIn),
// the bit is no change, and the file is left as it is.
func TestExecBitNotKept(t *testing.T) {
	for _, kept := range []bool{true, false} {
		t.Run(map[bool]string{true: "kept", false: "not kept"}[kept], func(t *testing.T) {
			defer func(was func(string) (bool, error)) { execBitsIn = was }(execBitsIn)
			execBitsIn = func(string) (bool, error) { return kept, nil }
			bare := testgit.NewBare(t, seed)
			opts := Options{URL: fileURL(bare), Branch: "main", Workdir: t.TempDir()}
			mustOpen(t, opts).Close()
			p := filepath.Join(opts.Workdir, "clusters/prod/app.yaml")
			if err := os.Chmod(p, 0o755); err != nil {
				t.Fatal(err)
			}
			before, err := os.Lstat(p)
			if err != nil {
				t.Fatal(err)
			}
			mustOpen(t, opts).Close()
			after, err := os.Lstat(p)
			if err != nil {
				t.Fatal(err)
			}
			if rewritten := !os.SameFile(before, after) || after.Mode() != before.Mode(); rewritten != kept {
				t.Errorf("the file made executable by hand: mode %v -> %v, written again: %v; want %v", before.Mode(), after.Mode(), rewritten, kept)
			}
		})
	}
}
