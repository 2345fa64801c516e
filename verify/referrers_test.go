package verify

import (
	"slices"
	"strings"
	"testing"

	"github.com/imagebump/imagebump/internal/testkit/signed"
)

// TestBundleDiscovery finds a bundle through the referrers API, through
// go-containerregistry's tag-schema fallback, and through the Verifier's own
// fallback for a Registry without the API.
func TestBundleDiscovery(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	tests := []struct {
		name      string
		referrers bool // the registry serves the referrers API
		noAPI     bool // the Registry given to the Verifier has no Referrers
		wantCalls []string
		// notCalls must not be requested; "%s" is the digest's hex.
		notCalls []string
	}{
		{
			name: "referrers API", referrers: true,
			wantCalls: []string{"GET /v2/%r/referrers/sha256:%s"},
			notCalls:  []string{"GET /v2/%r/manifests/sha256-%s"},
		},
		{
			name: "tag schema read by go-containerregistry", referrers: false,
			wantCalls: []string{"GET /v2/%r/referrers/sha256:%s", "GET /v2/%r/manifests/sha256-%s"},
		},
		{
			name: "tag schema read by the verifier", referrers: false, noAPI: true,
			wantCalls: []string{"GET /v2/%r/manifests/sha256-%s"},
			notCalls:  []string{"GET /v2/%r/referrers/sha256:%s"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := startRegistry(t, tt.referrers)
			repo := r.repo(t)
			digest := signed.PushImage(t, r.push, repo, "v1")
			signed.SignBundle(t, r.push, repo, digest, signed.Spec{Key: w.key})
			var reg Registry = r.remote
			if tt.noAPI {
				reg = noReferrers{r.remote}
			}
			v, err := New(Options{Key: w.keyFile}, reg)
			if err != nil {
				t.Fatal(err)
			}
			r.requests.take()
			res, err := v.Verify(t.Context(), repo, digest)
			if err != nil {
				t.Fatalf("Verify: %v", err)
			}
			if res.Format != FormatBundle {
				t.Errorf("format %v, want bundle", res.Format)
			}
			_, calls := r.requests.take()
			path := strings.TrimPrefix(repo, r.host+"/")
			expand := func(s string) string {
				return strings.NewReplacer("%r", path, "%s", strings.TrimPrefix(digest, "sha256:")).Replace(s)
			}
			for _, c := range tt.wantCalls {
				if !slices.Contains(calls, expand(c)) {
					t.Errorf("no request %s in %q", expand(c), calls)
				}
			}
			for _, c := range tt.notCalls {
				if slices.Contains(calls, expand(c)) {
					t.Errorf("request %s made: %q", expand(c), calls)
				}
			}
		})
	}
}

// TestAttestationIsNotASignature: a bundle of another predicate type, by
// the trusted key, is an attestation; it makes no signature, and it is
// skipped by its referrer annotation without being read.
func TestAttestationIsNotASignature(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	for _, referrers := range []bool{true, false} {
		name := "tag schema"
		if referrers {
			name = "referrers API"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			r := startRegistry(t, referrers)
			repo := r.repo(t)
			digest := signed.PushImage(t, r.push, repo, "v1")
			att := signed.SignBundle(t, r.push, repo, digest, signed.Spec{Key: w.key, PredicateType: "https://cyclonedx.org/bom"})
			v, err := New(Options{Key: w.keyFile}, r.remote)
			if err != nil {
				t.Fatal(err)
			}
			r.requests.take()
			_, err = v.Verify(t.Context(), repo, digest)
			if !isUnsigned(err) {
				t.Fatalf("Verify: %v, want unsigned", err)
			}
			_, calls := r.requests.take()
			for _, c := range calls {
				if strings.HasSuffix(c, "/manifests/"+att) {
					t.Errorf("the attestation's manifest was read: %q", calls)
				}
			}
		})
	}
}

func isUnsigned(err error) bool {
	verr, ok := err.(*Error)
	return ok && verr.Unsigned()
}
