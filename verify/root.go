package verify

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/sigstore/sigstore-go/pkg/root"
	"github.com/sigstore/sigstore-go/pkg/tuf"
	"github.com/theupdateframework/go-tuf/v2/metadata/fetcher"
)

// RootSource supplies the trusted root for keyless verification: the Fulcio
// certificate authorities, Rekor logs, CT logs and timestamp authorities a
// signature may chain to.
type RootSource interface {
	TrustedMaterial(ctx context.Context) (root.TrustedMaterial, error)
}

// StaticRoot is a RootSource that always returns the same trusted material.
type StaticRoot struct{ Material root.TrustedMaterial }

var _ RootSource = StaticRoot{}

// TrustedMaterial implements RootSource.
func (s StaticRoot) TrustedMaterial(context.Context) (root.TrustedMaterial, error) {
	return s.Material, nil
}

// LoadTrustedRoot reads a Sigstore trusted_root.json file, as `cosign
// trusted-root create` writes it or as Sigstore's TUF repository serves it.
func LoadTrustedRoot(path string) (*root.TrustedRoot, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading trusted root: %w", err)
	}
	tr, err := root.NewTrustedRootFromJSON(b)
	if err != nil {
		return nil, fmt.Errorf("parsing trusted root %s: %w; it must be a Sigstore trusted_root.json (mediaType %s)",
			path, err, root.TrustedRootMediaType01)
	}
	return tr, nil
}

// PublicGoodOptions configures PublicGood. The zero value is Sigstore's
// public-good instance with a disk cache in the user's cache folder.
type PublicGoodOptions struct {
	// MirrorURL is the TUF repository. Default: tuf.DefaultMirror,
	// https://tuf-repo-cdn.sigstore.dev.
	MirrorURL string
	// Root is the TUF root of trust (root.json) the repository's metadata
	// must chain to. Default: the public-good root.json that sigstore-go
	// embeds.
	Root []byte
	// CacheDir keeps TUF metadata and the trusted root between runs, so that
	// a short-lived `imagebump plan` needs no network while the cache is
	// fresh (one day). Default: os.UserCacheDir()/imagebump/sigstore-tuf;
	// when there is no user cache folder, nothing is cached on disk.
	CacheDir string
	// Refresh is how long a trusted root fetched is used before a long-lived
	// process fetches it again. Default: 24h.
	Refresh time.Duration
	// HTTPClient fetches the TUF metadata. Default: http.DefaultClient. Each
	// fetch carries the context of the Verify call that needed it.
	HTTPClient *http.Client
	// Logger reports refresh failures (the old root stays in use). Default:
	// discard.
	Logger *slog.Logger
}

// PublicGood is a RootSource for Sigstore's public-good instance (or any
// TUF-distributed trusted root): it fetches trusted_root.json through
// sigstore-go's TUF client, whose embedded root.json makes every download
// verifiable, lazily on first use, and again after Refresh. A refresh that
// fails keeps the root it has and tries again after a minute; only a first
// fetch that fails is an error. It is safe for concurrent use, and starts no
// goroutine.
type PublicGood struct {
	opts PublicGoodOptions

	mu      sync.Mutex
	current root.TrustedMaterial
	fetched time.Time // when current was fetched
	retryAt time.Time // no refresh attempt before this
	now     func() time.Time
}

var _ RootSource = (*PublicGood)(nil)

// NewPublicGood returns a PublicGood. It makes no request until its
// TrustedMaterial is called.
func NewPublicGood(opts PublicGoodOptions) *PublicGood {
	if opts.MirrorURL == "" {
		opts.MirrorURL = tuf.DefaultMirror
	}
	if opts.Root == nil {
		opts.Root = tuf.DefaultRoot()
	}
	if opts.CacheDir == "" {
		if dir, err := os.UserCacheDir(); err == nil {
			opts.CacheDir = filepath.Join(dir, "imagebump", "sigstore-tuf")
		}
	}
	if opts.Refresh <= 0 {
		opts.Refresh = 24 * time.Hour
	}
	if opts.HTTPClient == nil {
		opts.HTTPClient = http.DefaultClient
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	return &PublicGood{opts: opts, now: time.Now}
}

// refreshRetry is how long PublicGood waits after a failed refresh.
const refreshRetry = time.Minute

// TrustedMaterial implements RootSource.
func (p *PublicGood) TrustedMaterial(ctx context.Context) (root.TrustedMaterial, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.now()
	if p.current != nil && (now.Sub(p.fetched) < p.opts.Refresh || now.Before(p.retryAt)) {
		return p.current, nil
	}
	tr, err := p.fetch(ctx)
	if err != nil {
		if p.current != nil {
			p.opts.Logger.WarnContext(ctx, "refreshing the Sigstore trusted root failed; keeping the one fetched before",
				"mirror", p.opts.MirrorURL, "fetched", p.fetched, "error", err)
			p.retryAt = now.Add(refreshRetry)
			return p.current, nil
		}
		return nil, err
	}
	p.current, p.fetched = tr, now
	return tr, nil
}

func (p *PublicGood) fetch(ctx context.Context) (*root.TrustedRoot, error) {
	f := fetcher.NewDefaultFetcher()
	f.SetHTTPUserAgent("imagebump")
	f.SetHTTPClient(ctxClient{ctx: ctx, client: p.opts.HTTPClient})
	opts := &tuf.Options{
		Root:              p.opts.Root,
		RepositoryBaseURL: p.opts.MirrorURL,
		CachePath:         p.opts.CacheDir,
		DisableLocalCache: p.opts.CacheDir == "",
		CacheValidity:     1, // days: a fresh disk cache needs no request
		Fetcher:           f,
	}
	if opts.CachePath != "" {
		if err := writableDir(opts.CachePath); err != nil {
			// A read-only root (a hardened container, a sandboxed unit):
			// the root is kept in memory, and fetched at each start.
			p.opts.Logger.WarnContext(ctx, "cannot cache the Sigstore trusted root on disk, so each start fetches it: set XDG_CACHE_HOME (on Linux) or HOME to a writable folder, or give verify.trustedRoot",
				"folder", opts.CachePath, "error", err)
			opts.CachePath, opts.DisableLocalCache = "", true
		}
	}
	client, err := tuf.New(opts)
	if err == nil {
		var tr *root.TrustedRoot
		if tr, err = root.GetTrustedRoot(client); err == nil {
			return tr, nil
		}
	}
	if ctx.Err() != nil {
		return nil, fmt.Errorf("fetching the Sigstore trusted root from %s: %w", p.opts.MirrorURL, ctx.Err())
	}
	return nil, fmt.Errorf("fetching the Sigstore trusted root through TUF from %s: %w; "+
		"without access to it, set verify.trustedRoot to a trusted_root.json file", p.opts.MirrorURL, err)
}

// ctxClient sends every request with ctx: go-tuf's fetcher takes no context.
type ctxClient struct {
	ctx    context.Context
	client *http.Client
}

func (c ctxClient) Do(req *http.Request) (*http.Response, error) {
	return c.client.Do(req.WithContext(c.ctx))
}

// writableDir makes dir if needed and checks that a file can be made in
// it: a folder that exists but is read-only (a read-only mount, another
// user's) fails here, not inside the TUF client.
func writableDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, ".imagebump-probe-*")
	if err != nil {
		return err
	}
	f.Close()
	return os.Remove(f.Name())
}

var (
	publicGoodOnce sync.Once
	publicGood     *PublicGood
)

// defaultPublicGood is the PublicGood that verifiers share when none is
// given, so that one process fetches the root once. It logs to the logger
// of the first verifier that asks (a process has one).
func defaultPublicGood(logger *slog.Logger) *PublicGood {
	publicGoodOnce.Do(func() { publicGood = NewPublicGood(PublicGoodOptions{Logger: logger}) })
	return publicGood
}
