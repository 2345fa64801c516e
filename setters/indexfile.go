package setters

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The index file: a magic line, then uvarint-prefixed fields, then the
// SHA-256 of everything before it. Strings are a uvarint length and the
// bytes. Any change to what a scan records, or to this layout, must bump
// indexFormat; builds from other sources (another version or commit of
// imagebump) write another buildID, and an index from another build is
// rebuilt, never read.

// indexMagic starts every index file.
const indexMagic = "imagebump marker index\n"

// indexFormat is the version of the index layout and of what a scan
// records in it. 3: marker comments end at every YAML line break, not at
// LF only. 4: a marker on an empty list item is a problem, no longer a
// marker of the next item.
const indexFormat = 4

// buildID names the build that writes an index: the module's version and,
// when the binary records them, the commit it was built from and whether
// the tree was modified.
var buildID = sync.OnceValue(func() string {
	id := "format " + strconv.Itoa(indexFormat)
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return id
	}
	id += " " + info.Main.Path + "@" + info.Main.Version
	vcs := false
	for _, s := range info.Settings {
		if s.Key == "vcs.revision" || s.Key == "vcs.modified" {
			id += " " + s.Key + "=" + s.Value
			vcs = true
		}
	}
	if !vcs || strings.Contains(id, "vcs.modified=true") {
		// A development build (go run, go test, a modified tree) says
		// nothing of its code: its executable's size and time stand in.
		if exe, err := os.Executable(); err == nil {
			if fi, err := os.Stat(exe); err == nil {
				id += fmt.Sprintf(" exe=%d/%d", fi.Size(), fi.ModTime().UnixNano())
			}
		}
	}
	return id
})

// Problem kinds in the file.
const (
	errKindText = iota
	errKindSyntax
	errKindMarker
	errKindTooLarge
	errKindNoScalar
	errKindFlow
	errKindInFlow
)

var sentinels = map[int]error{errKindNoScalar: errNoScalar, errKindFlow: errFlow, errKindInFlow: errInFlow}

// LoadIndex reads the index saved at path for scans with opts' Paths and
// MaxFileSize. When the file is missing, cannot be read, is damaged, was
// written by another build of imagebump, or is of another kind or made
// for other Paths or MaxFileSize, it returns an empty index (which the
// next Scan fills) and says why in reason.
func LoadIndex(path string, kind IndexKind, opts Options) (ix *Index, reason string) {
	empty := NewIndex(kind, opts)
	data, from, err := loadIndexFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return empty, "no marker index yet"
	case err != nil:
		return empty, "the marker index cannot be read: " + err.Error()
	}
	ix, err = decodeIndex(data)
	switch {
	case errors.Is(err, errOtherBuild):
		return empty, "the marker index was " + err.Error()
	case err != nil:
		return empty, "the marker index is damaged: " + err.Error()
	case ix.kind != kind:
		return empty, "the marker index is of another kind"
	case ix.shape != empty.shape:
		return empty, "the marker index was made for other paths or limits"
	}
	ix.from = from
	return ix, ""
}

// ReloadIndex is LoadIndex for a caller that kept prev, an index it
// loaded from path or saved there: while path still holds that file
// (the same device, inode, size and times) and prev is unchanged since,
// of the same kind and made for the same options, it returns a copy of
// prev without reading the file. serve keeps each target's index between
// cycles so.
func ReloadIndex(prev *Index, path string, kind IndexKind, opts Options) (ix *Index, reason string) {
	if prev != nil && !prev.dirty && !prev.from.weak && prev.from != (statKey{}) &&
		prev.kind == kind && prev.shape == shapeOf(opts) {
		if fi, err := os.Stat(path); err == nil && keyOf(fi) == prev.from {
			ix := prev.Clone()
			ix.problems = nil // as decoded: they are the last Scan's
			return ix, ""
		}
	}
	return LoadIndex(path, kind, opts)
}

// loadIndexFile is how LoadIndex reads the file; tests count the calls.
var loadIndexFile = readIndexFile

// readIndexFile reads the file at path and returns, with its bytes, the
// stat key of the file read. It reads as Apply reads a YAML file
// (readFileKey): a link, a FIFO or a device at path is not followed,
// waited on or read without end, but refused, and the index rebuilt.
func readIndexFile(path string) ([]byte, statKey, error) {
	var buf bytes.Buffer
	var key statKey
	if err := readFileKey(path, &buf, 0, &key); err != nil {
		return nil, statKey{}, err
	}
	return buf.Bytes(), key, nil
}

// errOtherBuild reports an index written by another build.
var errOtherBuild = errors.New("written by another build of imagebump")

// Save writes the index to path, through a temporary file renamed over
// it, creating its folder. An index that did not change since it was
// loaded or saved is not written again.
func (ix *Index) Save(path string) error {
	if !ix.dirty {
		if fi, err := os.Stat(path); err == nil {
			// Unchanged, but in use: PruneIndexes goes by the time.
			if time.Since(fi.ModTime()) > 24*time.Hour {
				now := time.Now()
				_ = os.Chtimes(path, now, now)
				ix.from = statKey{} // its times changed
			}
			return nil
		}
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("saving the marker index: %w", err)
	}
	data := ix.encode()
	tmp := path + ".tmp-" + strconv.FormatUint(uint64(rand.Uint32()), 10)
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("saving the marker index: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("saving the marker index: %w", err)
	}
	removeStaleTemps(path)
	ix.dirty = false
	// What ReloadIndex compares; a file replaced between the rename and
	// this stat is one the caller's lock on path should have kept out.
	ix.from = statKey{}
	if fi, err := os.Stat(path); err == nil {
		ix.from = keyOf(fi)
	}
	return nil
}

// encoder writes the fields of an index file.
type encoder struct{ b []byte }

func (e *encoder) uint(v uint64) { e.b = binary.AppendUvarint(e.b, v) }
func (e *encoder) int(v int64)   { e.b = binary.AppendVarint(e.b, v) }
func (e *encoder) str(s string)  { e.uint(uint64(len(s))); e.b = append(e.b, s...) }
func (e *encoder) bool(v bool) {
	if v {
		e.b = append(e.b, 1)
	} else {
		e.b = append(e.b, 0)
	}
}

func (ix *Index) encode() []byte {
	e := &encoder{b: make([]byte, 0, 64+len(ix.files)*96)}
	e.b = append(e.b, indexMagic...)
	e.str(buildID())
	e.uint(uint64(ix.kind))
	e.str(ix.shape)
	e.str(ix.head)
	e.bool(ix.built)
	e.uint(uint64(ix.candidates))
	e.str(ix.unsupported)
	e.uint(uint64(len(ix.pending)))
	// In name order: the same index is the same bytes.
	for _, p := range slices.Sorted(maps.Keys(ix.pending)) {
		e.str(p)
		e.str(ix.pending[p])
	}
	e.uint(uint64(len(ix.files)))
	for _, rel := range ix.paths() {
		f := ix.files[rel]
		e.str(rel)
		flags := uint64(0)
		if f.token {
			flags |= 1
		}
		if f.racy {
			flags |= 2
		}
		if f.stat.weak {
			flags |= 4
		}
		if f.parsed {
			flags |= 8
		}
		e.uint(flags)
		if ix.kind == ByStat {
			e.uint(f.stat.dev)
			e.uint(f.stat.ino)
			e.int(f.stat.size)
			e.int(f.stat.mtime)
			e.int(f.stat.ctime)
			e.uint(uint64(f.stat.mode))
		}
		if !f.token {
			continue
		}
		e.b = append(e.b, f.blob[:]...)
		e.uint(uint64(len(f.markers)))
		for _, m := range f.markers {
			e.uint(uint64(m.line))
			e.uint(uint64(m.column))
			e.str(m.policy)
			e.str(string(m.field))
			e.str(m.value)
			e.bool(m.inFlow)
		}
		e.uint(uint64(len(f.problems)))
		for _, p := range f.problems {
			e.uint(uint64(p.line))
			e.str(p.policy)
			encodeError(e, p.err)
		}
		e.uint(uint64(len(f.refs)))
		for _, r := range f.refs {
			e.str(r)
		}
	}
	sum := sha256.Sum256(e.b)
	return append(e.b, sum[:]...)
}

// encodeError writes a problem's error so that decodeError gives back an
// error of the same type and text.
func encodeError(e *encoder, err error) {
	var se *SyntaxError
	var me *MarkerError
	var tl *TooLargeError
	switch {
	case errors.As(err, &se):
		e.uint(errKindSyntax)
		e.uint(uint64(se.Line))
		e.str(se.Msg)
	case errors.As(err, &me):
		e.uint(errKindMarker)
		e.str(me.Comment)
		e.str(me.Reason)
		msg := ""
		if me.Err != nil {
			msg = me.Err.Error()
		}
		e.str(msg)
	case errors.As(err, &tl):
		e.uint(errKindTooLarge)
		e.int(tl.Size)
		e.int(tl.Limit)
		e.bool(tl.Marked)
	default:
		for k, s := range sentinels {
			if err == s {
				e.uint(uint64(k))
				return
			}
		}
		e.uint(errKindText)
		e.str(err.Error())
	}
}

// decoder reads the fields of an index file; the first error sticks.
type decoder struct {
	b   []byte
	err error
	// text is the whole body as one string: strings read are slices of
	// it, so that decoding allocates none for them.
	text string
}

var errTruncated = errors.New("truncated")

func (d *decoder) uint() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.err = errTruncated
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) int() int64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.err = errTruncated
		return 0
	}
	d.b = d.b[n:]
	return v
}

// count reads a length and checks it against what is left, at least min
// bytes per item.
func (d *decoder) count(min int) int {
	n := d.uint()
	if d.err == nil && n > uint64(len(d.b)/max(min, 1)) {
		d.err = errTruncated
		return 0
	}
	return int(n)
}

func (d *decoder) bytes(n int) []byte {
	if d.err != nil {
		return nil
	}
	if n > len(d.b) {
		d.err = errTruncated
		return nil
	}
	v := d.b[:n]
	d.b = d.b[n:]
	return v
}

func (d *decoder) str() string {
	n := d.count(1)
	at := len(d.text) - len(d.b)
	if d.bytes(n); d.err != nil {
		return ""
	}
	return d.text[at : at+n]
}

func (d *decoder) bool() bool {
	b := d.bytes(1)
	return len(b) == 1 && b[0] == 1
}

// decodeIndex decodes an index file's content.
func decodeIndex(data []byte) (*Index, error) {
	if !bytes.HasPrefix(data, []byte(indexMagic)) {
		return nil, errors.New("not a marker index")
	}
	if len(data) < len(indexMagic)+sha256.Size {
		return nil, errTruncated
	}
	body, sum := data[:len(data)-sha256.Size], data[len(data)-sha256.Size:]
	if got := sha256.Sum256(body); !bytes.Equal(got[:], sum) {
		return nil, errors.New("checksum mismatch")
	}
	d := &decoder{b: body[len(indexMagic):]}
	// One copy of the text: the decoded strings are slices of it.
	d.text = string(d.b)
	if id := d.str(); d.err == nil && id != buildID() {
		return nil, errOtherBuild
	}
	ix := &Index{}
	ix.kind = IndexKind(d.uint())
	ix.shape = d.str()
	ix.head = d.str()
	ix.built = d.bool()
	ix.candidates = int(d.uint())
	ix.unsupported = d.str()
	n := d.count(2)
	ix.pending = make(map[string]string, n)
	for range n {
		p := d.str()
		ix.pending[p] = d.str()
	}
	n = d.count(2)
	ix.files = make(map[string]*fileEntry, n)
	ix.order = make([]string, 0, n)
	entries := make([]fileEntry, n)
	for i := range n {
		if d.err != nil {
			break
		}
		rel := d.str()
		ix.order = append(ix.order, rel)
		flags := d.uint()
		f := &entries[i]
		*f = fileEntry{token: flags&1 != 0, racy: flags&2 != 0, parsed: flags&8 != 0}
		f.stat.weak = flags&4 != 0
		if ix.kind == ByStat {
			f.stat.dev = d.uint()
			f.stat.ino = d.uint()
			f.stat.size = d.int()
			f.stat.mtime = d.int()
			f.stat.ctime = d.int()
			f.stat.mode = uint32(d.uint())
		}
		ix.files[rel] = f
		if !f.token {
			continue
		}
		copy(f.blob[:], d.bytes(len(f.blob)))
		if m := d.count(5); m > 0 {
			f.markers = make([]indexMarker, m)
			for i := range f.markers {
				f.markers[i] = indexMarker{line: int(d.uint()), column: int(d.uint()), policy: d.str(), field: Field(d.str()), value: d.str(), inFlow: d.bool()}
			}
		}
		if m := d.count(3); m > 0 {
			f.problems = make([]indexProblem, m)
			for i := range f.problems {
				f.problems[i] = indexProblem{line: int(d.uint()), policy: d.str(), err: decodeError(d)}
			}
		}
		if m := d.count(1); m > 0 {
			f.refs = make([]string, m)
			for i := range f.refs {
				f.refs[i] = d.str()
			}
		}
	}
	if d.err == nil && len(d.b) != 0 {
		d.err = errors.New("unexpected data at the end")
	}
	if d.err != nil {
		return nil, d.err
	}
	if ix.kind != ByBlob && ix.kind != ByStat {
		return nil, fmt.Errorf("unknown kind %d", ix.kind)
	}
	return ix, nil
}

func decodeError(d *decoder) error {
	switch k := int(d.uint()); k {
	case errKindSyntax:
		return &SyntaxError{Line: int(d.uint()), Msg: d.str()}
	case errKindMarker:
		me := &MarkerError{Comment: d.str(), Reason: d.str()}
		if msg := d.str(); msg != "" {
			me.Err = errors.New(msg)
		}
		return me
	case errKindTooLarge:
		return &TooLargeError{Size: d.int(), Limit: d.int(), Marked: d.bool()}
	case errKindText:
		return errors.New(d.str())
	default:
		if s, ok := sentinels[k]; ok {
			return s
		}
		if d.err == nil {
			d.err = fmt.Errorf("unknown problem kind %d", k)
		}
		return errors.New("unknown problem")
	}
}

// removeStaleTemps removes the temporary files that saves of path killed
// before their rename left, an hour old at least (a save running beside
// this one, of another process, is younger). A working copy's index has
// no PruneIndexes to do it.
func removeStaleTemps(path string) {
	prefix := filepath.Base(path) + ".tmp-"
	pruneFiles(filepath.Dir(path), func(name string) time.Duration {
		if strings.HasPrefix(name, prefix) {
			return tempMaxAge
		}
		return -1
	})
}

// tempMaxAge is the age past which a save's temporary file is taken for
// the leftover of a killed save.
const tempMaxAge = time.Hour

// pruneFiles removes each regular file of dir that is older than what
// maxAge says for its name (a negative age keeps it). Errors are ignored.
func pruneFiles(dir string, maxAge func(name string) time.Duration) {
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		limit := maxAge(e.Name())
		if limit < 0 || !e.Type().IsRegular() {
			continue
		}
		if fi, err := e.Info(); err == nil && time.Since(fi.ModTime()) > limit {
			_ = os.Remove(filepath.Join(dir, e.Name()))
		}
	}
}

// PruneIndexes removes the index files in dir that no run used for
// maxAge (Save refreshes the time of an index it uses at least daily),
// and the temporary files of saves that were killed. A cache folder that
// keeps an index per checkout (plan and apply --repo) would otherwise
// grow with every checkout ever scanned, such as a CI job's temporary
// folders. Errors are ignored: it is a cache.
func PruneIndexes(dir string, maxAge time.Duration) {
	pruneFiles(dir, func(name string) time.Duration {
		if strings.Contains(name, ".tmp-") {
			return min(maxAge, tempMaxAge)
		}
		return maxAge
	})
}
