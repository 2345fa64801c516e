package registry

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// createdImage returns a random image of platform p created at t.
func createdImage(t *testing.T, p string, at time.Time) v1.Image {
	t.Helper()
	pl, err := v1.ParsePlatform(p)
	if err != nil {
		t.Fatal(err)
	}
	img, err := mutate.CreatedAt(platformImage(t, *pl), v1.Time{Time: at})
	if err != nil {
		t.Fatal(err)
	}
	return img
}

func TestCreated(t *testing.T) {
	counts := newCounter()
	host := newRegistry(t, counts.wrap)
	c := newClient(t, Options{}, host)
	old := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	newer := old.Add(48 * time.Hour)

	single := pushImage(t, host, "app", createdImage(t, "linux/amd64", old), "1.0.0")
	var idx v1.ImageIndex = mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	for p, at := range map[string]time.Time{"linux/amd64": old, "linux/arm64": newer} {
		pl, _ := v1.ParsePlatform(p)
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: createdImage(t, p, at), Descriptor: v1.Descriptor{Platform: pl}})
	}
	ref, _ := name.NewTag(pushHost(host)+"/app:2.0.0", name.Insecure)
	if err := remote.WriteIndex(ref, idx); err != nil {
		t.Fatal(err)
	}
	d, _ := idx.Digest()
	annotated := mutate.Annotations(createdImage(t, "linux/amd64", old), map[string]string{createdAnnotation: "2026-06-01T00:00:00Z"}).(v1.Image)
	annotatedDigest := pushImage(t, host, "app", annotated, "3.0.0")

	for _, tt := range []struct {
		name, digest string
		want         time.Time
	}{
		{"single image: its config", single, old},
		{"index: the newest platform", d.String(), newer},
		{"annotation wins", annotatedDigest, time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := c.Created(t.Context(), host+"/app", tt.digest)
			if err != nil {
				t.Fatal(err)
			}
			if !got.Equal(tt.want) {
				t.Errorf("Created = %s, want %s", got, tt.want)
			}
			counts.reset()
			if again, err := c.Created(t.Context(), host+"/app", tt.digest); err != nil || !again.Equal(got) || counts.total("") != 0 {
				t.Errorf("a second Created = %s, %v after %d requests; want the cached time and none", again, err, counts.total(""))
			}
		})
	}
}

func TestManifestBlobReferrers(t *testing.T) {
	host := newRegistry(t, nil)
	c := newClient(t, Options{}, host)
	img := createdImage(t, "linux/amd64", time.Now())
	digest := pushImage(t, host, "app", img, "1.0.0")

	m, err := c.Manifest(t.Context(), host+"/app", digest)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := img.RawManifest()
	if string(m.Body) != string(raw) || m.MediaType != string(types.DockerManifestSchema2) {
		t.Errorf("Manifest = %s %q", m.MediaType, m.Body)
	}
	cfgName, _ := img.ConfigName()
	blob, err := c.Blob(t.Context(), host+"/app", cfgName.String())
	if err != nil {
		t.Fatal(err)
	}
	if rawCfg, _ := img.RawConfigFile(); string(blob) != string(rawCfg) {
		t.Errorf("Blob = %q", blob)
	}
	if _, err := c.Blob(t.Context(), host+"/app", "sha256:"+string(make([]byte, 3))); err == nil {
		t.Error("Blob took a malformed digest")
	}
	refs, err := c.Referrers(t.Context(), host+"/app", digest, "")
	if err != nil && !errors.Is(err, ErrReferrersUnsupported) {
		t.Fatal(err)
	}
	if err == nil && len(refs) != 0 {
		t.Errorf("Referrers of an image nothing refers to = %v", refs)
	}
	if _, err := c.Manifest(t.Context(), host+"/app", "9.9.9"); KindOf(err) != KindNotFound {
		t.Errorf("Manifest of a missing tag: kind %v (%v), want not found", KindOf(err), err)
	}
}
