package gitwriter

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/imagebump/imagebump/internal/testkit/testgit"
	"golang.org/x/text/cases"
)

// TestProbeNameFolding: the file systems tests run on here tell every
// name apart (Linux's), and the probe leaves nothing behind.
func TestProbeNameFolding(t *testing.T) {
	dir := t.TempDir()
	folds, err := probeNameFolding(dir)
	if err != nil || folds {
		t.Fatalf("probeNameFolding(%s) = %v, %v; want no folding on this file system", dir, folds, err)
	}
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Errorf("the probe left %v", left)
	}
	if _, err := probeNameFolding(filepath.Join(dir, "missing")); err == nil {
		t.Error("probeNameFolding of a missing folder: no error")
	}
}

// TestNameFoldKey: names APFS, NTFS or Linux's casefold take for one
// have one key; others do not.
func TestNameFoldKey(t *testing.T) {
	c := cases.Fold()
	for _, tt := range []struct {
		a, b string
		same bool
	}{
		{"App.yaml", "app.yaml", true},
		{"caf\u00e9.yaml", "cafe\u0301.yaml", true},
		{"CAF\u00c9.yaml", "cafe\u0301.yaml", true},
		{"\u212a", "k", true}, // the Kelvin sign
		{"J\u030c", "\u01f0", true},
		{"\u0390", "\u03aa\u0301", true},
		{"stra\u00dfe", "STRASSE", true},
		{"\ufb01le", "file", true},
		{"a\u200cpp.yaml", "app.yaml", true}, // HFS+ ignores U+200C
		{"app.yaml\ufeff", "APP.yaml", true},
		{"a\u202ep.yaml", "A\u206fP.YAML", true},
		{"a\u200bp.yaml", "ap.yaml", false}, // U+200B is not ignored
		{"a.yaml", "b.yaml", false},
		{"app.yaml", "app.yml", false},
	} {
		if got := nameFoldKey(c, tt.a) == nameFoldKey(c, tt.b); got != tt.same {
			t.Errorf("%q and %q one name: %v, want %v", tt.a, tt.b, got, tt.same)
		}
	}
}

// TestFoldedNamesRefused: on a file system that folds names (given by
// namesFoldIn, since this machine's do not), a tree with two names it
// takes for one in a folder is refused, by a clone and by a move, with
// an error naming both and no file written over; once the branch is
// fixed, the next Open checks it out. On a file system that tells them
// apart, the same tree is checked out whole.
func TestFoldedNamesRefused(t *testing.T) {
	for _, tt := range []struct {
		name  string
		a, b  string // b is added to a tree that holds a
		shown [2]string
	}{
		{"case", "clusters/App.yaml", "clusters/app.yaml", [2]string{"clusters/App.yaml", "clusters/app.yaml"}},
		{"case of a folder", "clusters/prod/app.yaml", "clusters/Prod/x.yaml", [2]string{"clusters/Prod", "clusters/prod"}},
		{"normalization form", "caf\u00e9.yaml", "cafe\u0301.yaml", [2]string{"caf\u00e9.yaml", "cafe\u0301.yaml"}},
	} {
		for _, via := range []string{"clone", "move"} {
			t.Run(tt.name+"/"+via, func(t *testing.T) {
				defer func(was func(string) (bool, error)) { namesFoldIn = was }(namesFoldIn)
				namesFoldIn = func(string) (bool, error) { return true, nil }
				files := map[string]string{tt.a: "image: a:1.0.0 # a\n"}
				bare := testgit.NewBare(t, files)
				opts := Options{URL: fileURL(bare), Branch: "main", Workdir: filepath.Join(t.TempDir(), "work")}
				if via == "move" {
					mustOpen(t, opts).Close()
				}
				testgit.Commit(t, bare, "main", map[string]string{tt.b: "image: b:9.9.9 # b\n"}, nil, "add b")
				_, err := Open(t.Context(), opts)
				if err == nil || !errors.Is(err, errBadTree) || !strings.Contains(err.Error(), tt.shown[0]) || !strings.Contains(err.Error(), tt.shown[1]) {
					t.Fatalf("Open() error = %v, want errBadTree naming %q and %q", err, tt.shown[0], tt.shown[1])
				}
				if via == "move" {
					if got, err := os.ReadFile(filepath.Join(opts.Workdir, filepath.FromSlash(tt.a))); err != nil || string(got) != files[tt.a] {
						t.Errorf("%s after the refused move: %q, %v; want it as it was", tt.a, got, err)
					}
				}
				testgit.Commit(t, bare, "main", nil, []string{tt.b}, "remove b")
				r := mustOpen(t, opts)
				if got, err := os.ReadFile(filepath.Join(r.Dir(), filepath.FromSlash(tt.a))); err != nil || string(got) != files[tt.a] {
					t.Errorf("%s once the branch is fixed: %q, %v", tt.a, got, err)
				}

				// Where names are told apart, both are written.
				namesFoldIn = func(string) (bool, error) { return false, nil }
				testgit.Commit(t, bare, "main", map[string]string{tt.b: "image: b:9.9.9 # b\n"}, nil, "add b again")
				r.Close()
				r = mustOpen(t, opts)
				for p, want := range map[string]string{tt.a: files[tt.a], tt.b: "image: b:9.9.9 # b\n"} {
					if got, err := os.ReadFile(filepath.Join(r.Dir(), filepath.FromSlash(p))); err != nil || string(got) != want {
						t.Errorf("%s where names are told apart: %q, %v; want %q", p, got, err, want)
					}
				}
			})
		}
	}
}

// TestNamesCheckedOnce: a working copy checked out where names were told
// apart (or by an older imagebump) that holds two names a folding file
// system takes for one is refused once that file system folds, though
// the moves since touch another folder; once fixed, the check is
// recorded and not made again.
func TestNamesCheckedOnce(t *testing.T) {
	for _, trust := range []bool{false, true} {
		t.Run(map[bool]string{false: "checked", true: "TrustWorktree"}[trust], func(t *testing.T) {
			defer func(was func(string) (bool, error)) { namesFoldIn = was }(namesFoldIn)
			namesFoldIn = func(string) (bool, error) { return false, nil }
			bare := testgit.NewBare(t, map[string]string{"clusters/App.yaml": "a\n", "clusters/app.yaml": "b\n", "other/x.yaml": "x\n"})
			opts := Options{URL: fileURL(bare), Branch: "main", Workdir: filepath.Join(t.TempDir(), "work"), TrustWorktree: trust}
			mustOpen(t, opts).Close()
			testgit.Commit(t, bare, "main", map[string]string{"other/x.yaml": "y\n"}, nil, "elsewhere")

			namesFoldIn = func(string) (bool, error) { return true, nil }
			_, err := Open(t.Context(), opts)
			if !errors.Is(err, errBadTree) || !strings.Contains(err.Error(), `"clusters/App.yaml" and "clusters/app.yaml"`) {
				t.Fatalf("Open() error = %v, want errBadTree naming both names", err)
			}
			mark := filepath.Join(opts.Workdir, ".git", namesCheckedFile)
			if _, err := os.Stat(mark); err == nil {
				t.Error("the check is recorded though it failed")
			}
			testgit.Commit(t, bare, "main", nil, []string{"clusters/app.yaml"}, "fix")
			mustOpen(t, opts).Close()
			if _, err := os.Stat(mark); err != nil {
				t.Errorf("the check is not recorded: %v", err)
			}
		})
	}
}

// TestFoldedNamesEditRefused: on a file system that folds names, an edit that
// reports a file by another spelling of its path is not committed: the
// commit would hold both names.
func TestFoldedNamesEditRefused(t *testing.T) {
	defer func(was func(string) (bool, error)) { namesFoldIn = was }(namesFoldIn)
	namesFoldIn = func(string) (bool, error) { return true, nil }
	bare := testgit.NewBare(t, map[string]string{"clusters/app.yaml": "image: a:1.0.0\n"})
	r := mustOpen(t, Options{URL: fileURL(bare), Branch: "main", Workdir: t.TempDir()})
	before := testgit.Refs(t, bare)
	for _, p := range []string{"clusters/App.yaml", "Clusters/app.yaml"} {
		_, err := r.Update(t.Context(), Update{Commit: author}, setFiles(map[string]string{p: "image: a:2.0.0\n"}, "Bump", nil))
		if err == nil || !strings.Contains(err.Error(), "check the case of the paths in the config") {
			t.Errorf("an edit of %s: %v, want it refused", p, err)
		}
	}
	if after := testgit.Refs(t, bare); after["refs/heads/main"] != before["refs/heads/main"] {
		t.Errorf("the remote moved: %v -> %v", before, after)
	}
}

// BenchmarkProbeNameFolding: the probe each Open that reuses a working copy
// makes.
func BenchmarkProbeNameFolding(b *testing.B) {
	dir := b.TempDir()
	for b.Loop() {
		if _, err := probeNameFolding(dir); err != nil {
			b.Fatal(err)
		}
	}
}
