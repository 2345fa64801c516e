package gitwriter

import (
	"bytes"
	"compress/zlib"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"

	"github.com/imagebump/imagebump/internal/testkit/testgit"
)

// TestTreeHashOf reads the tree of a commit with a long message from its
// first line, loose and packed, as go-git's full decode gives it, and
// refuses an object that is not a commit.
func TestTreeHashOf(t *testing.T) {
	bare := testgit.NewBare(t, map[string]string{"a.yaml": "a: 1\n"})
	msg := "Bump\n\n" + strings.Repeat("- a file that moved\n", 5000)
	head := plumbing.NewHash(testgit.Commit(t, bare, "main", map[string]string{"b/c.yaml": "c: 2\n"}, nil, msg))
	blob := plumbing.NewHash(testgit.Git(t, bare, "rev-parse", "main:a.yaml"))
	hex := head.String()
	loose := filepath.Join(bare, "objects", hex[:2], hex[2:])

	for _, packed := range []bool{false, true} {
		if packed {
			testgit.Git(t, bare, "repack", "-a", "-d", "-q")
			testgit.Git(t, bare, "prune-packed")
		}
		if _, err := os.Stat(loose); (err == nil) == packed {
			t.Fatalf("packed=%v: the commit's loose file exists=%v", packed, err == nil)
		}
		repo, err := git.PlainOpen(bare)
		if err != nil {
			t.Fatal(err)
		}
		c, err := repo.CommitObject(head)
		if err != nil {
			t.Fatal(err)
		}
		got, err := treeHashOf(repo, filepath.Join(bare, "objects"), head)
		if err != nil || got != c.TreeHash {
			t.Errorf("packed=%v: treeHashOf = %s, %v; want %s", packed, got, err, c.TreeHash)
		}
		if _, err := treeHashOf(repo, filepath.Join(bare, "objects"), blob); err == nil {
			t.Errorf("packed=%v: treeHashOf(a blob) gave no error", packed)
		}
		if _, err := treeHashOf(repo, filepath.Join(bare, "objects"), plumbing.NewHash(strings.Repeat("ab", 20))); err == nil {
			t.Errorf("packed=%v: treeHashOf(a missing object) gave no error", packed)
		}
		if got, err := checkCommit(repo, filepath.Join(bare, "objects"), head); err != nil || got != c.TreeHash {
			t.Errorf("packed=%v: checkCommit = %s, %v; want %s", packed, got, err, c.TreeHash)
		}
	}
}

// TestCheckCommitDamaged damages a loose commit past its first line: the
// tree still reads, and checkCommit, which Open uses to decide to clone
// again, reports the damage.
func TestCheckCommitDamaged(t *testing.T) {
	bare := testgit.NewBare(t, map[string]string{"a.yaml": "a: 1\n"})
	head := plumbing.NewHash(testgit.Commit(t, bare, "main", map[string]string{"b.yaml": "b: 2\n"}, nil, "Bump b\n\n- b.yaml"))
	hex := head.String()
	loose := filepath.Join(bare, "objects", hex[:2], hex[2:])
	raw, err := os.ReadFile(loose)
	if err != nil {
		t.Fatal(err)
	}
	zr, err := zlib.NewReader(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	content, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	damaged := bytes.Replace(content, []byte("Bump b"), []byte("Bump c"), 1)
	if bytes.Equal(damaged, content) {
		t.Fatal("the commit holds no message to damage")
	}
	var buf bytes.Buffer
	zw := zlib.NewWriter(&buf)
	zw.Write(damaged)
	zw.Close()
	if err := os.Chmod(loose, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(loose, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	repo, err := git.PlainOpen(bare)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := treeHashOf(repo, filepath.Join(bare, "objects"), head); err != nil {
		t.Errorf("treeHashOf of a commit damaged past its first line = %v", err)
	}
	if _, err := checkCommit(repo, filepath.Join(bare, "objects"), head); err == nil || !strings.Contains(err.Error(), "damaged") {
		t.Errorf("checkCommit of a damaged commit = %v, want it reported as damaged", err)
	}
}
