package setters

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// trustClock makes the racy rule trust every stat key for the rest of the
// test: the clock the rule reads is an hour ahead.
func trustClock(t *testing.T) {
	t.Helper()
	racyNow = func() time.Time { return time.Now().Add(time.Hour) }
	t.Cleanup(func() { racyNow = time.Now })
}

// normal is a Result without what differs between an indexed and a full
// Apply (how many files were read), for cmp.
func normal(r *Result) any {
	c := *r
	c.Problems = nil
	c.FilesRead, c.FilesCached = 0, 0
	return struct {
		Result
		Problems []string
	}{c, problemLines(r.Problems)}
}

// TestIndexGolden runs every golden case through an index of each kind,
// cold (the index is empty) and warm (loaded from its file, trusted), and
// checks that each run reports what a full Apply does, and writes the
// same bytes.
func TestIndexGolden(t *testing.T) {
	trustClock(t)
	entries, err := os.ReadDir(goldenDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		for _, kind := range []IndexKind{ByStat, ByBlob} {
			t.Run(e.Name()+"/"+kind.String(), func(t *testing.T) { indexGolden(t, e.Name(), kind) })
		}
	}
}

func indexGolden(t *testing.T, name string, kind IndexKind) {
	input := filepath.Join(goldenDir, name, "input")
	full := filepath.Join(t.TempDir(), "full")
	indexed := filepath.Join(t.TempDir(), "indexed")
	copyTree(t, input, full)
	copyTree(t, input, indexed)
	if hook := goldenHooks[name]; hook.before != nil {
		hook.before(t, full)
		hook.before(t, indexed)
	}
	ctx := context.Background()
	file := filepath.Join(t.TempDir(), "index")
	opts := Options{Images: goldenImages, Known: goldenKnown}
	step := func(what string, write bool) *Result {
		t.Helper()
		opts.Write = write
		fo := opts
		fo.Root = full
		want, err := Apply(ctx, fo)
		if err != nil {
			t.Fatalf("%s: full Apply: %v", what, err)
		}
		io := opts
		io.Root = indexed
		ix, _ := LoadIndex(file, kind, io)
		io.Index = ix
		got, err := Apply(ctx, io)
		if err != nil {
			t.Fatalf("%s: indexed Apply: %v", what, err)
		}
		if err := ix.Save(file); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(normal(got), normal(want)); diff != "" {
			t.Errorf("%s: the indexed Apply differs from the full one (-indexed +full):\n%s", what, diff)
		}
		if diff := cmp.Diff(readTree(t, indexed), readTree(t, full)); diff != "" {
			t.Errorf("%s: the trees differ (-indexed +full):\n%s", what, diff)
		}
		if got.FilesRead+got.FilesCached != got.FilesScanned {
			t.Errorf("%s: read %d + cached %d != scanned %d", what, got.FilesRead, got.FilesCached, got.FilesScanned)
		}
		return got
	}
	cold := step("cold dry run", false)
	if cold.FilesRead != cold.FilesScanned {
		t.Errorf("a cold index read %d of %d files", cold.FilesRead, cold.FilesScanned)
	}
	warm := step("warm dry run", false)
	// Warm, only files whose markers move are read.
	if want := len(warm.FilesChanged) + countProblem(warm, func(err error) bool { return !isStatic(err) }); warm.FilesRead > want {
		t.Errorf("a warm dry run read %d files, want at most %d (the files that change or fail to)", warm.FilesRead, want)
	}
	step("write", true)
	again := step("again", true)
	if len(again.FilesChanged) != 0 {
		t.Errorf("a second write changed %v", again.FilesChanged)
	}
}

// countProblem counts the distinct files with a problem that matches.
func countProblem(r *Result, match func(error) bool) int {
	files := map[string]bool{}
	for _, p := range r.Problems {
		if match(p.Err) {
			files[p.File] = true
		}
	}
	return len(files)
}

// isStatic reports whether a problem is one the index serves without
// reading the file.
func isStatic(err error) bool {
	var up *UnknownPolicyError
	var se *SyntaxError
	var me *MarkerError
	var tl *TooLargeError
	return errors.As(err, &up) || errors.As(err, &se) || errors.As(err, &me) || errors.As(err, &tl) ||
		errors.Is(err, errNoScalar) || errors.Is(err, errFlow) || errors.Is(err, errInFlow) ||
		strings.Contains(err.Error(), "resolved no digest") || strings.Contains(err.Error(), "aliases are left alone")
}

// TestIndexRandomHistories is the property that makes the index safe to
// use: over random histories of a tree (files added, edited, moved,
// deleted; picks that move; dry runs and writes), an Apply with an index
// kept between runs reports exactly what a full Apply does, and writes the
// same bytes. The tree's files are the golden inputs, so every kind of
// marker and problem appears.
func TestIndexRandomHistories(t *testing.T) {
	trustClock(t)
	pool := goldenPool(t)
	for _, kind := range []IndexKind{ByStat, ByBlob} {
		viewed := 0
		for seed := range uint64(6) {
			for _, paths := range [][]string{nil, {"a", "b/c.yaml", "missing"}} {
				t.Run(fmt.Sprintf("%s/seed=%d/paths=%d", kind, seed, len(paths)), func(t *testing.T) {
					viewed += randomHistory(t, kind, seed, paths, pool)
				})
			}
		}
		// The steady view served whole rounds, so the comparisons above
		// cover it, not only the file by file path. A ByStat index is
		// made anew by each Scan, and never keeps a view.
		if kind == ByBlob && viewed == 0 {
			t.Errorf("%s: no round was served from the steady view", kind)
		}
	}
}

// goldenPool returns the contents of the golden inputs, and a few more.
func goldenPool(t *testing.T) []string {
	t.Helper()
	var pool []string
	seen := map[string]bool{}
	inputs, err := filepath.Glob(filepath.Join(goldenDir, "*", "input"))
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range inputs {
		for _, c := range readTree(t, in) {
			if !seen[c] {
				seen[c] = true
				pool = append(pool, c)
			}
		}
	}
	slices.Sort(pool)
	return append(pool,
		"plain: text\n",
		"image: ghcr.io/acme/app:1.4.2 # {\"$imagepolicy\": \"apps:app\"}\n",
		"tag: \"1.4.2\" # {\"$imagepolicy\": \"apps:app:tag\"}\ndigest: sha256:00 # {\"$imagepolicy\": \"apps:app:digest\"}\n",
		"image: ghcr.io/acme/app:1.4.2 # {\"$imagepolicy\": \"apps:unknown\"}\n",
		"broken: [\nimage: x # {\"$imagepolicy\": \"apps:app\"}\n",
	)
}

var historyNames = []string{"a/one.yaml", "a/two.yml", "a/sub/Kustomization", "b/c.yaml", "b/d.yaml", "c/e.yaml", "c/f.txt", "top.yaml", "a/three.yaml.bak"}

// randomHistory returns how many rounds the index's steady view served.
func randomHistory(t *testing.T, kind IndexKind, seed uint64, paths []string, pool []string) (viewed int) {
	rng := rand.New(rand.NewPCG(seed, uint64(kind)))
	full := filepath.Join(t.TempDir(), "full")
	indexed := filepath.Join(t.TempDir(), "indexed")
	file := filepath.Join(t.TempDir(), "index")
	ctx := context.Background()
	tags := []string{"1.4.2", "1.5.0", "1.10", "v2.3.1", "on"}
	images := maps.Clone(goldenImages)
	tree := map[string]string{}
	// setFile writes one file in both trees, through a rename, as editors
	// and git do (a new inode: the stat key changes whatever the size).
	setFile := func(rel, content string) {
		for _, root := range []string{full, indexed} {
			p := filepath.Join(root, filepath.FromSlash(rel))
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p+".tmp", []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(p+".tmp", p); err != nil {
				t.Fatal(err)
			}
		}
		tree[rel] = content
	}
	removeFile := func(rel string) {
		for _, root := range []string{full, indexed} {
			if err := os.Remove(filepath.Join(root, filepath.FromSlash(rel))); err != nil {
				t.Fatal(err)
			}
		}
		delete(tree, rel)
	}
	for _, n := range historyNames {
		if rng.IntN(2) == 0 {
			setFile(n, pool[rng.IntN(len(pool))])
		}
	}
	// committed is what the index of a ByBlob working copy was last told.
	committed := map[string]string{}
	head := 0
	var ix *Index
	var read, cached int
	defer func() {
		t.Logf("files read %d, served from the index %d", read, cached)
		if cached == 0 {
			t.Error("no file was ever served from the index")
		}
	}()
	for round := range 25 {
		// Some rounds change nothing: a steady cycle.
		quiet := round > 0 && rng.IntN(3) == 0
		// Random edits to the tree.
		edits := rng.IntN(4)
		if quiet {
			edits = 0
		}
		for range edits {
			n := historyNames[rng.IntN(len(historyNames))]
			_, exists := tree[n]
			switch op := rng.IntN(5); {
			case op == 0 && exists:
				removeFile(n)
			case op == 1 && exists:
				to := historyNames[rng.IntN(len(historyNames))]
				if _, taken := tree[to]; !taken {
					c := tree[n]
					removeFile(n)
					setFile(to, c)
				}
			case op == 2 && exists:
				// A bump someone else made, in place of the value.
				setFile(n, strings.Replace(tree[n], "1.4.2", tags[rng.IntN(len(tags))], 1))
			default:
				setFile(n, pool[rng.IntN(len(pool))])
			}
		}
		// Random tag pushes, and a policy that sometimes fails.
		for p := range images {
			if !quiet && rng.IntN(3) == 0 {
				im := goldenImages[p]
				im.Tag = tags[rng.IntN(len(tags))]
				images[p] = im
			}
		}
		switch {
		case quiet:
		case rng.IntN(4) == 0:
			delete(images, "apps:web")
		default:
			images["apps:web"] = goldenImages["apps:web"]
		}
		write := rng.IntN(2) == 0
		opts := Options{Paths: paths, Images: images, Known: goldenKnown, Write: write}

		fo := opts
		fo.Root = full
		want, err := Apply(ctx, fo)
		if err != nil {
			t.Fatalf("round %d: full Apply: %v", round, err)
		}
		io := opts
		io.Root = indexed
		if ix == nil || rng.IntN(3) == 0 {
			// From the file: a new process.
			ix, _ = LoadIndex(file, kind, io)
		}
		if kind == ByBlob {
			head++
			ix.Update(fmt.Sprint(head), diffTrees(committed, tree), paths)
		}
		io.Index = ix
		got, err := Apply(ctx, io)
		if err != nil {
			t.Fatalf("round %d: indexed Apply: %v", round, err)
		}
		if diff := cmp.Diff(normal(got), normal(want)); diff != "" {
			t.Fatalf("round %d (write %v): the indexed Apply differs from the full one (-indexed +full):\n%s", round, write, diff)
		}
		if err := ix.Save(file); err != nil {
			t.Fatal(err)
		}
		read += got.FilesRead
		cached += got.FilesCached
		if ix.steady != nil && len(got.Markers) > 0 && &got.Markers[0] == &ix.steady.markers[0] {
			viewed++
		}
		for _, f := range want.FilesChanged {
			if write {
				b, err := os.ReadFile(filepath.Join(full, filepath.FromSlash(f)))
				if err != nil {
					t.Fatal(err)
				}
				tree[f] = string(b)
			}
		}
		if diff := cmp.Diff(readTree(t, indexed), readTree(t, full)); diff != "" {
			t.Fatalf("round %d: the trees differ (-indexed +full):\n%s", round, diff)
		}
		committed = maps.Clone(tree)
	}
	return viewed
}

// diffTrees lists the files that differ between two trees, as a Git tree
// diff would.
func diffTrees(old, new map[string]string) []FileChange {
	var out []FileChange
	for p, c := range new {
		o, ok := old[p]
		switch {
		case !ok:
			out = append(out, FileChange{Path: p, New: BlobHash([]byte(c))})
		case o != c:
			out = append(out, FileChange{Path: p, Old: BlobHash([]byte(o)), New: BlobHash([]byte(c))})
		}
	}
	for p, c := range old {
		if _, ok := new[p]; !ok {
			out = append(out, FileChange{Path: p, Old: BlobHash([]byte(c))})
		}
	}
	return out
}

// TestIndexRacy checks Git's racy rule: a file whose times fall within
// racyWindow of the scan that read it is read again, however its stat
// data look; once the window has passed, it is served from the index.
func TestIndexRacy(t *testing.T) {
	dir, now := racyTree(t)
	opts := Options{Root: dir, Images: goldenImages, Known: goldenKnown}
	ctx := context.Background()

	ix := NewIndex(ByStat, opts)
	opts.Index = ix
	for _, tt := range []struct {
		name     string
		clock    time.Time
		wantRead int
	}{
		{"cold", now, 2},
		{"just written: racy", now, 2},
		{"within the window", now.Add(racyWindow / 2), 2},
		// Read once more, as the last scan found them racy, and no more.
		{"after the window", now.Add(racyWindow + time.Second), 2},
		{"trusted", now.Add(racyWindow + 2*time.Second), 0},
	} {
		racyNow = func() time.Time { return tt.clock }
		if err := ix.Scan(ctx, opts); err != nil {
			t.Fatal(err)
		}
		opts.Images = map[string]Image{"apps:app": goldenImages["apps:app"]}
		// The pick equals nothing in a.yaml, so reading it would be for
		// the edit; a dry run with the file's own value reads nothing.
		opts.Images["apps:app"] = Image{Repository: "ghcr.io/acme/app", Tag: "1.4.2"}
		res, err := Apply(ctx, opts)
		if err != nil {
			t.Fatal(err)
		}
		if res.FilesRead != tt.wantRead {
			t.Errorf("%s: read %d files, want %d", tt.name, res.FilesRead, tt.wantRead)
		}
	}
	// A change that keeps the size is seen by its stat data.
	racyNow = func() time.Time { return now.Add(time.Hour) }
	writeFile(t, filepath.Join(dir, "b.yaml"), "plain: y\n")
	res := scanApply(t, ix, opts)
	if res.FilesRead != 1 {
		t.Errorf("after an edit of one file, read %d files, want 1", res.FilesRead)
	}
}

// racyTree writes a marked a.yaml and a plain b.yaml into a new folder,
// and stops the clock the racy rule reads at now, for the test.
func racyTree(t *testing.T) (dir string, now time.Time) {
	t.Helper()
	dir = t.TempDir()
	writeFile(t, filepath.Join(dir, "a.yaml"), markedOutside)
	writeFile(t, filepath.Join(dir, "b.yaml"), "plain: x\n")
	now = time.Now()
	racyNow = func() time.Time { return now }
	t.Cleanup(func() { racyNow = time.Now })
	return dir, now
}

// TestIndexRacySaved: a ByStat entry found racy stays racy through Save
// and LoadIndex, so the next run reads the file again however its stat
// data look. The bug it guards against: a file edited within the
// timestamp granularity of the scan that read it, its change missed for
// good once the index was saved and loaded (the next cycle, or plan then
// apply).
func TestIndexRacySaved(t *testing.T) {
	dir, now := racyTree(t)
	opts := Options{Root: dir, Images: map[string]Image{"apps:app": {Repository: "ghcr.io/acme/app", Tag: "1.4.2"}}}
	ctx := context.Background()
	ix := NewIndex(ByStat, opts)
	opts.Index = ix
	if err := ix.Scan(ctx, opts); err != nil {
		t.Fatal(err)
	}
	if _, err := Apply(ctx, opts); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "index")
	if err := ix.Save(file); err != nil {
		t.Fatal(err)
	}
	// Long after: the files' times alone would be trusted now.
	racyNow = func() time.Time { return now.Add(time.Hour) }
	for _, tt := range []struct {
		name     string
		wantRead int
	}{
		{"loaded: the racy files are read again", 2},
		{"loaded again: trusted", 0},
	} {
		loaded, reason := LoadIndex(file, ByStat, opts)
		if reason != "" || loaded.Files() != 2 {
			t.Fatalf("%s: LoadIndex = %d files, reason %q; want the 2 saved", tt.name, loaded.Files(), reason)
		}
		opts.Index = loaded
		res := scanApply(t, loaded, opts)
		if res.FilesRead != tt.wantRead {
			t.Errorf("%s: read %d files, want %d", tt.name, res.FilesRead, tt.wantRead)
		}
		if err := loaded.Save(file); err != nil {
			t.Fatal(err)
		}
	}
}

// TestIsRacy: a file is racy when its modification time or its change
// time falls within racyWindow of the scan. The bug it guards against: a
// file whose content changed with its modification time set back (tar -x,
// cp -p, git checkout of an old mtime) kept its stat key but for the
// change time, and was served from the index with its old markers.
func TestIsRacy(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	old := now.Add(-time.Hour).UnixNano()
	fresh := now.Add(-racyWindow / 2).UnixNano()
	edge := now.Add(-racyWindow).UnixNano()
	for _, tt := range []struct {
		name         string
		mtime, ctime int64
		want         bool
	}{
		{"both old", old, old, false},
		{"mtime fresh", fresh, old, true},
		{"ctime fresh, mtime old", old, fresh, true},
		{"both fresh", fresh, fresh, true},
		{"mtime at the window's edge", edge, old, true},
		{"ctime at the window's edge", old, edge, true},
		{"both just before the window", edge - 1, edge - 1, false},
		{"ctime in the future", old, now.Add(time.Minute).UnixNano(), true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := isRacy(statKey{mtime: tt.mtime, ctime: tt.ctime}, now); got != tt.want {
				t.Errorf("isRacy(mtime %v, ctime %v) = %v, want %v", time.Unix(0, tt.mtime).Sub(now), time.Unix(0, tt.ctime).Sub(now), got, tt.want)
			}
		})
	}
}

// TestIndexStale checks that a ByBlob index refuses to edit a worktree
// file that is not the blob it was told of, and reports it.
func TestIndexStale(t *testing.T) {
	trustClock(t)
	dir := t.TempDir()
	orig := "image: ghcr.io/acme/app:1.4.2 # {\"$imagepolicy\": \"apps:app\"}\n"
	writeFile(t, filepath.Join(dir, "a.yaml"), orig)
	ctx := context.Background()
	opts := Options{Root: dir, Images: map[string]Image{"apps:app": {Repository: "ghcr.io/acme/app", Tag: "1.4.2"}}, Write: true}
	ix := NewIndex(ByBlob, opts)
	opts.Index = ix
	if _, err := Apply(ctx, opts); err != nil {
		t.Fatal(err)
	}
	// Someone edits the working copy; the commit did not change.
	tampered := strings.Replace(orig, "1.4.2", "6.6.6", 1)
	writeFile(t, filepath.Join(dir, "a.yaml"), tampered)
	ix = ix.Clone()
	opts.Index = ix
	opts.Images["apps:app"] = Image{Repository: "ghcr.io/acme/app", Tag: "1.5.0"}
	res := scanApply(t, ix, opts)
	if diff := cmp.Diff(res.Stale, []string{"a.yaml"}); diff != "" {
		t.Errorf("Stale (-got +want):\n%s", diff)
	}
	if len(res.Problems) != 1 || !errors.Is(res.Problems[0].Err, ErrStale) {
		t.Errorf("problems = %v, want one ErrStale", res.Problems)
	}
	if got := readTestFile(t, filepath.Join(dir, "a.yaml")); got != tampered {
		t.Errorf("the stale file was rewritten: %q", got)
	}
}

// savedIndex returns the ByStat index of a 50-file tree, filled by an
// Apply with opts, and the file in a new folder it was saved to.
func savedIndex(t *testing.T) (*Index, Options, string) {
	t.Helper()
	trustClock(t)
	dir := t.TempDir()
	genTree(t, dir, 50, 5)
	opts := Options{Root: dir, Images: testImages}
	ix := NewIndex(ByStat, opts)
	opts.Index = ix
	if _, err := Apply(context.Background(), opts); err != nil {
		t.Fatal(err)
	}
	opts.Index = nil
	file := filepath.Join(t.TempDir(), "sub", "index")
	if err := ix.Save(file); err != nil {
		t.Fatal(err)
	}
	return ix, opts, file
}

// TestLoadIndex checks that an index file that cannot serve is replaced by
// an empty index, with the reason.
func TestLoadIndex(t *testing.T) {
	ix, opts, file := savedIndex(t)
	good, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name   string
		data   []byte
		kind   IndexKind
		paths  []string
		reason string
	}{
		{name: "good", data: good, kind: ByStat},
		{name: "missing", kind: ByStat, reason: "no marker index yet"},
		{name: "other kind", data: good, kind: ByBlob, reason: "another kind"},
		{name: "other paths", data: good, kind: ByStat, paths: []string{"team01"}, reason: "other paths"},
		{name: "truncated", data: good[:len(good)/2], kind: ByStat, reason: "damaged"},
		{name: "flipped byte", data: flip(good, len(good)/3), kind: ByStat, reason: "checksum"},
		{name: "not an index", data: []byte("hello"), kind: ByStat, reason: "not a marker index"},
		{name: "other build", data: reseal(strings.Replace(string(good[:len(good)-32]), buildID(), "format 0 other", 1)), kind: ByStat, reason: "another build"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if tt.data != nil {
				if err := os.WriteFile(file, tt.data, 0o644); err != nil {
					t.Fatal(err)
				}
			} else {
				os.Remove(file)
			}
			o := opts
			o.Paths = tt.paths
			got, reason := LoadIndex(file, tt.kind, o)
			if tt.reason == "" {
				if reason != "" || got.Files() != ix.Files() || !got.Built() {
					t.Errorf("LoadIndex = %d files, built %v, reason %q; want %d files", got.Files(), got.Built(), reason, ix.Files())
				}
				return
			}
			if !strings.Contains(reason, tt.reason) || got.Files() != 0 || got.Built() {
				t.Errorf("LoadIndex = %d files, built %v, reason %q; want an empty index and a reason with %q", got.Files(), got.Built(), reason, tt.reason)
			}
		})
	}
}

// TestReloadIndex: ReloadIndex copies the index the caller kept while the
// file at the path is the one it was loaded from or saved to, and reads
// the file otherwise.
func TestReloadIndex(t *testing.T) {
	ix, opts, file := savedIndex(t)
	saved := loadIndexFile
	t.Cleanup(func() { loadIndexFile = saved })
	reads := 0
	loadIndexFile = func(p string) ([]byte, statKey, error) {
		reads++
		return saved(p)
	}
	reload := func(name string, prev *Index, o Options, wantReads int, wantReason string) *Index {
		t.Helper()
		reads = 0
		got, reason := ReloadIndex(prev, file, ByStat, o)
		if reads != wantReads || !strings.Contains(reason, wantReason) || (wantReason == "") != (reason == "") {
			t.Errorf("%s: read the file %d times, reason %q; want %d, %q", name, reads, reason, wantReads, wantReason)
		}
		if got == prev {
			t.Errorf("%s: got the kept index itself, want a copy", name)
		}
		return got
	}

	got := reload("just saved", ix, opts, 0, "")
	if got.Files() != ix.Files() || !got.Built() {
		t.Errorf("the copy has %d files, built %v; want %d, built", got.Files(), got.Built(), ix.Files())
	}
	got.Reset()
	if ix.Files() == 0 || !ix.Built() {
		t.Error("resetting the copy emptied the kept index")
	}
	loaded, _ := LoadIndex(file, ByStat, opts)
	reload("just loaded", loaded, opts, 0, "")
	reload("nothing kept", nil, opts, 1, "")
	changed := ix.Clone()
	changed.dirty = true
	reload("changed since saved", changed, opts, 1, "")
	other := opts
	other.Paths = []string{"team01"}
	reload("other paths", ix, other, 1, "other paths")

	// The same index saved again: the same bytes and size, another file.
	before := ix.Clone()
	ix.dirty = true
	if err := ix.Save(file); err != nil {
		t.Fatal(err)
	}
	reload("saved again", before, opts, 1, "")
	reload("as saved again", ix, opts, 0, "")
	// Another index saved over the file: its content, not the kept one.
	if err := NewIndex(ByStat, opts).Save(file); err != nil {
		t.Fatal(err)
	}
	if got := reload("replaced", ix, opts, 1, ""); got.Built() {
		t.Error("after the file was replaced, got the kept index")
	}
	os.Remove(file)
	reload("removed", ix, opts, 1, "no marker index yet")
}

func flip(b []byte, i int) []byte {
	c := slices.Clone(b)
	c[i] ^= 0xff
	return c
}

// reseal appends a valid checksum to body.
func reseal(body string) []byte {
	sum := sha256.Sum256([]byte(body))
	return append([]byte(body), sum[:]...)
}

// TestIndexSymlinkUnsupported checks that a ByBlob index, which cannot
// follow symbolic links through a tree diff, scans every file while one
// is in scope, and serves files again once it is gone.
func TestIndexSymlinkUnsupported(t *testing.T) {
	trustClock(t)
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "a.yaml"), markedOutside)
	writeFile(t, filepath.Join(dir, "b.yaml"), "plain: x\n")
	symlink(t, "a.yaml", filepath.Join(dir, "link.yaml"))
	opts := Options{Root: dir, Images: map[string]Image{"apps:app": {Repository: "ghcr.io/acme/app", Tag: "1.4.2"}}}
	ix := NewIndex(ByBlob, opts)
	opts.Index = ix
	for i := range 2 {
		res := scanApply(t, ix, opts)
		if ix.Built() || res.FilesRead != 2 {
			t.Errorf("run %d with a symlink: built %v, read %d files; want a full scan of 2", i, ix.Built(), res.FilesRead)
		}
	}
	if err := os.Remove(filepath.Join(dir, "link.yaml")); err != nil {
		t.Fatal(err)
	}
	ix.Update("h2", []FileChange{{Path: "link.yaml", Old: "x", Symlink: true}}, nil)
	for i := range 2 {
		res := scanApply(t, ix, opts)
		want := 2
		if i > 0 {
			want = 0
		}
		if !ix.Built() || res.FilesRead != want {
			t.Errorf("run %d without the symlink: built %v, read %d files; want %d", i, ix.Built(), res.FilesRead, want)
		}
	}
}

// TestIndexUpdateOutsidePaths: a ByBlob index made for Paths ["app"] is
// told of a change to apps/b.yaml, a sibling whose name merely starts with
// "app": the file is outside the paths, and Scan and Apply leave it out,
// as a full Apply does. The bug it guards against: markers under apps/
// reported and edited by a run limited to app/.
func TestIndexUpdateOutsidePaths(t *testing.T) {
	trustClock(t)
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "app", "a.yaml"), markedOutside)
	const plain = "plain: x\n"
	writeFile(t, filepath.Join(dir, "apps", "b.yaml"), plain)
	ctx := context.Background()
	opts := Options{Root: dir, Paths: []string{"app"}, Images: map[string]Image{"apps:app": {Repository: "ghcr.io/acme/app", Tag: "1.5.0"}}}
	ix := NewIndex(ByBlob, opts)
	io := opts
	io.Index = ix
	if err := ix.Scan(ctx, io); err != nil {
		t.Fatal(err)
	}
	if _, err := Apply(ctx, io); err != nil {
		t.Fatal(err)
	}
	// A commit adds a marker to apps/b.yaml.
	writeFile(t, filepath.Join(dir, "apps", "b.yaml"), markedOutside)
	ix.Update("h2", []FileChange{{Path: "apps/b.yaml", Old: BlobHash([]byte(plain)), New: BlobHash([]byte(markedOutside))}}, opts.Paths)
	if err := ix.Scan(ctx, io); err != nil {
		t.Fatal(err)
	}
	got, _ := appliedAsFull(t, "a commit outside the paths", io, opts)
	for _, m := range got.Markers {
		if !strings.HasPrefix(m.File, "app/") {
			t.Errorf("marker in %s reported by a run limited to app", m.File)
		}
	}
	if slices.Contains(got.FilesChanged, "apps/b.yaml") {
		t.Errorf("apps/b.yaml would be edited by a run limited to app: changed %v", got.FilesChanged)
	}
}

// TestIndexPathsChanged: one ByBlob index kept in memory, scanned for
// Paths ["a"] then for Paths ["b"], starts over for the new paths and
// finds b's markers, as a full Apply does. The bug it guards against: a
// run whose paths changed (config edited, another target) served the old
// paths' markers and never saw the new ones.
func TestIndexPathsChanged(t *testing.T) {
	trustClock(t)
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "a", "x.yaml"), markedOutside)
	writeFile(t, filepath.Join(dir, "b", "y.yaml"), strings.Replace(markedOutside, "image:", "other:", 1))
	ctx := context.Background()
	opts := Options{Root: dir, Images: map[string]Image{"apps:app": {Repository: "ghcr.io/acme/app", Tag: "1.5.0"}}}
	ix := NewIndex(ByBlob, opts)
	for _, paths := range [][]string{{"a"}, {"b"}, {"a", "b"}} {
		opts.Paths = paths
		io := opts
		io.Index = ix
		if err := ix.Scan(ctx, io); err != nil {
			t.Fatal(err)
		}
		_, want := appliedAsFull(t, fmt.Sprintf("paths %q", paths), io, opts)
		if len(want.Markers) != len(paths) {
			t.Fatalf("paths %q: the full Apply found %d markers, want %d: the test checks nothing", paths, len(want.Markers), len(paths))
		}
	}
}

// appliedAsFull runs Apply with indexed (which has an Index) and with
// full, and fails the test, saying what, when their results differ.
func appliedAsFull(t *testing.T, what string, indexed, full Options) (got, want *Result) {
	t.Helper()
	got, err := Apply(context.Background(), indexed)
	if err != nil {
		t.Fatalf("%s: indexed Apply: %v", what, err)
	}
	want, err = Apply(context.Background(), full)
	if err != nil {
		t.Fatalf("%s: full Apply: %v", what, err)
	}
	if diff := cmp.Diff(normal(got), normal(want)); diff != "" {
		t.Errorf("%s: the indexed Apply differs from the full one (-indexed +full):\n%s", what, diff)
	}
	return got, want
}

// TestIndexUnreadableReadAgain: a ByBlob index reads only what later
// commits change, so a file its full scan could not read must not be
// forgotten: the index stays unbuilt and the next scan reads every file,
// the one now readable included.
func TestIndexUnreadableReadAgain(t *testing.T) {
	trustClock(t)
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "a.yaml"), markedOutside)
	odd := filepath.Join(dir, "b.yaml")
	writeFile(t, odd, markedOutside)
	// As root, no permission makes a file unreadable: the read fails.
	scanReadFile = func(path string, buf *bytes.Buffer, limit int64, key *statKey) error {
		if path == odd {
			return fs.ErrPermission
		}
		return readFileKey(path, buf, limit, key)
	}
	t.Cleanup(func() { scanReadFile = readFileKey })
	opts := Options{Root: dir, Write: true, Images: map[string]Image{"apps:app": {Repository: "ghcr.io/acme/app", Tag: "1.5.0"}}}
	ix := NewIndex(ByBlob, opts)
	opts.Index = ix
	res := scanApply(t, ix, opts)
	if len(res.Problems) == 0 {
		t.Fatalf("b.yaml could not be read: no problem reported")
	}
	if ix.Built() {
		t.Fatalf("the index counts itself built though b.yaml could not be read")
	}
	// b.yaml becomes readable; no commit reports it.
	scanReadFile = readFileKey
	res = scanApply(t, ix, opts)
	if !slices.Contains(res.FilesChanged, "b.yaml") {
		t.Errorf("b.yaml, readable now, was not edited: changed %v, problems %v", res.FilesChanged, problemLines(res.Problems))
	}
	if !ix.Built() {
		t.Errorf("a full scan that read every file left the index unbuilt")
	}
}

// TestPruneIndexes: index files unused for the age go, with the temporary
// files of killed saves; a used index is kept, even one Save found
// unchanged (Save refreshes its time).
func TestPruneIndexes(t *testing.T) {
	dir := t.TempDir()
	old := time.Now().Add(-40 * 24 * time.Hour)
	for name, age := range map[string]time.Time{
		"used": old, "unused": old, "fresh": time.Now(),
		"fresh.tmp-1": time.Now(), "old.tmp-2": time.Now().Add(-2 * time.Hour),
	} {
		p := filepath.Join(dir, name)
		writeFile(t, p, "x")
		if err := os.Chtimes(p, age, age); err != nil {
			t.Fatal(err)
		}
	}
	// "used" is an index that a run loads and saves unchanged.
	ix := NewIndex(ByStat, Options{})
	if err := ix.Save(filepath.Join(dir, "used")); err != nil {
		t.Fatal(err)
	}
	ix.dirty = false
	writeFile(t, filepath.Join(dir, "used"), "x")
	if err := os.Chtimes(filepath.Join(dir, "used"), old, old); err != nil {
		t.Fatal(err)
	}
	if err := ix.Save(filepath.Join(dir, "used")); err != nil {
		t.Fatal(err)
	}
	PruneIndexes(dir, 30*24*time.Hour)
	left := dirNames(t, dir)
	if want := []string{"fresh", "fresh.tmp-1", "used"}; !slices.Equal(left, want) {
		t.Errorf("left %v, want %v", left, want)
	}
}

// TestSaveRemovesStaleTemps: a save removes the temporary files that
// killed saves of the same index left, an hour old or more, and leaves a
// younger one (another process's save in progress) and other indexes'.
// A working copy's index, which serve saves, has no PruneIndexes.
func TestSaveRemovesStaleTemps(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "markers")
	for name, age := range map[string]time.Duration{
		"markers.tmp-1": 3 * time.Hour, "markers.tmp-2": time.Minute, "other.tmp-3": 3 * time.Hour,
	} {
		p := filepath.Join(dir, name)
		writeFile(t, p, "x")
		at := time.Now().Add(-age)
		if err := os.Chtimes(p, at, at); err != nil {
			t.Fatal(err)
		}
	}
	if err := NewIndex(ByBlob, Options{}).Save(path); err != nil {
		t.Fatal(err)
	}
	left := dirNames(t, dir)
	if want := []string{"markers", "markers.tmp-2", "other.tmp-3"}; !slices.Equal(left, want) {
		t.Errorf("left %v, want %v", left, want)
	}
}

// TestIndexPaths: the files in path order, kept while they hold and
// sorted again once files come or go, whatever their count.
func TestIndexPaths(t *testing.T) {
	ix := NewIndex(ByBlob, Options{})
	for _, rel := range []string{"b/x.yaml", "a.yaml", "b/a.yaml"} {
		ix.files[rel] = &fileEntry{}
	}
	want := []string{"a.yaml", "b/a.yaml", "b/x.yaml"}
	first := ix.paths()
	if diff := cmp.Diff(want, first); diff != "" {
		t.Fatalf("paths (-want +got):\n%s", diff)
	}
	if again := ix.paths(); &again[0] != &first[0] {
		t.Error("paths sorted again an order that still holds")
	}
	c := ix.Clone()
	for _, tt := range []struct {
		name   string
		change func(*Index)
		want   []string
	}{
		{"one more", func(ix *Index) { ix.set("0.yaml", &fileEntry{}) }, []string{"0.yaml", "a.yaml", "b/a.yaml", "b/x.yaml"}},
		{"one gone", func(ix *Index) { ix.drop("0.yaml") }, want},
		{"one for another", func(ix *Index) { ix.drop("a.yaml"); ix.set("c.yaml", &fileEntry{}) }, []string{"b/a.yaml", "b/x.yaml", "c.yaml"}},
	} {
		tt.change(c)
		if diff := cmp.Diff(tt.want, c.paths()); diff != "" {
			t.Errorf("%s: paths of the copy (-want +got):\n%s", tt.name, diff)
		}
	}
	if diff := cmp.Diff(want, ix.paths()); diff != "" {
		t.Errorf("paths of the original after its copy changed (-want +got):\n%s", diff)
	}
	// An order naming a file twice (a damaged file could) while another
	// is missing is sorted again too.
	ix.set("c.yaml", &fileEntry{})
	ix.order = []string{"a.yaml", "a.yaml", "b/a.yaml", "b/x.yaml"}
	if diff := cmp.Diff([]string{"a.yaml", "b/a.yaml", "b/x.yaml", "c.yaml"}, ix.paths()); diff != "" {
		t.Errorf("paths after an order with a name twice (-want +got):\n%s", diff)
	}
}

// TestCloneCopiesOnChange: a copy shares the entries and the files to
// read with its original until one of the two changes them, and a change
// to either, by any of the ways an index changes, leaves the other as it
// was.
func TestCloneCopiesOnChange(t *testing.T) {
	root := t.TempDir()
	marked := []byte("image: ghcr.io/acme/app:1.0.0 # {\"$imagepolicy\": \"flux-system:app\"}\n")
	if err := os.WriteFile(filepath.Join(root, "c.yaml"), marked, 0o644); err != nil {
		t.Fatal(err)
	}
	kept := func() *Index {
		ix := NewIndex(ByBlob, Options{})
		ix.built = true
		ix.files["a.yaml"] = &fileEntry{token: true}
		ix.files["b.yaml"] = &fileEntry{token: true}
		ix.pending["c.yaml"] = BlobHash(marked)
		return ix
	}
	type state struct {
		Files   []string
		Pending map[string]string
	}
	stateOf := func(ix *Index) state {
		return state{slices.Sorted(maps.Keys(ix.files)), maps.Clone(ix.pending)}
	}
	changes := []struct {
		name   string
		change func(*Index)
	}{
		{"set", func(ix *Index) { ix.set("d.yaml", &fileEntry{token: true}) }},
		{"drop", func(ix *Index) { ix.drop("a.yaml") }},
		{"update", func(ix *Index) {
			ix.Update("h2", []FileChange{{Path: "b.yaml", Old: "b1", New: ""}, {Path: "e.yaml", New: "e1"}}, nil)
		}},
		{"reset", func(ix *Index) { ix.Reset() }},
		{"scan", func(ix *Index) {
			if err := ix.Scan(context.Background(), Options{Root: root}); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, tt := range changes {
		for _, which := range []string{"copy", "original"} {
			t.Run(tt.name+" the "+which, func(t *testing.T) {
				ix := kept()
				c := ix.Clone()
				if reflect.ValueOf(c.files).UnsafePointer() != reflect.ValueOf(ix.files).UnsafePointer() {
					t.Error("the copy copied the entries before a change")
				}
				changed, other := c, ix
				if which == "original" {
					changed, other = ix, c
				}
				before := stateOf(other)
				tt.change(changed)
				if diff := cmp.Diff(before, stateOf(other)); diff != "" {
					t.Errorf("the %s changed too (-before +after):\n%s", map[bool]string{true: "original", false: "copy"}[which == "copy"], diff)
				}
				if cmp.Equal(stateOf(changed), before) {
					t.Errorf("the change did not change the %s", which)
				}
			})
		}
	}
}

// TestScansAll: a built ByBlob index scans by diffs until a path in scope
// is or passes through a symbolic link.
func TestScansAll(t *testing.T) {
	root := t.TempDir()
	writeFile(t, filepath.Join(root, "real", "a", "x.yaml"), "a: 1\n")
	writeFile(t, filepath.Join(root, "plain", "a", "x.yaml"), "a: 1\n")
	if err := os.Symlink("real", filepath.Join(root, "linked")); err != nil {
		t.Fatal(err)
	}
	built := NewIndex(ByBlob, Options{})
	built.built = true
	for _, tt := range []struct {
		name  string
		ix    *Index
		paths []string
		want  bool
	}{
		{"built, whole tree", built, nil, false},
		{"built, a plain path", built, []string{"plain/a"}, false},
		{"built, a path through a link", built, []string{"linked/a"}, true},
		{"built, a link as the path", built, []string{"linked"}, true},
		{"not built", NewIndex(ByBlob, Options{}), []string{"plain/a"}, true},
		{"by stat", NewIndex(ByStat, Options{}), []string{"linked/a"}, false},
	} {
		if got := tt.ix.ScansAll(root, tt.paths); got != tt.want {
			t.Errorf("%s: ScansAll = %v, want %v", tt.name, got, tt.want)
		}
	}
}

// scanApply scans with ix and applies with opts, which uses ix, failing
// the test on an error of either.
func scanApply(t *testing.T, ix *Index, opts Options) *Result {
	t.Helper()
	if err := ix.Scan(context.Background(), opts); err != nil {
		t.Fatal(err)
	}
	res, err := Apply(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// dirNames returns the names in dir, in order.
func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}
