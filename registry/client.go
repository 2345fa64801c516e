package registry

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"

	"github.com/imagebump/imagebump/internal/printable"
	"github.com/imagebump/imagebump/internal/redact"
	"github.com/imagebump/imagebump/internal/retry"
)

// session is an authenticated transport for one repository.
type session struct {
	repo   name.Repository
	base   string // "https://host/v2/repo"
	client *http.Client
}

// call is one Client operation on one repository: it parses the repository,
// finds the host, sets up the session and turns failures into *Error.
type call struct {
	c     *Client
	h     *host
	b     *breaker // the host's, in the call's Cycle
	repo  name.Repository
	tmpl  Error // Op, Repository, Tag, Platform and Host, copied into errors
	s     *session
	fresh bool // s was built by this call, not taken from the cache

	// outer is the caller's context; the call runs in a child of it that
	// ends at the host's RepositoryTimeout (see Cycle.start).
	outer   context.Context
	repoCtx context.Context
}

// start begins an operation on repository in the Cycle. It returns the
// context the operation runs in, bounded by the host's RepositoryTimeout,
// and the function that releases it.
func (y *Cycle) start(ctx context.Context, op, repository, tag, platform string) (*call, context.Context, context.CancelFunc, error) {
	c := y.c
	k := &call{c: c, tmpl: Error{Op: op, Repository: repository, Tag: tag, Platform: platform, secrets: c.secrets}, outer: ctx}
	if err := ctx.Err(); err != nil {
		return nil, nil, nil, k.fail(ctx, 0, err)
	}
	repo, h, err := c.repository(repository)
	if h != nil {
		k.h = h
		k.b = y.breaker(h)
		k.tmpl.Host = repo.RegistryStr()
		k.tmpl.authKey = authKey(h.cfg)
		k.tmpl.provider = h.provider
		k.tmpl.fluxTerms = c.fluxTerms
	}
	if err != nil {
		return nil, nil, nil, k.fail(ctx, 0, err)
	}
	k.repo = repo
	rctx, cancel := context.WithTimeoutCause(ctx, k.h.repoTimeout, &limitError{
		setting: "repositoryTimeout",
		msg:     fmt.Sprintf("gave up after the repository timeout of %v", k.h.repoTimeout),
	})
	k.repoCtx = rctx
	return k, withBreaker(rctx, k.b), cancel, nil
}

// maxParsedRepos bounds the repository names a Client keeps parsed; past
// it, it starts afresh.
const maxParsedRepos = 10_000

// parsedRepo is a repository name as parsed for its host, and the host.
type parsedRepo struct {
	repo name.Repository
	h    *host
}

// repository parses a repository name (parseRepository) for its host,
// with the scheme the host's Insecure setting gives, and returns both. A
// name parsed once is kept for the Client's life: every cycle asks for
// the same ones, and parsing them was a tenth of a scan's own CPU. On an
// error after the host is known, the host comes with it.
func (c *Client) repository(s string) (name.Repository, *host, error) {
	if p, ok := c.parsed.get(s); ok {
		return p.repo, p.h, nil
	}
	repo, err := parseRepository(s)
	if err != nil {
		return name.Repository{}, nil, err
	}
	h := c.hostFor(repo.RegistryStr())
	if h.cfg.Insecure {
		reg, err := name.NewRegistry(repo.RegistryStr(), name.Insecure)
		if err != nil {
			return repo, h, &invalidError{msg: err.Error()}
		}
		repo.Registry = reg
	}
	c.parsed.put(s, parsedRepo{repo, h})
	return repo, h, nil
}

// parseRepository parses a repository name without tag or digest; a name
// without a registry is on Docker Hub, as docker pull has it.
func parseRepository(s string) (name.Repository, error) {
	if s == "" {
		return name.Repository{}, &invalidError{msg: "repository is empty"}
	}
	if strings.Contains(s, "@") {
		return name.Repository{}, &invalidError{msg: fmt.Sprintf("repository %q must not have a digest", s)}
	}
	repo, err := name.NewRepository(s)
	if err != nil {
		if _, terr := name.NewTag(s, name.StrictValidation); terr == nil {
			return name.Repository{}, &invalidError{msg: fmt.Sprintf("repository %q must not have a tag", s)}
		}
		return name.Repository{}, &invalidError{msg: err.Error()}
	}
	return repo, nil
}

// fail wraps err into an *Error with the call's details.
func (k *call) fail(ctx context.Context, attempts int, err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	if k.repoCtx != nil && k.repoCtx.Err() != nil && k.outer.Err() == nil {
		// The repository's own deadline passed, not the caller's.
		// What the operation was doing at that moment only repeats it.
		var le *limitError
		if cause := context.Cause(k.repoCtx); errors.As(cause, &le) {
			err = le
		}
		ctx = k.outer
	}
	v := classify(ctx, err)
	e = new(Error)
	*e = k.tmpl
	e.Kind = v.kind
	e.Status = v.status
	e.Attempts = attempts
	e.Err = err
	return e
}

// session returns the call's session, building or reusing the cached one.
func (k *call) session(ctx context.Context) (*session, error) {
	if k.s != nil {
		return k.s, nil
	}
	v, _ := k.h.sessions.LoadOrStore(k.repo.Name(), newSlot[*session]())
	sl := v.(*slot[*session])
	var attempts int
	s, built, err := sl.get(ctx, func() (*session, error) {
		s, n, err := k.c.newSession(ctx, k.h, k.b, k.repo)
		attempts = n
		return s, err
	})
	if err != nil {
		return nil, k.fail(ctx, attempts, err)
	}
	k.s, k.fresh = s, built
	return s, nil
}

// forget drops the cached session and challenge after the registry refused
// them, so that the next one reads the credentials and pings anew.
func (k *call) forget() {
	if f, ok := k.h.auth.(interface{ Forget() }); ok {
		f.Forget() // a cloud token the registry refused
	}
	k.h.sessions.Delete(k.repo.Name())
	k.h.challengeMu.Lock()
	delete(k.h.challenges, k.repo.RegistryStr())
	k.h.challengeMu.Unlock()
	k.s = nil
}

// do runs one request, fn, with retries. A 401 with a cached session is
// tried once more with a new session: the token may have expired or the
// credential files been rotated.
func (k *call) do(ctx context.Context, what string, fn func(ctx context.Context, s *session) error) error {
	for renewed := false; ; renewed = true {
		s, err := k.session(ctx)
		if err != nil {
			return err
		}
		attempts, err := k.c.retry(ctx, k.h, k.b, what, k.repo.RepositoryStr(), func(ctx context.Context) error {
			return fn(ctx, s)
		})
		if err == nil {
			k.b.serve()
			return nil
		}
		v := classify(ctx, err)
		if v.kind == KindNotFound || v.kind == KindAuth {
			k.b.serve() // an answer about the repository, not a failing host
		}
		if v.kind == KindAuth && v.status == http.StatusUnauthorized && !k.fresh && !renewed {
			k.c.log.Debug("registry refused cached credentials; renewing", "host", k.h.name, "repository", k.repo.Name())
			k.forget()
			continue
		}
		return k.fail(ctx, attempts, err)
	}
}

// retry calls fn until it succeeds, fails in a way a retry cannot help, or
// has been retried the host's MaxRetries times. It returns how many times
// fn ran. A request that gets no answer is retried only as long as b, the
// host's breaker in the cycle, allows; once the host is held down, fn is
// not called at all and the error is b's.
func (c *Client) retry(ctx context.Context, h *host, b *breaker, what, repo string, fn func(context.Context) error) (int, error) {
	for n := 1; ; n++ {
		if err := b.check(); err != nil {
			return n - 1, err
		}
		sent := time.Now()
		err := fn(ctx)
		if err == nil {
			return n, nil
		}
		v := classify(ctx, err)
		if !v.retry {
			return n, err
		}
		delay := h.rt.pauseLeft()
		if delay <= 0 {
			delay = retry.Backoff(n, c.backoff, c.maxBackoff)
		}
		last := n > h.maxRetries
		var na *noAnswerError
		if errors.As(err, &na) && !b.missed(sent, delay, last, err) {
			return n, err
		}
		if v.kind == KindServer && !last && !b.failing(delay, err) {
			return n, err
		}
		// A 429, or a 503 that came with a Retry-After: the host asks to be
		// left alone. (Another request's pause does not make a 500 one.)
		asked := h.rt.pauseLeft() > 0
		rateLimited := v.kind == KindRateLimited
		if rateLimited || asked && v.status == http.StatusServiceUnavailable {
			if ok, notWaited := b.limited(delay, asked, last && rateLimited, err); !ok {
				if notWaited != nil {
					return n, notWaited
				}
				return n, err
			}
		}
		if last {
			return n, err
		}
		attrs := []any{"host", h.name, "request", what, "attempt", n, "kind", v.kind.String(), "status", v.status, "delay", delay}
		if repo != "" {
			attrs = append(attrs, "repository", repo)
		}
		c.log.Info("retrying registry request", attrs...)
		if err := retry.Sleep(ctx, delay); err != nil {
			return n, err
		}
	}
}

// newSession pings the registry (once per host), gets a bearer token for
// the repository if the registry wants one, and returns the transport.
func (c *Client) newSession(ctx context.Context, h *host, b *breaker, repo name.Repository) (*session, int, error) {
	auth, err := c.authenticator(ctx, h, repo)
	if err != nil {
		return nil, 0, err
	}
	// Read the credentials now, so that a missing file fails here with its
	// name rather than deep inside a request.
	cfg, err := authn.Authorization(ctx, auth)
	if err != nil {
		return nil, 0, err
	}
	c.remember(repo.Name(), cfg)
	ch, n, err := c.challenge(ctx, h, b, repo.Registry)
	if err != nil {
		return nil, n, err
	}
	tok := &transport.Token{}
	if strings.EqualFold(ch.Scheme, "bearer") {
		if err := c.checkRealm(h, ch); err != nil {
			return nil, n, err
		}
		if cfg.RegistryToken != "" {
			tok.Token = cfg.RegistryToken
		} else {
			scopes := []string{repo.Scope(transport.PullScope)}
			n, err = c.retry(ctx, h, b, "token", repo.RepositoryStr(), func(ctx context.Context) error {
				t, err := transport.Exchange(ctx, repo.Registry, auth, h.rt, scopes, ch)
				if err != nil && strings.HasPrefix(err.Error(), noTokenPrefix) {
					// A 200 answer without "token" or "access_token":
					// go-containerregistry quotes the whole body, which
					// may hold a refresh token, or a token under a name
					// of its own. Say which fields came, never a value.
					return &badResponseError{what: "the token service answered without a token (no \"token\" or \"access_token\" field" +
						tokenFields(strings.TrimPrefix(err.Error(), noTokenPrefix)) + ")"}
				}
				if err != nil {
					return err
				}
				tok = t
				return nil
			})
			if err != nil {
				return nil, n, &tokenError{realmHost: realmHost(ch.Parameters["realm"]), err: err}
			}
			if tok.Token == "" {
				tok.Token = tok.AccessToken
			}
			c.secrets.Set(repo.Name()+" token", tok.Token)
			c.secrets.Set(repo.Name()+" refresh token", tok.RefreshToken)
		}
	}
	rt, err := transport.FromToken(repo.Registry, auth, h.rt, ch, tok)
	if err != nil {
		return nil, n, &badResponseError{what: "unusable authentication challenge", err: err}
	}
	scheme := "https"
	if ch.Insecure {
		scheme = "http"
	}
	return &session{
		repo:   repo,
		base:   fmt.Sprintf("%s://%s/v2/%s", scheme, repo.RegistryStr(), repo.RepositoryStr()),
		client: &http.Client{Transport: rt},
	}, n, nil
}

// challenge returns the registry's authentication challenge, pinging it
// the first time.
func (c *Client) challenge(ctx context.Context, h *host, b *breaker, reg name.Registry) (*transport.Challenge, int, error) {
	h.challengeMu.Lock()
	sl, ok := h.challenges[reg.RegistryStr()]
	if !ok {
		sl = newSlot[*transport.Challenge]()
		h.challenges[reg.RegistryStr()] = sl
	}
	h.challengeMu.Unlock()
	var attempts int
	ch, _, err := sl.get(ctx, func() (*transport.Challenge, error) {
		var ch *transport.Challenge
		n, err := c.retry(ctx, h, b, "ping", "", func(ctx context.Context) error {
			var err error
			ch, err = transport.Ping(ctx, reg, h.rt)
			return err
		})
		attempts = n
		return ch, err
	})
	if err != nil {
		return nil, attempts, fmt.Errorf("pinging registry: %w", err)
	}
	return ch, attempts, nil
}

// fetch sends one request and reads the body, up to limit bytes. A status
// other than 200 is an error from transport.CheckError, which parses the
// registry's error body.
func (s *session) fetch(ctx context.Context, method, url string, accept []string, limit int64) (*http.Response, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, method, url, nil)
	if err != nil {
		return nil, nil, &invalidError{msg: err.Error()}
	}
	if len(accept) > 0 {
		req.Header.Set("Accept", strings.Join(accept, ", "))
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	if err := transport.CheckError(resp, http.StatusOK); err != nil {
		return resp, nil, err
	}
	if method == http.MethodHead {
		return resp, nil, nil
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return resp, nil, fmt.Errorf("reading response body: %w", err)
	}
	if int64(len(body)) > limit {
		return resp, nil, &badResponseError{what: fmt.Sprintf("response body larger than %d bytes", limit)}
	}
	return resp, body, nil
}

// remember records the secrets of the credentials cfg, read for
// repository, so that no server can echo them into an error.
func (c *Client) remember(repository string, cfg *authn.AuthConfig) {
	c.secrets.Set(repository+" password", cfg.Password)
	c.secrets.Set(repository+" auth", cfg.Auth)
	c.secrets.Set(repository+" identity token", cfg.IdentityToken)
	c.secrets.Set(repository+" registry token", cfg.RegistryToken)
	basic := ""
	if cfg.Username != "" && cfg.Password != "" {
		basic = base64.StdEncoding.EncodeToString([]byte(cfg.Username + ":" + cfg.Password))
	}
	c.secrets.Set(repository+" basic", basic)
}

// checkRealm refuses a bearer challenge whose token realm is plain HTTP on
// another host, unless that host is itself configured insecure: the
// credentials would cross the network in clear to a host the user never
// allowed plain HTTP for. ggcr allows such a realm for any insecure
// registry.
func (c *Client) checkRealm(h *host, ch *transport.Challenge) error {
	realm := ch.Parameters["realm"]
	u, err := url.Parse(realm)
	if err != nil || u.Scheme != "http" {
		return nil // ggcr checks the rest
	}
	if sameHostname(u.Host, h.name) || c.insecureHost(u.Host) {
		return nil
	}
	return &realmError{realm: redact.URL(u), host: h.name}
}

// noTokenPrefix starts go-containerregistry's error for a token answer
// without a token, followed by the whole body (transport/bearer.go);
// TestTokenAnswerWithoutToken fails if it changes.
const noTokenPrefix = "no token in bearer response:\n"

// tokenFields names the top-level fields of a token answer without a
// token, for its error: never their values.
func tokenFields(body string) string {
	var fields map[string]json.RawMessage
	if json.Unmarshal([]byte(body), &fields) != nil || len(fields) == 0 {
		return ""
	}
	names := make([]string, 0, len(fields))
	for k := range fields {
		names = append(names, strconv.Quote(printable.Cut(k, 40)))
	}
	slices.Sort(names)
	if len(names) > 10 {
		names = append(names[:10], "...")
	}
	return "; it had " + strings.Join(names, ", ")
}

// tokenError is a failure to get a bearer token from the registry's token
// service (its realm), which may be on another host than the registry.
type tokenError struct {
	realmHost string // the token service's host, "" when unknown
	err       error
}

func (e *tokenError) Error() string { return "getting a token: " + e.err.Error() }
func (e *tokenError) Unwrap() error { return e.err }

// realmHost returns the host of a token realm URL, or "".
func realmHost(realm string) string {
	u, err := url.Parse(realm)
	if err != nil {
		return ""
	}
	return u.Host
}
