package verify

import (
	"testing"

	"github.com/imagebump/imagebump/internal/testkit/signed"
)

// BenchmarkVerify measures one verification against go-containerregistry's
// in-process registry, uncached (registry requests and cryptography) and
// cached (a map lookup), and reports the requests per verification.
func BenchmarkVerify(b *testing.B) {
	key := signed.NewKey(b)
	ca := signed.NewCA(b)
	dir := b.TempDir()
	keyFile := key.WritePublic(b, dir, "cosign.pub")
	rootFile := ca.WriteTrustedRoot(b, dir, "trusted_root.json", signed.RootOptions{})
	r := startRegistry(b, true)
	repo := r.host + "/bench"
	tests := []struct {
		name   string
		opts   Options
		format Format
		spec   signed.Spec
	}{
		{"key-classic", Options{Key: keyFile}, FormatClassic, signed.Spec{Key: key}},
		{"key-bundle", Options{Key: keyFile}, FormatBundle, signed.Spec{Key: key}},
		{"keyless-classic", Options{Keyless: &Keyless{Issuer: issuer, Subject: subject}, TrustedRoot: rootFile}, FormatClassic, signed.Spec{CA: ca, Issuer: issuer, Subject: subject}},
		{"keyless-bundle", Options{Keyless: &Keyless{Issuer: issuer, Subject: subject}, TrustedRoot: rootFile}, FormatBundle, signed.Spec{CA: ca, Issuer: issuer, Subject: subject}},
	}
	for _, tt := range tests {
		digest := signed.PushImage(b, r.push, repo, tt.name)
		switch tt.format {
		case FormatClassic:
			signed.SignClassic(b, r.push, repo, digest, tt.spec)
		case FormatBundle:
			signed.SignBundle(b, r.push, repo, digest, tt.spec)
		}
		for _, cached := range []bool{false, true} {
			name := tt.name + "/uncached"
			if cached {
				name = tt.name + "/cached"
			}
			b.Run(name, func(b *testing.B) {
				v, err := New(tt.opts, r.remote)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := v.Verify(b.Context(), repo, digest); err != nil {
					b.Fatal(err)
				}
				r.requests.take()
				b.ResetTimer()
				for b.Loop() {
					if !cached {
						v.cache = NewCache(CacheOptions{})
					}
					if _, err := v.Verify(b.Context(), repo, digest); err != nil {
						b.Fatal(err)
					}
				}
				n, _ := r.requests.take()
				b.ReportMetric(float64(n)/float64(b.N), "requests/op")
			})
		}
	}
}
