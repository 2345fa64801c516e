package verify

import (
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"

	"github.com/imagebump/imagebump/internal/testkit/signed"
	"github.com/imagebump/imagebump/internal/testkit/testregistry"
)

// TestDistribution runs the gate against the real CNCF distribution
// registries, 2.8.2 and v3.1.2, with token auth as most registries are
// reached. Neither serves the OCI referrers API (v3.1.2 has none either), so
// bundles go through the tag schema here; the test checks the path taken
// against what the registry answers, so that a registry that gains the API
// is tested through it. The API path itself is tested against
// go-containerregistry's registry (TestBundleDiscovery).
func TestDistribution(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	for _, version := range []testregistry.Version{testregistry.V2, testregistry.V3} {
		t.Run(version.String(), func(t *testing.T) {
			t.Parallel()
			srv := testregistry.Start(t, testregistry.Options{Version: version, Token: true, InMemory: true})
			push := srv.RemoteOptions(t.Context())
			c := &counter{next: srv.Transport}
			reg := NewRemote(append(srv.RemoteOptions(t.Context()), remote.WithTransport(c))...)

			repo := srv.Repo("app")
			classic := signed.PushImage(t, push, repo, "classic")
			bundled := signed.PushImage(t, push, repo, "bundled")
			unsigned := signed.PushImage(t, push, repo, "unsigned")
			tampered := signed.PushImage(t, push, repo, "tampered")
			keyless := signed.PushImage(t, push, repo, "keyless")
			signed.SignClassic(t, push, repo, classic, signed.Spec{Key: w.key})
			signed.SignBundle(t, push, repo, bundled, signed.Spec{Key: w.key})
			signed.SignBundle(t, push, repo, tampered, signed.Spec{Key: w.key, Tamper: true})
			signed.SignBundle(t, push, repo, keyless, signed.Spec{CA: w.ca, Subject: subject, Issuer: issuer})

			byKey, err := New(Options{Key: w.keyFile}, reg)
			if err != nil {
				t.Fatal(err)
			}
			byIdentity, err := New(w.keylessExact, reg)
			if err != nil {
				t.Fatal(err)
			}
			tests := []struct {
				name   string
				v      *Verifier
				digest string
				want   error // nil, ErrUnsigned, ErrInvalid
				format Format
			}{
				{"classic", byKey, classic, nil, FormatClassic},
				{"bundle", byKey, bundled, nil, FormatBundle},
				{"unsigned", byKey, unsigned, ErrUnsigned, 0},
				{"tampered bundle", byKey, tampered, ErrInvalid, 0},
				{"keyless bundle", byIdentity, keyless, nil, FormatBundle},
			}
			for _, tt := range tests {
				res, err := tt.v.Verify(t.Context(), repo, tt.digest)
				if tt.want == nil && err != nil || tt.want != nil && !errors.Is(err, tt.want) {
					t.Errorf("%s: Verify: %v, want %v", tt.name, err, tt.want)
					continue
				}
				if tt.want == nil && res.Format != tt.format {
					t.Errorf("%s: format %v, want %v", tt.name, res.Format, tt.format)
				}
			}

			_, calls := c.take()
			path := strings.TrimPrefix(repo, srv.Host+"/")
			fallback := "GET /v2/" + path + "/manifests/" + strings.Replace(bundled, ":", "-", 1)
			api := referrersAPI(t, srv, path, bundled)
			t.Logf("%s: referrers API served: %v", version, api)
			if got := slices.Contains(calls, fallback); got == api {
				t.Errorf("read the tag-schema index: %v; the registry serves the referrers API: %v", got, api)
			}
		})
	}
}

// referrersAPI reports whether srv answers the referrers API for digest.
func referrersAPI(t *testing.T, srv *testregistry.Server, path, digest string) bool {
	t.Helper()
	repo, err := name.NewRepository(srv.Repo(path))
	if err != nil {
		t.Fatal(err)
	}
	auth := &authn.Basic{Username: srv.Username, Password: srv.Password}
	rt, err := transport.NewWithContext(t.Context(), repo.Registry, auth, srv.Transport, []string{repo.Scope(transport.PullScope)})
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, srv.URL+"/v2/"+path+"/referrers/"+digest, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := rt.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK && strings.HasPrefix(resp.Header.Get("Content-Type"), "application/vnd.oci.image.index.v1+json")
}
