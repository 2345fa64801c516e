// Package verify decides whether an image digest carries a valid cosign
// signature for a policy: signed by a given public key, or keyless, by a
// Fulcio certificate whose OIDC issuer and subject match, chaining to a
// trusted root (Sigstore's public-good one by default).
//
// It reads both formats cosign writes to registries: the classic
// `sha256-<hex>.sig` tag, whose layers are simple-signing payloads with the
// signature in an annotation, and Sigstore bundles in OCI 1.1 referrers of
// the digest (through the referrers API, or the `sha256-<hex>` tag-schema
// index on registries without it). Cryptography is sigstore-go's (bundles
// and keyless) and sigstore's signature package (classic signatures by key);
// this package finds the signatures, checks that what they sign is the
// digest asked about, and names what failed.
//
// Registry access goes through the small Registry interface, so that
// imagebump's rate-limited, authenticated client can serve it; Remote is a
// go-containerregistry implementation. Verdicts are cached by repository,
// digest and policy (see Cache).
//
// Verify's errors say "unsigned" (errors.Is ErrUnsigned) or "invalid"
// (errors.Is ErrInvalid, with a *SignatureError per signature refused and a
// Reason each); any other error means the check could not be made.
package verify
