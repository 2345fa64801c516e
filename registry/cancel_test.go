package registry

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"
)

// calls are the network calls of a Client, for the cancellation tests.
var calls = []struct {
	name string
	call func(ctx context.Context, c *Client, host string) error
}{
	{name: "Tags", call: func(ctx context.Context, c *Client, host string) error {
		_, err := c.Tags(ctx, host+"/acme/app")
		return err
	}},
	{name: "Digest", call: func(ctx context.Context, c *Client, host string) error {
		_, err := c.Digest(ctx, host+"/acme/app", "1.0", "")
		return err
	}},
	{name: "Digest with platform", call: func(ctx context.Context, c *Client, host string) error {
		_, err := c.Digest(ctx, host+"/acme/app", "1.0", "linux/amd64")
		return err
	}},
	{name: "Scan", call: func(ctx context.Context, c *Client, host string) error {
		rs := c.Scan(ctx, []string{host + "/acme/app", host + "/acme/other"}, 2)
		for _, r := range rs {
			if r.Err == nil {
				return nil
			}
		}
		return rs[0].Err
	}},
}

func TestCanceledBeforeCall(t *testing.T) {
	for _, tc := range calls {
		t.Run(tc.name, func(t *testing.T) {
			cnt := newCounter()
			host := newRegistry(t, cnt.wrap)
			push(t, host, "acme/app", "1.0")
			c := newClient(t, Options{}, host)
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			err := tc.call(ctx, c, host)
			if KindOf(err) != KindCanceled {
				t.Errorf("error %v, want kind %v", err, KindCanceled)
			}
			if n := cnt.total(""); n != 0 {
				t.Errorf("%d requests sent with a canceled context, want none", n)
			}
		})
	}
}

// TestCancelStopsWaits cancels the context while the client waits in each
// place it can wait, and checks that it returns promptly.
func TestCancelStopsWaits(t *testing.T) {
	t.Parallel()
	waits := []struct {
		name string
		wrap func(http.Handler) http.Handler
		opts func(host string) Options
	}{
		{
			name: "request in flight",
			wrap: newFaults(&rule{name: "r", path: "/acme/", action: hang}).wrap,
		},
		{
			name: "ping in flight",
			wrap: newFaults(&rule{name: "r", path: "/v2/", action: hang}).wrap,
		},
		{
			name: "backoff",
			wrap: newFaults(&rule{name: "r", path: "/acme/", action: status(503, nil, "")}).wrap,
			opts: func(string) Options {
				return Options{Backoff: time.Minute, MaxBackoff: time.Minute, Timeout: 2 * time.Minute}
			},
		},
		{
			name: "retry-after",
			wrap: newFaults(&rule{name: "r", path: "/acme/", action: status(429, map[string]string{"Retry-After": "60"}, "")}).wrap,
			// A timeout longer than the Retry-After: the cycle waits it.
			opts: func(string) Options { return Options{MaxBackoff: time.Minute, Timeout: 2 * time.Minute} },
		},
		{
			name: "rate limit",
			opts: func(host string) Options {
				// The ping takes the only token; the next comes in 100 s.
				return Options{Hosts: []Host{{Host: host, Insecure: true, RequestsPerSecond: 0.01, Burst: 1}}}
			},
		},
		{
			name: "concurrency slot",
			// With one slot, the ping's HTTPS attempt (refused: the server
			// speaks HTTP) frees it; the first repository request then
			// hangs holding it, and Scan's second waits for it.
			wrap: newFaults(&rule{name: "r", path: "/acme/", action: hang}).wrap,
			opts: func(host string) Options {
				return Options{Hosts: []Host{{Host: host, Insecure: true, Concurrency: 1}}}
			},
		},
	}
	for _, w := range waits {
		for _, tc := range calls {
			t.Run(w.name+"/"+tc.name, func(t *testing.T) {
				host := newRegistry(t, w.wrap)
				push(t, host, "acme/app", "1.0")
				push(t, host, "acme/other", "1.0")
				opts := Options{}
				if w.opts != nil {
					opts = w.opts(host)
				}
				var c *Client
				if len(opts.Hosts) > 0 {
					c = newClient(t, opts)
				} else {
					c = newClient(t, opts, host)
				}
				ctx, cancel := context.WithCancel(context.Background())
				time.AfterFunc(100*time.Millisecond, cancel)
				start := time.Now()
				err := tc.call(ctx, c, host)
				if d := time.Since(start); d > 5*time.Second {
					t.Errorf("returned %v after the cancel, want promptly", d)
				}
				if KindOf(err) != KindCanceled {
					t.Errorf("error %v, want kind %v", err, KindCanceled)
				}
			})
		}
	}
}

// TestDeadlineIsTimeout checks that the caller's own deadline is reported
// as a timeout, not as a cancellation, and not retried.
func TestDeadlineIsTimeout(t *testing.T) {
	f := newFaults(&rule{name: "r", path: "/acme/", action: hang})
	host := newRegistry(t, f.wrap)
	push(t, host, "acme/app", "1.0")
	c := newClient(t, Options{}, host)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, err := c.Tags(ctx, host+"/acme/app")
	if KindOf(err) != KindTimeout {
		t.Errorf("error %v, want kind %v", err, KindTimeout)
	}
	if got := f.hit("r"); got != 1 {
		t.Errorf("%d requests, want 1: a deadline of the caller is not retried", got)
	}
}

// TestRequestTimeoutNamesTheSetting: a request that outlives the host's
// timeout fails saying how long that was and which setting it is.
func TestRequestTimeoutNamesTheSetting(t *testing.T) {
	f := newFaults(&rule{name: "r", path: "/acme/", action: hang})
	host := newRegistry(t, f.wrap)
	push(t, host, "acme/app", "1.0")
	c := newClient(t, Options{Timeout: 200 * time.Millisecond, MaxRetries: NoRetries}, host)
	_, err := c.Tags(context.Background(), host+"/acme/app")
	if KindOf(err) != KindTimeout || !strings.Contains(err.Error(), "request timed out after 200ms (registries[].timeout)") {
		t.Errorf("error %v, want a timeout naming 200ms and registries[].timeout", err)
	}
}
