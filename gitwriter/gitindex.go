package gitwriter

import (
	"bytes"
	"crypto/sha1"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/format/index"
)

// Git's index file (.git/index) lists every tracked file with its blob
// hash and stat data. go-git reads and writes it whole, decoding each of
// its entries through reflection: for 50,000 files that took most of a
// second per read or write, and Open read it on every cycle. The code
// below reads the file as bytes, checks its checksum, and patches it: an
// update copies the entries that did not change as they are and encodes
// only the changed ones, so its cost is a copy and a SHA-1 of the file.
//
// It handles index versions 2 and 3, which go-git and git write by
// default. Optional extensions (the cached tree, the untracked cache,
// resolve-undo) are dropped on a patch, as they may no longer hold; git
// rebuilds them when it wants them. An index of version 4 (prefix-
// compressed paths) or with a required extension (a split index) is not
// patched: the caller falls back to go-git.

// errIndexFormat reports an index this code does not patch.
var errIndexFormat = errors.New("index format not supported for patching")

const indexSignature = "DIRC"

// rawIndex is an index file split into entries.
type rawIndex struct {
	version uint32
	entries []rawEntry
}

// rawEntry is one entry: its path and its encoded bytes (which hold the
// stage), both slices of the file read.
type rawEntry struct {
	name []byte
	data []byte
}

// readRawIndex reads and checks the index file at path.
func readRawIndex(path string) (*rawIndex, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return parseRawIndex(data)
}

func parseRawIndex(data []byte) (*rawIndex, error) {
	if len(data) < 12+sha1.Size || string(data[:4]) != indexSignature {
		return nil, errors.New("not a git index")
	}
	body, sum := data[:len(data)-sha1.Size], data[len(data)-sha1.Size:]
	if got := sha1.Sum(body); !bytes.Equal(got[:], sum) {
		return nil, errors.New("index checksum mismatch")
	}
	ix := &rawIndex{version: binary.BigEndian.Uint32(data[4:8])}
	if ix.version != 2 && ix.version != 3 {
		return nil, errIndexFormat
	}
	n := int(binary.BigEndian.Uint32(data[8:12]))
	if n > len(body)/62 {
		return nil, errors.New("index entry count too large")
	}
	ix.entries = make([]rawEntry, 0, n)
	p := 12
	for range n {
		if p+62 > len(body) {
			return nil, errors.New("index truncated")
		}
		flags := binary.BigEndian.Uint16(body[p+60:])
		head := 62
		if flags&0x4000 != 0 {
			if ix.version < 3 {
				return nil, errors.New("extended index entry in version 2")
			}
			head = 64
		}
		nameStart := p + head
		end := bytes.IndexByte(body[nameStart:], 0)
		if end < 0 {
			return nil, errors.New("index entry name not terminated")
		}
		name := body[nameStart : nameStart+end]
		size := (head + len(name) + 8) &^ 7
		if p+size > len(body) {
			return nil, errors.New("index truncated")
		}
		if k := len(ix.entries); k > 0 && bytes.Compare(ix.entries[k-1].name, name) > 0 {
			return nil, errors.New("index entries out of order")
		}
		ix.entries = append(ix.entries, rawEntry{name: name, data: body[p : p+size]})
		p += size
	}
	// Extensions: a lowercase first letter marks one a reader must
	// understand (link: split index, sdir: sparse directories).
	for p+8 <= len(body) {
		sig := body[p : p+4]
		size := int(binary.BigEndian.Uint32(body[p+4:]))
		if sig[0] >= 'a' && sig[0] <= 'z' {
			return nil, errIndexFormat
		}
		p += 8 + size
	}
	return ix, nil
}

// indexChange is one change to an index: set the entry of Name from a
// file in the worktree, or remove it.
type indexChange struct {
	name   string
	remove bool
	hash   plumbing.Hash
	mode   filemode.FileMode
	// stat holds the entry's stat fields (ctime, mtime, dev, ino, mode,
	// uid, gid, size: the first 40 bytes of an entry) from the file's
	// lstat data; zero when there was none (git then hashes the file to
	// compare it).
	stat [40]byte
}

// statFields returns the stat fields of an index entry for the file fi
// describes; nil gives zeros.
func statFields(fi fs.FileInfo) [40]byte {
	var b [40]byte
	if fi != nil && !fillStat(b[:], fi) {
		t := fi.ModTime()
		binary.BigEndian.PutUint32(b[8:], uint32(t.Unix()))
		binary.BigEndian.PutUint32(b[12:], uint32(t.Nanosecond()))
		binary.BigEndian.PutUint32(b[36:], uint32(fi.Size()))
	}
	return b
}

// statSame reports whether fi's lstat data are those index entry e
// records, by the fields git compares by default (core.checkStat,
// core.trustctime): ctime, mtime, inode, owner and size, not the device.
// A file rewritten in place within one mtime tick, or replaced by
// another with its size and mtime (sed -i; touch -d), changes its ctime
// or inode. Where fillStat gives no such fields (other than Linux and
// macOS), mtime and size.
func statSame(e *index.Entry, fi fs.FileInfo) bool {
	var now [40]byte
	if !fillStat(now[:], fi) {
		return e.ModifiedAt.Equal(fi.ModTime()) && e.Size == uint32(fi.Size())
	}
	was := entryStat(e)
	copy(now[16:20], was[16:20]) // not the device
	return was == now
}

// entryStat returns the stat fields of go-git's index entry e, as
// statFields gives them; setEntryStat sets them.
func entryStat(e *index.Entry) [40]byte {
	var b [40]byte
	put := binary.BigEndian.PutUint32
	put(b[0:], uint32(e.CreatedAt.Unix()))
	put(b[4:], uint32(e.CreatedAt.Nanosecond()))
	put(b[8:], uint32(e.ModifiedAt.Unix()))
	put(b[12:], uint32(e.ModifiedAt.Nanosecond()))
	put(b[16:], e.Dev)
	put(b[20:], e.Inode)
	put(b[28:], e.UID)
	put(b[32:], e.GID)
	put(b[36:], e.Size)
	return b
}

func setEntryStat(e *index.Entry, b [40]byte) {
	u := func(at int) uint32 { return binary.BigEndian.Uint32(b[at:]) }
	e.CreatedAt = time.Unix(int64(u(0)), int64(u(4)))
	e.ModifiedAt = time.Unix(int64(u(8)), int64(u(12)))
	e.Dev, e.Inode, e.UID, e.GID, e.Size = u(16), u(20), u(28), u(32), u(36)
}

// patch applies changes to the index and returns its new bytes; of two
// changes to one name, the later wins. Stage-0 entries are replaced; an
// entry whose name is changed loses any conflict stages. The entries are
// in name order (git sorts them so, and parseRawIndex checks it), so the
// changes, sorted, are merged in: a commit of a few files costs one pass
// over the index, not a sort of it.
func (ix *rawIndex) patch(changes []indexChange) []byte {
	cs := slices.Clone(changes)
	slices.SortStableFunc(cs, func(a, b indexChange) int { return strings.Compare(a.name, b.name) })
	w := 0
	for _, c := range cs {
		if w > 0 && cs[w-1].name == c.name {
			cs[w-1] = c
			continue
		}
		cs[w] = c
		w++
	}
	cs = cs[:w]
	size := 12 + sha1.Size
	for _, e := range ix.entries {
		size += len(e.data)
	}
	for _, c := range cs {
		size += (62 + len(c.name) + 8) &^ 7
	}
	out := make([]byte, 12, size)
	copy(out, indexSignature)
	binary.BigEndian.PutUint32(out[4:], ix.version)
	count := 0
	i := 0
	for _, c := range cs {
		name := []byte(c.name)
		for i < len(ix.entries) && bytes.Compare(ix.entries[i].name, name) < 0 {
			out = append(out, ix.entries[i].data...)
			count++
			i++
		}
		for i < len(ix.entries) && bytes.Equal(ix.entries[i].name, name) {
			i++ // every stage of a changed name goes
		}
		if !c.remove {
			out = append(out, encodeIndexEntry(c, ix.version)...)
			count++
		}
	}
	for ; i < len(ix.entries); i++ {
		out = append(out, ix.entries[i].data...)
		count++
	}
	binary.BigEndian.PutUint32(out[8:], uint32(count))
	sum := sha1.Sum(out)
	// The entries now live in out; a caller that patches again reads the
	// file again.
	ix.entries = nil
	return append(out, sum[:]...)
}

// encodeIndexEntry encodes one stage-0 entry.
func encodeIndexEntry(c indexChange, version uint32) []byte {
	size := (62 + len(c.name) + 8) &^ 7
	b := make([]byte, size)
	copy(b, c.stat[:])
	binary.BigEndian.PutUint32(b[24:], uint32(c.mode))
	copy(b[40:60], c.hash[:])
	n := len(c.name)
	if n > 0xfff {
		n = 0xfff
	}
	binary.BigEndian.PutUint16(b[60:], uint16(n))
	copy(b[62:], c.name)
	return b
}

// writeIndexFile replaces the index file at path with data, through
// index.lock as git does.
func writeIndexFile(path string, data []byte) error {
	err := replaceLocked(path, data, false)
	switch {
	case errors.As(err, new(*lockHeldError)):
		return fmt.Errorf("locking the index: %w", err)
	case err != nil:
		return fmt.Errorf("writing the index: %w", err)
	}
	return nil
}

// lockHeldError is replaceLocked's error when the lock file exists.
type lockHeldError struct{ lock string }

func (e *lockHeldError) Error() string {
	return e.lock + " exists: is a git command running in the working copy? (a lock file an interrupted cycle left is removed when the working copy is next opened, once unchanged for " + leftAge.String() + ")"
}

func (e *lockHeldError) Unwrap() error { return fs.ErrExist }

// replaceLocked replaces the file at path with data as git replaces its
// own files: it writes path.lock, made only if absent (a *lockHeldError
// otherwise), syncs it if sync is set, and renames it over path. Nothing
// is left behind on an error.
func replaceLocked(path string, data []byte, sync bool) error {
	lock := path + ".lock"
	f, err := os.OpenFile(lock, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if errors.Is(err, fs.ErrExist) {
		return &lockHeldError{lock: lock}
	}
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil && sync {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(lock, path)
	}
	if err != nil {
		os.Remove(lock)
	}
	return err
}

// checkIndex checks that the index file of the working copy at dir can
// be read. When sum, the checksum the state file records (or ""), is the
// index's, the index is the one imagebump wrote, and its header and
// trailing checksum are enough; otherwise the whole file is parsed.
func checkIndex(dir, sum string) error {
	path := filepath.Join(dir, ".git", "index")
	if sum != "" {
		if got, err := indexChecksum(path); err == nil && got == sum {
			f, err := os.Open(path)
			if err != nil {
				return err
			}
			defer f.Close()
			head := make([]byte, 8)
			if _, err := io.ReadFull(f, head); err != nil || string(head[:4]) != indexSignature {
				return errors.New("not a git index")
			}
			if v := binary.BigEndian.Uint32(head[4:]); v != 2 && v != 3 {
				return errIndexFormat
			}
			return nil
		}
	}
	_, err := readRawIndex(path)
	return err
}
