package registry

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/imagebump/imagebump/internal/testkit/testregistry"
)

const (
	benchRepos   = 200
	benchTags    = 100
	benchLatency = 20 * time.Millisecond
	benchRate    = 50
	benchBurst   = 5
)

// latencyProxy forwards to a registry after a fixed delay per request, and
// records when each request arrived.
type latencyProxy struct {
	proxy *httputil.ReverseProxy
	delay time.Duration

	mu       sync.Mutex
	arrivals []time.Time
}

func (p *latencyProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	p.arrivals = append(p.arrivals, time.Now())
	p.mu.Unlock()
	select {
	case <-time.After(p.delay):
	case <-r.Context().Done():
		return
	}
	p.proxy.ServeHTTP(w, r)
}

// reset forgets the arrivals so far.
func (p *latencyProxy) reset() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.arrivals = nil
}

// maxPerSecond returns the largest number of requests that arrived within
// any one-second window.
func (p *latencyProxy) maxPerSecond() int {
	p.mu.Lock()
	ts := slices.Clone(p.arrivals)
	p.mu.Unlock()
	slices.SortFunc(ts, func(a, b time.Time) int { return a.Compare(b) })
	best, lo := 0, 0
	for hi := range ts {
		for ts[hi].Sub(ts[lo]) >= time.Second {
			lo++
		}
		best = max(best, hi-lo+1)
	}
	return best
}

func (p *latencyProxy) count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.arrivals)
}

// BenchmarkScan lists 200 repositories of 100 tags each on a distribution
// registry behind a proxy that adds 20 ms to every request, with Scan
// concurrency 1 and 8, and under a per-host rate limit of 50 requests per
// second with a burst of 5.
func BenchmarkScan(b *testing.B) {
	storageInMemory(b)
	s := testregistry.Start(b, testregistry.Options{Version: testregistry.V2})
	setup := time.Now()
	tags := make([]string, benchTags)
	for i := range tags {
		tags[i] = fmt.Sprintf("1.%d.%d", i/10, i%10)
	}
	repos := make([]string, benchRepos)
	var wg sync.WaitGroup
	work := make(chan int)
	for range 4 {
		wg.Go(func() {
			for i := range work {
				s.Push(b, fmt.Sprintf("bench/app%03d", i), tags...)
			}
		})
	}
	for i := range repos {
		work <- i
	}
	close(work)
	wg.Wait()
	b.Logf("pushed %d repositories of %d tags in %v", benchRepos, benchTags, time.Since(setup).Round(time.Millisecond))

	target, err := url.Parse(s.URL)
	if err != nil {
		b.Fatal(err)
	}
	lp := &latencyProxy{proxy: httputil.NewSingleHostReverseProxy(target), delay: benchLatency}
	srv := httptest.NewServer(lp)
	b.Cleanup(srv.Close)
	host := strings.TrimPrefix(srv.URL, "http://")
	for i := range repos {
		repos[i] = fmt.Sprintf("%s/bench/app%03d", host, i)
	}

	scan := func(b *testing.B, hc Host, concurrency int) {
		b.Helper()
		// A new client each time: its ping and sessions are part of the
		// cost of a scan.
		c := newClient(b, Options{Hosts: []Host{hc}})
		for _, r := range c.Scan(context.Background(), repos, concurrency) {
			if r.Err != nil {
				b.Fatalf("Scan %s: %v", r.Repository, r.Err)
			}
			if len(r.Tags) != benchTags {
				b.Fatalf("Scan %s: %d tags, want %d", r.Repository, len(r.Tags), benchTags)
			}
		}
	}

	// With -count, each sub-benchmark runs several times within one run of
	// this function: total holds the time of all its scans.
	type timing struct {
		total time.Duration
		scans int
	}
	timings := map[int]*timing{1: {}, 8: {}}
	for _, concurrency := range []int{1, 8} {
		b.Run(fmt.Sprintf("concurrency=%d", concurrency), func(b *testing.B) {
			lp.reset()
			// The host allows 8 requests in flight, so that Scan's
			// concurrency is what varies.
			hc := Host{Host: host, Insecure: true, Concurrency: 8}
			start := time.Now()
			for b.Loop() {
				scan(b, hc, concurrency)
			}
			elapsed := time.Since(start)
			timings[concurrency].total += elapsed
			timings[concurrency].scans += b.N
			b.ReportMetric(float64(lp.count())/float64(b.N), "requests/op")
			b.ReportMetric(float64(benchRepos*b.N)/elapsed.Seconds(), "repos/s")
		})
	}
	if t1, t8 := timings[1], timings[8]; t1.scans > 0 && t8.scans > 0 {
		speedup := (t1.total.Seconds() / float64(t1.scans)) / (t8.total.Seconds() / float64(t8.scans))
		b.Logf("concurrency 8 is %.1fx faster than concurrency 1 (mean of %d and %d scans)", speedup, t1.scans, t8.scans)
		if speedup < 5 {
			b.Errorf("concurrency 8 is only %.1fx faster than concurrency 1, want at least 5x", speedup)
		}
	}

	b.Run(fmt.Sprintf("rate=%d,burst=%d", benchRate, benchBurst), func(b *testing.B) {
		lp.reset()
		hc := Host{Host: host, Insecure: true, Concurrency: 8, RequestsPerSecond: benchRate, Burst: benchBurst}
		for b.Loop() {
			scan(b, hc, 8)
		}
		peak := lp.maxPerSecond()
		b.ReportMetric(float64(peak), "max-requests/s")
		if peak > benchRate+benchBurst {
			b.Errorf("the proxy saw %d requests within one second, want at most %d (rate %d + burst %d)", peak, benchRate+benchBurst, benchRate, benchBurst)
		}
	})
}
