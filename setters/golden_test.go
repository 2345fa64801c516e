package setters

import (
	"context"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite the expected trees, problems.txt and changes.txt of setters/testdata")

// goldenDir holds the golden cases, one folder each with input/ and
// expected/ trees and optional problems.txt and changes.txt.
const goldenDir = "testdata"

var testDigest = "sha256:" + strings.Repeat("ab", 32)

// goldenImages is what the policies of every golden case selected.
var goldenImages = map[string]Image{
	"apps:app":     {Repository: "ghcr.io/acme/app", Tag: "1.5.0"},
	"apps:pinned":  {Repository: "ghcr.io/acme/app", Tag: "1.5.0", Digest: testDigest},
	"apps:web":     {Repository: "docker.io/acme/web", Tag: "v2.3.1"},
	"apps:moved":   {Repository: "registry.example.com/acme/app", Tag: "2.0.0"},
	"apps:decimal": {Repository: "ghcr.io/acme/decimal", Tag: "1.10"},
	"apps:date":    {Repository: "ghcr.io/acme/nightly", Tag: "20240102"},
	"apps:switch":  {Repository: "ghcr.io/acme/switch", Tag: "on"},
}

// goldenKnown knows every policy in goldenImages and apps:failed, which
// resolved nothing.
func goldenKnown(p string) bool {
	_, ok := goldenImages[p]
	return ok || p == "apps:failed"
}

// oldTime is the modification time every copied file gets, so the harness
// can tell which files were written.
var oldTime = time.Date(2001, 2, 3, 4, 5, 6, 0, time.UTC)

// fileMode is the mode every copied file gets; Apply must keep it.
const fileMode fs.FileMode = 0o640

// goldenHooks set up what cannot be committed (symlinks, a nested .git)
// before Apply runs, and check it afterwards.
var goldenHooks = map[string]struct {
	before func(t *testing.T, dir string)
	after  func(t *testing.T, dir string)
}{
	"symlinks": {
		before: func(t *testing.T, dir string) {
			outside := t.TempDir()
			writeFile(t, filepath.Join(outside, "outside.yaml"), markedOutside)
			writeFile(t, filepath.Join(outside, "sub", "nested.yaml"), markedOutside)
			symlink(t, filepath.Join(outside, "outside.yaml"), filepath.Join(dir, "escape.yaml"))
			symlink(t, filepath.Join(outside, "sub"), filepath.Join(dir, "escape-dir"))
			symlink(t, "../../"+filepath.Base(outside)+"/outside.yaml", filepath.Join(dir, "relative-escape.yaml"))
			// Inside the root: followed once, and deploy.yaml is edited once.
			symlink(t, "deploy.yaml", filepath.Join(dir, "alias.yaml"))
			symlink(t, ".", filepath.Join(dir, "loop"))
			t.Cleanup(func() {
				for _, f := range []string{"outside.yaml", "sub/nested.yaml"} {
					if got := readTestFile(t, filepath.Join(outside, f)); got != markedOutside {
						t.Errorf("%s outside the root changed to %q", f, got)
					}
				}
			})
		},
		after: func(t *testing.T, dir string) {
			for _, l := range []string{"escape.yaml", "escape-dir", "relative-escape.yaml", "alias.yaml", "loop"} {
				fi, err := os.Lstat(filepath.Join(dir, l))
				if err != nil || fi.Mode()&fs.ModeSymlink == 0 {
					t.Errorf("%s is no longer a symlink (%v)", l, err)
				}
			}
		},
	},
	"git-dir": {
		before: func(t *testing.T, dir string) {
			writeFile(t, filepath.Join(dir, ".git", "HEAD"), "ref: refs/heads/main\n")
			writeFile(t, filepath.Join(dir, ".git", "marked.yaml"), markedOutside)
			writeFile(t, filepath.Join(dir, "sub", ".git", "nested.yaml"), markedOutside)
		},
		after: func(t *testing.T, dir string) {
			for _, f := range []string{".git/marked.yaml", "sub/.git/nested.yaml"} {
				if got := readTestFile(t, filepath.Join(dir, f)); got != markedOutside {
					t.Errorf("%s changed to %q", f, got)
				}
			}
		},
	},
}

const markedOutside = "image: ghcr.io/acme/app:1.4.2 # {\"$imagepolicy\": \"apps:app\"}\n"

func TestGolden(t *testing.T) {
	entries, err := os.ReadDir(goldenDir)
	if err != nil {
		t.Fatal(err)
	}
	cases := 0
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		cases++
		t.Run(e.Name(), func(t *testing.T) { runGolden(t, e.Name()) })
	}
	if cases < 22 {
		t.Errorf("found %d golden cases, want at least 22", cases)
	}
}

func runGolden(t *testing.T, name string) {
	caseDir := filepath.Join(goldenDir, name)
	input := filepath.Join(caseDir, "input")
	dir := filepath.Join(t.TempDir(), "repo")
	copyTree(t, input, dir)
	hook := goldenHooks[name]
	if hook.before != nil {
		hook.before(t, dir)
	}
	ctx := context.Background()
	opts := Options{Root: dir, Images: goldenImages, Known: goldenKnown}

	// A dry run changes nothing and finds what the real run does.
	dry, err := Apply(ctx, opts)
	if err != nil {
		t.Fatalf("dry run: %v", err)
	}
	if diff := cmp.Diff(readTree(t, dir), readTree(t, input)); diff != "" {
		t.Fatalf("the dry run changed files (-got +want):\n%s", diff)
	}

	opts.Write = true
	edited := map[string]int{}
	opts.OnEdit = func(file string, before, after []byte) { edited[file]++ }
	res, err := Apply(ctx, opts)
	if err != nil {
		t.Fatalf("Apply: %v", err)
	}
	if hook.after != nil {
		hook.after(t, dir)
	}
	if diff := cmp.Diff(comparable(res), comparable(dry)); diff != "" {
		t.Errorf("the dry run and the real run differ (-real +dry):\n%s", diff)
	}
	for _, f := range res.FilesChanged {
		if edited[f] != 1 {
			t.Errorf("OnEdit called %d times for %s, want 1", edited[f], f)
		}
	}
	if len(edited) != len(res.FilesChanged) {
		t.Errorf("OnEdit called for %d files, want %d", len(edited), len(res.FilesChanged))
	}
	gotProblems := problemLines(res.Problems)
	gotChanges := changeLines(res.Changes)

	expectedDir := filepath.Join(caseDir, "expected")
	if *update {
		if err := os.RemoveAll(expectedDir); err != nil {
			t.Fatal(err)
		}
		copyTree(t, dir, expectedDir)
		writeLines(t, filepath.Join(caseDir, "problems.txt"), gotProblems)
		writeLines(t, filepath.Join(caseDir, "changes.txt"), gotChanges)
	}

	want := readTree(t, expectedDir)
	if diff := cmp.Diff(readTree(t, dir), want); diff != "" {
		t.Errorf("tree differs from expected (-got +want):\n%s", diff)
	}
	if diff := cmp.Diff(gotChanges, readLines(t, filepath.Join(caseDir, "changes.txt"))); diff != "" {
		t.Errorf("changes differ (-got +want):\n%s", diff)
	}
	checkProblems(t, gotProblems, readLines(t, filepath.Join(caseDir, "problems.txt")))

	// Files the run did not change keep their bytes, time and mode.
	in := readTree(t, input)
	for f, content := range want {
		fi, err := os.Stat(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != fileMode {
			t.Errorf("%s: mode %v, want %v", f, fi.Mode().Perm(), fileMode)
		}
		if in[f] == content && !fi.ModTime().Equal(oldTime) {
			t.Errorf("%s did not change but was written (mtime %v)", f, fi.ModTime())
		}
	}

	// Idempotence: a second run over the result changes nothing.
	again, err := Apply(ctx, opts)
	if err != nil {
		t.Fatalf("second Apply: %v", err)
	}
	if len(again.Changes) != 0 || len(again.FilesChanged) != 0 {
		t.Errorf("second run changed %v in %v", again.Changes, again.FilesChanged)
	}
	if diff := cmp.Diff(problemLines(again.Problems), gotProblems); diff != "" {
		t.Errorf("second run problems differ (-second +first):\n%s", diff)
	}
	if diff := cmp.Diff(readTree(t, dir), want); diff != "" {
		t.Errorf("second run changed the tree (-got +want):\n%s", diff)
	}
}

// comparable returns r with its problems as text, for cmp.
func comparable(r *Result) any {
	c := *r
	c.Problems = nil
	return struct {
		Result
		Problems []string
	}{c, problemLines(r.Problems)}
}

func problemLines(ps []Problem) []string {
	var lines []string
	for _, p := range ps {
		lines = append(lines, p.Error())
	}
	return lines
}

func changeLines(cs []Change) []string {
	var lines []string
	for _, c := range cs {
		ref := c.Policy
		if c.Field != FieldImage {
			ref += ":" + string(c.Field)
		}
		lines = append(lines, fmt.Sprintf("%s:%d: %s %q -> %q", c.File, c.Line, ref, c.Old, c.New))
	}
	return lines
}

// checkProblems matches problems against "file:line: fragment" lines: the
// location must be equal and the message must contain the fragment.
func checkProblems(t *testing.T, got, want []string) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("got %d problems, want %d:\ngot:\n%s\nwant:\n%s", len(got), len(want), strings.Join(got, "\n"), strings.Join(want, "\n"))
		return
	}
	for i := range got {
		loc, frag, _ := strings.Cut(want[i], ": ")
		if !strings.HasPrefix(got[i], loc+": ") || !strings.Contains(got[i][len(loc)+2:], frag) {
			t.Errorf("problem %d is %q, want %q", i, got[i], want[i])
		}
	}
}

// readTree reads the regular files under dir, skipping .git folders and
// symlinks (the hooks check those).
func readTree(t *testing.T, dir string) map[string]string {
	t.Helper()
	files := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == ".git" {
			return fs.SkipDir
		}
		if !d.Type().IsRegular() {
			return nil
		}
		rel, _ := filepath.Rel(dir, p)
		files[filepath.ToSlash(rel)] = readTestFile(t, p)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// copyTree copies the regular files of src to dst, with fileMode and
// oldTime.
func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	for rel, content := range readTree(t, src) {
		p := filepath.Join(dst, filepath.FromSlash(rel))
		writeFile(t, p, content)
		if err := os.Chtimes(p, oldTime, oldTime); err != nil {
			t.Fatal(err)
		}
	}
}

// writeFiles writes each file of files (by slash path) under dir.
func writeFiles(t testing.TB, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		writeFile(t, filepath.Join(dir, filepath.FromSlash(name)), content)
	}
}

func writeFile(t testing.TB, p, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), fileMode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, fileMode); err != nil {
		t.Fatal(err)
	}
}

func readTestFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func symlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

func readLines(t *testing.T, p string) []string {
	t.Helper()
	b, err := os.ReadFile(p)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, l := range strings.Split(string(b), "\n") {
		if l != "" {
			lines = append(lines, l)
		}
	}
	return lines
}

func writeLines(t *testing.T, p string, lines []string) {
	t.Helper()
	if len(lines) == 0 {
		if err := os.Remove(p); err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		return
	}
	if err := os.WriteFile(p, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}
