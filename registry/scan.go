package registry

import (
	"context"
	"sync"
)

// Result is the outcome of listing one repository's tags in Scan.
type Result struct {
	Repository string
	Tags       []string
	Err        error // an *Error, or nil
}

// Scan is Cycle.Scan in a Cycle of its own.
func (c *Client) Scan(ctx context.Context, repositories []string, concurrency int) []Result {
	return c.Cycle().Scan(ctx, repositories, concurrency)
}

// Scan lists the tags of each repository, with at most concurrency listings
// in flight (DefaultScanConcurrency if concurrency < 1); per-host limits
// apply on top. It returns one Result per repository, in the order given.
// One repository failing fails no other, with one exception that saves
// time: once a host stops answering, its remaining repositories fail at
// once with the same error (see Cycle). Once ctx is done, the repositories
// not yet listed get a KindCanceled error.
func (y *Cycle) Scan(ctx context.Context, repositories []string, concurrency int) []Result {
	if concurrency < 1 {
		concurrency = DefaultScanConcurrency
	}
	results := make([]Result, len(repositories))
	jobs := make(chan int)
	var wg sync.WaitGroup
	for range min(concurrency, len(repositories)) {
		wg.Go(func() {
			for i := range jobs {
				tags, err := y.Tags(ctx, repositories[i])
				results[i] = Result{Repository: repositories[i], Tags: tags, Err: err}
			}
		})
	}
	for i := range repositories {
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	return results
}
