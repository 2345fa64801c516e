package cycle

import (
	"context"
	"log/slog"
	"slices"

	"github.com/imagebump/imagebump/config"
	"github.com/imagebump/imagebump/setters"
)

// A prefetch overlaps the two network waits of a cycle with nothing new:
// the fetch of the working copy and the tag listings. The marker index
// kept from the last cycle names the policies the last commit's markers
// use; their registries are asked while the fetch runs. Once the fetch
// and the scan tell which policies the new commit uses, Run takes the
// prefetched results it needs and asks only for policies the last commit
// did not use. A policy the new commit no longer uses was asked for once
// in vain; its result is dropped, as if never asked.
type prefetch struct {
	done    chan struct{}
	cancel  context.CancelFunc
	results map[string]PolicyResult // by policy name, once done is closed
}

// startPrefetch starts selecting the policies that ix, the marker index
// kept in the working copy, names, or returns nil when it is not usable,
// or when a policy needs the markers' current values (the ifNotPresent
// digest mode) that only the new commit's files give.
func startPrefetch(ctx context.Context, opts TargetOptions, reg Registry, ix *setters.Index, logger *slog.Logger) *prefetch {
	if !ix.Built() {
		return nil
	}
	applied := appliedImages(opts.Config, opts.Target.Selects)
	if needsCurrent(applied) {
		return nil
	}
	refs := ix.References()
	var images []*config.Image
	for _, im := range applied {
		if refs[im.Name] > 0 {
			images = append(images, im)
		}
	}
	if len(images) == 0 {
		return nil
	}
	ctx, cancel := context.WithCancel(ctx)
	p := &prefetch{done: make(chan struct{}), cancel: cancel}
	gates := opts.Gates
	if gates == nil && slices.ContainsFunc(images, needsGates) {
		gates = NewGates(opts.Now, logger)
	}
	go func() {
		defer close(p.done)
		results := selectImages(ctx, reg, gates, images, nil, 0, logger)
		p.results = make(map[string]PolicyResult, len(results))
		for _, r := range results {
			p.results[r.Name] = r
		}
	}()
	return p
}

// wait returns the prefetched results, by policy name.
func (p *prefetch) wait() map[string]PolicyResult {
	<-p.done
	return p.results
}

// stop cancels a prefetch that is still running and waits for it; nil
// is a no-op.
func (p *prefetch) stop() {
	if p == nil {
		return
	}
	p.cancel()
	<-p.done
}

// selectWith selects images, taking the prefetched results of p where it
// has them and asking the registries for the rest; results are in the
// order of images, as selectImages gives them.
func (p *prefetch) selectWith(ctx context.Context, reg Registry, gates *Gates, images []*config.Image, concurrency int, logger *slog.Logger) []PolicyResult {
	got := p.wait()
	var missing []*config.Image
	for _, im := range images {
		if _, ok := got[im.Name]; !ok {
			missing = append(missing, im)
		}
	}
	var fresh []PolicyResult
	if len(missing) > 0 {
		logger.Debug("policies the last commit did not use: asking their registries now", "policies", len(missing))
		fresh = selectImages(ctx, reg, gates, missing, nil, concurrency, logger)
	}
	out := make([]PolicyResult, 0, len(images))
	for _, im := range images {
		if r, ok := got[im.Name]; ok {
			out = append(out, r)
		} else {
			out = append(out, fresh[0])
			fresh = fresh[1:]
		}
	}
	return out
}
