package gitwriter

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
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
			off, ok := p.idx.find(plumbing.Hash(p.idx.names[k*20 : k*20+20]))
			if !ok {
				t.Fatalf("the index of %s does not find its own entry %d", p.base, k)
			}
			e, err := readStoredEntry(p.f, off)
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
				got, err := r.diffTreesPacked(plumbing.NewHash(from), plumbing.NewHash(to))
				if err != nil {
					t.Fatalf("diff %.7s..%.7s: %v", from, to, err)
				}
				if diff := cmp.Diff(strings.TrimSpace(want), rawDiff(got)); diff != "" {
					t.Fatalf("diff %.7s..%.7s (-git +ours):\n%s", from, to, diff)
				}
				if i%10 != 0 {
					continue
				}
				got, err = fallback.diffUncached(plumbing.NewHash(from), plumbing.NewHash(to))
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
			if !strings.Contains(logs.String(), "diffing the trees through go-git's store") {
				t.Errorf("no pack folder to read, and the log does not say go-git's store answered:\n%s", logs)
			}
		})
	}
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
			e, err := readStoredEntry(p.f, off)
			if err != nil {
				t.Fatal(err)
			}
			if e.t != plumbing.REFDeltaObject {
				continue
			}
			if _, ok := p.idx.find(e.ref); ok {
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
				if off, ok := p.idx.find(oh); ok {
					if e, _ := readStoredEntry(p.f, off); e.t == plumbing.OFSDeltaObject || e.t == plumbing.REFDeltaObject {
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
		if o, ok := q.idx.find(aDelta); ok {
			p, off = q, o
		}
	}
	raw, err := os.ReadFile(p.base + ".pack")
	if err != nil {
		t.Fatal(err)
	}
	e, err := readStoredEntry(bytes.NewReader(raw), off)
	if err != nil {
		t.Fatal(err)
	}
	for _, at := range []int64{off + 3, off + 8, off + 12} {
		damaged := bytes.Clone(raw)
		damaged[at] ^= 0x24
		dps := &packSet{packs: []*setPack{{base: p.base, f: nil, idx: p.idx}}, cache: baseCache{limit: packSetCache}}
		dir := t.TempDir()
		path := filepath.Join(dir, "damaged.pack")
		if err := os.WriteFile(path, damaged, 0o644); err != nil {
			t.Fatal(err)
		}
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		dps.packs[0].f = f
		_, content, err := dps.object(aDelta)
		f.Close()
		if err == nil {
			t.Errorf("a byte of the entry at %d changed (+%d): read %d bytes without an error (the entry is a %s)", off, at-off, len(content), e.t)
		} else if !strings.Contains(err.Error(), aDelta.String()[:7]) || !strings.Contains(err.Error(), filepath.Base(p.base)) {
			t.Errorf("a damaged delta: err = %v, want one naming %.7s and %s", err, aDelta, filepath.Base(p.base))
		}
	}
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
		for i, e := range entries {
			if i > 0 && compareEntries(entries[i-1], e) >= 0 {
				t.Fatalf("entries %q and %q out of order", entries[i-1].name, e.name)
			}
			back = fmt.Appendf(back, "%o %s\x00", uint32(e.mode), e.name)
			back = append(back, e.hash[:]...)
		}
		again, err := parseTree(back)
		if err != nil || !cmp.Equal(entries, again, cmp.AllowUnexported(storedEntry{})) {
			t.Fatalf("parsed %q, which written back parses to %v, %v", content, again, err)
		}
	})
}

// FuzzPackSet reads an object through a packSet from damaged index and
// pack bytes: every read either fails or gives an object that hashes to
// the name asked for; none panics, loops, or allocates what a damaged
// size claims. The seed is a pack git made with deltas, and the name
// one of its trees stored as a delta.
func FuzzPackSet(f *testing.F) {
	h := newStoredHistory(f, rand.New(rand.NewPCG(9, 9)), true)
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
		for k := range len(p.idx.names) / 20 {
			name := p.idx.names[k*20 : k*20+20]
			off, _ := p.idx.find(plumbing.Hash(name))
			if e, _ := readStoredEntry(p.f, off); e.t == plumbing.REFDeltaObject {
				f.Add(idx, pack, bytes.Clone(name))
				break
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
		_, _, _ = ps.object(plumbing.Hash(name)) // checked against the name inside
	})
}

// bytesPack is a pack held in memory.
type bytesPack struct{ *bytes.Reader }

func (bytesPack) Close() error { return nil }
