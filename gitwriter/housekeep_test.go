package gitwriter

import (
	"bytes"
	"compress/zlib"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/format/idxfile"
	"github.com/google/go-cmp/cmp"

	"github.com/imagebump/imagebump/internal/testkit/testgit"
)

// withLimits sets the fold thresholds for one test (which must not be
// parallel).
func withLimits(t *testing.T, loose, packs int) {
	t.Helper()
	oldLoose, oldPacks := looseLimit, packLimit
	looseLimit, packLimit = loose, packs
	t.Cleanup(func() { looseLimit, packLimit = oldLoose, oldPacks })
}

// foldWorkdir returns a new remote, a working copy's folder and the
// Options that open it, with no fold due until the test sets packLimit.
func foldWorkdir(t *testing.T) (bare, workdir string, opts Options) {
	t.Helper()
	withLimits(t, 1<<30, 1<<30)
	bare = testgit.NewBare(t, seed)
	workdir = t.TempDir()
	return bare, workdir, Options{URL: fileURL(bare), Branch: "main", Workdir: workdir}
}

// foldNow opens the working copy and closes it with a fold due, and
// returns what it logged.
func foldNow(t *testing.T, opts Options) *logBuffer {
	t.Helper()
	packLimit = 1
	logger, logs := newLogger()
	opts.Logger = logger
	r := mustOpen(t, opts)
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	return logs
}

// objectSet lists every object git finds in the repository at dir, as
// "hash type size", sorted.
func objectSet(t *testing.T, dir string) []string {
	t.Helper()
	lines := strings.Split(testgit.Git(t, dir, "cat-file", "--batch-all-objects", "--batch-check"), "\n")
	slices.Sort(lines)
	return lines
}

// storeShape returns the loose object files and the packs of a working
// copy's store.
func storeShape(t *testing.T, workdir string) (loose []string, packs []string) {
	t.Helper()
	objects := filepath.Join(workdir, ".git", "objects")
	hashes, _, err := listLoose(objects)
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range hashes {
		loose = append(loose, h.String())
	}
	packs, err = filepath.Glob(filepath.Join(objects, "pack", "pack-*.pack"))
	if err != nil {
		t.Fatal(err)
	}
	return loose, packs
}

// grow gives a working copy what months of cycles give it: each round
// fetches a commit made elsewhere (a pack) and commits a bump (loose
// objects).
func grow(t *testing.T, bare string, opts Options, rounds int) {
	t.Helper()
	start := len(testgit.Log(t, bare, "main"))
	for i := start; i < start+rounds; i++ {
		testgit.Commit(t, bare, "main", map[string]string{fmt.Sprintf("other/f%d.yaml", i): fmt.Sprintf("n: %d\n", i)}, nil, "elsewhere")
		r := mustOpen(t, opts)
		edit := setFiles(map[string]string{"clusters/prod/app.yaml": fmt.Sprintf("image: app:1.%d.0\n", i+1)}, "Bump app", nil)
		if res, err := r.Update(t.Context(), Update{Commit: author}, edit); err != nil || !res.Pushed {
			t.Fatalf("round %d: Update = %+v, %v", i, res, err)
		}
		if err := r.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestFoldKeepsEveryObject: a fold moves every loose object and every
// pack of a grown working copy into one pack, which git reads whole and
// finds sound, and the working copy goes on as before. A multi-pack index
// that git's maintenance wrote, naming the packs the fold deletes, goes
// with them (git fsck failed on it).
func TestFoldKeepsEveryObject(t *testing.T) {
	bare, workdir, opts := foldWorkdir(t)
	grow(t, bare, opts, 4)
	before := objectSet(t, workdir)
	loose, packs := storeShape(t, workdir)
	if len(loose) == 0 || len(packs) < 4 {
		t.Fatalf("grown store has %d loose objects and %d packs, want some of each", len(loose), len(packs))
	}
	testgit.Git(t, workdir, "multi-pack-index", "write")

	packLimit = len(packs)
	logger, logs := newLogger()
	opts.Logger = logger
	r := mustOpen(t, opts)
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(logs.String(), "folded the working copy's objects") {
		t.Errorf("no fold logged:\n%s", logs)
	}
	if diff := cmp.Diff(before, objectSet(t, workdir)); diff != "" {
		t.Errorf("objects changed (-before +after):\n%s", diff)
	}
	loose, packs = storeShape(t, workdir)
	if len(loose) != 0 || len(packs) != 1 {
		t.Fatalf("after the fold: %d loose objects and %d packs, want 0 and 1", len(loose), len(packs))
	}
	testgit.Git(t, workdir, "fsck", "--strict", "--no-dangling")
	if left, _ := filepath.Glob(filepath.Join(workdir, ".git", "objects", "pack", "multi-pack-index*")); len(left) > 0 {
		t.Errorf("the multi-pack index is left: %v", left)
	}
	verified := testgit.Git(t, workdir, "verify-pack", "-v", strings.TrimSuffix(packs[0], ".pack")+".idx")
	if strings.Contains(verified, "chain length") {
		t.Errorf("the new pack has deltas:\n%s", verified)
	}
	if got := strings.Count(verified, "\n") - 1; got != len(before) {
		t.Errorf("verify-pack lists %d objects, want %d", got, len(before))
	}
	for _, p := range []string{packs[0], strings.TrimSuffix(packs[0], ".pack") + ".idx"} {
		if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != 0o444 {
			t.Errorf("%s: %v, %v; want mode 0444", p, fi.Mode(), err)
		}
	}

	// The next cycle reuses the working copy and commits on it.
	marker := filepath.Join(workdir, ".git", "test-marker")
	write(t, marker, "x")
	grow(t, bare, Options{URL: fileURL(bare), Branch: "main", Workdir: workdir}, 1)
	if _, err := os.Stat(marker); err != nil {
		t.Errorf("the working copy was cloned afresh after the fold: %v", err)
	}
	checkWorkdir(t, workdir, bare, mainSHA(t, bare))
}

// TestFoldLeavesDamagedObjects: a loose object whose file cannot be read,
// or whose content is not what its name says, stays where it is; the
// rest are folded; temporary files a crash left are deleted once old.
func TestFoldLeavesDamagedObjects(t *testing.T) {
	bare, workdir, opts := foldWorkdir(t)
	grow(t, bare, opts, 2)
	before := objectSet(t, workdir)
	loose, _ := storeShape(t, workdir)
	objects := filepath.Join(workdir, ".git", "objects")
	good, err := os.ReadFile(filepath.Join(objects, loose[0][:2], loose[0][2:]))
	if err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-2 * staleAge)
	planted := map[string][]byte{
		"ab/" + strings.Repeat("1", 38): good,                      // another object's content
		"cd/" + strings.Repeat("2", 38): []byte("not zlib at all"), // unreadable
		"ab/tmp_obj_fresh":              []byte("x"),
		"ab/tmp_obj_old":                []byte("x"),
		"pack/tmp_pack_old":             []byte("x"),
	}
	for name, content := range planted {
		p := filepath.Join(objects, filepath.FromSlash(name))
		write(t, p, string(content))
		if strings.HasSuffix(name, "_old") {
			if err := os.Chtimes(p, old, old); err != nil {
				t.Fatal(err)
			}
		}
	}

	// Indexes whose pack is gone, as a stop between renames leaves.
	orphanOld := filepath.Join(objects, "pack", "pack-"+strings.Repeat("3", 40)+".idx")
	orphanNew := filepath.Join(objects, "pack", "pack-"+strings.Repeat("4", 40)+".idx")
	write(t, orphanOld, "x")
	write(t, orphanNew, "x")
	if err := os.Chtimes(orphanOld, old, old); err != nil {
		t.Fatal(err)
	}

	logs := foldNow(t, opts)
	if _, err := os.Stat(orphanOld); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("an old index without its pack is still there: %v", err)
	}
	if _, err := os.Stat(orphanNew); err != nil {
		t.Errorf("a recent index without its pack went: %v", err)
	}
	os.Remove(orphanNew)
	if got := strings.Count(logs.String(), "leaving an object that cannot be read"); got != 2 {
		t.Errorf("%d objects reported left, want 2:\n%s", got, logs)
	}
	for name := range planted {
		_, err := os.Stat(filepath.Join(objects, filepath.FromSlash(name)))
		if gone := errors.Is(err, os.ErrNotExist); gone != strings.HasSuffix(name, "_old") {
			t.Errorf("%s: deleted = %v", name, gone)
		}
	}
	loose, packs := storeShape(t, workdir)
	if len(loose) != 2 || len(packs) != 1 {
		t.Errorf("after the fold: loose %v and %d packs, want the 2 damaged and 1", loose, len(packs))
	}
	for name := range planted {
		os.Remove(filepath.Join(objects, filepath.FromSlash(name)))
	}
	if diff := cmp.Diff(before, objectSet(t, workdir)); diff != "" {
		t.Errorf("objects changed (-before +after):\n%s", diff)
	}
	testgit.Git(t, workdir, "fsck", "--strict", "--no-dangling")
}

// TestFoldInterrupted: a fold that stops before its pack is in place
// leaves the store as it was and no temporary file; one that stops after
// leaves every object twice, which the next fold puts right.
func TestFoldInterrupted(t *testing.T) {
	for _, step := range []string{"place", "delete"} {
		t.Run(step, func(t *testing.T) {
			bare, workdir, opts := foldWorkdir(t)
			grow(t, bare, opts, 2)
			before := objectSet(t, workdir)
			loose0, packs0 := storeShape(t, workdir)

			packLimit = 1
			logger, logs := newLogger()
			opts.Logger = logger
			r := mustOpen(t, opts)
			r.beforeFoldStep = func(s string) error {
				if s == step {
					return errors.New("interrupted")
				}
				return nil
			}
			if err := r.Close(); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(logs.String(), "could not fold") {
				t.Errorf("the failed fold is not logged:\n%s", logs)
			}
			loose, packs := storeShape(t, workdir)
			wantPacks := len(packs0)
			if step == "delete" {
				wantPacks++
			}
			if len(loose) != len(loose0) || len(packs) != wantPacks {
				t.Errorf("after the interrupted fold: %d loose, %d packs; want %d, %d", len(loose), len(packs), len(loose0), wantPacks)
			}
			temps, _ := filepath.Glob(filepath.Join(workdir, ".git", "objects", "pack", "tmp_*"))
			if len(temps) != 0 {
				t.Errorf("temporary files left: %v", temps)
			}
			if diff := cmp.Diff(before, objectSet(t, workdir)); diff != "" {
				t.Errorf("objects changed (-before +after):\n%s", diff)
			}
			testgit.Git(t, workdir, "fsck", "--strict", "--no-dangling")

			opts.Logger = nil
			r = mustOpen(t, opts)
			if err := r.Close(); err != nil {
				t.Fatal(err)
			}
			loose, packs = storeShape(t, workdir)
			if len(loose) != 0 || len(packs) != 1 {
				t.Errorf("after the next fold: %d loose, %d packs; want 0, 1", len(loose), len(packs))
			}
			if diff := cmp.Diff(before, objectSet(t, workdir)); diff != "" {
				t.Errorf("objects changed (-before +after):\n%s", diff)
			}
			testgit.Git(t, workdir, "fsck", "--strict", "--no-dangling")
		})
	}
}

func TestGeometricSplit(t *testing.T) {
	packs := func(counts ...int) []packFile {
		var ps []packFile
		for i, n := range counts {
			ps = append(ps, packFile{name: fmt.Sprint("p", i), objects: n})
		}
		return ps
	}
	counts := func(ps []packFile) []int {
		var ns []int
		for _, p := range ps {
			ns = append(ns, p.objects)
		}
		return ns
	}
	for _, tc := range []struct {
		name       string
		packs      []packFile
		loose      int
		keep, roll []int
	}{
		{name: "no packs", loose: 10},
		{name: "a clone and a few loose objects", packs: packs(1000), loose: 100, keep: []int{1000}},
		{name: "loose objects over half the clone", packs: packs(1000), loose: 600, roll: []int{1000}},
		{name: "a series broken in its middle", packs: packs(10, 1000, 100, 300), loose: 50, keep: []int{1000}, roll: []int{300, 100, 10}},
		{name: "a geometric series", packs: packs(100, 1000, 300), loose: 40, keep: []int{1000, 300, 100}},
		{name: "many equal packs", packs: packs(10, 10, 10, 10), roll: []int{10, 10, 10, 10}},
		{name: "a last pack of one object", packs: packs(1000, 1), keep: []int{1000, 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			keep, roll := geometricSplit(tc.packs, tc.loose)
			if diff := cmp.Diff(tc.keep, counts(keep)); diff != "" {
				t.Errorf("kept (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.roll, counts(roll)); diff != "" {
				t.Errorf("folded (-want +got):\n%s", diff)
			}
		})
	}
}

// TestHousekeepingDue: git's estimate of the loose objects from one of
// the 256 folders, and the count of packs.
func TestHousekeepingDue(t *testing.T) {
	withLimits(t, 6700, 3)
	for _, tc := range []struct {
		name         string
		in17, others int // loose objects in objects/17 and in objects/18
		temps, packs int
		keeps        int // of the packs, those with a .keep file
		due          bool
	}{
		{name: "empty"},
		{name: "27 in the sampled folder: about 6,900", in17: 27},
		{name: "28: about 7,200", in17: 28, due: true},
		{name: "other folders are not counted", in17: 1, others: 500},
		{name: "temporary files are not objects", in17: 20, temps: 20},
		{name: "two packs", packs: 2},
		{name: "three packs", packs: 3, due: true},
		{name: "three packs, one kept", packs: 3, keeps: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			objects := t.TempDir()
			for i := range tc.in17 {
				write(t, filepath.Join(objects, "17", fmt.Sprintf("%038x", i)), "x")
			}
			for i := range tc.others {
				write(t, filepath.Join(objects, "18", fmt.Sprintf("%038x", i)), "x")
			}
			for i := range tc.temps {
				write(t, filepath.Join(objects, "17", fmt.Sprintf("tmp_obj_%d", i)), "x")
			}
			for i := range tc.packs {
				write(t, filepath.Join(objects, "pack", fmt.Sprintf("pack-%040x.pack", i)), "x")
				if i < tc.keeps {
					write(t, filepath.Join(objects, "pack", fmt.Sprintf("pack-%040x.keep", i)), "")
				}
			}
			r := &Repo{objects: objects}
			if got := r.housekeepingDue(); got != tc.due {
				t.Errorf("housekeepingDue() = %v, want %v", got, tc.due)
			}
		})
	}
}

// TestFoldOverManyCycles: with folds due at every few packs, a working
// copy goes through many cycles; no object is ever lost, the packs stay
// few (a geometric series holds about log2 of the objects), and git finds
// the store sound.
func TestFoldOverManyCycles(t *testing.T) {
	withLimits(t, 1<<30, 3)
	bare := testgit.NewBare(t, seed)
	workdir := t.TempDir()
	opts := Options{URL: fileURL(bare), Branch: "main", Workdir: workdir}
	seen := map[string]bool{}
	folds := 0
	for round := range 16 {
		logger, logs := newLogger()
		opts.Logger = logger
		grow(t, bare, opts, 1)
		// grow closed its Repo: a fold, when due, has run.
		if strings.Contains(logs.String(), "folded the working copy's objects") {
			folds++
		}
		objs := objectSet(t, workdir)
		now := map[string]bool{}
		for _, o := range objs {
			now[o] = true
		}
		for o := range seen {
			if !now[o] {
				t.Fatalf("round %d: object %s is gone", round, o)
			}
		}
		seen = now
		_, packs := storeShape(t, workdir)
		if bound := bits(len(objs)) + 1; len(packs) > bound {
			t.Errorf("round %d: %d packs for %d objects, want at most %d", round, len(packs), len(objs), bound)
		}
	}
	if folds < 4 {
		t.Errorf("%d folds in 16 rounds, want several", folds)
	}
	testgit.Git(t, workdir, "fsck", "--strict", "--no-dangling")
	checkWorkdir(t, workdir, bare, mainSHA(t, bare))
}

// bits is the number of bits of n: about log2(n)+1.
func bits(n int) int {
	b := 0
	for ; n > 0; n >>= 1 {
		b++
	}
	return b
}

// packHolding returns the .pack path of a pack of workdir whose index
// lists h, and h's offset in it.
func packHolding(t *testing.T, workdir string, h plumbing.Hash) (string, int64) {
	t.Helper()
	packs, err := listPacks(filepath.Join(workdir, ".git", "objects", "pack"))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range packs {
		if off, err := p.index.FindOffset(h); err == nil {
			return filepath.Join(workdir, ".git", "objects", "pack", p.name+".pack"), off
		}
	}
	return "", -1
}

// damagePackEntry overwrites the zlib header of the entry at off in pack.
func damagePackEntry(t *testing.T, pack string, off int64) {
	t.Helper()
	if err := os.Chmod(pack, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(pack, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	hdr := make([]byte, 10)
	if _, err := f.ReadAt(hdr, off); err != nil {
		t.Fatal(err)
	}
	n := 1 // the entry's type-and-size header, 7 bits a byte
	for hdr[n-1]&0x80 != 0 {
		n++
	}
	if _, err := f.WriteAt([]byte{0, 0}, off+int64(n)); err != nil {
		t.Fatal(err)
	}
}

// TestFoldDamagedCopies: an object with a damaged copy and a whole one
// elsewhere is folded from the whole one, and the damaged copy goes with
// the rest; git then reads it and finds the store sound. An object with
// no whole copy keeps every place that holds it.
func TestFoldDamagedCopies(t *testing.T) {
	readme := plumbing.ComputeHash(plumbing.BlobObject, []byte(seed["README.md"]))
	for _, tc := range []struct {
		name   string
		damage func(t *testing.T, workdir string)
	}{
		{
			name: "an empty loose file, as a crash leaves, of a packed object",
			damage: func(t *testing.T, workdir string) {
				hex := readme.String()
				write(t, filepath.Join(workdir, ".git", "objects", hex[:2], hex[2:]), "")
			},
		},
		{
			name: "a loose file whose header claims petabytes, of a packed object",
			damage: func(t *testing.T, workdir string) {
				var b strings.Builder
				zw := zlib.NewWriter(&b)
				zw.Write([]byte("blob 999999999999999\x00fleet\n"))
				zw.Close()
				hex := readme.String()
				write(t, filepath.Join(workdir, ".git", "objects", hex[:2], hex[2:]), b.String())
			},
		},
		{
			name: "two packs hold it, the larger one's copy damaged",
			damage: func(t *testing.T, workdir string) {
				big, off := packHolding(t, workdir, readme)
				packOne(t, workdir, readme)
				damagePackEntry(t, big, off)
			},
		},
		{
			name: "two packs hold it, the smaller one's copy damaged",
			damage: func(t *testing.T, workdir string) {
				name := packOne(t, workdir, readme)
				small := filepath.Join(workdir, ".git", "objects", "pack", name+".pack")
				off := packOffset(t, small, readme)
				damagePackEntry(t, small, off)
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bare, workdir, opts := foldWorkdir(t)
			grow(t, bare, opts, 2)
			before := objectSet(t, workdir)
			tc.damage(t, workdir)

			foldNow(t, opts)
			if got := testgit.Git(t, workdir, "cat-file", "-p", readme.String()); got != strings.TrimSuffix(seed["README.md"], "\n") {
				t.Errorf("git reads %q for the README", got)
			}
			loose, packs := storeShape(t, workdir)
			if len(loose) != 0 || len(packs) != 1 {
				t.Errorf("after the fold: loose %v, %d packs; want none and 1", loose, len(packs))
			}
			if diff := cmp.Diff(before, objectSet(t, workdir)); diff != "" {
				t.Errorf("objects changed (-before +after):\n%s", diff)
			}
			testgit.Git(t, workdir, "fsck", "--strict", "--no-dangling", "--full")
		})
	}

	t.Run("no whole copy anywhere", func(t *testing.T) {
		bare, workdir, opts := foldWorkdir(t)
		grow(t, bare, opts, 2)
		big, off := packHolding(t, workdir, readme)
		hex := readme.String()
		loosePath := filepath.Join(workdir, ".git", "objects", hex[:2], hex[2:])
		write(t, loosePath, "")
		damagePackEntry(t, big, off)

		logs := foldNow(t, opts)
		if !strings.Contains(logs.String(), "leaving an object that cannot be read") || !strings.Contains(logs.String(), hex) {
			t.Errorf("the unreadable object is not logged:\n%s", logs)
		}
		if _, err := os.Stat(loosePath); err != nil {
			t.Errorf("the damaged loose file went: %v", err)
		}
		if _, err := os.Stat(big); err != nil {
			t.Errorf("the pack with the damaged copy went: %v", err)
		}
	})
}

// packOne writes a pack holding only object h into workdir's store, with
// git pack-objects, and returns its name.
func packOne(t *testing.T, workdir string, h plumbing.Hash) string {
	t.Helper()
	cmd := exec.Command("git", "pack-objects", "--quiet", ".git/objects/pack/pack")
	cmd.Dir = workdir
	cmd.Stdin = strings.NewReader(h.String() + "\n")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git pack-objects: %v", err)
	}
	return "pack-" + strings.TrimSpace(string(out))
}

// packOffset returns h's offset in pack.
func packOffset(t *testing.T, pack string, h plumbing.Hash) int64 {
	t.Helper()
	f, err := os.Open(strings.TrimSuffix(pack, ".pack") + ".idx")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	idx := idxfile.NewMemoryIndex()
	if err := idxfile.NewDecoder(f).Decode(idx); err != nil {
		t.Fatal(err)
	}
	off, err := idx.FindOffset(h)
	if err != nil {
		t.Fatal(err)
	}
	return off
}

// TestFoldDeltaPacks: a fold reads packs with deltas, as git's
// upload-pack sends them (here git's own repack of the remote, copied in:
// the in-process file transport sends whole objects), and writes a pack
// whose index is, byte for byte, the one git index-pack makes of it.
func TestFoldDeltaPacks(t *testing.T) {
	withLimits(t, 1<<30, 1<<30)
	bare := testgit.NewBare(t, seed)
	var big strings.Builder
	for i := 0; big.Len() < 256<<10; i++ {
		fmt.Fprintf(&big, "line %d %s\n", i, strings.Repeat("x", i%50))
	}
	for i := range 4 {
		testgit.Commit(t, bare, "main", map[string]string{"big.txt": big.String() + strings.Repeat("v", i)}, nil, "big")
	}
	testgit.Git(t, bare, "repack", "-adf", "--quiet")
	workdir := t.TempDir()
	opts := Options{URL: fileURL(bare), Branch: "main", Workdir: workdir, Depth: -1}
	grow(t, bare, opts, 2)
	copied, err := filepath.Glob(filepath.Join(bare, "objects", "pack", "pack-*"))
	if err != nil || len(copied) == 0 {
		t.Fatalf("no pack in the remote: %v", err)
	}
	deltas := false
	for _, p := range copied {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		write(t, filepath.Join(workdir, ".git", "objects", "pack", filepath.Base(p)), string(b))
		if strings.HasSuffix(p, ".idx") {
			deltas = deltas || strings.Contains(testgit.Git(t, bare, "verify-pack", "-v", p), "chain length")
		}
	}
	if !deltas {
		t.Fatal("git's repack made no deltas: the test would not test them")
	}
	before := objectSet(t, workdir)

	foldNow(t, opts)
	loose, packs := storeShape(t, workdir)
	if len(loose) != 0 || len(packs) != 1 {
		t.Fatalf("after the fold: %d loose, %d packs; want 0, 1", len(loose), len(packs))
	}
	if diff := cmp.Diff(before, objectSet(t, workdir)); diff != "" {
		t.Errorf("objects changed (-before +after):\n%s", diff)
	}
	testgit.Git(t, workdir, "fsck", "--strict", "--no-dangling", "--full")
	ours, err := os.ReadFile(strings.TrimSuffix(packs[0], ".pack") + ".idx")
	if err != nil {
		t.Fatal(err)
	}
	copyPack := filepath.Join(t.TempDir(), "copy.pack")
	b, err := os.ReadFile(packs[0])
	if err != nil {
		t.Fatal(err)
	}
	write(t, copyPack, string(b))
	testgit.Git(t, workdir, "index-pack", copyPack)
	gits, err := os.ReadFile(strings.TrimSuffix(copyPack, ".pack") + ".idx")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(ours, gits) {
		t.Errorf("the fold's index (%d bytes) differs from git index-pack's (%d bytes)", len(ours), len(gits))
	}
	grow(t, bare, opts, 1)
	checkWorkdir(t, workdir, bare, mainSHA(t, bare))
}

// TestFoldSameNameDamagedPack: a fold stopped before its deletes leaves
// its pack; when a copy in that pack is damaged afterwards, the next fold,
// which writes the same bytes under the same name, replaces the damaged
// pack instead of trusting it, and deletes the loose copy only then.
func TestFoldSameNameDamagedPack(t *testing.T) {
	_, workdir, opts := foldWorkdir(t)
	r := mustOpen(t, opts)
	for i := range 3 {
		edit := setFiles(map[string]string{"clusters/prod/app.yaml": fmt.Sprintf("image: app:1.%d.0\n", i+1)}, "Bump app", nil)
		if res, err := r.Update(t.Context(), Update{Commit: author}, edit); err != nil || !res.Pushed {
			t.Fatalf("Update = %+v, %v", res, err)
		}
	}
	r.Close()
	loose0, packs0 := storeShape(t, workdir)
	before := objectSet(t, workdir)

	packLimit = 1
	r = mustOpen(t, opts)
	r.beforeFoldStep = func(s string) error {
		if s == "delete" {
			return errors.New("interrupted")
		}
		return nil
	}
	r.Close()
	_, packs1 := storeShape(t, workdir)
	var placed string
	for _, p := range packs1 {
		if !slices.Contains(packs0, p) {
			placed = p
		}
	}
	if placed == "" {
		t.Fatal("the interrupted fold placed no pack")
	}
	victim := plumbing.NewHash(loose0[0])
	off := packOffset(t, placed, victim)
	data, err := os.ReadFile(placed)
	if err != nil {
		t.Fatal(err)
	}
	data[off+6] ^= 0xff // inside the entry's zlib stream
	os.Chmod(placed, 0o644)
	write(t, placed, string(data))

	r = mustOpen(t, opts)
	r.Close()
	if diff := cmp.Diff(before, objectSet(t, workdir)); diff != "" {
		t.Errorf("objects changed (-before +after):\n%s", diff)
	}
	testgit.Git(t, workdir, "fsck", "--strict", "--no-dangling", "--full")
}

// TestStoreGrownReclones: a working copy records how many objects the
// packs it was cloned with hold; once the history it collects puts more
// than twice as many plus grownExtra in its packs, the next Open clones
// afresh, and not before. A fold, which stores objects without deltas,
// does not count as growth. A working copy without the record is
// measured from its next Open.
func TestStoreGrownReclones(t *testing.T) {
	bare, workdir, opts := foldWorkdir(t)
	old := grownExtra
	grownExtra = 0
	t.Cleanup(func() { grownExtra = old })
	record := filepath.Join(workdir, ".git", cloneObjectsFile)
	packsNow := func() int64 {
		_, packs := storeShape(t, workdir)
		return packedObjects(packs)
	}
	readRecord := func() int64 {
		b, err := os.ReadFile(record)
		if err != nil {
			t.Fatal(err)
		}
		n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	mustOpen(t, opts).Close()
	cloned := readRecord()
	if want := int64(len(objectSet(t, workdir))); cloned != want {
		t.Fatalf("recorded %d objects at the clone, git finds %d", cloned, want)
	}

	recloned := false
	folded := false
	for round := 0; round < 40 && !recloned; round++ {
		grown := packsNow() > 2*cloned
		logger, logs := newLogger()
		opts.Logger = logger
		if round == 1 {
			packLimit = 1 // this round's Close folds
		}
		grow(t, bare, opts, 1) // opens (reusing or cloning), commits, closes
		packLimit = 1 << 30
		folded = folded || strings.Contains(logs.String(), "folded the working copy's objects")
		recloned = strings.Contains(logs.String(), "re-cloning the working copy")
		if recloned != grown {
			t.Fatalf("round %d: packs of %d objects against %d at the clone; re-cloned: %v\n%s", round, packsNow(), cloned, recloned, logs)
		}
		if recloned && !strings.Contains(logs.String(), "level=INFO msg=\"re-cloning the working copy\"") {
			t.Errorf("round %d: housekeeping's re-clone is not logged at info: %s", round, logs)
		}
		if recloned && !strings.Contains(logs.String(), "its packs hold") {
			t.Errorf("round %d: re-cloned for another reason: %s", round, logs)
		}
	}
	if !recloned || !folded {
		t.Fatalf("re-cloned %v, folded %v; want both", recloned, folded)
	}
	// The push that followed the new clone stored its objects loose.
	if _, packs := storeShape(t, workdir); len(packs) != 1 || readRecord() != packsNow() {
		t.Errorf("after the new clone: %d packs of %d objects, %d recorded", len(packs), packsNow(), readRecord())
	}
	checkWorkdir(t, workdir, bare, mainSHA(t, bare))

	// Without the record, the next Open writes what it finds.
	if err := os.Remove(record); err != nil {
		t.Fatal(err)
	}
	mustOpen(t, opts).Close()
	if got := readRecord(); got != packsNow() || got == 0 {
		t.Errorf("recorded %d objects for a working copy without a record, its packs hold %d", got, packsNow())
	}
}

// TestPushBranchNoopStoresNothing: a push branch that already holds the
// bumps makes, at each cycle, the same objects on the same base, but for
// the commit. Of a bump large enough to be stored as a pack (150 files),
// a cycle with nothing new stored a new pack of them all; now only its
// commit, loose.
func TestPushBranchNoopStoresNothing(t *testing.T) {
	bare, workdir, opts := foldWorkdir(t)
	files := map[string]string{}
	for i := range 150 {
		files[fmt.Sprintf("clusters/prod/app%03d.yaml", i)] = fmt.Sprintf("image: app%03d:2.0.0\n", i)
	}
	u := Update{Commit: author, PushBranch: "imagebump/main"}
	cycle := func(i int) *Result {
		t.Helper()
		r := mustOpen(t, opts)
		// Commits of other seconds (here, other messages) on the same
		// tree: the new commit differs, the branch's tree does not.
		res, err := r.Update(t.Context(), u, setFiles(files, fmt.Sprintf("Bump %d", i), nil))
		if err != nil {
			t.Fatal(err)
		}
		if err := r.Close(); err != nil {
			t.Fatal(err)
		}
		return res
	}
	if res := cycle(0); !res.Pushed {
		t.Fatal("the first cycle pushed nothing")
	}
	loose, packs := storeShape(t, workdir)
	for i := range 3 {
		if res := cycle(i + 1); res.Pushed {
			t.Fatalf("no-op cycle %d pushed", i)
		}
	}
	loose2, packs2 := storeShape(t, workdir)
	if len(packs2) != len(packs) || len(loose2) > len(loose)+3 {
		t.Errorf("three cycles with nothing new took the store from %d packs and %d loose objects to %d and %d; want no new pack, and a commit each at most",
			len(packs), len(loose), len(packs2), len(loose2))
	}
	testgit.Git(t, workdir, "fsck", "--no-dangling")
	if got := testgit.Refs(t, bare)["refs/heads/imagebump/main"]; got == "" {
		t.Error("the push branch is gone")
	}
}

// TestNotStored: of a commit's objects, those a pack lists or a loose file
// holds are not stored again; a new one, or one whose loose file is empty
// (what a power loss can leave), is.
func TestNotStored(t *testing.T) {
	_, workdir, opts := foldWorkdir(t)
	r := mustOpen(t, opts)
	defer r.Close()
	blob := func(content string) newObject {
		return newObject{typ: plumbing.BlobObject, hash: objectHash(plumbing.BlobObject, []byte(content)), content: []byte(content)}
	}
	packed, loose, empty, fresh := blob(seed["README.md"]), blob("loose\n"), blob("empty\n"), blob("fresh\n")
	if err := (&looseWriter{dir: r.objects}).write(loose.typ, loose.hash, loose.content); err != nil {
		t.Fatal(err)
	}
	hex := empty.hash.String()
	write(t, filepath.Join(workdir, ".git", "objects", hex[:2], hex[2:]), "")
	var got []plumbing.Hash
	for _, o := range r.notStored([]newObject{packed, loose, empty, fresh}) {
		got = append(got, o.hash)
	}
	if want := []plumbing.Hash{empty.hash, fresh.hash}; !slices.Equal(got, want) {
		t.Errorf("notStored kept %v, want the empty loose one and the new one %v", got, want)
	}
}
