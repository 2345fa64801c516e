package cycle

import (
	"context"
	"log/slog"
	"sync"

	"github.com/imagebump/imagebump/config"
	"github.com/imagebump/imagebump/registry"
)

// A prefetch overlaps the two network waits of a cycle with nothing new:
// the fetch of the working copy and the tag listings. The policies the
// last commit's markers name are asked for while the fetch runs: serve
// knows them from its last cycle of the target, before anything is read;
// a process that keeps no cycle takes them from the marker index kept in
// the working copy. Once the fetch and the scan tell which policies the
// new commit uses, Run takes the prefetched results it needs and asks
// only for policies the last commit did not use. A policy the new commit
// no longer uses was asked for once in vain; its result is dropped, as if
// never asked.
type prefetch struct {
	done    chan struct{}
	cancel  context.CancelFunc
	results map[string]PolicyResult // by policy name, once done is closed
}

// startPrefetch starts selecting the target's policies that used says
// the last commit's markers name, or returns nil when there are none, or
// when a policy needs the markers' current values (the ifNotPresent
// digest mode) that only the new commit's files give. prev holds the
// picks of the target's last cycle (previousPicks), kept when made from
// the same tags.
func startPrefetch(ctx context.Context, opts TargetOptions, reg Registry, used func(name string) bool, prev map[string]*PolicyResult, logger *slog.Logger) *prefetch {
	applied := appliedImages(opts.Config, opts.Target.Selects)
	if needsCurrent(applied) {
		return nil
	}
	var images []*config.Image
	for _, im := range applied {
		if used(im.Name) {
			images = append(images, im)
		}
	}
	if len(images) == 0 {
		return nil
	}
	ctx, cancel := context.WithCancel(ctx)
	p := &prefetch{done: make(chan struct{}), cancel: cancel}
	gates := gatesFor(opts.Gates, images, opts.Now, logger)
	go func() {
		defer close(p.done)
		results := selectImages(ctx, reg, gates, images, nil, prev, 0, logger)
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
		// None of them was asked for last cycle either, so it has no
		// pick to keep.
		fresh = selectImages(ctx, reg, gates, missing, nil, nil, concurrency, logger)
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

// A listAhead overlaps the tag listings with the scan that finds which
// policies the markers name, when no prefetch could start them before:
// the scan reports each policy as it reads the comment, and the first
// report of a policy's repository starts listing it. Run's selection then
// takes the listings through Scan, as it would take the registry's.
// Every repository listed ahead is one the scan's answer names, so no
// registry is asked more than a cycle without it would ask.
type listAhead struct {
	reg    Registry
	ctx    context.Context
	cancel context.CancelFunc
	repoOf map[string]string // repository by policy name
	sem    chan struct{}
	wg     sync.WaitGroup

	mu    sync.Mutex
	lists map[string]*listing // by repository
}

type listing struct {
	done chan struct{}
	res  registry.Result
}

// startListAhead returns a listAhead for the images, which list at most
// concurrency repositories at once (defaultConcurrency if concurrency < 1).
func startListAhead(ctx context.Context, reg Registry, images []*config.Image, concurrency int) *listAhead {
	if concurrency <= 0 {
		concurrency = defaultConcurrency
	}
	ctx, cancel := context.WithCancel(ctx)
	a := &listAhead{
		reg: reg, ctx: ctx, cancel: cancel,
		repoOf: make(map[string]string, len(images)),
		sem:    make(chan struct{}, concurrency),
		lists:  map[string]*listing{},
	}
	for _, im := range images {
		a.repoOf[im.Name] = im.Repository
	}
	return a
}

// add starts listing the repository of policy, unless it is not one of
// the images or is listed already. It is safe for concurrent use.
func (a *listAhead) add(policy string) {
	repo, ok := a.repoOf[policy]
	if !ok {
		return
	}
	a.mu.Lock()
	if _, ok := a.lists[repo]; ok {
		a.mu.Unlock()
		return
	}
	l := &listing{done: make(chan struct{})}
	a.lists[repo] = l
	a.mu.Unlock()
	a.wg.Go(func() {
		defer close(l.done)
		a.sem <- struct{}{}
		defer func() { <-a.sem }()
		l.res = a.reg.Scan(a.ctx, []string{repo}, 1)[0]
	})
}

// Scan returns the listings of repositories, in order: those listed ahead
// once they are done, the others listed now.
func (a *listAhead) Scan(ctx context.Context, repositories []string, concurrency int) []registry.Result {
	out := make([]registry.Result, len(repositories))
	var rest []string
	var restAt []int
	a.mu.Lock()
	ahead := make([]*listing, len(repositories))
	for i, repo := range repositories {
		if ahead[i] = a.lists[repo]; ahead[i] == nil {
			rest = append(rest, repo)
			restAt = append(restAt, i)
		}
	}
	a.mu.Unlock()
	if len(rest) > 0 {
		for j, r := range a.reg.Scan(ctx, rest, concurrency) {
			out[restAt[j]] = r
		}
	}
	for i, l := range ahead {
		if l != nil {
			<-l.done
			out[i] = l.res
		}
	}
	return out
}

// stop cancels the listings still running and waits for them; nil is a
// no-op.
func (a *listAhead) stop() {
	if a == nil {
		return
	}
	a.cancel()
	a.wg.Wait()
}
