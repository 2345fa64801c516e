package gitwriter

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/imagebump/imagebump/internal/testkit/foldfs"
	"github.com/imagebump/imagebump/internal/testkit/testgit"
	"golang.org/x/text/unicode/norm"
)

// TestFoldingFileSystem: on a real file system that takes two names for
// one (foldfs, a FUSE loopback), the probe finds it; a branch holding two
// such names is refused, naming both, and checked out once fixed; an
// edit that reaches a file by another spelling of its path is not
// committed. The same file system folding nothing is found to fold
// nothing, and both names are written.
func TestFoldingFileSystem(t *testing.T) {
	for _, tt := range []struct {
		name  string
		fold  foldfs.Fold
		a, b  string
		folds bool
	}{
		{"case", strings.ToLower, "clusters/App.yaml", "clusters/app.yaml", true},
		{"normalization form", norm.NFC.String, "clusters/caf\u00e9.yaml", "clusters/cafe\u0301.yaml", true},
		{"none", func(s string) string { return s }, "clusters/App.yaml", "clusters/app.yaml", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			mnt := foldfs.Mount(t, tt.fold)
			if folds, err := probeNameFolding(mnt); err != nil || folds != tt.folds {
				t.Fatalf("probeNameFolding() = %v, %v; want %v", folds, err, tt.folds)
			}
			files := map[string]string{tt.a: "image: a:1.0.0 # a\n", tt.b: "image: b:9.9.9 # b\n"}
			bare := testgit.NewBare(t, files)
			opts := Options{URL: fileURL(bare), Branch: "main", Workdir: filepath.Join(mnt, "work")}
			r, err := Open(t.Context(), opts)
			if !tt.folds {
				if err != nil {
					t.Fatal(err)
				}
				defer r.Close()
				for p, want := range files {
					if got, err := os.ReadFile(filepath.Join(r.Dir(), filepath.FromSlash(p))); err != nil || string(got) != want {
						t.Errorf("%s: %q, %v; want %q", p, got, err, want)
					}
				}
				return
			}
			if !errors.Is(err, errBadTree) || !strings.Contains(err.Error(), tt.a) || !strings.Contains(err.Error(), tt.b) {
				t.Fatalf("Open() error = %v, want errBadTree naming %q and %q", err, tt.a, tt.b)
			}
			testgit.Commit(t, bare, "main", nil, []string{tt.b}, "fix")
			r = mustOpen(t, opts)
			defer r.Close()
			if got, err := os.ReadFile(filepath.Join(r.Dir(), filepath.FromSlash(tt.a))); err != nil || string(got) != files[tt.a] {
				t.Errorf("%s once the branch is fixed: %q, %v", tt.a, got, err)
			}
			before := testgit.Refs(t, bare)
			_, err = r.Update(t.Context(), Update{Commit: author}, setFiles(map[string]string{tt.b: "image: a:2.0.0 # a\n"}, "Bump", nil))
			if err == nil || !strings.Contains(err.Error(), "check the case of the paths in the config") {
				t.Errorf("an edit of %s: %v, want it refused", tt.b, err)
			}
			if after := testgit.Refs(t, bare); after["refs/heads/main"] != before["refs/heads/main"] {
				t.Errorf("the remote moved: %v -> %v", before, after)
			}
		})
	}
}
