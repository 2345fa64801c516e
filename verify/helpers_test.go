package verify

import (
	"context"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// counter is an http.RoundTripper that counts the requests it sends and
// remembers their method and path.
type counter struct {
	next  http.RoundTripper
	n     atomic.Int64
	mu    sync.Mutex
	calls []string
}

func (c *counter) RoundTrip(req *http.Request) (*http.Response, error) {
	c.n.Add(1)
	c.mu.Lock()
	c.calls = append(c.calls, req.Method+" "+req.URL.Path)
	c.mu.Unlock()
	return c.next.RoundTrip(req)
}

// take returns the requests counted since the last take.
func (c *counter) take() (int64, []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	calls := c.calls
	c.calls = nil
	return c.n.Swap(0), calls
}

// testRegistry is an in-process go-containerregistry registry on loopback.
type testRegistry struct {
	host string
	// push reaches the registry for the test's own writes, uncounted.
	push []remote.Option
	// requests counts what the Verifier's Remote sends.
	requests *counter
	remote   *Remote
}

func startRegistry(t testing.TB, referrers bool) *testRegistry {
	t.Helper()
	srv := httptest.NewServer(registry.New(
		registry.WithReferrersSupport(referrers),
		registry.Logger(log.New(io.Discard, "", 0)),
	))
	t.Cleanup(srv.Close)
	// A transport of its own: httptest's Close closes the idle
	// connections of http.DefaultTransport, which broke a request of a
	// parallel test in flight on it ("CloseIdleConnections called").
	tr := http.DefaultTransport.(*http.Transport).Clone()
	t.Cleanup(tr.CloseIdleConnections)
	c := &counter{next: tr}
	return &testRegistry{
		host:     strings.TrimPrefix(srv.URL, "http://"),
		push:     []remote.Option{remote.WithTransport(tr)},
		requests: c,
		remote:   NewRemote(remote.WithTransport(c)),
	}
}

// repo returns a repository name unique to the test.
func (r *testRegistry) repo(t *testing.T) string {
	name := strings.ToLower(t.Name())
	name = strings.NewReplacer("/", "-", "_", "-", " ", "-").Replace(name)
	return r.host + "/" + name
}

// noReferrers is a Registry without the referrers API, as imagebump's own
// client may be: the Verifier must read the tag schema itself.
type noReferrers struct{ Registry }

func (noReferrers) Referrers(context.Context, string, string, string) ([]v1.Descriptor, error) {
	return nil, ErrReferrersUnsupported
}
