package testregistry

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// tagJobs is how many manifest PUTs Push runs at once.
const tagJobs = 8

// RemoteOptions returns go-containerregistry options that reach s: its transport
// and, with Htpasswd or Token, basic credentials (exchanged for a bearer
// token with Token).
func (s *Server) RemoteOptions(ctx context.Context) []remote.Option {
	auth := authn.Anonymous
	if s.Username != "" {
		auth = &authn.Basic{Username: s.Username, Password: s.Password}
	}
	return []remote.Option{
		remote.WithContext(ctx),
		remote.WithTransport(s.Transport),
		remote.WithAuth(auth),
	}
}

// Push pushes one small random image to repository on s under the first tag,
// then tags it with every other tag by PUTting its manifest, 8 at a time over
// one authenticated connection pool. Every tag of one Push names the same
// digest; each Push makes a new image. 10,000 tags take a few seconds with
// Options.InMemory, and several times longer on the filesystem driver.
func (s *Server) Push(t testing.TB, repository string, tags ...string) {
	t.Helper()
	if len(tags) == 0 {
		t.Fatalf("testregistry: Push %s: no tags given", repository)
	}
	img, err := random.Image(256, 1)
	if err != nil {
		t.Fatalf("testregistry: making a random image: %v", err)
	}
	ctx := t.Context()
	pusher, refs, err := s.pusher(ctx, repository, tags)
	if err != nil {
		t.Fatalf("testregistry: Push: %v", err)
	}
	if err := pusher.Push(ctx, refs[0], img); err != nil {
		t.Fatalf("testregistry: pushing %s: %v", refs[0], err)
	}
	if err := putAll(ctx, pusher, refs[1:], img); err != nil {
		t.Fatalf("testregistry: tagging %s: %v", s.Repo(repository), err)
	}
}

// PushIndex pushes a multi-platform image index to repository:tag on s, one
// small random image per platform ("linux/amd64", "linux/arm64/v8"), and
// returns the index's digest and each platform's manifest digest, keyed by
// the platform string as given.
func (s *Server) PushIndex(t testing.TB, repository, tag string, platforms ...string) (indexDigest string, platformDigests map[string]string) {
	t.Helper()
	if len(platforms) == 0 {
		t.Fatalf("testregistry: PushIndex %s:%s: no platforms given", repository, tag)
	}
	var idx v1.ImageIndex = mutate.IndexMediaType(empty.Index, types.DockerManifestList)
	platformDigests = make(map[string]string, len(platforms))
	for _, p := range platforms {
		platform, err := v1.ParsePlatform(p)
		if err != nil {
			t.Fatalf("testregistry: PushIndex: %v", err)
		}
		img, err := platformImage(platform)
		if err != nil {
			t.Fatalf("testregistry: PushIndex: image for %s: %v", p, err)
		}
		d, err := img.Digest()
		if err != nil {
			t.Fatalf("testregistry: PushIndex: digest for %s: %v", p, err)
		}
		platformDigests[p] = d.String()
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{
			Add:        img,
			Descriptor: v1.Descriptor{Platform: platform},
		})
	}
	d, err := idx.Digest()
	if err != nil {
		t.Fatalf("testregistry: PushIndex: index digest: %v", err)
	}
	ctx := t.Context()
	pusher, refs, err := s.pusher(ctx, repository, []string{tag})
	if err != nil {
		t.Fatalf("testregistry: PushIndex: %v", err)
	}
	if err := pusher.Push(ctx, refs[0], idx); err != nil {
		t.Fatalf("testregistry: pushing index %s: %v", refs[0], err)
	}
	return d.String(), platformDigests
}

// Digest returns the digest that repository:tag names on s, by a HEAD
// request.
func (s *Server) Digest(t testing.TB, repository, tag string) string {
	t.Helper()
	ref, err := name.NewTag(s.Repo(repository) + ":" + tag)
	if err != nil {
		t.Fatalf("testregistry: %v", err)
	}
	desc, err := remote.Head(ref, s.RemoteOptions(t.Context())...)
	if err != nil {
		t.Fatalf("testregistry: HEAD %s: %v", ref, err)
	}
	return desc.Digest.String()
}

// platformImage returns a random image whose config names platform, as a
// real multi-platform build would.
func platformImage(platform *v1.Platform) (v1.Image, error) {
	img, err := random.Image(256, 1)
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS = platform.OS
	cf.Architecture = platform.Architecture
	cf.Variant = platform.Variant
	return mutate.ConfigFile(img, cf)
}

// pusher returns one Pusher for all the tags (it keeps one authenticated
// transport per repository, so tokens are fetched once) and their
// references.
func (s *Server) pusher(ctx context.Context, repository string, tags []string) (*remote.Pusher, []name.Tag, error) {
	refs := make([]name.Tag, len(tags))
	for i, tag := range tags {
		ref, err := name.NewTag(s.Repo(repository) + ":" + tag)
		if err != nil {
			return nil, nil, err
		}
		refs[i] = ref
	}
	pusher, err := remote.NewPusher(s.RemoteOptions(ctx)...)
	if err != nil {
		return nil, nil, err
	}
	return pusher, refs, nil
}

// putAll PUTs the manifest of img under every ref, tagJobs at a time, and
// returns the first error.
func putAll(ctx context.Context, pusher *remote.Pusher, refs []name.Tag, img v1.Image) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	work := make(chan name.Tag)
	var (
		wg       sync.WaitGroup
		once     sync.Once
		firstErr error
	)
	for range min(tagJobs, len(refs)) {
		wg.Go(func() {
			for ref := range work {
				if err := pusher.Put(ctx, ref, img); err != nil {
					once.Do(func() {
						firstErr = fmt.Errorf("PUT manifest %s: %w", ref, err)
						cancel()
					})
				}
			}
		})
	}
feed:
	for _, ref := range refs {
		select {
		case work <- ref:
		case <-ctx.Done():
			break feed
		}
	}
	close(work)
	wg.Wait()
	if firstErr == nil {
		firstErr = ctx.Err()
	}
	return firstErr
}
