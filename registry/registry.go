package registry

import (
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"

	"github.com/imagebump/imagebump/internal/redact"
	"github.com/imagebump/imagebump/internal/secretfile"
)

// Defaults for the zero values of Options and Host.
const (
	DefaultTimeout           = 30 * time.Second
	DefaultMaxRetries        = 4
	DefaultBackoff           = 500 * time.Millisecond
	DefaultMaxBackoff        = 30 * time.Second
	DefaultPageSize          = 1000
	DefaultMaxPages          = 1000    // tag list pages per repository
	DefaultMaxTags           = 500_000 // tags per repository
	DefaultRepositoryTimeout = 5 * time.Minute
	DefaultConcurrency       = 4 // requests in flight to one host
	DefaultScanConcurrency   = 4 // repositories listed at once by Scan
	DefaultUserAgent         = "imagebump"
)

// NoRetries, as a MaxRetries, turns retries off; zero means the default.
const NoRetries = -1

// maxTagLen is the longest tag the OCI distribution specification allows;
// a repository's tag list may hold at most MaxTags times as many bytes.
const maxTagLen = 128

// Host holds the settings for one registry host. Hosts without an entry get
// the defaults: credentials from Options.Keychain, TLS verified against the
// system roots, no rate limit and DefaultConcurrency.
type Host struct {
	// Host is the registry host and optional port, such as "ghcr.io" or
	// "localhost:5000". "docker.io" also matches "index.docker.io" and
	// "registry-1.docker.io", which are the same registry.
	Host string

	// DockerConfig is the path of a Docker config.json whose "auths",
	// "credHelpers" and "credsStore" give the credentials. It is read when
	// a repository on the host is first used, and again after the registry
	// refuses the credentials. Empty, with no other credentials set:
	// Options.Keychain.
	DockerConfig string

	// UsernameFile and PasswordFile, set together, give basic credentials.
	// Both files are read at each use, so they may be rotated in place;
	// trailing line endings are ignored.
	UsernameFile string
	PasswordFile string

	// TokenFile holds a registry bearer token (an identity token a registry
	// accepts as is), read at each use like PasswordFile.
	TokenFile string

	// Provider says where the credentials come from when no file above is
	// set: ProviderAWS, ProviderGCP or ProviderAzure ask that cloud for a
	// token with the process's own identity (see package cloudauth);
	// ProviderAuto picks the cloud from the host name (ECR, Artifact
	// Registry or GCR, ACR), or generic for any other host. Empty or
	// ProviderGeneric: the files above, or Options.Keychain. A cloud
	// provider excludes the files. Hosts without an entry are generic.
	Provider string

	// Insecure allows plain HTTP to this host: HTTPS is tried first, then
	// HTTP. Without it, this package never sends a request over plain
	// HTTP, not even to localhost.
	Insecure bool

	// CAFile is a PEM bundle of extra certificate authorities trusted for
	// this host, in addition to the system roots. It is read by New.
	CAFile string

	// RequestsPerSecond limits the requests sent to this host with a token
	// bucket holding Burst tokens (1 if Burst is 0). Zero: no limit. Every
	// request counts: pings, token fetches, pages and retries.
	RequestsPerSecond float64
	Burst             int

	// Concurrency bounds the requests in flight to this host at once,
	// counted from sending a request until its body is closed. Zero:
	// DefaultConcurrency (4). A request still running after 5 s moves to
	// a share of its own, as large, when that has room, and gives its
	// place back: up to twice Concurrency requests are then in flight.
	Concurrency int

	// Timeout bounds each HTTP request to this host, as Options.Timeout
	// does for every host. It is also how long a host that does not answer
	// is given, per Cycle, before it is held down (see the package doc).
	// Zero: Options.Timeout.
	Timeout time.Duration

	// MaxRetries is how many times a failed request to this host is
	// retried (see Options.MaxRetries). Zero: Options.MaxRetries;
	// NoRetries (or any negative number): none.
	MaxRetries int

	// MaxPages caps the tag list pages fetched for one repository, and
	// MaxTags the tags listed: a listing that goes past either fails with
	// KindLimit, so that a registry paginating forever cannot hang a
	// cycle. The tag list may also hold at most MaxTags*128 bytes (128 is
	// the longest valid tag). Zero: Options.MaxPages and Options.MaxTags.
	MaxPages int
	MaxTags  int

	// RepositoryTimeout bounds one operation on one repository of this
	// host: listing all its tags, or resolving one digest, retries and
	// waits for the host's rate limit and concurrency slots included.
	// Past it, the operation fails with KindLimit. Zero:
	// Options.RepositoryTimeout.
	RepositoryTimeout time.Duration
}

// Options configures a Client. The zero value is ready to use.
type Options struct {
	// Hosts holds per-host settings; each host may appear once.
	Hosts []Host

	// Timeout bounds each HTTP request, from sending it to reading the
	// last byte of its body; waiting for a rate limit or a concurrency
	// slot does not count. Host.Timeout overrides it for one host. Zero:
	// DefaultTimeout (30s).
	Timeout time.Duration

	// MaxRetries is how many times a failed request is retried: on HTTP
	// 429, on 5xx other than 501, on timeouts, on connection errors and on
	// truncated bodies. Host.MaxRetries overrides it for one host. Zero:
	// DefaultMaxRetries (4). NoRetries (or any negative number): none.
	MaxRetries int

	// Backoff is the base of the exponential backoff between retries, with
	// full jitter, and MaxBackoff its cap. A Retry-After header on a 429 or
	// 503 is honoured instead, up to MaxBackoff, and holds back every
	// request to that host meanwhile. Zero: DefaultBackoff (500ms) and
	// DefaultMaxBackoff (30s).
	Backoff    time.Duration
	MaxBackoff time.Duration

	// PageSize is the number of tags asked for per page with "?n=".
	// Zero: DefaultPageSize (1000).
	PageSize int

	// MaxPages, MaxTags and RepositoryTimeout are the defaults of the
	// Host settings of the same names, for every host. Zero:
	// DefaultMaxPages (1000), DefaultMaxTags (500,000) and
	// DefaultRepositoryTimeout (5m).
	MaxPages          int
	MaxTags           int
	RepositoryTimeout time.Duration

	// Transport is the base HTTP transport. Zero: a clone of
	// http.DefaultTransport, which honours HTTPS_PROXY and NO_PROXY. A
	// host with a CAFile needs an *http.Transport here, or nil.
	Transport http.RoundTripper

	// Keychain resolves credentials for hosts with none configured in
	// Hosts. Zero: authn.DefaultKeychain (the Docker config of the user
	// running the process, then anonymous).
	Keychain authn.Keychain

	// Logger receives debug records of requests, info records of retries
	// and warnings about broken pagination. Zero: nothing is logged.
	Logger *slog.Logger

	// UserAgent is sent with every request. Zero: DefaultUserAgent.
	UserAgent string

	// FluxTerms words the hints of errors for a config made from Flux
	// objects: "set spec.insecure: true on the ImageRepository" where a
	// native config reads "add {host: H, insecure: true} under
	// registries:".
	FluxTerms bool

	// OnRequest, when set, is told of every HTTP request to a registry
	// (pings and token fetches included): the host it was sent to, and the
	// response's status code, or 0 and the error when there was none.
	// OnWait is told of every wait before a request, for the host's rate
	// limit or a Retry-After pause. Both are called from many goroutines
	// and must be quick; serve exports them as metrics.
	OnRequest func(host string, status int, err error)
	OnWait    func(host string, d time.Duration)
}

// Client lists tags and resolves digests. It is safe for concurrent use.
// It caches, per host, the registry's authentication challenge and, per
// repository, the authenticated transport (with its bearer token); create a
// new Client to start afresh. A long-running process keeps one Client and
// makes one Cycle per cycle (see Cycle).
type Client struct {
	timeout     time.Duration
	maxRetries  int
	backoff     time.Duration
	maxBackoff  time.Duration
	pageSize    int
	maxPages    int
	maxTags     int
	repoTimeout time.Duration
	base        http.RoundTripper
	keychain    authn.Keychain
	log         *slog.Logger
	fluxTerms   bool // Options.FluxTerms
	userAgent   string
	onRequest   func(host string, status int, err error)
	onWait      func(host string, d time.Duration)
	created     resetMap[string, time.Time] // creation times, by digest
	pages       pageCache

	// secrets holds every credential and token the Client has read or
	// been given, to be removed from what servers send back.
	secrets *redact.Secrets

	parsed resetMap[string, parsedRepo] // by the name asked for

	mu    sync.Mutex
	hosts map[string]*host // by canonical host name
}

// New validates opts and returns a Client. Every problem found is reported,
// joined into one error.
func New(opts Options) (*Client, error) {
	var errs []error
	if opts.Timeout < 0 {
		errs = append(errs, fmt.Errorf("timeout %v is negative", opts.Timeout))
	}
	if opts.Backoff < 0 {
		errs = append(errs, fmt.Errorf("backoff %v is negative", opts.Backoff))
	}
	if opts.MaxBackoff < 0 {
		errs = append(errs, fmt.Errorf("max backoff %v is negative", opts.MaxBackoff))
	}
	if opts.PageSize < 0 {
		errs = append(errs, fmt.Errorf("page size %d is negative", opts.PageSize))
	}
	errs = append(errs, checkLimits(opts.MaxPages, opts.MaxTags, opts.RepositoryTimeout)...)
	c := &Client{
		timeout:     orDefault(opts.Timeout, DefaultTimeout),
		maxRetries:  opts.MaxRetries,
		backoff:     orDefault(opts.Backoff, DefaultBackoff),
		maxBackoff:  orDefault(opts.MaxBackoff, DefaultMaxBackoff),
		pageSize:    orDefault(opts.PageSize, DefaultPageSize),
		maxPages:    orDefault(opts.MaxPages, DefaultMaxPages),
		maxTags:     orDefault(opts.MaxTags, DefaultMaxTags),
		repoTimeout: orDefault(opts.RepositoryTimeout, DefaultRepositoryTimeout),
		base:        opts.Transport,
		keychain:    opts.Keychain,
		log:         opts.Logger,
		userAgent:   orDefault(opts.UserAgent, DefaultUserAgent),
		created:     resetMap[string, time.Time]{max: maxCreatedCache},
		parsed:      resetMap[string, parsedRepo]{max: maxParsedRepos},
		fluxTerms:   opts.FluxTerms,
		onRequest:   opts.OnRequest,
		onWait:      opts.OnWait,
		secrets:     &redact.Secrets{},
		hosts:       map[string]*host{},
	}
	switch {
	case opts.MaxRetries == 0:
		c.maxRetries = DefaultMaxRetries
	case opts.MaxRetries < 0:
		c.maxRetries = 0
	}
	if c.backoff > c.maxBackoff {
		errs = append(errs, fmt.Errorf("backoff %v is greater than max backoff %v", c.backoff, c.maxBackoff))
	}
	if c.base == nil {
		t := http.DefaultTransport.(*http.Transport).Clone()
		// Keep a connection for every request a host may have in
		// flight: the default of 2 closes the rest after each burst,
		// and the next burst dials them again.
		t.MaxIdleConnsPerHost = DefaultConcurrency
		for _, hc := range opts.Hosts {
			t.MaxIdleConnsPerHost = max(t.MaxIdleConnsPerHost, hc.Concurrency)
		}
		c.base = t
	}
	if c.keychain == nil {
		c.keychain = authn.DefaultKeychain
	}
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	for i, hc := range opts.Hosts {
		key, err := canonicalHost(hc.Host)
		if err != nil {
			errs = append(errs, fmt.Errorf("hosts[%d]: %w", i, err))
			continue
		}
		if _, dup := c.hosts[key]; dup {
			errs = append(errs, fmt.Errorf("hosts[%d]: host %q is configured twice", i, hc.Host))
			continue
		}
		h, err := c.newHost(key, hc)
		if err != nil {
			errs = append(errs, fmt.Errorf("hosts[%d] (%s): %w", i, hc.Host, err))
			continue
		}
		c.hosts[key] = h
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("invalid registry options: %w", err)
	}
	return c, nil
}

// checkLimits reports negative caps, for Options and for a Host.
func checkLimits(maxPages, maxTags int, repoTimeout time.Duration) []error {
	var errs []error
	if maxPages < 0 {
		errs = append(errs, fmt.Errorf("maxPages %d is negative", maxPages))
	}
	if maxTags < 0 {
		errs = append(errs, fmt.Errorf("maxTags %d is negative", maxTags))
	}
	if repoTimeout < 0 {
		errs = append(errs, fmt.Errorf("repositoryTimeout %v is negative", repoTimeout))
	}
	return errs
}

func orDefault[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}

// dockerHubAliases are the names of Docker Hub's registry; name.Registry
// reports docker.io as index.docker.io.
var dockerHubAliases = map[string]bool{
	"docker.io":            true,
	"index.docker.io":      true,
	"registry-1.docker.io": true,
}

// canonicalHost validates a configured host name and returns the key it is
// looked up by.
func canonicalHost(h string) (string, error) {
	switch {
	case h == "":
		return "", errors.New("host is empty")
	case strings.Contains(h, "://"):
		return "", fmt.Errorf("host %q must not have a scheme (use insecure for plain HTTP)", h)
	case strings.ContainsAny(h, "/ \t@?#"):
		return "", fmt.Errorf("host %q must be a host name with an optional port, without a path", h)
	}
	if _, err := name.NewRegistry(h, name.StrictValidation); err != nil {
		return "", fmt.Errorf("host %q: %w", h, err)
	}
	return hostKey(h), nil
}

func hostKey(h string) string {
	h = strings.ToLower(h)
	if dockerHubAliases[h] {
		return name.DefaultRegistry
	}
	return h
}

// newHost checks a host's settings and builds its transport.
func (c *Client) newHost(key string, hc Host) (*host, error) {
	var errs []error
	if hc.UsernameFile != "" && hc.PasswordFile == "" {
		errs = append(errs, errors.New("usernameFile is set without passwordFile"))
	}
	if hc.PasswordFile != "" && hc.UsernameFile == "" {
		errs = append(errs, errors.New("passwordFile is set without usernameFile"))
	}
	methods := 0
	for _, set := range []bool{hc.DockerConfig != "", hc.UsernameFile != "" || hc.PasswordFile != "", hc.TokenFile != ""} {
		if set {
			methods++
		}
	}
	if methods > 1 {
		errs = append(errs, errors.New("only one of dockerConfig, usernameFile/passwordFile and tokenFile may be set"))
	}
	if hc.RequestsPerSecond < 0 {
		errs = append(errs, fmt.Errorf("requestsPerSecond %v is negative", hc.RequestsPerSecond))
	}
	if hc.Burst < 0 {
		errs = append(errs, fmt.Errorf("burst %d is negative", hc.Burst))
	}
	if hc.Burst > 0 && hc.RequestsPerSecond == 0 {
		errs = append(errs, errors.New("burst is set without requestsPerSecond"))
	}
	if hc.Concurrency < 0 {
		errs = append(errs, fmt.Errorf("concurrency %d is negative", hc.Concurrency))
	}
	if hc.Timeout < 0 {
		errs = append(errs, fmt.Errorf("timeout %v is negative", hc.Timeout))
	}
	errs = append(errs, checkLimits(hc.MaxPages, hc.MaxTags, hc.RepositoryTimeout)...)
	if err := checkProvider(hc); err != nil {
		errs = append(errs, err)
	}
	rt := c.base
	if hc.CAFile != "" {
		var err error
		var unread *caFileError
		switch rt, err = withCAFile(c.base, hc.CAFile); {
		case errors.As(err, &unread):
			// A file missing or broken fails this host's requests only,
			// as a credential file does, and is read again each time:
			// a Secret's volume may hold it by the next cycle.
			c.log.Warn("a registry's caFile cannot be used: each request to that host fails, none sent, until it can; put the CA's PEM certificate there, or remove caFile", "host", key, "caFile", hc.CAFile, "problem", unread.problem())
			rt = &caRetry{base: c.base, path: hc.CAFile, host: key}
		case err != nil:
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	h := c.buildHost(key, hc, rt)
	ca, err := c.cloudAuth(hc, h)
	if err != nil {
		return nil, err
	}
	if ca != nil {
		h.auth, h.provider = ca, ca.Provider()
	}
	return h, nil
}

// caTransports holds the transports withCAFile made, by base and the CA
// file's bytes: the clients made from one base (serve's, a config after
// another) share a host's transport, and with it its connections, while
// the file's certificates stay the same. It grows by one entry per base
// and certificate set: a process that makes clients from new bases
// (Options.Transport nil) makes one client, as run and plan do.
var caTransports = struct {
	sync.Mutex
	m map[caKey]*http.Transport
}{m: map[caKey]*http.Transport{}}

type caKey struct {
	base *http.Transport
	pem  [sha256.Size]byte
}

// withCAFile returns a clone of base that also trusts the certificates in
// the PEM file at path; the same one for the same base and certificates.
func withCAFile(base http.RoundTripper, path string) (http.RoundTripper, error) {
	t, ok := base.(*http.Transport)
	if !ok {
		return nil, fmt.Errorf("caFile %s needs Options.Transport to be an *http.Transport, not %T", path, base)
	}
	pem, err := secretfile.ReadFile(path, secretfile.MaxSize)
	if err != nil {
		return nil, &caFileError{path: path, err: err}
	}
	key := caKey{base: t, pem: sha256.Sum256(pem)}
	caTransports.Lock()
	defer caTransports.Unlock()
	if ct, ok := caTransports.m[key]; ok {
		return ct, nil
	}
	pool, err := x509.SystemCertPool()
	if err != nil || pool == nil {
		pool = x509.NewCertPool()
	}
	if !pool.AppendCertsFromPEM(pem) {
		return nil, &caFileError{path: path}
	}
	t = t.Clone()
	if t.TLSClientConfig == nil {
		t.TLSClientConfig = &tls.Config{}
	}
	t.TLSClientConfig.RootCAs = pool
	caTransports.m[key] = t
	return t, nil
}

// insecureHost reports whether hostport is configured with Insecure.
func (c *Client) insecureHost(hostport string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	h, ok := c.hosts[hostKey(hostport)]
	return ok && h.cfg.Insecure
}

// hostFor returns the state of the host serving registry reg, creating it
// with default settings for a host not configured.
func (c *Client) hostFor(reg string) *host {
	key := hostKey(reg)
	c.mu.Lock()
	defer c.mu.Unlock()
	h, ok := c.hosts[key]
	if !ok {
		h = c.buildHost(key, Host{Host: key}, c.base)
		c.hosts[key] = h
	}
	return h
}

// caRetry is the transport of a host whose caFile could not be read or
// held no certificate: each request reads it again, and fails, sending
// nothing, until it can be used; from then on its transport serves.
type caRetry struct {
	base http.RoundTripper
	path string
	host string

	mu sync.Mutex
	rt http.RoundTripper // set once the file could be used
}

// RoundTrip sends req through the transport that trusts the caFile, or
// fails with a *caFileError while the file cannot be used.
func (c *caRetry) RoundTrip(req *http.Request) (*http.Response, error) {
	c.mu.Lock()
	rt := c.rt
	if rt == nil {
		var err error
		if rt, err = withCAFile(c.base, c.path); err != nil {
			c.mu.Unlock()
			if req.Body != nil {
				req.Body.Close()
			}
			var unread *caFileError
			if errors.As(err, &unread) {
				unread.host = c.host
			}
			return nil, err
		}
		c.rt = rt
	}
	c.mu.Unlock()
	return rt.RoundTrip(req)
}
