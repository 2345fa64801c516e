package setters

import (
	"bytes"
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// The marker index.
//
// A repository of tens of thousands of files changes a few files between
// two cycles, and a cycle usually finds nothing new. An Index remembers
// what a scan found in each file that can hold markers: its markers (line,
// column, policy, field, value), the problems that depend on the file
// alone (invalid YAML, malformed or misplaced markers), and the policies
// its marker comments name. Apply with Options.Index then reads only the
// files whose markers would change (a policy's pick moved away from the
// value the file holds); every other file's markers and problems come
// from the index, as a full scan would report them.
//
// What tells the index that a file changed depends on its kind:
//
//   - ByBlob (a Git working copy): the caller lists the files that differ
//     between the commit the index describes and the one the worktree now
//     holds (a Git tree diff, see Update). Scan reads those alone. Files
//     are named by their Git blob hash, and a file read later (to edit it)
//     must still hash to it: one that does not is reported as stale
//     (Result.Stale) and left alone.
//   - ByStat (a plain checkout, plan or apply --repo): Scan walks the tree
//     as Apply does and compares each file's (device, inode, size,
//     modification time, change time) with what it was when read, as Git's
//     own index does; only files that differ are read. A file whose
//     modification or change time falls within racyWindow of the scan that
//     recorded it is "racy", as Git calls it (it may have changed again
//     within the file system's timestamp granularity), and is read again.
//
// An index is a cache: LoadIndex returns an empty one when the file is
// missing, damaged, written by another imagebump or made for other Paths
// or MaxFileSize, and an empty index is filled by a full scan. Which
// policies exist and what they select are not part of it: the same index
// serves any config.

// IndexKind says what tells an Index that a file changed.
type IndexKind int

const (
	// ByBlob indexes a Git working copy: the caller reports the files that
	// changed between two commits (Index.Update); files are named by their
	// Git blob hash.
	ByBlob IndexKind = iota + 1
	// ByStat indexes a plain folder: each Scan walks it and reads the
	// files whose stat(2) data changed, as Git's index does.
	ByStat
)

func (k IndexKind) String() string {
	switch k {
	case ByBlob:
		return "blob"
	case ByStat:
		return "stat"
	}
	return "unknown"
}

// racyWindow is how close to the scan that recorded it a file's
// modification or change time may be before the file is read again: a
// change made within the file system's timestamp granularity (one tick
// of the kernel's clock on Linux, up to two seconds on FAT) after the
// scan read it could leave both times as they were.
const racyWindow = 2 * time.Second

// racyNow is the clock the racy rule reads; tests move it.
var racyNow = time.Now

// statKey is what ByStat compares to tell that a file changed.
type statKey struct {
	dev, ino     uint64
	size         int64
	mtime, ctime int64 // nanoseconds since the Unix epoch
	mode         uint32
	// weak is set where the platform gives no inode and change time: a
	// weak key never matches, so the file is read.
	weak bool
}

// BlobHash returns the Git blob hash of data, in hex: the SHA-1 of
// "blob LEN\x00" followed by data.
func BlobHash(data []byte) string {
	h := blobSum(data)
	return hex.EncodeToString(h[:])
}

func blobSum(data []byte) [sha1.Size]byte {
	h := sha1.New()
	h.Write([]byte("blob " + strconv.Itoa(len(data)) + "\x00"))
	h.Write(data)
	var sum [sha1.Size]byte
	h.Sum(sum[:0])
	return sum
}

// indexMarker is a marker as the index keeps it.
type indexMarker struct {
	line, column int
	policy       string
	field        Field
	value        string
	inFlow       bool
}

// indexProblem is a problem that depends on the file alone.
type indexProblem struct {
	line   int
	policy string
	err    error
}

// fileEntry is what the index knows of one file. Entries are never
// changed once made, so a Clone can share them.
type fileEntry struct {
	blob [sha1.Size]byte // of the content scanned (files with the token)
	stat statKey         // ByStat
	racy bool            // ByStat: read again at the next scan
	// token is set when the file holds the text "$imagepolicy" in double
	// quotes; a file without it has no markers and no problems.
	token bool
	// parsed is set when markers and problems hold the file's parse. A
	// scan only reads the comments (refs): Apply parses the file when it
	// reads it, which it does for an entry not parsed yet, so a cold
	// index parses each file once.
	parsed   bool
	markers  []indexMarker
	problems []indexProblem
	// refs are the policies its marker comments name, one per comment, as
	// Referenced counts them.
	refs []string
}

// FileChange is a file that differs between the commit an Index describes
// and the one the worktree holds, as a Git tree diff reports it.
type FileChange struct {
	// Path is relative to the root, with forward slashes.
	Path string
	// Old and New are the Git blob hashes (hex) before and after; Old is
	// empty for an added file, New for a deleted one.
	Old, New string
	// Symlink is set when the file is a symbolic link before or after.
	// An index of a tree with symbolic links in scope reads every file
	// (the links' targets are not in the diff).
	Symlink bool
}

// Index is a marker index; see the comment at the top of index.go. Its
// methods must not be called concurrently with each other or with an
// Apply that uses it.
type Index struct {
	kind  IndexKind
	shape string // Paths and MaxFileSize it was made for
	head  string // ByBlob: the commit the entries describe
	// built is set once a full scan filled the index.
	built bool
	files map[string]*fileEntry
	// order is the names of files in path order, as the index file lists
	// them or as last sorted; see paths.
	order []string
	// candidates counts the files in scope that can hold markers, with or
	// without the token (ByBlob keeps entries for files with the token
	// only).
	candidates int
	// unsupported says why the index cannot stand for the tree (ByBlob: a
	// symbolic link in scope); every Scan is then a full one.
	unsupported string
	// pending are the files to read at the next Scan, with the blob hash
	// they must have (ByBlob).
	pending map[string]string
	// filesShared is set while a Clone shares files: the first change
	// copies the map (ownFiles).
	filesShared bool

	// What one cycle did; not saved.
	read     map[string]bool // files read since the last Scan began
	problems []Problem       // of the walk or the Paths, from the last Scan
	stale    map[string]bool // ByBlob: files that do not hash as expected
	dirty    bool            // changed since loaded or saved
	// from identifies the file the index was loaded from or saved to,
	// while it is not dirty (see ReloadIndex); zero when unknown.
	from statKey
	// scanned is set by Scan and cleared by the Apply that follows it.
	scanned bool
	// steady and refs are made from files when first asked for (view,
	// References), and dropped whenever files change: every change goes
	// through set, drop or a new map. They are never changed once made,
	// so a Clone shares them.
	steady *steadyView
	refs   References
	// quiet is set when an Apply served every file of files unchanged,
	// and dropped with steady: the next Apply makes the view.
	quiet bool
}

// NewIndex returns an empty index of the given kind for scans with opts'
// Paths and MaxFileSize.
func NewIndex(kind IndexKind, opts Options) *Index {
	return &Index{kind: kind, shape: shapeOf(opts), files: map[string]*fileEntry{}, pending: map[string]string{}, dirty: true}
}

// shapeOf is what, besides the files, shapes what a scan finds: the paths
// scanned and the size limit.
func shapeOf(opts Options) string {
	paths := opts.Paths
	if len(paths) == 0 {
		paths = []string{"."}
	}
	var b strings.Builder
	for _, p := range paths {
		b.WriteString(strconv.Quote(p))
		b.WriteByte(' ')
	}
	b.WriteString("max=" + strconv.FormatInt(maxFileSize(opts), 10))
	return b.String()
}

// Kind returns the index's kind.
func (ix *Index) Kind() IndexKind { return ix.kind }

// Head returns the commit a ByBlob index describes, or "" when it is
// empty.
func (ix *Index) Head() string { return ix.head }

// Built reports whether a full scan filled the index. An index that is
// not built is filled by the next Scan, which reads every file.
func (ix *Index) Built() bool { return ix.built && ix.unsupported == "" }

// Files returns how many files the index holds an entry for.
func (ix *Index) Files() int { return len(ix.files) }

// Clone returns a copy that Update, Scan and Apply can change without
// changing ix. The copy must be scanned again before Apply uses it. The
// two share their entries until either changes them, which then copies
// them first: a cycle with nothing new copies none of a fleet's entries.
// The files to read (pending, the few changed since the last Scan) are
// copied at once. Clone marks ix as sharing, so it must not run beside
// another use of ix.
func (ix *Index) Clone() *Index {
	ix.filesShared = true
	c := *ix
	c.pending = maps.Clone(ix.pending)
	c.read, c.stale, c.scanned = nil, nil, false
	c.problems = slices.Clone(ix.problems)
	return &c
}

// paths returns the names of the files the index holds, in path order:
// order while it names exactly those files (it is never changed in
// place, so copies share it), else the names sorted anew.
func (ix *Index) paths() []string {
	if len(ix.order) == len(ix.files) && ix.orderHolds() {
		return ix.order
	}
	ix.order = slices.Sorted(maps.Keys(ix.files))
	return ix.order
}

// orderHolds reports whether the names in order increase strictly and
// are each a file of the index: with as many names as files, they are
// the same set, in path order.
func (ix *Index) orderHolds() bool {
	for i, rel := range ix.order {
		if i > 0 && ix.order[i-1] >= rel {
			return false
		}
		if _, ok := ix.files[rel]; !ok {
			return false
		}
	}
	return true
}

// Reset empties the index, so that the next Scan reads every file.
func (ix *Index) Reset() {
	*ix = Index{kind: ix.kind, shape: ix.shape, files: map[string]*fileEntry{}, pending: map[string]string{}, dirty: true}
}

// Update records that the worktree now holds commit head, which differs
// from Head by changes: the next Scan reads the changed files. It applies
// to ByBlob indexes only.
func (ix *Index) Update(head string, changes []FileChange, paths []string) {
	if ix.kind != ByBlob {
		return
	}
	if ix.head != head || len(changes) > 0 {
		ix.dirty = true
	}
	ix.head = head
	if !ix.built {
		return
	}
	scope := newScope(paths)
	for _, c := range changes {
		if !scope.has(c.Path) {
			continue
		}
		if c.Symlink {
			ix.unsupported = "a symbolic link in scope: " + c.Path
			continue
		}
		if !candidate(path.Base(c.Path)) {
			continue
		}
		switch {
		case c.Old == "" && c.New != "":
			ix.candidates++
		case c.Old != "" && c.New == "":
			ix.candidates--
		}
		if c.New == "" {
			ix.drop(c.Path)
			delete(ix.pending, c.Path)
			continue
		}
		ix.pending[c.Path] = c.New
	}
}

// ScansAll reports whether the next Scan of a ByBlob index over the tree
// at root, for paths, reads every file in scope without checking it
// against a blob hash: when the index is not built, or when a path now
// is or passes through a symbolic link, which the index cannot follow by
// tree diffs (Scan then marks it unusable). A caller whose files must
// hold what a commit holds checks them whole before such a scan. It is
// false for a ByStat index, whose every Scan checks each file's stat.
func (ix *Index) ScansAll(root string, paths []string) bool {
	if ix.kind != ByBlob {
		return false
	}
	if !ix.Built() {
		return true
	}
	unsupported, _ := checkPaths(root, paths)
	return unsupported != ""
}

// SetHead records that the worktree holds commit head, with the files
// Apply wrote: for a ByBlob index whose edits were committed as head.
func (ix *Index) SetHead(head string) {
	if ix.head != head {
		ix.head, ix.dirty = head, true
	}
}

// Markers returns every well-formed marker on a scalar, as Apply's
// Result.Markers lists them, sorted by file and line. Call it after Scan
// and ParseMarkers.
func (ix *Index) Markers() []Marker {
	var out []Marker
	for rel, e := range ix.files {
		for _, m := range e.markers {
			out = append(out, m.marker(rel))
		}
	}
	sortMarkers(out)
	return out
}

func (m indexMarker) marker(file string) Marker {
	return Marker{File: file, Line: m.line, Column: m.column, Policy: m.policy, Field: m.field, Value: m.value}
}

// scope tells whether a path is under one of the Paths.
type scope []string

func newScope(paths []string) scope {
	var s scope
	for _, p := range paths {
		c := path.Clean(filepath.ToSlash(p))
		if c == "." {
			return nil
		}
		s = append(s, c)
	}
	if len(s) == 0 {
		return nil
	}
	return s
}

func (s scope) has(p string) bool {
	if s == nil {
		return true
	}
	for _, d := range s {
		if p == d || strings.HasPrefix(p, d+"/") {
			return true
		}
	}
	return false
}

// newEntry makes the entry of a file from its scan. src is nil for a file
// over the size limit.
func newEntry(src []byte, out *outcome, token bool) *fileEntry {
	e := &fileEntry{token: token}
	if !token {
		return e
	}
	if src != nil {
		e.blob = blobSum(src)
		scanReferences(src, func(p string) { e.refs = append(e.refs, p) })
	}
	if out == nil {
		return e
	}
	e.parsed = true
	e.markers = make([]indexMarker, len(out.markers))
	for i, m := range out.markers {
		e.markers[i] = indexMarker{line: m.Line, column: m.Column, policy: m.Policy, field: m.Field, value: m.Value, inFlow: out.inFlow[i]}
	}
	for _, p := range out.static {
		e.problems = append(e.problems, indexProblem{line: p.Line, policy: p.Policy, err: p.Err})
	}
	return e
}

// served appends the file's markers and problems to res, as a read of
// the file would give them, unless a marker's value would change (or the
// file was never parsed): then res is left as it was and need is true.
// values caches the new value of each policy and field across files.
func (e *fileEntry) served(rel string, env env, values map[valueKey]valueOf, res *Result) (need bool) {
	if !e.parsed {
		return true
	}
	// Only problems are added before need can be known.
	np := len(res.Problems)
	for _, m := range e.markers {
		if m.inFlow {
			continue
		}
		if !env.known(m.policy) {
			res.Problems = append(res.Problems, Problem{File: rel, Line: m.line, Policy: m.policy, Err: &UnknownPolicyError{Policy: m.policy}})
			continue
		}
		img, ok := env.images[m.policy]
		if !ok {
			continue
		}
		k := valueKey{m.policy, m.field}
		v, ok := values[k]
		if !ok {
			v.value, v.err = newValue(img, m.policy, m.field)
			values[k] = v
		}
		if v.err != nil {
			res.Problems = append(res.Problems, Problem{File: rel, Line: m.line, Policy: m.policy, Err: v.err})
			continue
		}
		if v.value != m.value {
			res.Problems = res.Problems[:np]
			return true
		}
	}
	for _, m := range e.markers {
		res.Markers = append(res.Markers, m.marker(rel))
	}
	for _, p := range e.problems {
		res.Problems = append(res.Problems, Problem{File: rel, Line: p.line, Policy: p.policy, Err: p.err})
	}
	if len(e.markers) > 0 {
		res.FilesWithMarkers++
	}
	return false
}

// valueKey and valueOf are what served caches: the new value a policy
// gives a field, or why it gives none.
type valueKey struct {
	policy string
	field  Field
}

type valueOf struct {
	value string
	err   error
}

// ErrStale is wrapped by the Problem of a file in a ByBlob index's
// worktree whose content is not the blob the commit holds.
var ErrStale = errors.New("the file in the working copy is not the one the commit holds; left as is until the working copy is reset")

// Scan brings the index up to date with the files under opts.Root (or
// opts.Paths): a ByStat index walks the tree and reads the files whose
// stat data changed, a ByBlob index reads the files Update reported. An
// index that is not built reads every file. Only Root, Paths, Workers,
// MaxFileSize, Write (a walk removes stale temporary files when set),
// OnReference and Logger are read from opts.
//
// The error is only for a bad Root or a cancelled ctx; unreadable files
// are reported by the Apply that follows.
func (ix *Index) Scan(ctx context.Context, opts Options) error {
	log := loggerOf(opts)
	root, err := resolveRoot(opts.Root)
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("scanning %s: %w", opts.Root, err)
	}
	if s := shapeOf(opts); s != ix.shape {
		log.Debug("the marker index was made for other paths or limits; rebuilding it")
		ix.shape = s
		ix.Reset()
	}
	ix.read, ix.stale, ix.problems = map[string]bool{}, map[string]bool{}, nil
	ix.scanned = true
	full := ix.kind == ByStat || !ix.Built()
	if !full {
		unsupported, problems := checkPaths(root, opts.Paths)
		if unsupported == "" {
			ix.problems = problems
			return ix.scanPending(ctx, opts, root)
		}
		ix.unsupported = unsupported
	}
	return ix.scanAll(ctx, opts, root, log)
}

// scanAll walks the tree as Apply does. ByStat reads only the files whose
// stat key changed; ByBlob reads every file.
func (ix *Index) scanAll(ctx context.Context, opts Options, root string, log *slog.Logger) error {
	workers := max(workerCount(opts), scanWorkers)
	start := racyNow()
	r := &run{opts: opts, log: log, root: root, res: &Result{}}
	seen := map[string]*fileEntry{}
	var mu sync.Mutex
	var link string // ByBlob: the first symbolic link the walk met
	var unread bool // a file could not be read
	var jobs atomic.Int64
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ch := make(chan job, workers*4)
	var wg sync.WaitGroup
	limit := maxFileSize(opts)
	for range workers {
		wg.Go(func() {
			var buf bytes.Buffer
			for j := range ch {
				if ctx.Err() != nil {
					continue
				}
				jobs.Add(1)
				old := ix.files[j.rel]
				if ix.kind == ByStat && old != nil && !old.racy && !old.stat.weak {
					if fi, err := os.Lstat(j.abs); err == nil && fi.Mode().IsRegular() && keyOf(fi) == old.stat {
						mu.Lock()
						seen[j.rel] = old
						mu.Unlock()
						report(opts, old)
						continue
					}
				}
				var key statKey
				err := scanReadFile(j.abs, &buf, limit, &key)
				e, p := scanRead(j.rel, buf.Bytes(), err)
				trimBuf(&buf)
				report(opts, e)
				mu.Lock()
				ix.read[j.rel] = true
				if p != nil {
					unread = true
					r.res.Problems = append(r.res.Problems, *p)
				}
				if e != nil {
					if ix.kind == ByStat {
						e.stat = key
						e.racy = isRacy(key, start)
					}
					if ix.kind == ByStat || e.token {
						seen[j.rel] = e
					}
				}
				mu.Unlock()
			}
		})
	}
	w := &walker{ctx: ctx, root: root, jobs: ch, log: log, run: r}
	if ix.kind == ByBlob {
		// The walker calls it from this goroutine.
		w.onLink = func(rel string) {
			if link == "" {
				link = "a symbolic link in scope: " + rel
			}
		}
	}
	w.walk(opts.Paths)
	close(ch)
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("scanning %s: %w", opts.Root, err)
	}
	if ix.kind == ByBlob {
		ix.unsupported = link
		if ix.unsupported == "" {
			ix.unsupported, _ = checkPaths(root, opts.Paths)
		}
	}
	ix.files, ix.steady, ix.refs, ix.quiet = seen, nil, nil, false
	ix.candidates = int(jobs.Load())
	ix.problems = r.res.Problems
	ix.pending = map[string]string{}
	ix.filesShared = false
	ix.built, ix.dirty = true, true
	if ix.kind == ByBlob && (unread || w.unreadFolder) {
		// A ByBlob index reads only what later commits change: a file
		// this scan could not read would never be read again. The next
		// scan is a full one. (ByStat walks every time and reads it.)
		ix.built = false
	}
	return nil
}

// report passes the policies an entry's comments name to
// opts.OnReference; e may be nil.
func report(opts Options, e *fileEntry) {
	if opts.OnReference == nil || e == nil {
		return
	}
	for _, p := range e.refs {
		opts.OnReference(p)
	}
}

// scanReadFile reads a file for a full scan; tests make it fail.
var scanReadFile = readFileKey

// scanRead makes the entry of a file from what reading it gave: nil and a
// problem when it could not be read (it is read again next time).
func scanRead(rel string, src []byte, err error) (*fileEntry, *Problem) {
	var tooLarge *TooLargeError
	switch {
	case errors.As(err, &tooLarge):
		e := &fileEntry{token: tooLarge.Marked, parsed: true}
		if tooLarge.Marked {
			e.problems = []indexProblem{{err: err}}
		}
		return e, nil
	case err != nil:
		return nil, &Problem{File: rel, Err: fmt.Errorf("reading file: %w", err)}
	}
	if !bytes.Contains(src, token) {
		return &fileEntry{}, nil
	}
	return newEntry(src, nil, true), nil
}

// ParseMarkers parses the files the index knows only by their comments
// (a scan reads no more), so that Markers lists every marker. Apply
// parses what it reads anyway; call it only when the markers are needed
// before Apply.
func (ix *Index) ParseMarkers(ctx context.Context, opts Options) error {
	root, err := resolveRoot(opts.Root)
	if err != nil {
		return err
	}
	var paths []string
	for rel, e := range ix.files {
		if e.token && !e.parsed && !ix.stale[rel] {
			paths = append(paths, rel)
		}
	}
	var buf bytes.Buffer
	for _, rel := range paths {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("scanning %s: %w", opts.Root, err)
		}
		e := ix.files[rel]
		err := readFile(filepath.Join(root, filepath.FromSlash(rel)), &buf, maxFileSize(opts))
		if ix.read != nil {
			ix.read[rel] = true
		}
		if err != nil || blobSum(buf.Bytes()) != e.blob || !bytes.Contains(buf.Bytes(), token) {
			// Changed since the scan (or unreadable): Apply reads it
			// again and reports it.
			continue
		}
		out := rewrite(rel, buf.Bytes(), scanEnv)
		n := newEntry(buf.Bytes(), &out, true)
		n.stat, n.racy = e.stat, e.racy
		ix.set(rel, n)
		ix.dirty = true
	}
	return nil
}

// scanPending reads the files Update reported (ByBlob).
func (ix *Index) scanPending(ctx context.Context, opts Options, root string) error {
	if len(ix.pending) == 0 {
		return nil
	}
	workers := workerCount(opts)
	// The workers read the expected hashes from a copy: ix.pending loses
	// its entries as they are read.
	paths := slices.Sorted(maps.Keys(ix.pending))
	want := make([]string, len(paths))
	for i, p := range paths {
		want[i] = ix.pending[p]
	}
	var next atomic.Int64
	var mu sync.Mutex
	limit := maxFileSize(opts)
	var wg sync.WaitGroup
	for range min(workers, len(paths)) {
		wg.Go(func() {
			var buf bytes.Buffer
			for i := next.Add(1) - 1; i < int64(len(paths)); i = next.Add(1) - 1 {
				if ctx.Err() != nil {
					return
				}
				rel := paths[i]
				err := readFile(filepath.Join(root, filepath.FromSlash(rel)), &buf, limit)
				var tooLarge *TooLargeError
				stale := false
				switch {
				case errors.As(err, &tooLarge):
				case err != nil:
					stale = true
				default:
					stale = BlobHash(buf.Bytes()) != want[i]
				}
				var e *fileEntry
				if !stale {
					e, _ = scanRead(rel, buf.Bytes(), err)
					report(opts, e)
				}
				mu.Lock()
				ix.read[rel] = true
				if stale {
					ix.stale[rel] = true
				} else {
					delete(ix.pending, rel)
					if e.token {
						ix.set(rel, e)
					} else {
						ix.drop(rel)
					}
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("scanning %s: %w", opts.Root, err)
	}
	ix.dirty = true
	return nil
}

// checkPaths checks the entries of Paths as a walk would, without walking,
// and returns the problems a walk reports for them. unsupported is set
// when an entry is or passes through a symbolic link, which a ByBlob
// index cannot follow.
func checkPaths(root string, paths []string) (unsupported string, problems []Problem) {
	for _, p := range paths {
		clean := filepath.Clean(filepath.FromSlash(p))
		display := filepath.ToSlash(clean)
		if filepath.IsAbs(clean) || clean == ".." || strings.HasPrefix(clean, ".."+string(filepath.Separator)) {
			problems = append(problems, Problem{File: p, Err: errPathOut})
			continue
		}
		if inGit(display) {
			problems = append(problems, Problem{File: display, Err: errPathGit})
			continue
		}
		abs := filepath.Join(root, clean)
		fi, err := os.Lstat(abs)
		if err != nil {
			problems = append(problems, Problem{File: display, Err: entryError(root, display, err)})
			continue
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			return "the path " + display + " is a symbolic link", nil
		}
		if abs != root {
			if dir, err := filepath.EvalSymlinks(filepath.Dir(abs)); err != nil || dir != filepath.Dir(abs) {
				return "the path " + display + " passes through a symbolic link", nil
			}
		}
	}
	return "", problems
}
