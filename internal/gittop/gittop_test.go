package gittop

import (
	"os"
	"path/filepath"
	"testing"
)

func TestFind(t *testing.T) {
	root := t.TempDir()
	top := filepath.Join(root, "fleet")
	deep := filepath.Join(top, "clusters", "prod")
	if err := os.MkdirAll(deep, 0o755); err != nil {
		t.Fatal(err)
	}
	if got, ok := Find(deep); ok {
		t.Errorf("no .git yet: Find = %q, true", got)
	}
	// A worktree's .git is a file.
	if err := os.WriteFile(filepath.Join(top, ".git"), []byte("gitdir: /elsewhere\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{top, deep} {
		if got, ok := Find(dir); !ok || got != top {
			t.Errorf("Find(%s) = %q, %v; want %s", dir, got, ok, top)
		}
	}
}
