package registry

import (
	"context"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/imagebump/imagebump/internal/testkit/testregistry"
)

// faultProxy starts a reverse proxy to the registry at target, with f's
// faults in front of it, and returns the proxy's host:port.
func faultProxy(t *testing.T, target string, f *faults) string {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	rp := httputil.NewSingleHostReverseProxy(u)
	// A client giving up on a hanging request is the point of some rows,
	// not news.
	rp.ErrorLog = log.New(io.Discard, "", 0)
	srv := httptest.NewServer(f.wrap(rp))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

// TestFaultsRealRegistry runs the faults of issue 2 through a proxy in
// front of the CNCF distribution registry: each ends in a retry that
// succeeds or in a classified error, never in a hang, a loop or a wrong
// result.
func TestFaultsRealRegistry(t *testing.T) {
	s := testregistry.Start(t, testregistry.Options{Version: testregistry.V2})
	s.Push(t, "acme/app", "1.0", "2.0")
	wantDigest := s.Digest(t, "acme/app", "1.0")

	const tagsPath = "/acme/app/tags/list"
	tests := []struct {
		name         string
		rule         *rule
		opts         Options
		digest       bool          // call Digest rather than Tags
		wantKind     Kind          // KindUnknown: success
		wantHits     int           // requests the rule matched; 0: not checked
		wantMinHits  int           // requests the rule matched, at least
		wantAttempts int           // 0: not checked
		wantMinTime  time.Duration // the call took at least this long
		wantText     string        // in the error, HOST standing for the proxy
		wantWarn     string        // in a warning logged
	}{
		{
			// The backoff alone would retry at once: only Retry-After,
			// capped by MaxBackoff, explains the wait.
			name:        "429 with Retry-After then success",
			rule:        &rule{path: tagsPath, times: 1, action: status(http.StatusTooManyRequests, map[string]string{"Retry-After": "30"}, "")},
			opts:        Options{MaxBackoff: 300 * time.Millisecond},
			wantHits:    2,
			wantMinTime: 250 * time.Millisecond,
		},
		{name: "500 then success", rule: &rule{path: tagsPath, times: 1, action: status(http.StatusInternalServerError, nil, "")}, wantHits: 2},
		{name: "503 twice then success", rule: &rule{path: tagsPath, times: 2, action: status(http.StatusServiceUnavailable, nil, "")}, wantHits: 3},
		{
			name:   "manifest HEAD 503 then success",
			rule:   &rule{method: http.MethodHead, path: "/acme/app/manifests/", times: 1, action: status(http.StatusServiceUnavailable, nil, "")},
			digest: true, wantHits: 2,
		},
		{
			name:     "429 always",
			rule:     &rule{path: tagsPath, action: status(http.StatusTooManyRequests, nil, "")},
			opts:     Options{MaxRetries: 2},
			wantKind: KindRateLimited, wantHits: 3, wantAttempts: 3,
			wantText: "rate-limited by HOST (HTTP 429) after 3 attempts: GET http://HOST/v2/acme/app/tags/list?n=1000: unexpected status code 429 Too Many Requests; set a lower registries[].rateLimit for HOST, or try again later",
		},
		{name: "hang once then success", rule: &rule{path: tagsPath, times: 1, action: hang}, opts: Options{Timeout: 200 * time.Millisecond}, wantHits: 2},
		{
			name:     "hang past the timeout",
			rule:     &rule{path: tagsPath, action: hang},
			opts:     Options{Timeout: 150 * time.Millisecond, MaxRetries: 1},
			wantKind: KindTimeout, wantHits: 2, wantAttempts: 2,
			wantText: "list tags for HOST/acme/app: timed out talking to HOST after 2 attempts",
		},
		{name: "hang in the body", rule: &rule{path: tagsPath, action: hangInBody}, opts: Options{Timeout: 150 * time.Millisecond, MaxRetries: 1}, wantKind: KindTimeout, wantHits: 2, wantAttempts: 2},
		{name: "truncated body once", rule: &rule{path: tagsPath, times: 1, action: truncate}, wantHits: 2},
		{
			name:     "truncated body always",
			rule:     &rule{path: tagsPath, action: truncate},
			opts:     Options{MaxRetries: 1},
			wantKind: KindBadResponse, wantMinHits: 2,
			wantText: "bad response from HOST",
		},
		{
			name:     "malformed JSON",
			rule:     &rule{path: tagsPath, action: status(http.StatusOK, map[string]string{"Content-Type": "application/json"}, `{"name":"acme/app","tags":["1.0",`)},
			wantKind: KindBadResponse, wantHits: 1,
			wantText: "bad response from HOST: decoding tag list",
		},
		{
			name: "Link header to itself",
			rule: &rule{path: tagsPath, action: withHeader("Link", `</v2/acme/app/tags/list?n=1000>; rel="next"`)},
			// The registry sends no Link of its own; the proxy's points
			// back at the page just fetched.
			wantHits: 1, wantWarn: "repeats a page already fetched",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.rule.name = "rule"
			f := newFaults(tt.rule)
			host := faultProxy(t, s.URL, f)
			var logs logBuffer
			opts := tt.opts
			opts.Logger = newLogger(&logs)
			c := newClient(t, opts, host)

			var (
				got any
				err error
			)
			start := time.Now()
			done := make(chan struct{})
			go func() {
				defer close(done)
				if tt.digest {
					got, err = c.Digest(context.Background(), host+"/acme/app", "1.0", "")
				} else {
					got, err = c.Tags(context.Background(), host+"/acme/app")
				}
			}()
			select {
			case <-done:
			case <-time.After(30 * time.Second):
				t.Fatal("the call did not return: a hang or a pagination loop")
			}
			elapsed := time.Since(start)

			if tt.wantKind == KindUnknown {
				if err != nil {
					t.Fatalf("got error %v, want success", err)
				}
				var want any = []string{"1.0", "2.0"}
				if tt.digest {
					want = wantDigest
				}
				if tags, ok := got.([]string); ok {
					// The registry's order is its own.
					got = slices.Sorted(slices.Values(tags))
				}
				if diff := cmp.Diff(got, want); diff != "" {
					t.Errorf("result mismatch (-got +want):\n%s", diff)
				}
			} else {
				if err == nil {
					t.Fatalf("succeeded with %v, want a %v error", got, tt.wantKind)
				}
				e := asError(t, err)
				if e.Kind != tt.wantKind {
					t.Errorf("kind %v, want %v: %v", e.Kind, tt.wantKind, err)
				}
				if tt.wantAttempts != 0 && e.Attempts != tt.wantAttempts {
					t.Errorf("attempts %d, want %d: %v", e.Attempts, tt.wantAttempts, err)
				}
				if text := strings.ReplaceAll(tt.wantText, "HOST", host); !strings.Contains(err.Error(), text) {
					t.Errorf("error text\n%q\ndoes not contain\n%q", err, text)
				}
			}
			if elapsed < tt.wantMinTime {
				t.Errorf("took %v, want at least %v", elapsed, tt.wantMinTime)
			}
			if hits := f.hit("rule"); tt.wantHits != 0 && hits != tt.wantHits {
				t.Errorf("rule matched %d requests, want %d", hits, tt.wantHits)
			}
			if hits := f.hit("rule"); hits < tt.wantMinHits {
				t.Errorf("rule matched %d requests, want at least %d", hits, tt.wantMinHits)
			}
			if tt.wantWarn != "" && (!strings.Contains(logs.String(), "level=WARN") || !strings.Contains(logs.String(), tt.wantWarn)) {
				t.Errorf("log does not warn %q:\n%s", tt.wantWarn, logs.String())
			}
		})
	}
}
