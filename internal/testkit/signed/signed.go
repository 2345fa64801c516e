// Package signed pushes images and cosign signatures of them into a
// registry, for tests of the signature gate: signed by an ECDSA P-256 key
// the test generates, or keyless by a certificate from sigstore-go's virtual
// Sigstore (pkg/testing/ca: a Fulcio CA, a Rekor log, a timestamp authority
// and a CT log, all in memory). It writes both formats cosign writes: the
// classic `sha256-<hex>.sig` tag and a Sigstore bundle in an OCI 1.1
// referrer. Spec can make a signature wrong on purpose (tampered, for
// another digest, outside its certificate's validity).
//
// Nothing here talks to a network other than the registry given.
package signed

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/sigstore/sigstore-go/pkg/root"
	"github.com/sigstore/sigstore-go/pkg/testing/ca"
)

// Key is an ECDSA P-256 key pair, as `cosign generate-key-pair` makes.
type Key struct {
	Private *ecdsa.PrivateKey
}

// NewKey generates a key.
func NewKey(t testing.TB) *Key {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatalf("signed: generating a key: %v", err)
	}
	return &Key{Private: k}
}

// PublicPEM returns the public key as cosign.pub holds it.
func (k *Key) PublicPEM(t testing.TB) []byte {
	t.Helper()
	der, err := x509.MarshalPKIXPublicKey(&k.Private.PublicKey)
	if err != nil {
		t.Fatalf("signed: encoding a public key: %v", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
}

// WritePublic writes the public key to dir/name and returns the path.
func (k *Key) WritePublic(t testing.TB, dir, name string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, k.PublicPEM(t), 0o644); err != nil {
		t.Fatalf("signed: %v", err)
	}
	return path
}

// CA is a virtual Sigstore instance.
type CA struct {
	VS *ca.VirtualSigstore
}

// NewCA starts a virtual Sigstore. Its CAs are valid from five hours ago to
// an hour from now; each leaf certificate it issues is valid for ten
// minutes from its issue.
func NewCA(t testing.TB) *CA {
	t.Helper()
	vs, err := ca.NewVirtualSigstore()
	if err != nil {
		t.Fatalf("signed: starting a virtual Sigstore: %v", err)
	}
	return &CA{VS: vs}
}

// RootOptions says what the trusted root lists besides the Fulcio CA,
// Rekor log and timestamp authority.
type RootOptions struct {
	// CTLogs adds the virtual CT log. The virtual Fulcio embeds no SCTs in
	// its certificates, so a verifier that requires SCTs refuses them all.
	CTLogs bool
}

// TrustedRoot returns the CA's trusted root as trusted_root.json holds it.
func (c *CA) TrustedRoot(t testing.TB, opts RootOptions) []byte {
	t.Helper()
	ctlogs := map[string]*root.TransparencyLog{}
	if opts.CTLogs {
		ctlogs = rawIDs(t, c.VS.CTLogs())
	}
	tr, err := root.NewTrustedRoot(root.TrustedRootMediaType01,
		c.VS.FulcioCertificateAuthorities(), ctlogs, c.VS.TimestampingAuthorities(), rawIDs(t, c.VS.RekorLogs()))
	if err != nil {
		t.Fatalf("signed: building a trusted root: %v", err)
	}
	b, err := tr.MarshalJSON()
	if err != nil {
		t.Fatalf("signed: encoding a trusted root: %v", err)
	}
	return b
}

// WriteTrustedRoot writes TrustedRoot to dir/name and returns the path.
func (c *CA) WriteTrustedRoot(t testing.TB, dir, name string, opts RootOptions) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, c.TrustedRoot(t, opts), 0o644); err != nil {
		t.Fatalf("signed: %v", err)
	}
	return path
}

// rawIDs fixes the virtual logs' IDs, which hold the hex text of the log ID
// where a trusted root holds its bytes.
func rawIDs(t testing.TB, logs map[string]*root.TransparencyLog) map[string]*root.TransparencyLog {
	t.Helper()
	out := make(map[string]*root.TransparencyLog, len(logs))
	for id, l := range logs {
		raw, err := hex.DecodeString(id)
		if err != nil {
			t.Fatalf("signed: log ID %q: %v", id, err)
		}
		c := *l
		c.ID = raw
		out[id] = &c
	}
	return out
}

// PushImage pushes a small random image to repository:tag and returns its
// digest. repository is "host:port/path".
func PushImage(t testing.TB, opts []remote.Option, repository, tag string) string {
	t.Helper()
	img, err := random.Image(128, 1)
	if err != nil {
		t.Fatalf("signed: making an image: %v", err)
	}
	ref := parseRepository(t, repository).Tag(tag)
	if err := remote.Write(ref, img, withContext(t, opts)...); err != nil {
		t.Fatalf("signed: pushing %s: %v", ref, err)
	}
	d, err := img.Digest()
	if err != nil {
		t.Fatalf("signed: %v", err)
	}
	return d.String()
}

func parseRepository(t testing.TB, repository string) name.Repository {
	t.Helper()
	repo, err := name.NewRepository(repository)
	if err != nil {
		t.Fatalf("signed: %v", err)
	}
	return repo
}

func withContext(t testing.TB, opts []remote.Option) []remote.Option {
	return append(append([]remote.Option{}, opts...), remote.WithContext(t.Context()))
}

// hexOf returns the hex part of "sha256:<hex>".
func hexOf(digest string) string {
	return strings.TrimPrefix(digest, "sha256:")
}
