package signed

import (
	"bytes"
	"crypto"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/secure-systems-lab/go-securesystemslib/dsse"
	protobundle "github.com/sigstore/protobuf-specs/gen/pb-go/bundle/v1"
	protocommon "github.com/sigstore/protobuf-specs/gen/pb-go/common/v1"
	protodsse "github.com/sigstore/protobuf-specs/gen/pb-go/dsse"
	protorekor "github.com/sigstore/protobuf-specs/gen/pb-go/rekor/v1"
	"github.com/sigstore/sigstore-go/pkg/bundle"
	"github.com/sigstore/sigstore-go/pkg/root"
	"github.com/sigstore/sigstore-go/pkg/testing/ca"
	"github.com/sigstore/sigstore-go/pkg/tlog"
	"github.com/sigstore/sigstore/pkg/cryptoutils"
	"github.com/sigstore/sigstore/pkg/signature"
	sigdsse "github.com/sigstore/sigstore/pkg/signature/dsse"
)

// What cosign writes, spelled out here rather than taken from the package
// under test, so that a typo there cannot hide in both.
const (
	simpleSigningMediaType = "application/vnd.dev.cosign.simplesigning.v1+json"
	bundleMediaType        = "application/vnd.dev.sigstore.bundle.v0.3+json"
	emptyMediaType         = "application/vnd.oci.empty.v1+json"
	inTotoPayloadType      = "application/vnd.in-toto+json"

	// SignPredicateType is the predicate type of a cosign v3 image signature.
	SignPredicateType = "https://sigstore.dev/cosign/sign/v1"
)

// Spec says who signs, and what to get wrong on purpose.
type Spec struct {
	// Key signs with a key; CA signs keyless, with a fresh leaf
	// certificate for Subject (an email SAN) from Issuer. Set one.
	Key     *Key
	CA      *CA
	Subject string
	Issuer  string
	// SignedDigest is the digest the signed payload names. Default: the
	// digest the signature is attached to.
	SignedDigest string
	// Tamper changes the payload after it was signed.
	Tamper bool
	// SignedAt is the Rekor integrated time (keyless). Default: five
	// minutes from now, inside the leaf certificate's ten minutes.
	SignedAt time.Time
	// NoTlog leaves the Rekor entry out (keyless).
	NoTlog bool
	// Timestamp adds an RFC 3161 timestamp from the virtual timestamp
	// authority, made now (keyless).
	Timestamp bool
	// PredicateType is the bundle statement's predicate type. Default:
	// SignPredicateType; anything else makes an attestation.
	PredicateType string
}

func (s Spec) signedDigest(digest string) string {
	if s.SignedDigest != "" {
		return s.SignedDigest
	}
	return digest
}

func (s Spec) signedAt() time.Time {
	if !s.SignedAt.IsZero() {
		return s.SignedAt
	}
	return time.Now().Add(5 * time.Minute)
}

// simpleSigning returns cosign's payload for digest in repository.
func simpleSigning(t testing.TB, repository, digest string, tampered bool) []byte {
	t.Helper()
	p := map[string]any{
		"critical": map[string]any{
			"identity": map[string]string{"docker-reference": repository},
			"image":    map[string]string{"docker-manifest-digest": digest},
			"type":     "cosign container image signature",
		},
		"optional": nil,
	}
	if tampered {
		p["optional"] = map[string]string{"tampered": "after signing"}
	}
	b, err := json.Marshal(p)
	if err != nil {
		t.Fatalf("signed: %v", err)
	}
	return b
}

// SignClassic adds a signature of digest to its `sha256-<hex>.sig` tag in
// repository, after the signatures already there, as `cosign sign
// --new-bundle-format=false` does.
func SignClassic(t testing.TB, opts []remote.Option, repository, digest string, s Spec) {
	t.Helper()
	payload := simpleSigning(t, repository, s.signedDigest(digest), false)
	annotations := map[string]string{}
	switch {
	case s.Key != nil:
		signer, err := signature.LoadECDSASigner(s.Key.Private, crypto.SHA256)
		if err != nil {
			t.Fatalf("signed: %v", err)
		}
		sig, err := signer.SignMessage(bytes.NewReader(payload))
		if err != nil {
			t.Fatalf("signed: signing: %v", err)
		}
		annotations["dev.cosignproject.cosign/signature"] = base64.StdEncoding.EncodeToString(sig)
	case s.CA != nil:
		ent, err := s.CA.VS.SignAtTime(s.Subject, s.Issuer, payload, s.signedAt())
		if err != nil {
			t.Fatalf("signed: keyless signing: %v", err)
		}
		s.CA.classicAnnotations(t, ent, s, annotations)
	default:
		t.Fatalf("signed: Spec has neither Key nor CA")
	}
	if s.Tamper {
		payload = simpleSigning(t, repository, s.signedDigest(digest), true)
	}

	tag := parseRepository(t, repository).Tag(sigTag(digest))
	var base v1.Image = mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	if img, err := remote.Image(tag, withContext(t, opts)...); err == nil {
		base = img
	}
	img, err := mutate.Append(base, mutate.Addendum{
		Layer:       static.NewLayer(payload, simpleSigningMediaType),
		Annotations: annotations,
		MediaType:   simpleSigningMediaType,
	})
	if err != nil {
		t.Fatalf("signed: %v", err)
	}
	if err := remote.Write(tag, img, withContext(t, opts)...); err != nil {
		t.Fatalf("signed: pushing %s: %v", tag, err)
	}
}

// classicAnnotations writes the certificate, chain, Rekor bundle and
// timestamp annotations cosign puts on a keyless classic signature.
func (c *CA) classicAnnotations(t testing.TB, ent *ca.TestEntity, s Spec, annotations map[string]string) {
	t.Helper()
	sc, err := ent.SignatureContent()
	if err != nil {
		t.Fatalf("signed: %v", err)
	}
	annotations["dev.cosignproject.cosign/signature"] = base64.StdEncoding.EncodeToString(sc.Signature())
	vc, err := ent.VerificationContent()
	if err != nil {
		t.Fatalf("signed: %v", err)
	}
	annotations["dev.sigstore.cosign/certificate"] = string(certPEM(t, vc.Certificate()))
	if fca, ok := c.VS.FulcioCertificateAuthorities()[0].(*root.FulcioCertificateAuthority); ok {
		var chain []byte
		for _, cert := range append(append([]*x509.Certificate{}, fca.Intermediates...), fca.Root) {
			chain = append(chain, certPEM(t, cert)...)
		}
		annotations["dev.sigstore.cosign/chain"] = string(chain)
	}
	if !s.NoTlog {
		tle := c.tlogEntry(t, ent)
		rb := map[string]any{
			"SignedEntryTimestamp": tle.InclusionPromise.SignedEntryTimestamp,
			"Payload": map[string]any{
				"body":           tle.CanonicalizedBody,
				"integratedTime": tle.IntegratedTime,
				"logIndex":       tle.LogIndex,
				"logID":          hex.EncodeToString(tle.LogId.KeyId),
			},
		}
		b, err := json.Marshal(rb)
		if err != nil {
			t.Fatalf("signed: %v", err)
		}
		annotations["dev.sigstore.cosign/bundle"] = string(b)
	}
	if s.Timestamp {
		b, err := json.Marshal(map[string][]byte{"SignedRFC3161Timestamp": timestamp(t, ent)})
		if err != nil {
			t.Fatalf("signed: %v", err)
		}
		annotations["dev.sigstore.cosign/rfc3161timestamp"] = string(b)
	}
}

func timestamp(t testing.TB, ent *ca.TestEntity) []byte {
	t.Helper()
	ts, err := ent.Timestamps()
	if err != nil || len(ts) == 0 {
		t.Fatalf("signed: no timestamp from the virtual Sigstore: %v", err)
	}
	return ts[0]
}

// tlogEntry returns ent's Rekor entry with its signed entry timestamp,
// which the virtual Sigstore computes but does not put in the entry's
// protobuf form: it is signed again here over the same fields.
func (c *CA) tlogEntry(t testing.TB, ent *ca.TestEntity) *protorekor.TransparencyLogEntry {
	t.Helper()
	entries, err := ent.TlogEntries()
	if err != nil || len(entries) == 0 {
		t.Fatalf("signed: no Rekor entry from the virtual Sigstore: %v", err)
	}
	tle := entries[0].TransparencyLogEntry()
	var kind struct {
		Kind       string `json:"kind"`
		APIVersion string `json:"apiVersion"`
	}
	if err := json.Unmarshal(tle.CanonicalizedBody, &kind); err != nil {
		t.Fatalf("signed: Rekor entry body: %v", err)
	}
	set, err := c.VS.RekorSignPayload(tlog.RekorPayload{
		Body:           base64.StdEncoding.EncodeToString(tle.CanonicalizedBody),
		IntegratedTime: tle.IntegratedTime,
		LogIndex:       tle.LogIndex,
		LogID:          hex.EncodeToString(tle.LogId.KeyId),
	})
	if err != nil {
		t.Fatalf("signed: signing the entry timestamp: %v", err)
	}
	return &protorekor.TransparencyLogEntry{
		LogIndex:          tle.LogIndex,
		LogId:             tle.LogId,
		KindVersion:       &protorekor.KindVersion{Kind: kind.Kind, Version: kind.APIVersion},
		IntegratedTime:    tle.IntegratedTime,
		InclusionPromise:  &protorekor.InclusionPromise{SignedEntryTimestamp: set},
		InclusionProof:    tle.InclusionProof,
		CanonicalizedBody: tle.CanonicalizedBody,
	}
}

func certPEM(t testing.TB, cert *x509.Certificate) []byte {
	t.Helper()
	b, err := cryptoutils.MarshalCertificateToPEM(cert)
	if err != nil {
		t.Fatalf("signed: %v", err)
	}
	return b
}

// statement returns cosign's in-toto statement for digest.
func statement(t testing.TB, repository, digest, predicateType string, tampered bool) []byte {
	t.Helper()
	predicate := map[string]any{}
	if tampered {
		predicate["tampered"] = "after signing"
	}
	b, err := json.Marshal(map[string]any{
		"_type":         "https://in-toto.io/Statement/v1",
		"subject":       []map[string]any{{"name": repository, "digest": map[string]string{"sha256": hexOf(digest)}}},
		"predicateType": predicateType,
		"predicate":     predicate,
	})
	if err != nil {
		t.Fatalf("signed: %v", err)
	}
	return b
}

// SignBundle attaches a Sigstore bundle signing digest to it as an OCI 1.1
// referrer, as `cosign sign` (v3) does, and returns the referrer's digest.
// On a registry without the referrers API, go-containerregistry adds it to
// the `sha256-<hex>` tag-schema index instead.
func SignBundle(t testing.TB, opts []remote.Option, repository, digest string, s Spec) string {
	t.Helper()
	predicateType := s.PredicateType
	if predicateType == "" {
		predicateType = SignPredicateType
	}
	stmt := statement(t, repository, s.signedDigest(digest), predicateType, false)
	pb := &protobundle.Bundle{
		MediaType:            bundleMediaType,
		VerificationMaterial: &protobundle.VerificationMaterial{},
	}
	var env *dsse.Envelope
	switch {
	case s.Key != nil:
		signer, err := signature.LoadECDSASigner(s.Key.Private, crypto.SHA256)
		if err != nil {
			t.Fatalf("signed: %v", err)
		}
		es, err := dsse.NewEnvelopeSigner(&sigdsse.SignerAdapter{SignatureSigner: signer, Pub: &s.Key.Private.PublicKey})
		if err != nil {
			t.Fatalf("signed: %v", err)
		}
		if env, err = es.SignPayload(t.Context(), inTotoPayloadType, stmt); err != nil {
			t.Fatalf("signed: signing: %v", err)
		}
		der, err := x509.MarshalPKIXPublicKey(&s.Key.Private.PublicKey)
		if err != nil {
			t.Fatalf("signed: %v", err)
		}
		h := sha256.Sum256(der)
		pb.VerificationMaterial.Content = &protobundle.VerificationMaterial_PublicKey{
			PublicKey: &protocommon.PublicKeyIdentifier{Hint: base64.StdEncoding.EncodeToString(h[:])},
		}
	case s.CA != nil:
		ent, err := s.CA.VS.AttestAtTime(s.Subject, s.Issuer, stmt, s.signedAt(), true)
		if err != nil {
			t.Fatalf("signed: keyless signing: %v", err)
		}
		sc, err := ent.SignatureContent()
		if err != nil {
			t.Fatalf("signed: %v", err)
		}
		env = sc.EnvelopeContent().RawEnvelope()
		vc, err := ent.VerificationContent()
		if err != nil {
			t.Fatalf("signed: %v", err)
		}
		pb.VerificationMaterial.Content = &protobundle.VerificationMaterial_Certificate{
			Certificate: &protocommon.X509Certificate{RawBytes: vc.Certificate().Raw},
		}
		if !s.NoTlog {
			pb.VerificationMaterial.TlogEntries = []*protorekor.TransparencyLogEntry{s.CA.tlogEntry(t, ent)}
		}
		if s.Timestamp {
			pb.VerificationMaterial.TimestampVerificationData = &protobundle.TimestampVerificationData{
				Rfc3161Timestamps: []*protocommon.RFC3161SignedTimestamp{{SignedTimestamp: timestamp(t, ent)}},
			}
		}
	default:
		t.Fatalf("signed: Spec has neither Key nor CA")
	}
	pe := &protodsse.Envelope{PayloadType: env.PayloadType}
	var err error
	if pe.Payload, err = base64.StdEncoding.DecodeString(env.Payload); err != nil {
		t.Fatalf("signed: %v", err)
	}
	for _, sig := range env.Signatures {
		raw, err := base64.StdEncoding.DecodeString(sig.Sig)
		if err != nil {
			t.Fatalf("signed: %v", err)
		}
		pe.Signatures = append(pe.Signatures, &protodsse.Signature{Sig: raw, Keyid: sig.KeyID})
	}
	if s.Tamper {
		pe.Payload = statement(t, repository, s.signedDigest(digest), predicateType, true)
	}
	pb.Content = &protobundle.Bundle_DsseEnvelope{DsseEnvelope: pe}
	data, err := (&bundle.Bundle{Bundle: pb}).MarshalJSON()
	if err != nil {
		t.Fatalf("signed: encoding the bundle: %v", err)
	}
	return PushReferrer(t, opts, repository, digest, bundleMediaType, data, map[string]string{
		"dev.sigstore.bundle.content":       "dsse-envelope",
		"dev.sigstore.bundle.predicateType": predicateType,
	})
}

// PushReferrer pushes an OCI 1.1 artifact manifest of artifactType whose
// subject is digest and whose one layer is data, and returns its digest.
func PushReferrer(t testing.TB, opts []remote.Option, repository, digest, artifactType string, data []byte, annotations map[string]string) string {
	t.Helper()
	repo := parseRepository(t, repository)
	opts = withContext(t, opts)
	config := static.NewLayer([]byte("{}"), emptyMediaType)
	layer := static.NewLayer(data, types.MediaType(artifactType))
	for _, l := range []v1.Layer{config, layer} {
		if err := remote.WriteLayer(repo, l, opts...); err != nil {
			t.Fatalf("signed: pushing a blob to %s: %v", repo, err)
		}
	}
	subject, err := remote.Head(repo.Digest(digest), opts...)
	if err != nil {
		t.Fatalf("signed: %v", err)
	}
	m := v1.Manifest{
		SchemaVersion: 2,
		MediaType:     types.OCIManifestSchema1,
		ArtifactType:  artifactType,
		Config:        descriptor(t, config, emptyMediaType),
		Layers:        []v1.Descriptor{descriptor(t, layer, types.MediaType(artifactType))},
		Subject:       &v1.Descriptor{MediaType: subject.MediaType, Size: subject.Size, Digest: subject.Digest},
		Annotations:   annotations,
	}
	raw, err := json.Marshal(m)
	if err != nil {
		t.Fatalf("signed: %v", err)
	}
	h := sha256.Sum256(raw)
	d := "sha256:" + hex.EncodeToString(h[:])
	if err := remote.Put(repo.Digest(d), rawManifest{raw: raw, mediaType: types.OCIManifestSchema1}, opts...); err != nil {
		t.Fatalf("signed: pushing a referrer of %s: %v", digest, err)
	}
	return d
}

func descriptor(t testing.TB, l v1.Layer, mt types.MediaType) v1.Descriptor {
	t.Helper()
	d, err := l.Digest()
	if err != nil {
		t.Fatalf("signed: %v", err)
	}
	size, err := l.Size()
	if err != nil {
		t.Fatalf("signed: %v", err)
	}
	return v1.Descriptor{MediaType: mt, Size: size, Digest: d}
}

type rawManifest struct {
	raw       []byte
	mediaType types.MediaType
}

func (r rawManifest) RawManifest() ([]byte, error)        { return r.raw, nil }
func (r rawManifest) MediaType() (types.MediaType, error) { return r.mediaType, nil }

// sigTag is cosign's classic signature tag for digest.
func sigTag(digest string) string { return "sha256-" + hexOf(digest) + ".sig" }
