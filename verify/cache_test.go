package verify

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/imagebump/imagebump/internal/testkit/signed"
)

// clock is a settable time for a Cache.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func newTestCache(opts CacheOptions) (*Cache, *clock) {
	c := NewCache(opts)
	clk := &clock{t: time.Now()}
	c.now = clk.now
	return c, clk
}

// TestCacheSparesRequests: a second Verify of a digest costs no request,
// whatever the verdict, until the verdict's TTL passes.
func TestCacheSparesRequests(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	r := startRegistry(t, true)
	tests := []struct {
		name string
		sign func(t *testing.T, repo, digest string)
		ttl  time.Duration
		want error // nil, ErrUnsigned or ErrInvalid
	}{
		{
			name: "verified classic",
			sign: func(t *testing.T, repo, digest string) {
				signed.SignClassic(t, r.push, repo, digest, signed.Spec{Key: w.key})
			},
			ttl: time.Hour,
		},
		{
			name: "verified bundle",
			sign: func(t *testing.T, repo, digest string) {
				signed.SignBundle(t, r.push, repo, digest, signed.Spec{Key: w.key})
			},
			ttl: time.Hour,
		},
		{name: "unsigned", sign: func(*testing.T, string, string) {}, ttl: time.Minute, want: ErrUnsigned},
		{
			name: "invalid",
			sign: func(t *testing.T, repo, digest string) {
				signed.SignBundle(t, r.push, repo, digest, signed.Spec{Key: w.otherKey})
			},
			ttl: time.Minute, want: ErrInvalid,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			repo := r.repo(t)
			digest := signed.PushImage(t, r.push, repo, "v1")
			tt.sign(t, repo, digest)
			cache, clk := newTestCache(CacheOptions{PositiveTTL: time.Hour, NegativeTTL: time.Minute})
			requests := &counter{next: r.requests}
			v, err := New(Options{Key: w.keyFile}, NewRemote(remote.WithTransport(requests)), WithCache(cache))
			if err != nil {
				t.Fatal(err)
			}
			first, err1 := v.Verify(t.Context(), repo, digest)
			if !errors.Is(err1, tt.want) || (tt.want == nil && err1 != nil) {
				t.Fatalf("first Verify: %v, want %v", err1, tt.want)
			}
			if n, _ := requests.take(); n == 0 {
				t.Fatal("first Verify made no request")
			}

			second, err2 := v.Verify(t.Context(), repo, digest)
			if n, calls := requests.take(); n != 0 {
				t.Errorf("second Verify made %d requests, want 0: %q", n, calls)
			}
			if diff := cmp.Diff(second, first); diff != "" {
				t.Errorf("cached result (-got +want):\n%s", diff)
			}
			if fmt.Sprint(err2) != fmt.Sprint(err1) {
				t.Errorf("cached verdict %v, want %v", err2, err1)
			}

			clk.advance(tt.ttl - time.Second)
			v.Verify(t.Context(), repo, digest)
			if n, _ := requests.take(); n != 0 {
				t.Errorf("Verify within the TTL made %d requests, want 0", n)
			}
			clk.advance(2 * time.Second)
			v.Verify(t.Context(), repo, digest)
			if n, _ := requests.take(); n == 0 {
				t.Error("Verify after the TTL made no request")
			}
		})
	}
}

// TestCacheKeysByPolicy: a verdict for one policy is not served to another
// sharing the cache, nor for another repository.
func TestCacheKeysByPolicy(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	r := startRegistry(t, true)
	repo := r.repo(t)
	digest := signed.PushImage(t, r.push, repo, "v1")
	signed.SignClassic(t, r.push, repo, digest, signed.Spec{Key: w.key})
	cache := NewCache(CacheOptions{})
	good, err := New(Options{Key: w.keyFile}, r.remote, WithCache(cache))
	if err != nil {
		t.Fatal(err)
	}
	otherFile := w.otherKey.WritePublic(t, t.TempDir(), "other.pub")
	other, err := New(Options{Key: otherFile}, r.remote, WithCache(cache))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := good.Verify(t.Context(), repo, digest); err != nil {
		t.Fatalf("Verify: %v", err)
	}
	if _, err := other.Verify(t.Context(), repo, digest); !errors.Is(err, ErrInvalid) {
		t.Fatalf("Verify with another key after a pass: %v, want invalid", err)
	}
	// Same key, same bytes, another file: same policy, cached.
	same, err := New(Options{Key: w.key.WritePublic(t, t.TempDir(), "copy.pub")}, r.remote, WithCache(cache))
	if err != nil {
		t.Fatal(err)
	}
	r.requests.take()
	if _, err := same.Verify(t.Context(), repo, digest); err != nil {
		t.Fatalf("Verify: %v", err)
	}
	if n, _ := r.requests.take(); n != 0 {
		t.Errorf("the same key from another file made %d requests, want 0", n)
	}
	// Another repository with the same digest has its own signatures.
	copyRepo := repo + "-copy"
	if _, err := good.Verify(t.Context(), copyRepo, digest); !errors.Is(err, ErrUnsigned) {
		t.Errorf("Verify in %s: %v, want unsigned", copyRepo, err)
	}
}

// failing is a Registry whose every call fails, as an unreachable one.
type failing struct{ calls atomic.Int64 }

var errDown = errors.New("registry down")

func (f *failing) Manifest(context.Context, string, string) (Manifest, error) {
	f.calls.Add(1)
	return Manifest{}, errDown
}

func (f *failing) Blob(context.Context, string, string) ([]byte, error) {
	f.calls.Add(1)
	return nil, errDown
}

func (f *failing) Referrers(context.Context, string, string, string) ([]v1.Descriptor, error) {
	f.calls.Add(1)
	return nil, errDown
}

// TestCacheSkipsFailures: an error that says nothing about the image is
// returned as is, not as a verdict, and not cached.
func TestCacheSkipsFailures(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	reg := &failing{}
	v, err := New(Options{Key: w.keyFile}, reg)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		_, err := v.Verify(t.Context(), "registry.example/app", otherDigest)
		if !errors.Is(err, errDown) || errors.Is(err, ErrUnsigned) || errors.Is(err, ErrInvalid) {
			t.Fatalf("Verify %d: %v, want the registry's error and no verdict", i, err)
		}
	}
	if got := reg.calls.Load(); got != 2 {
		t.Errorf("%d registry calls, want 2 (one per Verify, none cached)", got)
	}
}

func TestCacheNegativeDisabled(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	r := startRegistry(t, true)
	repo := r.repo(t)
	digest := signed.PushImage(t, r.push, repo, "v1")
	v, err := New(Options{Key: w.keyFile}, r.remote, WithCache(NewCache(CacheOptions{NegativeTTL: -1})))
	if err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		r.requests.take()
		if _, err := v.Verify(t.Context(), repo, digest); !errors.Is(err, ErrUnsigned) {
			t.Fatalf("Verify: %v, want unsigned", err)
		}
		if n, _ := r.requests.take(); n == 0 {
			t.Errorf("Verify %d made no request with negative caching off", i)
		}
	}
	// A signature pushed after an unsigned verdict counts at once.
	signed.SignClassic(t, r.push, repo, digest, signed.Spec{Key: w.key})
	if _, err := v.Verify(t.Context(), repo, digest); err != nil {
		t.Errorf("Verify after signing: %v", err)
	}
}

func TestCacheEviction(t *testing.T) {
	t.Parallel()
	c, clk := newTestCache(CacheOptions{MaxEntries: 2, PositiveTTL: time.Hour, NegativeTTL: time.Minute})
	key := func(i int) cacheKey { return cacheKey{repository: "r", digest: fmt.Sprint(i), policy: "p"} }
	c.put(key(1), Result{Source: "1"}, nil)
	c.put(key(2), Result{}, &Error{}) // expires first
	c.put(key(3), Result{Source: "3"}, nil)
	if got := c.Len(); got != 2 {
		t.Fatalf("Len = %d, want 2", got)
	}
	if _, _, ok := c.get(key(2)); ok {
		t.Error("the entry expiring soonest was kept")
	}
	clk.advance(2 * time.Hour)
	c.put(key(4), Result{}, nil)
	if got := c.Len(); got != 1 {
		t.Errorf("Len after expiry = %d, want 1 (expired entries dropped)", got)
	}
}

// TestVerifyConcurrent runs Verify from many goroutines over one cache;
// with -race it checks the locking.
func TestVerifyConcurrent(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	r := startRegistry(t, true)
	repo := r.repo(t)
	var digests []string
	for i := range 3 {
		d := signed.PushImage(t, r.push, repo, fmt.Sprintf("v%d", i))
		if i != 2 {
			signed.SignBundle(t, r.push, repo, d, signed.Spec{Key: w.key})
		}
		digests = append(digests, d)
	}
	v, err := New(Options{Key: w.keyFile}, r.remote)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 24)
	for i := range 24 {
		wg.Go(func() {
			d := digests[i%3]
			_, err := v.Verify(t.Context(), repo, d)
			switch {
			case d == digests[2] && !errors.Is(err, ErrUnsigned):
				errs <- fmt.Errorf("unsigned %s: %v", d, err)
			case d != digests[2] && err != nil:
				errs <- fmt.Errorf("signed %s: %v", d, err)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
