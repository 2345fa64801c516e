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

	"github.com/go-git/go-billy/v5"
	"github.com/go-git/go-billy/v5/osfs"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/plumbing/format/idxfile"
	"github.com/go-git/go-git/v5/plumbing/format/objfile"
	"github.com/go-git/go-git/v5/plumbing/format/packfile"

	"github.com/imagebump/imagebump/internal/durable"
	"github.com/imagebump/imagebump/internal/oneline"
)

// Housekeeping of a working copy's object store.
//
// Every commit imagebump makes of fewer than packFrom objects stores them
// loose, one file each (a policy move in a 50,000-file repository: 92
// files, 440 kB of disk), and every fetch that brings something adds a
// pack, as does every larger commit. go-git neither packs nor
// prunes; git's `gc --auto` would. Close does the same kind of work once
// the store has grown past git's own threshold of loose objects or past
// packLimit packs: it folds the loose objects, with the packs too small to
// stand alone, into one new pack, and deletes what it folded.
//
// Nothing is lost on the way:
//   - every object is read, from its loose file or else from each pack
//     that lists it in turn, until a copy's content hashes to its name;
//     that copy goes into the new pack;
//   - the new pack and its index are written to temporary files, made
//     durable, read back and checked, and renamed: the index first, since
//     go-git lists packs by their .pack file and a pack without its index
//     makes the whole store unreadable to it;
//   - only then is a loose file or a folded pack deleted, and only when
//     the new pack holds every object it holds. An object with no whole
//     copy keeps every place that lists it; a damaged copy of an object
//     the new pack holds goes (it could hide the whole one). A crash, or
//     an error, at any point leaves each object in its old place, in the
//     new pack, or in both.
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
	// Packs with a .keep file are never folded: they do not count.
	packs := 0
	entries, _ = os.ReadDir(filepath.Join(r.objects, "pack"))
	for _, e := range entries {
		switch name := e.Name(); {
		case !strings.HasPrefix(name, "pack-"):
		case strings.HasSuffix(name, ".pack"):
			packs++
		case strings.HasSuffix(name, ".keep"):
			packs--
		}
	}
	return packs >= packLimit
}

// housekeep folds the store when housekeepingDue says so and logs what
// it did. A failure is logged, never returned: the store is a cache of
// the remote, and whatever a fold did not finish is where it was.
func (r *Repo) housekeep() {
	if r.objects == "" || !r.housekeepingDue() {
		return
	}
	start := time.Now()
	defer func() {
		// A store damaged in a way no check foresaw must not take a
		// cycle, or serve, down with it.
		if p := recover(); p != nil {
			r.log.Error("folding the working copy's objects failed; delete the working copy's folder if this repeats", "workdir", r.dir, "panic", fmt.Sprint(p))
		}
	}()
	res, err := r.fold()
	if err != nil {
		r.log.Warn("could not fold the working copy's objects into a pack; every object is still in its old place or in the new pack", "workdir", r.dir, "error", err)
		return
	}
	if res.objects == 0 {
		if res.kept > 0 {
			r.log.Warn("no object to fold could be read; delete the working copy's folder to clone it afresh", "workdir", r.dir, "objects", res.kept)
		}
		return
	}
	r.log.Info("folded the working copy's objects into one pack", "loose", res.loose, "packs", res.packs, "objects", res.objects, "left", res.kept, "pack", res.pack, "duration", time.Since(start).Round(time.Millisecond))
}

// fold writes the loose objects and the packs geometricSplit picks into
// one new pack, then deletes each loose file and folded pack whose every
// object the new pack holds.
func (r *Repo) fold() (foldResult, error) {
	var res foldResult
	loose, temps, err := listLoose(r.objects)
	if err != nil {
		return res, err
	}
	// Stale by their age alone: whatever the fold does, they go.
	for _, p := range temps {
		_ = os.Remove(p)
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
	src := newObjectSources(r.objects, packs)
	defer src.close()

	// Each object once: the loose ones, then the folded packs'.
	var order []plumbing.Hash
	seen := make(map[plumbing.Hash]bool, len(loose))
	for _, h := range loose {
		seen[h] = true
		order = append(order, h)
	}
	for _, p := range roll {
		err := eachEntry(p, func(h plumbing.Hash) {
			if !seen[h] {
				seen[h] = true
				order = append(order, h)
			}
		})
		if err != nil {
			return res, err
		}
	}

	w, err := newPackWriter(packDir)
	if err != nil {
		return res, err
	}
	defer w.abort()
	for _, h := range order {
		t, content, err := src.read(h)
		if err != nil {
			r.log.Warn("leaving an object that cannot be read where it is", "object", h.String(), "error", err)
			res.kept++
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

	// The new pack is durable. A file goes only when the new pack holds
	// every object it holds: an object that could not be read from it
	// may not be readable anywhere else either. A damaged loose copy of
	// an object read whole from a pack goes, since it hid that copy.
	src.close()
	r.closeStorage()
	for _, p := range roll {
		if p.name == name {
			continue
		}
		covered := true
		if err := eachEntry(p, func(h plumbing.Hash) { covered = covered && w.holds(h) }); err != nil || !covered {
			continue
		}
		if res.packs == 0 {
			if err := removeMultiPackIndex(packDir); err != nil {
				return res, err
			}
		}
		if err := removePack(packDir, p.name); err != nil {
			return res, err
		}
		res.packs++
	}
	for _, h := range loose {
		if !w.holds(h) {
			continue
		}
		hex := h.String()
		if err := os.Remove(filepath.Join(r.objects, hex[:2], hex[2:])); err != nil && !errors.Is(err, os.ErrNotExist) {
			return res, fmt.Errorf("deleting a folded loose object: %w", err)
		}
		res.loose++
	}
	removeEmptyFanout(r.objects)
	return res, nil
}

// eachEntry calls f with each object pack p's index lists.
func eachEntry(p packFile, f func(plumbing.Hash)) error {
	iter, err := p.index.Entries()
	if err != nil {
		return fmt.Errorf("listing the objects of %s: %w", p.name, err)
	}
	defer iter.Close()
	for {
		e, err := iter.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("listing the objects of %s: %w", p.name, err)
		}
		f(e.Hash)
	}
}

// objectSources reads an object from each place that holds it, its loose
// file first and then every pack that lists it, until one gives content
// whose hash is its name. Each pack is read on its own (go-git's store
// would pick one of several packs at random).
type objectSources struct {
	objects string // the objects folder
	packs   []packFile
	fs      billy.Filesystem
	cache   cache.Object // delta bases, shared by the packs
	open    map[string]*packfile.Packfile
	files   []billy.File
}

func newObjectSources(objects string, packs []packFile) *objectSources {
	return &objectSources{
		objects: objects,
		packs:   packs,
		fs:      osfs.New(filepath.Join(objects, "pack")),
		cache:   cache.NewObjectLRU(16 * cache.MiByte),
		open:    map[string]*packfile.Packfile{},
	}
}

// read returns object h's type and content, or why no place gave it.
func (s *objectSources) read(h plumbing.Hash) (plumbing.ObjectType, []byte, error) {
	var errs []error
	check := func(t plumbing.ObjectType, content []byte, err error) bool {
		if err == nil && plumbing.ComputeHash(t, content) != h {
			err = errors.New("its content does not match its name")
		}
		if err != nil {
			errs = append(errs, err)
		}
		return err == nil
	}
	hex := h.String()
	if t, content, err := readLoose(filepath.Join(s.objects, hex[:2], hex[2:])); !errors.Is(err, os.ErrNotExist) && check(t, content, err) {
		return t, content, nil
	}
	for _, p := range s.packs {
		if ok, _ := p.index.Contains(h); !ok {
			continue
		}
		t, content, err := s.fromPack(p, h)
		if check(t, content, err) {
			return t, content, nil
		}
	}
	if len(errs) == 0 {
		return 0, nil, plumbing.ErrObjectNotFound
	}
	return 0, nil, oneline.Join(errs...)
}

// fromPack reads object h from pack p, resolving its deltas within p.
func (s *objectSources) fromPack(p packFile, h plumbing.Hash) (plumbing.ObjectType, []byte, error) {
	pf := s.open[p.name]
	if pf == nil {
		f, err := s.fs.Open(p.name + ".pack")
		if err != nil {
			return 0, nil, err
		}
		s.files = append(s.files, f)
		pf = packfile.NewPackfileWithCache(p.index, s.fs, f, s.cache, 0)
		s.open[p.name] = pf
	}
	o, err := pf.Get(h)
	if err != nil {
		return 0, nil, err
	}
	content, err := readAll(o)
	return o.Type(), content, err
}

// close closes the packs read.
func (s *objectSources) close() {
	for _, f := range s.files {
		_ = f.Close()
	}
	s.files, s.open = nil, map[string]*packfile.Packfile{}
}

// readLoose reads a loose object file. The size its header claims is not
// trusted for an allocation: a damaged header could claim petabytes.
func readLoose(path string) (plumbing.ObjectType, []byte, error) {
	f, err := os.Open(path)
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
	content, err := io.ReadAll(io.LimitReader(zr, size+1))
	if err != nil {
		return 0, nil, err
	}
	if int64(len(content)) != size {
		return 0, nil, fmt.Errorf("its header says %d bytes, its content has %d", size, len(content))
	}
	return t, content, nil
}

// foldStep runs the test hook before a step of a fold.
func (r *Repo) foldStep(step string) error {
	if r.beforeFoldStep == nil {
		return nil
	}
	return r.beforeFoldStep(step)
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

// fanOuts are the names of the 256 folders loose objects go in, by the
// first byte of their name: 00 to ff.
var fanOuts = func() []string {
	out := make([]string, 256)
	for i := range out {
		out[i] = fmt.Sprintf("%02x", i)
	}
	return out
}()

// listLoose returns the loose objects of the objects folder dir, and the
// paths of the temporary files and pack indexes without a pack older than
// staleAge in it and in its pack folder.
func listLoose(dir string) (hashes []plumbing.Hash, temps []string, err error) {
	now := time.Now()
	stale := func(folder string, e os.DirEntry) {
		if leftTemp(e, now, staleAge) {
			temps = append(temps, filepath.Join(folder, e.Name()))
		}
	}
	for _, fan := range fanOuts {
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
	packDir := filepath.Join(dir, "pack")
	entries, _ := os.ReadDir(packDir)
	for _, e := range entries {
		stale(packDir, e)
		// An index whose pack is gone: a fold or a fetch stopped between
		// its renames. go-git lists packs by their .pack file.
		if base, ok := strings.CutSuffix(e.Name(), ".idx"); ok && strings.HasPrefix(base, "pack-") {
			if _, err := os.Lstat(filepath.Join(packDir, base+".pack")); errors.Is(err, os.ErrNotExist) {
				if fi, err := e.Info(); err == nil && settled(fi.ModTime(), now, staleAge) {
					temps = append(temps, filepath.Join(packDir, e.Name()))
				}
			}
		}
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

// removeMultiPackIndex deletes the multi-pack index that git's
// maintenance (incremental-repack) may have written, with its bitmap,
// reverse index and chain: it names the packs a fold deletes, and git
// finds the store broken while it does. git reads each pack's own index
// without it, and writes a new one at its next maintenance.
func removeMultiPackIndex(dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("deleting git's multi-pack index: %w", err)
	}
	for _, e := range entries {
		// multi-pack-index, multi-pack-index-HASH.bitmap and .rev, and
		// the multi-pack-index.d folder of a chain.
		if strings.HasPrefix(e.Name(), "multi-pack-index") {
			if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
				return fmt.Errorf("deleting git's multi-pack index: %w", err)
			}
		}
	}
	return nil
}

// removeEmptyFanout removes the objects/xx folders a fold emptied.
func removeEmptyFanout(dir string) {
	for _, fan := range fanOuts {
		_ = os.Remove(filepath.Join(dir, fan)) // only when empty
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
	if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
		if err := os.Mkdir(dir, 0o755); err != nil {
			return nil, err
		}
		if err := durable.Sync(filepath.Dir(dir)); err != nil {
			return nil, err
		}
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

// holds reports whether the pack holds object h.
func (w *packWriter) holds(h plumbing.Hash) bool {
	_, ok := w.offsets[h]
	return ok
}

// add appends an object whole.
func (w *packWriter) add(t plumbing.ObjectType, h plumbing.Hash, content []byte) error {
	w.entry.Reset()
	if err := writePackEntry(&w.entry, w.zw, t, h, content); err != nil {
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
	if sameFile(base+".pack", w.f.Name()) {
		// The same objects in the same order, byte for byte: the pack is
		// there already (a fold stopped before its deletes), and an index
		// it has must not be touched. A pack of that name whose bytes
		// differ (damaged since) is replaced below.
		if _, err := os.Lstat(base + ".idx"); errors.Is(err, os.ErrNotExist) {
			if err := os.Rename(idxTmp.Name(), base+".idx"); err != nil {
				return "", fmt.Errorf("writing a pack index: %w", err)
			}
		}
		if err := durable.Sync(w.dir); err != nil {
			return "", fmt.Errorf("syncing the pack folder: %w", err)
		}
		return name, nil
	}
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

// sameFile reports whether the files at a and b hold the same bytes.
func sameFile(a, b string) bool {
	x, err := os.ReadFile(a)
	if err != nil {
		return false
	}
	y, err := os.ReadFile(b)
	return err == nil && bytes.Equal(x, y)
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
