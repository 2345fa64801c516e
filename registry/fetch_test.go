package registry

import (
	"errors"
	"strings"
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

// TestCreatedPlaceholder: the Unix epoch (or any time before 2000) that
// reproducible builds write is no creation time: Created fails, naming
// it, where a 1970 image passed any minAge; a later annotation still
// counts over an epoch in the config.
func TestCreatedPlaceholder(t *testing.T) {
	host := newRegistry(t, nil)
	c := newClient(t, Options{}, host)
	epoch := time.Unix(0, 0).UTC()
	repro := pushImage(t, host, "app", createdImage(t, "linux/amd64", epoch), "1.0.0")
	_, err := c.Created(t.Context(), host+"/app", repro)
	if err == nil || !strings.Contains(err.Error(), "records no creation time, only 1970-01-01T00:00:00Z, a placeholder") {
		t.Errorf("Created of an image built at the epoch: %v; want it refused as a placeholder", err)
	}
	at := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	annotated := mutate.Annotations(createdImage(t, "linux/amd64", epoch), map[string]string{createdAnnotation: at.Format(time.RFC3339)}).(v1.Image)
	d := pushImage(t, host, "app", annotated, "2.0.0")
	if got, err := c.Created(t.Context(), host+"/app", d); err != nil || !got.Equal(at) {
		t.Errorf("Created with an annotation over an epoch config = %s, %v; want %s", got, err, at)
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
