package setters

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
)

// applyIndexed is Apply with Options.Index: it reads and rewrites the
// files whose markers would change, and serves every other file's
// markers and problems from the index. Its Result equals a full Apply's
// over the same files, but for FilesRead and FilesCached.
func applyIndexed(ctx context.Context, opts Options) (*Result, error) {
	ix := opts.Index
	if !ix.scanned {
		if err := ix.Scan(ctx, opts); err != nil {
			return nil, err
		}
	}
	ix.scanned = false
	r, workers, err := newRun(ctx, opts)
	if err != nil {
		return nil, err
	}
	defer r.discard()
	res := r.res
	res.Problems = append(res.Problems, ix.problems...)
	for rel := range ix.stale {
		res.Stale = append(res.Stale, rel)
		res.Problems = append(res.Problems, Problem{File: rel, Err: ErrStale})
	}
	var jobs []job
	var want []*fileEntry
	// The steady view is made once an Apply found nothing to read: a
	// one-off run would only pay for it.
	if len(ix.stale) == 0 && (ix.steady != nil || ix.quiet) && ix.view().served(r.env, res) {
		r.sorted = true
	} else {
		jobs, want = r.servedEach()
		ix.quiet = len(jobs) == 0
	}
	if len(jobs) > 0 {
		r.log.Debug("reading the files whose markers move", "files", len(jobs))
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var next int
	var nextMu sync.Mutex
	var wg sync.WaitGroup
	for range min(workers, len(jobs)) {
		wg.Go(func() {
			var buf bytes.Buffer
			for {
				nextMu.Lock()
				i := next
				next++
				nextMu.Unlock()
				if i >= len(jobs) || ctx.Err() != nil {
					return
				}
				r.indexedFile(jobs[i], want[i], &buf)
			}
		})
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("scanning %s: %w", opts.Root, err)
	}
	if err := r.commit(ctx, workers); err != nil {
		return nil, fmt.Errorf("writing the changes in %s: %w", opts.Root, err)
	}
	res.FilesScanned = ix.candidates
	res.FilesRead = len(ix.read)
	res.FilesCached = max(0, res.FilesScanned-res.FilesRead)
	r.sort()
	return res, nil
}

// servedEach serves the markers and problems of every file of the index
// whose markers stay, and returns the files whose markers move, or that
// were never parsed, to be read.
func (r *run) servedEach() (jobs []job, want []*fileEntry) {
	ix, res := r.ix, r.res
	// Files in path order give markers already in order, which spares
	// the final sort moving thousands of them.
	var markers int
	for _, fe := range ix.files {
		if fe.token {
			markers += len(fe.markers)
		}
	}
	res.Markers = slices.Grow(res.Markers, markers)
	values := map[valueKey]valueOf{}
	for _, rel := range ix.paths() {
		fe := ix.files[rel]
		if !fe.token || ix.stale[rel] {
			continue
		}
		if fe.served(rel, r.env, values, res) {
			// A copy: rel shares the memory of the whole decoded index,
			// and the changes made from the file outlive the cycle.
			jobs = append(jobs, job{rel: strings.Clone(rel), abs: filepath.Join(r.root, filepath.FromSlash(rel))})
			want = append(want, fe)
		}
	}
	return jobs, want
}

// beneathLink reports whether a folder on the way from the root to rel
// is a symbolic link, or is not there.
func (r *run) beneathLink(rel string) bool {
	for dir := path.Dir(rel); dir != "."; dir = path.Dir(dir) {
		fi, err := os.Lstat(filepath.Join(r.root, filepath.FromSlash(dir)))
		if err != nil || fi.Mode()&fs.ModeSymlink != 0 {
			return true
		}
	}
	return false
}

// indexedFile reads, rewrites and stages one file whose markers move, as
// run.file does, and records what it read in the index. fe is the file's
// entry.
func (r *run) indexedFile(j job, fe *fileEntry, buf *bytes.Buffer) {
	ix := r.ix
	var key statKey
	err := readFileKey(j.abs, buf, maxFileSize(r.opts), &key)
	r.mu.Lock()
	ix.read[j.rel] = true
	r.mu.Unlock()
	var tooLarge *TooLargeError
	sum := blobSum(buf.Bytes())
	switch {
	case ix.kind == ByBlob && (err != nil || sum != fe.blob || r.beneathLink(j.rel)):
		// The worktree does not hold the commit's blob: editing it would
		// commit what someone else wrote there. Nor does a file beneath
		// a folder replaced by a symbolic link (git checks out none),
		// whatever its bytes: the edit would write where the link points,
		// outside the working copy.
		r.mu.Lock()
		r.res.Stale = append(r.res.Stale, j.rel)
		r.res.Problems = append(r.res.Problems, Problem{File: j.rel, Err: ErrStale})
		ix.stale[j.rel] = true
		r.mu.Unlock()
		return
	case errors.As(err, &tooLarge):
		// It grew past the limit since the scan.
		e, _ := scanRead(j.rel, nil, err)
		r.record(j.rel, e, key)
		if tooLarge.Marked {
			r.problem(Problem{File: j.rel, Err: err})
		}
		return
	case err != nil:
		r.mu.Lock()
		ix.drop(j.rel)
		ix.dirty = true
		r.res.Problems = append(r.res.Problems, Problem{File: j.rel, Err: fmt.Errorf("reading file: %w", err)})
		r.mu.Unlock()
		return
	}
	src := buf.Bytes()
	if !bytes.Contains(src, token) {
		// Changed since the scan, and holds no marker now.
		r.record(j.rel, &fileEntry{}, key)
		return
	}
	r.rewriteFile(j, src, &key)
}

// record keeps the entry of a file just read, with its stat key for a
// ByStat index. A ByBlob index keeps files with the token only.
func (r *run) record(rel string, e *fileEntry, key statKey) {
	ix := r.ix
	if ix.kind == ByStat {
		e.stat = key
		e.racy = isRacy(key, racyNow())
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	ix.dirty = true
	if ix.kind == ByBlob && !e.token {
		ix.drop(rel)
		return
	}
	ix.set(rel, e)
}

// written records the entry of a file Apply renamed into place. It runs
// on one goroutine (run.commit).
func (ix *Index) written(rel, abs string, e *fileEntry) {
	if ix.kind == ByStat {
		fi, err := os.Lstat(abs)
		if err != nil {
			ix.drop(rel)
			return
		}
		e.stat = keyOf(fi)
		e.racy = true // it was just written
	}
	ix.set(rel, e)
	ix.dirty = true
}

// isRacy reports whether a file with stat key k, read at time now, may
// change again without its key changing.
func isRacy(k statKey, now time.Time) bool {
	limit := now.Add(-racyWindow).UnixNano()
	return k.mtime >= limit || k.ctime >= limit
}
