package durable

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

func TestSync(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "a.yaml")
	if err := os.WriteFile(file, []byte("a\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink("missing", link); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, path string
		missing    bool
	}{
		{name: "file", path: file},
		{name: "folder", path: dir},
		{name: "dangling link, left to its folder", path: link},
		{name: "missing", path: filepath.Join(dir, "nope"), missing: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := Sync(tc.path)
			if got := errors.Is(err, os.ErrNotExist); got != tc.missing || (!tc.missing && err != nil) {
				t.Errorf("Sync(%s) = %v", tc.path, err)
			}
		})
	}
}

func TestSyncFS(t *testing.T) {
	err := SyncFS(t.TempDir())
	if runtime.GOOS == "linux" {
		if err != nil && !errors.Is(err, errors.ErrUnsupported) {
			t.Errorf("SyncFS = %v", err)
		}
	} else if !errors.Is(err, errors.ErrUnsupported) {
		t.Errorf("SyncFS = %v, want errors.ErrUnsupported", err)
	}
	if err := SyncFS(filepath.Join(t.TempDir(), "missing")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("SyncFS of a missing folder = %v, want not found", err)
	}
}
