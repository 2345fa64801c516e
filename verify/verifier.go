package verify

import (
	"context"
	"crypto"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"regexp"
	"strings"
	"sync/atomic"

	"github.com/sigstore/sigstore-go/pkg/root"
	sgverify "github.com/sigstore/sigstore-go/pkg/verify"
	"github.com/sigstore/sigstore/pkg/cryptoutils"
	"github.com/sigstore/sigstore/pkg/signature"
)

// Result says which signature made a digest pass.
type Result struct {
	Repository string
	Digest     string
	Format     Format
	// Source names the signature, as in SignatureError.Source.
	Source string
	// KeyID is the sha256 of the verifying public key's DER encoding, in
	// hex, for key policies.
	KeyID string
	// Issuer and Subject are the certificate's OIDC issuer and subject, for
	// keyless policies.
	Issuer, Subject string
}

// Verifier decides whether digests carry a valid signature for one policy.
// It reads the policy's key or trusted root file once, in New: build a new
// Verifier when the config is reloaded. It is safe for concurrent use.
type Verifier struct {
	reg      Registry
	opts     Options
	identity string // the cache key's policy part
	cache    *Cache
	log      *slog.Logger

	keys []publicKey // key policies

	roots       RootSource // keyless policies
	certID      sgverify.CertificateIdentity
	rootMissing bool // no RootSource given and no Options.TrustedRoot: use the public-good one
}

type publicKey struct {
	id      string // hex sha256 of the DER
	source  string // "FILE" or "FILE (key 2)"
	pub     crypto.PublicKey
	classic signature.Verifier // as cosign loads keys for the classic format: SHA-256
	bundle  signature.Verifier // the key's default hash, as sigstore-go wants for bundles
}

// Option changes how New builds a Verifier.
type Option func(*settings)

type settings struct {
	cache  *Cache
	logger *slog.Logger
	roots  RootSource
}

// WithCache shares c between Verifiers. Default: each Verifier has its own
// Cache with default CacheOptions.
func WithCache(c *Cache) Option { return func(s *settings) { s.cache = c } }

// WithLogger logs each verdict at debug level. Default: discard.
func WithLogger(l *slog.Logger) Option { return func(s *settings) { s.logger = l } }

// WithTrustedRoot sets where keyless verification gets its trusted root.
// It conflicts with Options.TrustedRoot. Default: Options.TrustedRoot if
// set, else one PublicGood shared by the process.
func WithTrustedRoot(r RootSource) Option { return func(s *settings) { s.roots = r } }

// New returns a Verifier for opts that reads signatures through reg. It
// validates opts and reads the files they name: the public key, or the
// trusted root.
func New(opts Options, reg Registry, options ...Option) (*Verifier, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	if reg == nil {
		return nil, errors.New("verify: no registry given")
	}
	var s settings
	for _, o := range options {
		o(&s)
	}
	if s.roots != nil && opts.TrustedRoot != "" {
		return nil, errors.New("verify: WithTrustedRoot conflicts with Options.TrustedRoot; give one")
	}
	v := &Verifier{reg: reg, opts: opts, cache: s.cache, log: s.logger}
	if v.cache == nil {
		v.cache = NewCache(CacheOptions{})
	}
	if v.log == nil {
		v.log = slog.New(slog.DiscardHandler)
	}
	fp := fingerprint{Keyless: opts.Keyless, InsecureIgnoreTlog: opts.InsecureIgnoreTlog}
	if opts.Key != "" {
		keys, ids, err := loadKeys(opts.Key)
		if err != nil {
			return nil, err
		}
		v.keys, fp.Key = keys, ids
	} else {
		k := *opts.Keyless // a copy: the caller's may change
		v.opts.Keyless, fp.Keyless = &k, &k
		id, err := sgverify.NewShortCertificateIdentity(k.Issuer, anchor(k.IssuerRegexp), k.Subject, anchor(k.SubjectRegexp))
		if err != nil {
			return nil, fmt.Errorf("verify.keyless: %w", err)
		}
		v.certID = id
		switch {
		case opts.TrustedRoot != "":
			tr, err := LoadTrustedRoot(opts.TrustedRoot)
			if err != nil {
				return nil, fmt.Errorf("verify.trustedRoot: %w", err)
			}
			raw, err := tr.MarshalJSON()
			if err != nil {
				return nil, fmt.Errorf("verify.trustedRoot %s: %w", opts.TrustedRoot, err)
			}
			v.roots, fp.Root = StaticRoot{Material: tr}, sum(raw)
		case s.roots != nil:
			v.roots, fp.Root = s.roots, rootIdentity(s.roots)
		default:
			v.rootMissing, fp.Root = true, "public-good"
		}
	}
	b, err := json.Marshal(fp)
	if err != nil {
		return nil, fmt.Errorf("verify: %w", err)
	}
	v.identity = sum(b)
	return v, nil
}

// rootIdentity names a RootSource for the cache key: by content where it
// can, else uniquely, so that two sources never share verdicts by mistake.
func rootIdentity(src RootSource) string {
	switch r := src.(type) {
	case StaticRoot:
		if m, ok := r.Material.(json.Marshaler); ok {
			if b, err := m.MarshalJSON(); err == nil {
				return sum(b)
			}
		}
	case *PublicGood:
		return "tuf " + r.opts.MirrorURL + " " + sum(r.opts.Root)
	}
	return fmt.Sprintf("source %d", sourceSeq.Add(1))
}

var sourceSeq atomic.Int64

// fingerprint is what the cache key's policy part hashes: what a verdict
// depends on, by content rather than file name.
type fingerprint struct {
	Key                string   `json:",omitempty"`
	Keyless            *Keyless `json:",omitempty"`
	Root               string   `json:",omitempty"`
	InsecureIgnoreTlog bool     `json:",omitempty"`
}

func sum(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// CheckKeyFile reads the public keys of a verify.key file as a cycle
// would, so that validate reports a file that is not one.
func CheckKeyFile(path string) error {
	_, _, err := loadKeys(path)
	return err
}

// loadKeys reads every PEM public key in path.
func loadKeys(path string) ([]publicKey, string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, "", fmt.Errorf("verify.key: reading public key: %w", err)
	}
	var keys []publicKey
	rest := b
	for {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			break
		}
		n := len(keys) + 1
		where := path
		if n > 1 {
			where = fmt.Sprintf("%s (key %d)", path, n)
		}
		pub, err := cryptoutils.UnmarshalPEMToPublicKey(pem.EncodeToMemory(block))
		if err != nil {
			advice := "the block is damaged: copy cosign.pub again as `cosign generate-key-pair` wrote it"
			if strings.Contains(block.Type, "PRIVATE") {
				advice = "give the public half (cosign.pub), never the private key"
			}
			return nil, "", fmt.Errorf("verify.key: %s: PEM block %q is not a public key: %w; %s", where, block.Type, err, advice)
		}
		classic, err := signature.LoadVerifier(pub, crypto.SHA256)
		if err != nil {
			return nil, "", fmt.Errorf("verify.key: %s: %w", where, err)
		}
		bundle, err := signature.LoadDefaultVerifier(pub)
		if err != nil {
			return nil, "", fmt.Errorf("verify.key: %s: %w", where, err)
		}
		der, err := cryptoutils.MarshalPublicKeyToDER(pub)
		if err != nil {
			return nil, "", fmt.Errorf("verify.key: %s: %w", where, err)
		}
		keys = append(keys, publicKey{id: sum(der), source: where, pub: pub, classic: classic, bundle: bundle})
	}
	if len(keys) == 0 {
		return nil, "", fmt.Errorf("verify.key: %s holds no PEM public key; give cosign.pub as `cosign generate-key-pair` wrote it", path)
	}
	ids := make([]string, len(keys))
	for i, k := range keys {
		ids[i] = k.id
	}
	return keys, strings.Join(ids, ","), nil
}

var digestRE = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)

func isDigest(s string) bool {
	return strings.HasPrefix(s, "sha256:") || strings.HasPrefix(s, "sha512:")
}

// sigTag is cosign's classic signature tag for digest.
func sigTag(digest string) string { return strings.Replace(digest, ":", "-", 1) + ".sig" }

// fallbackTag is the OCI referrers tag schema's tag for digest.
func fallbackTag(digest string) string { return strings.Replace(digest, ":", "-", 1) }

// Verify reports whether the manifest digest ("sha256:<hex>") in repository
// carries a signature valid for the Verifier's policy, in either format. It
// returns the signature that passed, or an *Error (errors.Is ErrUnsigned or
// ErrInvalid) saying why none did; any other error means it could not tell.
// Verdicts are cached (see Cache); a cached one costs no request, and the
// same *Error may be returned again: do not modify it.
func (v *Verifier) Verify(ctx context.Context, repository, digest string) (Result, error) {
	if !digestRE.MatchString(digest) {
		return Result{}, fmt.Errorf("verifying %s@%s: not a sha256 manifest digest", repository, digest)
	}
	key := cacheKey{repository: repository, digest: digest, policy: v.identity}
	if r, verr, ok := v.cache.get(key); ok {
		if verr != nil {
			return Result{}, verr
		}
		return r, nil
	}
	r, err := v.verify(ctx, repository, digest)
	var verr *Error
	switch {
	case err == nil:
		v.cache.put(key, r, nil)
		v.log.DebugContext(ctx, "signature verified", "repository", repository, "digest", digest,
			"format", r.Format.String(), "source", r.Source)
	case errors.As(err, &verr):
		v.cache.put(key, Result{}, verr)
		v.log.DebugContext(ctx, "signature refused", "repository", repository, "digest", digest, "verdict", verr.Error())
	}
	return r, err
}

func (v *Verifier) verify(ctx context.Context, repository, digest string) (Result, error) {
	verdict := &Error{Repository: repository, Digest: digest}
	r, ok, err := v.classic(ctx, repository, digest, verdict)
	if err != nil || ok {
		return r, err
	}
	r, ok, err = v.bundles(ctx, repository, digest, verdict)
	if err != nil || ok {
		return r, err
	}
	return Result{}, verdict
}

// trustedMaterial returns the keyless policy's trusted root.
func (v *Verifier) trustedMaterial(ctx context.Context) (root.TrustedMaterial, error) {
	src := v.roots
	if v.rootMissing {
		src = defaultPublicGood(v.log)
	}
	return src.TrustedMaterial(ctx)
}
