package verify

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	protobundle "github.com/sigstore/protobuf-specs/gen/pb-go/bundle/v1"
	protocommon "github.com/sigstore/protobuf-specs/gen/pb-go/common/v1"
	protorekor "github.com/sigstore/protobuf-specs/gen/pb-go/rekor/v1"
	"github.com/sigstore/sigstore-go/pkg/bundle"
	"github.com/sigstore/sigstore/pkg/cryptoutils"
)

// Cosign's classic format: the media type of a signature layer and the
// annotations on it.
const (
	SimpleSigningMediaType = "application/vnd.dev.cosign.simplesigning.v1+json"

	AnnotationSignature   = "dev.cosignproject.cosign/signature"
	AnnotationCertificate = "dev.sigstore.cosign/certificate"
	AnnotationChain       = "dev.sigstore.cosign/chain"
	AnnotationBundle      = "dev.sigstore.cosign/bundle"
	AnnotationTimestamp   = "dev.sigstore.cosign/rfc3161timestamp"

	// SimpleSigningType is the critical.type of a cosign image signature
	// payload.
	SimpleSigningType = "cosign container image signature"
)

// maxSignatures bounds how many signatures of one format are checked for
// one digest: every one costs a request.
const maxSignatures = 32

// Payload is cosign's simple-signing payload, the JSON a classic signature
// signs.
type Payload struct {
	Critical struct {
		Identity struct {
			DockerReference string `json:"docker-reference"`
		} `json:"identity"`
		Image struct {
			DockerManifestDigest string `json:"docker-manifest-digest"`
		} `json:"image"`
		Type string `json:"type"`
	} `json:"critical"`
	Optional map[string]any `json:"optional"`
}

// ParsePayload parses a simple-signing payload and checks that it is a
// cosign image signature naming a sha256 manifest digest.
func ParsePayload(b []byte) (*Payload, error) {
	var p Payload
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&p); err != nil {
		return nil, fmt.Errorf("parsing simple-signing payload: %w", err)
	}
	if dec.More() {
		return nil, errors.New("parsing simple-signing payload: data after the JSON object")
	}
	if !strings.EqualFold(p.Critical.Type, SimpleSigningType) {
		return nil, fmt.Errorf("payload type is %q, not %q", p.Critical.Type, SimpleSigningType)
	}
	if !digestRE.MatchString(p.Critical.Image.DockerManifestDigest) {
		return nil, fmt.Errorf("payload names no sha256 manifest digest (docker-manifest-digest %q)", p.Critical.Image.DockerManifestDigest)
	}
	return &p, nil
}

// classic checks the signatures in the `sha256-<hex>.sig` tag. It returns
// ok with the first that passes, or appends to verdict why each failed.
func (v *Verifier) classic(ctx context.Context, repository, digest string, verdict *Error) (Result, bool, error) {
	tag := sigTag(digest)
	m, err := v.reg.Manifest(ctx, repository, tag)
	if errors.Is(err, ErrNotFound) {
		return Result{}, false, nil
	}
	if err != nil {
		return Result{}, false, fmt.Errorf("reading signature tag %s of %s: %w", tag, repository, err)
	}
	refuse := func(src string, reason Reason, err error) {
		verdict.Signatures = append(verdict.Signatures, &SignatureError{Format: FormatClassic, Source: src, Reason: reason, Err: err})
	}
	if len(m.Body) > MaxManifestSize {
		refuse("tag "+tag, ReasonMalformed, fmt.Errorf("manifest of %d bytes is larger than %d", len(m.Body), MaxManifestSize))
		return Result{}, false, nil
	}
	var man v1.Manifest
	if err := json.Unmarshal(m.Body, &man); err != nil {
		refuse("tag "+tag, ReasonMalformed, fmt.Errorf("parsing manifest: %w", err))
		return Result{}, false, nil
	}
	checked := 0
	for i, layer := range man.Layers {
		if string(layer.MediaType) != SimpleSigningMediaType {
			continue // not a signature: cosign only writes simple-signing layers here
		}
		if checked++; checked > maxSignatures {
			break
		}
		src := fmt.Sprintf("tag %s layer %d", tag, i)
		payload, serr, err := v.blob(ctx, repository, layer)
		if err != nil {
			return Result{}, false, err
		}
		if serr != nil {
			refuse(src, serr.reason, serr.err)
			continue
		}
		r, sigErr, err := v.checkClassic(ctx, digest, layer, payload)
		if err != nil {
			return Result{}, false, err
		}
		if sigErr != nil {
			sigErr.Format, sigErr.Source = FormatClassic, src
			verdict.Signatures = append(verdict.Signatures, sigErr)
			continue
		}
		r.Repository, r.Digest, r.Format, r.Source = repository, digest, FormatClassic, src
		return r, true, nil
	}
	return Result{}, false, nil
}

// blobProblem is a blob that the registry served but that cannot be a
// signature.
type blobProblem struct {
	reason Reason
	err    error
}

// blob fetches the blob desc names and checks its size and digest. A blob
// the registry lost is a blobProblem: the signature cannot be checked, and
// that says nothing good about it.
func (v *Verifier) blob(ctx context.Context, repository string, desc v1.Descriptor) ([]byte, *blobProblem, error) {
	if desc.Size > MaxBlobSize {
		return nil, &blobProblem{ReasonMalformed, fmt.Errorf("blob %s of %d bytes is larger than %d", desc.Digest, desc.Size, MaxBlobSize)}, nil
	}
	if desc.Digest.Algorithm != "sha256" {
		return nil, &blobProblem{ReasonMalformed, fmt.Errorf("blob digest %s is not sha256", desc.Digest)}, nil
	}
	b, err := v.reg.Blob(ctx, repository, desc.Digest.String())
	if errors.Is(err, ErrNotFound) {
		return nil, &blobProblem{ReasonMalformed, fmt.Errorf("blob %s is missing from the registry", desc.Digest)}, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("reading blob %s of %s: %w", desc.Digest, repository, err)
	}
	if len(b) > MaxBlobSize {
		return nil, &blobProblem{ReasonMalformed, fmt.Errorf("blob %s is larger than %d bytes", desc.Digest, MaxBlobSize)}, nil
	}
	if h := sha256.Sum256(b); hex.EncodeToString(h[:]) != desc.Digest.Hex {
		return nil, &blobProblem{ReasonMalformed, fmt.Errorf("blob %s served by the registry does not match its digest", desc.Digest)}, nil
	}
	return b, nil, nil
}

// checkClassic verifies one simple-signing layer: the signature over the
// payload (by key, or by certificate against the trusted root), the
// identity, then that the payload names digest.
func (v *Verifier) checkClassic(ctx context.Context, digest string, layer v1.Descriptor, payload []byte) (Result, *SignatureError, error) {
	sigText, ok := layer.Annotations[AnnotationSignature]
	if !ok {
		return Result{}, &SignatureError{Reason: ReasonMalformed, Err: fmt.Errorf("no %s annotation", AnnotationSignature)}, nil
	}
	sig, err := base64.StdEncoding.DecodeString(sigText)
	if err != nil {
		return Result{}, &SignatureError{Reason: ReasonMalformed, Err: fmt.Errorf("annotation %s: %w", AnnotationSignature, err)}, nil
	}
	var r Result
	if v.keys != nil {
		k, serr := v.verifyWithKeys(sig, payload)
		if serr != nil {
			return Result{}, serr, nil
		}
		r.KeyID = k.id
	} else {
		entity, serr := classicEntity(layer.Annotations, sig, payload)
		if serr != nil {
			return Result{}, serr, nil
		}
		res, serr, err := v.verifyKeyless(ctx, entity, payload)
		if err != nil || serr != nil {
			return Result{}, serr, err
		}
		r.Issuer, r.Subject = res.Signature.Certificate.Extensions.Issuer, res.Signature.Certificate.SubjectAlternativeName
	}
	p, err := ParsePayload(payload)
	if err != nil {
		return Result{}, &SignatureError{Reason: ReasonMalformed, Err: err}, nil
	}
	if p.Critical.Image.DockerManifestDigest != digest {
		return Result{}, &SignatureError{Reason: ReasonDigestMismatch, SignedDigest: p.Critical.Image.DockerManifestDigest}, nil
	}
	return r, nil, nil
}

// verifyWithKeys returns the key whose signature sig over payload is.
func (v *Verifier) verifyWithKeys(sig, payload []byte) (publicKey, *SignatureError) {
	for _, k := range v.keys {
		if k.classic.VerifySignature(bytes.NewReader(sig), bytes.NewReader(payload)) == nil {
			return k, nil
		}
	}
	return publicKey{}, &SignatureError{Reason: ReasonBadSignature, Err: v.noKeyVerifies()}
}

func (v *Verifier) noKeyVerifies() error {
	if len(v.keys) == 1 {
		return fmt.Errorf("does not verify with the key in %s", v.opts.Key)
	}
	return fmt.Errorf("verifies with none of the %d keys in %s", len(v.keys), v.opts.Key)
}

// classicEntity turns a keyless classic signature into the Sigstore bundle
// (v0.1, the format of the same era) it amounts to, so that sigstore-go
// verifies both formats alike: the Fulcio certificate, the Rekor entry with
// its signed entry timestamp, an RFC 3161 timestamp if any, and the
// signature over the payload's SHA-256.
func classicEntity(annotations map[string]string, sig, payload []byte) (*bundle.Bundle, *SignatureError) {
	malformed := func(err error) (*bundle.Bundle, *SignatureError) {
		return nil, &SignatureError{Reason: ReasonMalformed, Err: err}
	}
	certPEM, ok := annotations[AnnotationCertificate]
	if !ok || certPEM == "" {
		return nil, &SignatureError{Reason: ReasonBadSignature, Err: errors.New("signed with a key, not a Fulcio certificate")}
	}
	certs, err := cryptoutils.UnmarshalCertificatesFromPEM([]byte(certPEM))
	if err != nil || len(certs) == 0 {
		return malformed(fmt.Errorf("annotation %s holds no PEM certificate: %v", AnnotationCertificate, err))
	}
	h := sha256.Sum256(payload)
	pb := &protobundle.Bundle{
		MediaType: "application/vnd.dev.sigstore.bundle+json;version=0.1",
		VerificationMaterial: &protobundle.VerificationMaterial{
			Content: &protobundle.VerificationMaterial_Certificate{
				Certificate: &protocommon.X509Certificate{RawBytes: certs[0].Raw},
			},
		},
		Content: &protobundle.Bundle_MessageSignature{
			MessageSignature: &protocommon.MessageSignature{
				MessageDigest: &protocommon.HashOutput{Algorithm: protocommon.HashAlgorithm_SHA2_256, Digest: h[:]},
				Signature:     sig,
			},
		},
	}
	if text, ok := annotations[AnnotationBundle]; ok {
		entry, err := classicTlogEntry(text)
		if err != nil {
			return malformed(fmt.Errorf("annotation %s: %w", AnnotationBundle, err))
		}
		pb.VerificationMaterial.TlogEntries = []*protorekor.TransparencyLogEntry{entry}
	}
	if text, ok := annotations[AnnotationTimestamp]; ok {
		var ts struct {
			SignedRFC3161Timestamp []byte `json:"SignedRFC3161Timestamp"`
		}
		if err := json.Unmarshal([]byte(text), &ts); err != nil {
			return malformed(fmt.Errorf("annotation %s: %w", AnnotationTimestamp, err))
		}
		pb.VerificationMaterial.TimestampVerificationData = &protobundle.TimestampVerificationData{
			Rfc3161Timestamps: []*protocommon.RFC3161SignedTimestamp{{SignedTimestamp: ts.SignedRFC3161Timestamp}},
		}
	}
	b, err := bundle.NewBundle(pb)
	if err != nil {
		return malformed(err)
	}
	return b, nil
}

// RekorBundle is the `dev.sigstore.cosign/bundle` annotation: a Rekor
// entry and its signed entry timestamp (SET).
type RekorBundle struct {
	SignedEntryTimestamp []byte `json:"SignedEntryTimestamp"`
	Payload              struct {
		Body           []byte `json:"body"`
		IntegratedTime int64  `json:"integratedTime"`
		LogIndex       int64  `json:"logIndex"`
		LogID          string `json:"logID"`
	} `json:"Payload"`
}

func classicTlogEntry(text string) (*protorekor.TransparencyLogEntry, error) {
	var rb RekorBundle
	if err := json.Unmarshal([]byte(text), &rb); err != nil {
		return nil, err
	}
	logID, err := hex.DecodeString(rb.Payload.LogID)
	if err != nil {
		return nil, fmt.Errorf("logID: %w", err)
	}
	var kind struct {
		Kind       string `json:"kind"`
		APIVersion string `json:"apiVersion"`
	}
	if err := json.Unmarshal(rb.Payload.Body, &kind); err != nil {
		return nil, fmt.Errorf("entry body: %w", err)
	}
	return &protorekor.TransparencyLogEntry{
		LogIndex:          rb.Payload.LogIndex,
		LogId:             &protocommon.LogId{KeyId: logID},
		KindVersion:       &protorekor.KindVersion{Kind: kind.Kind, Version: kind.APIVersion},
		IntegratedTime:    rb.Payload.IntegratedTime,
		InclusionPromise:  &protorekor.InclusionPromise{SignedEntryTimestamp: rb.SignedEntryTimestamp},
		CanonicalizedBody: rb.Payload.Body,
	}, nil
}
