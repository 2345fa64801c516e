package setters

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"sync"
)

// References counts the markers that name each policy.
type References map[string]int

// Referenced returns the policies that the markers under opts.Root (or
// opts.Paths) name, without parsing YAML: it reads each candidate file that
// holds "$imagepolicy", as Apply would, and reads the marker comments on its
// lines. It walks the tree by Apply's rules (no symlinks out, nothing under
// .git), so it sees the files Apply sees. The answer may name a policy that
// Apply would not apply (a marker inside a block scalar, say), never the
// reverse: it is for deciding which registries to ask before editing.
//
// Only Root, Paths, Workers, MaxFileSize, OnReference and Logger are read
// from opts.
func Referenced(ctx context.Context, opts Options) (References, error) {
	log := loggerOf(opts)
	root, err := resolveRoot(opts.Root)
	if err != nil {
		return nil, err
	}
	workers := max(workerCount(opts), scanWorkers)
	r := &run{opts: opts, log: log, root: root, res: &Result{}}
	refs := References{}
	var mu sync.Mutex
	jobs := make(chan job, workers*4)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			var buf bytes.Buffer
			local := References{}
			for j := range jobs {
				if ctx.Err() != nil {
					continue // drain
				}
				if readFile(j.abs, &buf, maxFileSize(opts)) != nil {
					continue // Apply reports it
				}
				scanReferences(buf.Bytes(), func(p string) {
					local[p]++
					if opts.OnReference != nil {
						opts.OnReference(p)
					}
				})
				trimBuf(&buf)
			}
			mu.Lock()
			for p, n := range local {
				refs[p] += n
			}
			mu.Unlock()
		})
	}
	// The walk's warnings (a broken link, say) are the Apply's that
	// follows to give, once: this walk says nothing.
	w := &walker{ctx: ctx, root: root, jobs: jobs, log: slog.New(slog.DiscardHandler), run: r}
	w.walk(opts.Paths)
	close(jobs)
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("scanning %s: %w", opts.Root, err)
	}
	return refs, nil
}

// scanReferences calls add with the policy of each well-formed marker
// comment in src. A comment ends at any line break YAML knows (LF, CR,
// NEL, LINE SEPARATOR, PARAGRAPH SEPARATOR), as the parser ends it: a
// marker on a line that a lone CR ends is found as Apply finds it.
func scanReferences(src []byte, add func(policy string)) {
	for len(src) > 0 {
		i := bytes.Index(src, token)
		if i < 0 {
			return
		}
		start := lastBreakEnd(src[:i])
		end := len(src)
		if at, n := nextBreak(src, i); n > 0 {
			end = at
		}
		line := src[start:end]
		// The comment starts at one of the '#' before the token; try each
		// from the left, as a '#' may sit inside a quoted value.
		for off := 0; off < len(line); {
			h := bytes.IndexByte(line[off:], '#')
			if h < 0 {
				break
			}
			h += off
			if policy, _, ok, err := ParseMarker(string(line[h:])); ok && err == nil {
				add(policy)
				break
			}
			off = h + 1
		}
		src = src[end:]
	}
}

// lastBreakEnd returns the index just past the last YAML line break in b,
// or 0.
func lastBreakEnd(b []byte) int {
	for i := len(b) - 1; i >= 0; i-- {
		switch b[i] {
		case '\n', '\r':
			return i + 1
		case 0x85:
			if i > 0 && b[i-1] == 0xC2 {
				return i + 1
			}
		case 0xA8, 0xA9:
			if i > 1 && b[i-2] == 0xE2 && b[i-1] == 0x80 {
				return i + 1
			}
		}
	}
	return 0
}
