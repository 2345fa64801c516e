package discover

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/imagebump/imagebump/config"
	"github.com/imagebump/imagebump/policy"
)

func TestClassify(t *testing.T) {
	tests := []struct {
		tag      string
		registry []string
		kind     Kind
		family   string
	}{
		{"", nil, KindMoving, "moving:"},
		{"latest", nil, KindMoving, "moving:latest"},
		{"stable-alpine", nil, KindMoving, "moving:stable-alpine"},
		{"1.2.3", nil, KindSemVer, "semver:3::"},
		{"v1.2.3", nil, KindSemVer, "semver:3:v:"},
		{"1.2.3-rc.1", nil, KindSemVer, "semver:3::"},
		{"1.25.3-alpine", nil, KindSemVer, "semver:3::-alpine"},
		{"1.25.3-alpine3.19", nil, KindSemVer, "semver:3::-alpine3.19"},
		{"3.12", nil, KindSemVer, "semver:2::"},
		{"3.12-slim", nil, KindSemVer, "semver:2::-slim"},
		{"2024.01.15", nil, KindSemVer, "semver:3::"},
		{"16", []string{"16.4", "16.4.1"}, KindMoving, "moving:16"},
		{"3-slim", []string{"3.12-slim"}, KindMoving, "moving:3-slim"},
		{"16", []string{"17", "18"}, KindNumerical, "numerical:^(?P<build>[0-9]+)$"},
		// Without the registry's tags a lone number may be a major line:
		// a numerical rule would move it to the next major.
		{"16", nil, KindMoving, "moving:16"},
		{"16", []string{}, KindMoving, "moving:16"},
		{"v16", nil, KindMoving, "moving:v16"},
		{"16-alpine", nil, KindMoving, "moving:16-alpine"},
		{"1234", nil, KindNumerical, "numerical:^(?P<build>[0-9]+)$"},
		{"build-41", nil, KindNumerical, "numerical:^build-(?P<build>[0-9]+)$"},
		{"r12", nil, KindNumerical, "numerical:^r(?P<build>[0-9]+)$"},
		{"412-abc1234", nil, KindNumerical, "numerical:^(?P<build>[0-9]+)-[0-9a-f]{7,40}$"},
		{"20240102", nil, KindTimestamp, "timestamp:^(?P<ts>[0-9]{8})$"},
		{"20240101-abc1234", nil, KindTimestamp, "timestamp:^(?P<ts>[0-9]{8})-[0-9a-f]{7,40}$"},
		{"RELEASE.2024-01-02T03-04-05Z", nil, KindTimestamp, `timestamp:^RELEASE\.(?P<ts>[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}-[0-9]{2}-[0-9]{2})Z$`},
		{"main-2024-01-02-7", nil, KindTimestamp, `timestamp:^main-(?P<ts>[0-9]{4}-[0-9]{2}-[0-9]{2})-[0-9]+$`},
		{"abc1234", nil, KindUnordered, "unordered:hash"},
		{"sha-abc1234", nil, KindUnordered, "unordered:hash"},
		{"1.2.3.4", nil, KindUnordered, "unordered:1.2.3.4"},
	}
	for _, tt := range tests {
		t.Run(tt.tag, func(t *testing.T) {
			s := classify(tt.tag, tt.registry)
			if s.kind != tt.kind || s.family != tt.family {
				t.Errorf("classify(%q) = %s %q, want %s %q", tt.tag, s.kind, s.family, tt.kind, tt.family)
			}
		})
	}
}

// propose1 proposes for one repository used with tags.
func propose1(t *testing.T, registry []string, tags ...string) Proposal {
	t.Helper()
	inv := &Inventory{}
	for i, tag := range tags {
		ref := "ghcr.io/acme/app:" + tag
		if tag == "" {
			ref = "ghcr.io/acme/app"
		}
		inv.Uses = append(inv.Uses, Use{File: "f.yaml", Line: i + 1, Path: "image", Repository: "ghcr.io/acme/app", Tag: tag,
			Values: []Value{{Line: i + 1, Column: 8, Value: ref}}})
	}
	opts := ProposeOptions{}
	if registry != nil {
		opts.Tags = map[string][]string{"ghcr.io/acme/app": registry}
	}
	props := Propose(inv, opts)
	if len(props) != 1 {
		t.Fatalf("%d proposals", len(props))
	}
	return props[0]
}

func TestProposeRules(t *testing.T) {
	tests := []struct {
		name     string
		tags     []string
		registry []string
		spec     policy.Spec
		choice   bool
		marked   int
		latest   string
	}{
		{"one version", []string{"1.2.3"}, []string{"1.2.3", "1.9.0", "2.0.0"}, policy.Spec{SemVer: ">=1.2.3 <2.0.0"}, false, 1, "1.9.0"},
		{"floor is the lowest in the major", []string{"1.4.0", "1.2.0"}, nil, policy.Spec{SemVer: ">=1.2.0 <2.0.0"}, false, 2, ""},
		{"highest major kept", []string{"1.4.0", "2.1.0"}, []string{"1.9.0", "2.3.0", "3.0.0"}, policy.Spec{SemVer: ">=2.1.0 <3.0.0"}, false, 1, "2.3.0"},
		{"0.x keeps the minor", []string{"0.4.1"}, []string{"0.4.3", "0.5.0"}, policy.Spec{SemVer: ">=0.4.1 <0.5.0"}, false, 1, "0.4.3"},
		{"prerelease in use", []string{"2.0.0-rc.1"}, []string{"2.0.0-rc.2", "2.0.1", "3.0.0-rc.1"}, policy.Spec{SemVer: ">=2.0.0-0 <3.0.0-0"}, false, 1, "2.0.1"},
		{"calver", []string{"2024.01.15"}, []string{"2025.02.01"}, policy.Spec{SemVer: ">=2024.1.15"}, false, 1, "2025.02.01"},
		{"flavor", []string{"1.25.3-alpine"}, []string{"1.25.3", "1.26.0-alpine", "1.27.0"}, policy.Spec{SemVer: ">=1.25.3 <2.0.0", FilterPattern: `^(?P<version>[0-9]+\.[0-9]+\.[0-9]+)-alpine$`, FilterExtract: "$version"}, false, 1, "1.26.0-alpine"},
		{"two parts", []string{"3.12"}, []string{"3.12", "3.13", "3.13.1", "4.0"}, policy.Spec{SemVer: ">=3.12.0 <4.0.0", FilterPattern: `^(?P<major>[0-9]+)\.(?P<minor>[0-9]+)$`, FilterExtract: "${major}.${minor}.0"}, false, 1, "3.13"},
		{"timestamps", []string{"20240101"}, []string{"20231231", "20240301", "latest"}, policy.Spec{Alphabetical: "asc", FilterPattern: "^(?P<ts>[0-9]{8})$", FilterExtract: "$ts"}, false, 1, "20240301"},
		{"build numbers", []string{"build-9"}, []string{"build-10", "build-9"}, policy.Spec{Numerical: "asc", FilterPattern: "^build-(?P<build>[0-9]+)$", FilterExtract: "$build"}, false, 1, "build-10"},
		{"latest is a choice", []string{"latest"}, []string{"latest"}, policy.Spec{Alphabetical: "asc", FilterPattern: "^latest$", Digest: policy.DigestAlways}, true, 1, "latest"},
		{"no tag is a choice", []string{""}, nil, policy.Spec{Alphabetical: "asc", FilterPattern: "^latest$", Digest: policy.DigestAlways}, true, 1, ""},
		{"lone number without the registry is a choice", []string{"16"}, nil, policy.Spec{Alphabetical: "asc", FilterPattern: "^16$", Digest: policy.DigestAlways}, true, 1, ""},
		{"lone number with no registry tags is a choice", []string{"16"}, []string{}, policy.Spec{Alphabetical: "asc", FilterPattern: "^16$", Digest: policy.DigestAlways}, true, 1, ""},
		{"lone number beside versions without the registry", []string{"16.4.1", "16.4.1", "16"}, nil, policy.Spec{SemVer: ">=16.4.1 <17.0.0"}, false, 2, ""},
		{"majority rules", []string{"1.2.0", "1.3.0", "latest"}, nil, policy.Spec{SemVer: ">=1.2.0 <2.0.0"}, false, 2, ""},
		{"hash", []string{"abc1234"}, []string{"abc1234"}, policy.Spec{}, true, 1, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := propose1(t, tt.registry, tt.tags...)
			if diff := cmp.Diff(p.Spec, tt.spec); diff != "" {
				t.Errorf("spec (-got +want):\n%s", diff)
			}
			if p.Choice != tt.choice || len(p.Uses) != tt.marked || p.Latest != tt.latest {
				t.Errorf("choice %v, %d uses covered, latest %q; want %v, %d, %q (notes %q)", p.Choice, len(p.Uses), p.Latest, tt.choice, tt.marked, tt.latest, p.Notes)
			}
			if len(p.Uses)+len(p.Unmarked) != len(tt.tags) {
				t.Errorf("%d uses + %d unmarked, want %d", len(p.Uses), len(p.Unmarked), len(tt.tags))
			}
			if p.Kind != KindUnordered {
				if _, err := policy.New(p.Spec); err != nil {
					t.Errorf("the proposed rule is refused: %v", err)
				}
			}
		})
	}
}

func TestProposeNames(t *testing.T) {
	use := func(repo, tag, ns, marker string) Use {
		return Use{File: "f.yaml", Line: 1, Repository: repo, Tag: tag, Namespace: ns,
			Values: []Value{{Line: 1, Column: 1, Value: repo + ":" + tag, Marker: marker}}}
	}
	inv := &Inventory{Uses: []Use{
		use("ghcr.io/acme/app", "1.0.0", "prod", ""),
		use("ghcr.io/acme/app", "1.0.0", "prod", ""),
		use("docker.io/other/app", "1.0.0", "prod", ""),
		use("ghcr.io/acme/web", "1.0.0", "web", ""),
		use("ghcr.io/acme/web", "1.0.0", "shop", ""),
		use("ghcr.io/acme/Big_Name", "1.0.0", "", ""),
		use("ghcr.io/acme/kept", "1.0.0", "", "team:kept"),
		use("ghcr.io/acme/api", "1.0.0", "", ""),
		use("ghcr.io/acme/legacy", "1.0.0", "", ""),
	}}
	existing := []Existing{
		{Name: "default:api", Repository: "ghcr.io/other/api"},
		{Name: "ops:legacy", Repository: "ghcr.io/acme/legacy", Spec: policy.Spec{SemVer: ">=1.0.0"}},
	}
	props := Propose(inv, ProposeOptions{Existing: existing})
	got := map[string]string{}
	for _, p := range props {
		got[p.Repository] = p.Policy
		if p.Repository == "ghcr.io/acme/legacy" && !p.Existing {
			t.Errorf("the config's policy for legacy was not reused")
		}
	}
	want := map[string]string{
		"docker.io/other/app":   "prod:other-app",
		"ghcr.io/acme/app":      "prod:acme-app",
		"ghcr.io/acme/web":      "default:web",
		"ghcr.io/acme/Big_Name": "default:big-name",
		"ghcr.io/acme/kept":     "team:kept",
		"ghcr.io/acme/api":      "default:acme-api",
		"ghcr.io/acme/legacy":   "ops:legacy",
	}
	if diff := cmp.Diff(got, want); diff != "" {
		t.Errorf("names (-got +want):\n%s", diff)
	}
	// Stable: the same inventory in another order gets the same names.
	slices.Reverse(inv.Uses)
	for _, p := range Propose(inv, ProposeOptions{Existing: existing}) {
		if got[p.Repository] != p.Policy {
			t.Errorf("%s named %s, then %s", p.Repository, got[p.Repository], p.Policy)
		}
	}
}

func TestNaturalCompare(t *testing.T) {
	got := []string{"1.10.0", "1.9.0", "build-41", "build-9", "", "v2", "v10", "a"}
	slices.SortFunc(got, naturalCompare)
	want := []string{"", "1.9.0", "1.10.0", "a", "build-9", "build-41", "v2", "v10"}
	if diff := cmp.Diff(got, want); diff != "" {
		t.Errorf("(-got +want):\n%s", diff)
	}
}

// TestProposeTargets checks that a new policy is named in a namespace the
// config's targets apply to its files, and that a proposal no target
// applies says so, with what to add.
func TestProposeTargets(t *testing.T) {
	inv := &Inventory{Uses: []Use{{File: "apps/sidecar.yaml", Line: 9, Repository: "ghcr.io/acme/sidecar", Tag: "1.2.0", Namespace: "staging",
		Values: []Value{{Line: 9, Column: 18, Value: "ghcr.io/acme/sidecar:1.2.0"}}}}}
	target := func(policies []string, paths ...string) config.Target {
		return config.Target{Name: "fleet", Git: &config.Git{URL: "https://example.com/deploy.git", Paths: paths}, Policies: policies}
	}
	for _, tc := range []struct {
		name          string
		targets       []config.Target
		want          string
		wantUnapplied string // a part of it
	}{
		{name: "no config", want: "staging:sidecar"},
		{name: "no restriction", targets: []config.Target{target(nil)}, want: "staging:sidecar"},
		{name: "its namespace", targets: []config.Target{target([]string{"staging:*"}, "apps")}, want: "staging:sidecar"},
		{name: "flux-system only", targets: []config.Target{target([]string{"flux-system:*"})}, want: "flux-system:sidecar"},
		{name: "second glob fits", targets: []config.Target{target([]string{"apps:web", "ops:side*"})}, want: "ops:sidecar"},
		{name: "another target's paths", targets: []config.Target{target([]string{"staging:*"}, "clusters"), target([]string{"ops:*"}, "apps/sidecar.yaml")}, want: "ops:sidecar"},
		{name: "no glob fits", targets: []config.Target{target([]string{"flux-system:web"})}, want: "staging:sidecar",
			wantUnapplied: "target fleet scans apps/sidecar.yaml but its policies (flux-system:web) leave staging:sidecar out: add staging:sidecar to them"},
		{name: "not scanned", targets: []config.Target{target([]string{"*:*"}, "clusters", "apps/web.yaml")}, want: "staging:sidecar",
			wantUnapplied: "no target scans apps/sidecar.yaml: add it to the git.paths of a target that applies staging:sidecar"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			props := Propose(inv, ProposeOptions{Targets: tc.targets})
			if len(props) != 1 {
				t.Fatalf("%d proposals", len(props))
			}
			p := props[0]
			if p.Policy != tc.want {
				t.Errorf("named %s, want %s (notes %q)", p.Policy, tc.want, p.Notes)
			}
			if (p.Unapplied == "") != (tc.wantUnapplied == "") || !strings.Contains(p.Unapplied, tc.wantUnapplied) {
				t.Errorf("Unapplied %q, want %q", p.Unapplied, tc.wantUnapplied)
			}
			renamed := slices.ContainsFunc(p.Notes, func(n string) bool { return strings.HasPrefix(n, "named in namespace ") })
			if renamed != (tc.want != "staging:sidecar") {
				t.Errorf("notes %q", p.Notes)
			}
		})
	}
}

// TestProposeMarkedTwice: markers naming one policy on the values of two
// repositories (one copied from another file) proposed that policy twice,
// which no config may hold. The repository with more such markers keeps
// the name; the other is a choice left to the user, naming its markers.
func TestProposeMarkedTwice(t *testing.T) {
	use := func(file, repo, marker string) Use {
		return Use{File: file, Line: 3, Repository: repo, Tag: "1.0.0",
			Values: []Value{{Line: 3, Column: 12, Value: repo + ":1.0.0", Marker: marker}}}
	}
	inv := &Inventory{Uses: []Use{
		use("web.yaml", "ghcr.io/acme/web", "apps:web"),
		use("web2.yaml", "ghcr.io/acme/web", "apps:web"),
		use("api.yaml", "ghcr.io/acme/api", "apps:web"),
		use("db.yaml", "ghcr.io/acme/db", ""),
	}}
	props := Propose(inv, ProposeOptions{})
	byRepo := map[string]Proposal{}
	for _, p := range props {
		byRepo[p.Repository] = p
	}
	if web := byRepo["ghcr.io/acme/web"]; web.Policy != "apps:web" || !web.Writes() {
		t.Errorf("web: %s, writes %v; want apps:web written", web.Policy, web.Writes())
	}
	api := byRepo["ghcr.io/acme/api"]
	if !api.Choice || api.Writes() || api.Marks() {
		t.Errorf("api: choice %v, writes %v, marks %v; want a choice, nothing written or marked", api.Choice, api.Writes(), api.Marks())
	}
	for _, want := range []string{"marked for apps:web", "ghcr.io/acme/web", "api.yaml:3"} {
		if !strings.Contains(api.Reason, want) {
			t.Errorf("api's reason lacks %q: %s", want, api.Reason)
		}
	}
	if slices.ContainsFunc(api.Notes, func(n string) bool { return strings.Contains(n, "the entry is proposed") }) {
		t.Errorf("api's notes say an entry is proposed: %q", api.Notes)
	}
	var written []string
	for _, p := range props {
		if p.Writes() {
			written = append(written, p.Policy)
		}
	}
	slices.Sort(written)
	if len(slices.Compact(slices.Clone(written))) != len(written) {
		t.Errorf("policies written twice: %v", written)
	}
}

// TestProposeTagsNote checks that the note on an image used with several
// tags agrees with what is marked: it said "one policy, and every marked
// value moves to its pick" over every tag in use, those left unmarked
// (which keep their tags) included.
func TestProposeTagsNote(t *testing.T) {
	tests := []struct {
		name     string
		tags     []string
		existing *policy.Spec
		want     string
	}{
		{"every tag followed", []string{"1.3.0", "1.2.0", "1.3.0"}, nil,
			"used with 2 tags (1.2.0 in f.yaml:2; 1.3.0 in f.yaml:1, f.yaml:3): one policy, and every marked value moves to its pick"},
		{"some left unmarked", []string{"1.2.0", "latest", "0.9.0", "1.3.0"}, nil,
			"used with 4 tags, but not all its values follow the policy: those with 1.2.0 (f.yaml:1) or 1.3.0 (f.yaml:4) move to its pick once marked; " +
				"those with 0.9.0 (f.yaml:3) or latest (f.yaml:2) are left unmarked, and keep their tags whatever it picks (Not tracked says why, and how to have one follow it)"},
		{"none followed", []string{"1.2.0", "1.3.0"}, &policy.Spec{SemVer: ">=2.0.0"},
			"used with 2 tags, but none of its values follows the policy: those with 1.2.0 (f.yaml:1) or 1.3.0 (f.yaml:2) are left unmarked, and keep their tags whatever it picks (Not tracked says why, and how to have one follow it)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			inv := &Inventory{}
			for i, tag := range tt.tags {
				inv.Uses = append(inv.Uses, Use{File: "f.yaml", Line: i + 1, Path: "image", Repository: "ghcr.io/acme/app", Tag: tag,
					Values: []Value{{Line: i + 1, Column: 8, Value: "ghcr.io/acme/app:" + tag}}})
			}
			var opts ProposeOptions
			if tt.existing != nil {
				opts.Existing = []Existing{{Name: "apps:app", Repository: "ghcr.io/acme/app", Spec: *tt.existing}}
			}
			props := Propose(inv, opts)
			if len(props) != 1 {
				t.Fatalf("%d proposals", len(props))
			}
			var got []string
			for _, n := range props[0].Notes {
				if strings.HasPrefix(n, "used with") {
					got = append(got, n)
				}
			}
			if diff := cmp.Diff(got, []string{tt.want}); diff != "" {
				t.Errorf("notes (-got +want):\n%s", diff)
			}
		})
	}
}
