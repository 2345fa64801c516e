package gitwriter

import (
	"bytes"
	"compress/zlib"
	"crypto/sha1"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"

	"github.com/imagebump/imagebump/internal/testkit/testgit"
)

// TestPackedObject reads every object of a pack git made with deltas:
// each one stored whole comes back as git cat-file gives it, each delta
// is left to go-git (errNotWhole), as is an object no pack lists. Damage
// to a whole copy is reported, naming the pack, unless another pack
// holds the object whole.
func TestPackedObject(t *testing.T) {
	bare := testgit.NewBare(t, map[string]string{"a.yaml": strings.Repeat("image: app:1.0.0\n", 200)})
	for i := range 6 {
		testgit.Commit(t, bare, "main", map[string]string{
			"a.yaml":                         strings.Repeat("image: app:1.0.0\n", 200) + fmt.Sprintf("# %d\n", i),
			fmt.Sprintf("d%d/e/f.yaml", i%2): fmt.Sprintf("n: %d\n", i),
		}, nil, fmt.Sprintf("commit %d", i))
	}
	testgit.Git(t, bare, "repack", "-a", "-d", "-f", "-q", "--window=50")
	testgit.Git(t, bare, "prune-packed")
	objects := filepath.Join(bare, "objects")

	whole, deltas := 0, 0
	var aCommit plumbing.Hash
	for line := range strings.Lines(testgit.Git(t, bare, "cat-file", "--batch-all-objects", "--batch-check=%(objectname) %(objecttype) %(deltabase)")) {
		f := strings.Fields(line)
		h := plumbing.NewHash(f[0])
		typ, content, err := packedObject(objects, h)
		if f[2] != plumbing.ZeroHash.String() {
			deltas++
			if !errors.Is(err, errNotWhole) {
				t.Errorf("%s (%s, a delta): err = %v, want errNotWhole", f[0], f[1], err)
			}
			continue
		}
		whole++
		if err != nil {
			t.Errorf("%s (%s): %v", f[0], f[1], err)
			continue
		}
		if typ.String() != f[1] || !bytes.Equal(content, gitRaw(t, bare, "", "cat-file", f[1], f[0])) {
			t.Errorf("%s: got a %s of %d bytes, git has a %s", f[0], typ, len(content), f[1])
		}
		if f[1] == "commit" {
			aCommit = h
		}
	}
	if whole == 0 || deltas == 0 || aCommit.IsZero() {
		t.Fatalf("the pack holds %d whole objects and %d deltas (with a whole commit: %v); want both", whole, deltas, !aCommit.IsZero())
	}
	missing := plumbing.NewHash(strings.Repeat("ab", 20))
	if _, _, err := packedObject(objects, missing); !errors.Is(err, errNotWhole) {
		t.Errorf("an object no pack lists: err = %v, want errNotWhole", err)
	}
	repo, err := git.PlainOpen(bare)
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(testgit.Git(t, bare, "cat-file", "--batch-all-objects", "--batch-check=%(objectname)")) {
		if h := plumbing.NewHash(strings.TrimSpace(line)); !hasObject(repo, objects, h) {
			t.Errorf("hasObject(%s) = false for an object of the pack", h)
		}
	}
	if hasObject(repo, objects, missing) {
		t.Error("hasObject is true for an object no pack lists")
	}

	// A second pack with the commit whole, then damage to the first.
	packs, _ := filepath.Glob(filepath.Join(objects, "pack", "*.pack"))
	if len(packs) != 1 {
		t.Fatalf("%d packs, want 1", len(packs))
	}
	offset, err := idxOffset(strings.TrimSuffix(packs[0], ".pack")+".idx", aCommit)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(packs[0])
	if err != nil {
		t.Fatal(err)
	}
	damaged := bytes.Clone(raw)
	damaged[offset+8] ^= 0x55 // inside the commit's zlib stream
	second := strings.TrimSpace(string(gitRaw(t, bare, aCommit.String()+"\n", "pack-objects", "-q", filepath.Join(objects, "pack", "pack"))))
	if err := os.Chmod(packs[0], 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(packs[0], damaged, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := packedObject(objects, aCommit); err != nil {
		t.Errorf("a commit damaged in one pack, whole in another: %v", err)
	}
	if err := os.Remove(filepath.Join(objects, "pack", "pack-"+second+".pack")); err != nil {
		t.Fatal(err)
	}
	_, _, err = packedObject(objects, aCommit)
	if err == nil || errors.Is(err, errNotWhole) || !strings.Contains(err.Error(), filepath.Base(packs[0])) {
		t.Errorf("a commit damaged in its only pack: err = %v, want one naming %s", err, filepath.Base(packs[0]))
	}
}

// gitRaw runs git in dir with stdin and returns its output untouched.
func gitRaw(t testing.TB, dir, stdin string, args ...string) []byte {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Stdin = strings.NewReader(stdin)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git %s: %v", strings.Join(args, " "), err)
	}
	return out
}

// FuzzPackedObject feeds the index search and the object reader damaged
// index and pack bytes: they must return an error, never panic nor
// allocate what a damaged header claims; an offset found must be within
// the pack's bytes to give an object, and a whole one found in a real
// pack must hash to its name. Fuzz it with -fuzzminimizetime 2s: the
// engine's minimizing of inputs this large otherwise stalls it for
// minutes.
func FuzzPackedObject(f *testing.F) {
	bare := testgit.NewBare(f, map[string]string{"a.yaml": "a: 1\n", "b/c.yaml": "c: 2\n"})
	testgit.Git(f, bare, "repack", "-a", "-d", "-q")
	packs, _ := filepath.Glob(filepath.Join(bare, "objects", "pack", "*.pack"))
	if len(packs) != 1 {
		f.Fatalf("%d packs", len(packs))
	}
	idx, err := os.ReadFile(strings.TrimSuffix(packs[0], ".pack") + ".idx")
	if err != nil {
		f.Fatal(err)
	}
	pack, err := os.ReadFile(packs[0])
	if err != nil {
		f.Fatal(err)
	}
	head := plumbing.NewHash(testgit.Git(f, bare, "rev-parse", "main"))
	f.Add(idx, pack, head[:])
	f.Fuzz(func(t *testing.T, idx, pack, name []byte) {
		if len(name) != 20 {
			return
		}
		var h plumbing.Hash
		copy(h[:], name)
		off, err := findOffset(bytes.NewReader(idx), int64(len(idx)), h)
		if err != nil {
			return
		}
		typ, content, err := readWholeAt(bytes.NewReader(pack), off, 0)
		if err != nil {
			return
		}
		if off < 0 || off >= int64(len(pack)) {
			t.Fatalf("an object read at offset %d of a %d-byte pack", off, len(pack))
		}
		if len(content) > maxPackedRead {
			t.Fatalf("read %d bytes, more than %d", len(content), maxPackedRead)
		}
		_ = typ
	})
}

// TestOpenReclonesForUnreadablePack: go-git refuses every packed object
// when one pack's index is missing, damaged or another pack's. Open
// clones afresh for it, as it did when go-git read the head, even when
// the head is whole in another pack (a commit of 100 objects or more is
// stored as one); and the cycle's commit goes through.
func TestOpenReclonesForUnreadablePack(t *testing.T) {
	var err error
	for _, damage := range []string{"removed", "truncated", "another pack's"} {
		t.Run(damage, func(t *testing.T) {
			bare := testgit.NewBare(t, seed)
			workdir := t.TempDir()
			opts := Options{URL: fileURL(bare), Branch: "main", Workdir: workdir}
			r := mustOpen(t, opts)
			many := map[string]string{}
			for i := range 120 {
				many[fmt.Sprintf("many/f%03d.yaml", i)] = fmt.Sprintf("n: %d\n", i)
			}
			if res, err := r.Update(t.Context(), Update{Commit: author}, setFiles(many, "Many", nil)); err != nil || !res.Pushed {
				t.Fatalf("Update = %+v, %v", res, err)
			}
			r.Close()
			_, packs := storeShape(t, workdir)
			if len(packs) != 2 {
				t.Fatalf("%d packs, want the clone's and the commit's", len(packs))
			}
			// The clone's pack: the one without the head commit.
			head := plumbing.NewHash(mainSHA(t, bare))
			objects := filepath.Join(workdir, ".git", "objects")
			var clonePack, otherIdx string
			for _, p := range packs {
				idx := strings.TrimSuffix(p, ".pack") + ".idx"
				if _, err := idxOffset(idx, head); err != nil {
					clonePack = idx
				} else {
					otherIdx = idx
				}
			}
			if clonePack == "" || otherIdx == "" {
				t.Fatalf("packs %v: want one with the head and one without", packs)
			}
			switch damage {
			case "removed":
				err = os.Remove(clonePack)
			case "truncated":
				err = os.Truncate(clonePack, 100)
			case "another pack's":
				var b []byte
				if b, err = os.ReadFile(otherIdx); err == nil {
					_ = os.Chmod(clonePack, 0o644)
					err = os.WriteFile(clonePack, b, 0o644)
				}
			}
			if err != nil {
				t.Fatal(err)
			}
			if _, _, err := packedObject(objects, head); err == nil || errors.Is(err, errNotWhole) {
				t.Errorf("packedObject of the head with the clone's index %s: err = %v, want one naming the pack", damage, err)
			}
			logger, logs := newLogger()
			opts.Logger = logger
			r = mustOpen(t, opts)
			defer r.Close()
			if !strings.Contains(logs.String(), "level=WARN msg=\"re-cloning the working copy, which cannot be used as it is\"") {
				t.Errorf("Open with the clone's index %s did not clone afresh with a warning:\n%s", damage, logs)
			}
			edit := setFiles(map[string]string{"clusters/prod/app.yaml": "image: app:3.0.0\n"}, "Bump app", nil)
			if res, err := r.Update(t.Context(), Update{Commit: author}, edit); err != nil || !res.Pushed {
				t.Errorf("the cycle after: Update = %+v, %v", res, err)
			}
		})
	}
}

// TestPackedObjectLargeOffsets reads objects past 2 GiB and 4 GiB into a
// pack, whose index gives their offsets in its table of large offsets.
// The pack is a sparse file with five objects and holes between them,
// its index written here; git reads both (show-index gives each offset,
// cat-file each object), so the test's pack is one git accepts, and
// idxOffset and packedObject must agree with git on every object.
func TestPackedObjectLargeOffsets(t *testing.T) {
	blob := []byte("image: app:1.0.0\n")
	blobHash := plumbing.ComputeHash(plumbing.BlobObject, blob)
	tree := append([]byte("100644 app.yaml\x00"), blobHash[:]...)
	treeHash := plumbing.ComputeHash(plumbing.TreeObject, tree)
	commit := []byte("tree " + treeHash.String() + "\nauthor a <a@b> 1 +0000\ncommitter a <a@b> 1 +0000\n\nbump\n")
	objs := []struct {
		typ     plumbing.ObjectType
		content []byte
		offset  int64
	}{
		{plumbing.BlobObject, blob, 12},
		{plumbing.TreeObject, tree, 1<<31 - 4096},
		{plumbing.CommitObject, commit, 1<<31 + 7},
		{plumbing.BlobObject, []byte("second\n"), 3<<30 + 1},
		{plumbing.BlobObject, bytes.Repeat([]byte("large offset\n"), 40), 5<<30 + 123},
	}

	dir := filepath.Join(t.TempDir(), "objects")
	if err := os.MkdirAll(filepath.Join(dir, "pack"), 0o755); err != nil {
		t.Fatal(err)
	}
	packSum := sha1.Sum([]byte("a synthetic sparse pack"))
	base := filepath.Join(dir, "pack", "pack-"+hex.EncodeToString(packSum[:]))
	pack, err := os.Create(base + ".pack")
	if err != nil {
		t.Fatal(err)
	}
	defer pack.Close()
	header := packHeader(len(objs))
	if _, err := pack.WriteAt(header[:], 0); err != nil {
		t.Fatal(err)
	}
	var entries []idxEntry
	end := int64(0)
	for _, o := range objs {
		raw := packEntry(t, o.typ, o.content)
		if _, err := pack.WriteAt(raw, o.offset); err != nil {
			t.Fatalf("writing the pack at %d: %v", o.offset, err)
		}
		entries = append(entries, idxEntry{plumbing.ComputeHash(o.typ, o.content), crc32.ChecksumIEEE(raw), o.offset})
		end = max(end, o.offset+int64(len(raw)))
	}
	if _, err := pack.WriteAt(packSum[:], end); err != nil {
		t.Fatal(err)
	}
	idx := packIndexFor(entries, packSum[:])
	if err := os.WriteFile(base+".idx", idx, 0o644); err != nil {
		t.Fatal(err)
	}

	bare := filepath.Dir(dir)
	testgit.Git(t, bare, "init", "-q", "--bare", ".")
	shown := map[string]string{}
	for line := range strings.Lines(string(gitRaw(t, bare, string(idx), "show-index"))) {
		f := strings.Fields(line)
		shown[f[1]] = f[0]
	}
	repo, err := git.PlainOpen(bare)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		h := plumbing.ComputeHash(o.typ, o.content)
		if got, want := shown[h.String()], fmt.Sprint(o.offset); got != want {
			t.Fatalf("git show-index gives %s at %q, the test wrote it at %s", shortHash(h), got, want)
		}
		if got := gitRaw(t, bare, "", "cat-file", o.typ.String(), h.String()); !bytes.Equal(got, o.content) {
			t.Fatalf("git cat-file %s at %d = %q, the test wrote %q", shortHash(h), o.offset, got, o.content)
		}
		if off, err := idxOffset(base+".idx", h); err != nil || off != o.offset {
			t.Errorf("idxOffset(%s) = %d, %v; git reads it at %d", shortHash(h), off, err, o.offset)
		}
		typ, content, err := packedObject(dir, h)
		if err != nil || typ != o.typ || !bytes.Equal(content, o.content) {
			t.Errorf("packedObject(%s) at %d = %s %q, %v; want the %s git reads", shortHash(h), o.offset, typ, content, err, o.typ)
		}
		if !hasObject(repo, dir, h) {
			t.Errorf("hasObject(%s) = false", shortHash(h))
		}
	}
	c, err := packedCommit(dir, plumbing.ComputeHash(plumbing.CommitObject, commit))
	if err != nil || !bytes.Equal(c, commit) {
		t.Errorf("packedCommit past 2 GiB = %q, %v", c, err)
	}
	tr, err := treeObject(repo, dir, treeHash)
	if err != nil || len(tr.Entries) != 1 || tr.Entries[0].Hash != blobHash {
		t.Errorf("treeObject below 2 GiB = %+v, %v; want the one entry %s", tr, err, shortHash(blobHash))
	}
}

// idxEntry is one object of a pack index the tests write.
type idxEntry struct {
	name   plumbing.Hash
	crc    uint32
	offset int64
}

// packIndexFor writes the version 2 index of a pack whose checksum is
// packSum: fan-out, names, CRCs, offsets, large offsets, the pack's
// checksum and the index's own.
func packIndexFor(entries []idxEntry, packSum []byte) []byte {
	entries = slices.Clone(entries)
	slices.SortFunc(entries, func(a, b idxEntry) int { return bytes.Compare(a.name[:], b.name[:]) })
	idx := []byte{0xff, 't', 'O', 'c', 0, 0, 0, 2}
	for b := range 256 {
		n := 0
		for _, e := range entries {
			if int(e.name[0]) <= b {
				n++
			}
		}
		idx = binary.BigEndian.AppendUint32(idx, uint32(n))
	}
	for _, e := range entries {
		idx = append(idx, e.name[:]...)
	}
	for _, e := range entries {
		idx = binary.BigEndian.AppendUint32(idx, e.crc)
	}
	var large []byte
	for _, e := range entries {
		if e.offset < 1<<31 {
			idx = binary.BigEndian.AppendUint32(idx, uint32(e.offset))
			continue
		}
		idx = binary.BigEndian.AppendUint32(idx, 1<<31|uint32(len(large)/8))
		large = binary.BigEndian.AppendUint64(large, uint64(e.offset))
	}
	idx = append(append(idx, large...), packSum...)
	idxSum := sha1.Sum(idx)
	return append(idx, idxSum[:]...)
}

// packEntry encodes an object as a pack stores it whole
// (writePackEntry: git reads what it writes, see the callers).
func packEntry(t *testing.T, typ plumbing.ObjectType, content []byte) []byte {
	t.Helper()
	var b bytes.Buffer
	zw, _ := zlib.NewWriterLevel(&b, zlib.BestSpeed)
	if err := writePackEntry(&b, zw, typ, plumbing.ComputeHash(typ, content), content); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}
