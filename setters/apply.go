package setters

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// token is the text a file must contain to be parsed at all, as in Flux.
var token = []byte(`"` + markerKey + `"`)

// Image is what a policy selected.
type Image struct {
	// Repository is the image name, such as ghcr.io/acme/app.
	Repository string
	// Tag is the selected tag, such as 1.4.2.
	Tag string
	// Digest is the pinned digest, such as sha256:…; it may be empty.
	Digest string
}

// Options configures Apply.
type Options struct {
	// Root is the repository root. Nothing outside it is read or written.
	Root string
	// Paths are the files and folders to scan, relative to Root. Empty means
	// the whole tree.
	Paths []string
	// Images holds the image each policy selected, by policy reference
	// ("ns:name").
	Images map[string]Image
	// Known reports whether a policy exists in the configuration. A policy
	// that is known but absent from Images failed upstream: its markers are
	// left alone without a Problem. Nil means a policy is known if and only
	// if it is in Images. It is called from several goroutines at once.
	Known func(policy string) bool
	// Write makes Apply write the changed files. False is a dry run that
	// computes and verifies every change but writes nothing.
	Write bool
	// NoSync leaves the written files to the system's own writeback
	// instead of making them durable before and after the renames: for a
	// caller that makes them durable itself before anything records them
	// (a cycle's working copy, which gitwriter syncs before its Git index
	// records the files), never for files that exist nowhere else. A
	// reader still sees each file old or new; a crash before that sync
	// may leave a renamed file without its content, which the Git index,
	// holding the old file's size and times, does not vouch for.
	NoSync bool
	// Workers is how many files are read and rewritten at once. Zero means
	// runtime.GOMAXPROCS(0). The renames that end a run with Write set, and
	// the reads of a scan that looks for the marker text without parsing,
	// use at least 8 goroutines, as they mostly wait in the kernel.
	Workers int
	// OnEdit, if set, is called once per changed file with its old and new
	// bytes (in a dry run too), after the file was written. Calls may come
	// from any goroutine but never overlap. The slices must not be modified.
	OnEdit func(file string, before, after []byte)
	// OnReference, if set, is called with the policy of each marker
	// comment in the files that Referenced and Index.Scan read, as they
	// read them, and in the entries a full Index.Scan keeps unread, so
	// that a caller can start asking registries before the scan ends.
	// Calls come from any goroutine, at the same time, and repeat a
	// policy once per comment.
	OnReference func(policy string)
	// MaxFileSize is the size in bytes above which a file is not parsed: a
	// file that holds a marker is reported, one without is skipped. Zero
	// means DefaultMaxFileSize; negative means no limit.
	MaxFileSize int64
	// Logger receives debug and warning messages. Nil means no logging.
	Logger *slog.Logger
	// NearMisses makes Apply read too the files that lack the marker
	// text but mention $imagepolicy in another case or without its
	// quotes, and report each comment there meant as a marker: malformed
	// ({"$imagePolicy": ...}) or not. Such a file is never changed: Flux,
	// like Apply otherwise, skips it. It also makes Apply read the files
	// it does not scan, by their names (a Dockerfile, a .json), but for
	// binary and prose files (.md, .txt, ...), and list in
	// Result.Elsewhere those that mention $imagepolicy. validate sets it;
	// an Apply with an Index ignores it.
	NearMisses bool
	// Index, when set, is the marker index of Root (see Index): Apply
	// reads only the files whose markers would change and serves the
	// others from it, and records what it reads and writes there. Apply
	// calls Index.Scan first, unless the caller just did (to learn which
	// policies the markers name, say).
	Index *Index
}

// Change is one rewritten scalar.
type Change struct {
	// File is relative to Root, with forward slashes.
	File string
	// Line is the 1-based line of the scalar.
	Line int
	// Policy is the marker's policy reference ("ns:name").
	Policy string
	// Field is the part of the image reference the marker owns.
	Field Field
	// Old and New are the scalar's values (not its source text).
	Old, New string
}

// Problem is a file or marker that could not be handled. The rest of the run
// goes on.
type Problem struct {
	// File is relative to Root, with forward slashes.
	File string
	// Line is 1-based, or 0 when the problem concerns the whole file.
	Line int
	// Policy is the marker's policy reference, when known.
	Policy string
	// Err says what is wrong.
	Err error
}

// WriteError is a Problem's Err when a file could not be written: the
// disk, not the file's content, is at fault (full, read-only, not this
// user's).
type WriteError struct{ Err error }

func (e *WriteError) Error() string { return "writing file: " + e.Err.Error() }
func (e *WriteError) Unwrap() error { return e.Err }

// Error returns "file:line: message", or "file: message" when Line is 0.
func (p Problem) Error() string {
	if p.Line > 0 {
		return p.File + ":" + strconv.Itoa(p.Line) + ": " + p.Err.Error()
	}
	return p.File + ": " + p.Err.Error()
}

// Unwrap returns the underlying error.
func (p Problem) Unwrap() error { return p.Err }

// Marker is a well-formed marker on a scalar value.
type Marker struct {
	// File is relative to Root, with forward slashes.
	File string
	// Line and Column locate the marked scalar (1-based; Column counts
	// characters, not bytes).
	Line, Column int
	// Policy is the policy reference ("ns:name").
	Policy string
	// Field is the part of the image reference the marker owns.
	Field Field
	// Value is the scalar's current value.
	Value string
}

// Result is what Apply found and did. Its slices are sorted by file, then
// line, and do not depend on scheduling.
type Result struct {
	// Markers lists every well-formed marker on a scalar value, including
	// those naming unknown policies. The strings of markers and problems
	// served from an Index share the memory of its whole decoded text:
	// copy what must outlive the Index. Changes share nothing with it.
	// When nothing moved, Markers may be the Index's own list, which
	// later Applies hand out again: read it, never change it in place.
	Markers []Marker
	// Changes lists the scalars that were (or, in a dry run, would be)
	// rewritten.
	Changes []Change
	// Problems lists files and markers that could not be handled.
	Problems []Problem
	// FilesScanned counts the files that can hold markers (those named
	// *.yaml, *.yml or Kustomization), read or served from the index.
	FilesScanned int
	// FilesRead counts the files whose bytes were read; without an Index,
	// every file scanned.
	FilesRead int
	// FilesCached counts the files served from the index without reading
	// them: FilesScanned - FilesRead.
	FilesCached int
	// Stale lists the files of a ByBlob index's worktree that do not hold
	// the blob the commit does; each is also a Problem wrapping ErrStale.
	// Resetting the working copy and running again fixes them.
	Stale []string
	// FilesWithMarkers counts the files with at least one marker.
	FilesWithMarkers int
	// FilesChanged lists the files written (or, in a dry run, that would be).
	FilesChanged []string
	// Elsewhere lists, with Options.NearMisses, the files that mention
	// $imagepolicy (in any case) but are not scanned, as their names are
	// not those of YAML files, each at its first mention: a marker there
	// is never updated. They are not in Problems.
	Elsewhere []Problem
}

// Errors Apply reports as Problems for files it will not read.
var (
	errOutside  = errors.New("the symlink leads outside the repository root; not followed")
	errPathOut  = errors.New("the path leads outside the repository root; not scanned")
	errPathGit  = errors.New("the path is inside .git; not scanned")
	errNotExist = errors.New("the path does not exist: a paths entry (git.paths, or --paths) names a file or folder relative to the repository root")
)

// Apply scans the files under opts.Root (or opts.Paths) for markers and
// rewrites the marked scalars to the images in opts.Images. With Images
// empty, Known nil and Write false it only scans: every marker is listed and
// reported as naming an unknown policy.
//
// With Write set, every changed file is first written to a temporary file
// next to it; once all are, they are synced together and renamed over the
// originals. Until then nothing in the tree has changed, so a cancelled ctx
// leaves it as it was.
//
// The error is only for a bad Root or a cancelled ctx; trouble with single
// files or markers is reported in Result.Problems and the rest goes on.
func Apply(ctx context.Context, opts Options) (*Result, error) {
	if opts.Index != nil {
		return applyIndexed(ctx, opts)
	}
	r, workers, err := newRun(ctx, opts)
	if err != nil {
		return nil, err
	}
	log, root := r.log, r.root
	// Whatever ends the run early, no temporary file stays behind.
	defer r.discard()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	jobs := make(chan job, workers*4)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			var buf bytes.Buffer
			for j := range jobs {
				if ctx.Err() != nil {
					continue // drain
				}
				if j.other {
					r.otherFile(j, &buf)
					continue
				}
				r.file(j, &buf)
			}
		})
	}
	w := &walker{ctx: ctx, root: root, jobs: jobs, log: log, run: r, others: opts.NearMisses}
	w.walk(opts.Paths)
	close(jobs)
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("scanning %s: %w", opts.Root, err)
	}
	if err := r.commit(ctx, workers); err != nil {
		return nil, fmt.Errorf("writing the changes in %s: %w", opts.Root, err)
	}
	r.res.FilesScanned = int(r.scanned.Load())
	r.res.FilesRead = r.res.FilesScanned
	r.sort()
	return r.res, nil
}

// resolveRoot returns the real path of a repository root, refusing one that
// is not a folder or lies inside a .git folder (imagebump never touches Git's
// own files).
func resolveRoot(dir string) (string, error) {
	if dir == "" {
		return "", errors.New("no repository root given")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("resolving repository root %s: %w", dir, err)
	}
	root, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return "", fmt.Errorf("resolving repository root: %w", err)
	}
	if fi, err := os.Stat(root); err != nil {
		return "", fmt.Errorf("reading repository root: %w", err)
	} else if !fi.IsDir() {
		return "", fmt.Errorf("repository root %s is not a directory", dir)
	}
	if slices.Contains(strings.Split(filepath.ToSlash(root), "/"), ".git") {
		return "", fmt.Errorf("repository root %s is inside a .git folder, which imagebump never reads or writes: give the working tree instead (the folder that holds .git)", dir)
	}
	return root, nil
}

// run holds the state of one Apply call shared by its workers.
type run struct {
	opts Options
	env  env
	log  *slog.Logger
	root string
	ix   *Index // the marker index, or nil

	scanned atomic.Int64 // files read, for Result.FilesScanned
	mu      sync.Mutex   // guards res and staged
	res     *Result
	staged  []*staged  // changed files waiting to be renamed
	edit    sync.Mutex // serializes OnEdit
	// sorted is set when res.Markers is known to be in order: served
	// whole from an index's steady view, which must not be changed.
	sorted bool
}

// job is one file for a worker: rel is its real path relative to the
// root. other marks a file that is not scanned, read for
// Options.NearMisses only.
type job struct {
	rel, abs string
	other    bool
}

func (r *run) problem(p Problem) {
	r.mu.Lock()
	r.res.Problems = append(r.res.Problems, p)
	r.mu.Unlock()
}

// newRun checks opts.Root and ctx and returns the run of an Apply, with
// the number of workers it uses.
func newRun(ctx context.Context, opts Options) (*run, int, error) {
	log := loggerOf(opts)
	root, err := resolveRoot(opts.Root)
	if err != nil {
		return nil, 0, err
	}
	if err := ctx.Err(); err != nil {
		return nil, 0, fmt.Errorf("scanning %s: %w", opts.Root, err)
	}
	e := env{images: opts.Images, known: opts.Known}
	if e.known == nil {
		e.known = func(p string) bool { _, ok := opts.Images[p]; return ok }
	}
	workers := workerCount(opts)
	return &run{opts: opts, env: e, log: log, root: root, res: &Result{}, ix: opts.Index}, workers, nil
}

// file reads, screens and rewrites one file, and stages its new content
// when Options.Write is set. buf is the worker's reusable read buffer, so a
// worker holds one file at a time. The walker already checked that the
// file is regular, so there is no stat unless it changes.
func (r *run) file(j job, buf *bytes.Buffer) {
	err := readFile(j.abs, buf, maxFileSize(r.opts))
	r.scanned.Add(1)
	var tooLarge *TooLargeError
	switch {
	case errors.As(err, &tooLarge):
		if tooLarge.Marked {
			r.problem(Problem{File: j.rel, Err: err})
		}
		return
	case err != nil:
		r.problem(Problem{File: j.rel, Err: fmt.Errorf("reading file: %w", err)})
		return
	}
	if !bytes.Contains(buf.Bytes(), token) {
		if r.opts.NearMisses && nearMiss(buf.Bytes()) {
			r.nearMissFile(j, buf.Bytes())
		}
		return
	}
	r.rewriteFile(j, buf.Bytes(), nil)
}

// nearKey is the marker's key without its '$'.
var nearKey = []byte(markerKey[1:])

// nearMiss reports whether src mentions $imagepolicy in any case, as a
// file that lacks the marker text (token) may in a misspelt marker.
func nearMiss(src []byte) bool { return nearIndex(src) >= 0 }

// nearIndex is the offset of the first $imagepolicy in src, in any case,
// or -1.
func nearIndex(src []byte) int {
	for i := 0; ; {
		d := bytes.IndexByte(src[i:], '$')
		if d < 0 {
			return -1
		}
		i += d + 1
		if len(src)-i >= len(nearKey) && bytes.EqualFold(src[i:i+len(nearKey)], nearKey) {
			return i - 1
		}
	}
}

// binaryProbe is how much of a file tells it binary (a NUL there), as git
// tells.
const binaryProbe = 8000

// ErrNotScanned is the error of a Result.Elsewhere entry.
var ErrNotScanned = errors.New("$imagepolicy is mentioned in a file that is never scanned for markers: only YAML files are (named *.yaml, *.yml or Kustomization), as Flux reads them, so a marker here is never updated; move the image reference into a YAML file, or ignore this if the mention is no marker")

// otherFile reads a file that is not scanned, for Options.NearMisses, and
// lists it in Result.Elsewhere when it mentions $imagepolicy. A file
// over the size limit, or binary (a NUL in its first 8000 bytes, as git
// tells), is left unread or unreported.
func (r *run) otherFile(j job, buf *bytes.Buffer) {
	limit := maxFileSize(r.opts)
	// As readFile opens: a symbolic link or a pipe put in its place since
	// the walk saw a regular file is not followed and does not hang the
	// run; the fstat then tells a pipe.
	f, err := os.OpenFile(j.abs, otherFlags, 0)
	if err != nil {
		return
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() || (limit > 0 && fi.Size() > limit) {
		return
	}
	// Its first 8000 bytes tell a binary file, which is read no further.
	buf.Reset()
	if _, err := io.CopyN(buf, f, binaryProbe); err != nil && !errors.Is(err, io.EOF) {
		return
	}
	if bytes.IndexByte(buf.Bytes(), 0) >= 0 {
		return
	}
	rest := limit - int64(buf.Len())
	if limit <= 0 {
		rest = math.MaxInt64
	}
	if _, err := io.CopyN(buf, f, rest); err != nil && !errors.Is(err, io.EOF) {
		return
	}
	src := buf.Bytes()
	defer trimBuf(buf)
	at := nearIndex(src)
	if at < 0 {
		return
	}
	line := 1 + bytes.Count(src[:at], []byte("\n"))
	r.mu.Lock()
	r.res.Elsewhere = append(r.res.Elsewhere, Problem{File: j.rel, Line: line, Err: ErrNotScanned})
	r.mu.Unlock()
}

// prose reports whether a file's name is that of a text for people
// (.md, .txt, ...), which may show a marker as an example: NearMisses
// does not read it.
func prose(name string) bool {
	switch strings.ToLower(filepath.Ext(name)) {
	case ".md", ".markdown", ".mdx", ".txt", ".rst", ".adoc", ".asciidoc", ".html", ".htm", ".org":
		return true
	}
	return false
}

// nearMissFile reports the comments meant as markers in src, a file that
// lacks the marker text, which Flux and every other run skip: malformed,
// or where no scalar is. That the file is not YAML is not reported (it may
// be anything named .yaml), and nothing is changed.
func (r *run) nearMissFile(j job, src []byte) {
	for _, p := range rewrite(j.rel, src, env{known: r.env.known}).static {
		if se := (*SyntaxError)(nil); !errors.As(p.Err, &se) {
			r.problem(p)
		}
	}
}

// rewriteFile rewrites src, the bytes of a file that holds the marker
// text, stages the new bytes when Options.Write is set, and adds the
// outcome to the result. src may be the worker's read buffer. key, for a
// run with an index, is the stat key of the bytes read: the index then
// records their scan, and the staged file's scan for when it is renamed.
func (r *run) rewriteFile(j job, src []byte, key *statKey) {
	// The parsed tree and the results copy what they keep, so src can stay
	// in buf unless OnEdit gets it: its caller may keep it.
	keep := r.opts.OnEdit != nil
	if keep {
		src = bytes.Clone(src)
	}
	out := rewrite(j.rel, src, r.env)
	if key != nil {
		// The scan of the bytes read: what the index holds until the new
		// bytes replace them.
		r.record(j.rel, newEntry(src, &out, true), *key)
	}
	var st *staged
	if out.out != nil && r.opts.Write {
		var err error
		st, err = stage(j.abs, src, out.out, !r.opts.NoSync)
		if err != nil {
			out.problems = append(out.problems, Problem{File: j.rel, Err: &WriteError{Err: err}})
			out.changes, out.out = nil, nil
		} else {
			// The changes count once the file is renamed, in commit.
			st.rel, st.changes, out.changes = j.rel, out.changes, nil
			if key != nil {
				st.entry = newEntry(out.out, out.after, true)
			}
			if keep {
				st.before, st.after = src, out.out
			}
		}
	}
	if out.out != nil && !r.opts.Write {
		if err := wouldStage(j.abs); err != nil {
			out.problems = append(out.problems, Problem{File: j.rel, Err: err})
			out.changes, out.out = nil, nil
		}
	}
	if out.out != nil && st == nil {
		r.log.Debug("rewrote file", "file", j.rel, "changes", len(out.changes), "write", false)
		if r.opts.OnEdit != nil {
			r.edit.Lock()
			r.opts.OnEdit(j.rel, src, out.out)
			r.edit.Unlock()
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.res.Markers = append(r.res.Markers, out.markers...)
	r.res.Changes = append(r.res.Changes, out.changes...)
	r.res.Problems = append(r.res.Problems, out.problems...)
	if len(out.markers) > 0 {
		r.res.FilesWithMarkers++
	}
	switch {
	case st != nil:
		r.staged = append(r.staged, st)
	case out.out != nil:
		r.res.FilesChanged = append(r.res.FilesChanged, j.rel)
	}
}

// commitWorkers is the least number of goroutines that rename files. A
// rename can wait on the disk: on ext4 without a journal and mounted with
// discard, freeing the replaced file's blocks is a synchronous discard. More
// goroutines than cores overlap those waits.
const commitWorkers = 8

// scanWorkers is the least number of goroutines that read files for a
// line scan (Index.Scan's full scan, Referenced). Their work is system
// calls (open, fstat, read, close) and a search for the marker text: with
// more readers than cores, the walk and the reads keep both cores busy
// (a cold plan of 10,000 files on 2 cores: the scan took about 64 ms
// with 2 readers, 55 ms with 8 or 16; docs/benchmarks.md, "The figures
// again (issue 13, twenty-seventh pass)"). Files are parsed by
// workerCount goroutines, as parsing is CPU work.
const scanWorkers = 8

// trimBuf lets buf's memory go when it grew past scanBufKeep.
func trimBuf(buf *bytes.Buffer) {
	if buf.Cap() > scanBufKeep {
		*buf = bytes.Buffer{}
	}
}

// scanBufKeep is the largest read buffer a scan's reader keeps between
// files: a reader that read a larger file lets its buffer go, so that
// scanWorkers readers do not each hold one of the largest files' size.
const scanBufKeep = 256 << 10

// syncs are how run.commit makes files durable; tests count the calls.
var syncs = struct{ staged, renamed func([]*staged) error }{syncStaged, syncRenamed}

// makeDurable calls sync, one of syncs, on files unless Options.NoSync.
func (r *run) makeDurable(sync func([]*staged) error, files []*staged) error {
	if r.opts.NoSync {
		return nil
	}
	return sync(files)
}

// commit makes the staged files durable (unless Options.NoSync) and
// renames each over its original (see commit.go), with at least the given
// number of goroutines. It returns an error only when ctx ends before the
// renames begin; then nothing in the repository has changed. Once they
// begin, they all run.
func (r *run) commit(ctx context.Context, workers int) error {
	files := r.staged
	if len(files) == 0 {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := r.makeDurable(syncs.staged, files); err != nil {
		for _, s := range files {
			s.discard()
			r.res.Problems = append(r.res.Problems, Problem{File: s.rel, Err: &WriteError{Err: err}})
		}
		return nil
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(max(workers, commitWorkers), len(files)) {
		wg.Go(func() {
			var buf bytes.Buffer
			for i := next.Add(1) - 1; i < int64(len(files)); i = next.Add(1) - 1 {
				files[i].err = files[i].commit(&buf)
			}
		})
	}
	wg.Wait()
	if err := r.makeDurable(syncs.renamed, files); err != nil {
		r.log.Warn("the rewritten files may not survive a crash", "error", err)
	}
	slices.SortFunc(files, func(a, b *staged) int { return strings.Compare(a.rel, b.rel) })
	for _, s := range files {
		if s.err != nil {
			r.res.Problems = append(r.res.Problems, Problem{File: s.rel, Err: &WriteError{Err: s.err}})
			continue
		}
		r.log.Debug("rewrote file", "file", s.rel, "changes", len(s.changes), "write", true)
		if r.ix != nil && s.entry != nil {
			r.ix.written(s.rel, s.abs, s.entry)
		}
		r.res.Changes = append(r.res.Changes, s.changes...)
		r.res.FilesChanged = append(r.res.FilesChanged, s.rel)
		if r.opts.OnEdit != nil {
			r.opts.OnEdit(s.rel, s.before, s.after)
		}
	}
	return nil
}

// discard removes the temporary files of the staged files not renamed.
func (r *run) discard() {
	for _, s := range r.staged {
		s.discard()
	}
}

// sort orders the result by file and line.
func (r *run) sort() {
	res := r.res
	if !r.sorted {
		sortMarkers(res.Markers)
	}
	slices.SortStableFunc(res.Changes, func(a, b Change) int {
		return cmp.Or(strings.Compare(a.File, b.File), cmp.Compare(a.Line, b.Line))
	})
	slices.SortStableFunc(res.Problems, func(a, b Problem) int {
		return cmp.Or(strings.Compare(a.File, b.File), cmp.Compare(a.Line, b.Line), strings.Compare(a.Err.Error(), b.Err.Error()))
	})
	slices.Sort(res.FilesChanged)
	slices.Sort(res.Stale)
	slices.SortFunc(res.Elsewhere, func(a, b Problem) int { return strings.Compare(a.File, b.File) })
}

// sortMarkers orders markers by file, line and column.
func sortMarkers(ms []Marker) {
	byPlace := func(a, b Marker) int {
		return cmp.Or(strings.Compare(a.File, b.File), cmp.Compare(a.Line, b.Line), cmp.Compare(a.Column, b.Column))
	}
	if !slices.IsSortedFunc(ms, byPlace) {
		slices.SortStableFunc(ms, byPlace)
	}
}

// candidate reports whether a file name can hold markers.
func candidate(name string) bool {
	ext := filepath.Ext(name)
	return ext == ".yaml" || ext == ".yml" || name == "Kustomization"
}

// walker finds the candidate files under the root and feeds them to the
// workers. It runs on one goroutine.
//
// A file must be read once even when symlinks or overlapping Paths lead to
// it several times. Rather than remember every file and folder, which would
// grow with the tree, the walker remembers the real folders it started to
// walk (tops) and the files it sent that no walk may cover (linked). A walk
// covers its whole subtree but for .git folders and the subtrees of tops
// started before it, so in a tree without symlinks it holds one top and no
// files.
type walker struct {
	ctx  context.Context
	root string
	jobs chan<- job
	log  *slog.Logger
	run  *run
	// tops are the real folders whose walks started, in the order they
	// started.
	tops []string
	// linked are the real files sent through a symlink or a Paths entry.
	linked map[string]bool
	// onLink, when set, is called with each symbolic link met.
	onLink func(rel string)
	// unreadFolder is set when a folder could not be read: files under it
	// were not seen.
	unreadFolder bool
	// others makes the walk send the regular files that are not scanned
	// too, as jobs marked other (Options.NearMisses), but for prose.
	others bool
}

// rel returns the slash-separated path of abs relative to the root.
func (w *walker) rel(abs string) string {
	if strings.HasPrefix(abs, w.root+string(filepath.Separator)) {
		return filepath.ToSlash(abs[len(w.root)+1:])
	}
	rel, err := filepath.Rel(w.root, abs)
	if err != nil {
		return filepath.ToSlash(abs)
	}
	return filepath.ToSlash(rel)
}

// inside reports whether the real path abs is the root or below it.
func (w *walker) inside(abs string) bool { return within(abs, w.root) }

// within reports whether path is dir or below it.
func within(path, dir string) bool {
	if len(path) == len(dir) {
		return path == dir
	}
	if !strings.HasPrefix(path, dir) {
		return false
	}
	return os.IsPathSeparator(path[len(dir)]) || os.IsPathSeparator(dir[len(dir)-1])
}

// covered reports whether the real path p lies in a folder whose walk
// started, and so is, or will be, reached by that walk.
func (w *walker) covered(p string) bool {
	for _, t := range w.tops {
		if within(p, t) {
			return true
		}
	}
	return false
}

// inGit reports whether a root-relative slash path is in a .git folder.
func inGit(rel string) bool {
	return slices.Contains(strings.Split(rel, "/"), ".git")
}

// walk walks each of paths in turn (the whole root when there are none),
// until ctx is cancelled.
func (w *walker) walk(paths []string) {
	if len(paths) == 0 {
		paths = []string{"."}
	}
	for _, p := range paths {
		if w.ctx.Err() != nil {
			return
		}
		w.path(p)
	}
}

// path scans one entry of Options.Paths.
func (w *walker) path(p string) {
	clean := filepath.Clean(filepath.FromSlash(p))
	display := filepath.ToSlash(clean)
	if filepath.IsAbs(clean) || clean == ".." || strings.HasPrefix(clean, ".."+string(filepath.Separator)) {
		w.run.problem(Problem{File: p, Err: errPathOut})
		return
	}
	if inGit(display) {
		w.run.problem(Problem{File: display, Err: errPathGit})
		return
	}
	abs := filepath.Join(w.root, clean)
	fi, err := os.Lstat(abs)
	if err != nil {
		w.run.problem(Problem{File: display, Err: entryError(w.root, display, err)})
		return
	}
	if abs != w.root {
		// The folders on the way may be symlinks: go on from the real
		// path, so that what is read is known by one name.
		dir, err := filepath.EvalSymlinks(filepath.Dir(abs))
		if err != nil {
			w.run.problem(Problem{File: display, Err: err})
			return
		}
		abs = filepath.Join(dir, filepath.Base(abs))
		switch {
		case !w.inside(abs):
			w.run.problem(Problem{File: display, Err: errPathOut})
			return
		case inGit(w.rel(abs)):
			w.run.problem(Problem{File: display, Err: errPathGit})
			return
		}
	}
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		// A Paths entry was asked for by name: one that leads outside the
		// root is a problem, whatever its name, not a quiet "nothing here".
		if target, err := filepath.EvalSymlinks(abs); err == nil && !w.inside(target) {
			w.run.problem(Problem{File: display, Err: errOutside})
			return
		}
		w.link(abs, candidate(fi.Name()))
	case fi.IsDir():
		w.dir(abs)
	case fi.Mode().IsRegular() && candidate(fi.Name()):
		w.sendOnce(abs)
	}
}

// dir walks a real directory inside the root, unless a walk already covers
// it.
func (w *walker) dir(top string) {
	if w.covered(top) {
		return
	}
	// Folders inside this one whose walks started earlier are skipped.
	// Checking the folder itself is enough: the walk never gets below it.
	var done []string
	for _, t := range w.tops {
		if within(t, top) {
			done = append(done, t)
		}
	}
	w.tops = append(w.tops, top)
	err := filepath.WalkDir(top, func(p string, d fs.DirEntry, err error) error {
		if cerr := w.ctx.Err(); cerr != nil {
			return cerr
		}
		if err != nil {
			w.unreadFolder = true
			w.run.problem(Problem{File: w.rel(p), Err: fmt.Errorf("reading folder: %w", err)})
			if d != nil && d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		switch {
		case d.IsDir():
			if (d.Name() == ".git" && p != w.root) || (len(done) > 0 && p != top && slices.Contains(done, p)) {
				return fs.SkipDir
			}
		case d.Type()&fs.ModeSymlink != 0:
			w.link(p, candidate(d.Name()))
		case d.Type().IsRegular() && candidate(d.Name()):
			if !w.linked[p] {
				w.send(p)
			}
		case d.Type().IsRegular() && staleTemp(d.Name()):
			w.removeStale(p, d)
		case d.Type().IsRegular() && w.others && !prose(d.Name()):
			w.queue(job{rel: w.rel(p), abs: p, other: true})
		}
		return nil
	})
	if err != nil && w.ctx.Err() == nil {
		w.unreadFolder = true
		w.run.problem(Problem{File: w.rel(top), Err: fmt.Errorf("walking folder: %w", err)})
	}
}

// staleAge is how old a temporary file of imagebump's must be before a
// later run removes it: a run stages its files for seconds, so an older one
// was left by a run that was killed.
const staleAge = 10 * time.Minute

// staleTempRE matches the names writeTemp gives temporary files.
var staleTempRE = regexp.MustCompile(`^\..+\.imagebump-[0-9]+$`)

func staleTemp(name string) bool { return staleTempRE.MatchString(name) }

// removeStale removes a temporary file left by a killed run, when Write is
// set and it is old enough; a dry run only mentions it.
func (w *walker) removeStale(p string, d fs.DirEntry) {
	fi, err := d.Info()
	if err != nil || time.Since(fi.ModTime()) < staleAge {
		return
	}
	if !w.run.opts.Write {
		w.log.Debug("found a temporary file left by a killed run; the next apply or run removes it", "file", w.rel(p))
		return
	}
	if err := os.Remove(p); err != nil {
		w.log.Warn("could not remove a temporary file left by a killed run", "file", w.rel(p), "error", err)
		return
	}
	w.log.Info("removed a temporary file left by a killed run", "file", w.rel(p))
}

// link follows a symlink once if it stays inside the root and out of .git.
// A file link is followed only when its own name is a candidate (wanted).
func (w *walker) link(p string, wanted bool) {
	if w.onLink != nil {
		w.onLink(w.rel(p))
	}
	target, err := filepath.EvalSymlinks(p)
	if err != nil {
		if wanted {
			w.log.Warn("skipping broken symlink", "file", w.rel(p))
		}
		return
	}
	if !w.inside(target) {
		if wanted {
			w.run.problem(Problem{File: w.rel(p), Err: errOutside})
		} else {
			w.log.Debug("not following symlink that leads outside the repository", "path", w.rel(p))
		}
		return
	}
	if inGit(w.rel(target)) {
		return
	}
	fi, err := os.Stat(target)
	if err != nil {
		return
	}
	switch {
	case fi.IsDir():
		w.dir(target)
	case fi.Mode().IsRegular() && wanted:
		w.sendOnce(target)
	}
}

// sendOnce queues a real file reached other than by a walk, unless a walk
// covers it or it was queued already.
func (w *walker) sendOnce(abs string) {
	if (candidate(filepath.Base(abs)) && w.covered(abs)) || w.linked[abs] {
		return
	}
	if w.linked == nil {
		w.linked = make(map[string]bool)
	}
	w.linked[abs] = true
	w.send(abs)
}

// send queues a real file.
func (w *walker) send(abs string) { w.queue(job{rel: w.rel(abs), abs: abs}) }

// queue hands j to the workers, unless the run is cancelled.
func (w *walker) queue(j job) {
	select {
	case w.jobs <- j:
	case <-w.ctx.Done():
	}
}

// pathError is a read or write error without the absolute path, which
// reports already carry as a root-relative name.
type pathError struct {
	op  string
	err error
}

func (e *pathError) Error() string { return e.op + ": " + e.err.Error() }
func (e *pathError) Unwrap() error { return e.err }

// workerCount is Options.Workers, or runtime.GOMAXPROCS(0) when unset.
func workerCount(opts Options) int {
	if opts.Workers > 0 {
		return opts.Workers
	}
	return runtime.GOMAXPROCS(0)
}

// loggerOf is Options.Logger, or a logger that discards when unset.
func loggerOf(opts Options) *slog.Logger {
	if opts.Logger != nil {
		return opts.Logger
	}
	return slog.New(slog.DiscardHandler)
}

// maxFileSize returns the file size limit opts ask for.
func maxFileSize(opts Options) int64 {
	switch {
	case opts.MaxFileSize == 0:
		return DefaultMaxFileSize
	case opts.MaxFileSize < 0:
		return 0
	}
	return opts.MaxFileSize
}

// entryError says why a Paths entry (display, relative to root) cannot be
// read, from the file system's error on it, without the absolute path that
// error names ("lstat /WORKDIR/apps/x: ..."; see pathError): the working
// copy's folder is one the user never chose. An entry that runs through a
// file (apps/app.yaml/x) names that file.
func entryError(root, display string, err error) error {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return errNotExist
	case errors.Is(err, syscall.ENOTDIR):
		parts := strings.Split(display, "/")
		for j := 1; j < len(parts); j++ {
			prefix := strings.Join(parts[:j], "/")
			if fi, err := os.Stat(filepath.Join(root, filepath.FromSlash(prefix))); err == nil && !fi.IsDir() {
				return fmt.Errorf("%s is a file, not a folder: give the file itself, or a folder", prefix)
			}
		}
		return errors.New("a part of the path is a file, not a folder: a path is a folder or a file relative to the repository root")
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return &pathError{op: pe.Op, err: pe.Err}
	}
	return err
}
