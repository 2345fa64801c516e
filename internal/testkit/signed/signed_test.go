package signed

import (
	"encoding/json"
	"io"
	"log"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/sigstore/sigstore-go/pkg/bundle"
	"github.com/sigstore/sigstore-go/pkg/root"
)

func start(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(registry.New(registry.WithReferrersSupport(true), registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://") + "/app"
}

// TestSignClassicLayout: the signature lands where cosign puts it, in the
// shape cosign gives it.
func TestSignClassicLayout(t *testing.T) {
	repo := start(t)
	digest := PushImage(t, nil, repo, "v1")
	k, c := NewKey(t), NewCA(t)
	SignClassic(t, nil, repo, digest, Spec{Key: k})
	SignClassic(t, nil, repo, digest, Spec{CA: c, Subject: "ci@example.com", Issuer: "https://oidc.example.com", Timestamp: true})

	ref, err := name.NewTag(repo + ":" + sigTag(digest))
	if err != nil {
		t.Fatal(err)
	}
	img, err := remote.Image(ref, remote.WithContext(t.Context()))
	if err != nil {
		t.Fatalf("no signature tag %s: %v", ref, err)
	}
	m, err := img.Manifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Layers) != 2 {
		t.Fatalf("%d layers, want 2 (one per signature)", len(m.Layers))
	}
	for i, want := range [][]string{
		{"dev.cosignproject.cosign/signature"},
		{"dev.cosignproject.cosign/signature", "dev.sigstore.cosign/certificate", "dev.sigstore.cosign/chain", "dev.sigstore.cosign/bundle", "dev.sigstore.cosign/rfc3161timestamp"},
	} {
		l := m.Layers[i]
		if l.MediaType != simpleSigningMediaType {
			t.Errorf("layer %d: media type %s", i, l.MediaType)
		}
		if len(l.Annotations) != len(want) {
			t.Errorf("layer %d: annotations %v, want %v", i, l.Annotations, want)
		}
		for _, a := range want {
			if l.Annotations[a] == "" {
				t.Errorf("layer %d: no annotation %s", i, a)
			}
		}
	}
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	rc, err := layers[0].Compressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	var p struct {
		Critical struct {
			Image struct {
				Digest string `json:"docker-manifest-digest"`
			} `json:"image"`
		} `json:"critical"`
	}
	if err := json.NewDecoder(rc).Decode(&p); err != nil || p.Critical.Image.Digest != digest {
		t.Errorf("payload names %q (%v), want %s", p.Critical.Image.Digest, err, digest)
	}
}

// TestSignBundleLayout: the bundle is a referrer of the digest, of the
// bundle artifact type, and parses as a Sigstore bundle.
func TestSignBundleLayout(t *testing.T) {
	repo := start(t)
	digest := PushImage(t, nil, repo, "v1")
	ref := SignBundle(t, nil, repo, digest, Spec{CA: NewCA(t), Subject: "ci@example.com", Issuer: "https://oidc.example.com"})
	d, err := name.NewDigest(repo + "@" + ref)
	if err != nil {
		t.Fatal(err)
	}
	img, err := remote.Image(d, remote.WithContext(t.Context()))
	if err != nil {
		t.Fatal(err)
	}
	m, err := img.Manifest()
	if err != nil {
		t.Fatal(err)
	}
	if m.ArtifactType != bundleMediaType || m.Subject == nil || m.Subject.Digest.String() != digest {
		t.Fatalf("manifest artifact type %q, subject %v: want %s about %s", m.ArtifactType, m.Subject, bundleMediaType, digest)
	}
	if m.Annotations["dev.sigstore.bundle.predicateType"] != SignPredicateType {
		t.Errorf("annotations %v", m.Annotations)
	}
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	rc, err := layers[0].Compressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	data, err := io.ReadAll(rc)
	if err != nil {
		t.Fatal(err)
	}
	var b bundle.Bundle
	if err := b.UnmarshalJSON(data); err != nil {
		t.Fatalf("not a Sigstore bundle: %v", err)
	}
	if !b.HasInclusionPromise() || !b.HasInclusionProof() {
		t.Error("the Rekor entry lacks its promise or its proof")
	}
}

func TestTrustedRoot(t *testing.T) {
	c := NewCA(t)
	for _, ct := range []bool{false, true} {
		tr, err := root.NewTrustedRootFromJSON(c.TrustedRoot(t, RootOptions{CTLogs: ct}))
		if err != nil {
			t.Fatal(err)
		}
		want := 0
		if ct {
			want = 1
		}
		if len(tr.RekorLogs()) != 1 || len(tr.CTLogs()) != want || len(tr.TimestampingAuthorities()) != 1 {
			t.Errorf("CT logs %v: %d Rekor logs, %d CT logs, %d TSAs", ct, len(tr.RekorLogs()), len(tr.CTLogs()), len(tr.TimestampingAuthorities()))
		}
		for id := range tr.RekorLogs() {
			if _, ok := c.VS.RekorLogs()[id]; !ok {
				t.Errorf("Rekor log %s is not the virtual Sigstore's", id)
			}
		}
	}
}
