package verify

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/sigstore/sigstore-go/pkg/bundle"
	"github.com/sigstore/sigstore-go/pkg/root"
	sgverify "github.com/sigstore/sigstore-go/pkg/verify"
)

// The Sigstore bundle format in an OCI registry, as cosign v3 (and v2 with
// --new-bundle-format) writes it: a referrer manifest of this artifact type
// whose layer is the bundle, a DSSE envelope of an in-toto statement with
// the image digest as subject and SignPredicateType as predicate type.
const (
	BundleArtifactType = "application/vnd.dev.sigstore.bundle.v0.3+json"
	// AnnotationPredicateType on a referrer names its statement's predicate
	// type, so that attestations (SBOMs, provenance) are skipped unread.
	AnnotationPredicateType = "dev.sigstore.bundle.predicateType"
	SignPredicateType       = "https://sigstore.dev/cosign/sign/v1"
)

// isBundleType accepts the bundle media types of every version.
func isBundleType(mediaType string) bool {
	return strings.HasPrefix(mediaType, "application/vnd.dev.sigstore.bundle")
}

// emptyMediaType is the config media type of cosign's referrer manifests.
// Some registries (go-containerregistry's pkg/registry among them) report a
// referrer's config media type as its artifact type even when the manifest
// sets artifactType, so a referrer of this type may hold a bundle: its
// manifest is read to find out.
const emptyMediaType = "application/vnd.oci.empty.v1+json"

func maybeBundle(artifactType string) bool {
	return isBundleType(artifactType) || artifactType == emptyMediaType
}

// bundles checks the Sigstore bundles that refer to digest.
func (v *Verifier) bundles(ctx context.Context, repository, digest string, verdict *Error) (Result, bool, error) {
	descs, err := v.reg.Referrers(ctx, repository, digest, BundleArtifactType)
	if errors.Is(err, ErrReferrersUnsupported) {
		descs, err = v.fallbackReferrers(ctx, repository, digest)
	}
	if errors.Is(err, ErrNotFound) {
		return Result{}, false, nil
	}
	if err != nil {
		return Result{}, false, fmt.Errorf("listing signature referrers of %s@%s: %w", repository, digest, err)
	}
	checked := 0
	for _, d := range descs {
		if !maybeBundle(d.ArtifactType) {
			continue
		}
		if pt, ok := d.Annotations[AnnotationPredicateType]; ok && pt != SignPredicateType {
			continue // an attestation, not a signature
		}
		if checked++; checked > maxSignatures {
			break
		}
		src := "referrer " + d.Digest.String()
		r, serr, err := v.referrer(ctx, repository, digest, d)
		if errors.Is(err, errNotASignature) {
			continue
		}
		if err != nil {
			return Result{}, false, err
		}
		if serr != nil {
			serr.Format, serr.Source = FormatBundle, src
			verdict.Signatures = append(verdict.Signatures, serr)
			continue
		}
		r.Repository, r.Digest, r.Format, r.Source = repository, digest, FormatBundle, src
		return r, true, nil
	}
	return Result{}, false, nil
}

// fallbackReferrers reads the referrers tag schema: an index tagged
// `sha256-<hex>` that lists the referrers of sha256:<hex>.
func (v *Verifier) fallbackReferrers(ctx context.Context, repository, digest string) ([]v1.Descriptor, error) {
	m, err := v.reg.Manifest(ctx, repository, fallbackTag(digest))
	if err != nil {
		return nil, err
	}
	var idx v1.IndexManifest
	if len(m.Body) > MaxManifestSize {
		return nil, nil // no index can be that large; ignore it
	}
	if err := json.Unmarshal(m.Body, &idx); err != nil {
		// Not ours to judge: anything may carry that tag. No referrers.
		return nil, nil
	}
	return idx.Manifests, nil
}

// errNotASignature marks a bundle that is an attestation, not a signature.
var errNotASignature = errors.New("not a signature")

// referrer checks the bundle in one referrer manifest.
func (v *Verifier) referrer(ctx context.Context, repository, digest string, d v1.Descriptor) (Result, *SignatureError, error) {
	malformed := func(err error) (Result, *SignatureError, error) {
		return Result{}, &SignatureError{Reason: ReasonMalformed, Err: err}, nil
	}
	if d.Size > MaxManifestSize {
		return malformed(fmt.Errorf("manifest of %d bytes is larger than %d", d.Size, MaxManifestSize))
	}
	m, err := v.reg.Manifest(ctx, repository, d.Digest.String())
	if errors.Is(err, ErrNotFound) {
		return malformed(errors.New("the registry lists this referrer but does not have it"))
	}
	if err != nil {
		return Result{}, nil, fmt.Errorf("reading referrer %s of %s: %w", d.Digest, repository, err)
	}
	if h := sha256.Sum256(m.Body); d.Digest.Algorithm != "sha256" || hex.EncodeToString(h[:]) != d.Digest.Hex {
		return malformed(errors.New("manifest served by the registry does not match its digest"))
	}
	var man v1.Manifest
	if err := json.Unmarshal(m.Body, &man); err != nil {
		return malformed(fmt.Errorf("parsing manifest: %w", err))
	}
	if man.ArtifactType != "" && !isBundleType(man.ArtifactType) {
		return Result{}, nil, errNotASignature
	}
	var layer *v1.Descriptor
	for i := range man.Layers {
		if isBundleType(string(man.Layers[i].MediaType)) {
			layer = &man.Layers[i]
			break
		}
	}
	if layer == nil {
		if !isBundleType(man.ArtifactType) {
			return Result{}, nil, errNotASignature // an empty-config artifact of another kind
		}
		return malformed(errors.New("no layer holds a Sigstore bundle"))
	}
	data, problem, err := v.blob(ctx, repository, *layer)
	if err != nil {
		return Result{}, nil, err
	}
	if problem != nil {
		return Result{}, &SignatureError{Reason: problem.reason, Err: problem.err}, nil
	}
	return v.checkBundle(ctx, digest, data)
}

// checkBundle verifies a Sigstore bundle as an image signature for digest.
func (v *Verifier) checkBundle(ctx context.Context, digest string, data []byte) (Result, *SignatureError, error) {
	var b bundle.Bundle
	if err := b.UnmarshalJSON(data); err != nil {
		return Result{}, &SignatureError{Reason: ReasonMalformed, Err: fmt.Errorf("parsing Sigstore bundle: %w", err)}, nil
	}
	env, err := b.Envelope()
	if err != nil {
		return Result{}, &SignatureError{Reason: ReasonMalformed,
			Err: errors.New("bundle holds no DSSE envelope; cosign signs images with an in-toto statement in one")}, nil
	}
	// Attestations share the artifact type: skip any whose (not yet
	// verified) statement says it is not a signature. A forged predicate
	// type can only hide a signature, never pass one.
	if st, err := env.Statement(); err == nil && st.GetPredicateType() != SignPredicateType {
		return Result{}, nil, errNotASignature
	}
	var r Result
	var res *sgverify.VerificationResult
	if v.keys != nil {
		k, got, serr := v.verifyBundleWithKeys(&b)
		if serr != nil {
			return Result{}, serr, nil
		}
		r.KeyID, res = k.id, got
	} else {
		got, serr, err := v.verifyKeyless(ctx, &b, nil)
		if err != nil || serr != nil {
			return Result{}, serr, err
		}
		r.Issuer, r.Subject = got.Signature.Certificate.Extensions.Issuer, got.Signature.Certificate.SubjectAlternativeName
		res = got
	}
	st := res.Statement
	if st == nil {
		return Result{}, &SignatureError{Reason: ReasonMalformed, Err: errors.New("bundle holds no in-toto statement")}, nil
	}
	if st.GetPredicateType() != SignPredicateType {
		return Result{}, nil, errNotASignature
	}
	want := strings.TrimPrefix(digest, "sha256:")
	var signed string
	for _, s := range st.GetSubject() {
		got := s.GetDigest()["sha256"]
		if got == want {
			return r, nil, nil
		}
		if signed == "" && got != "" {
			signed = "sha256:" + got
		}
	}
	return Result{}, &SignatureError{Reason: ReasonDigestMismatch, SignedDigest: signed}, nil
}

// verifyBundleWithKeys verifies a key-signed bundle with each key in turn.
// A transparency log entry in the bundle is neither needed nor checked: the
// key is the trust anchor, and keys do not expire.
func (v *Verifier) verifyBundleWithKeys(b *bundle.Bundle) (publicKey, *sgverify.VerificationResult, *SignatureError) {
	if vc, err := b.VerificationContent(); err == nil && vc.Certificate() != nil {
		return publicKey{}, nil, &SignatureError{Reason: ReasonBadSignature, Err: errors.New("signed with a Fulcio certificate (keyless), not with a key")}
	}
	for _, k := range v.keys {
		key := root.NewExpiringKey(k.bundle, time.Time{}, time.Time{})
		tm := root.NewTrustedPublicKeyMaterial(func(string) (root.TimeConstrainedVerifier, error) { return key, nil })
		sv, err := sgverify.NewVerifier(tm, sgverify.WithNoObserverTimestamps())
		if err != nil {
			return publicKey{}, nil, &SignatureError{Reason: ReasonBadSignature, Err: err}
		}
		res, err := sv.Verify(b, sgverify.NewPolicy(sgverify.WithoutArtifactUnsafe(), sgverify.WithKey()))
		if err == nil {
			return k, res, nil
		}
	}
	return publicKey{}, nil, &SignatureError{Reason: ReasonBadSignature, Err: v.noKeyVerifies()}
}
