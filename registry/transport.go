package registry

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"

	"github.com/imagebump/imagebump/internal/redact"
	"github.com/imagebump/imagebump/internal/retry"
)

// host is the shared state of one registry host: its settings, the
// transport every request to it goes through, and its caches.
type host struct {
	name     string // canonical host name, as in Client.hosts
	cfg      Host
	auth     authn.Authenticator // nil: resolved from the keychain per repository
	provider string              // the cloud auth comes from (aws, gcp, azure), or ""
	rt       *hostTransport
	sessions sync.Map // repository name -> *slot[*session]

	// The host's settings, with the Client's defaults filled in.
	timeout     time.Duration
	maxRetries  int
	maxPages    int
	maxTags     int
	repoTimeout time.Duration

	challengeMu sync.Mutex
	challenges  map[string]*slot[*transport.Challenge] // by registry string
}

// slot holds a lazily built value. Its lock is a channel so that a caller
// waiting for another's build gives up when its own context ends.
type slot[T any] struct {
	lock  chan struct{}
	value T
	ok    bool
}

func newSlot[T any]() *slot[T] { return &slot[T]{lock: make(chan struct{}, 1)} }

// get returns the slot's value, building it with build if no earlier build
// succeeded. Failed builds are not cached.
func (s *slot[T]) get(ctx context.Context, build func() (T, error)) (value T, built bool, err error) {
	select {
	case s.lock <- struct{}{}:
	case <-ctx.Done():
		return value, false, ctx.Err()
	}
	defer func() { <-s.lock }()
	if s.ok {
		return s.value, false, nil
	}
	v, err := build()
	if err != nil {
		return value, false, err
	}
	s.value, s.ok = v, true
	return v, true, nil
}

func (c *Client) buildHost(key string, hc Host, base http.RoundTripper) *host {
	concurrency := orDefault(hc.Concurrency, DefaultConcurrency)
	h := &host{
		name:        key,
		cfg:         hc,
		auth:        configuredAuth(hc),
		challenges:  map[string]*slot[*transport.Challenge]{},
		timeout:     orDefault(hc.Timeout, c.timeout),
		maxRetries:  c.maxRetries,
		maxPages:    orDefault(hc.MaxPages, c.maxPages),
		maxTags:     orDefault(hc.MaxTags, c.maxTags),
		repoTimeout: orDefault(hc.RepositoryTimeout, c.repoTimeout),
	}
	switch {
	case hc.MaxRetries > 0:
		h.maxRetries = hc.MaxRetries
	case hc.MaxRetries < 0:
		h.maxRetries = 0
	}
	t := &hostTransport{
		host:         key,
		inner:        base,
		insecure:     hc.Insecure,
		insecureHost: c.insecureHost,
		timeout:      h.timeout,
		maxPause:     c.maxBackoff,
		userAgent:    c.userAgent,
		onRequest:    c.onRequest,
		onWait:       c.onWait,
		sem:          make(chan struct{}, concurrency),
		slowSem:      make(chan struct{}, concurrency),
		secrets:      c.secrets,
		log:          c.log,
	}
	if hc.RequestsPerSecond > 0 {
		t.limiter = rate.NewLimiter(rate.Limit(hc.RequestsPerSecond), max(hc.Burst, 1))
	}
	h.rt = t
	return h
}

// hostTransport carries every request to one host, whoever sends it (this
// package, or ggcr's ping and token exchange). It refuses plain HTTP unless
// the host is insecure, and plain HTTP carrying credentials to any other
// host unless that host is insecure too; it waits out a Retry-After the
// host sent, takes a concurrency slot, waits for the rate limiter, and
// bounds the request and the reading of its body with the per-request
// timeout. It tells the request's Cycle whether the host answered, and it
// cleans error bodies of every secret before anyone reads them.
type hostTransport struct {
	host         string
	inner        http.RoundTripper
	insecure     bool
	insecureHost func(hostport string) bool
	timeout      time.Duration
	maxPause     time.Duration
	userAgent    string
	onRequest    func(host string, status int, err error)
	onWait       func(host string, d time.Duration)
	sem          chan struct{}
	slowSem      chan struct{} // the slow requests' own share; see hostHold
	limiter      *rate.Limiter
	secrets      *redact.Secrets
	log          *slog.Logger

	mu         sync.Mutex
	pauseUntil time.Time
}

var _ http.RoundTripper = (*hostTransport)(nil)

// slowRequestAfter is how long a request (with the reading of its body)
// runs before it counts as slow. A variable for tests.
var slowRequestAfter = 5 * time.Second

// hostHold is one request's hold on its host's concurrency. A request
// still running after slowRequestAfter moves to the slow requests' share
// (as large as the host's concurrency) when it has room, and gives its
// place back: repositories that hang on a host (each request held until
// its timeout, and again for each retry) then leave the host's places to
// the requests that are answered, those of other targets in serve too. A
// host slow for everyone gets at most twice its concurrency in flight.
type hostHold struct {
	t     *hostTransport
	timer *time.Timer

	mu       sync.Mutex
	slow     bool // holds a place in slowSem, not in sem
	released bool
}

// watch starts the clock of the request.
func (h *hostHold) watch() {
	h.timer = time.AfterFunc(slowRequestAfter, h.moveToSlow)
}

func (h *hostHold) moveToSlow() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.released || h.slow {
		return
	}
	select {
	case h.t.slowSem <- struct{}{}:
		h.slow = true
		<-h.t.sem
	default:
	}
}

// release gives the request's place back, once.
func (h *hostHold) release() {
	if h.timer != nil {
		h.timer.Stop()
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.released {
		return
	}
	h.released = true
	if h.slow {
		<-h.t.slowSem
	} else {
		<-h.t.sem
	}
}

// logURL is req's URL as the debug log shows it: without URL credentials,
// and without any secret the client holds or the request carries, which a
// registry may have put in a pagination link or a redirect.
func (t *hostTransport) logURL(req *http.Request) string {
	return t.secrets.Text(redact.URL(req.URL), redact.AuthorizationSecrets(req.Header.Get("Authorization"))...)
}

// RoundTrip implements http.RoundTripper.
func (t *hostTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	// The inner transport closes the request body (ggcr's OAuth token
	// exchange POSTs a form); on the ways out before it, close it here.
	refuse := func(err error) (*http.Response, error) {
		if req.Body != nil {
			req.Body.Close()
		}
		return nil, err
	}
	if req.URL.Scheme == "http" && !t.insecure {
		return refuse(&plainHTTPError{host: req.URL.Host})
	}
	if req.URL.Scheme == "http" && carriesCredentials(req) && !sameHostname(req.URL.Host, t.host) && !t.insecureHost(req.URL.Host) {
		// A token realm or a redirect on another host: the registry being
		// insecure says nothing about that host.
		return refuse(&realmError{realm: redact.URL(req.URL), host: t.host})
	}
	ctx := req.Context()
	// Another 429 may extend the pause while this request waits.
	for d := t.pauseLeft(); d > 0; d = t.pauseLeft() {
		if err := breakerFrom(ctx).pause(d); err != nil {
			return refuse(err)
		}
		if t.onWait != nil {
			t.onWait(t.host, d)
		}
		if err := retry.Sleep(ctx, d); err != nil {
			return refuse(err)
		}
	}
	select {
	case t.sem <- struct{}{}:
	case <-ctx.Done():
		return refuse(ctx.Err())
	}
	hold := &hostHold{t: t}
	// The rate limiter is consulted after the slot is taken so that the
	// request leaves the moment its token is granted; taking tokens first
	// would let requests queued on the slots go out in bursts.
	if t.limiter != nil {
		waitStart := time.Now()
		err := t.limiter.Wait(ctx)
		if d := time.Since(waitStart); t.onWait != nil && d > time.Millisecond {
			t.onWait(t.host, d)
		}
		if err != nil {
			hold.release()
			if ctx.Err() != nil {
				return refuse(ctx.Err())
			}
			// The wait would outlast ctx's deadline.
			return refuse(context.DeadlineExceeded)
		}
	}
	rctx, cancel := context.WithTimeout(ctx, t.timeout)
	out := req.Clone(rctx)
	if t.userAgent != "" {
		out.Header.Set("User-Agent", t.userAgent)
	}
	start := time.Now()
	hold.watch()
	resp, err := t.inner.RoundTrip(out)
	if t.onRequest != nil {
		switch {
		case err != nil && t.insecure && req.URL.Scheme == "https" && req.URL.Path == "/v2/":
			// The HTTPS try of an insecure host's ping, which the plain
			// HTTP one follows: not a failure worth counting (an alert on
			// code="error" would fire at every start and reload).
		case err != nil:
			t.onRequest(req.URL.Host, 0, err)
		default:
			t.onRequest(req.URL.Host, resp.StatusCode, nil)
		}
	}
	if err != nil {
		timedOut := rctx.Err() != nil && ctx.Err() == nil
		cancel()
		hold.release()
		if t.log.Enabled(ctx, slog.LevelDebug) {
			t.log.Debug("registry request failed", "method", req.Method, "url", t.logURL(req), "duration", time.Since(start),
				"error", t.secrets.Text(redact.Text(err.Error()), redact.AuthorizationSecrets(req.Header.Get("Authorization"))...))
		}
		if timedOut {
			err = &timeoutError{err: err, after: t.timeout}
		}
		if ctx.Err() == nil {
			if k := classify(ctx, err).kind; k == KindNetwork || k == KindTimeout {
				return nil, &noAnswerError{err: err}
			}
		}
		return nil, err
	}
	breakerFrom(ctx).answered()
	if t.log.Enabled(ctx, slog.LevelDebug) {
		// The redaction of every request's URL, for a level mostly off.
		t.log.Debug("registry request", "method", req.Method, "url", t.logURL(req), "status", resp.StatusCode, "duration", time.Since(start))
	}
	if resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusServiceUnavailable {
		if d, ok := retry.ParseRetryAfter(resp.Header.Get("Retry-After"), time.Now()); ok {
			t.pause(min(d, t.maxPause))
		}
	}
	// A body its reader never closes gives its place back at the
	// request's deadline, not never.
	context.AfterFunc(rctx, hold.release)
	resp.Body = &releasingBody{
		rc:      resp.Body,
		parent:  ctx,
		ctx:     rctx,
		timeout: t.timeout,
		done: func() {
			cancel()
			hold.release()
		},
	}
	if resp.StatusCode >= 400 && req.Method != http.MethodHead {
		t.cleanErrorBody(resp, out.Header.Get("Authorization"))
	}
	return resp, nil
}

// maxErrorBody bounds how much of an error response is read: its text only
// ever reaches an error message. ggcr reads no more either.
const maxErrorBody = 64 << 10

// cleanErrorBody replaces an error response's body with its first
// maxErrorBody bytes, less every secret the Client holds and those of the
// Authorization header the request carried: some servers and proxies echo
// the request, headers included. The rest of the body is never read: the
// connection is closed instead.
func (t *hostTransport) cleanErrorBody(resp *http.Response, authorization string) {
	b, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	resp.Body.Close()
	clean := t.secrets.Strip(string(b), redact.AuthorizationSecrets(authorization)...)
	resp.Body = io.NopCloser(strings.NewReader(clean))
	resp.ContentLength = int64(len(clean))
	resp.Header.Del("Content-Length")
}

// carriesCredentials reports whether req holds credentials: an
// Authorization header, or a body (the OAuth2 token request POSTs the
// password as a form).
func carriesCredentials(req *http.Request) bool {
	return req.Header.Get("Authorization") != "" || (req.Body != nil && req.Body != http.NoBody)
}

// sameHostname reports whether two host[:port] strings name the same host,
// whatever their ports: a registry's token service on another port of the
// same machine is reached over the same network path as the registry.
func sameHostname(a, b string) bool {
	return strings.EqualFold(hostname(a), hostname(b))
}

func hostname(hostport string) string {
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		return h
	}
	return strings.Trim(hostport, "[]")
}

// pause holds back every request to the host for d, as a Retry-After asks.
func (t *hostTransport) pause(d time.Duration) {
	until := time.Now().Add(d)
	t.mu.Lock()
	defer t.mu.Unlock()
	if until.After(t.pauseUntil) {
		t.pauseUntil = until
	}
}

// pauseLeft returns how long requests to the host are still held back.
func (t *hostTransport) pauseLeft() time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	return time.Until(t.pauseUntil)
}

// releasingBody gives back the request's concurrency slot and cancels its
// timeout when closed, and reports reads cut off by the timeout as such.
type releasingBody struct {
	rc      io.ReadCloser
	timeout time.Duration
	parent  context.Context
	ctx     context.Context
	once    sync.Once
	done    func()
}

func (b *releasingBody) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	if err != nil && err != io.EOF && b.ctx.Err() != nil && b.parent.Err() == nil {
		err = &timeoutError{err: err, after: b.timeout}
	}
	return n, err
}

func (b *releasingBody) Close() error {
	err := b.rc.Close()
	b.once.Do(b.done)
	return err
}
