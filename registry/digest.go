package registry

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// Size limits for what Digest reads: distribution refuses manifests over
// 4 MiB; image configs with a long history can be larger.
const (
	maxManifest = 4 << 20
	maxConfig   = 16 << 20
)

// manifestAccept lists the manifest media types Digest understands.
var manifestAccept = []string{
	string(types.OCIImageIndex),
	string(types.DockerManifestList),
	string(types.OCIManifestSchema1),
	string(types.DockerManifestSchema2),
}

// Digest returns the digest ("sha256:...") of repository:tag. It runs in
// a Cycle of its own; see Cycle.Digest.
func (c *Client) Digest(ctx context.Context, repository, tag, platform string) (string, error) {
	return c.Cycle().Digest(ctx, repository, tag, platform)
}

// Digest returns the digest ("sha256:...") of repository:tag.
//
// With platform "", it is the digest of what the tag points at: for a
// multi-platform image, the index's digest. It comes from a HEAD request's
// Docker-Content-Digest header; when HEAD fails or the header is missing or
// malformed, the manifest is fetched and hashed instead.
//
// With a platform such as "linux/arm64" or "linux/arm/v7" (os/arch[/variant],
// with an optional ":osversion"), it is the digest of that platform's image
// manifest: picked from the index, or, for a single-platform image, the
// image's own digest after its config confirms the platform. A variant left
// out matches any, preferring the architecture's default (arm64 v8, arm v7);
// "arm64" and "arm64/v8" are the same platform. A platform the image lacks
// is a KindNotFound error naming the platforms it has.
//
// Every digest a registry sends is checked before use (see checkDigest):
// a malformed one is a KindBadResponse error, never returned nor put in a
// URL. The whole resolution is bounded by the host's RepositoryTimeout.
//
// Errors are *Error with Op OpResolveDigest.
func (y *Cycle) Digest(ctx context.Context, repository, tag, platform string) (string, error) {
	c := y.c
	k, ctx, cancel, err := y.start(ctx, OpResolveDigest, repository, tag, platform)
	if err != nil {
		return "", err
	}
	defer cancel()
	if _, err := name.NewTag(k.repo.Name()+":"+tag, name.StrictValidation); err != nil || tag == "" {
		return "", k.fail(ctx, 0, &invalidError{msg: fmt.Sprintf("tag %q is not a valid tag", tag)})
	}
	var want *v1.Platform
	if platform != "" {
		if want, err = parsePlatform(platform); err != nil {
			return "", k.fail(ctx, 0, err)
		}
	}
	s, err := k.session(ctx)
	if err != nil {
		return "", err
	}
	manifestURL := s.base + "/manifests/" + tag

	if want == nil {
		var digest string
		err := k.do(ctx, "manifest head", func(ctx context.Context, s *session) error {
			resp, _, err := s.fetch(ctx, http.MethodHead, manifestURL, manifestAccept, 0)
			if err != nil {
				return err
			}
			digest = resp.Header.Get("Docker-Content-Digest")
			return nil
		})
		switch {
		case err == nil && validDigest(digest):
			return digest, nil
		case err == nil:
			c.log.Debug("HEAD gave no usable Docker-Content-Digest; fetching the manifest", "repository", repository, "tag", tag)
		case !headFallback(KindOf(err)):
			return "", err
		default:
			c.log.Debug("HEAD of manifest failed; fetching it", "repository", repository, "tag", tag, "kind", KindOf(err).String())
		}
	}

	var (
		body      []byte
		mediaType string
	)
	err = k.do(ctx, "manifest", func(ctx context.Context, s *session) error {
		resp, b, err := s.fetch(ctx, http.MethodGet, manifestURL, manifestAccept, maxManifest)
		if err != nil {
			return err
		}
		body, mediaType = b, resp.Header.Get("Content-Type")
		return nil
	})
	if err != nil {
		return "", err
	}
	// Hash only what is a manifest: a proxy's error page served with 200
	// must not become a digest.
	var m manifest
	if err := json.Unmarshal(body, &m); err != nil {
		return "", k.fail(ctx, 1, &badResponseError{what: "decoding manifest", err: err})
	}
	if m.MediaType != "" {
		mediaType = m.MediaType
	}
	mediaType, _, _ = strings.Cut(mediaType, ";")
	index := m.Manifests != nil || isIndex(mediaType)
	if !index && m.Config == nil {
		return "", k.fail(ctx, 1, &badResponseError{what: fmt.Sprintf("manifest of media type %q is neither an index nor an image", mediaType)})
	}
	digest := sha256Digest(body)
	switch {
	case want == nil:
		return digest, nil
	case index:
		d, err := pickPlatform(m.Manifests, *want)
		if err == nil {
			err = checkDigest("the index entry for "+want.String(), d)
		}
		if err != nil {
			return "", k.fail(ctx, 1, err)
		}
		return d, nil
	default:
		if err := checkDigest("the image's config", m.Config.Digest); err != nil {
			return "", k.fail(ctx, 1, err)
		}
		have, err := c.imagePlatform(ctx, k, s.base+"/blobs/"+m.Config.Digest)
		if err != nil {
			return "", err
		}
		if !platformMatches(*want, have) {
			return "", k.fail(ctx, 1, &notFoundError{msg: singlePlatformMismatch(have)})
		}
		return digest, nil
	}
}

// singlePlatformMismatch says why a single-platform image whose config
// names platform have is not the one asked for.
func singlePlatformMismatch(have v1.Platform) string {
	if have.OS == "" || have.Architecture == "" {
		return fmt.Sprintf("tag is a single-platform image whose config names no platform (os %q, architecture %q)", have.OS, have.Architecture)
	}
	return "tag is a single-platform image for " + have.String()
}

// headFallback reports whether a HEAD that failed with kind is worth a GET:
// some registries answer HEAD badly, and GET's error body says more. Where
// GET would fail the same way (auth, rate limit, network), it is not.
func headFallback(kind Kind) bool {
	switch kind {
	case KindNotFound, KindBadResponse, KindServer:
		return true
	}
	return false
}

// manifest holds the fields of an image manifest or index that Digest uses.
// Digests are decoded as strings and checked by checkDigest when used, so
// that the error says which one is malformed.
type manifest struct {
	MediaType string       `json:"mediaType"`
	Manifests []descriptor `json:"manifests"`
	Config    *descriptor  `json:"config"`
}

// descriptor is the part of an OCI descriptor Digest uses.
type descriptor struct {
	Digest   string       `json:"digest"`
	Platform *v1.Platform `json:"platform,omitempty"`
}

func isIndex(mediaType string) bool {
	return types.MediaType(mediaType).IsIndex()
}

// imagePlatform fetches an image config and returns its platform.
func (c *Client) imagePlatform(ctx context.Context, k *call, configURL string) (v1.Platform, error) {
	var p v1.Platform
	err := k.do(ctx, "config", func(ctx context.Context, s *session) error {
		_, body, err := s.fetch(ctx, http.MethodGet, configURL, nil, maxConfig)
		if err != nil {
			return err
		}
		var cfg struct {
			OS           string `json:"os"`
			Architecture string `json:"architecture"`
			Variant      string `json:"variant"`
			OSVersion    string `json:"os.version"`
		}
		if err := json.Unmarshal(body, &cfg); err != nil {
			return &badResponseError{what: "decoding image config", err: err}
		}
		p = v1.Platform{OS: cfg.OS, Architecture: cfg.Architecture, Variant: cfg.Variant, OSVersion: cfg.OSVersion}
		return nil
	})
	return p, err
}

func sha256Digest(b []byte) string {
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// validDigest reports whether d is a well-formed digest worth returning.
func validDigest(d string) bool {
	return checkDigest("", d) == nil && strings.HasPrefix(d, "sha256:")
}

// digestAlgorithm and digestEncoded are the grammar of a digest in the OCI
// image specification: algorithm ":" encoded.
var (
	digestAlgorithm = regexp.MustCompile(`^[a-z0-9]+(?:[.+_-][a-z0-9]+)*$`)
	digestEncoded   = regexp.MustCompile(`^[a-zA-Z0-9=_-]+$`)
)

// digestHexLen is the length of the hex encoding of each algorithm a
// registry may use.
var digestHexLen = map[string]int{"sha256": 64, "sha512": 128}

// checkDigest checks a digest a registry sent, for what (such as "the
// image's config"), before it is used or returned: it must follow the
// algorithm:encoded grammar, name sha256 or sha512, and hold exactly as
// many lowercase hex digits as that algorithm makes.
func checkDigest(what, d string) error {
	alg, enc, ok := strings.Cut(d, ":")
	var why string
	switch {
	case !ok || !digestAlgorithm.MatchString(alg) || !digestEncoded.MatchString(enc):
		why = "not algorithm:encoded"
	case digestHexLen[alg] == 0:
		why = fmt.Sprintf("algorithm %q is not sha256 or sha512", alg)
	case len(enc) != digestHexLen[alg] || strings.Trim(enc, "0123456789abcdef") != "":
		why = fmt.Sprintf("a %s digest is %d lowercase hex digits", alg, digestHexLen[alg])
	default:
		return nil
	}
	shown := d
	if len(shown) > 80 {
		shown = shown[:80] + "..."
	}
	return &badResponseError{what: fmt.Sprintf("malformed digest %q for %s: %s", shown, what, why)}
}

// parsePlatform parses "os/arch[/variant][:osversion]".
func parsePlatform(s string) (*v1.Platform, error) {
	p, err := v1.ParsePlatform(s)
	if err != nil || p.OS == "" || p.Architecture == "" || strings.ContainsAny(s, " \t") {
		return nil, &invalidError{msg: fmt.Sprintf("platform %q is not os/arch[/variant]", s)}
	}
	norm := normalizePlatform(*p)
	return &norm, nil
}

// archAliases maps the names uname and some tools use to Go's, which image
// indexes use.
var archAliases = map[string]string{
	"x86_64":  "amd64",
	"x86-64":  "amd64",
	"aarch64": "arm64",
	"i386":    "386",
}

// defaultVariants are the variants an architecture has when none is named.
var defaultVariants = map[string]string{
	"arm64": "v8",
	"arm":   "v7",
	"amd64": "v1",
}

func normalizePlatform(p v1.Platform) v1.Platform {
	p.OS = strings.ToLower(p.OS)
	p.Architecture = strings.ToLower(p.Architecture)
	if a, ok := archAliases[p.Architecture]; ok {
		p.Architecture = a
	}
	p.Variant = strings.ToLower(p.Variant)
	if p.Variant != "" && p.Variant[0] >= '0' && p.Variant[0] <= '9' {
		p.Variant = "v" + p.Variant
	}
	return p
}

func variantOf(p v1.Platform) string {
	if p.Variant != "" {
		return p.Variant
	}
	return defaultVariants[p.Architecture]
}

// platformMatches reports whether have satisfies want: same OS and
// architecture, the same variant if want names one, and the same OS version
// if want names one.
func platformMatches(want, have v1.Platform) bool {
	want, have = normalizePlatform(want), normalizePlatform(have)
	if want.OS != have.OS || want.Architecture != have.Architecture {
		return false
	}
	if want.Variant != "" && variantOf(want) != variantOf(have) {
		return false
	}
	return want.OSVersion == "" || want.OSVersion == have.OSVersion
}

// pickPlatform returns the digest of the index entry for want. Of several
// matches, it prefers the architecture's default variant, then the first
// listed, so that the choice never depends on anything but the index.
func pickPlatform(descs []descriptor, want v1.Platform) (string, error) {
	var matches []descriptor
	for _, d := range descs {
		if d.Platform != nil && platformMatches(want, *d.Platform) {
			matches = append(matches, d)
		}
	}
	if len(matches) == 0 {
		var have []string
		for _, d := range descs {
			if d.Platform != nil && d.Platform.OS != "unknown" {
				have = append(have, d.Platform.String())
			}
		}
		slices.Sort(have)
		have = slices.Compact(have)
		if len(have) == 0 {
			return "", &notFoundError{msg: fmt.Sprintf("index has no platform %s", want.String())}
		}
		return "", &notFoundError{msg: fmt.Sprintf("index has no platform %s (it has %s)", want.String(), strings.Join(have, ", "))}
	}
	want = normalizePlatform(want)
	for _, d := range matches {
		if variantOf(normalizePlatform(*d.Platform)) == variantOf(want) {
			return d.Digest, nil
		}
	}
	return matches[0].Digest, nil
}
