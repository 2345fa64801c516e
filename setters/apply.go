package setters

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
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
	// Workers is how many files are read and rewritten at once. Zero means
	// runtime.GOMAXPROCS(0).
	Workers int
	// OnEdit, if set, is called once per changed file with its old and new
	// bytes (in a dry run too), after the file was written. Calls may come
	// from any goroutine but never overlap. The slices must not be modified.
	OnEdit func(file string, before, after []byte)
	// Logger receives debug and warning messages. Nil means no logging.
	Logger *slog.Logger
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
	// those naming unknown policies.
	Markers []Marker
	// Changes lists the scalars that were (or, in a dry run, would be)
	// rewritten.
	Changes []Change
	// Problems lists files and markers that could not be handled.
	Problems []Problem
	// FilesScanned counts the files read: those named *.yaml, *.yml or
	// Kustomization.
	FilesScanned int
	// FilesWithMarkers counts the files with at least one marker.
	FilesWithMarkers int
	// FilesChanged lists the files written (or, in a dry run, that would be).
	FilesChanged []string
}

// Errors Apply reports as Problems for files it will not read.
var (
	errOutside  = errors.New("the symlink leads outside the repository root; not followed")
	errPathOut  = errors.New("the path leads outside the repository root; not scanned")
	errPathGit  = errors.New("the path is inside .git; not scanned")
	errNotExist = errors.New("the path does not exist")
)

// Apply scans the files under opts.Root (or opts.Paths) for markers and
// rewrites the marked scalars to the images in opts.Images. With Images
// empty, Known nil and Write false it only scans: every marker is listed and
// reported as naming an unknown policy.
//
// The error is only for a bad Root or a cancelled ctx; trouble with single
// files or markers is reported in Result.Problems and the rest goes on.
func Apply(ctx context.Context, opts Options) (*Result, error) {
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if opts.Root == "" {
		return nil, errors.New("no repository root given")
	}
	abs, err := filepath.Abs(opts.Root)
	if err != nil {
		return nil, fmt.Errorf("resolving repository root %s: %w", opts.Root, err)
	}
	root, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return nil, fmt.Errorf("resolving repository root: %w", err)
	}
	if fi, err := os.Stat(root); err != nil {
		return nil, fmt.Errorf("reading repository root: %w", err)
	} else if !fi.IsDir() {
		return nil, fmt.Errorf("repository root %s is not a directory", opts.Root)
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("scanning %s: %w", opts.Root, err)
	}
	e := env{images: opts.Images, known: opts.Known}
	if e.known == nil {
		e.known = func(p string) bool { _, ok := opts.Images[p]; return ok }
	}
	workers := opts.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}

	r := &run{opts: opts, env: e, log: log, root: root, res: &Result{}}
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
				r.file(j, &buf)
			}
		})
	}
	w := &walker{ctx: ctx, root: root, jobs: jobs, log: log, run: r,
		dirs: make(map[string]bool), files: make(map[string]bool)}
	paths := opts.Paths
	if len(paths) == 0 {
		paths = []string{"."}
	}
	for _, p := range paths {
		if ctx.Err() != nil {
			break
		}
		w.path(p)
	}
	close(jobs)
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("scanning %s: %w", opts.Root, err)
	}
	r.sort()
	return r.res, nil
}

// run holds the state of one Apply call shared by its workers.
type run struct {
	opts Options
	env  env
	log  *slog.Logger
	root string

	mu   sync.Mutex // guards res
	res  *Result
	edit sync.Mutex // serializes OnEdit
}

// job is one file to read: rel is its real path relative to the root.
type job struct{ rel, abs string }

func (r *run) problem(p Problem) {
	r.mu.Lock()
	r.res.Problems = append(r.res.Problems, p)
	r.mu.Unlock()
}

// file reads, screens and rewrites one file. buf is the worker's reusable
// read buffer, so a worker holds one file at a time. The walker already
// checked that the file is regular, so there is no stat unless it is
// written.
func (r *run) file(j job, buf *bytes.Buffer) {
	err := readFile(j.abs, buf)
	r.mu.Lock()
	r.res.FilesScanned++
	r.mu.Unlock()
	if err != nil {
		r.problem(Problem{File: j.rel, Err: fmt.Errorf("reading file: %w", err)})
		return
	}
	if !bytes.Contains(buf.Bytes(), token) {
		return
	}
	src := bytes.Clone(buf.Bytes())
	out := rewrite(j.rel, src, r.env)
	if out.out != nil && r.opts.Write {
		if err := writeAtomic(j.abs, src, out.out, buf); err != nil {
			out.problems = append(out.problems, Problem{File: j.rel, Err: fmt.Errorf("writing file: %w", err)})
			out.changes, out.out = nil, nil
		}
	}
	if out.out != nil {
		r.log.Debug("rewrote file", "file", j.rel, "changes", len(out.changes), "write", r.opts.Write)
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
	if out.out != nil {
		r.res.FilesChanged = append(r.res.FilesChanged, j.rel)
	}
}

// sort orders the result by file and line.
func (r *run) sort() {
	res := r.res
	slices.SortStableFunc(res.Markers, func(a, b Marker) int {
		return cmp.Or(strings.Compare(a.File, b.File), cmp.Compare(a.Line, b.Line), cmp.Compare(a.Column, b.Column))
	})
	slices.SortStableFunc(res.Changes, func(a, b Change) int {
		return cmp.Or(strings.Compare(a.File, b.File), cmp.Compare(a.Line, b.Line))
	})
	slices.SortStableFunc(res.Problems, func(a, b Problem) int {
		return cmp.Or(strings.Compare(a.File, b.File), cmp.Compare(a.Line, b.Line), strings.Compare(a.Err.Error(), b.Err.Error()))
	})
	slices.Sort(res.FilesChanged)
}

// candidate reports whether a file name can hold markers.
func candidate(name string) bool {
	ext := filepath.Ext(name)
	return ext == ".yaml" || ext == ".yml" || name == "Kustomization"
}

// walker finds the candidate files under the root and feeds them to the
// workers. It runs on one goroutine.
type walker struct {
	ctx   context.Context
	root  string
	jobs  chan<- job
	log   *slog.Logger
	run   *run
	dirs  map[string]bool // real directories walked
	files map[string]bool // real files sent
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
func (w *walker) inside(abs string) bool {
	return abs == w.root || strings.HasPrefix(abs, w.root+string(filepath.Separator))
}

// inGit reports whether a root-relative slash path is in a .git folder.
func inGit(rel string) bool {
	return slices.Contains(strings.Split(rel, "/"), ".git")
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
		if errors.Is(err, fs.ErrNotExist) {
			err = errNotExist
		}
		w.run.problem(Problem{File: display, Err: err})
		return
	}
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		w.link(abs, candidate(fi.Name()))
	case fi.IsDir():
		w.dir(abs)
	case fi.Mode().IsRegular() && candidate(fi.Name()):
		w.send(abs)
	}
}

// dir walks a real directory inside the root.
func (w *walker) dir(top string) {
	err := filepath.WalkDir(top, func(p string, d fs.DirEntry, err error) error {
		if cerr := w.ctx.Err(); cerr != nil {
			return cerr
		}
		if err != nil {
			w.run.problem(Problem{File: w.rel(p), Err: fmt.Errorf("reading folder: %w", err)})
			if d != nil && d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		switch {
		case d.IsDir():
			if (d.Name() == ".git" && p != w.root) || w.dirs[p] {
				return fs.SkipDir
			}
			w.dirs[p] = true
		case d.Type()&fs.ModeSymlink != 0:
			w.link(p, candidate(d.Name()))
		case d.Type().IsRegular() && candidate(d.Name()):
			w.send(p)
		}
		return nil
	})
	if err != nil && w.ctx.Err() == nil {
		w.run.problem(Problem{File: w.rel(top), Err: fmt.Errorf("walking folder: %w", err)})
	}
}

// link follows a symlink once if it stays inside the root and out of .git.
// A file link is followed only when its own name is a candidate (wanted).
func (w *walker) link(p string, wanted bool) {
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
		if !w.dirs[target] {
			w.dir(target)
		}
	case fi.Mode().IsRegular() && wanted:
		w.send(target)
	}
}

// send queues a real file once.
func (w *walker) send(abs string) {
	if w.files[abs] {
		return
	}
	w.files[abs] = true
	select {
	case w.jobs <- job{rel: w.rel(abs), abs: abs}:
	case <-w.ctx.Done():
	}
}

// errChanged reports a file that changed on disk while it was being edited.
var errChanged = errors.New("the file changed while it was being edited; left as is")

// writeAtomic replaces the regular file at path, whose content was old, with
// data through a temporary file in the same folder, keeping its mode, so
// readers see the old or the new file, never a part. If the file no longer
// holds old, it is left alone. buf is scratch space.
func writeAtomic(path string, old, data []byte, buf *bytes.Buffer) (err error) {
	fi, err := os.Lstat(path)
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("%s is no longer a regular file", filepath.Base(path))
	}
	if err := readFile(path, buf); err != nil {
		return err
	}
	if !bytes.Equal(buf.Bytes(), old) {
		return errChanged
	}
	mode := fi.Mode()
	dir, base := filepath.Split(path)
	f, err := os.CreateTemp(dir, "."+base+".imagebump-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	closed := false
	defer func() {
		if err != nil {
			if !closed {
				f.Close()
			}
			os.Remove(tmp)
		}
	}()
	if _, err = f.Write(data); err != nil {
		return err
	}
	if err = f.Chmod(mode & (fs.ModePerm | fs.ModeSetuid | fs.ModeSetgid | fs.ModeSticky)); err != nil {
		return err
	}
	if err = f.Sync(); err != nil {
		return err
	}
	closed = true
	if err = f.Close(); err != nil {
		return err
	}
	if err = os.Rename(tmp, path); err != nil {
		return err
	}
	// Make the rename durable; not every file system supports syncing a
	// folder, so a failure here is not an error.
	if d, derr := os.Open(dir); derr == nil {
		d.Sync()
		d.Close()
	}
	return nil
}

// pathError is a read error without the absolute path, which reports
// already carry as a root-relative name.
type pathError struct {
	op  string
	err error
}

func (e *pathError) Error() string { return e.op + ": " + e.err.Error() }
func (e *pathError) Unwrap() error { return e.err }
