package registry

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// faults is a middleware in front of a registry that misbehaves on the
// requests its rules match, a given number of times or forever.
type faults struct {
	mu    sync.Mutex
	rules []*rule
	hits  map[string]int // by rule name
}

type rule struct {
	name   string
	method string // "" matches any
	path   string // substring of the path
	times  int    // 0: forever
	action func(w http.ResponseWriter, r *http.Request, next http.Handler)
}

func newFaults(rules ...*rule) *faults {
	return &faults{rules: rules, hits: map[string]int{}}
}

func (f *faults) hit(name string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.hits[name]
}

func (f *faults) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		var match *rule
		for _, rl := range f.rules {
			if (rl.method == "" || rl.method == r.Method) && strings.Contains(r.URL.Path, rl.path) {
				f.hits[rl.name]++
				if rl.times == 0 || f.hits[rl.name] <= rl.times {
					match = rl
				}
				break
			}
		}
		f.mu.Unlock()
		if match == nil {
			next.ServeHTTP(w, r)
			return
		}
		match.action(w, r, next)
	})
}

// Actions.

func status(code int, header map[string]string, body string) func(http.ResponseWriter, *http.Request, http.Handler) {
	return func(w http.ResponseWriter, _ *http.Request, _ http.Handler) {
		for k, v := range header {
			w.Header().Set(k, v)
		}
		w.WriteHeader(code)
		fmt.Fprint(w, body)
	}
}

// hang answers nothing until the client gives up.
func hang(w http.ResponseWriter, r *http.Request, _ http.Handler) {
	<-r.Context().Done()
}

// hangInBody sends the headers and part of a body, then stalls.
func hangInBody(w http.ResponseWriter, r *http.Request, _ http.Handler) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	fmt.Fprint(w, `{"name":"acme/app","tags":["1.0",`)
	w.(http.Flusher).Flush()
	<-r.Context().Done()
}

// truncate promises a longer body than it sends, then drops the connection.
func truncate(w http.ResponseWriter, _ *http.Request, _ http.Handler) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", "500")
	w.WriteHeader(http.StatusOK)
	fmt.Fprint(w, `{"name":"acme/app","tags":["1.0",`)
	w.(http.Flusher).Flush()
	panic(http.ErrAbortHandler)
}

// reset closes the connection with a TCP RST before answering.
func reset(w http.ResponseWriter, _ *http.Request, _ http.Handler) {
	conn, _, err := w.(http.Hijacker).Hijack()
	if err != nil {
		panic(err)
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	conn.Close()
}

// withHeader passes the request on, adding a response header.
func withHeader(key, value string) func(http.ResponseWriter, *http.Request, http.Handler) {
	return func(w http.ResponseWriter, r *http.Request, next http.Handler) {
		w.Header().Set(key, value)
		next.ServeHTTP(w, r)
	}
}

// stripHeader passes the request on, dropping a response header.
func stripHeader(key string) func(http.ResponseWriter, *http.Request, http.Handler) {
	return func(w http.ResponseWriter, r *http.Request, next http.Handler) {
		next.ServeHTTP(&headerStripper{ResponseWriter: w, key: key}, r)
	}
}

type headerStripper struct {
	http.ResponseWriter
	key string
}

func (h *headerStripper) WriteHeader(code int) {
	h.Header().Del(h.key)
	h.ResponseWriter.WriteHeader(code)
}

func (h *headerStripper) Write(b []byte) (int, error) {
	h.Header().Del(h.key)
	return h.ResponseWriter.Write(b)
}

func TestFaults(t *testing.T) {
	t.Parallel()
	const tagsPath = "/tags/list"
	tests := []struct {
		name         string
		rule         *rule
		opts         Options
		digest       bool // call Digest rather than Tags
		wantKind     Kind // KindUnknown: success
		wantStatus   int
		wantHits     int // requests the rule matched; 0: not checked
		wantMinHits  int
		wantAttempts int
		wantText     string
	}{
		{name: "429 then success", rule: &rule{path: tagsPath, times: 1, action: status(429, nil, "")}, wantHits: 2},
		{name: "500 then success", rule: &rule{path: tagsPath, times: 1, action: status(500, nil, "")}, wantHits: 2},
		{name: "503 twice then success", rule: &rule{path: tagsPath, times: 2, action: status(503, nil, "")}, wantHits: 3},
		{name: "502 always", rule: &rule{path: tagsPath, action: status(502, nil, "")}, opts: Options{MaxRetries: 2},
			wantKind: KindServer, wantStatus: 502, wantHits: 3, wantAttempts: 3, wantText: "server error at HOST (HTTP 502) after 3 attempts"},
		{name: "429 always", rule: &rule{path: tagsPath, action: status(429, nil, `{"errors":[{"code":"TOOMANYREQUESTS","message":"slow down"}]}`)}, opts: Options{MaxRetries: 2},
			wantKind: KindRateLimited, wantStatus: 429, wantHits: 3, wantAttempts: 3, wantText: "list tags for HOST/acme/app: rate-limited by HOST (HTTP 429) after 3 attempts: GET http://HOST/v2/acme/app/tags/list?n=1000: TOOMANYREQUESTS: slow down; set a lower registries[].rateLimit for HOST, or try again later"},
		{name: "501 is not retried", rule: &rule{path: tagsPath, action: status(501, nil, "")}, wantKind: KindServer, wantStatus: 501, wantHits: 1},
		{name: "400 is not retried", rule: &rule{path: tagsPath, action: status(400, nil, "")}, wantKind: KindBadResponse, wantStatus: 400, wantHits: 1},
		{name: "401 is not retried", rule: &rule{path: tagsPath, action: status(401, nil, "")}, wantKind: KindAuth, wantStatus: 401, wantHits: 1},
		{name: "403 is not retried", rule: &rule{path: tagsPath, action: status(403, nil, `{"errors":[{"code":"DENIED","message":"no"}]}`)}, wantKind: KindAuth, wantStatus: 403, wantHits: 1, wantText: "access denied by HOST (HTTP 403): GET http://HOST/v2/acme/app/tags/list?n=1000: DENIED: no; check registries[].auth for HOST (or docker login HOST)"},
		{name: "404 is not retried", rule: &rule{path: tagsPath, action: status(404, nil, "")}, wantKind: KindNotFound, wantStatus: 404, wantHits: 1,
			wantText: "; the repository does not exist, or the credentials for HOST cannot see it"},
		{name: "hang once then success", rule: &rule{path: tagsPath, times: 1, action: hang}, opts: Options{Timeout: 200 * time.Millisecond}, wantHits: 2},
		{name: "hang always", rule: &rule{path: tagsPath, action: hang}, opts: Options{Timeout: 100 * time.Millisecond, MaxRetries: 1},
			wantKind: KindTimeout, wantHits: 2, wantAttempts: 2, wantText: "timed out talking to HOST after 2 attempts"},
		{name: "hang in the body", rule: &rule{path: tagsPath, action: hangInBody}, opts: Options{Timeout: 100 * time.Millisecond, MaxRetries: 1},
			wantKind: KindTimeout, wantHits: 2, wantAttempts: 2},
		{name: "malformed JSON", rule: &rule{path: tagsPath, action: status(200, nil, `{"name":"acme/app","tags":["1.0",`)}, wantKind: KindBadResponse, wantHits: 1, wantText: "decoding tag list"},
		{name: "wrong JSON type", rule: &rule{path: tagsPath, action: status(200, nil, `{"tags":"1.0"}`)}, wantKind: KindBadResponse, wantHits: 1},
		{name: "truncated body once", rule: &rule{path: tagsPath, times: 1, action: truncate}, wantHits: 2},
		{name: "truncated body always", rule: &rule{path: tagsPath, action: truncate}, opts: Options{MaxRetries: 1}, wantKind: KindBadResponse, wantMinHits: 2},
		{name: "connection reset once", rule: &rule{path: tagsPath, times: 1, action: reset}, wantMinHits: 2},
		{name: "connection reset always", rule: &rule{path: tagsPath, action: reset}, opts: Options{MaxRetries: 1}, wantKind: KindNetwork, wantMinHits: 2},
		{name: "ping 503 once", rule: &rule{method: http.MethodGet, path: "/v2/", times: 1, action: status(503, nil, "")}, wantHits: 3},
		{name: "ping 401 without challenge", rule: &rule{path: "/v2/", action: status(401, nil, "")}, wantKind: KindAuth, wantStatus: 401},
		{name: "HEAD without Docker-Content-Digest", rule: &rule{method: http.MethodHead, path: "/manifests/", action: stripHeader("Docker-Content-Digest")}, digest: true, wantHits: 1},
		{name: "HEAD with a malformed digest", rule: &rule{method: http.MethodHead, path: "/manifests/", action: withHeaderAfter("Docker-Content-Digest", "sha256:nothex")}, digest: true, wantHits: 1},
		{name: "HEAD 405", rule: &rule{method: http.MethodHead, path: "/manifests/", action: status(405, nil, "")}, digest: true, wantHits: 1},
		{name: "HEAD 500 always", rule: &rule{method: http.MethodHead, path: "/manifests/", action: status(500, nil, "")}, opts: Options{MaxRetries: 1}, digest: true, wantHits: 2},
		{name: "manifest GET malformed after HEAD fails", rule: &rule{path: "/manifests/", action: status(200, map[string]string{"Content-Type": "application/json"}, `{`)}, digest: true, wantKind: KindBadResponse},
		{name: "manifest 429 always", rule: &rule{path: "/manifests/", action: status(429, nil, "")}, opts: Options{MaxRetries: 1}, digest: true,
			wantKind: KindRateLimited, wantStatus: 429, wantHits: 2, wantAttempts: 2, wantText: "resolve digest for HOST/acme/app:1.0: rate-limited by HOST (HTTP 429) after 2 attempts: HEAD http://HOST/v2/acme/app/manifests/1.0: unexpected status code 429 Too Many Requests (HEAD responses have no body, use GET for details); set a lower registries[].rateLimit for HOST, or try again later"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.rule.name = "rule"
			f := newFaults(tt.rule)
			host := newRegistry(t, f.wrap)
			want := push(t, host, "acme/app", "1.0")
			c := newClient(t, tt.opts, host)
			var (
				got any
				err error
			)
			if tt.digest {
				got, err = c.Digest(context.Background(), host+"/acme/app", "1.0", "")
			} else {
				got, err = c.Tags(context.Background(), host+"/acme/app")
			}
			if tt.wantKind == KindUnknown {
				if err != nil {
					t.Fatalf("got error %v, want success", err)
				}
				if tt.digest && got != want {
					t.Errorf("Digest = %v, want %v", got, want)
				}
				if tags, ok := got.([]string); ok && (len(tags) != 1 || tags[0] != "1.0") {
					t.Errorf("Tags = %q, want [1.0]", tags)
				}
			} else {
				if err == nil {
					t.Fatalf("succeeded with %v, want a %v error", got, tt.wantKind)
				}
				e := asError(t, err)
				if e.Kind != tt.wantKind || e.Status != tt.wantStatus {
					t.Errorf("kind %v status %d, want %v %d: %v", e.Kind, e.Status, tt.wantKind, tt.wantStatus, err)
				}
				if tt.wantAttempts != 0 && e.Attempts != tt.wantAttempts {
					t.Errorf("attempts %d, want %d", e.Attempts, tt.wantAttempts)
				}
				if text := strings.ReplaceAll(tt.wantText, "HOST", host); !strings.Contains(err.Error(), text) {
					t.Errorf("error text\n%q\ndoes not contain\n%q", err, text)
				}
			}
			if hits := f.hit("rule"); tt.wantHits != 0 && hits != tt.wantHits {
				t.Errorf("rule matched %d requests, want %d", hits, tt.wantHits)
			}
			if hits := f.hit("rule"); hits < tt.wantMinHits {
				t.Errorf("rule matched %d requests, want at least %d", hits, tt.wantMinHits)
			}
		})
	}
}

// withHeaderAfter passes the request on and overwrites a response header
// the registry sets.
func withHeaderAfter(key, value string) func(http.ResponseWriter, *http.Request, http.Handler) {
	return func(w http.ResponseWriter, r *http.Request, next http.Handler) {
		next.ServeHTTP(&headerSetter{ResponseWriter: w, key: key, value: value}, r)
	}
}

type headerSetter struct {
	http.ResponseWriter
	key, value string
}

func (h *headerSetter) WriteHeader(code int) {
	h.Header().Set(h.key, h.value)
	h.ResponseWriter.WriteHeader(code)
}

func TestRetryAfter(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		retryAfter func() string
		maxBackoff time.Duration
		min, max   time.Duration
	}{
		{name: "seconds", retryAfter: func() string { return "1" }, min: 900 * time.Millisecond, max: 10 * time.Second},
		{name: "http date", retryAfter: func() string { return time.Now().Add(2 * time.Second).UTC().Format(http.TimeFormat) }, min: 900 * time.Millisecond, max: 10 * time.Second},
		{name: "capped by MaxBackoff", retryAfter: func() string { return "3600" }, maxBackoff: 200 * time.Millisecond, min: 150 * time.Millisecond, max: 5 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFaults(&rule{name: "rule", path: "/tags/list", times: 1, action: func(w http.ResponseWriter, r *http.Request, next http.Handler) {
				status(429, map[string]string{"Retry-After": tt.retryAfter()}, "")(w, r, next)
			}})
			host := newRegistry(t, f.wrap)
			push(t, host, "acme/app", "1.0")
			// The backoff alone would retry at once: only Retry-After can
			// explain a wait.
			c := newClient(t, Options{Backoff: time.Millisecond, MaxBackoff: orDefault(tt.maxBackoff, time.Minute)}, host)
			start := time.Now()
			if _, err := c.Tags(context.Background(), host+"/acme/app"); err != nil {
				t.Fatal(err)
			}
			elapsed := time.Since(start)
			if elapsed < tt.min || elapsed > tt.max {
				t.Errorf("Tags took %v, want between %v and %v", elapsed, tt.min, tt.max)
			}
			if got := f.hit("rule"); got != 2 {
				t.Errorf("%d tag list requests, want 2", got)
			}
		})
	}
}

// TestRetryAfterHoldsBackTheHost checks that a Retry-After sent for one
// repository also delays requests for another repository on that host.
func TestRetryAfterHoldsBackTheHost(t *testing.T) {
	t.Parallel()
	var (
		mu                sync.Mutex
		limited, secondAt time.Time
	)
	sentLimit := make(chan struct{})
	f := newFaults(
		&rule{name: "first", path: "/acme/first/tags/list", times: 1, action: func(w http.ResponseWriter, r *http.Request, next http.Handler) {
			mu.Lock()
			limited = time.Now()
			mu.Unlock()
			status(429, map[string]string{"Retry-After": "1"}, "")(w, r, next)
			close(sentLimit)
		}},
		&rule{name: "second", path: "/acme/second/tags/list", action: func(w http.ResponseWriter, r *http.Request, next http.Handler) {
			mu.Lock()
			secondAt = time.Now()
			mu.Unlock()
			next.ServeHTTP(w, r)
		}},
	)
	host := newRegistry(t, f.wrap)
	push(t, host, "acme/first", "1")
	push(t, host, "acme/second", "1")
	c := newClient(t, Options{MaxBackoff: time.Minute}, host)
	var wg sync.WaitGroup
	wg.Go(func() {
		if _, err := c.Tags(context.Background(), host+"/acme/first"); err != nil {
			t.Errorf("Tags first: %v", err)
		}
	})
	<-sentLimit
	time.Sleep(50 * time.Millisecond) // let the client read the 429
	if _, err := c.Tags(context.Background(), host+"/acme/second"); err != nil {
		t.Fatalf("Tags second: %v", err)
	}
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	if d := secondAt.Sub(limited); d < 900*time.Millisecond {
		t.Errorf("the second repository was asked %v after the 429, want at least 1s (Retry-After: 1)", d)
	}
}

func TestLinkFaults(t *testing.T) {
	other := newCounter()
	otherSrv := httptest.NewServer(other.wrap(http.NotFoundHandler()))
	t.Cleanup(otherSrv.Close)

	// A Link that cannot be followed fails the listing: the tags of the
	// first page alone would be a partial list. wantErr is in the error.
	tests := []struct {
		name     string
		link     string
		wantWarn string
		wantErr  string
		wantHits int
	}{
		{name: "link to itself", link: `</v2/acme/app/tags/list?n=1000>; rel="next"`, wantWarn: "repeats a page already fetched", wantHits: 1},
		{name: "malformed", link: `/v2/acme/app/tags/list?n=1000; rel="next"`, wantErr: "does not parse as RFC 8288 links", wantHits: 1},
		{name: "unterminated", link: `</v2/acme/app/tags/list?n=1000; rel="next"`, wantErr: "does not parse as RFC 8288 links", wantHits: 1},
		{name: "another host", link: fmt.Sprintf(`<%s/v2/acme/app/tags/list?last=1.0>; rel="next"`, strings.Replace(otherSrv.URL, "127.0.0.1", "localhost", 1)), wantErr: "announced on another host, localhost:", wantHits: 1},
		// Followed on the registry's own scheme (plain HTTP here): the
		// test registry ignores last, so page 2 repeats the tags.
		{name: "https on the same host", link: `<https://HOST/v2/acme/app/tags/list?last=1.0>; rel="next"`, wantWarn: "registry repeated tags already listed", wantHits: 2},
		{name: "no next relation", link: `</v2/acme/app/tags/list?n=1>; rel="prev"`, wantHits: 1},
		{name: "next to tags already listed", link: `</v2/acme/app/tags/list?last=zzz>; rel="next"`, wantWarn: "repeated tags already listed", wantHits: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var host string
			f := newFaults(&rule{name: "rule", path: "/tags/list", action: func(w http.ResponseWriter, r *http.Request, next http.Handler) {
				withHeader("Link", strings.ReplaceAll(tt.link, "HOST", host))(w, r, next)
			}})
			host = newRegistry(t, f.wrap)
			push(t, host, "acme/app", "1.0", "2.0")
			var logs logBuffer
			c := newClient(t, Options{Logger: newLogger(&logs)}, host)
			done := make(chan struct{})
			var (
				got []string
				err error
			)
			go func() {
				defer close(done)
				got, err = c.Tags(context.Background(), host+"/acme/app")
			}()
			select {
			case <-done:
			case <-time.After(20 * time.Second):
				t.Fatal("Tags did not return: a pagination loop?")
			}
			if tt.wantErr != "" {
				var re *Error
				if !errors.As(err, &re) || re.Kind != KindBadResponse || !strings.Contains(err.Error(), tt.wantErr) || !strings.Contains(err.Error(), "a partial list could move markers back") {
					t.Errorf("Tags = %q, %v; want a bad response error with %q and the hint", got, err, tt.wantErr)
				}
				if got != nil {
					t.Errorf("Tags returned the partial list %q with the error", got)
				}
			} else if err != nil {
				t.Fatalf("Tags: %v", err)
			} else if len(got) != 2 || got[0] != "1.0" || got[1] != "2.0" {
				t.Errorf("Tags = %q, want [1.0 2.0]", got)
			}
			if tt.wantWarn != "" && (!strings.Contains(logs.String(), "level=WARN") || !strings.Contains(logs.String(), tt.wantWarn)) {
				t.Errorf("log does not warn %q:\n%s", tt.wantWarn, logs.String())
			}
			if tt.wantWarn == "" && strings.Contains(logs.String(), "level=WARN") {
				t.Errorf("unexpected warning:\n%s", logs.String())
			}
			if got := f.hit("rule"); got != tt.wantHits {
				t.Errorf("%d tag list requests, want %d", got, tt.wantHits)
			}
			if n := other.total(""); n != 0 {
				t.Errorf("the other host got %d requests, want none", n)
			}
		})
	}
}

// TestTokenAnswerWithoutToken: a token service that answers 200 without
// "token" or "access_token" (a refresh token alone, or a token under a
// name of its own) fails the repository without its body, which
// go-containerregistry's error quotes whole.
func TestTokenAnswerWithoutToken(t *testing.T) {
	const secret = "refresh-SECRET-d0n0tleak"
	ts := &tokenServer{}
	f := newFaults(&rule{name: "rule", path: "/token", action: status(200, map[string]string{"Content-Type": "application/json"},
		`{"refresh_token": "`+secret+`", "expires_in": 300, "jwt": "`+secret+`"}`)})
	host := newRegistry(t, chain(f.wrap, ts.wrap))
	push(t, host, "acme/app", "1.0")
	var logs logBuffer
	c := newClient(t, Options{Logger: newLogger(&logs)}, host)
	_, err := c.Tags(context.Background(), host+"/acme/app")
	var re *Error
	if !errors.As(err, &re) || re.Kind != KindBadResponse || !strings.Contains(err.Error(), "answered without a token") || !strings.Contains(err.Error(), `it had "expires_in", "jwt", "refresh_token"`) {
		t.Fatalf("Tags: %v; want a bad response naming the fields", err)
	}
	if strings.Contains(err.Error(), secret) || strings.Contains(logs.String(), secret) {
		t.Errorf("the token answer's body leaked:\n%v\n%s", err, logs.String())
	}
	if got := f.hit("rule"); got != 1 {
		t.Errorf("%d token requests, want 1 (a wrong answer is not retried)", got)
	}
}

// TestTokenServiceUnreachable: a registry whose token service (on another
// host) cannot be reached fails naming that service, where the error blamed
// the registry, which answered.
func TestTokenServiceUnreachable(t *testing.T) {
	dead, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	deadPort := dead.Addr().(*net.TCPAddr).Port
	dead.Close() // nothing listens there now
	realm := fmt.Sprintf("https://localhost:%d/token", deadPort)
	f := newFaults(&rule{name: "rule", path: "/v2/", action: status(401, map[string]string{"WWW-Authenticate": `Bearer realm="` + realm + `",service="test"`}, "")})
	host := newRegistry(t, f.wrap)
	c := newClient(t, Options{MaxBackoff: time.Millisecond}, host)
	_, err = c.Tags(context.Background(), host+"/acme/app")
	want := fmt.Sprintf("cannot reach localhost:%d (the token service of %s)", deadPort, host)
	if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), fmt.Sprintf("check that localhost:%d (the token service", deadPort)) {
		t.Errorf("Tags: %v; want it to name the token service: %q", err, want)
	}
}

// TestTokenRealmRefused: a token realm at a private IP address on another
// port than the registry's is refused by go-containerregistry; the hint
// says what to change, where it said to check that the host is a registry.
func TestTokenRealmRefused(t *testing.T) {
	f := newFaults(&rule{name: "rule", path: "/v2/", action: status(401, map[string]string{"WWW-Authenticate": `Bearer realm="https://10.1.2.3:5001/token",service="test"`}, "")})
	host := newRegistry(t, f.wrap)
	c := newClient(t, Options{MaxBackoff: time.Millisecond}, host)
	_, err := c.Tags(context.Background(), host+"/acme/app")
	if err == nil || !strings.Contains(err.Error(), "give the token service a DNS name") || strings.Contains(err.Error(), "check that it is an OCI registry") {
		t.Errorf("Tags: %v; want the realm hint", err)
	}
}

// TestDiagnosticDetailAsJSON: a registry's error detail is shown as
// JSON, where go-containerregistry prints a Go map.
func TestDiagnosticDetailAsJSON(t *testing.T) {
	f := newFaults(&rule{name: "rule", path: "/tags/list", action: status(404, map[string]string{"Content-Type": "application/json"},
		`{"errors":[{"code":"NAME_UNKNOWN","message":"repository name not known to registry","detail":{"name":"acme/missing"}}]}`)})
	host := newRegistry(t, f.wrap)
	c := newClient(t, Options{}, host)
	_, err := c.Tags(context.Background(), host+"/acme/missing")
	if err == nil || !strings.Contains(err.Error(), `NAME_UNKNOWN: repository name not known to registry (detail: {"name":"acme/missing"})`) || strings.Contains(err.Error(), "map[") {
		t.Errorf("Tags: %v; want the detail as JSON", err)
	}
}

// TestTokenFetchRetried checks that token requests go through the retries
// too: the token endpoint fails once with 503.
func TestTokenFetchRetried(t *testing.T) {
	ts := &tokenServer{}
	f := newFaults(&rule{name: "rule", path: "/token", times: 1, action: status(503, nil, "")})
	host := newRegistry(t, chain(f.wrap, ts.wrap))
	push(t, host, "acme/app", "1.0")
	c := newClient(t, Options{}, host)
	if _, err := c.Tags(context.Background(), host+"/acme/app"); err != nil {
		t.Fatalf("Tags: %v", err)
	}
	if got := f.hit("rule"); got != 2 {
		t.Errorf("%d token requests, want 2", got)
	}
}

// TestRateLimitedHostLeftToNextCycle checks that a registry that keeps
// asking to be left alone costs a cycle about one timeout, however many
// of its repositories the cycle lists, and that the other registry's
// repositories are listed all the same: once one request of the host has
// been refused a wait, or used its retries, on 429s, the host's other
// repositories fail at once, unsent. The next cycle, within the host's
// pause, sends nothing either.
func TestRateLimitedHostLeftToNextCycle(t *testing.T) {
	t.Parallel()
	const concurrency = 2
	tests := []struct {
		name     string
		action   func(http.ResponseWriter, *http.Request, http.Handler)
		opts     Options
		maxHits  int // requests the limited host may get
		wantText string
		shortNap bool // the host's pause is over before the next cycle
	}{
		{
			name:     "Retry-After longer than the timeout",
			action:   status(429, map[string]string{"Retry-After": "60"}, ""),
			opts:     Options{Timeout: 2 * time.Second, MaxBackoff: time.Minute},
			maxHits:  concurrency, // no retry at all
			wantText: "asked to wait 1m0s (Retry-After, at most the host's backoff cap), longer than a cycle waits for one registry (2s, its registries[].timeout), so it was not waited for",
		},
		{
			// The first wait fits the budget; the second does not, with
			// the first: the message counts both.
			name:     "Retry-After again, after a wait",
			action:   status(429, map[string]string{"Retry-After": "2"}, ""),
			opts:     Options{Timeout: 3 * time.Second, MaxBackoff: time.Minute},
			maxHits:  concurrency * 2,
			wantText: "asked to wait 2s more (Retry-After, at most the host's backoff cap) after 2s of refusals, longer together than a cycle waits for one registry (3s",
			shortNap: true,
		},
		{
			name:     "retries used up",
			action:   status(429, nil, ""),
			opts:     Options{MaxRetries: 2},
			maxHits:  concurrency * 3, // one repository's tries per worker
			wantText: "after 3 attempts",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newFaults(&rule{name: "limited", path: "/tags/list", action: tt.action})
			limited := newRegistry(t, f.wrap)
			fine := newRegistry(t, nil)
			var repos []string
			for i := range 6 {
				repo := fmt.Sprintf("acme/limited%d", i)
				push(t, limited, repo, "1.0")
				repos = append(repos, limited+"/"+repo)
			}
			for i := range 3 {
				repo := fmt.Sprintf("acme/fine%d", i)
				push(t, fine, repo, "2.0")
				repos = append(repos, fine+"/"+repo)
			}
			c := newClient(t, tt.opts, limited, fine)
			start := time.Now()
			results := c.Cycle().Scan(context.Background(), repos, concurrency)
			if d := time.Since(start); d > 20*time.Second {
				t.Errorf("the scan took %v, want well under the 60s the host asked for", d)
			}
			var texts []string
			for _, r := range results {
				if strings.HasPrefix(r.Repository, fine) {
					if r.Err != nil || len(r.Tags) != 1 {
						t.Errorf("%s: tags %v, error %v; want its one tag", r.Repository, r.Tags, r.Err)
					}
					continue
				}
				if KindOf(r.Err) != KindRateLimited {
					t.Errorf("%s: error %v, want kind %v", r.Repository, r.Err, KindRateLimited)
					continue
				}
				texts = append(texts, r.Err.Error())
			}
			hits := f.hit("limited")
			if hits > tt.maxHits {
				t.Errorf("the limited host got %d tag list requests, want at most %d (6 repositories asked without the breaker: %d)", hits, tt.maxHits, 6*(tt.maxHits/concurrency))
			}
			all := strings.Join(texts, "\n")
			if !strings.Contains(all, tt.wantText) {
				t.Errorf("no error says %q:\n%s", tt.wantText, all)
			}
			if !strings.Contains(all, "not tried: "+limited+" asked to be left alone") {
				t.Errorf("no repository says it was not tried:\n%s", all)
			}
			if tt.opts.Timeout == 0 || tt.shortNap {
				return
			}
			// The next cycle, within the 60 s pause: nothing is sent.
			next := c.Cycle().Scan(context.Background(), repos[:1], 1)
			if KindOf(next[0].Err) != KindRateLimited || !strings.Contains(next[0].Err.Error(), "so it was not waited for") {
				t.Errorf("next cycle: error %v, want the host's pause not waited", next[0].Err)
			}
			if got := f.hit("limited"); got != hits {
				t.Errorf("the next cycle sent %d requests to the limited host, want none", got-hits)
			}
		})
	}
}

// TestFailingHostHeldDown checks that a host answering nothing but
// server errors is retried for about one timeout in a cycle, not for each
// repository's whole backoff, while a host with one broken repository
// among working ones keeps serving the others.
func TestFailingHostHeldDown(t *testing.T) {
	t.Parallel()
	t.Run("every repository fails", func(t *testing.T) {
		t.Parallel()
		f := newFaults(&rule{name: "failing", path: "/tags/list", action: status(500, nil, "")})
		host := newRegistry(t, f.wrap)
		var repos []string
		for i := range 6 {
			repo := fmt.Sprintf("acme/app%d", i)
			push(t, host, repo, "1.0")
			repos = append(repos, host+"/"+repo)
		}
		// Unbounded, each repository would retry 100 times, 0-40 ms
		// apart: about 6 s for the six, two at a time.
		c := newClient(t, Options{Timeout: 300 * time.Millisecond, MaxRetries: 100, Backoff: 40 * time.Millisecond, MaxBackoff: 40 * time.Millisecond}, host)
		start := time.Now()
		results := c.Cycle().Scan(context.Background(), repos, 2)
		if d := time.Since(start); d > 3*time.Second {
			t.Errorf("the scan took %v, want about the 300ms timeout", d)
		}
		var notTried int
		for _, r := range results {
			if KindOf(r.Err) != KindServer {
				t.Errorf("%s: error %v, want kind %v", r.Repository, r.Err, KindServer)
			}
			if r.Err != nil && strings.Contains(r.Err.Error(), "not tried: "+host+" has answered nothing but server errors in this cycle, and the 300ms a cycle gives it (registries[].timeout) is spent; its last answer: ") {
				notTried++
			}
			// One tried before the host was held down says so.
			if e := (*Error)(nil); errors.As(r.Err, &e) && e.Attempts > 0 && strings.Contains(r.Err.Error(), "not tried") {
				t.Errorf("%s: tried %d times, said not tried: %v", r.Repository, e.Attempts, r.Err)
			}
		}
		if notTried == 0 {
			t.Errorf("no repository was left untried: %v", results)
		}
		if hits := f.hit("failing"); hits > 100 {
			t.Errorf("%d requests to the failing host, want it held down well before 300", hits)
		}
	})
	t.Run("one broken repository", func(t *testing.T) {
		t.Parallel()
		f := newFaults(&rule{name: "broken", path: "/acme/broken/tags/list", action: status(500, nil, "")})
		host := newRegistry(t, f.wrap)
		repos := []string{host + "/acme/broken"}
		push(t, host, "acme/broken", "1.0")
		for i := range 3 {
			repo := fmt.Sprintf("acme/app%d", i)
			push(t, host, repo, "1.0")
			repos = append(repos, host+"/"+repo)
		}
		c := newClient(t, Options{MaxRetries: 2}, host)
		results := c.Cycle().Scan(context.Background(), repos, 1)
		if KindOf(results[0].Err) != KindServer || f.hit("broken") != 3 {
			t.Errorf("broken: error %v after %d requests, want kind %v after 3", results[0].Err, f.hit("broken"), KindServer)
		}
		for _, r := range results[1:] {
			if r.Err != nil {
				t.Errorf("%s: %v, want its tags", r.Repository, r.Err)
			}
		}
	})
}

// TestRateLimitNowAndThen: a host that answers 429 once in a while, with
// repositories served in between, is waited for each time: the time a
// cycle waits for a host that rate-limits counts from its first 429
// since it last served one, not from its first in the cycle.
func TestRateLimitNowAndThen(t *testing.T) {
	t.Parallel()
	f := newFaults(
		&rule{name: "a", path: "/acme/a/tags/list", times: 1, action: status(429, nil, "")},
		&rule{name: "b", path: "/acme/b/tags/list", times: 1, action: status(429, nil, "")},
	)
	host := newRegistry(t, f.wrap)
	push(t, host, "acme/a", "1.0")
	push(t, host, "acme/b", "1.0")
	c := newClient(t, Options{Timeout: 200 * time.Millisecond}, host)
	y := c.Cycle()
	if _, err := y.Tags(context.Background(), host+"/acme/a"); err != nil {
		t.Fatalf("a, after one 429: %v", err)
	}
	time.Sleep(400 * time.Millisecond) // two timeouts after a's 429
	if _, err := y.Tags(context.Background(), host+"/acme/b"); err != nil {
		t.Errorf("b, after one 429 long after a's: %v", err)
	}
	if f.hit("a") != 2 || f.hit("b") != 2 {
		t.Errorf("requests: a %d, b %d; want each retried once", f.hit("a"), f.hit("b"))
	}
}

// TestRetryLogNamesRepository: the log line of a retried request names the
// repository beside the host, so that a flaky repository can be told from
// a flaky host.
func TestRetryLogNamesRepository(t *testing.T) {
	t.Parallel()
	f := newFaults(&rule{name: "r", path: "/tags/list", times: 1, action: status(503, nil, "")})
	host := newRegistry(t, f.wrap)
	push(t, host, "acme/app", "1.0")
	var logs bytes.Buffer
	c := newClient(t, Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))}, host)
	if _, err := c.Tags(context.Background(), host+"/acme/app"); err != nil {
		t.Fatal(err)
	}
	if line := logs.String(); !strings.Contains(line, "retrying registry request") || !strings.Contains(line, "repository=acme/app") {
		t.Errorf("the retry's log line does not name the repository:\n%s", line)
	}
}
