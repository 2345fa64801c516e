package verify

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// The two verdicts that are not failures to check: Verify's *Error matches
// exactly one of them with errors.Is. Any other error from Verify (registry
// unreachable, trusted root not loadable, ctx cancelled) means the check
// could not be made, and says nothing about the image.
var (
	// ErrUnsigned: no cosign signature of any format was found for the digest.
	ErrUnsigned = errors.New("unsigned")
	// ErrInvalid: signatures were found, and none is valid for the policy.
	ErrInvalid = errors.New("no valid signature")
)

// Error is Verify's verdict that a digest does not carry a valid signature.
type Error struct {
	Repository string
	Digest     string
	// Signatures holds one entry per signature found and refused. Empty
	// means none was found: the digest is unsigned.
	Signatures []*SignatureError
}

// Unsigned reports whether no signature was found at all.
func (e *Error) Unsigned() bool { return len(e.Signatures) == 0 }

// Is makes errors.Is(err, ErrUnsigned) and errors.Is(err, ErrInvalid) work.
func (e *Error) Is(target error) bool {
	switch target {
	case ErrUnsigned:
		return e.Unsigned()
	case ErrInvalid:
		return !e.Unsigned()
	}
	return false
}

// Unwrap returns the refused signatures, so that errors.As finds a
// *SignatureError.
func (e *Error) Unwrap() []error {
	errs := make([]error, len(e.Signatures))
	for i, s := range e.Signatures {
		errs[i] = s
	}
	return errs
}

// Error returns, for example, "ghcr.io/acme/app@sha256:...: unsigned: no
// cosign signature found (tag sha256-....sig, Sigstore bundle referrers);
// sign the image in CI (see docs/verify.md)".
func (e *Error) Error() string {
	where := e.Repository + "@" + e.Digest
	if e.Unsigned() {
		return fmt.Sprintf("%s: unsigned: no cosign signature found (tag %s, Sigstore bundle referrers); sign the image in CI (see docs/verify.md)",
			where, sigTag(e.Digest))
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s: no valid signature (%d found", where, len(e.Signatures))
	for i, s := range e.Signatures {
		if i == 0 {
			b.WriteString("): ")
		} else {
			b.WriteString("; ")
		}
		b.WriteString(s.Error())
	}
	return b.String()
}

// Reason says why one signature was refused.
type Reason int

// The reasons. A tampered payload and a signature by another key both read
// as ReasonBadSignature: cryptography cannot tell them apart.
const (
	// ReasonBadSignature: the signature does not verify over its payload
	// with the key or certificate, or was made by another kind of signer
	// (a key where a certificate is wanted, or the reverse).
	ReasonBadSignature Reason = iota + 1
	// ReasonDigestMismatch: the signature is valid but signs another digest.
	ReasonDigestMismatch
	// ReasonIdentity: the certificate's issuer or subject is not the one
	// the policy wants; SignatureError.Issuer and Subject say what it has.
	ReasonIdentity
	// ReasonExpired: the signature was made (by its verified timestamps)
	// outside its certificate's validity window.
	ReasonExpired
	// ReasonUntrusted: the certificate does not chain to a certificate
	// authority of the trusted root, or lacks a valid SCT where the trusted
	// root has CT logs.
	ReasonUntrusted
	// ReasonTransparencyLog: no transparency log entry verifies against the
	// trusted root's Rekor keys, or the entry does not match the signature.
	ReasonTransparencyLog
	// ReasonTimestamp: no verified timestamp (Rekor integrated time or RFC
	// 3161) says when the signature was made.
	ReasonTimestamp
	// ReasonMalformed: the signature artifact cannot be read: bad JSON,
	// base64 or PEM, a missing annotation, an unknown payload type.
	ReasonMalformed
)

var reasonNames = map[Reason]string{
	ReasonBadSignature:    "bad signature",
	ReasonDigestMismatch:  "signature for another digest",
	ReasonIdentity:        "wrong identity",
	ReasonExpired:         "expired certificate",
	ReasonUntrusted:       "untrusted certificate",
	ReasonTransparencyLog: "no valid transparency log entry",
	ReasonTimestamp:       "no valid timestamp",
	ReasonMalformed:       "malformed signature",
}

// String returns the reason in words, such as "signature for another digest".
func (r Reason) String() string {
	if s, ok := reasonNames[r]; ok {
		return s
	}
	return fmt.Sprintf("reason(%d)", int(r))
}

// Format is how a signature is stored in the registry.
type Format int

const (
	// FormatClassic is cosign's `sha256-<hex>.sig` tag: an image manifest
	// whose layers are simple-signing payloads, each signature in an
	// annotation.
	FormatClassic Format = iota + 1
	// FormatBundle is a Sigstore bundle (v0.3) in an OCI 1.1 referrer of the
	// digest: cosign v3's default, or --new-bundle-format.
	FormatBundle
)

// String returns "classic" or "bundle".
func (f Format) String() string {
	switch f {
	case FormatClassic:
		return "classic"
	case FormatBundle:
		return "bundle"
	}
	return fmt.Sprintf("format(%d)", int(f))
}

// SignatureError says why one signature was refused.
type SignatureError struct {
	Format Format
	// Source names the signature: "tag sha256-<hex>.sig layer 0" or
	// "referrer sha256:<hex>".
	Source string
	Reason Reason
	// SignedDigest is the digest the signature is for (ReasonDigestMismatch).
	SignedDigest string
	// Issuer and Subject are the certificate's OIDC issuer and subject
	// alternative name (ReasonIdentity, and any keyless signature that got
	// that far); Want is the identity the policy asks for.
	Issuer, Subject, Want string
	// NotBefore and NotAfter are the certificate's validity window and
	// SignedAt the verified signing time outside it (ReasonExpired).
	NotBefore, NotAfter, SignedAt time.Time
	// Err is the underlying error, if any: sigstore-go's, a parser's.
	Err error
}

// Error returns the source, the reason and what was seen, such as "tag
// sha256-....sig layer 0: wrong identity: issuer "https://accounts.google.com",
// subject "eve@example.com" (want issuer "https://token.actions.githubusercontent.com",
// subject matching "...")".
func (e *SignatureError) Error() string {
	var b strings.Builder
	b.WriteString(e.Source)
	b.WriteString(": ")
	b.WriteString(e.Reason.String())
	switch e.Reason {
	case ReasonDigestMismatch:
		fmt.Fprintf(&b, ": it signs %s", e.SignedDigest)
	case ReasonIdentity:
		fmt.Fprintf(&b, ": issuer %q, subject %q (want %s)", e.Issuer, e.Subject, e.Want)
	case ReasonExpired:
		fmt.Fprintf(&b, ": signed at %s, certificate valid %s to %s",
			e.SignedAt.UTC().Format(time.RFC3339), e.NotBefore.UTC().Format(time.RFC3339), e.NotAfter.UTC().Format(time.RFC3339))
	}
	if e.Err != nil {
		b.WriteString(": ")
		b.WriteString(e.Err.Error())
	}
	return b.String()
}

// Unwrap returns Err.
func (e *SignatureError) Unwrap() error { return e.Err }
