package verify

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/imagebump/imagebump/internal/testkit/signed"
)

// FuzzParsePayload: a payload that parses names a sha256 digest and is a
// cosign image signature, and says the same after a round trip.
func FuzzParsePayload(f *testing.F) {
	f.Add([]byte(`{"critical":{"identity":{"docker-reference":"ghcr.io/acme/app"},"image":{"docker-manifest-digest":"` + otherDigest + `"},"type":"cosign container image signature"},"optional":null}`))
	f.Add([]byte(`{"critical":{"image":{"docker-manifest-digest":"sha256:abc"},"type":"cosign container image signature"}}`))
	f.Add([]byte(`{"critical":{"type":"Cosign Container Image Signature","image":{"docker-manifest-digest":"` + otherDigest + `"}}} {}`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := ParsePayload(b)
		if err != nil {
			return
		}
		d := p.Critical.Image.DockerManifestDigest
		if !digestRE.MatchString(d) {
			t.Fatalf("parsed digest %q is not a sha256 digest", d)
		}
		if !strings.EqualFold(p.Critical.Type, SimpleSigningType) {
			t.Fatalf("parsed type %q", p.Critical.Type)
		}
		again, err := json.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		p2, err := ParsePayload(again)
		if err != nil || p2.Critical.Image.DockerManifestDigest != d {
			t.Fatalf("round trip: %v, digest %q, want %q", err, p2.Critical.Image.DockerManifestDigest, d)
		}
	})
}

// FuzzCheckBundle: no bytes make a bundle pass for a key they were not
// signed with, and none make checkBundle panic; whatever is refused has a
// reason.
func FuzzCheckBundle(f *testing.F) {
	f.Add([]byte(`{"mediaType":"application/vnd.dev.sigstore.bundle.v0.3+json","verificationMaterial":{"publicKey":{"hint":"x"}},"dsseEnvelope":{"payload":"e30=","payloadType":"application/vnd.in-toto+json","signatures":[{"sig":"AAAA"}]}}`))
	f.Add([]byte(`{"mediaType":"application/vnd.dev.sigstore.bundle.v0.3+json","verificationMaterial":{"publicKey":{"hint":"x"}},"messageSignature":{"messageDigest":{"algorithm":"SHA2_256","digest":"AAAA"},"signature":"AAAA"}}`))
	f.Add([]byte(`{}`))
	f.Add([]byte(`[`))
	keyFile := signed.NewKey(f).WritePublic(f, f.TempDir(), "fuzz.pub")
	keys, _, err := loadKeys(keyFile)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		v := &Verifier{keys: keys, opts: Options{Key: keyFile}}
		_, serr, err := v.checkBundle(t.Context(), otherDigest, b)
		switch {
		case err == errNotASignature:
		case err != nil:
			t.Fatalf("checkBundle: %v (only registry or root errors are errors)", err)
		case serr == nil:
			t.Fatalf("%q passed", b)
		case serr.Reason.String() == "" || strings.HasPrefix(serr.Reason.String(), "reason("):
			t.Fatalf("refused without a reason: %v", serr)
		}
	})
}
