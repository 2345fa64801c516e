package verify

import (
	"context"
	"errors"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// Registry is what a Verifier reads from an OCI registry. Repositories are
// named as imagebump names them ("ghcr.io/acme/app", "localhost:5000/app").
// Remote implements it with go-containerregistry's remote package; imagebump's
// own registry client implements it to share its auth, rate limits and
// retries.
//
// The Verifier trusts nothing an implementation returns: it checks the
// digest of every manifest fetched by digest and of every blob, and refuses
// anything larger than MaxManifestSize or MaxBlobSize. Implementations should
// still stop reading at those sizes, so that a hostile registry cannot make
// them buffer gigabytes.
type Registry interface {
	// Manifest fetches the manifest or index that reference names in
	// repository: a tag ("sha256-<hex>.sig") or a digest ("sha256:<hex>"). It
	// must accept OCI and Docker image manifests and indexes. A missing
	// manifest or repository is an error for which errors.Is(err,
	// ErrNotFound) holds.
	Manifest(ctx context.Context, repository, reference string) (Manifest, error)

	// Blob fetches the blob with digest from repository. A missing blob is
	// an error for which errors.Is(err, ErrNotFound) holds.
	Blob(ctx context.Context, repository, digest string) ([]byte, error)

	// Referrers lists the manifests whose subject is digest, through the OCI
	// 1.1 referrers API, keeping only those of artifactType when it is not
	// empty (the Verifier filters again, since registries may ignore the
	// filter). A registry without the referrers API is an error for which
	// errors.Is(err, ErrReferrersUnsupported) holds; the Verifier then reads
	// the referrers tag schema ("sha256-<hex>" index) itself through
	// Manifest. An implementation may instead fall back to that tag on its
	// own, as Remote does.
	Referrers(ctx context.Context, repository, digest, artifactType string) ([]v1.Descriptor, error)
}

// Manifest is a manifest or index as a registry served it.
type Manifest struct {
	// MediaType is the Content-Type the registry sent, or the mediaType
	// field of Body when the registry sent none.
	MediaType string
	// Body is the manifest as served, byte for byte: its sha256 is its digest.
	Body []byte
}

// The sizes a Verifier accepts. Cosign's signature manifests and bundles are
// a few kilobytes; these bounds only stop a hostile registry.
const (
	MaxManifestSize = 4 << 20
	MaxBlobSize     = 4 << 20
)

var (
	// ErrNotFound is what a Registry wraps when a manifest, blob or
	// repository does not exist.
	ErrNotFound = errors.New("not found")
	// ErrReferrersUnsupported is what a Registry wraps when the registry has
	// no referrers API.
	ErrReferrersUnsupported = errors.New("registry has no referrers API")
)
