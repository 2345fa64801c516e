package gitwriter

import (
	"bufio"
	"compress/zlib"
	"container/list"
	"crypto/sha1"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"sync"

	"github.com/go-git/go-git/v5/plumbing"
)

// A tree diff after many commits reads thousands of trees, most of them
// stored as deltas: after 1,000 commits of 10 files on a 50,000-file
// fleet, about 20,000 reads, which took go-git's store 0.6 s (its reads
// seek and decode through a general object cache, and hash every object
// with collision detection). packSet reads them as git does: each pack's
// index held in memory, a delta resolved from its base, the bases of
// chains kept in a small cache, each object checked against its name.
// packedObject (packread.go) stays for the handful of whole objects a
// cycle with nothing new reads, where loading every index whole would
// cost more than the reads; both decode entries with readStoredEntry.

// errNotPacked says that no pack of a packSet lists an object.
var errNotPacked = errors.New("no pack lists the object")

// maxDeltaChain bounds how many deltas a packSet applies to reach one
// object: git's own packs stay at 50 by default (pack.depth), and its
// hard limit is 4,095. A longer chain, or a cycle of REF_DELTAs across
// packs, is an error.
const maxDeltaChain = 4095

// packSetCache bounds the bytes of decoded objects a packSet keeps.
const packSetCache = 16 << 20

// maxChainBytes bounds the delta instructions a packSet holds while it
// resolves one object: a damaged pack could otherwise chain thousands of
// large deltas.
const maxChainBytes = 4 * maxPackedRead

// errDamaged marks an object that was read but does not hash to its
// name, or whose deltas form a cycle: the store is damaged, and go-git's
// store, which checks neither, must not be asked instead.
var errDamaged = errors.New("the pack is damaged")

// packSet reads objects from the packs of one objects folder, for a
// burst of reads by one goroutine; Close closes its files.
type packSet struct {
	packs []*setPack
	cache baseCache
	// resolving are the entries whose chains are being followed, and
	// held the bytes of their deltas: a cycle of REF_DELTAs, or a chain
	// too large, is an error.
	resolving map[cacheKey]bool
	held      int
	// loose reads an object no pack lists: the base of a delta in a
	// thin pack, which go-git keeps as fetched, may be a loose object.
	loose func(plumbing.Hash) (plumbing.ObjectType, []byte, error)
}

// setPack is one pack of a packSet: its file, and its index read whole
// on first use.
type setPack struct {
	base string // the path without extension
	f    openPack
	idx  *packIndex
	err  error // why the pack could not be opened, once tried
}

// openPack is an open pack: an *os.File, or bytes in a test.
type openPack interface {
	io.ReaderAt
	Close() error
}

// openPackSet lists the packs of the objects folder that go-git reads
// (packBases). It returns an error when one of them would make go-git
// refuse every packed object; the caller then asks go-git.
func openPackSet(objects string) (*packSet, error) {
	bases, err := packBases(filepath.Join(objects, "pack"))
	if err != nil {
		return nil, err
	}
	ps := &packSet{cache: baseCache{limit: packSetCache}}
	for _, b := range bases {
		ps.packs = append(ps.packs, &setPack{base: b})
	}
	return ps, nil
}

// Close closes the pack files.
func (ps *packSet) Close() {
	for _, p := range ps.packs {
		if p.f != nil {
			p.f.Close()
			p.f = nil
		}
	}
}

// object returns the type and content of object h, read from the first
// pack that lists it and checked against h. It returns errNotPacked when
// no pack does.
// The content is shared with the packSet's cache: callers must not
// change it. An object that does not hash to h is errDamaged.
func (ps *packSet) object(h plumbing.Hash) (plumbing.ObjectType, []byte, error) {
	return ps.objectAt(h, 0)
}

// objectAt is object at depth deltas into a chain.
func (ps *packSet) objectAt(h plumbing.Hash, depth int) (plumbing.ObjectType, []byte, error) {
	for _, p := range ps.packs {
		if err := p.open(); err != nil {
			return 0, nil, err
		}
		off, err := p.idx.find(h)
		if errors.Is(err, errNotPacked) {
			continue
		}
		if err == nil {
			var t plumbing.ObjectType
			var content []byte
			t, content, err = ps.read(p, off, depth)
			if err == nil && objectHash(t, content) != h {
				err = fmt.Errorf("its content does not match its name: %w", errDamaged)
			}
			if err == nil {
				return t, content[:len(content):len(content)], nil
			}
		}
		return 0, nil, fmt.Errorf("object %s in %s.pack: %w", shortHash(h), filepath.Base(p.base), err)
	}
	return 0, nil, errNotPacked
}

// lists reports whether a pack's index lists h.
func (ps *packSet) lists(h plumbing.Hash) bool {
	for _, p := range ps.packs {
		if p.open() != nil {
			continue
		}
		if _, err := p.idx.find(h); err == nil {
			return true
		}
	}
	return false
}

// objectHash is the name of an object: the SHA-1 of its header and
// content. crypto/sha1 checks what was read; it has no need of the
// collision detection go-git hashes with when it writes.
func objectHash(t plumbing.ObjectType, content []byte) plumbing.Hash {
	d := sha1.New()
	var hdr [32]byte
	b := append(hdr[:0], t.Bytes()...)
	b = append(b, ' ')
	b = strconv.AppendInt(b, int64(len(content)), 10)
	b = append(b, 0)
	d.Write(b)
	d.Write(content)
	var h plumbing.Hash
	d.Sum(h[:0])
	return h
}

// open opens the pack file and reads its index, once.
func (p *setPack) open() error {
	if p.idx == nil && p.err == nil {
		p.err = p.load()
	}
	return p.err
}

func (p *setPack) load() error {
	raw, err := os.ReadFile(p.base + ".idx")
	if err != nil {
		return err
	}
	idx, err := parsePackIndex(raw)
	if err != nil {
		return fmt.Errorf("%s.idx: %w", filepath.Base(p.base), err)
	}
	f, err := os.Open(p.base + ".pack")
	if err != nil {
		return err
	}
	p.f, p.idx = f, idx
	return nil
}

// pendingDelta is one delta of a chain being resolved: where it is, and
// its instructions.
type pendingDelta struct {
	off   int64
	delta []byte
}

// read returns the object at offset off in pack p, resolving deltas:
// the chain is followed down to a whole object or one in the cache, and
// the deltas then applied upwards, each result kept in the cache.
func (ps *packSet) read(p *setPack, off int64, depth int) (plumbing.ObjectType, []byte, error) {
	var chain []pendingDelta
	var t plumbing.ObjectType
	var content []byte
	if ps.resolving == nil {
		ps.resolving = map[cacheKey]bool{}
	}
	defer func() {
		for _, d := range chain {
			delete(ps.resolving, cacheKey{p, d.off})
			ps.held -= len(d.delta)
		}
	}()
	for {
		if ct, c, ok := ps.cache.get(p, off); ok {
			t, content = ct, c
			break
		}
		// Neither is in a pack git writes; go-git's store, asked
		// instead, would follow a cycle until its stack overflows.
		if len(chain)+depth > maxDeltaChain {
			return 0, nil, fmt.Errorf("a chain of more than %d deltas: %w", maxDeltaChain, errDamaged)
		}
		if ps.resolving[cacheKey{p, off}] {
			return 0, nil, fmt.Errorf("the delta at %d is its own base, through others: %w", off, errDamaged)
		}
		e, err := readStoredEntry(p.f, off, false)
		if err != nil {
			return 0, nil, fmt.Errorf("at %d: %w", off, err)
		}
		if e.t != plumbing.OFSDeltaObject && e.t != plumbing.REFDeltaObject {
			t, content = e.t, e.data
			ps.cache.put(p, off, t, content)
			break
		}
		if ps.held+len(e.data) > maxChainBytes {
			return 0, nil, fmt.Errorf("the deltas under the one at %d hold more than %d MiB", off, maxChainBytes>>20)
		}
		chain = append(chain, pendingDelta{off: off, delta: e.data})
		ps.resolving[cacheKey{p, off}] = true
		ps.held += len(e.data)
		if e.t == plumbing.OFSDeltaObject {
			off = e.base
			continue
		}
		// A REF_DELTA names its base, which may be in another pack.
		bt, base, err := ps.objectAt(e.ref, depth+len(chain))
		if errors.Is(err, errNotPacked) && ps.loose != nil {
			bt, base, err = ps.loose(e.ref)
		}
		if errors.Is(err, errNotPacked) {
			return 0, nil, fmt.Errorf("the base %s of the delta at %d is in no pack, nor loose", shortHash(e.ref), off)
		}
		if err != nil {
			return 0, nil, fmt.Errorf("the base of the delta at %d: %w", off, err)
		}
		t, content = bt, base
		break
	}
	for i := len(chain) - 1; i >= 0; i-- {
		var err error
		content, err = applyDelta(content, chain[i].delta)
		if err != nil {
			return 0, nil, fmt.Errorf("the delta at %d: %w", chain[i].off, err)
		}
		ps.cache.put(p, chain[i].off, t, content)
	}
	return t, content, nil
}

// storedPackEntry is one entry of a pack as stored: its type, its inflated
// data (an object's content, or a delta's instructions), and for a delta
// where its base is.
type storedPackEntry struct {
	t    plumbing.ObjectType
	data []byte
	base int64         // OFS_DELTA: the base's offset
	ref  plumbing.Hash // REF_DELTA: the base's name
}

// zlibReaders reuses the inflaters of pack entries: a new one allocates
// tens of kilobytes, for entries of a few hundred bytes.
var zlibReaders sync.Pool

// readStoredEntry reads the entry at offset off of the pack f. Its size is
// bounded by maxPackedRead: a larger one is errNotWhole, and so is a
// delta when wholeOnly is set, before its data is inflated.
func readStoredEntry(f io.ReaderAt, off int64, wholeOnly bool) (storedPackEntry, error) {
	return readStoredEntryPart(f, off, wholeOnly, maxPackedRead, 0)
}

// readStoredEntryPart is readStoredEntry with its own size bound, limit,
// inflating only the first prefix bytes of the entry's data when prefix
// is not 0 (and then whatever its size).
func readStoredEntryPart(f io.ReaderAt, off int64, wholeOnly bool, limit, prefix uint64) (storedPackEntry, error) {
	var e storedPackEntry
	br := bufio.NewReaderSize(io.NewSectionReader(f, off, 1<<62), 512)
	c, err := br.ReadByte()
	if err != nil {
		return e, err
	}
	e.t = plumbing.ObjectType(c >> 4 & 7)
	size := uint64(c & 15)
	for shift := uint(4); c&0x80 != 0; shift += 7 {
		if shift > 56 {
			return e, errors.New("a damaged object header")
		}
		if c, err = br.ReadByte(); err != nil {
			return e, err
		}
		size |= uint64(c&0x7f) << shift
	}
	if wholeOnly && (e.t == plumbing.OFSDeltaObject || e.t == plumbing.REFDeltaObject) {
		return e, errNotWhole
	}
	switch e.t {
	case plumbing.CommitObject, plumbing.TreeObject, plumbing.BlobObject, plumbing.TagObject:
	case plumbing.OFSDeltaObject:
		// The distance back to the base, big-endian, 7 bits a byte,
		// each byte after the first adding one (git's offset encoding).
		c, err := br.ReadByte()
		if err != nil {
			return e, err
		}
		back := uint64(c & 0x7f)
		for c&0x80 != 0 {
			if back >= 1<<56 {
				return e, errors.New("a damaged delta offset")
			}
			if c, err = br.ReadByte(); err != nil {
				return e, err
			}
			back = (back+1)<<7 | uint64(c&0x7f)
		}
		if back == 0 || back > uint64(off) {
			return e, fmt.Errorf("a delta whose base would be at %d bytes before it", back)
		}
		e.base = off - int64(back)
	case plumbing.REFDeltaObject:
		if _, err := io.ReadFull(br, e.ref[:]); err != nil {
			return e, err
		}
	default:
		return e, fmt.Errorf("unknown object type %d", e.t)
	}
	if prefix > 0 {
		size = min(size, prefix)
	} else if size > limit {
		return e, errNotWhole
	}
	zr, _ := zlibReaders.Get().(io.ReadCloser)
	if zr == nil {
		zr, err = zlib.NewReader(br)
	} else {
		err = zr.(zlib.Resetter).Reset(br, nil)
	}
	if err != nil {
		return e, err
	}
	defer zlibReaders.Put(zr)
	// Read up to size, not allocated up front beyond a bound: a damaged
	// header may claim more than the stream holds.
	buf := make([]byte, 0, min(size, 1<<20))
	w := byteSink{buf}
	n, err := io.Copy(&w, io.LimitReader(zr, int64(size)))
	if err == nil && uint64(n) != size {
		err = io.ErrUnexpectedEOF
	}
	if err != nil {
		return e, err
	}
	e.data = w.b
	return e, nil
}

// byteSink collects what is written to it.
type byteSink struct{ b []byte }

func (s *byteSink) Write(p []byte) (int, error) {
	s.b = append(s.b, p...)
	return len(p), nil
}

// applyDelta builds an object from its base and a delta's instructions
// (git's format: the base's size and the result's, then copies from the
// base and inserts of new bytes), checking every bound.
func applyDelta(base, delta []byte) ([]byte, error) {
	srcSize, n := binary.Uvarint(delta)
	if n <= 0 {
		return nil, errors.New("a damaged delta header")
	}
	delta = delta[n:]
	dstSize, n := binary.Uvarint(delta)
	if n <= 0 {
		return nil, errors.New("a damaged delta header")
	}
	delta = delta[n:]
	if srcSize != uint64(len(base)) {
		return nil, fmt.Errorf("a delta for a base of %d bytes, applied to one of %d", srcSize, len(base))
	}
	if dstSize > maxPackedRead {
		return nil, errNotWhole
	}
	// Grown past 1 MiB only as the instructions fill it: a damaged
	// header may claim up to maxPackedRead.
	out := make([]byte, 0, min(dstSize, 1<<20))
	for len(delta) > 0 {
		op := delta[0]
		delta = delta[1:]
		switch {
		case op&0x80 != 0:
			// Copy: up to 4 offset bytes and 3 size bytes, each present
			// when its bit of op is set.
			var off, size uint64
			for i := range 7 {
				if op&(1<<i) == 0 {
					continue
				}
				if len(delta) == 0 {
					return nil, errors.New("a copy instruction cut short")
				}
				if i < 4 {
					off |= uint64(delta[0]) << (8 * i)
				} else {
					size |= uint64(delta[0]) << (8 * (i - 4))
				}
				delta = delta[1:]
			}
			if size == 0 {
				size = 0x10000
			}
			if off+size > uint64(len(base)) || uint64(len(out))+size > dstSize {
				return nil, errors.New("a copy outside the base or the result")
			}
			out = append(out, base[off:off+size]...)
		case op != 0:
			// Insert the next op bytes.
			if int(op) > len(delta) || uint64(len(out))+uint64(op) > dstSize {
				return nil, errors.New("an insert outside the delta or the result")
			}
			out = append(out, delta[:op]...)
			delta = delta[op:]
		default:
			return nil, errors.New("the reserved instruction 0")
		}
	}
	if uint64(len(out)) != dstSize {
		return nil, fmt.Errorf("a delta result of %d bytes, where it says %d", len(out), dstSize)
	}
	return out, nil
}

// packIndex is a version 2 pack index held in memory.
type packIndex struct {
	fanout  [256]uint32
	names   []byte // 20 bytes an object, sorted
	offsets []byte // 4 bytes an object
	large   []byte // 8 bytes an offset past 2 GiB
}

// parsePackIndex checks the layout of a version 2 index and returns it.
func parsePackIndex(raw []byte) (*packIndex, error) {
	const fanoutAt, namesAt = 8, 8 + 256*4
	if len(raw) < namesAt || string(raw[:8]) != "\xfftOc\x00\x00\x00\x02" {
		return nil, errors.New("not a version 2 pack index")
	}
	ix := &packIndex{}
	prev := uint32(0)
	for i := range ix.fanout {
		ix.fanout[i] = binary.BigEndian.Uint32(raw[fanoutAt+4*i:])
		if ix.fanout[i] < prev {
			return nil, errors.New("its fan-out table is damaged")
		}
		prev = ix.fanout[i]
	}
	n := int64(ix.fanout[255])
	offsetsAt := namesAt + n*20 + n*4 // past the names and their CRCs
	largeAt := offsetsAt + n*4
	trailer := int64(2 * 20)
	if largeAt+trailer > int64(len(raw)) {
		return nil, errors.New("it is shorter than its fan-out table says")
	}
	ix.names = raw[namesAt : namesAt+n*20]
	ix.offsets = raw[offsetsAt:largeAt]
	ix.large = raw[largeAt : int64(len(raw))-trailer]
	return ix, nil
}

// find returns the offset of object h, or errNotPacked when the index
// does not list it.
func (ix *packIndex) find(h plumbing.Hash) (int64, error) {
	lo, hi := 0, int(ix.fanout[h[0]])
	if h[0] > 0 {
		lo = int(ix.fanout[h[0]-1])
	}
	i, ok := searchNames(ix.names[lo*20:hi*20], h)
	if !ok {
		return 0, errNotPacked
	}
	k := lo + i
	off := binary.BigEndian.Uint32(ix.offsets[k*4:])
	if off&0x80000000 == 0 {
		return int64(off), nil
	}
	at := int(off&0x7fffffff) * 8
	if at+8 > len(ix.large) {
		return 0, fmt.Errorf("its index gives it a large offset past the end of the table (entry %d)", at/8)
	}
	return int64(binary.BigEndian.Uint64(ix.large[at:])), nil
}

// baseCache keeps decoded objects of a packSet by pack and offset, the
// least recently used dropped first once they hold more than limit bytes.
type baseCache struct {
	limit, size int
	order       list.List // of *cached, the most recent first
	byAt        map[cacheKey]*list.Element
}

type cacheKey struct {
	p   *setPack
	off int64
}

type cached struct {
	key     cacheKey
	t       plumbing.ObjectType
	content []byte
}

func (c *baseCache) get(p *setPack, off int64) (plumbing.ObjectType, []byte, bool) {
	e, ok := c.byAt[cacheKey{p, off}]
	if !ok {
		return 0, nil, false
	}
	c.order.MoveToFront(e)
	v := e.Value.(*cached)
	return v.t, v.content, true
}

func (c *baseCache) put(p *setPack, off int64, t plumbing.ObjectType, content []byte) {
	if len(content) > c.limit/4 {
		return
	}
	if c.byAt == nil {
		c.byAt = map[cacheKey]*list.Element{}
	}
	k := cacheKey{p, off}
	if _, ok := c.byAt[k]; ok {
		return
	}
	c.byAt[k] = c.order.PushFront(&cached{k, t, content})
	c.size += len(content)
	for c.size > c.limit {
		last := c.order.Back()
		v := last.Value.(*cached)
		c.order.Remove(last)
		delete(c.byAt, v.key)
		c.size -= len(v.content)
	}
}
