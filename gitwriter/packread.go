package gitwriter

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/imagebump/imagebump/internal/oneline"
)

// A cycle reads a few objects of its head from the packs: the commit and
// its tree when it opens a working copy, and the trees along the paths it
// changes. go-git's store answers each by first loading every pack index
// whole and then, in every read, mapping each offset of the pack to its
// object's name (to look the object up in its cache by name): 59,000
// objects for a 50,000-file fleet, about 10 ms of a 35 ms cycle with
// nothing new. packedObject reads one object the way git does instead:
// the index's fan-out table gives the slice of names to search, a binary
// search gives the offset, and the object is inflated from there.

// errNotWhole says that no pack holds an object whole: none lists it, or
// the one that does stores it as a delta. The caller asks go-git's store.
var errNotWhole = errors.New("no pack holds the object whole")

// maxPackedRead bounds the size of an object packedObject reads: commits
// and trees, far smaller. A larger size is left to go-git's store.
const maxPackedRead = 64 << 20

// packedObject returns the type and content of object h from a pack in
// the objects folder that stores it whole, checked against its name. It
// returns errNotWhole when no pack does, and an error naming the damage
// when every pack that lists h fails to give it whole.
func packedObject(objects string, h plumbing.Hash) (plumbing.ObjectType, []byte, error) {
	return packedPart(objects, h, 0)
}

// packedPart is packedObject reading only the first prefix bytes of the
// object's content when prefix is not 0, which cannot be checked against
// its name.
func packedPart(objects string, h plumbing.Hash, prefix uint64) (plumbing.ObjectType, []byte, error) {
	bases, err := packBases(filepath.Join(objects, "pack"))
	if errors.Is(err, errNoPackFolder) {
		return 0, nil, errNotWhole
	}
	if err != nil {
		return 0, nil, err
	}
	var errs []error
	for _, base := range bases {
		offset, err := idxOffset(base+".idx", h)
		if errors.Is(err, plumbing.ErrObjectNotFound) {
			continue
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		t, content, err := readWhole(base+".pack", offset, prefix)
		if errors.Is(err, errNotWhole) {
			continue
		}
		if err == nil && prefix == 0 && objectHash(t, content) != h {
			err = fmt.Errorf("object %s in %s.pack: its content does not match its name: %w", shortHash(h), filepath.Base(base), errDamaged)
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		return t, content, nil
	}
	if len(errs) > 0 {
		return 0, nil, oneline.Join(errs...)
	}
	return 0, nil, errNotWhole
}

// errNoPackFolder: the pack folder cannot be listed.
var errNoPackFolder = errors.New("the pack folder cannot be read")

// packBases returns the path without extension of each pack in dir that
// go-git reads (pack-<40 hex>.pack), and an error naming the first pack
// go-git would refuse, which makes it refuse every packed object: one
// without its index, or whose index is not version 2 or names another
// pack's checksum. Open then clones afresh, as it did when go-git said so.
func packBases(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, errNoPackFolder
	}
	var bases []string
	for _, e := range entries {
		name, ok := strings.CutSuffix(e.Name(), ".pack")
		if !ok {
			continue
		}
		sum, ok := strings.CutPrefix(name, "pack-")
		if !ok || !plumbing.IsHash(sum) {
			continue // go-git skips it too
		}
		base := filepath.Join(dir, name)
		if err := checkIdx(base+".idx", sum); err != nil {
			return nil, fmt.Errorf("pack %s: %w", e.Name(), err)
		}
		bases = append(bases, base)
	}
	return bases, nil
}

// checkIdx checks that the index at path is version 2 and names the pack
// whose checksum is sum, reading its first 8 bytes and its trailer.
func checkIdx(path, sum string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	var head [8]byte
	var trailer [20]byte
	if fi.Size() < 8+256*4+40 {
		return fmt.Errorf("%s is too short for a pack index", filepath.Base(path))
	}
	if _, err := f.ReadAt(head[:], 0); err != nil {
		return err
	}
	if !bytes.Equal(head[:], []byte{0xff, 't', 'O', 'c', 0, 0, 0, 2}) {
		return fmt.Errorf("%s is not a version 2 pack index", filepath.Base(path))
	}
	if _, err := f.ReadAt(trailer[:], fi.Size()-40); err != nil {
		return err
	}
	if got := plumbing.Hash(trailer).String(); got != sum {
		return fmt.Errorf("%s is the index of pack %s, not of this one", filepath.Base(path), got)
	}
	return nil
}

// idxOffset returns the offset of object h in the pack whose version-2
// index file is path, reading only the fan-out table, the slice of names
// starting with h's first byte, and h's offset. It returns
// plumbing.ErrObjectNotFound when the index does not list h.
func idxOffset(path string, h plumbing.Hash) (int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return 0, err
	}
	off, err := findOffset(f, fi.Size(), h)
	if err != nil && !errors.Is(err, plumbing.ErrObjectNotFound) {
		err = fmt.Errorf("reading %s: %w", filepath.Base(path), err)
	}
	return off, err
}

// findOffset is idxOffset on the index f of size bytes.
func findOffset(f io.ReaderAt, size int64, h plumbing.Hash) (int64, error) {
	const fanoutAt = 8
	var head [fanoutAt + 256*4]byte
	if _, err := f.ReadAt(head[:], 0); err != nil {
		return 0, err
	}
	if !bytes.Equal(head[:8], []byte{0xff, 't', 'O', 'c', 0, 0, 0, 2}) {
		return 0, errors.New("not a version 2 pack index")
	}
	fanout := func(i int) int64 { return int64(binary.BigEndian.Uint32(head[fanoutAt+4*i:])) }
	n := fanout(255)
	lo, hi := int64(0), fanout(int(h[0]))
	if h[0] > 0 {
		lo = fanout(int(h[0]) - 1)
	}
	namesAt := int64(len(head))
	// The names, their checksums and offsets must fit in the file.
	if lo > hi || hi > n || namesAt+n*28 > size {
		return 0, errors.New("its fan-out table is damaged")
	}
	names := make([]byte, (hi-lo)*20)
	if _, err := f.ReadAt(names, namesAt+lo*20); err != nil {
		return 0, err
	}
	i, ok := searchNames(names, h)
	if !ok {
		return 0, plumbing.ErrObjectNotFound
	}
	k := lo + int64(i)
	offsetsAt := namesAt + n*20 + n*4
	var b [8]byte
	if _, err := f.ReadAt(b[:4], offsetsAt+k*4); err != nil {
		return 0, err
	}
	off := binary.BigEndian.Uint32(b[:4])
	if off&0x80000000 == 0 {
		return int64(off), nil
	}
	// An offset past 2 GiB, in the table of large offsets.
	if _, err := f.ReadAt(b[:], offsetsAt+n*4+int64(off&0x7fffffff)*8); err != nil {
		return 0, err
	}
	return int64(binary.BigEndian.Uint64(b[:])), nil
}

// searchNames finds h in names, 20 bytes a name in sorted order, and
// returns its place.
func searchNames(names []byte, h plumbing.Hash) (int, bool) {
	i, j := 0, len(names)/20
	for i < j {
		m := int(uint(i+j) >> 1)
		switch c := bytes.Compare(names[m*20:m*20+20], h[:]); {
		case c == 0:
			return m, true
		case c < 0:
			i = m + 1
		default:
			j = m
		}
	}
	return 0, false
}

// readWhole inflates the object at offset in the pack file at path (its
// first prefix bytes, when prefix is not 0), or returns errNotWhole when
// it is stored as a delta or is larger than maxPackedRead.
func readWhole(path string, offset int64, prefix uint64) (plumbing.ObjectType, []byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, nil, err
	}
	defer f.Close()
	t, content, err := readWholeAt(f, offset, prefix)
	if err != nil && !errors.Is(err, errNotWhole) {
		err = fmt.Errorf("reading %s at %d: %w", filepath.Base(path), offset, err)
	}
	return t, content, err
}

// readWholeAt is readWhole on the pack f.
func readWholeAt(f io.ReaderAt, offset int64, prefix uint64) (plumbing.ObjectType, []byte, error) {
	e, err := readStoredEntryPart(f, offset, true, maxPackedRead, prefix)
	if err != nil {
		return 0, nil, err
	}
	return e.t, e.data, nil
}

// packedCommit returns the content of commit h from a pack that stores it
// whole (packedObject).
func packedCommit(objects string, h plumbing.Hash) ([]byte, error) {
	t, content, err := packedObject(objects, h)
	if err == nil && t != plumbing.CommitObject {
		err = fmt.Errorf("object %s is a %s, not a commit: %w", shortHash(h), t, plumbing.ErrInvalidType)
	}
	return content, err
}

// treeObject reads tree h: from a pack that stores it whole
// (packedObject), or else from go-git's store, which reads a loose object
// without loading any pack index, checked against its name
// (storedObject).
func treeObject(repo *git.Repository, objects string, h plumbing.Hash) (*object.Tree, error) {
	t, content, err := packedObject(objects, h)
	switch {
	case errors.Is(err, errNotWhole):
		t, content, err = storedObject(repo, plumbing.TreeObject, h)
		if err != nil {
			return nil, err
		}
	case err != nil:
		return nil, err
	case t != plumbing.TreeObject:
		return nil, fmt.Errorf("object %s is a %s, not a tree: %w", shortHash(h), t, plumbing.ErrInvalidType)
	}
	obj := &plumbing.MemoryObject{}
	obj.SetType(plumbing.TreeObject)
	if _, err := obj.Write(content); err != nil {
		return nil, err
	}
	return object.DecodeTree(repo.Storer, obj)
}

// hasObject reports whether object h is in the store: a loose file, or
// listed by a pack's index (findOffset), without loading every index as
// go-git's store does; go-git answers when a pack is one it would refuse
// (packBases) or the pack folder cannot be read.
func hasObject(repo *git.Repository, objects string, h plumbing.Hash) bool {
	hex := h.String()
	if _, err := os.Stat(filepath.Join(objects, hex[:2], hex[2:])); err == nil {
		return true
	}
	bases, err := packBases(filepath.Join(objects, "pack"))
	if err != nil {
		return repo.Storer.HasEncodedObject(h) == nil
	}
	for _, base := range bases {
		if _, err := idxOffset(base+".idx", h); err == nil {
			return true
		}
	}
	return false
}
