package setters

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// tempFiles lists the temporary files Apply left under dir.
func tempFiles(t *testing.T, dir string) []string {
	t.Helper()
	var left []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if strings.Contains(d.Name(), ".imagebump-") {
			left = append(left, p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return left
}

func TestWriteAtomicModes(t *testing.T) {
	modes := []fs.FileMode{0o600, 0o640, 0o604, 0o666, 0o777}
	if runtime.GOOS != "windows" {
		modes = append(modes, 0o750|fs.ModeSetgid)
	}
	for _, mode := range modes {
		t.Run(mode.String(), func(t *testing.T) {
			dir := t.TempDir()
			p := filepath.Join(dir, "f.yaml")
			writeFile(t, p, "old\n")
			// Chmod, unlike creating the file, ignores the umask.
			if err := os.Chmod(p, mode); err != nil {
				t.Fatal(err)
			}
			var buf bytes.Buffer
			if err := writeAtomic(p, []byte("old\n"), []byte("new\n"), &buf); err != nil {
				t.Fatal(err)
			}
			fi, err := os.Stat(p)
			if err != nil {
				t.Fatal(err)
			}
			if got := fi.Mode() & keptMode; got != mode {
				t.Errorf("mode %v, want %v", got, mode)
			}
			if got := readTestFile(t, p); got != "new\n" {
				t.Errorf("content %q, want %q", got, "new\n")
			}
			if left := tempFiles(t, dir); len(left) > 0 {
				t.Errorf("temporary files left behind: %v", left)
			}
		})
	}
}

// TestApplyCancelledBeforeCommit cancels the run while files are being
// edited: the files already staged must not be renamed, and their temporary
// files must go.
func TestApplyCancelledBeforeCommit(t *testing.T) {
	files := map[string]string{}
	for i := range 40 {
		files[fmt.Sprintf("d%d/f%02d.yaml", i%4, i)] = markedOutside
	}
	dir := writeRepo(t, files)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	calls := 0
	var mu sync.Mutex
	res, err := Apply(ctx, Options{
		Root: dir, Images: testImages, Write: true, Workers: 2,
		Known: func(string) bool {
			mu.Lock()
			defer mu.Unlock()
			// Let a few files be staged first.
			if calls++; calls == 5 {
				cancel()
			}
			return true
		},
		OnEdit: func(file string, _, _ []byte) { t.Errorf("OnEdit called for %s", file) },
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Apply = %v, %v; want context.Canceled", res, err)
	}
	if calls < 5 {
		t.Fatalf("Known called %d times; the run ended before it was cancelled", calls)
	}
	if diff := cmp.Diff(readTree(t, dir), files); diff != "" {
		t.Errorf("the cancelled run changed files (-got +want):\n%s", diff)
	}
	if left := tempFiles(t, dir); len(left) > 0 {
		t.Errorf("temporary files left behind: %v", left)
	}
}

// TestApplyChangedDuringRun changes the file Apply is editing, after it was
// read and before it is renamed: the file keeps the other writer's bytes and
// a problem says why.
func TestApplyChangedDuringRun(t *testing.T) {
	const other = "image: ghcr.io/acme/app:1.0.0 # {\"$imagepolicy\": \"apps:app\"}\n"
	for _, tc := range []struct {
		name   string
		change func(t *testing.T, p string)
		want   string // the file's content after the run; empty for a symlink
		err    string
	}{
		{"content", func(t *testing.T, p string) { writeFile(t, p, other) }, other, "writing file: " + ErrChanged.Error()},
		{"same size", func(t *testing.T, p string) {
			writeFile(t, p, strings.Replace(markedOutside, "1.4.2", "1.4.3", 1))
		}, strings.Replace(markedOutside, "1.4.2", "1.4.3", 1), "writing file: " + ErrChanged.Error()},
		{"symlink", func(t *testing.T, p string) {
			writeFile(t, filepath.Join(filepath.Dir(p), "real.txt"), other)
			if err := os.Remove(p); err != nil {
				t.Fatal(err)
			}
			symlink(t, "real.txt", p)
		}, "", "is no longer a regular file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := writeRepo(t, map[string]string{"app.yaml": markedOutside})
			p := filepath.Join(dir, "app.yaml")
			var once sync.Once
			res, err := Apply(context.Background(), Options{
				Root: dir, Images: testImages, Write: true,
				Known: func(string) bool {
					once.Do(func() { tc.change(t, p) })
					return true
				},
				OnEdit: func(file string, _, _ []byte) { t.Errorf("OnEdit called for %s", file) },
			})
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Problems) != 1 || !strings.Contains(res.Problems[0].Error(), tc.err) {
				t.Errorf("problems %v, want one saying %q", res.Problems, tc.err)
			}
			if len(res.Changes) != 0 || len(res.FilesChanged) != 0 {
				t.Errorf("changes %v in files %v, want none", res.Changes, res.FilesChanged)
			}
			if tc.want != "" {
				if got := readTestFile(t, p); got != tc.want {
					t.Errorf("content %q, want the other writer's %q", got, tc.want)
				}
			} else if fi, err := os.Lstat(p); err != nil || fi.Mode()&fs.ModeSymlink == 0 {
				t.Errorf("app.yaml is no longer the other writer's symlink (%v)", err)
			}
			if left := tempFiles(t, dir); len(left) > 0 {
				t.Errorf("temporary files left behind: %v", left)
			}
		})
	}
}

// TestApplyWritesMany checks that a real run over many folders writes every
// change, reports each once, and leaves no temporary file.
func TestApplyWritesMany(t *testing.T) {
	dir := t.TempDir()
	genTree(t, dir, 200, 3)
	var edited []string
	res, err := Apply(context.Background(), Options{
		Root: dir, Images: testImages, Write: true, Workers: 3,
		Known:  func(p string) bool { return p == "apps:app" },
		OnEdit: func(file string, before, after []byte) { edited = append(edited, file) },
	})
	if err != nil {
		t.Fatal(err)
	}
	// 67 of the 200 files are marked, all with an older tag; apps:web is
	// unknown in each.
	if len(res.FilesChanged) != 67 || len(res.Problems) != 67 {
		t.Fatalf("changed %d files with %d problems; want 67, 67", len(res.FilesChanged), len(res.Problems))
	}
	if diff := cmp.Diff(edited, res.FilesChanged); diff != "" {
		t.Errorf("OnEdit calls differ from FilesChanged (-got +want):\n%s", diff)
	}
	for _, f := range res.FilesChanged {
		if got := readTestFile(t, filepath.Join(dir, filepath.FromSlash(f))); !strings.Contains(got, "ghcr.io/acme/app:1.5.0 #") {
			t.Errorf("%s was not rewritten:\n%s", f, got)
		}
	}
	if left := tempFiles(t, dir); len(left) > 0 {
		t.Errorf("temporary files left behind: %v", left)
	}
}

// TestApplyNoSync: Apply syncs the staged files and the renames once
// each, unless NoSync is set; the files are written either way.
func TestApplyNoSync(t *testing.T) {
	saved := syncs
	t.Cleanup(func() { syncs = saved })
	var nStaged, nRenamed int
	syncs.staged = func(f []*staged) error { nStaged++; return saved.staged(f) }
	syncs.renamed = func(f []*staged) error { nRenamed++; return saved.renamed(f) }
	for _, noSync := range []bool{false, true} {
		nStaged, nRenamed = 0, 0
		dir := t.TempDir()
		genTree(t, dir, 30, 3)
		res, err := Apply(context.Background(), Options{
			Root: dir, Images: testImages, Write: true, NoSync: noSync,
			Known: func(p string) bool { return p == "apps:app" },
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.FilesChanged) != 10 {
			t.Fatalf("NoSync %v: changed %d files, want 10", noSync, len(res.FilesChanged))
		}
		for _, f := range res.FilesChanged {
			if got := readTestFile(t, filepath.Join(dir, filepath.FromSlash(f))); !strings.Contains(got, "ghcr.io/acme/app:1.5.0 #") {
				t.Errorf("NoSync %v: %s was not rewritten:\n%s", noSync, f, got)
			}
		}
		want := 1
		if noSync {
			want = 0
		}
		if nStaged != want || nRenamed != want {
			t.Errorf("NoSync %v: synced the staged files %d times and the renames %d, want %d each", noSync, nStaged, nRenamed, want)
		}
	}
}

// TestSyncFallbacks runs the per-file and per-folder syncs that replace
// syncfs(2) where it is missing (and are all there is elsewhere), and
// writeTemp's own sync.
func TestSyncFallbacks(t *testing.T) {
	dir := t.TempDir()
	var files []*staged
	for _, name := range []string{"a.yaml", "b.yaml"} {
		p := filepath.Join(dir, name)
		writeFile(t, p, "old\n")
		s, err := stage(p, []byte("old\n"), []byte("new "+name+"\n"), true)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, s)
	}
	if err := syncEach(files); err != nil {
		t.Errorf("syncEach: %v", err)
	}
	var buf bytes.Buffer
	for _, s := range files {
		if err := s.commit(&buf); err != nil {
			t.Fatal(err)
		}
	}
	if err := syncDirs(files); err != nil {
		t.Errorf("syncDirs: %v", err)
	}
	if got := len(fsDirs(files)); got != 1 {
		t.Errorf("fsDirs found %d file systems for one folder, want 1", got)
	}
	tmp, err := writeTemp(dir+string(filepath.Separator), "c.yaml", 0o640, owner{uid: -1, gid: -1, links: 1}, []byte("c\n"), true)
	if err != nil {
		t.Fatal(err)
	}
	if got := readTestFile(t, tmp); got != "c\n" {
		t.Errorf("synced temporary file holds %q, want %q", got, "c\n")
	}
	os.Remove(tmp)
	if err := syncStaged([]*staged{{abs: filepath.Join(dir, "missing", "x.yaml"), tmp: "x"}}); err == nil && !syncEachFile {
		t.Error("syncStaged succeeded for a folder that does not exist")
	}
	for _, name := range []string{"a.yaml", "b.yaml"} {
		if got := readTestFile(t, filepath.Join(dir, name)); got != "new "+name+"\n" {
			t.Errorf("%s holds %q", name, got)
		}
	}
}
