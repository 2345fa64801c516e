package registry

import (
	"bytes"
	"errors"
	"io"
	"log"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	ggcrregistry "github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// noKeychain resolves every registry to anonymous, so that tests never read
// the Docker config of whoever runs them.
var noKeychain = authn.NewMultiKeychain()

// newRegistry starts ggcr's in-memory registry, wrapped by wrap if not nil,
// and returns its host:port. Tests push through a second, unwrapped server
// on the same storage, so that wrappers (auth, faults, counters) see only
// the client under test.
func newRegistry(t testing.TB, wrap func(http.Handler) http.Handler) string {
	t.Helper()
	var h http.Handler = ggcrregistry.New(ggcrregistry.Logger(log.New(io.Discard, "", 0)))
	direct := httptest.NewServer(h)
	t.Cleanup(direct.Close)
	if wrap != nil {
		h = wrap(h)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	host := strings.TrimPrefix(srv.URL, "http://")
	pushHosts.Store(host, strings.TrimPrefix(direct.URL, "http://"))
	t.Cleanup(func() { pushHosts.Delete(host) })
	return host
}

// pushHosts maps the host of each test registry to its unwrapped twin.
var pushHosts sync.Map

func pushHost(host string) string {
	if h, ok := pushHosts.Load(host); ok {
		return h.(string)
	}
	return host
}

// push writes a small random image to host/repo under each tag and returns
// its digest.
func push(t testing.TB, host, repo string, tags ...string) string {
	t.Helper()
	img, err := random.Image(64, 1)
	if err != nil {
		t.Fatal(err)
	}
	return pushImage(t, host, repo, img, tags...)
}

func pushImage(t testing.TB, host, repo string, img v1.Image, tags ...string) string {
	t.Helper()
	for i, tag := range tags {
		ref, err := name.NewTag(pushHost(host)+"/"+repo+":"+tag, name.Insecure)
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			err = remote.Write(ref, img)
		} else {
			err = remote.Tag(ref, img)
		}
		if err != nil {
			t.Fatalf("pushing %s: %v", ref, err)
		}
	}
	d, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return d.String()
}

// platformImage returns a random image whose config names platform p.
func platformImage(t testing.TB, p v1.Platform) v1.Image {
	t.Helper()
	img, err := random.Image(64, 1)
	if err != nil {
		t.Fatal(err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture, cf.Variant = p.OS, p.Architecture, p.Variant
	img, err = mutate.ConfigFile(img, cf)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

// pushIndex writes an OCI index with one image per platform ("os/arch" or
// "os/arch/variant") and returns the index digest and each image's.
func pushIndex(t testing.TB, host, repo, tag string, platforms ...string) (string, map[string]string) {
	t.Helper()
	var idx v1.ImageIndex = mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	digests := map[string]string{}
	for _, ps := range platforms {
		p, err := v1.ParsePlatform(ps)
		if err != nil {
			t.Fatal(err)
		}
		img := platformImage(t, *p)
		d, err := img.Digest()
		if err != nil {
			t.Fatal(err)
		}
		digests[ps] = d.String()
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: p}})
	}
	ref, err := name.NewTag(pushHost(host)+"/"+repo+":"+tag, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.WriteIndex(ref, idx); err != nil {
		t.Fatalf("pushing index %s: %v", ref, err)
	}
	d, err := idx.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return d.String(), digests
}

// newClient returns a Client for tests: fast backoff, an anonymous
// keychain, and each host insecure (the test servers speak plain HTTP).
func newClient(t testing.TB, opts Options, insecureHosts ...string) *Client {
	t.Helper()
	for _, h := range insecureHosts {
		opts.Hosts = append(opts.Hosts, Host{Host: h, Insecure: true})
	}
	if opts.Backoff == 0 {
		opts.Backoff = time.Millisecond
	}
	if opts.MaxBackoff == 0 {
		opts.MaxBackoff = 5 * time.Second
	}
	if opts.Keychain == nil {
		opts.Keychain = noKeychain
	}
	c, err := New(opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return c
}

// asError returns err as an *Error, failing the test if it is not one.
func asError(t testing.TB, err error) *Error {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("error %v (%T) is not an *Error", err, err)
	}
	return e
}

// logBuffer is a slog handler target that tests can search.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func newLogger(b *logBuffer) *slog.Logger {
	return slog.New(slog.NewTextHandler(b, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// counter counts requests by "METHOD path" and tracks how many are in
// flight at once.
type counter struct {
	mu          sync.Mutex
	counts      map[string]int
	inflight    atomic.Int64
	maxInflight atomic.Int64
}

func newCounter() *counter { return &counter{counts: map[string]int{}} }

func (c *counter) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c.mu.Lock()
		c.counts[r.Method+" "+r.URL.Path]++
		c.mu.Unlock()
		n := c.inflight.Add(1)
		defer c.inflight.Add(-1)
		for {
			m := c.maxInflight.Load()
			if n <= m || c.maxInflight.CompareAndSwap(m, n) {
				break
			}
		}
		next.ServeHTTP(w, r)
	})
}

// reset forgets the requests seen so far, such as a test's pushes.
func (c *counter) reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.counts = map[string]int{}
	c.maxInflight.Store(0)
}

func (c *counter) get(key string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.counts[key]
}

// total returns the number of requests whose "METHOD path" contains sub.
func (c *counter) total(sub string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for k, v := range c.counts {
		if strings.Contains(k, sub) {
			n += v
		}
	}
	return n
}

// slow delays requests whose path contains sub.
func slow(d time.Duration, sub string) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if strings.Contains(r.URL.Path, sub) {
				select {
				case <-time.After(d):
				case <-r.Context().Done():
					return
				}
			}
			next.ServeHTTP(w, r)
		})
	}
}

func chain(wraps ...func(http.Handler) http.Handler) func(http.Handler) http.Handler {
	return func(h http.Handler) http.Handler {
		for i := len(wraps) - 1; i >= 0; i-- {
			h = wraps[i](h)
		}
		return h
	}
}

// mustParseURL parses a URL or fails the test.
func mustParseURL(t testing.TB, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}
