package registry

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// Operations of the fetches here, for errors.
const (
	OpManifest  = "fetch manifest"
	OpBlob      = "fetch blob"
	OpReferrers = "list referrers"
	OpCreated   = "read creation time"
)

// ErrReferrersUnsupported is returned by Referrers when the registry does
// not serve the OCI 1.1 referrers API (distribution 2 and 3 do not);
// callers fall back to the tag schema (sha256-HEX tags).
var ErrReferrersUnsupported = errors.New("the registry has no referrers API")

// Manifest is a manifest or index as the registry serves it.
type Manifest struct {
	// MediaType is the manifest's media type (from its mediaType field,
	// else the Content-Type header).
	MediaType string
	// Body is the manifest's bytes; when fetched by digest, they are
	// checked to hash to it.
	Body []byte
}

// manifestAllAccept lists every manifest media type, artifacts included.
var manifestAllAccept = []string{
	string(types.OCIImageIndex),
	string(types.DockerManifestList),
	string(types.OCIManifestSchema1),
	string(types.DockerManifestSchema2),
	"application/vnd.oci.artifact.manifest.v1+json",
}

// Manifest fetches the manifest that ref (a tag, or a digest) names in
// repository. A manifest fetched by digest must hash to it. It runs in a
// Cycle of its own; see Cycle.Manifest.
func (c *Client) Manifest(ctx context.Context, repository, ref string) (Manifest, error) {
	return c.Cycle().Manifest(ctx, repository, ref)
}

// Manifest fetches the manifest that ref (a tag, or a digest) names in
// repository, at most 4 MiB. Errors are *Error with Op OpManifest; a
// missing manifest is KindNotFound.
func (y *Cycle) Manifest(ctx context.Context, repository, ref string) (Manifest, error) {
	k, ctx, cancel, err := y.start(ctx, OpManifest, repository, ref, "")
	if err != nil {
		return Manifest{}, err
	}
	defer cancel()
	return k.manifest(ctx, ref)
}

func (k *call) manifest(ctx context.Context, ref string) (Manifest, error) {
	byDigest := strings.Contains(ref, ":")
	if byDigest {
		if err := checkDigest("the manifest reference", ref); err != nil {
			return Manifest{}, k.fail(ctx, 0, &invalidError{msg: err.Error()})
		}
	}
	var m Manifest
	err := k.do(ctx, "manifest", func(ctx context.Context, s *session) error {
		resp, body, err := s.fetch(ctx, http.MethodGet, s.base+"/manifests/"+ref, manifestAllAccept, maxManifest)
		if err != nil {
			return err
		}
		m.Body = body
		m.MediaType, _, _ = strings.Cut(resp.Header.Get("Content-Type"), ";")
		return nil
	})
	if err != nil {
		return Manifest{}, err
	}
	if byDigest && sha256Digest(m.Body) != ref && strings.HasPrefix(ref, "sha256:") {
		return Manifest{}, k.fail(ctx, 1, &badResponseError{what: "the manifest does not hash to " + ref})
	}
	var head struct {
		MediaType string `json:"mediaType"`
	}
	if err := json.Unmarshal(m.Body, &head); err != nil {
		return Manifest{}, k.fail(ctx, 1, &badResponseError{what: "decoding manifest", err: err})
	}
	if head.MediaType != "" {
		m.MediaType = head.MediaType
	}
	return m, nil
}

// Blob fetches the blob with digest in repository, at most 16 MiB, and
// checks that it hashes to digest. It runs in a Cycle of its own.
func (c *Client) Blob(ctx context.Context, repository, digest string) ([]byte, error) {
	return c.Cycle().Blob(ctx, repository, digest)
}

// Blob fetches the blob with digest in repository, at most 16 MiB (image
// configs and signature payloads are small), and checks that it hashes to
// digest. Errors are *Error with Op OpBlob.
func (y *Cycle) Blob(ctx context.Context, repository, digest string) ([]byte, error) {
	k, ctx, cancel, err := y.start(ctx, OpBlob, repository, digest, "")
	if err != nil {
		return nil, err
	}
	defer cancel()
	return k.blob(ctx, digest)
}

func (k *call) blob(ctx context.Context, digest string) ([]byte, error) {
	if err := checkDigest("the blob reference", digest); err != nil || !strings.HasPrefix(digest, "sha256:") {
		return nil, k.fail(ctx, 0, &invalidError{msg: fmt.Sprintf("blob digest %q is not a sha256 digest", digest)})
	}
	var body []byte
	err := k.do(ctx, "blob", func(ctx context.Context, s *session) error {
		_, b, err := s.fetch(ctx, http.MethodGet, s.base+"/blobs/"+digest, nil, maxConfig)
		body = b
		return err
	})
	if err != nil {
		return nil, err
	}
	if sha256Digest(body) != digest {
		return nil, k.fail(ctx, 1, &badResponseError{what: "the blob does not hash to " + digest})
	}
	return body, nil
}

// Referrers lists the manifests that refer to digest in repository through
// the OCI 1.1 referrers API, filtered by artifactType when it is not "".
// It runs in a Cycle of its own.
func (c *Client) Referrers(ctx context.Context, repository, digest, artifactType string) ([]v1.Descriptor, error) {
	return c.Cycle().Referrers(ctx, repository, digest, artifactType)
}

// Referrers lists the manifests that refer to digest in repository through
// the OCI 1.1 referrers API. A registry without the API (404, 400 or 406,
// or an answer that is not an index) gives an error wrapping
// ErrReferrersUnsupported.
func (y *Cycle) Referrers(ctx context.Context, repository, digest, artifactType string) ([]v1.Descriptor, error) {
	k, ctx, cancel, err := y.start(ctx, OpReferrers, repository, digest, "")
	if err != nil {
		return nil, err
	}
	defer cancel()
	if err := checkDigest("the referrers subject", digest); err != nil {
		return nil, k.fail(ctx, 0, &invalidError{msg: err.Error()})
	}
	var body []byte
	unsupported := false
	err = k.do(ctx, "referrers", func(ctx context.Context, s *session) error {
		u := s.base + "/referrers/" + digest
		if artifactType != "" {
			u += "?artifactType=" + url.QueryEscape(artifactType)
		}
		_, b, err := s.fetch(ctx, http.MethodGet, u, []string{string(types.OCIImageIndex)}, maxManifest)
		var te *transport.Error
		if errors.As(err, &te) && (te.StatusCode == http.StatusNotFound || te.StatusCode == http.StatusBadRequest || te.StatusCode == http.StatusNotAcceptable) {
			unsupported = true
			return nil
		}
		body = b
		return err
	})
	if err != nil {
		return nil, err
	}
	var index v1.IndexManifest
	if unsupported || json.Unmarshal(body, &index) != nil || (index.MediaType != "" && index.MediaType != types.OCIImageIndex) {
		return nil, fmt.Errorf("%s on %s: %w", repository, k.tmpl.Host, ErrReferrersUnsupported)
	}
	var out []v1.Descriptor
	for _, d := range index.Manifests {
		if artifactType == "" || d.ArtifactType == artifactType {
			out = append(out, d)
		}
	}
	return out, nil
}

// createdAnnotation is the OCI annotation of an image's creation time.
const createdAnnotation = "org.opencontainers.image.created"

// maxCreatedCache bounds the creation times a Client keeps by digest (a
// digest's content never changes, so neither does its time); past it, it
// starts afresh.
const maxCreatedCache = 50_000

// Created returns when the image with digest in repository was created. It
// runs in a Cycle of its own.
func (c *Client) Created(ctx context.Context, repository, digest string) (time.Time, error) {
	return c.Cycle().Created(ctx, repository, digest)
}

// Created returns when the image with digest (a manifest or an index) in
// repository was created: the org.opencontainers.image.created annotation
// when the manifest has one, else the image config's "created". For an
// index, every platform's image is read and the newest time counts (a
// platform rebuilt later is as new as the index). Times are cached by
// digest for the Client's life, so asking again costs no request. An image
// that records no time is an error: a minimum age cannot be checked
// without one.
func (y *Cycle) Created(ctx context.Context, repository, digest string) (time.Time, error) {
	key := repository + "@" + digest
	if t, ok := y.c.created.get(key); ok {
		return t, nil
	}
	k, ctx, cancel, err := y.start(ctx, OpCreated, repository, digest, "")
	if err != nil {
		return time.Time{}, err
	}
	defer cancel()
	t, err := k.created(ctx, digest, 0)
	if err != nil {
		return time.Time{}, err
	}
	y.c.created.put(key, t)
	return t, nil
}

func (k *call) created(ctx context.Context, digest string, depth int) (time.Time, error) {
	m, err := k.manifest(ctx, digest)
	if err != nil {
		return time.Time{}, err
	}
	var doc struct {
		Manifests   []v1.Descriptor   `json:"manifests"`
		Config      *v1.Descriptor    `json:"config"`
		Annotations map[string]string `json:"annotations"`
	}
	if err := json.Unmarshal(m.Body, &doc); err != nil {
		return time.Time{}, k.fail(ctx, 1, &badResponseError{what: "decoding manifest", err: err})
	}
	var placeholder time.Time // a time before recordedSince, seen
	seen := func(t time.Time) bool {
		if t.IsZero() {
			return false
		}
		if t.Before(recordedSince) {
			placeholder = t
			return false
		}
		return true
	}
	if t, err := time.Parse(time.RFC3339, doc.Annotations[createdAnnotation]); err == nil && seen(t) {
		return t, nil
	}
	switch {
	case doc.Config != nil:
		if doc.Config.MediaType == "application/vnd.oci.empty.v1+json" {
			break // an artifact, not an image
		}
		b, err := k.blob(ctx, doc.Config.Digest.String())
		if err != nil {
			return time.Time{}, err
		}
		var cfg struct {
			Created time.Time `json:"created"`
		}
		if err := json.Unmarshal(b, &cfg); err != nil {
			return time.Time{}, k.fail(ctx, 1, &badResponseError{what: "decoding image config", err: err})
		}
		if seen(cfg.Created) {
			return cfg.Created, nil
		}
	case doc.Manifests != nil && depth == 0:
		var newest time.Time
		for _, d := range doc.Manifests {
			if d.Platform != nil && d.Platform.OS == "unknown" {
				continue // an attestation, not an image
			}
			t, err := k.created(ctx, d.Digest.String(), depth+1)
			if err != nil {
				return time.Time{}, err
			}
			if t.After(newest) {
				newest = t
			}
		}
		if !newest.IsZero() {
			return newest, nil
		}
	}
	if !placeholder.IsZero() {
		return time.Time{}, k.fail(ctx, 1, &notFoundError{msg: fmt.Sprintf("image %s records no creation time, only %s, a placeholder such as reproducible builds write (ko, Bazel, Nix, SOURCE_DATE_EPOCH=0)", digest, placeholder.UTC().Format(time.RFC3339))})
	}
	return time.Time{}, k.fail(ctx, 1, &notFoundError{msg: fmt.Sprintf("image %s records no creation time (no %s annotation, no created in its config)", digest, createdAnnotation)})
}

// recordedSince is the earliest creation time taken as recorded: earlier
// ones (1970-01-01, the Unix epoch, which reproducible builds write) say
// nothing of when the image was built, and must not let a tag through
// minAge.
var recordedSince = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
