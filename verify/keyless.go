package verify

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/asn1"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/sigstore/sigstore-go/pkg/root"
	"github.com/sigstore/sigstore-go/pkg/tlog"
	sgverify "github.com/sigstore/sigstore-go/pkg/verify"
	"github.com/sigstore/sigstore/pkg/cryptoutils"
)

// verifyKeyless verifies entity with sigstore-go against the trusted root,
// then checks the certificate's identity. It returns sigstore-go's result,
// or a *SignatureError saying why the signature is refused; an error means
// the trusted root could not be had.
//
// What it requires, and why:
//   - a certificate chaining to a Fulcio CA of the trusted root, valid when
//     the signature was made;
//   - unless InsecureIgnoreTlog, one Rekor entry verified offline (its signed
//     entry timestamp or inclusion proof against the log keys in the trusted
//     root), whose integrated time, or an RFC 3161 timestamp, is that time;
//     with InsecureIgnoreTlog an RFC 3161 timestamp instead;
//   - an embedded SCT when the trusted root lists CT logs, as cosign does.
//
// payload is what a message signature signs (classic format); nil for a
// DSSE envelope, which carries its payload.
func (v *Verifier) verifyKeyless(ctx context.Context, entity sgverify.SignedEntity, payload []byte) (*sgverify.VerificationResult, *SignatureError, error) {
	tm, err := v.trustedMaterial(ctx)
	if err != nil {
		return nil, nil, err
	}
	sv, err := sgverify.NewVerifier(tm, v.verifierOptions(tm)...)
	if err != nil {
		return nil, nil, fmt.Errorf("verify: configuring sigstore-go: %w", err)
	}
	artifact := sgverify.WithoutArtifactUnsafe()
	if payload != nil {
		artifact = sgverify.WithArtifact(bytes.NewReader(payload))
	}
	res, err := sv.Verify(entity, sgverify.NewPolicy(artifact, sgverify.WithoutIdentitiesUnsafe()))
	if err != nil {
		return nil, diagnose(sv, tm, entity, payload, len(tm.CTLogs()) > 0, err), nil
	}
	if res.Signature == nil || res.Signature.Certificate == nil {
		return nil, &SignatureError{Reason: ReasonBadSignature, Err: errors.New("signed with a key, not a Fulcio certificate")}, nil
	}
	cert := res.Signature.Certificate
	if err := v.certID.Verify(*cert); err != nil {
		return nil, &SignatureError{Reason: ReasonIdentity, Issuer: cert.Extensions.Issuer, Subject: cert.SubjectAlternativeName,
			Want: v.opts.Keyless.want()}, nil
	}
	return res, nil, nil
}

func (v *Verifier) verifierOptions(tm root.TrustedMaterial) []sgverify.VerifierOption {
	var opts []sgverify.VerifierOption
	if v.opts.InsecureIgnoreTlog {
		opts = append(opts, sgverify.WithSignedTimestamps(1))
	} else {
		opts = append(opts, sgverify.WithTransparencyLog(1), sgverify.WithObserverTimestamps(1))
	}
	if len(tm.CTLogs()) > 0 {
		opts = append(opts, sgverify.WithSignedCertificateTimestamps(1))
	}
	return opts
}

// diagnose says why sigstore-go refused entity, by running its steps one
// at a time, the signature itself first: Verify stays the only judge, this
// only names the step that failed. Whatever it cannot pin down is a bad
// signature.
func diagnose(sv *sgverify.Verifier, tm root.TrustedMaterial, entity sgverify.SignedEntity, payload []byte, requireSCT bool, verifyErr error) *SignatureError {
	vc, err := entity.VerificationContent()
	if err != nil {
		return &SignatureError{Reason: ReasonMalformed, Err: err}
	}
	leaf := vc.Certificate()
	if leaf == nil {
		return &SignatureError{Reason: ReasonBadSignature, Err: errors.New("signed with a key, not a Fulcio certificate")}
	}
	sc, err := entity.SignatureContent()
	if err != nil {
		return &SignatureError{Reason: ReasonMalformed, Err: err}
	}
	if payload != nil {
		err = sgverify.VerifySignatureWithArtifacts(sc, vc, tm, []io.Reader{bytes.NewReader(payload)})
	} else {
		err = sgverify.VerifySignature(sc, vc, tm)
	}
	if err != nil {
		return &SignatureError{Reason: ReasonBadSignature, Err: err}
	}
	logTimes, err := sv.VerifyTransparencyLogInclusion(entity)
	if err != nil {
		// sigstore-go refuses a log entry made outside the certificate's
		// window as a log failure; an entry whose signed entry timestamp
		// verifies says when the signature was made, and that is the
		// certificate's problem.
		if at, ok := loggedOutside(entity, tm, leaf); ok {
			return &SignatureError{Reason: ReasonExpired, NotBefore: leaf.NotBefore, NotAfter: leaf.NotAfter, SignedAt: at}
		}
		return &SignatureError{Reason: ReasonTransparencyLog, Err: err}
	}
	times, err := sv.VerifyObserverTimestamps(entity, logTimes)
	if err != nil {
		return &SignatureError{Reason: ReasonTimestamp, Err: err}
	}
	for _, t := range times {
		if t.Timestamp.Before(leaf.NotBefore) || t.Timestamp.After(leaf.NotAfter) {
			return &SignatureError{Reason: ReasonExpired, NotBefore: leaf.NotBefore, NotAfter: leaf.NotAfter, SignedAt: t.Timestamp}
		}
	}
	leaf = withoutSANCritical(leaf)
	for _, t := range times {
		chains, err := sgverify.VerifyLeafCertificate(t.Timestamp, leaf, tm)
		if err != nil {
			return &SignatureError{Reason: ReasonUntrusted, Err: fmt.Errorf("certificate does not chain to a certificate authority of the trusted root: %w", err)}
		}
		if requireSCT {
			if err := sgverify.VerifySignedCertificateTimestamp(chains, 1, tm); err != nil {
				return &SignatureError{Reason: ReasonUntrusted, Err: fmt.Errorf("no valid SCT from a CT log of the trusted root: %w", err)}
			}
		}
	}
	return &SignatureError{Reason: ReasonBadSignature, Err: verifyErr}
}

// loggedOutside returns the integrated time of a Rekor entry of entity whose
// signed entry timestamp verifies against tm and that lies outside leaf's
// validity window.
func loggedOutside(entity sgverify.SignedEntity, tm root.TrustedMaterial, leaf *x509.Certificate) (time.Time, bool) {
	entries, err := entity.TlogEntries()
	if err != nil {
		return time.Time{}, false
	}
	for _, e := range entries {
		if !e.HasInclusionPromise() || tlog.VerifySET(e, tm.RekorLogs()) != nil {
			continue
		}
		if at := e.IntegratedTime(); at.Before(leaf.NotBefore) || at.After(leaf.NotAfter) {
			return at, true
		}
	}
	return time.Time{}, false
}

// withoutSANCritical returns a copy of cert that no longer lists a critical
// SAN extension as unhandled: Go cannot parse Fulcio's OtherName SANs, and
// sigstore-go drops the same marker before its own chain check.
func withoutSANCritical(cert *x509.Certificate) *x509.Certificate {
	if len(cert.UnhandledCriticalExtensions) == 0 {
		return cert
	}
	c := *cert
	c.UnhandledCriticalExtensions = nil
	for _, oid := range cert.UnhandledCriticalExtensions {
		if !oid.Equal(cryptoutils.SANOID) {
			c.UnhandledCriticalExtensions = append(c.UnhandledCriticalExtensions, asn1.ObjectIdentifier(oid))
		}
	}
	return &c
}
