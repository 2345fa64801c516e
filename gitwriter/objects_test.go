package gitwriter

import (
	"bytes"
	"compress/zlib"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"

	"github.com/imagebump/imagebump/internal/testkit/testgit"
)

// TestCheckCommit reads the tree of a commit with a long message, loose
// and packed, as go-git's full decode gives it, and refuses an object that
// is not a commit.
func TestCheckCommit(t *testing.T) {
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
		if _, err := checkCommit(repo, filepath.Join(bare, "objects"), blob); err == nil {
			t.Errorf("packed=%v: checkCommit(a blob) gave no error", packed)
		}
		if _, err := checkCommit(repo, filepath.Join(bare, "objects"), plumbing.NewHash(strings.Repeat("ab", 20))); err == nil {
			t.Errorf("packed=%v: checkCommit(a missing object) gave no error", packed)
		}
		if got, err := checkCommit(repo, filepath.Join(bare, "objects"), head); err != nil || got != c.TreeHash {
			t.Errorf("packed=%v: checkCommit = %s, %v; want %s", packed, got, err, c.TreeHash)
		}
	}
}

// TestCheckCommitDamaged damages a loose commit past its first line:
// checkCommit, which Open uses to decide to clone again and every read of
// a commit's tree goes through, reports the damage.
func TestCheckCommitDamaged(t *testing.T) {
	bare := testgit.NewBare(t, map[string]string{"a.yaml": "a: 1\n"})
	head := plumbing.NewHash(testgit.Commit(t, bare, "main", map[string]string{"b.yaml": "b: 2\n"}, nil, "Bump b\n\n- b.yaml"))
	damageLoose(t, filepath.Join(bare, "objects"), head, "Bump b", "Bump c")
	repo, err := git.PlainOpen(bare)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := checkCommit(repo, filepath.Join(bare, "objects"), head); !errors.Is(err, errDamaged) || !strings.Contains(err.Error(), "damaged") {
		t.Errorf("checkCommit of a damaged commit = %v, want it reported as damaged (errDamaged)", err)
	}
}

// damageLoose replaces old with new in the loose object h of the objects
// folder, keeping its name.
func damageLoose(t *testing.T, objects string, h plumbing.Hash, old, new string) {
	t.Helper()
	hex := h.String()
	loose := filepath.Join(objects, hex[:2], hex[2:])
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
	damaged := bytes.Replace(content, []byte(old), []byte(new), 1)
	if bytes.Equal(damaged, content) {
		t.Fatalf("object %s does not hold %q", h, old)
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
}

// TestChangesChecksOldCommit: Changes from a commit that is not the head
// reads it whole and checks it (Open checks only the head). The commit
// here is one an Update wrote loose, damaged past its first line; before,
// only that first line was read, and the damage went unseen.
func TestChangesChecksOldCommit(t *testing.T) {
	bare := testgit.NewBare(t, seed)
	workdir := t.TempDir()
	logger, logs := newLogger()
	opts := Options{URL: fileURL(bare), Branch: "main", Workdir: workdir, Depth: -1, Logger: logger}
	r := mustOpen(t, opts)
	var commits []string
	for _, v := range []string{"2.0.0", "3.0.0"} {
		res, err := r.Update(t.Context(), Update{Commit: author}, func(_ context.Context, dir string) ([]string, string, error) {
			return []string{"clusters/prod/app.yaml"}, "Bump app to " + v, os.WriteFile(filepath.Join(dir, "clusters", "prod", "app.yaml"), []byte("image: app:"+v+"\n"), 0o644)
		})
		if err != nil || !res.Pushed {
			t.Fatalf("Update to %s: pushed %v, %v", v, res != nil && res.Pushed, err)
		}
		commits = append(commits, res.Commit)
	}
	r.Close()
	first := plumbing.NewHash(commits[0])
	damageLoose(t, filepath.Join(workdir, ".git", "objects"), first, "Bump app to 2.0.0", "Bump app to 9.0.0")

	r = mustOpen(t, opts)
	if _, err := r.Changes(commits[0]); !errors.Is(err, errDamaged) {
		t.Fatalf("Changes from a damaged commit: err = %v, want errDamaged", err)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(logs.String(), "emptying the working copy") {
		t.Errorf("Close after the damage did not empty the working copy:\n%s", logs)
	}
}
