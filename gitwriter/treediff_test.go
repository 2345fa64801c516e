package gitwriter

import (
	"bufio"
	"bytes"
	"compress/zlib"
	"context"
	"crypto/sha1"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/google/go-cmp/cmp"

	"github.com/imagebump/imagebump/internal/testkit/testgit"
)

// randomHistory imports n random commits on branch main of a new bare
// repository with git fast-import and returns them, oldest first. The
// commits edit, add, delete and move files in nested folders, turn
// files into folders of the same name and back, change modes, and add
// symbolic links and submodule entries: what a tree diff must tell
// apart. With loose set, fast-import leaves the objects loose.
func randomHistory(t testing.TB, bare string, rng *rand.Rand, n int, loose bool) []string {
	t.Helper()
	names := []string{"a.yaml", "a-b.yaml", "a", "b/c.yaml", "b/c", "b/c/d.yaml", "b/c.d/e.yaml",
		"deep/1/2/3/4/f.yaml", "deep/1/2/g.yaml", "deep/1/2/3", "x/y/z.yaml", "x/y.yaml", "x.y"}
	live := map[string]bool{}
	if out, err := testgit.GitErr(t, bare, nil, "ls-tree", "-r", "--name-only", "main"); err == nil {
		for _, p := range strings.Fields(out) {
			live[p] = true
		}
	}
	var stream bytes.Buffer
	w := bufio.NewWriter(&stream)
	data := func(s string) { fmt.Fprintf(w, "data %d\n%s\n", len(s), s) }
	for c := range n {
		fmt.Fprintf(w, "commit refs/heads/main\nmark :%d\ncommitter t <t@example.invalid> %d +0000\n", c+1, 1700000000+c)
		data(fmt.Sprintf("change %d", c))
		if c == 0 {
			w.WriteString("from refs/heads/main^0\n")
		}
		for range 1 + rng.IntN(5) {
			p := names[rng.IntN(len(names))]
			if rng.IntN(3) == 0 {
				p = fmt.Sprintf("bulk/%02d/%s", rng.IntN(20), p)
			}
			// A path and its parents cannot all be files: clear the way.
			for q := range live {
				if strings.HasPrefix(q, p+"/") || strings.HasPrefix(p, q+"/") {
					fmt.Fprintf(w, "D %s\n", q)
					delete(live, q)
				}
			}
			switch op := rng.IntN(10); {
			case op < 5 || !live[p]:
				mode := "100644"
				switch rng.IntN(8) {
				case 0:
					mode = "100755"
				case 1:
					mode = "120000"
				}
				fmt.Fprintf(w, "M %s inline %s\n", mode, p)
				// Long contents that share most lines, so git stores
				// deltas of them and of the trees.
				data(strings.Repeat(fmt.Sprintf("line of %s\n", p), 30) + fmt.Sprintf("v%d\n", rng.IntN(4)))
				live[p] = true
			case op < 7:
				fmt.Fprintf(w, "D %s\n", p)
				delete(live, p)
			case op < 8:
				fmt.Fprintf(w, "M 160000 %s %s\n", strings.Repeat(fmt.Sprintf("%x", rng.IntN(16)), 40), p)
			default:
				fmt.Fprintf(w, "M 100644 inline %s\n", p)
				data(strings.Repeat(fmt.Sprintf("line of %s\n", p), 30))
			}
		}
		w.WriteString("\n")
	}
	w.Flush()
	cmd := exec.Command("git", "--git-dir="+bare, "-c", fmt.Sprintf("fastimport.unpackLimit=%d", map[bool]int{true: 1 << 30, false: 0}[loose]),
		"fast-import", "--quiet", "--export-marks=marks")
	cmd.Dir = bare
	cmd.Stdin = &stream
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git fast-import: %v: %s", err, out)
	}
	marks, err := os.ReadFile(filepath.Join(bare, "marks"))
	if err != nil {
		t.Fatal(err)
	}
	commits := make([]string, n)
	for line := range strings.Lines(string(marks)) {
		var mark int
		var h string
		if _, err := fmt.Sscanf(line, ":%d %s", &mark, &h); err != nil {
			t.Fatal(err)
		}
		commits[mark-1] = h
	}
	return commits
}

// packKinds counts the entries of the packs in objects by how they are
// stored.
func packKinds(t testing.TB, objects string) map[plumbing.ObjectType]int {
	t.Helper()
	ps, err := openPackSet(objects)
	if err != nil {
		t.Fatal(err)
	}
	defer ps.Close()
	kinds := map[plumbing.ObjectType]int{}
	for _, p := range ps.packs {
		if err := p.open(); err != nil {
			t.Fatal(err)
		}
		for k := range len(p.idx.names) / 20 {
			off, err := p.idx.find(plumbing.Hash(p.idx.names[k*20 : k*20+20]))
			if err != nil {
				t.Fatalf("the index of %s does not find its own entry %d: %v", p.base, k, err)
			}
			e, err := readStoredEntry(p.f, off, false)
			if err != nil {
				t.Fatal(err)
			}
			kinds[e.t]++
		}
	}
	return kinds
}

// storedHistory is a bare repository whose objects are stored in every
// way a working copy holds them, and the commits of its branch main.
type storedHistory struct {
	bare    string // the repository read
	full    string // the same objects, all in one place, for git to answer
	commits []string
	kinds   map[plumbing.ObjectType]int
}

// newStoredHistory imports random commits into a bare repository and
// stores them the ways a working copy holds objects: a pack with deltas
// by offset (git's default) or by name (byName), loose objects on top,
// and a thin pack as go-git keeps a fetched one, whose deltas name bases
// in the other pack and among the loose objects. full is a copy of the
// repository whose objects git reads without the thin pack.
func newStoredHistory(t testing.TB, rng *rand.Rand, byName bool) *storedHistory {
	t.Helper()
	h := &storedHistory{bare: testgit.NewBare(t, map[string]string{"seed.yaml": "seed\n"})}
	h.commits = randomHistory(t, h.bare, rng, 40, false)
	testgit.Git(t, h.bare, "-c", fmt.Sprintf("repack.useDeltaBaseOffset=%v", !byName), "repack", "-a", "-d", "-f", "-q", "--depth=20", "--window=50")
	testgit.Git(t, h.bare, "prune-packed")
	h.commits = append(h.commits, randomHistory(t, h.bare, rng, 10, true)...)

	// The remote makes more commits; the thin pack that brings them is
	// stored through go-git's store, as a fetch stores it.
	h.full = filepath.Join(t.TempDir(), "full.git")
	testgit.Git(t, h.bare, "clone", "-q", "--bare", "--no-local", h.bare, h.full)
	ours := h.commits[len(h.commits)-1]
	more := randomHistory(t, h.full, rng, 15, false)
	thin := gitRaw(t, h.full, more[len(more)-1]+"\n^"+ours+"\n", "pack-objects", "--thin", "--stdout", "--revs", "-q")
	storeThinPack(t, h.bare, thin)
	h.commits = append(h.commits, more...)
	h.kinds = packKinds(t, filepath.Join(h.bare, "objects"))
	return h
}

// storeThinPack stores a thin pack as it came, in the objects of bare,
// with an index of its own objects only. git index-pack refuses a thin
// pack unless it completes it (--fix-thin appends the bases it lacks);
// the index of that completed copy gives the names, CRCs and offsets of
// the thin pack's own entries, which the appending leaves in place.
func storeThinPack(t testing.TB, bare string, thin []byte) {
	t.Helper()
	fixed := filepath.Join(t.TempDir(), "fixed.pack")
	cmd := exec.Command("git", "index-pack", "--stdin", "--fix-thin", fixed)
	cmd.Dir = bare
	cmd.Stdin = bytes.NewReader(thin)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git index-pack: %v: %s", err, out)
	}
	idx, err := os.ReadFile(strings.TrimSuffix(fixed, ".pack") + ".idx")
	if err != nil {
		t.Fatal(err)
	}
	var entries []idxEntry
	for line := range strings.Lines(string(gitRaw(t, bare, string(idx), "show-index"))) {
		var e idxEntry
		var name string
		if _, err := fmt.Sscanf(line, "%d %s (%x)", &e.offset, &name, &e.crc); err != nil {
			t.Fatalf("git show-index: %q: %v", line, err)
		}
		e.name = plumbing.NewHash(name)
		if e.offset < int64(len(thin))-20 {
			entries = append(entries, e)
		}
	}
	sum := thin[len(thin)-20:]
	base := filepath.Join(bare, "objects", "pack", fmt.Sprintf("pack-%x", sum))
	if err := os.WriteFile(base+".pack", thin, 0o444); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(base+".idx", packIndexFor(entries, sum), 0o444); err != nil {
		t.Fatal(err)
	}
}

// TestTreeDiffMatchesGit compares the tree diff with git diff-tree on
// random histories stored as newStoredHistory does. Every pair of commits
// of a sample must give git's list, in git's order, with its modes and
// hashes.
func TestTreeDiffMatchesGit(t *testing.T) {
	t.Parallel()
	for _, byName := range []bool{false, true} {
		t.Run(fmt.Sprintf("refDeltas=%v", byName), func(t *testing.T) {
			t.Parallel()
			rng := rand.New(rand.NewPCG(7, map[bool]uint64{false: 1, true: 2}[byName]))
			h := newStoredHistory(t, rng, byName)
			if h.kinds[plumbing.OFSDeltaObject] < 20 && !byName || h.kinds[plumbing.REFDeltaObject] < 20 {
				t.Fatalf("the packs hold %v: want many deltas", h.kinds)
			}
			repo, err := git.PlainOpen(h.bare)
			if err != nil {
				t.Fatal(err)
			}
			r := &Repo{repo: repo, objects: filepath.Join(h.bare, "objects")}
			// With no pack folder to read, go-git's store answers.
			logger, logs := newLogger()
			fallback := &Repo{repo: repo, objects: t.TempDir(), log: logger}
			for i := range 150 {
				from, to := h.commits[rng.IntN(len(h.commits))], h.commits[rng.IntN(len(h.commits))]
				want := testgit.Git(t, h.full, "diff-tree", "-r", "--raw", "--no-abbrev", "--no-renames", "--no-commit-id", from, to)
				got, err := packedDiff(t, r, plumbing.NewHash(from), plumbing.NewHash(to))
				if err != nil {
					t.Fatalf("diff %.7s..%.7s: %v", from, to, err)
				}
				if diff := cmp.Diff(strings.TrimSpace(want), rawDiff(got)); diff != "" {
					t.Fatalf("diff %.7s..%.7s (-git +ours):\n%s", from, to, diff)
				}
				if i%10 != 0 {
					continue
				}
				got, err = fallback.diffUncached(nil, plumbing.NewHash(from), plumbing.NewHash(to))
				if err != nil {
					t.Fatalf("diff %.7s..%.7s through go-git: %v", from, to, err)
				}
				slices.SortFunc(got, func(a, b treeChange) int { return strings.Compare(a.path, b.path) })
				wantSorted := strings.Split(strings.TrimSpace(want), "\n")
				slices.SortFunc(wantSorted, func(a, b string) int {
					return strings.Compare(a[strings.IndexByte(a, '\t'):], b[strings.IndexByte(b, '\t'):])
				})
				if diff := cmp.Diff(strings.Join(wantSorted, "\n"), rawDiff(got)); diff != "" {
					t.Fatalf("diff %.7s..%.7s through go-git (-git +go-git):\n%s", from, to, diff)
				}
			}
			if !strings.Contains(logs.String(), "reading the trees through go-git's store") {
				t.Errorf("no pack folder to read, and the log does not say go-git's store answered:\n%s", logs)
			}
		})
	}
}

// packedDiff is r.diffTreesPacked through a packSet of its own, with no
// fallback to go-git's store.
func packedDiff(t *testing.T, r *Repo, from, to plumbing.Hash) ([]treeChange, error) {
	t.Helper()
	ps, err := r.openPacks()
	if err != nil {
		t.Fatal(err)
	}
	defer ps.Close()
	return r.diffTreesPacked(ps, from, to)
}

// putObject writes an object into repo's store, loose, through go-git:
// git itself would check what it is given.
func putObject(t *testing.T, repo *git.Repository, typ plumbing.ObjectType, content []byte) plumbing.Hash {
	t.Helper()
	o := repo.Storer.NewEncodedObject()
	o.SetType(typ)
	w, _ := o.Writer()
	w.Write(content)
	w.Close()
	h, err := repo.Storer.SetEncodedObject(o)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// rawDiff prints changes as git diff-tree --raw --no-abbrev does.
func rawDiff(changes []treeChange) string {
	var b strings.Builder
	for i, c := range changes {
		status := "M"
		switch {
		case c.from.Hash.IsZero():
			status = "A"
		case c.to.Hash.IsZero():
			status = "D"
		case c.from.Mode&0o170000 != c.to.Mode&0o170000:
			status = "T"
		}
		if i > 0 {
			b.WriteByte('\n')
		}
		fmt.Fprintf(&b, ":%06o %06o %s %s %s\t%s", uint32(c.from.Mode), uint32(c.to.Mode), c.from.Hash, c.to.Hash, status, c.path)
	}
	return b.String()
}

// TestPackSetReadsEveryObject reads every object of a repository stored
// as newStoredHistory does, and compares each with git cat-file; the
// thin pack's deltas must name bases both in the other pack and loose.
// An object no pack lists is errNotPacked, and one whose delta is
// damaged an error naming it and its pack.
func TestPackSetReadsEveryObject(t *testing.T) {
	t.Parallel()
	h := newStoredHistory(t, rand.New(rand.NewPCG(3, 4)), false)
	bare, objects := h.bare, filepath.Join(h.bare, "objects")
	repo, err := git.PlainOpen(bare)
	if err != nil {
		t.Fatal(err)
	}
	ps, err := openPackSet(objects)
	if err != nil {
		t.Fatal(err)
	}
	defer ps.Close()
	ps.loose = (&Repo{repo: repo}).looseObject
	elsewhere, loose := 0, 0
	for _, p := range ps.packs {
		if err := p.open(); err != nil {
			t.Fatal(err)
		}
		for k := range len(p.idx.names) / 20 {
			off, _ := p.idx.find(plumbing.Hash(p.idx.names[k*20 : k*20+20]))
			e, err := readStoredEntry(p.f, off, false)
			if err != nil {
				t.Fatal(err)
			}
			if e.t != plumbing.REFDeltaObject {
				continue
			}
			if _, err := p.idx.find(e.ref); err == nil {
				continue
			}
			hex := e.ref.String()
			if _, err := os.Stat(filepath.Join(objects, hex[:2], hex[2:])); err == nil {
				loose++
			} else {
				elsewhere++
			}
		}
	}
	if elsewhere == 0 || loose == 0 {
		t.Fatalf("the thin pack's deltas name %d bases in another pack and %d loose; want both", elsewhere, loose)
	}
	var aDelta plumbing.Hash
	n, skipped := 0, 0
	for line := range strings.Lines(testgit.Git(t, h.full, "cat-file", "--batch-all-objects", "--batch-check=%(objectname) %(objecttype)")) {
		f := strings.Fields(line)
		oh := plumbing.NewHash(f[0])
		if _, err := os.Stat(filepath.Join(objects, f[0][:2], f[0][2:])); err == nil {
			skipped++ // loose
			continue
		}
		typ, content, err := ps.object(oh)
		if err != nil {
			t.Errorf("%s (%s): %v", f[0], f[1], err)
			continue
		}
		n++
		if typ.String() != f[1] || !bytes.Equal(content, gitRaw(t, h.full, "", "cat-file", f[1], f[0])) {
			t.Errorf("%s: got a %s of %d bytes, git has a %s", f[0], typ, len(content), f[1])
		}
		if f[1] == "tree" {
			for _, p := range ps.packs {
				if off, err := p.idx.find(oh); err == nil {
					if e, _ := readStoredEntry(p.f, off, false); e.t == plumbing.OFSDeltaObject {
						aDelta = oh
					}
				}
			}
		}
	}
	if n < 200 || skipped == 0 || aDelta.IsZero() {
		t.Fatalf("read %d packed objects (%d loose), a tree stored as a delta: %v; want more", n, skipped, aDelta)
	}
	if _, _, err := ps.object(plumbing.NewHash(strings.Repeat("ab", 20))); !errors.Is(err, errNotPacked) {
		t.Errorf("an object no pack lists: err = %v, want errNotPacked", err)
	}

	// Damage the delta's instructions, in a copy of its pack: every way
	// of reading it must fail, naming the object and the pack.
	var p *setPack
	var off int64
	for _, q := range ps.packs {
		if o, err := q.idx.find(aDelta); err == nil {
			p, off = q, o
		}
	}
	raw, err := os.ReadFile(p.base + ".pack")
	if err != nil {
		t.Fatal(err)
	}
	// Past the entry's header: its type and size, and the distance back
	// to its base.
	data := off + 1
	for raw[data-1]&0x80 != 0 {
		data++
	}
	for data++; raw[data-1]&0x80 != 0; data++ {
	}
	readDamaged := func(pack []byte, idx *packIndex, h plumbing.Hash) error {
		dps := &packSet{packs: []*setPack{{base: p.base, f: bytesPack{bytes.NewReader(pack)}, idx: idx}}, cache: baseCache{limit: packSetCache}}
		_, _, err := dps.object(h)
		return err
	}
	if err := readDamaged(raw, p.idx, aDelta); err != nil {
		t.Fatalf("the undamaged copy: %v", err)
	}
	for _, at := range []int64{data + 2, data + 5, data + 9} {
		damaged := bytes.Clone(raw)
		damaged[at] ^= 0x24
		err := readDamaged(damaged, p.idx, aDelta)
		switch {
		case err == nil:
			t.Errorf("byte %d of the delta's data changed: read without an error", at-data)
		case !strings.Contains(err.Error(), aDelta.String()[:7]) || !strings.Contains(err.Error(), filepath.Base(p.base)):
			t.Errorf("byte %d of the delta's data changed: err = %v, want one naming %.7s and %s", at-data, err, aDelta, filepath.Base(p.base))
		case errors.Is(err, errNotPacked) || strings.Contains(err.Error(), "no pack"):
			t.Errorf("byte %d of the delta's data changed: err = %v, want the damage, not a missing base", at-data, err)
		}
	}

	// An index that lists one object under another's name: what is read
	// does not hash to the name asked for.
	var entries []idxEntry
	names := p.idx.names
	for k := range len(names) / 20 {
		h := plumbing.Hash(names[k*20 : k*20+20])
		o, _ := p.idx.find(h)
		entries = append(entries, idxEntry{name: h, offset: o})
	}
	entries[0].offset, entries[1].offset = entries[1].offset, entries[0].offset
	swapped, err := parsePackIndex(packIndexFor(entries, raw[len(raw)-20:]))
	if err != nil {
		t.Fatal(err)
	}
	if err := readDamaged(raw, swapped, entries[0].name); !errors.Is(err, errDamaged) || !strings.Contains(err.Error(), entries[0].name.String()[:7]) {
		t.Errorf("an object read under another's name: err = %v, want errDamaged naming %.7s", err, entries[0].name)
	}
}

// refDeltaEntry encodes a REF_DELTA entry of a pack: its header, the name
// of its base, and its instructions compressed.
func refDeltaEntry(base plumbing.Hash, delta []byte) []byte {
	n := len(delta)
	b := []byte{byte(plumbing.REFDeltaObject)<<4 | byte(n&15)}
	for n >>= 4; n > 0; n >>= 7 {
		b[len(b)-1] |= 0x80
		b = append(b, byte(n&0x7f))
	}
	b = append(b, base[:]...)
	var z bytes.Buffer
	zw := zlib.NewWriter(&z)
	zw.Write(delta)
	zw.Close()
	return append(b, z.Bytes()...)
}

// TestPackSetRefuses reads packs a damaged store could hold: two deltas
// each naming the other as its base, and a chain of deltas too large to
// hold. Each read fails at once, with an error that says why.
func TestPackSetRefuses(t *testing.T) {
	x := plumbing.NewHash(strings.Repeat("11", 20))
	y := plumbing.NewHash(strings.Repeat("22", 20))
	delta := append(binary.AppendUvarint(binary.AppendUvarint(nil, 3), 3), 0x90, 3) // copy all 3 bytes
	hdr := packHeader(2)
	pack := append([]byte(nil), hdr[:]...)
	ex := refDeltaEntry(y, delta)
	ey := refDeltaEntry(x, delta)
	pack = append(append(pack, ex...), ey...)
	sum := sha1.Sum(pack)
	pack = append(pack, sum[:]...)
	rawIdx := packIndexFor([]idxEntry{{name: x, offset: 12}, {name: y, offset: 12 + int64(len(ex))}}, sum[:])
	idx, err := parsePackIndex(rawIdx)
	if err != nil {
		t.Fatal(err)
	}
	ps := &packSet{packs: []*setPack{{base: "pack-test", f: bytesPack{bytes.NewReader(pack)}, idx: idx}}, cache: baseCache{limit: packSetCache}}
	if _, _, err := ps.object(x); !errors.Is(err, errDamaged) || !strings.Contains(err.Error(), "its own base") {
		t.Errorf("two deltas based on each other: err = %v, want a cycle, errDamaged", err)
	}
	// In a working copy's objects, neither a blob read nor a tree diff
	// may hand the cycle to go-git's store, which follows it until its
	// stack overflows.
	bare := testgit.NewBare(t, map[string]string{"seed.yaml": "seed\n"})
	base := filepath.Join(bare, "objects", "pack", fmt.Sprintf("pack-%x", sum))
	if err := os.WriteFile(base+".pack", pack, 0o444); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(base+".idx", rawIdx, 0o444); err != nil {
		t.Fatal(err)
	}
	repo, err := git.PlainOpen(bare)
	if err != nil {
		t.Fatal(err)
	}
	r := &Repo{repo: repo, objects: filepath.Join(bare, "objects"), log: slog.New(slog.DiscardHandler)}
	wps, err := r.openPacks()
	if err != nil {
		t.Fatal(err)
	}
	defer wps.Close()
	if _, err := r.entryContent(wps, "cycle.yaml", object.TreeEntry{Hash: x, Mode: filemode.Regular}); !errors.Is(err, errDamaged) {
		t.Errorf("a blob whose deltas form a cycle: err = %v, want errDamaged", err)
	}
	// (git itself would spend minutes on the cycle: the tree and the
	// commit are written through go-git's store.)
	put := func(typ plumbing.ObjectType, content []byte) plumbing.Hash { return putObject(t, repo, typ, content) }
	main := plumbing.NewHash(testgit.Git(t, bare, "rev-parse", "main"))
	tree := put(plumbing.TreeObject, append([]byte("40000 dir\x00"), x[:]...))
	c := put(plumbing.CommitObject, []byte("tree "+tree.String()+"\nparent "+main.String()+"\nauthor a <a@b> 1 +0000\ncommitter a <a@b> 1 +0000\n\nc\n"))
	if _, err := r.diffUncached(nil, main, c); !errors.Is(err, errDamaged) {
		t.Errorf("a folder whose tree's deltas form a cycle: err = %v, want errDamaged", err)
	}
	if len(ps.resolving) != 0 || ps.held != 0 {
		t.Errorf("after the failed read, %d entries are still being resolved, holding %d bytes", len(ps.resolving), ps.held)
	}
	ps.held = maxChainBytes - 1
	if _, _, err := ps.object(y); err == nil || !strings.Contains(err.Error(), "MiB") {
		t.Errorf("a chain past maxChainBytes: err = %v, want one saying so", err)
	}
}

// TestTreeDiffModesAndDepth diffs trees written byte by byte: entries
// with modes git writes no more (100664, 100775, a folder as 040755),
// which must be read as go-git and git read them; and a tree more than
// maxTreeDepth folders deep, which the pack reader leaves to go-git.
func TestTreeDiffModesAndDepth(t *testing.T) {
	bare := testgit.NewBare(t, map[string]string{"seed.yaml": "seed\n"})
	repo, err := git.PlainOpen(bare)
	if err != nil {
		t.Fatal(err)
	}
	put := func(typ plumbing.ObjectType, content []byte) plumbing.Hash { return putObject(t, repo, typ, content) }
	tree := func(entries ...string) plumbing.Hash { // "mode name" and a hash, in turn
		var b []byte
		for i := 0; i < len(entries); i += 2 {
			h := plumbing.NewHash(entries[i+1])
			b = append(append(append(b, entries[i]...), 0), h[:]...)
		}
		return put(plumbing.TreeObject, b)
	}
	commit := func(tr plumbing.Hash) plumbing.Hash {
		return put(plumbing.CommitObject, []byte("tree "+tr.String()+"\nauthor a <a@b> 1 +0000\ncommitter a <a@b> 1 +0000\n\nc\n"))
	}
	blob := put(plumbing.BlobObject, []byte("x\n")).String()
	other := put(plumbing.BlobObject, []byte("y\n")).String()
	inner := tree("100644 f", blob).String()
	c1 := commit(tree("100644 a", blob, "100755 b", blob, "40000 d", inner, "100644 e", blob))
	c2 := commit(tree("100664 a", blob, "100775 b", other, "40755 d", inner, "100664 e", other))
	testgit.Git(t, bare, "update-ref", "refs/heads/modes", c2.String())
	r := &Repo{repo: repo, objects: filepath.Join(bare, "objects"), log: slog.New(slog.DiscardHandler)}
	got, err := r.diffUncached(nil, c1, c2)
	if err != nil {
		t.Fatal(err)
	}
	want := testgit.Git(t, bare, "diff-tree", "-r", "--raw", "--no-abbrev", "--no-renames", "--no-commit-id", c1.String(), c2.String())
	if diff := cmp.Diff(strings.TrimSpace(want), rawDiff(got)); diff != "" {
		t.Errorf("modes git writes no more (-git +ours):\n%s", diff)
	}
	all, err := r.diffUncached(nil, plumbing.ZeroHash, c2)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff("100644 a\n100755 b\n100644 d/f\n100644 e", entryList(all)); diff != "" {
		t.Errorf("the files of a tree with such modes (-want +got):\n%s", diff)
	}

	// A file maxTreeDepth+1 folders down.
	deep := tree("100644 f", blob)
	for range maxTreeDepth + 1 {
		deep = tree("40000 d", deep.String())
	}
	c3 := commit(deep)
	if _, err := packedDiff(t, r, plumbing.ZeroHash, c3); err == nil || !strings.Contains(err.Error(), "folders deep") {
		t.Errorf("a tree %d folders deep: err = %v, want one saying it is too deep", maxTreeDepth+1, err)
	}
	// git refuses it too (core.maxTreeDepth, 2,048 by default): it is
	// not handed to go-git, whose walk would grow with it.
	if _, err := r.diffUncached(nil, plumbing.ZeroHash, c3); !errors.Is(err, errBadTree) || !strings.Contains(err.Error(), "core.maxTreeDepth") {
		t.Errorf("a tree %d folders deep: err = %v, want errBadTree naming core.maxTreeDepth", maxTreeDepth+1, err)
	}
	// Two folders less is read.
	deep = tree("100644 f", blob)
	for range maxTreeDepth - 1 {
		deep = tree("40000 d", deep.String())
	}
	files, err := r.diffUncached(nil, plumbing.ZeroHash, commit(deep))
	if err != nil || len(files) != 1 || len(files[0].path) != 2*maxTreeDepth-1 {
		t.Errorf("a tree %d folders deep: %d files, %v", maxTreeDepth-1, len(files), err)
	}
}

// entryList prints the new side of changes as "mode path" lines.
func entryList(changes []treeChange) string {
	var lines []string
	for _, c := range changes {
		lines = append(lines, fmt.Sprintf("%o %s", uint32(c.to.Mode), c.path))
	}
	return strings.Join(lines, "\n")
}

// TestApplyDelta builds objects from hand-made deltas, git's format, and
// refuses the malformed ones.
func TestApplyDelta(t *testing.T) {
	base := []byte("0123456789abcdefghij")
	big := bytes.Repeat([]byte("x"), 0x10000+5)
	hdr := func(src, dst int) []byte {
		return binary.AppendUvarint(binary.AppendUvarint(nil, uint64(src)), uint64(dst))
	}
	cat := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
	tests := []struct {
		name  string
		base  []byte
		delta []byte
		want  string // the result, or "error: " and a part of the message
	}{
		{"insert only", base, cat(hdr(20, 3), []byte{3, 'n', 'e', 'w'}), "new"},
		{"copy offset and size", base, cat(hdr(20, 4), []byte{0x80 | 0x01 | 0x10, 10, 4}), "abcd"},
		{"copy with no bytes: offset 0, size 0x10000", big, cat(hdr(len(big), 0x10000), []byte{0x80}), string(big[:0x10000])},
		{"copy, insert, copy", base, cat(hdr(20, 7), []byte{0x91, 2, 2, 3, 'A', 'B', 'C', 0x91, 18, 2}), "23ABCij"},
		{"a two-byte size", big, cat(hdr(len(big), 0x101), []byte{0x80 | 0x10 | 0x20, 0x01, 0x01}), string(big[:0x101])},
		{"an offset's high bytes", big, cat(hdr(len(big), 2), []byte{0x80 | 0x04 | 0x10, 0x01, 2}), "xx"},
		{"the wrong base size", base, cat(hdr(19, 1), []byte{1, 'a'}), "error: base of 19 bytes"},
		{"the reserved instruction", base, cat(hdr(20, 1), []byte{0}), "error: reserved"},
		{"a copy past the base", base, cat(hdr(20, 5), []byte{0x91, 18, 5}), "error: outside"},
		{"a copy past the result", base, cat(hdr(20, 2), []byte{0x91, 0, 5}), "error: outside"},
		{"an insert past the delta", base, cat(hdr(20, 5), []byte{5, 'a'}), "error: outside"},
		{"a copy cut short", base, cat(hdr(20, 5), []byte{0x91, 0}), "error: cut short"},
		{"a result shorter than it says", base, cat(hdr(20, 5), []byte{1, 'a'}), "error: of 1 bytes, where it says 5"},
		{"no header", base, nil, "error: header"},
		{"a result too large", base, cat(hdr(20, maxPackedRead+1)), "error: " + errNotWhole.Error()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := applyDelta(tt.base, tt.delta)
			if msg, isErr := strings.CutPrefix(tt.want, "error: "); isErr {
				if err == nil || !strings.Contains(err.Error(), msg) {
					t.Fatalf("err = %v, want one with %q", err, msg)
				}
				return
			}
			if err != nil || string(got) != tt.want {
				t.Fatalf("got %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

// FuzzApplyDelta: any delta either fails or gives a result of the size
// it declares; none panics.
func FuzzApplyDelta(f *testing.F) {
	f.Add([]byte("0123456789"), []byte{10, 4, 0x91, 2, 2, 2, 'a', 'b'})
	f.Add([]byte("x"), []byte{1, 0x80, 0x80, 0x04, 0x80})
	f.Fuzz(func(t *testing.T, base, delta []byte) {
		out, err := applyDelta(base, delta)
		if err != nil {
			return
		}
		_, n := binary.Uvarint(delta)
		want, _ := binary.Uvarint(delta[n:])
		if uint64(len(out)) != want {
			t.Fatalf("a result of %d bytes from a delta declaring %d", len(out), want)
		}
	})
}

// FuzzParseTree: a tree that parses is in git's order, and written back
// parses to the same entries; none panics.
func FuzzParseTree(f *testing.F) {
	h := strings.Repeat("\x01", 20)
	f.Add([]byte("100644 a\x00" + h + "40000 b\x00" + h))
	f.Add([]byte("100644 a\x00" + h + "100644 a-b\x00" + h + "40000 a\x00" + h))
	f.Add([]byte("40000 a\x00" + h + "100644 a\x00" + h))
	f.Fuzz(func(t *testing.T, content []byte) {
		entries, err := parseTree(content)
		if err != nil {
			return
		}
		var back []byte
		names := map[string]bool{}
		for i, e := range entries {
			if i > 0 && compareEntries(entries[i-1], e) >= 0 {
				t.Fatalf("entries %q and %q out of order", entries[i-1].name, e.name)
			}
			if err := checkEntryName(string(e.name)); err != nil || names[string(e.name)] {
				t.Fatalf("parsed an entry %q git refuses to check out (%v), or a name twice", e.name, err)
			}
			names[string(e.name)] = true
			back = fmt.Appendf(back, "%o %s\x00", uint32(e.mode), e.name)
			back = append(back, e.hash[:]...)
		}
		again, err := parseTree(back)
		if err != nil || !cmp.Equal(entries, again, cmp.AllowUnexported(storedEntry{})) {
			t.Fatalf("parsed %q, which written back parses to %v, %v", content, again, err)
		}
	})
}

// FuzzHFSDot: what HFS+ takes for ".git" or ".gitmodules" does not
// change when a code point it ignores is put between two others, or when
// ASCII letters change case; and a name in UTF-8 is taken exactly when
// its code points, less those HFS+ ignores and up to a U+FFFE or U+FFFF
// (which git does not read), are "." and the needle in any ASCII case.
// None panics.
func FuzzHFSDot(f *testing.F) {
	f.Add([]byte(".g\u200cit"), uint8(2), false)
	f.Add([]byte(".GitModules\ufeff"), uint8(5), true)
	f.Add([]byte(".git\uffffx"), uint8(1), false)
	f.Add([]byte(".git\xff"), uint8(1), false)
	f.Fuzz(func(t *testing.T, name []byte, at uint8, modules bool) {
		needle := "git"
		if modules {
			needle = "gitmodules"
		}
		got := hfsDot(name, needle)
		upper := bytes.Clone(name)
		for i, c := range upper {
			if c >= 'a' && c <= 'z' {
				upper[i] = c - 'a' + 'A'
			}
		}
		if hfsDot(upper, needle) != got {
			t.Fatalf("hfsDot(%q) = %v, but %v for %q", name, got, !got, upper)
		}
		if !utf8.Valid(name) {
			return
		}
		runes := []rune(string(name))
		i := int(at) % (len(runes) + 1)
		inserted := string(runes[:i]) + "\u202d" + string(runes[i:])
		if hfsDot([]byte(inserted), needle) != got {
			t.Fatalf("hfsDot(%q) = %v, but %v for %q", name, got, !got, inserted)
		}
		var visible []rune
		for _, r := range runes {
			if r == 0xfffe || r == 0xffff {
				break
			}
			if !(r >= 0x200c && r <= 0x200f || r >= 0x202a && r <= 0x202e || r >= 0x206a && r <= 0x206f || r == 0xfeff) {
				visible = append(visible, r)
			}
		}
		want := len(visible) == len(needle)+1
		for k, r := range visible {
			if !want {
				break
			}
			if r >= 'A' && r <= 'Z' {
				r += 'a' - 'A'
			}
			want = r == rune(("." + needle)[k])
		}
		if got != want {
			t.Fatalf("hfsDot(%q) = %v; its code points HFS+ sees are %q", name, got, string(visible))
		}
	})
}

// FuzzPackSet reads an object through a packSet from damaged index and
// pack bytes: every read either fails or gives an object that hashes to
// the name asked for; none panics, loops, or allocates what a damaged
// size claims. The seed is a pack git made with deltas, and the name
// one of its trees stored as a delta.
func FuzzPackSet(f *testing.F) {
	h := newStoredHistory(f, rand.New(rand.NewPCG(9, 9)), false)
	ps, err := openPackSet(filepath.Join(h.bare, "objects"))
	if err != nil {
		f.Fatal(err)
	}
	for _, p := range ps.packs {
		if err := p.open(); err != nil {
			f.Fatal(err)
		}
		idx, err := os.ReadFile(p.base + ".idx")
		if err != nil {
			f.Fatal(err)
		}
		pack, err := os.ReadFile(p.base + ".pack")
		if err != nil {
			f.Fatal(err)
		}
		// A delta of each kind the pack holds: by offset in the packed
		// history, by name in the thin pack.
		seeded := map[plumbing.ObjectType]bool{}
		for k := range len(p.idx.names) / 20 {
			name := p.idx.names[k*20 : k*20+20]
			off, _ := p.idx.find(plumbing.Hash(name))
			if e, _ := readStoredEntry(p.f, off, false); (e.t == plumbing.REFDeltaObject || e.t == plumbing.OFSDeltaObject) && !seeded[e.t] {
				seeded[e.t] = true
				f.Add(idx, pack, bytes.Clone(name))
			}
		}
	}
	ps.Close()
	f.Fuzz(func(t *testing.T, idx, pack, name []byte) {
		if len(name) != 20 {
			return
		}
		ix, err := parsePackIndex(idx)
		if err != nil {
			return
		}
		ps := &packSet{packs: []*setPack{{f: bytesPack{bytes.NewReader(pack)}, idx: ix}}, cache: baseCache{limit: 1 << 20}}
		typ, content, err := ps.object(plumbing.Hash(name))
		if len(ps.resolving) != 0 || ps.held != 0 {
			t.Fatalf("after a read (err %v), %d entries are still being resolved, holding %d bytes", err, len(ps.resolving), ps.held)
		}
		if err == nil && objectHash(typ, content) != plumbing.Hash(name) {
			t.Fatalf("read a %s of %d bytes that does not hash to %x", typ, len(content), name)
		}
	})
}

// bytesPack is a pack held in memory.
type bytesPack struct{ *bytes.Reader }

func (bytesPack) Close() error { return nil }

// TestOpenReclonesForMisnamedBlob damages a working copy's pack index so
// that it gives the offset of app.yaml's blob for web.yaml's name; then
// someone else copies web.yaml over app.yaml, so that the next Open's
// checkout reads that blob from the damaged pack (the fetch does not
// bring it again). go-git's store reads what the index points at without
// checking it, so the checkout wrote app.yaml's old content back; the
// pack reader finds that it does not hash to its name, and Open clones
// afresh instead of resetting through go-git's store. Met by the sync of
// an Update or a Clean, which cannot clone, the damage makes Close empty
// the working copy, so that the next Open clones. Reset: with no new
// commit, a changed app.yaml makes Open hard-reset the worktree, which
// reads app.yaml's blob through the damaged index: go-git's reset wrote
// web.yaml's content there and recorded it clean; now Open clones afresh.
func TestOpenReclonesForMisnamedBlob(t *testing.T) {
	for _, via := range []string{"Open", "Update", "Reset"} {
		t.Run(via, func(t *testing.T) { testMisnamedBlob(t, via) })
	}
}

func testMisnamedBlob(t *testing.T, via string) {
	bare := testgit.NewBare(t, seed)
	workdir := t.TempDir()
	opts := Options{URL: fileURL(bare), Branch: "main", Workdir: workdir}
	r := mustOpen(t, opts)
	r.Close()

	app := plumbing.NewHash(testgit.Git(t, bare, "rev-parse", "main:clusters/prod/app.yaml"))
	web := plumbing.NewHash(testgit.Git(t, bare, "rev-parse", "main:clusters/prod/web.yaml"))
	swapPacked(t, workdir, app, web)
	logger, logs := newLogger()
	opts.Logger = logger
	if via == "Update" {
		r = mustOpen(t, opts)
	}
	want := seed["clusters/prod/web.yaml"]
	if via == "Reset" {
		// No new commit: a changed file makes Open reset the worktree,
		// which reads app.yaml's blob.
		want = seed["clusters/prod/app.yaml"]
		write(t, filepath.Join(workdir, "clusters", "prod", "app.yaml"), "image: app:6.6.6\n")
	} else {
		testgit.Commit(t, bare, "main", map[string]string{"clusters/prod/app.yaml": want}, nil, "app as web")
	}
	if via == "Update" {
		// What an Update does when its push finds the remote moved.
		if err := r.fetch(t.Context()); err != nil {
			t.Fatal(err)
		}
		if err := r.sync(true); !errors.Is(err, errDamaged) {
			t.Fatalf("the sync after the fetch: err = %v, want errDamaged", err)
		}
		if err := r.Close(); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(logs.String(), "emptying the working copy: an object in it does not hash to its name") {
			t.Errorf("Close after the damage did not empty the working copy:\n%s", logs)
		}
	}
	r = mustOpen(t, opts)
	defer r.Close()
	if via != "Update" && (!strings.Contains(logs.String(), "re-cloning the working copy") || !strings.Contains(logs.String(), "does not match its name")) {
		t.Errorf("Open on a misnamed blob did not clone afresh, saying why:\n%s", logs)
	}
	checkWorkdir(t, workdir, bare, mainSHA(t, bare))
	if got, _ := os.ReadFile(filepath.Join(workdir, "clusters", "prod", "app.yaml")); string(got) != want {
		t.Errorf("app.yaml holds %q after Open, want %q", got, want)
	}
}

// swapPacked rewrites the working copy's one pack index so that it gives
// each of objects a and b the other's offset: both are read, without
// error, as the other's content.
func swapPacked(t *testing.T, workdir string, a, b plumbing.Hash) {
	t.Helper()
	idxs, _ := filepath.Glob(filepath.Join(workdir, ".git", "objects", "pack", "*.idx"))
	if len(idxs) != 1 {
		t.Fatalf("%d pack indexes, want the clone's", len(idxs))
	}
	raw, err := os.ReadFile(idxs[0])
	if err != nil {
		t.Fatal(err)
	}
	ix, err := parsePackIndex(raw)
	if err != nil {
		t.Fatal(err)
	}
	n := len(ix.names) / 20
	crcs := raw[8+256*4+n*20:]
	var entries []idxEntry
	for k := range n {
		h := plumbing.Hash(ix.names[k*20 : k*20+20])
		off, _ := ix.find(h)
		entries = append(entries, idxEntry{name: h, crc: binary.BigEndian.Uint32(crcs[k*4:]), offset: off})
	}
	ia, ib := -1, -1
	for k, e := range entries {
		switch e.name {
		case a:
			ia = k
		case b:
			ib = k
		}
	}
	if ia < 0 || ib < 0 {
		t.Fatalf("the pack does not list both %s and %s", a, b)
	}
	entries[ia].offset, entries[ib].offset = entries[ib].offset, entries[ia].offset
	entries[ia].crc, entries[ib].crc = entries[ib].crc, entries[ia].crc
	_ = os.Chmod(idxs[0], 0o644)
	if err := os.WriteFile(idxs[0], packIndexFor(entries, raw[len(raw)-40:len(raw)-20]), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestUpdateDiscardsForMisnamedTree damages a working copy's pack index so
// that the clusters and clusters/prod trees are read as each other.
// Open, with nothing new, reads only the root tree; the Update that follows builds
// its commit on them, and must fail without pushing. The old code failed
// the same way in every later cycle; now Close empties the working copy,
// and the next cycle clones afresh and commits.
func TestUpdateDiscardsForMisnamedTree(t *testing.T) {
	bare := testgit.NewBare(t, seed)
	workdir := t.TempDir()
	opts := Options{URL: fileURL(bare), Branch: "main", Workdir: workdir}
	mustOpen(t, opts).Close()
	clusters := plumbing.NewHash(testgit.Git(t, bare, "rev-parse", "main:clusters"))
	prod := plumbing.NewHash(testgit.Git(t, bare, "rev-parse", "main:clusters/prod"))
	swapPacked(t, workdir, clusters, prod)
	edit := func(_ context.Context, dir string) ([]string, string, error) {
		return []string{"clusters/prod/app.yaml"}, "bump app", os.WriteFile(filepath.Join(dir, "clusters", "prod", "app.yaml"), []byte("image: app:2.0.0\n"), 0o644)
	}
	before := mainSHA(t, bare)

	logger, logs := newLogger()
	opts.Logger = logger
	r := mustOpen(t, opts)
	if _, err := r.Update(t.Context(), Update{Commit: author}, edit); !errors.Is(err, errDamaged) {
		t.Fatalf("Update on a misnamed tree: err = %v, want errDamaged", err)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if got := mainSHA(t, bare); got != before {
		t.Fatalf("an Update on a misnamed tree pushed %s", got)
	}
	if !strings.Contains(logs.String(), "emptying the working copy: an object in it does not hash to its name") {
		t.Errorf("Close after the damage did not empty the working copy:\n%s", logs)
	}

	r = mustOpen(t, opts)
	defer r.Close()
	res, err := r.Update(t.Context(), Update{Commit: author}, edit)
	if err != nil || !res.Pushed {
		t.Fatalf("the Update after a fresh clone: pushed %v, err %v", res != nil && res.Pushed, err)
	}
	checkWorkdir(t, workdir, bare, mainSHA(t, bare))
	if got, _ := testgit.ReadFile(t, bare, "main", "README.md"); got != seed["README.md"] {
		t.Errorf("README.md in the pushed commit = %q, want %q", got, seed["README.md"])
	}
}

// TestChangesDiscardsForMisnamedTree: Changes from a commit whose trees
// no Open has read meets a damaged pack index (the commit's clusters and
// clusters/prod trees read as each other). It fails, and Close empties
// the working copy for the next Open to clone afresh.
func TestChangesDiscardsForMisnamedTree(t *testing.T) {
	bare := testgit.NewBare(t, seed)
	first := mainSHA(t, bare)
	clusters := plumbing.NewHash(testgit.Git(t, bare, "rev-parse", "main:clusters"))
	prod := plumbing.NewHash(testgit.Git(t, bare, "rev-parse", "main:clusters/prod"))
	testgit.Commit(t, bare, "main", map[string]string{"clusters/prod/app.yaml": "image: app:2.0.0\n"}, nil, "bump")
	workdir := t.TempDir()
	logger, logs := newLogger()
	opts := Options{URL: fileURL(bare), Branch: "main", Workdir: workdir, Depth: -1, Logger: logger}
	mustOpen(t, opts).Close()
	swapPacked(t, workdir, clusters, prod)

	r := mustOpen(t, opts)
	if _, err := r.Changes(first); !errors.Is(err, errDamaged) {
		t.Fatalf("Changes through a misnamed tree: err = %v, want errDamaged", err)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(logs.String(), "emptying the working copy: an object in it does not hash to its name") {
		t.Errorf("Close after the damage did not empty the working copy:\n%s", logs)
	}
}

// TestRestoreAndRemovalCheckTrees: with the clusters/prod tree and
// another (clusters, or other) read as each other (a damaged pack index),
// Restore of a file under them, and an Update whose edit removes the
// folder clusters/prod, read those trees. go-git's readers, which they used, did not check
// them: Restore deleted a file the head holds and said nothing, and the
// Update pushed a commit listing the wrong files. Now both fail with
// errDamaged, touch nothing, and Close empties the working copy.
func TestRestoreAndRemovalCheckTrees(t *testing.T) {
	for _, via := range []string{"Restore", "removal"} {
		t.Run(via, func(t *testing.T) {
			files := maps.Clone(seed)
			files["other/x.yaml"] = "x: 1\n"
			bare := testgit.NewBare(t, files)
			workdir := t.TempDir()
			logger, logs := newLogger()
			opts := Options{URL: fileURL(bare), Branch: "main", Workdir: workdir, Logger: logger}
			mustOpen(t, opts).Close()
			// Restore reads clusters and then clusters/prod; the removal
			// reads clusters/prod's files, its parents being sound.
			a := plumbing.NewHash(testgit.Git(t, bare, "rev-parse", "main:clusters"))
			if via == "removal" {
				a = plumbing.NewHash(testgit.Git(t, bare, "rev-parse", "main:other"))
			}
			prod := plumbing.NewHash(testgit.Git(t, bare, "rev-parse", "main:clusters/prod"))
			swapPacked(t, workdir, a, prod)
			before := mainSHA(t, bare)
			app := filepath.Join(workdir, "clusters", "prod", "app.yaml")

			r := mustOpen(t, opts)
			var err error
			if via == "Restore" {
				err = r.Restore([]string{"clusters/prod/app.yaml"})
			} else {
				_, err = r.Update(t.Context(), Update{Commit: author}, func(_ context.Context, dir string) ([]string, string, error) {
					return []string{"clusters/prod"}, "drop prod", os.RemoveAll(filepath.Join(dir, "clusters", "prod"))
				})
			}
			if !errors.Is(err, errDamaged) {
				t.Fatalf("%s through misnamed trees: err = %v, want errDamaged", via, err)
			}
			if _, statErr := os.Stat(app); via == "Restore" && statErr != nil {
				t.Errorf("Restore through misnamed trees deleted app.yaml: %v", statErr)
			}
			if err := r.Close(); err != nil {
				t.Fatal(err)
			}
			if got := mainSHA(t, bare); got != before {
				t.Errorf("%s through misnamed trees pushed %s", via, got)
			}
			if !strings.Contains(logs.String(), "emptying the working copy: an object in it does not hash to its name") {
				t.Errorf("Close after the damage did not empty the working copy:\n%s", logs)
			}
		})
	}
}
