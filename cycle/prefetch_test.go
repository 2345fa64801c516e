package cycle

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/imagebump/imagebump/config"
	"github.com/imagebump/imagebump/policy"
	"github.com/imagebump/imagebump/registry"
)

// blockingRegistry lists a repository once its gate is closed, or fails
// it when ctx ends first, and records what it was asked.
type blockingRegistry struct {
	gates map[string]chan struct{}

	mu     sync.Mutex
	listed []string
}

func (b *blockingRegistry) Scan(ctx context.Context, repos []string, _ int) []registry.Result {
	out := make([]registry.Result, len(repos))
	for i, r := range repos {
		b.mu.Lock()
		b.listed = append(b.listed, r)
		b.mu.Unlock()
		out[i] = registry.Result{Repository: r, Tags: []string{"1.0.0", r}}
		if g := b.gates[r]; g != nil {
			select {
			case <-g:
			case <-ctx.Done():
				out[i] = registry.Result{Repository: r, Err: ctx.Err()}
			}
		}
	}
	return out
}

func (b *blockingRegistry) Digest(context.Context, string, string, string) (string, error) {
	return "", errors.New("no digests here")
}

func (b *blockingRegistry) asked() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Sorted(slices.Values(b.listed))
}

func TestListAhead(t *testing.T) {
	images := []*config.Image{
		{Name: "ns:a", Repository: "reg/a"},
		{Name: "ns:a-pre", Repository: "reg/a"}, // shares a's repository
		{Name: "ns:b", Repository: "reg/b"},
		{Name: "ns:c", Repository: "reg/c"},
	}
	reg := &blockingRegistry{gates: map[string]chan struct{}{"reg/b": make(chan struct{})}}
	a := startListAhead(context.Background(), reg, images, 2)
	defer a.stop()

	// What the scan reports, repeated and from several goroutines; a
	// policy that is not one of the images starts nothing.
	var wg sync.WaitGroup
	for _, p := range []string{"ns:a", "ns:a-pre", "ns:b", "ns:a", "ns:other"} {
		wg.Go(func() { a.add(p) })
	}
	wg.Wait()

	// b's listing is still running when the selection asks: Scan waits
	// for it, lists c now, and keeps the order asked.
	done := make(chan []registry.Result)
	go func() { done <- a.Scan(context.Background(), []string{"reg/c", "reg/b", "reg/a"}, 2) }()
	close(reg.gates["reg/b"])
	got := <-done
	var repos []string
	for _, r := range got {
		if r.Err != nil || len(r.Tags) != 2 || r.Tags[1] != r.Repository {
			t.Errorf("result %+v, want the listing of %s", r, r.Repository)
		}
		repos = append(repos, r.Repository)
	}
	if diff := cmp.Diff([]string{"reg/c", "reg/b", "reg/a"}, repos); diff != "" {
		t.Errorf("results' order (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"reg/a", "reg/b", "reg/c"}, reg.asked()); diff != "" {
		t.Errorf("listed (-want +got): each repository once\n%s", diff)
	}
}

// TestListAheadStop checks that stop ends a listing still running.
func TestListAheadStop(t *testing.T) {
	reg := &blockingRegistry{gates: map[string]chan struct{}{"reg/a": make(chan struct{})}}
	a := startListAhead(context.Background(), reg, []*config.Image{{Name: "ns:a", Repository: "reg/a"}}, 1)
	a.add("ns:a")
	a.stop() // returns only once the listing gave up
	if l := a.lists["reg/a"]; l == nil || !errors.Is(l.res.Err, context.Canceled) {
		t.Errorf("the listing after stop: %+v, want it canceled", l)
	}
	var none *listAhead
	none.stop()
}

// TestPicksKeptFromPrevious: a policy's pick is kept from the target's
// last cycle when the same policy sees the same tags, and made again when
// the tags changed, when the config was reloaded (another policy object,
// another rule), or when a gate takes part. The kept pick is told from a
// new one by a Selection the registry's tags could not give.
func TestPicksKeptFromPrevious(t *testing.T) {
	cfg, err := config.Parse([]byte("images:\n  - {name: apps:web, repository: reg.example/web, policy: {semver: \">=1.0.0\"}}\n"), "imagebump.yaml")
	if err != nil {
		t.Fatal(err)
	}
	reloaded, err := config.Parse([]byte("images:\n  - {name: apps:web, repository: reg.example/web, policy: {semver: \"<1.1.0\"}}\n"), "imagebump.yaml")
	if err != nil {
		t.Fatal(err)
	}
	gated, err := config.Parse([]byte("images:\n  - {name: apps:web, repository: reg.example/web, policy: {semver: \">=1.0.0\"}, minAge: 1s}\n"), "imagebump.yaml")
	if err != nil {
		t.Fatal(err)
	}
	tags := []string{"1.0.0", "1.1.0", "1.2.0"}
	reg := &fakeRegistry{tags: map[string][]string{"reg.example/web": tags}}
	ctx := context.Background()
	logger := slog.New(slog.DiscardHandler)
	first := selectImages(ctx, reg, nil, imagesOf(cfg), nil, map[string]*PolicyResult{}, 0, logger)
	if first[0].Latest() != "1.2.0" {
		t.Fatalf("the first pick is %q, want 1.2.0", first[0].Latest())
	}
	// A pick no registry gave, to tell a kept one from a new one.
	marked := first[0]
	marked.Selection.Latest = "kept"
	prev := map[string]*PolicyResult{"apps:web": &marked}
	for _, tt := range []struct {
		name   string
		images []*config.Image
		tags   []string
		want   string
	}{
		{"the same tags", imagesOf(cfg), tags, "kept"},
		{"a new tag", imagesOf(cfg), append(slices.Clone(tags), "1.3.0"), "1.3.0"},
		{"the same tags in another order", imagesOf(cfg), []string{"1.2.0", "1.1.0", "1.0.0"}, "1.2.0"},
		{"a reloaded config", imagesOf(reloaded), tags, "1.0.0"},
	} {
		reg.tags["reg.example/web"] = tt.tags
		if got := selectImages(ctx, reg, nil, tt.images, nil, prev, 0, logger)[0].Latest(); got != tt.want {
			t.Errorf("%s: the pick is %q, want %q", tt.name, got, tt.want)
		}
	}
	// Even with what it was picked from recorded (it is not, for a gated
	// policy), a gate's pick depends on the time and signatures too.
	reg.tags["reg.example/web"] = tags
	gatedImages := imagesOf(gated)
	marked.pickedFrom = pickKey{policy: gatedImages[0].Policy(), tags: tagsSum(tags)}
	gates := NewGates(func() time.Time { return time.Now() }, logger)
	res := selectImages(ctx, reg, gates, gatedImages, nil, map[string]*PolicyResult{"apps:web": &marked}, 0, logger)[0]
	if res.Selection.Latest == "kept" {
		t.Error("a gated policy's pick was kept from the last cycle")
	}
}

// TestKeptPicksReadNoList: the policies of one repository share one
// decoded tag list when two or more of them pick; kept picks need none.
// Not parallel: it counts newTagList's calls.
func TestKeptPicksReadNoList(t *testing.T) {
	cfg, err := config.Parse([]byte(`images:
  - {name: apps:web, repository: reg.example/web, policy: {semver: ">=1.0.0"}}
  - {name: apps:web-1.1, repository: reg.example/web, policy: {semver: "~1.1"}}
  - {name: apps:web-alpha, repository: reg.example/web, policy: {alphabetical: asc}}
`), "imagebump.yaml")
	if err != nil {
		t.Fatal(err)
	}
	lists := 0
	saved := newTagList
	newTagList = func(tags []string) *policy.TagList {
		lists++
		return saved(tags)
	}
	t.Cleanup(func() { newTagList = saved })
	tags := []string{"1.0.0", "1.1.0", "1.1.4", "1.2.0"}
	reg := &fakeRegistry{tags: map[string][]string{"reg.example/web": tags}}
	ctx := context.Background()
	logger := slog.New(slog.DiscardHandler)
	images := imagesOf(cfg)
	want := []string{"1.2.0", "1.1.4", "1.2.0"}
	first := selectImages(ctx, reg, nil, images, nil, nil, 0, logger)
	for i, r := range first {
		if r.Latest() != want[i] {
			t.Fatalf("%s picked %q, want %q", r.Name, r.Latest(), want[i])
		}
	}
	if lists != 1 {
		t.Fatalf("three policies of one repository decoded %d tag lists, want 1", lists)
	}
	prev := map[string]*PolicyResult{}
	for i := range first {
		prev[first[i].Name] = &first[i]
	}
	for _, tt := range []struct {
		name      string
		tags      []string
		keep      int // picks kept from prev
		wantLists int
	}{
		{"the same tags: every pick kept", tags, 3, 0},
		{"the same tags, one pick not kept: it reads the tags alone", tags, 2, 0},
		{"the same tags, two picks not kept: they share a list", tags, 1, 1},
		{"a new tag: no pick kept", append(slices.Clone(tags), "1.3.0"), 3, 1},
	} {
		lists = 0
		reg.tags["reg.example/web"] = tt.tags
		last := map[string]*PolicyResult{}
		for i := range tt.keep {
			last[first[i].Name] = prev[first[i].Name]
		}
		got := selectImages(ctx, reg, nil, images, nil, last, 0, logger)
		for i, r := range got {
			if r.Err != nil {
				t.Errorf("%s: %s: %v", tt.name, r.Name, r.Err)
			}
			if i < tt.keep && len(tt.tags) == len(tags) && r.Latest() != want[i] {
				t.Errorf("%s: %s picked %q, want %q", tt.name, r.Name, r.Latest(), want[i])
			}
		}
		if lists != tt.wantLists {
			t.Errorf("%s: %d tag lists decoded, want %d", tt.name, lists, tt.wantLists)
		}
	}
}

// imagesOf returns the images of cfg, as pointers.
func imagesOf(cfg *config.Config) []*config.Image {
	var out []*config.Image
	for i := range cfg.Images {
		out = append(out, &cfg.Images[i])
	}
	return out
}
