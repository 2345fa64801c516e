package verify

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"

	"github.com/imagebump/imagebump/internal/redact"
)

// Remote is a Registry backed by go-containerregistry's remote package. It
// serves tests and any caller without imagebump's registry client.
//
// Its Referrers falls back to the referrers tag schema by itself (remote's
// behaviour) when the registry has no referrers API, so it never returns
// ErrReferrersUnsupported.
//
// One remote.Puller serves every call, so that each repository is pinged
// and authenticated once, not once per request. Set the fields before the
// first call; a Remote is safe for concurrent use.
type Remote struct {
	// NameOptions parse repository names; name.Insecure allows plain HTTP
	// to hosts other than localhost and 127.0.0.1 (which ggcr always reaches
	// over HTTP). Default: none.
	NameOptions []name.Option
	// Options build the remote.Puller: auth (remote.WithAuth,
	// remote.WithAuthFromKeychain), transport, user agent. Default: none,
	// which is anonymous access over http.DefaultTransport. Each call
	// carries its own context.
	Options []remote.Option

	once   sync.Once
	puller *remote.Puller
	err    error
}

var _ Registry = (*Remote)(nil)

// NewRemote returns a Remote that passes opts to every remote call.
func NewRemote(opts ...remote.Option) *Remote {
	return &Remote{Options: opts}
}

func (r *Remote) pull(repository string) (*remote.Puller, name.Repository, error) {
	r.once.Do(func() {
		r.puller, r.err = remote.NewPuller(r.Options...)
	})
	if r.err != nil {
		return nil, name.Repository{}, fmt.Errorf("configuring go-containerregistry: %w", r.err)
	}
	repo, err := name.NewRepository(repository, r.NameOptions...)
	if err != nil {
		return nil, name.Repository{}, fmt.Errorf("parsing repository %q: %w", repository, err)
	}
	return r.puller, repo, nil
}

// Manifest implements Registry.
func (r *Remote) Manifest(ctx context.Context, repository, reference string) (Manifest, error) {
	p, repo, err := r.pull(repository)
	if err != nil {
		return Manifest{}, err
	}
	var ref name.Reference
	if isDigest(reference) {
		ref = repo.Digest(reference)
	} else {
		ref = repo.Tag(reference)
	}
	desc, err := p.Get(ctx, ref)
	if err != nil {
		return Manifest{}, fmt.Errorf("fetching manifest %s: %w", ref, remoteError(err))
	}
	return Manifest{MediaType: string(desc.MediaType), Body: desc.Manifest}, nil
}

// Blob implements Registry. It reads at most MaxBlobSize+1 bytes, so that
// the Verifier sees an oversized blob as such.
func (r *Remote) Blob(ctx context.Context, repository, digest string) ([]byte, error) {
	p, repo, err := r.pull(repository)
	if err != nil {
		return nil, err
	}
	ref := repo.Digest(digest)
	layer, err := p.Layer(ctx, ref)
	if err != nil {
		return nil, fmt.Errorf("fetching blob %s: %w", ref, remoteError(err))
	}
	rc, err := layer.Compressed()
	if err != nil {
		return nil, fmt.Errorf("fetching blob %s: %w", ref, remoteError(err))
	}
	defer rc.Close()
	b, err := io.ReadAll(io.LimitReader(rc, MaxBlobSize+1))
	if err != nil {
		return nil, fmt.Errorf("reading blob %s: %w", ref, remoteError(err))
	}
	return b, nil
}

// Referrers implements Registry with remote.Referrers, which reads the
// referrers tag schema when the registry has no referrers API. It ignores
// artifactType: remote would only filter on the client, and by the type the
// registry reports, which some registries get wrong.
func (r *Remote) Referrers(ctx context.Context, repository, digest, _ string) ([]v1.Descriptor, error) {
	p, repo, err := r.pull(repository)
	if err != nil {
		return nil, err
	}
	ref := repo.Digest(digest)
	idx, err := remote.Referrers(ref, remote.Reuse(p), remote.WithContext(ctx))
	if err != nil {
		return nil, fmt.Errorf("listing referrers of %s: %w", ref, remoteError(err))
	}
	m, err := idx.IndexManifest()
	if err != nil {
		return nil, fmt.Errorf("reading referrers of %s: %w", ref, remoteError(err))
	}
	return m.Manifests, nil
}

// remoteError marks a registry's "not found" with ErrNotFound and strips
// credentials from any URL in the text.
func remoteError(err error) error {
	var terr *transport.Error
	if errors.As(err, &terr) && notFound(terr) {
		return &redactedError{err: err, notFound: true}
	}
	return &redactedError{err: err}
}

func notFound(terr *transport.Error) bool {
	if terr.StatusCode == http.StatusNotFound {
		return true
	}
	for _, d := range terr.Errors {
		switch d.Code {
		case transport.ManifestUnknownErrorCode, transport.NameUnknownErrorCode, transport.BlobUnknownErrorCode:
			return true
		}
	}
	return false
}

// redactedError is a go-containerregistry error whose text went through
// redact.Text.
type redactedError struct {
	err      error
	notFound bool
}

func (e *redactedError) Error() string { return redact.Text(e.err.Error()) }

func (e *redactedError) Unwrap() []error {
	if e.notFound {
		return []error{e.err, ErrNotFound}
	}
	return []error{e.err}
}
