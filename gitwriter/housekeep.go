package gitwriter

import (
	"bufio"
	"bytes"
	"compress/zlib"
	"crypto/sha1"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/format/idxfile"
	"github.com/go-git/go-git/v5/plumbing/format/objfile"

	"github.com/imagebump/imagebump/internal/durable"
)

// Housekeeping of a working copy's object store.
//
// Every commit imagebump makes stores its objects loose, one file each (a
// policy move in a 50,000-file repository: 92 files, 440 kB of disk), and
// every fetch that brings something adds a pack. go-git neither packs nor
// prunes; git's `gc --auto` would. Close does the same kind of work once
// the store has grown past git's own threshold of loose objects or past
// packLimit packs: it folds the loose objects, with the packs too small to
// stand alone, into one new pack, and deletes what it folded.
//
// Nothing is lost on the way:
//   - every object is read and its content hashed before it goes into the
//     new pack; one that cannot be read, or whose content does not match
//     its name, stays where it is, and so does the pack it came from;
//   - the new pack and its index are written to temporary files, made
//     durable, and renamed: the index first, since go-git lists packs by
//     their .pack file and a pack without its index makes the whole store
//     unreadable to it;
//   - only then are the folded files deleted. A crash at any point leaves
//     each object in its old place, in the new pack, or in both.
//
// Which packs are folded follows the geometric rule of `git repack
// --geometric=2`, in this form: sorted by object count, the largest packs
// stay as long as each holds at least twice as many objects as all
// smaller packs and the loose objects together; the others are folded.
// The packs left form a geometric series, so there are few of them, and
// each object is rewritten a number of times that grows with the
// logarithm of the store's size, not with the number of cycles.
//
// Nothing is pruned: an object no ref reaches any more (the trees of a
// commit the remote has since replaced) stays. The new pack has no deltas,
// like the packs a push sends.

// When housekeeping starts. Variables for tests.
var (
	// looseLimit is git's gc.auto default: about this many loose objects
	// (estimated as git does, from the objects/17 folder) start a fold.
	looseLimit = 6700
	// packLimit packs start a fold. git's gc.autoPackLimit is 50; each
	// pack costs every lookup of an object that is not in it, and Open
	// clones afresh past maxPacks.
	packLimit = 20
)

// packFile is a pack of the store, with its object count.
type packFile struct {
	name    string // "pack-<sha>", without extension
	objects int
	index   *idxfile.MemoryIndex
}

// foldResult says what a fold did, for the log.
type foldResult struct {
	loose, packs int    // loose objects and packs folded
	objects      int    // objects in the new pack
	kept         int    // objects left in place: unreadable or damaged
	pack         string // the new pack's name
}

// housekeepingDue reports whether the store has grown past looseLimit
// loose objects or packLimit packs. It reads two folders.
func (r *Repo) housekeepingDue() bool {
	// git's estimate: objects are spread evenly over 256 folders by the
	// first byte of their name.
	entries, _ := os.ReadDir(filepath.Join(r.objects, "17"))
	n := 0
	for _, e := range entries {
		if isLooseName(e.Name()) {
			n++
		}
	}
	if n > (looseLimit+255)/256 {
		return true
	}
	packs, _ := filepath.Glob(filepath.Join(r.objects, "pack", "pack-*.pack"))
	return len(packs) >= packLimit
}

// housekeep folds the store when housekeepingDue says so and logs what
// it did. A failure is logged, never returned: the store is a cache of
// the remote, and whatever a fold did not finish is where it was.
func (r *Repo) housekeep() {
	if r.objects == "" || !r.housekeepingDue() {
		return
	}
	start := time.Now()
	res, err := r.fold()
	if err != nil {
		r.log.Warn("could not fold the working copy's objects into a pack; they stay as they are", "workdir", r.dir, "error", err)
		return
	}
	if res.objects == 0 {
		return
	}
	r.log.Info("folded the working copy's objects into one pack", "loose", res.loose, "packs", res.packs, "objects", res.objects, "left", res.kept, "pack", res.pack, "duration", time.Since(start).Round(time.Millisecond))
}

// fold writes the loose objects and the packs geometricSplit picks into
// one new pack, then deletes what it folded.
func (r *Repo) fold() (foldResult, error) {
	var res foldResult
	loose, temps, err := listLoose(r.objects)
	if err != nil {
		return res, err
	}
	packDir := filepath.Join(r.objects, "pack")
	packs, err := listPacks(packDir)
	if err != nil {
		return res, err
	}
	_, roll := geometricSplit(packs, len(loose))
	if len(loose) == 0 && len(roll) < 2 {
		return res, nil
	}

	// Each object once, loose ones first; where each came from decides
	// what may be deleted.
	type source struct {
		pack int // index into roll, or -1 for a loose object
	}
	var order []plumbing.Hash
	from := make(map[plumbing.Hash]source, len(loose))
	for _, h := range loose {
		from[h] = source{pack: -1}
		order = append(order, h)
	}
	for i, p := range roll {
		iter, err := p.index.Entries()
		if err != nil {
			return res, fmt.Errorf("listing the objects of %s: %w", p.name, err)
		}
		for {
			e, err := iter.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				iter.Close()
				return res, fmt.Errorf("listing the objects of %s: %w", p.name, err)
			}
			if _, ok := from[e.Hash]; !ok {
				from[e.Hash] = source{pack: i}
				order = append(order, e.Hash)
			}
		}
		iter.Close()
	}

	w, err := newPackWriter(packDir)
	if err != nil {
		return res, err
	}
	defer w.abort()
	badLoose := map[plumbing.Hash]bool{}
	badPack := make([]bool, len(roll))
	for _, h := range order {
		src := from[h]
		t, content, err := r.readObject(h, src.pack < 0)
		if err == nil && plumbing.ComputeHash(t, content) != h {
			err = errors.New("its content does not match its name")
		}
		if err != nil {
			r.log.Warn("leaving an object that cannot be read where it is", "object", h.String(), "error", err)
			res.kept++
			if src.pack < 0 {
				badLoose[h] = true
			} else {
				badPack[src.pack] = true
			}
			continue
		}
		if err := w.add(t, h, content); err != nil {
			return res, err
		}
	}
	if w.count == 0 {
		return res, nil
	}
	if err := r.foldStep("place"); err != nil {
		return res, err
	}
	name, err := w.finish()
	if err != nil {
		return res, err
	}
	res.pack, res.objects = name, w.count
	if err := r.foldStep("delete"); err != nil {
		return res, err
	}

	// The new pack is durable: what it holds may go from its old place.
	r.closeStorage()
	for i, p := range roll {
		if badPack[i] || p.name == name {
			continue
		}
		if err := removePack(packDir, p.name); err != nil {
			return res, err
		}
		res.packs++
	}
	for _, h := range loose {
		if badLoose[h] {
			continue
		}
		hex := h.String()
		if err := os.Remove(filepath.Join(r.objects, hex[:2], hex[2:])); err != nil && !errors.Is(err, os.ErrNotExist) {
			return res, fmt.Errorf("deleting a folded loose object: %w", err)
		}
		res.loose++
	}
	for _, p := range temps {
		_ = os.Remove(p)
	}
	removeEmptyFanout(r.objects)
	return res, nil
}

// foldStep runs the test hook before a step of a fold.
func (r *Repo) foldStep(step string) error {
	if r.beforeFoldStep == nil {
		return nil
	}
	return r.beforeFoldStep(step)
}

// readObject reads object h, from its loose file when loose is set (a
// loose file can be damaged while a pack holds the object whole; reading
// the file is what tells whether it may be deleted), else from the store.
func (r *Repo) readObject(h plumbing.Hash, loose bool) (plumbing.ObjectType, []byte, error) {
	if loose {
		hex := h.String()
		f, err := os.Open(filepath.Join(r.objects, hex[:2], hex[2:]))
		if err != nil {
			return 0, nil, err
		}
		defer f.Close()
		zr, err := objfile.NewReader(f)
		if err != nil {
			return 0, nil, err
		}
		defer zr.Close()
		t, size, err := zr.Header()
		if err != nil {
			return 0, nil, err
		}
		content := make([]byte, size)
		if _, err := io.ReadFull(zr, content); err != nil {
			return 0, nil, err
		}
		return t, content, nil
	}
	o, err := r.storage.EncodedObject(plumbing.AnyObject, h)
	if err != nil {
		return 0, nil, err
	}
	content, err := readAll(o)
	return o.Type(), content, err
}

// geometricSplit splits packs into those that stay and those to fold with
// loose more loose objects: from the largest down, a pack stays while it
// holds at least twice as many objects as all smaller packs and the loose
// objects together; it and every smaller pack are folded from the first
// that does not.
func geometricSplit(packs []packFile, loose int) (keep, roll []packFile) {
	packs = slices.Clone(packs)
	slices.SortStableFunc(packs, func(a, b packFile) int { return b.objects - a.objects })
	rest := loose
	for _, p := range packs {
		rest += p.objects
	}
	for i, p := range packs {
		rest -= p.objects
		if p.objects < 2*rest {
			return packs[:i], packs[i:]
		}
	}
	return packs, nil
}

// isLooseName reports whether a file in an objects/xx folder is named as
// a loose object is: the 38 other hex digits of its hash.
func isLooseName(name string) bool {
	if len(name) != 38 {
		return false
	}
	for _, c := range name {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// staleAge is how old a temporary file in the object store must be for a
// fold to delete it: one that old was left by a process that died (a
// working copy has one writer, and Close folds only once it is done).
const staleAge = time.Hour

// listLoose returns the loose objects of the objects folder dir, and the
// paths of the temporary files older than staleAge in it and in its pack
// folder.
func listLoose(dir string) (hashes []plumbing.Hash, temps []string, err error) {
	stale := func(folder string, e os.DirEntry) {
		if !strings.HasPrefix(e.Name(), "tmp_") {
			return
		}
		if fi, err := e.Info(); err == nil && fi.Mode().IsRegular() && time.Since(fi.ModTime()) > staleAge {
			temps = append(temps, filepath.Join(folder, e.Name()))
		}
	}
	for i := range 256 {
		fan := fmt.Sprintf("%02x", i)
		entries, err := os.ReadDir(filepath.Join(dir, fan))
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, nil, fmt.Errorf("listing loose objects: %w", err)
		}
		for _, e := range entries {
			if isLooseName(e.Name()) && e.Type().IsRegular() {
				hashes = append(hashes, plumbing.NewHash(fan+e.Name()))
			} else {
				stale(filepath.Join(dir, fan), e)
			}
		}
	}
	entries, _ := os.ReadDir(filepath.Join(dir, "pack"))
	for _, e := range entries {
		stale(filepath.Join(dir, "pack"), e)
	}
	return hashes, temps, nil
}

// listPacks returns the packs of the pack folder dir that have an index
// and no .keep file (which tells git, and so this, to leave a pack be).
func listPacks(dir string) ([]packFile, error) {
	names, err := filepath.Glob(filepath.Join(dir, "pack-*.pack"))
	if err != nil {
		return nil, err
	}
	var packs []packFile
	for _, p := range names {
		base := strings.TrimSuffix(p, ".pack")
		if _, err := os.Stat(base + ".keep"); err == nil {
			continue
		}
		f, err := os.Open(base + ".idx")
		if err != nil {
			return nil, fmt.Errorf("reading the index of pack %s: %w", filepath.Base(p), err)
		}
		idx := idxfile.NewMemoryIndex()
		err = idxfile.NewDecoder(bufio.NewReader(f)).Decode(idx)
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("reading the index of pack %s: %w", filepath.Base(p), err)
		}
		n, _ := idx.Count()
		packs = append(packs, packFile{name: filepath.Base(base), objects: int(n), index: idx})
	}
	return packs, nil
}

// removePack deletes a pack: its .pack file first, so that go-git never
// finds a pack without its index, then the files beside it.
func removePack(dir, name string) error {
	base := filepath.Join(dir, name)
	if err := os.Remove(base + ".pack"); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("deleting folded pack %s: %w", name, err)
	}
	for _, ext := range []string{".idx", ".rev", ".bitmap", ".mtimes", ".promisor"} {
		if err := os.Remove(base + ext); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("deleting folded pack %s: %w", name, err)
		}
	}
	return nil
}

// removeEmptyFanout removes the objects/xx folders a fold emptied.
func removeEmptyFanout(dir string) {
	for i := range 256 {
		_ = os.Remove(filepath.Join(dir, fmt.Sprintf("%02x", i))) // only when empty
	}
}

// packWriter writes a new pack of whole objects and its index into a pack
// folder, through temporary files.
type packWriter struct {
	dir     string
	f       *os.File
	bw      *bufio.Writer
	zw      *zlib.Writer
	entry   bytes.Buffer
	off     int64
	count   int
	index   idxfile.Writer
	offsets map[plumbing.Hash]int64 // where each object starts
	closed  bool
}

func newPackWriter(dir string) (*packWriter, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	f, err := os.CreateTemp(dir, "tmp_pack_")
	if err != nil {
		return nil, fmt.Errorf("creating a pack: %w", err)
	}
	w := &packWriter{dir: dir, f: f, bw: bufio.NewWriterSize(f, 256<<10), offsets: map[plumbing.Hash]int64{}}
	w.zw, _ = zlib.NewWriterLevel(&w.entry, zlib.BestSpeed)
	// The object count is written once known.
	hdr := packHeader(0)
	if _, err := w.bw.Write(hdr[:]); err != nil {
		return nil, err
	}
	w.off = int64(len(hdr))
	return w, nil
}

// add appends an object whole.
func (w *packWriter) add(t plumbing.ObjectType, h plumbing.Hash, content []byte) error {
	if !t.Valid() || t > plumbing.TagObject {
		return fmt.Errorf("object %s: type %s cannot be packed whole", h, t)
	}
	w.entry.Reset()
	w.entry.Write(packEntryHeader(t, len(content)))
	w.zw.Reset(&w.entry)
	if _, err := w.zw.Write(content); err != nil {
		return err
	}
	if err := w.zw.Close(); err != nil {
		return err
	}
	if _, err := w.bw.Write(w.entry.Bytes()); err != nil {
		return fmt.Errorf("writing a pack: %w", err)
	}
	w.index.Add(h, uint64(w.off), crc32.ChecksumIEEE(w.entry.Bytes()))
	w.offsets[h] = w.off
	w.off += int64(w.entry.Len())
	w.count++
	return nil
}

// finish writes the object count and the trailing checksum, writes the
// index, makes both durable and renames them into place (the index
// first). It returns the pack's name.
func (w *packWriter) finish() (string, error) {
	if err := w.bw.Flush(); err != nil {
		return "", fmt.Errorf("writing a pack: %w", err)
	}
	var n [4]byte
	binary.BigEndian.PutUint32(n[:], uint32(w.count))
	if _, err := w.f.WriteAt(n[:], 8); err != nil {
		return "", fmt.Errorf("writing a pack: %w", err)
	}
	// The checksum covers the header, which is known only now.
	sum := sha1.New()
	if _, err := io.Copy(sum, io.NewSectionReader(w.f, 0, w.off)); err != nil {
		return "", fmt.Errorf("reading back a pack: %w", err)
	}
	checksum := plumbing.Hash(sum.Sum(nil))
	if _, err := w.f.WriteAt(checksum[:], w.off); err != nil {
		return "", fmt.Errorf("writing a pack: %w", err)
	}
	if err := w.f.Sync(); err != nil {
		return "", fmt.Errorf("syncing a pack: %w", err)
	}
	if err := w.index.OnFooter(checksum); err != nil {
		return "", fmt.Errorf("indexing a pack: %w", err)
	}
	idx, err := w.index.Index()
	if err != nil {
		return "", fmt.Errorf("indexing a pack: %w", err)
	}
	idxTmp, err := os.CreateTemp(w.dir, "tmp_idx_")
	if err != nil {
		return "", fmt.Errorf("writing a pack index: %w", err)
	}
	defer os.Remove(idxTmp.Name()) // once renamed, there is nothing to remove
	bw := bufio.NewWriter(idxTmp)
	_, err = idxfile.NewEncoder(bw).Encode(idx)
	if err == nil {
		err = bw.Flush()
	}
	if err == nil {
		err = idxTmp.Sync()
	}
	if cerr := idxTmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = w.checkIndex(idxTmp.Name(), checksum)
	}
	if err != nil {
		return "", fmt.Errorf("writing a pack index: %w", err)
	}
	if err := w.f.Close(); err != nil {
		return "", fmt.Errorf("writing a pack: %w", err)
	}
	w.closed = true
	name := "pack-" + checksum.String()
	base := filepath.Join(w.dir, name)
	for _, f := range []*os.File{idxTmp, w.f} {
		_ = os.Chmod(f.Name(), 0o444) // read-only, as git makes them
	}
	if err := os.Rename(idxTmp.Name(), base+".idx"); err != nil {
		return "", fmt.Errorf("writing a pack index: %w", err)
	}
	if err := os.Rename(w.f.Name(), base+".pack"); err != nil {
		_ = os.Remove(base + ".idx")
		return "", fmt.Errorf("writing a pack: %w", err)
	}
	if err := durable.Sync(w.dir); err != nil {
		return "", fmt.Errorf("syncing the pack folder: %w", err)
	}
	return name, nil
}

// checkIndex reads back the index written at path and checks that it is
// the index of the pack with checksum, and finds each object at the
// offset it was written at: the objects are deleted from their old place
// on its word.
func (w *packWriter) checkIndex(path string, checksum plumbing.Hash) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	idx := idxfile.NewMemoryIndex()
	if err := idxfile.NewDecoder(bufio.NewReader(f)).Decode(idx); err != nil {
		return err
	}
	if n, _ := idx.Count(); n != int64(w.count) || plumbing.Hash(idx.PackfileChecksum) != checksum {
		return fmt.Errorf("the index lists %d objects of pack %s, want %d of %s", n, plumbing.Hash(idx.PackfileChecksum), w.count, checksum)
	}
	for h, off := range w.offsets {
		if got, err := idx.FindOffset(h); err != nil || got != off {
			return fmt.Errorf("the index has object %s at %d (%v), want %d", h, got, err, off)
		}
	}
	return nil
}

// abort removes the temporary pack unless finish renamed it.
func (w *packWriter) abort() {
	if !w.closed {
		w.f.Close()
	}
	_ = os.Remove(w.f.Name()) // gone once renamed
}
