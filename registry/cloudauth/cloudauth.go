package cloudauth

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"

	"github.com/imagebump/imagebump/internal/cloudhost"
	"github.com/imagebump/imagebump/internal/printable"
	"github.com/imagebump/imagebump/internal/redact"
)

// Defaults for the zero values of Options.
const (
	// DefaultRefreshBefore is how long before a token expires it is
	// renewed; a token that lives less than four times as long is renewed
	// when a quarter of its life is left.
	DefaultRefreshBefore = 5 * time.Minute
	// DefaultRetryAfter is how long a failed fetch is remembered (and its
	// error returned again) before the cloud is asked again.
	DefaultRetryAfter = 30 * time.Second
	// DefaultTimeout bounds one fetch of credentials, every request to
	// the cloud it takes included.
	DefaultTimeout = 30 * time.Second
)

// Options configures an Authenticator.
type Options struct {
	// Host is the registry host, with an optional port.
	Host string

	// Provider is cloudhost.AWS, GCP or Azure, or cloudhost.Auto for the
	// one Host's name gives. AWS needs an ECR host name, which tells the
	// account and region.
	Provider string

	// Transport carries the requests to the cloud's APIs (STS, ECR,
	// Google's token endpoints, Entra ID). Zero: a clone of
	// http.DefaultTransport, which honours HTTPS_PROXY and NO_PROXY.
	Transport http.RoundTripper

	// RegistryTransport carries requests to the registry itself (ACR's
	// /oauth2/exchange), and Insecure says it talks plain HTTP. Zero:
	// Transport.
	RegistryTransport http.RoundTripper
	Insecure          bool

	// Secrets receives every token fetched (and the Entra ID tokens
	// exchanged for them), so that no server can echo one into an error.
	// Every error returned is cleaned of them. Zero: a set of its own.
	Secrets *redact.Secrets

	// Logger receives a warning when a refresh fails while the cached
	// token is still good, and debug records of fetches. Zero: nothing.
	Logger *slog.Logger

	// RefreshBefore, RetryAfter and Timeout: see DefaultRefreshBefore,
	// DefaultRetryAfter and DefaultTimeout. A fetch that outlasts Timeout
	// (a metadata or token endpoint that never answers) fails as any
	// other, and is remembered for RetryAfter, so that the host's other
	// repositories fail at once instead of each waiting for it.
	RefreshBefore time.Duration
	RetryAfter    time.Duration
	Timeout       time.Duration

	// Now is the clock. Zero: time.Now.
	Now func() time.Time
}

// Authenticator gives a registry the credentials its cloud issues, fetched
// when first asked for and cached until shortly before they expire. It
// implements authn.Authenticator and authn.ContextAuthenticator and is
// safe for concurrent use.
type Authenticator struct {
	host          string
	provider      string
	src           source
	log           *slog.Logger
	secrets       *redact.Secrets
	now           func() time.Time
	refreshBefore time.Duration
	retryAfter    time.Duration
	timeout       time.Duration

	mu        sync.Mutex
	fetching  chan struct{} // non-nil while one caller fetches; closed when done
	cur       *token        // nil: none yet
	refreshAt time.Time     // ask again from then on
	nextTry   time.Time     // after a failure, not before then
	lastErr   error
}

var (
	_ authn.Authenticator        = (*Authenticator)(nil)
	_ authn.ContextAuthenticator = (*Authenticator)(nil)
)

// token is what a source fetched: the registry credentials, when they
// expire (zero: unknown) and the secret values to hide.
type token struct {
	cfg     authn.AuthConfig
	expiry  time.Time
	secrets []string
}

// source fetches a new token from one cloud. Calls are serialised.
type source interface {
	fetch(ctx context.Context) (*token, error)
}

// cachingSource is a source that keeps and renews its token itself
// (golang.org/x/oauth2's token sources do), so that asking it at every
// use costs no request: the Authenticator then keeps the last token only
// to fall back on while a renewal fails.
type cachingSource interface {
	source
	caches() bool
}

// New checks opts and returns the Authenticator for one registry host.
// It sends nothing: credentials are looked up at the first Authorization.
func New(opts Options) (*Authenticator, error) {
	info := cloudhost.Parse(opts.Host)
	provider := opts.Provider
	if provider == cloudhost.Auto {
		provider = info.Provider
	}
	a := &Authenticator{
		host:          opts.Host,
		provider:      provider,
		log:           opts.Logger,
		secrets:       opts.Secrets,
		now:           opts.Now,
		refreshBefore: opts.RefreshBefore,
		retryAfter:    opts.RetryAfter,
		timeout:       opts.Timeout,
	}
	if a.log == nil {
		a.log = slog.New(slog.DiscardHandler)
	}
	if a.secrets == nil {
		a.secrets = &redact.Secrets{}
	}
	if a.now == nil {
		a.now = time.Now
	}
	if a.refreshBefore <= 0 {
		a.refreshBefore = DefaultRefreshBefore
	}
	if a.retryAfter <= 0 {
		a.retryAfter = DefaultRetryAfter
	}
	if a.timeout <= 0 {
		a.timeout = DefaultTimeout
	}
	rt := opts.Transport
	if rt == nil {
		rt = http.DefaultTransport.(*http.Transport).Clone()
	}
	regRT := opts.RegistryTransport
	if regRT == nil {
		regRT = rt
	}
	if why := cloudhost.Mismatch(provider, opts.Host); why != "" {
		return nil, errors.New(why)
	}
	switch provider {
	case cloudhost.AWS:
		a.src = &awsSource{host: opts.Host, info: info, transport: rt, remember: a.remember, log: a.log}
	case cloudhost.GCP:
		a.src = &gcpSource{host: opts.Host, timeout: a.timeout, transport: &recordingTransport{next: rt, remember: a.remember}}
	case cloudhost.Azure:
		if info.Cloud == "" {
			info.Cloud = "public"
		}
		a.src = &azureSource{host: opts.Host, info: info, insecure: opts.Insecure, transport: &recordingTransport{next: rt, remember: a.remember}, registryRT: regRT, secrets: func(v string) { a.remember("entra id token", v) }}
	case cloudhost.Generic:
		return nil, fmt.Errorf("provider auto: %s is not an ECR, Artifact Registry, Container Registry or ACR host name; name the provider (aws, gcp, azure) or use generic", opts.Host)
	default:
		return nil, fmt.Errorf("unknown provider %q: want aws, gcp, azure or auto", opts.Provider)
	}
	return a, nil
}

// Provider returns the cloud the Authenticator asks: aws, gcp or azure.
func (a *Authenticator) Provider() string { return a.provider }

// Forget makes the next use fetch new credentials, as after a registry
// refused the cached ones; the cached ones stay in use if that fails while
// they are good. A failure being waited out (RetryAfter) is not cut short.
// For gcp, whose token source caches on its own, the token is renewed only
// when that source sees it expire.
func (a *Authenticator) Forget() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.refreshAt = time.Time{}
}

// Authorization implements authn.Authenticator.
func (a *Authenticator) Authorization() (*authn.AuthConfig, error) {
	return a.AuthorizationContext(context.Background())
}

// AuthorizationContext implements authn.ContextAuthenticator. It returns
// the cached credentials while they are good for longer than the refresh
// margin; past it, it fetches new ones (one caller fetches, the others
// keep using the cached ones meanwhile, or wait if there are none). When
// a fetch fails while the cached credentials are still good, it logs a
// warning, returns them, and asks again only after a pause; once they
// have expired, it returns the error. A failure with nothing cached is
// returned again, without asking, for RetryAfter.
func (a *Authenticator) AuthorizationContext(ctx context.Context) (*authn.AuthConfig, error) {
	for {
		a.mu.Lock()
		now := a.now()
		valid := a.cur != nil && (a.cur.expiry.IsZero() || now.Before(a.cur.expiry))
		switch {
		case valid && now.Before(a.refreshAt), valid && a.fetching != nil, valid && now.Before(a.nextTry):
			cfg := a.cur.cfg
			a.mu.Unlock()
			return &cfg, nil
		case now.Before(a.nextTry):
			err := a.lastErr
			a.mu.Unlock()
			return nil, err
		case a.fetching != nil:
			wait := a.fetching
			a.mu.Unlock()
			select {
			case <-wait:
				continue
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		done := make(chan struct{})
		a.fetching = done
		a.mu.Unlock()

		fctx, cancel := context.WithTimeout(ctx, a.timeout)
		t, err := a.src.fetch(fctx)
		if err != nil && ctx.Err() == nil && errors.Is(fctx.Err(), context.DeadlineExceeded) {
			err = a.timeoutError(err)
		}
		cancel()

		a.mu.Lock()
		// A failure is remembered from when the fetch ended, which may
		// be long after it started.
		cfg, err := a.settle(ctx, a.now(), valid, t, err)
		a.fetching = nil
		close(done)
		a.mu.Unlock()
		return cfg, err
	}
}

// timeoutError is the error of a fetch that outlasted the timeout: the
// cloud's credential endpoints did not answer in time.
func (a *Authenticator) timeoutError(err error) error {
	var where string
	switch a.provider {
	case cloudhost.AWS:
		where = "from AWS (STS, the ECR API, or the EC2 or EKS credential endpoints)"
	case cloudhost.GCP:
		where = "from Google (its token endpoint, or the GCE/GKE metadata server)"
	default:
		where = "from Azure (Entra ID, the managed identity endpoint, or the registry's /oauth2/exchange)"
	}
	return &Error{Provider: a.provider, Host: a.host, Step: fmt.Sprintf("no credentials %s within %v", where, a.timeout), Err: err,
		Hint: fmt.Sprintf("check that this process reaches them (a proxy, NO_PROXY, a network policy, the VPC's endpoints); until %v have passed, the host's other repositories fail at once with this error (registries[].timeout sets how long to wait)", a.retryAfter)}
}

// settle records the outcome of a fetch that ended at now (valid: the cached
// credentials were still good then) and returns what the caller gets.
func (a *Authenticator) settle(ctx context.Context, now time.Time, valid bool, t *token, err error) (*authn.AuthConfig, error) {
	if err == nil && t.cfg == (authn.AuthConfig{}) {
		err = &Error{Provider: a.provider, Host: a.host, Step: "fetching a token", Err: errors.New("the cloud gave empty credentials")}
	}
	if err != nil {
		var ce *Error
		if errors.As(err, &ce) {
			ce.secrets = a.secrets
		}
		err = a.secrets.Error(err)
		if ctx.Err() != nil {
			// The caller gave up: that says nothing of the cloud.
			return nil, err
		}
		a.lastErr = err
		if valid {
			left := a.cur.expiry.Sub(now)
			if a.cur.expiry.IsZero() {
				left = a.retryAfter
			}
			a.nextTry = now.Add(min(a.retryAfter, max(left/4, time.Second)))
			a.log.Warn("refreshing cloud registry credentials failed; the cached ones stay in use until they expire",
				"host", a.host, "provider", a.provider, "expires", a.cur.expiry, "retry", a.nextTry, "error", err)
			cfg := a.cur.cfg
			return &cfg, nil
		}
		a.nextTry = now.Add(a.retryAfter)
		if a.cur != nil {
			a.lastErr = &expiredError{err: err, expiry: a.cur.expiry}
		}
		return nil, a.lastErr
	}
	for i, v := range t.secrets {
		a.remember(fmt.Sprint("token ", i), v)
	}
	changed := a.cur == nil || a.cur.cfg != t.cfg
	a.cur, a.lastErr, a.nextTry = t, nil, time.Time{}
	a.refreshAt = a.refreshTime(now, t.expiry)
	if cs, ok := a.src.(cachingSource); ok && cs.caches() {
		a.refreshAt = now
	}
	if changed {
		a.log.Debug("fetched cloud registry credentials", "host", a.host, "provider", a.provider, "expires", t.expiry)
	}
	cfg := t.cfg
	return &cfg, nil
}

// refreshTime returns when a token fetched at now and expiring at expiry
// should be renewed.
func (a *Authenticator) refreshTime(now, expiry time.Time) time.Time {
	if expiry.IsZero() {
		// No expiry given: ask again after the usual margin; the source's
		// own cache (oauth2, azidentity) answers without a request while
		// its token is good.
		return now.Add(a.refreshBefore)
	}
	life := expiry.Sub(now)
	at := expiry.Add(-min(a.refreshBefore, life/4))
	if !at.After(now) {
		// Already in its refresh window (a source that caches returned
		// the token it had): ask again soon, not at every request.
		at = now.Add(min(a.retryAfter, max(life/2, 0)))
	}
	return at
}

// remember adds a secret value to the Secrets under a name of its own, so
// that a rotated token replaces the one before it. An empty value is
// ignored.
func (a *Authenticator) remember(name, value string) {
	if value != "" {
		a.secrets.Set("cloud "+a.host+" "+name, value)
	}
}

// Error is a failure to get a registry's credentials from its cloud. Its
// text names the provider, the registry host, the step that failed (for
// a missing credential, the sources tried) and what to do. It carries no
// secret.
type Error struct {
	Provider string // aws, gcp, azure
	Host     string // the registry host
	Step     string // what failed, such as "no credentials: tried ..."
	Hint     string // what to do, or ""
	Err      error

	// secrets clean the cause before it is cut to maxCause, so that no
	// cut leaves part of a secret the whole of which would be replaced.
	secrets *redact.Secrets
}

// maxCause bounds how much of the SDK's text an Error repeats: some quote
// a whole HTTP response.
const maxCause = 400

func (e *Error) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s credentials for %s: %s", e.Provider, e.Host, e.Step)
	if e.Err != nil {
		cause := printable.Cut(strings.Join(strings.Fields(e.secrets.Text(e.Err.Error())), " "), maxCause)
		b.WriteString(": ")
		b.WriteString(cause)
	}
	if e.Hint != "" {
		b.WriteString("; ")
		b.WriteString(e.Hint)
	}
	return b.String()
}

func (e *Error) Unwrap() error { return e.Err }

// expiredError is a failed refresh after the cached token expired.
type expiredError struct {
	err    error
	expiry time.Time
}

func (e *expiredError) Error() string {
	return fmt.Sprintf("%v (the token fetched before expired at %s)", e.err, e.expiry.UTC().Format(time.RFC3339))
}

func (e *expiredError) Unwrap() error { return e.err }
