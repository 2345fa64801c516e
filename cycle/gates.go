package cycle

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/imagebump/imagebump/config"
	"github.com/imagebump/imagebump/policy"
	"github.com/imagebump/imagebump/registry"
	"github.com/imagebump/imagebump/verify"
)

// Gate names why a tag the policy would pick was held back.
type Gate string

// The gates a tag passes before it is a candidate, in the order they are
// checked; a hold (config.Hold) keeps the markers still after the pick.
const (
	// GateAge: the image is younger than the policy's minAge.
	GateAge Gate = "too young"
	// GateUnsigned: verify is set and the digest carries no signature.
	GateUnsigned Gate = "unsigned"
	// GateInvalid: verify is set and every signature was refused.
	GateInvalid Gate = "invalid signature"
)

// HeldBack is a tag, newer by the policy than its pick, that a gate held
// back.
type HeldBack struct {
	// Tag is the tag held back, and Digest what it pointed at.
	Tag, Digest string
	// Gate is the gate that held it.
	Gate Gate
	// Detail says more: which signatures were refused and why, or when the
	// image was created.
	Detail string
	// Until is when the tag becomes a candidate (GateAge); zero otherwise.
	Until time.Time
}

// MaxGateChecks is how many tags, best first, a policy's gates look at in
// one cycle before giving up with "no tag passes": a policy whose newest
// fifty tags are all unsigned is misconfigured, not waiting.
const MaxGateChecks = 50

// HeldBackSummary says why no tag was picked when the gates held back n
// tags: all there were, or the MaxGateChecks best, with the rest never
// checked.
func HeldBackSummary(n int) string {
	if n >= MaxGateChecks {
		return fmt.Sprintf("the %d best tags were all held back, and the gates stop there, so tags below them were never checked: narrow the policy (a range, filterTags, exclude) to tags that can pass", n)
	}
	return "every candidate checked was held back"
}

// GateRegistry is what the gates need from a registry on top of Registry:
// creation times and the fetches that signatures need. *registry.Client
// and *registry.Cycle implement it.
type GateRegistry interface {
	Registry
	Created(ctx context.Context, repository, digest string) (time.Time, error)
	Manifest(ctx context.Context, repository, ref string) (registry.Manifest, error)
	Blob(ctx context.Context, repository, digest string) ([]byte, error)
	Referrers(ctx context.Context, repository, digest, artifactType string) ([]v1.Descriptor, error)
}

var (
	_ GateRegistry = (*registry.Client)(nil)
	_ GateRegistry = (*registry.Cycle)(nil)
)

// Gates checks the minimum age and signatures of candidate tags. One Gates
// lives as long as its config: it caches verified digests and reads key
// files once, so a cycle with nothing new makes no extra request. It is
// safe for concurrent use.
type Gates struct {
	cache *verify.Cache
	now   func() time.Time
	log   *slog.Logger

	mu        sync.Mutex
	verifiers map[string]*verify.Verifier // by image name
}

// NewGates returns Gates for the images of a config. now is the clock the
// minimum ages are checked against (nil: time.Now).
func NewGates(now func() time.Time, logger *slog.Logger) *Gates {
	if now == nil {
		now = time.Now
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Gates{cache: verify.NewCache(verify.CacheOptions{}), now: now, log: logger, verifiers: map[string]*verify.Verifier{}}
}

// needsGates reports whether an image has a gate to pass.
func needsGates(im *config.Image) bool {
	return im.MinAge > 0 || im.Verify != nil
}

// verifier returns the image's Verifier, built on first use. The registry
// it reads through is given per call: each cycle has its own view.
func (g *Gates) verifier(im *config.Image) (*verify.Verifier, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if v, ok := g.verifiers[im.Name]; ok {
		return v, nil
	}
	v, err := verify.New(im.Verify.Options(), cycleRegistry{}, verify.WithCache(g.cache), verify.WithLogger(g.log))
	if err != nil {
		return nil, fmt.Errorf("policy %s: %w", im.Name, err) // verify's errors name the verify key
	}
	g.verifiers[im.Name] = v
	return v, nil
}

// Pick walks the policy's tags best first and returns the first selection
// whose tag passes every gate, with the better tags that were held back.
// sel is the selection over every tag. An error means a gate could not be
// checked (the registry failed): the policy fails rather than let an
// unchecked tag through.
func (g *Gates) Pick(ctx context.Context, reg Registry, im *config.Image, sel policy.Result, tags []string) (policy.Result, []HeldBack, error) {
	greg, ok := reg.(GateRegistry)
	if !ok {
		return sel, nil, fmt.Errorf("policy %s: minAge and verify need a registry client that can read images", im.Name)
	}
	var held []HeldBack
	remaining := tags
	cur := sel
	for range MaxGateChecks {
		if cur.Latest == "" {
			break
		}
		hb, err := g.Check(ctx, greg, im, cur.Latest)
		if err != nil {
			return sel, held, err
		}
		if hb == nil {
			// The counts describe every tag; the pick is the gated one.
			out := sel
			out.Latest = cur.Latest
			return out, held, nil
		}
		held = append(held, *hb)
		remaining = slices.DeleteFunc(slices.Clone(remaining), func(t string) bool { return t == cur.Latest })
		next, err := im.Policy().Pick(ctx, remaining)
		if err != nil {
			return sel, held, err
		}
		cur = next
	}
	out := sel
	out.Latest = ""
	return out, held, nil
}

// Check runs a tag through the gates: nil means it passes.
func (g *Gates) Check(ctx context.Context, reg GateRegistry, im *config.Image, tag string) (*HeldBack, error) {
	digest, err := reg.Digest(ctx, im.Repository, tag, "")
	if err != nil {
		return nil, fmt.Errorf("policy %s: resolving %s to check it: %w", im.Name, tag, err)
	}
	return g.CheckDigest(ctx, reg, im, tag, digest)
}

// CheckDigest runs one digest of a tag through the gates: nil means it
// passes. A marker that pins a digest deploys that digest, whatever the
// tag names now.
func (g *Gates) CheckDigest(ctx context.Context, reg GateRegistry, im *config.Image, tag, digest string) (*HeldBack, error) {
	if im.MinAge > 0 {
		created, err := reg.Created(ctx, im.Repository, digest)
		if err != nil {
			return nil, fmt.Errorf("policy %s: minAge: %w", im.Name, err)
		}
		if until := created.Add(im.MinAge); g.now().Before(until) {
			return &HeldBack{Tag: tag, Digest: digest, Gate: GateAge, Until: until,
				Detail: fmt.Sprintf("created %s, a candidate from %s (minAge %s)", created.UTC().Format(time.RFC3339), until.UTC().Format(time.RFC3339), im.MinAge)}, nil
		}
	}
	if im.Verify != nil {
		v, err := g.verifier(im)
		if err != nil {
			return nil, err
		}
		_, err = v.Verify(withCycleRegistry(ctx, reg), im.Repository, digest)
		var ve *verify.Error
		switch {
		case err == nil:
		case errors.As(err, &ve) && ve.Unsigned():
			return &HeldBack{Tag: tag, Digest: digest, Gate: GateUnsigned, Detail: "no signature found"}, nil
		case errors.As(err, &ve):
			// One reason per signature: a wrong key beside a tampered
			// one says both.
			reasons := make([]string, len(ve.Signatures))
			for i, s := range ve.Signatures {
				reasons[i] = s.Error()
			}
			detail := strings.Join(reasons, "; ")
			if len(reasons) > 1 {
				detail = fmt.Sprintf("%d found: %s", len(reasons), detail)
			}
			return &HeldBack{Tag: tag, Digest: digest, Gate: GateInvalid, Detail: detail}, nil
		default:
			return nil, fmt.Errorf("policy %s: checking the signature of %s: %w", im.Name, tag, err)
		}
	}
	return nil, nil
}

// A Verifier is built once but each cycle reads through its own registry
// view, which travels in the context to cycleRegistry.
type cycleRegistryKey struct{}

func withCycleRegistry(ctx context.Context, reg GateRegistry) context.Context {
	return context.WithValue(ctx, cycleRegistryKey{}, reg)
}

// cycleRegistry adapts the cycle's registry view to what package verify
// reads: its errors become verify's sentinels.
type cycleRegistry struct{}

var _ verify.Registry = cycleRegistry{}

func (cycleRegistry) reg(ctx context.Context) (GateRegistry, error) {
	reg, ok := ctx.Value(cycleRegistryKey{}).(GateRegistry)
	if !ok {
		return nil, errors.New("no registry for this verification")
	}
	return reg, nil
}

func (c cycleRegistry) Manifest(ctx context.Context, repository, ref string) (verify.Manifest, error) {
	reg, err := c.reg(ctx)
	if err != nil {
		return verify.Manifest{}, err
	}
	m, err := reg.Manifest(ctx, repository, ref)
	if err != nil {
		return verify.Manifest{}, notFound(err)
	}
	return verify.Manifest{MediaType: m.MediaType, Body: m.Body}, nil
}

func (c cycleRegistry) Blob(ctx context.Context, repository, digest string) ([]byte, error) {
	reg, err := c.reg(ctx)
	if err != nil {
		return nil, err
	}
	b, err := reg.Blob(ctx, repository, digest)
	return b, notFound(err)
}

func (c cycleRegistry) Referrers(ctx context.Context, repository, digest, artifactType string) ([]v1.Descriptor, error) {
	reg, err := c.reg(ctx)
	if err != nil {
		return nil, err
	}
	refs, err := reg.Referrers(ctx, repository, digest, artifactType)
	if errors.Is(err, registry.ErrReferrersUnsupported) {
		return nil, fmt.Errorf("%w: %w", verify.ErrReferrersUnsupported, err)
	}
	return refs, notFound(err)
}

// notFound makes a registry's "not found" verify's.
func notFound(err error) error {
	if err != nil && registry.KindOf(err) == registry.KindNotFound {
		return fmt.Errorf("%w: %w", verify.ErrNotFound, err)
	}
	return err
}
