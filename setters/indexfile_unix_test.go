//go:build unix

package setters

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestLoadIndexNotAFile: a FIFO, or a link to an endless device, at the
// index's path is neither waited on nor read without end: LoadIndex
// gives an empty index and says why, and Save puts a file in its place.
func TestLoadIndexNotAFile(t *testing.T) {
	_, opts, file := savedIndex(t)
	for _, tt := range []struct {
		name string
		make func(path string) error
	}{
		{"fifo", func(p string) error { return syscall.Mkfifo(p, 0o644) }},
		{"link to /dev/zero", func(p string) error { return os.Symlink("/dev/zero", p) }},
		{"folder", func(p string) error { return os.Mkdir(p, 0o755) }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), filepath.Base(file))
			if err := tt.make(p); err != nil {
				t.Fatal(err)
			}
			done := make(chan string, 1)
			go func() {
				ix, reason := LoadIndex(p, ByStat, opts)
				if ix.Files() != 0 || ix.Built() {
					reason += " (but the index is not empty)"
				}
				done <- reason
			}()
			select {
			case reason := <-done:
				if !strings.Contains(reason, "cannot be read") || strings.Contains(reason, "not empty") {
					t.Errorf("LoadIndex: reason %q, want an empty index that cannot be read", reason)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("LoadIndex has not returned in 10 s")
			}
			if tt.name == "folder" {
				return
			}
			if err := NewIndex(ByStat, opts).Save(p); err != nil {
				t.Fatalf("Save over it: %v", err)
			}
			if fi, err := os.Lstat(p); err != nil || !fi.Mode().IsRegular() {
				t.Errorf("after Save: %v, %v; want a regular file", fi, err)
			}
		})
	}
}
