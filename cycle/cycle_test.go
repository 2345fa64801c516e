package cycle

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/imagebump/imagebump/config"
	"github.com/imagebump/imagebump/registry"
	"github.com/imagebump/imagebump/setters"
)

// fakeRegistry serves fixed tag lists and digests and counts the calls.
type fakeRegistry struct {
	tags    map[string][]string
	digests map[string]string // repository:tag -> digest
	fail    map[string]error

	mu          sync.Mutex
	scanned     []string
	digestCalls []string
}

func (f *fakeRegistry) Scan(_ context.Context, repos []string, _ int) []registry.Result {
	f.mu.Lock()
	f.scanned = append(f.scanned, repos...)
	f.mu.Unlock()
	out := make([]registry.Result, len(repos))
	for i, r := range repos {
		out[i] = registry.Result{Repository: r, Tags: f.tags[r], Err: f.fail[r]}
	}
	return out
}

func (f *fakeRegistry) Digest(_ context.Context, repo, tag, _ string) (string, error) {
	f.mu.Lock()
	f.digestCalls = append(f.digestCalls, repo+":"+tag)
	f.mu.Unlock()
	d, ok := f.digests[repo+":"+tag]
	if !ok {
		return "", errors.New("no digest for " + repo + ":" + tag)
	}
	return d, nil
}

const (
	digestA = "sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	digestB = "sha256:bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
)

func setup(t *testing.T, cfgText string, files map[string]string) (*config.Config, string) {
	t.Helper()
	cfg, err := config.Parse([]byte(cfgText), "imagebump.yaml")
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	for name, content := range files {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return cfg, root
}

func TestRunSharesRepositoriesAndIsolatesFailures(t *testing.T) {
	cfg, root := setup(t, `images:
  - name: a:stable
    repository: reg.example/app
    policy: {semver: ">=1.0.0"}
  - name: a:pre
    repository: reg.example/app
    policy: {semver: ">=1.0.0-0"}
  - name: a:down
    repository: reg.example/down
    policy: {semver: ">=1.0.0"}
`, map[string]string{
		"x.yaml": "s: reg.example/app:1.0.0 # {\"$imagepolicy\": \"a:stable\"}\n" +
			"p: 1.0.0 # {\"$imagepolicy\": \"a:pre:tag\"}\n" +
			"d: reg.example/down:1.0.0 # {\"$imagepolicy\": \"a:down\"}\n",
	})
	reg := &fakeRegistry{
		tags: map[string][]string{"reg.example/app": {"1.0.0", "1.1.0", "1.2.0-rc.1"}},
		fail: map[string]error{"reg.example/down": errors.New("connection refused")},
	}
	rep, err := Run(context.Background(), Options{Config: cfg, Registry: reg, Root: root})
	if err != nil {
		t.Fatal(err)
	}
	// Each repository once; the listings start as the scan finds them,
	// in no set order.
	slices.Sort(reg.scanned)
	if diff := cmp.Diff(reg.scanned, []string{"reg.example/app", "reg.example/down"}); diff != "" {
		t.Errorf("scanned repositories (-got +want):\n%s", diff)
	}
	var got []string
	for _, c := range rep.Changes {
		got = append(got, c.Policy+" "+c.Old+" -> "+c.New)
	}
	want := []string{
		"a:stable reg.example/app:1.0.0 -> reg.example/app:1.1.0",
		"a:pre 1.0.0 -> 1.2.0-rc.1",
	}
	if diff := cmp.Diff(got, want); diff != "" {
		t.Errorf("changes (-got +want):\n%s", diff)
	}
	if !rep.Failed() {
		t.Error("Failed() = false with a failing registry")
	}
	down := rep.Policies[2]
	if down.Err == nil || !strings.Contains(down.Err.Error(), "connection refused") || !strings.Contains(down.Err.Error(), "a:down") {
		t.Errorf("a:down error = %v, want the registry error naming the policy", down.Err)
	}
}

func TestRunNoMatch(t *testing.T) {
	cfg, root := setup(t, `images:
  - name: a:app
    repository: reg.example/app
    policy: {semver: ">=5.0.0"}
`, map[string]string{"x.yaml": "i: reg.example/app:1.0.0 # {\"$imagepolicy\": \"a:app\"}\n"})
	reg := &fakeRegistry{tags: map[string][]string{"reg.example/app": {"1.0.0", "latest"}}}
	rep, err := Run(context.Background(), Options{Config: cfg, Registry: reg, Root: root, Write: true})
	if err != nil {
		t.Fatal(err)
	}
	if !errors.Is(rep.Policies[0].Err, ErrNoMatch) || !strings.Contains(rep.Policies[0].Err.Error(), "2 tags") {
		t.Errorf("error = %v, want ErrNoMatch with the tag count", rep.Policies[0].Err)
	}
	if len(rep.Changes) != 0 {
		t.Errorf("changes = %v, want none", rep.Changes)
	}
}

func TestRunDigestModes(t *testing.T) {
	cfgText := `images:
  - name: a:always
    repository: reg.example/always
    policy: {semver: ">=1.0.0"}
    digest: always
  - name: a:once
    repository: reg.example/once
    policy: {semver: ">=1.0.0"}
    digest: ifNotPresent
  - name: a:never
    repository: reg.example/never
    policy: {semver: ">=1.0.0"}
`
	files := map[string]string{"x.yaml": "a: reg.example/always:1.0.0@" + digestA + " # {\"$imagepolicy\": \"a:always\"}\n" +
		"o: reg.example/once:1.1.0@" + digestA + " # {\"$imagepolicy\": \"a:once\"}\n" +
		"n: reg.example/never:1.0.0 # {\"$imagepolicy\": \"a:never\"}\n"}
	cfg, root := setup(t, cfgText, files)
	reg := &fakeRegistry{
		tags: map[string][]string{
			"reg.example/always": {"1.1.0"},
			"reg.example/once":   {"1.1.0"},
			"reg.example/never":  {"1.1.0"},
		},
		digests: map[string]string{
			"reg.example/always:1.1.0": digestB,
			"reg.example/once:1.1.0":   digestB,
		},
	}
	rep, err := Run(context.Background(), Options{Config: cfg, Registry: reg, Root: root})
	if err != nil {
		t.Fatal(err)
	}
	// ifNotPresent keeps the digest the file pins for the same tag; always
	// asks again; never asks not at all.
	if diff := cmp.Diff(reg.digestCalls, []string{"reg.example/always:1.1.0"}); diff != "" {
		t.Errorf("digest lookups (-got +want):\n%s", diff)
	}
	got := map[string]string{}
	for _, c := range rep.Changes {
		got[c.Policy] = c.New
	}
	want := map[string]string{
		"a:always": "reg.example/always:1.1.0@" + digestB,
		"a:never":  "reg.example/never:1.1.0",
	}
	if diff := cmp.Diff(got, want); diff != "" {
		t.Errorf("new values (-got +want):\n%s", diff)
	}
}

func TestRunPolicySelector(t *testing.T) {
	cfg, root := setup(t, `images:
  - name: prod:app
    repository: reg.example/app
    policy: {semver: ">=1.0.0"}
  - name: dev:app
    repository: reg.example/devapp
    policy: {semver: ">=1.0.0"}
`, map[string]string{"x.yaml": "p: 1.0.0 # {\"$imagepolicy\": \"prod:app:tag\"}\nd: 1.0.0 # {\"$imagepolicy\": \"dev:app:tag\"}\n"})
	reg := &fakeRegistry{tags: map[string][]string{"reg.example/app": {"1.1.0"}, "reg.example/devapp": {"1.1.0"}}}
	rep, err := Run(context.Background(), Options{Config: cfg, Registry: reg, Root: root,
		Policies: func(name string) bool { return strings.HasPrefix(name, "prod:") }})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(reg.scanned, []string{"reg.example/app"}); diff != "" {
		t.Errorf("scanned (-got +want):\n%s", diff)
	}
	if len(rep.Changes) != 1 || rep.Changes[0].Policy != "prod:app" {
		t.Errorf("changes = %+v, want only prod:app", rep.Changes)
	}
	if len(rep.Problems) != 0 {
		t.Errorf("problems = %v: a policy the target does not apply is not unknown", rep.Problems)
	}
}

func TestRunCancelled(t *testing.T) {
	cfg, root := setup(t, `images:
  - name: a:app
    repository: reg.example/app
    policy: {semver: ">=1.0.0"}
`, map[string]string{"x.yaml": "i: 1.0.0 # {\"$imagepolicy\": \"a:app:tag\"}\n"})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := Run(ctx, Options{Config: cfg, Registry: &fakeRegistry{}, Root: root})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", err)
	}
}

func TestSplitReference(t *testing.T) {
	tests := []struct {
		in   string
		want pinned
	}{
		{"reg:5000/app:1.0@" + digestA, pinned{tag: "1.0", digest: digestA}},
		{"reg:5000/app:1.0", pinned{tag: "1.0"}},
		{"reg:5000/app", pinned{}},
		{"app@" + digestA, pinned{digest: digestA}},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			if got := splitReference(tt.in); got != tt.want {
				t.Errorf("splitReference(%q) = %+v, want %+v", tt.in, got, tt.want)
			}
		})
	}
}

// TestPinnedValues: the tag and digest a policy's markers hold are merged
// only while the markers agree; markers that disagree leave the policy out,
// so that ifNotPresent resolves its digest again. The bug it guards
// against: r:2.0 in one file and r:1.0@B in another merged into 2.0@B, and
// tag 2.0 written with the digest of 1.0.
func TestPinnedValues(t *testing.T) {
	image := func(policy, value string) setters.Marker {
		return setters.Marker{Policy: policy, Field: setters.FieldImage, Value: value}
	}
	field := func(policy string, f setters.Field, value string) setters.Marker {
		return setters.Marker{Policy: policy, Field: f, Value: value}
	}
	for _, tt := range []struct {
		name    string
		markers []setters.Marker
		want    map[string]pinned
	}{
		{"one image marker", []setters.Marker{image("a:r", "reg/r:2.0@"+digestB)},
			map[string]pinned{"a:r": {tag: "2.0", digest: digestB}}},
		{"tag and digest fields merge", []setters.Marker{field("a:r", setters.FieldTag, "2.0"), field("a:r", setters.FieldDigest, digestB)},
			map[string]pinned{"a:r": {tag: "2.0", digest: digestB}}},
		{"a tag without digest merges with the same tag pinned", []setters.Marker{image("a:r", "reg/r:2.0"), image("a:r", "reg/r:2.0@"+digestB)},
			map[string]pinned{"a:r": {tag: "2.0", digest: digestB}}},
		{"tags disagree", []setters.Marker{image("a:r", "reg/r:2.0"), image("a:r", "reg/r:1.0@"+digestB)},
			map[string]pinned{}},
		{"tags disagree, the pinned one first", []setters.Marker{image("a:r", "reg/r:1.0@"+digestB), field("a:r", setters.FieldTag, "2.0")},
			map[string]pinned{}},
		{"digests disagree", []setters.Marker{image("a:r", "reg/r:2.0@"+digestA), field("a:r", setters.FieldDigest, digestB)},
			map[string]pinned{}},
		{"a conflict leaves other policies", []setters.Marker{image("a:r", "reg/r:2.0"), image("a:s", "reg/s:3.0@"+digestA), image("a:r", "reg/r:1.0@"+digestB)},
			map[string]pinned{"a:s": {tag: "3.0", digest: digestA}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := pinnedValues(tt.markers)
			if diff := cmp.Diff(got, tt.want, cmp.AllowUnexported(pinned{})); diff != "" {
				t.Errorf("pinnedValues (-got +want):\n%s", diff)
			}
		})
	}
}

// TestRunIfNotPresentConflictingMarkers: with digest ifNotPresent, markers
// of one policy pinning different tags (r:2.0.0 and r:1.0.0@B) make the
// cycle resolve the digest of the pick again, and every marker gets that
// digest. The bug it guards against: 2.0.0 written with 1.0.0's digest B.
func TestRunIfNotPresentConflictingMarkers(t *testing.T) {
	cfg, root := setup(t, `images:
  - name: a:r
    repository: reg.example/r
    policy: {semver: ">=1.0.0"}
    digest: ifNotPresent
`, map[string]string{"x.yaml": "a: reg.example/r:2.0.0 # {\"$imagepolicy\": \"a:r\"}\n" +
		"b: reg.example/r:1.0.0@" + digestB + " # {\"$imagepolicy\": \"a:r\"}\n"})
	reg := &fakeRegistry{
		tags:    map[string][]string{"reg.example/r": {"1.0.0", "2.0.0"}},
		digests: map[string]string{"reg.example/r:2.0.0": digestA, "reg.example/r:1.0.0": digestB},
	}
	rep, err := Run(context.Background(), Options{Config: cfg, Registry: reg, Root: root})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(reg.digestCalls, []string{"reg.example/r:2.0.0"}); diff != "" {
		t.Errorf("digest lookups (-got +want):\n%s", diff)
	}
	var got []string
	for _, c := range rep.Changes {
		got = append(got, c.New)
	}
	if want := []string{"reg.example/r:2.0.0@" + digestA, "reg.example/r:2.0.0@" + digestA}; !slices.Equal(got, want) {
		t.Errorf("new values = %q, want %q", got, want)
	}
}

// TestUnknownPolicyHint checks that a marker naming a policy in the wrong
// namespace, the commonest slip when moving from Flux, gets the name meant.
func TestUnknownPolicyHint(t *testing.T) {
	cfg, root := setup(t, `
images:
  - {name: flux-system:podinfo, repository: reg.example/podinfo, policy: {semver: ">=1.0.0"}}
`, map[string]string{"app.yaml": "image: reg.example/podinfo:1.0.0 # {\"$imagepolicy\": \"default:podinfo\"}\n"})
	for _, run := range []func() ([]string, error){
		func() ([]string, error) {
			rep, err := Run(context.Background(), Options{Config: cfg, Registry: &fakeRegistry{}, Root: root})
			if err != nil {
				return nil, err
			}
			return problemTexts(rep.Problems), nil
		},
		func() ([]string, error) {
			res, err := Validate(context.Background(), cfg, nil, root, nil)
			if err != nil {
				return nil, err
			}
			return problemTexts(res.Problems), nil
		},
	} {
		got, err := run()
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 1 || !strings.Contains(got[0], `did you mean "flux-system:podinfo"?`) {
			t.Errorf("problems = %q, want a hint naming flux-system:podinfo", got)
		}
	}
}

// TestPathThroughFile: a path that runs through a file is reported
// relative to the repository, naming the file, where the error was the
// operating system's, with the working copy's absolute path.
func TestPathThroughFile(t *testing.T) {
	cfg, root := setup(t, `
images:
  - {name: default:app, repository: reg.example/app, policy: {semver: ">=1.0.0"}}
targets:
  - name: fleet
    git: {url: "https://example.com/fleet.git", paths: [apps/good.yaml/x, apps/good.yaml/x/y.yaml]}
`, map[string]string{"apps/good.yaml": "image: reg.example/app:1.0.0 # {\"$imagepolicy\": \"default:app\"}\n"})
	tgt := cfg.Targets()[0]
	want := []string{
		"apps/good.yaml/x: apps/good.yaml is a file, not a folder: give the file itself, or a folder",
		"apps/good.yaml/x/y.yaml: apps/good.yaml is a file, not a folder: give the file itself, or a folder",
	}
	for name, run := range map[string]func() ([]setters.Problem, error){
		"run": func() ([]setters.Problem, error) {
			rep, err := Run(context.Background(), Options{Config: cfg, Registry: &fakeRegistry{}, Root: root, Paths: tgt.Git.Paths})
			if err != nil {
				return nil, err
			}
			return rep.Problems, nil
		},
		"run with an index": func() ([]setters.Problem, error) {
			ix := setters.NewIndex(setters.ByStat, setters.Options{Paths: tgt.Git.Paths, MaxFileSize: cfg.FileSizeLimit()})
			rep, err := Run(context.Background(), Options{Config: cfg, Registry: &fakeRegistry{}, Root: root, Paths: tgt.Git.Paths, Index: ix})
			if err != nil {
				return nil, err
			}
			return rep.Problems, nil
		},
		"validate": func() ([]setters.Problem, error) {
			res, err := Validate(context.Background(), cfg, &tgt, root, nil)
			if err != nil {
				return nil, err
			}
			return res.Problems, nil
		},
	} {
		t.Run(name, func(t *testing.T) {
			problems, err := run()
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(problemTexts(problems), want); diff != "" {
				t.Errorf("problems (-got +want):\n%s", diff)
			}
		})
	}
}

func problemTexts(ps []setters.Problem) []string {
	var out []string
	for _, p := range ps {
		out = append(out, p.Error())
	}
	return out
}

// TestRunMaxFileSize: a marked file over maxFileSize is reported, not
// edited, with and without a marker index; raising the limit edits it.
func TestRunMaxFileSize(t *testing.T) {
	big := "i: reg.example/app:1.0.0 # {\"$imagepolicy\": \"a:app\"}\n" + "# " + strings.Repeat("x", 2000) + "\n"
	for _, tt := range []struct {
		limit   string
		indexed bool
		edited  bool
	}{
		{"1KiB", false, false},
		{"1KiB", true, false},
		{"4KiB", false, true},
		{"4KiB", true, true},
	} {
		t.Run(fmt.Sprintf("%s/index=%v", tt.limit, tt.indexed), func(t *testing.T) {
			cfg, root := setup(t, "maxFileSize: "+tt.limit+`
images:
  - name: a:app
    repository: reg.example/app
    policy: {semver: ">=1.0.0"}
`, map[string]string{"x.yaml": big})
			reg := &fakeRegistry{tags: map[string][]string{"reg.example/app": {"1.0.0", "1.1.0"}}}
			opts := Options{Config: cfg, Registry: reg, Root: root, Write: true}
			if tt.indexed {
				opts.Index = setters.NewIndex(setters.ByStat, setters.Options{MaxFileSize: cfg.FileSizeLimit()})
			}
			rep, err := Run(context.Background(), opts)
			if err != nil {
				t.Fatal(err)
			}
			if got := len(rep.FilesChanged) == 1; got != tt.edited {
				t.Errorf("edited %v (%v), want %v; problems %q", got, rep.FilesChanged, tt.edited, problemTexts(rep.Problems))
			}
			tooLarge := slices.ContainsFunc(rep.Problems, func(p setters.Problem) bool {
				return strings.Contains(p.Error(), "over the limit of 1.0 KiB")
			})
			if tooLarge == tt.edited {
				t.Errorf("problems %q: a too-large report is %v, want %v", problemTexts(rep.Problems), tooLarge, !tt.edited)
			}
		})
	}
}
