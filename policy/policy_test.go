package policy_test

import (
	"encoding/json"
	"errors"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/imagebump/imagebump/policy"
)

// selectCase is one Select call and what it must give.
type selectCase struct {
	name string
	spec policy.Spec
	tags []string
	want policy.Result
}

// result builds a Result for tags, with nil lists as empty ones, the way
// Select returns them.
func result(seen int, latest string, excluded, filtered, skipped, candidates []string, warnings ...string) policy.Result {
	orEmpty := func(s []string) []string {
		if s == nil {
			return []string{}
		}
		return s
	}
	r := policy.Result{
		Seen: seen, Latest: latest, Invalid: []string{},
		Excluded: orEmpty(excluded), Filtered: orEmpty(filtered),
		Skipped: orEmpty(skipped), Candidates: orEmpty(candidates),
	}
	if len(warnings) > 0 {
		r.Warnings = warnings
	}
	return r
}

// withInvalid sets the Invalid list of r.
func withInvalid(r policy.Result, invalid ...string) policy.Result {
	r.Invalid = invalid
	return r
}

func runSelect(t *testing.T, tests []selectCase) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := policy.New(tt.spec)
			if err != nil {
				t.Fatalf("New(%+v): %v", tt.spec, err)
			}
			want := tt.want
			want.Counts = policy.Counts{Invalid: len(want.Invalid), Excluded: len(want.Excluded), Filtered: len(want.Filtered), Skipped: len(want.Skipped), Candidates: len(want.Candidates)}
			got := p.Select(tt.tags)
			if diff := cmp.Diff(got, want); diff != "" {
				t.Errorf("Select(%q) mismatch (-got +want):\n%s", tt.tags, diff)
			}
			// Pick gives the same, counted, without the lists.
			want.Excluded, want.Filtered, want.Skipped, want.Candidates = nil, nil, nil, nil
			picked, err := p.Pick(t.Context(), tt.tags)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(picked, want); diff != "" {
				t.Errorf("Pick(%q) mismatch (-got +want):\n%s", tt.tags, diff)
			}
		})
	}
}

func TestSelectSemVer(t *testing.T) {
	runSelect(t, []selectCase{
		{
			name: "~5.3.x over 5.2.9 5.3.0 5.3.12 5.4.0",
			spec: policy.Spec{SemVer: "~5.3.x"},
			tags: []string{"5.2.9", "5.3.0", "5.3.12", "5.4.0"},
			want: result(4, "5.3.12", nil, nil, []string{"5.2.9", "5.4.0"}, []string{"5.3.0", "5.3.12"}),
		},
		{
			name: ">=1.0.0 never picks 1.1.0-rc.1",
			spec: policy.Spec{SemVer: ">=1.0.0"},
			tags: []string{"1.0.0", "1.1.0-rc.1"},
			want: result(2, "1.0.0", nil, nil, []string{"1.1.0-rc.1"}, []string{"1.0.0"}),
		},
		{
			name: ">=1.0.0-0 picks 1.1.0-rc.1",
			spec: policy.Spec{SemVer: ">=1.0.0-0"},
			tags: []string{"1.0.0", "1.1.0-rc.1"},
			want: result(2, "1.1.0-rc.1", nil, nil, nil, []string{"1.0.0", "1.1.0-rc.1"}),
		},
		{
			name: "prerelease ordering within an admitting range",
			spec: policy.Spec{SemVer: ">=2.0.0-0"},
			tags: []string{"2.0.0-rc.2", "2.0.0-rc.10", "2.0.0-beta.1"},
			want: result(3, "2.0.0-rc.10", nil, nil, nil, []string{"2.0.0-rc.2", "2.0.0-rc.10", "2.0.0-beta.1"}),
		},
		{
			name: "1.2 v1 latest are not candidates",
			spec: policy.Spec{SemVer: "^1.2"},
			tags: []string{"1.2", "v1", "latest", "1.3.0", "1.2-rc.1"},
			want: result(5, "1.3.0", nil, nil, []string{"1.2", "v1", "latest", "1.2-rc.1"}, []string{"1.3.0"}),
		},
		{
			name: "v prefix kept in the winner",
			spec: policy.Spec{SemVer: ">=1.0.0 <2"},
			tags: []string{"1.2.2", "v1.2.3", "2.0.0", "v0.9.0"},
			want: result(4, "v1.2.3", nil, nil, []string{"2.0.0", "v0.9.0"}, []string{"1.2.2", "v1.2.3"}),
		},
		{
			name: "not versions: vv1.2.3 V1.2.3 1.2.3.4 1.2.3- 1.2.3_4",
			spec: policy.Spec{SemVer: "*"},
			tags: []string{"vv1.2.3", "V1.2.3", "1.2.3.4", "1.2.3-", "1.2.3_4", "1.0.0"},
			want: result(6, "1.0.0", nil, nil, []string{"vv1.2.3", "V1.2.3", "1.2.3.4", "1.2.3-", "1.2.3_4"}, []string{"1.0.0"}),
		},
		{
			name: "leading zeros in a date-like version",
			spec: policy.Spec{SemVer: ">=2025.0.0"},
			tags: []string{"2025.01.07", "2025.01.10", "2024.12.31", "v2025.01.09"},
			want: result(4, "2025.01.10", nil, nil, []string{"2024.12.31"}, []string{"2025.01.07", "2025.01.10", "v2025.01.09"}),
		},
		{
			name: "tie v1.0.0 vs 1.0.0 goes to the greater tag",
			spec: policy.Spec{SemVer: ">=1.0.0"},
			tags: []string{"v1.0.0", "1.0.0"},
			want: result(2, "v1.0.0", nil, nil, nil, []string{"v1.0.0", "1.0.0"}),
		},
		{
			name: "tie on build metadata 1.0.0+a vs 1.0.0+b, extracted",
			spec: policy.Spec{SemVer: "1.0.0", FilterPattern: `^(.*)_(.*)$`, FilterExtract: "$1+$2"},
			tags: []string{"1.0.0_b", "1.0.0_a"},
			want: result(2, "1.0.0_b", nil, nil, nil, []string{"1.0.0_b", "1.0.0_a"}),
		},
		{
			name: "nothing in range",
			spec: policy.Spec{SemVer: ">=3"},
			tags: []string{"1.0.0", "latest"},
			want: result(2, "", nil, nil, []string{"1.0.0", "latest"}, nil),
		},
		{
			name: "empty tag list",
			spec: policy.Spec{SemVer: ">=1"},
			tags: nil,
			want: result(0, "", nil, nil, nil, nil),
		},
		{
			name: "empty string is invalid",
			spec: policy.Spec{SemVer: ">=1"},
			tags: []string{"", "1.0.0"},
			want: withInvalid(result(2, "1.0.0", nil, nil, nil, []string{"1.0.0"},
				`skipped 1 tag that is not a valid OCI tag ([A-Za-z0-9_][A-Za-z0-9._-]{0,127}): ""`), ""),
		},
		{
			name: "build metadata is not a tag",
			spec: policy.Spec{SemVer: ">=1"},
			tags: []string{"1.0.0+b", "1.0.0"},
			want: withInvalid(result(2, "1.0.0", nil, nil, nil, []string{"1.0.0"},
				`skipped 1 tag that is not a valid OCI tag ([A-Za-z0-9_][A-Za-z0-9._-]{0,127}): "1.0.0+b"`), "1.0.0+b"),
		},
	})
}

func TestSelectAlphabetical(t *testing.T) {
	minio := []string{
		"RELEASE.2022-10-08T20-11-00Z", "latest", "RELEASE.2022-10-22T19-06-08Z",
		"RELEASE.2022-10-20T00-55-09Z", "RELEASE.2022-10-22T19-06-08Z.sig",
	}
	runSelect(t, []selectCase{
		{
			name: "asc: the last wins",
			spec: policy.Spec{Alphabetical: "asc"},
			tags: []string{"b", "c", "a"},
			want: result(3, "c", nil, nil, nil, []string{"b", "c", "a"}),
		},
		{
			name: "desc: the first wins",
			spec: policy.Spec{Alphabetical: "desc"},
			tags: []string{"b", "c", "a"},
			want: result(3, "a", nil, nil, nil, []string{"b", "c", "a"}),
		},
		{
			name: "byte-wise: upper case before lower case",
			spec: policy.Spec{Alphabetical: "asc"},
			tags: []string{"Zeta", "alpha"},
			want: result(2, "alpha", nil, nil, nil, []string{"Zeta", "alpha"}),
		},
		{
			name: "Flux's minio RELEASE example with $timestamp",
			spec: policy.Spec{Alphabetical: "asc", FilterPattern: `^RELEASE\.(?P<timestamp>.*)Z$`, FilterExtract: "$timestamp"},
			tags: minio,
			want: result(5, "RELEASE.2022-10-22T19-06-08Z",
				[]string{"RELEASE.2022-10-22T19-06-08Z.sig"}, []string{"latest"}, nil,
				[]string{"RELEASE.2022-10-08T20-11-00Z", "RELEASE.2022-10-22T19-06-08Z", "RELEASE.2022-10-20T00-55-09Z"}),
		},
		{
			name: "minio desc picks the oldest",
			spec: policy.Spec{Alphabetical: "desc", FilterPattern: `^RELEASE\.(?P<timestamp>.*)Z$`, FilterExtract: "$timestamp"},
			tags: minio,
			want: result(5, "RELEASE.2022-10-08T20-11-00Z",
				[]string{"RELEASE.2022-10-22T19-06-08Z.sig"}, []string{"latest"}, nil,
				[]string{"RELEASE.2022-10-08T20-11-00Z", "RELEASE.2022-10-22T19-06-08Z", "RELEASE.2022-10-20T00-55-09Z"}),
		},
		{
			name: "extract collision goes to the greater tag, asc and desc alike",
			spec: policy.Spec{Alphabetical: "desc", FilterPattern: `^(?:main|dev)-(?P<n>\d+)$`, FilterExtract: "${n}"},
			tags: []string{"main-1", "dev-1", "main-2"},
			want: result(3, "main-1", nil, nil, nil, []string{"main-1", "dev-1", "main-2"}),
		},
	})
}

func TestSelectNumerical(t *testing.T) {
	runSelect(t, []selectCase{
		{
			name: "asc: the highest wins",
			spec: policy.Spec{Numerical: "asc"},
			tags: []string{"9", "10", "2.5"},
			want: result(3, "10", nil, nil, nil, []string{"9", "10", "2.5"}),
		},
		{
			name: "desc: the lowest wins",
			spec: policy.Spec{Numerical: "desc"},
			tags: []string{"9", "10", "0.5", "2.5"},
			want: result(4, "0.5", nil, nil, nil, []string{"9", "10", "0.5", "2.5"}),
		},
		{
			name: "latest and NaN are skipped with warnings",
			spec: policy.Spec{Numerical: "asc"},
			tags: []string{"latest", "3", "NaN", "main", "Inf", "1e400", "7"},
			want: result(7, "7", nil, nil, []string{"latest", "NaN", "main", "Inf", "1e400"}, []string{"3", "7"},
				`numerical: skipped 2 tags whose value is not a number: "latest", "main"`,
				`numerical: skipped 3 tags whose value is not a finite number: "NaN", "Inf", "1e400"`),
		},
		{
			name: "only non-numbers: no match",
			spec: policy.Spec{Numerical: "asc"},
			tags: []string{"latest"},
			want: result(1, "", nil, nil, []string{"latest"}, nil,
				`numerical: skipped 1 tag whose value is not a number: "latest"`),
		},
		{
			name: "warning names five tags at most",
			spec: policy.Spec{Numerical: "asc"},
			tags: []string{"a", "b", "c", "d", "e", "f", "g"},
			want: result(7, "", nil, nil, []string{"a", "b", "c", "d", "e", "f", "g"}, nil,
				`numerical: skipped 7 tags whose value is not a number: "a", "b", "c", "d", "e" and 2 more`),
		},
		{
			name: "tie 1 vs 1.0 goes to the greater tag",
			spec: policy.Spec{Numerical: "asc"},
			tags: []string{"1.0", "1"},
			want: result(2, "1.0", nil, nil, nil, []string{"1.0", "1"}),
		},
		{
			name: "tie in desc order too",
			spec: policy.Spec{Numerical: "desc"},
			tags: []string{"1", "1.0", "2"},
			want: result(3, "1.0", nil, nil, nil, []string{"1", "1.0", "2"}),
		},
		{
			// Two groups and no text between: the value is both
			// expanded, not the last group alone (which would rank
			// 20250101-9 above 20250102-1).
			name: "two groups joined with nothing between",
			spec: policy.Spec{Numerical: "asc", FilterPattern: `^(?P<d>\d{8})-(?P<n>\d)$`, FilterExtract: "$d$n"},
			tags: []string{"20250101-9", "20250102-1"},
			want: result(2, "20250102-1", nil, nil, nil, []string{"20250101-9", "20250102-1"}),
		},
		{
			name: "build numbers extracted with $1",
			spec: policy.Spec{Numerical: "asc", FilterPattern: `^main-[a-f0-9]+-(\d+)$`, FilterExtract: "$1"},
			tags: []string{"main-abc123-99", "main-def456-100", "pr-7-1000", "main-0a1b-98"},
			want: result(4, "main-def456-100", nil, []string{"pr-7-1000"}, nil, []string{"main-abc123-99", "main-def456-100", "main-0a1b-98"}),
		},
	})
}

func TestSelectFilterAndExclude(t *testing.T) {
	runSelect(t, []selectCase{
		{
			name: "pattern is unanchored",
			spec: policy.Spec{SemVer: ">=1.0.0-0", FilterPattern: `rc`},
			tags: []string{"1.0.0", "1.1.0-rc.1", "1.2.0-beta.1"},
			want: result(3, "1.1.0-rc.1", nil, []string{"1.0.0", "1.2.0-beta.1"}, nil, []string{"1.1.0-rc.1"}),
		},
		{
			name: "semver over an extracted version keeps the original tag",
			spec: policy.Spec{SemVer: ">=1.0.0", FilterPattern: `^app-(?P<version>.*)$`, FilterExtract: "${version}"},
			tags: []string{"app-1.2.0", "app-1.10.0", "web-9.0.0", "app-latest"},
			want: result(4, "app-1.10.0", nil, []string{"web-9.0.0"}, []string{"app-latest"}, []string{"app-1.2.0", "app-1.10.0"}),
		},
		{
			name: "template with literal text",
			spec: policy.Spec{SemVer: ">=1.0.0", FilterPattern: `^(\d+)\.(\d+)-(\d+)$`, FilterExtract: "$1.${2}.$3"},
			tags: []string{"1.9-3", "1.10-0", "2"},
			want: result(3, "1.10-0", nil, []string{"2"}, nil, []string{"1.9-3", "1.10-0"}),
		},
		{
			name: "default exclusions .sig .att .sbom",
			spec: policy.Spec{Alphabetical: "asc"},
			tags: []string{"sha256-abc.sig", "sha256-abc.att", "sha256-abc.sbom", "a", "z.signed"},
			want: result(5, "z.signed", []string{"sha256-abc.sig", "sha256-abc.att", "sha256-abc.sbom"}, nil, nil, []string{"a", "z.signed"}),
		},
		{
			name: "exclusions replace the defaults, as Flux's exclusionList",
			spec: policy.Spec{Alphabetical: "asc", Exclude: []string{`^latest$`}, ExcludeReplacesDefaults: true},
			tags: []string{"sha256-abc.sig", "latest", "a"},
			want: result(3, "sha256-abc.sig", []string{"latest"}, nil, nil, []string{"sha256-abc.sig", "a"}),
		},
		{
			name: "no exclusions at all",
			spec: policy.Spec{Alphabetical: "asc", ExcludeReplacesDefaults: true},
			tags: []string{"a", "x.att"},
			want: result(2, "x.att", nil, nil, nil, []string{"a", "x.att"}),
		},
		{
			name: "exclusions run before the filter",
			spec: policy.Spec{SemVer: ">=1", FilterPattern: `^v`, Exclude: []string{`-debug$`}},
			tags: []string{"v1.0.0", "v2.0.0-debug", "2.0.0", "v1.0.0.sig"},
			want: result(4, "v1.0.0", []string{"v2.0.0-debug", "v1.0.0.sig"}, []string{"2.0.0"}, nil, []string{"v1.0.0"}),
		},
		{
			name: "no match: everything excluded or filtered",
			spec: policy.Spec{SemVer: ">=1", FilterPattern: `^prod-`, Exclude: []string{`^prod-old`}},
			tags: []string{"prod-old-1.0.0", "1.0.0", "x.sig"},
			want: result(3, "", []string{"prod-old-1.0.0", "x.sig"}, []string{"1.0.0"}, nil, nil),
		},
	})
}

// TestSelectShuffled checks that ties break the same way whatever the order
// of the tags.
func TestSelectShuffled(t *testing.T) {
	tests := []struct {
		name string
		spec policy.Spec
		tags []string
		want string
	}{
		{"semver v1.0.0 vs 1.0.0", policy.Spec{SemVer: ">=1"}, []string{"1.0.0", "v1.0.0", "0.9.0", "latest"}, "v1.0.0"},
		{"semver build metadata", policy.Spec{SemVer: ">=1", FilterPattern: `^([^_]*)(?:_(.*))?$`, FilterExtract: "$1+$2"}, []string{"1.0.0_a", "1.0.0_c", "1.0.0_b", "1.0.0_"}, "1.0.0_c"},
		{"semver leading zeros", policy.Spec{SemVer: ">=1"}, []string{"2025.1.7", "2025.01.07", "v2025.1.07"}, "v2025.1.07"},
		{"numerical 1 vs 1.0 vs 1e0", policy.Spec{Numerical: "asc"}, []string{"1", "1.0", "1e0", "0.5"}, "1e0"},
		{"numerical desc 0 vs 00 vs 0.0", policy.Spec{Numerical: "desc"}, []string{"0", "00", "0.0", "3"}, "00"},
		{"alphabetical extract collision", policy.Spec{Alphabetical: "asc", FilterPattern: `-(\d+)$`, FilterExtract: "$1"}, []string{"a-5", "c-5", "b-5", "a-4"}, "c-5"},
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := policy.New(tt.spec)
			if err != nil {
				t.Fatal(err)
			}
			tags := append([]string(nil), tt.tags...)
			for range 200 {
				rng.Shuffle(len(tags), func(i, j int) { tags[i], tags[j] = tags[j], tags[i] })
				if got := p.Select(tags).Latest; got != tt.want {
					t.Fatalf("Select(%q).Latest = %q, want %q", tags, got, tt.want)
				}
			}
		})
	}
}

func TestNewErrors(t *testing.T) {
	tests := []struct {
		name      string
		spec      policy.Spec
		wantField string
		wantText  string
	}{
		{"no kind", policy.Spec{}, "policy", "policy: one of semver, alphabetical or numerical must be set"},
		{"two kinds", policy.Spec{SemVer: "*", Numerical: "asc"}, "policy", "policy: only one of semver, alphabetical or numerical may be set, found semver and numerical"},
		{"three kinds", policy.Spec{SemVer: "*", Alphabetical: "asc", Numerical: "asc"}, "policy", "policy: only one of semver, alphabetical or numerical may be set, found semver and alphabetical and numerical"},
		{"bad range", policy.Spec{SemVer: ">=y"}, "semver", `semver: invalid range ">=y": improper constraint: ">=y"`},
		{"bad alphabetical order", policy.Spec{Alphabetical: "ASC"}, "alphabetical", `alphabetical: invalid order "ASC": must be "asc" or "desc"`},
		{"bad numerical order", policy.Spec{Numerical: "up"}, "numerical", `numerical: invalid order "up": must be "asc" or "desc"`},
		{"bad pattern", policy.Spec{SemVer: "*", FilterPattern: `(`}, "filterTags.pattern", "filterTags.pattern: invalid pattern \"(\": error parsing regexp: missing closing ): `(`"},
		{"bad exclusion", policy.Spec{SemVer: "*", Exclude: []string{"ok", `a{2,1}`}}, "exclude[1]", "exclude[1]: invalid pattern \"a{2,1}\": error parsing regexp: invalid repeat count: `{2,1}`"},
		{"extract without pattern", policy.Spec{SemVer: "*", FilterExtract: "$v"}, "filterTags.extract", `filterTags.extract: invalid template "$v": extract needs filterTags.pattern`},
		{"extract names a missing group", policy.Spec{SemVer: "*", FilterPattern: `^v(?P<version>.*)$`, FilterExtract: "$ver"}, "filterTags.extract", `filterTags.extract: invalid template "$ver": pattern has no group named "ver"`},
		{"extract braced missing group", policy.Spec{SemVer: "*", FilterPattern: `^v(?P<version>.*)$`, FilterExtract: "${ts}"}, "filterTags.extract", `filterTags.extract: invalid template "${ts}": pattern has no group named "ts"`},
		{"extract missing group number", policy.Spec{SemVer: "*", FilterPattern: `^(\d+)-(\d+)$`, FilterExtract: "$3"}, "filterTags.extract", `filterTags.extract: invalid template "$3": pattern has no group 3 (it has 2)`},
		{"extract $1x is a name", policy.Spec{SemVer: "*", FilterPattern: `^(\d+)$`, FilterExtract: "$1x"}, "filterTags.extract", `filterTags.extract: invalid template "$1x": pattern has no group named "1x"; to follow group 1 with "x", write ${1}x`},
		{"extract $ts_x is a name", policy.Spec{SemVer: "*", FilterPattern: `^(?P<ts>\d+)$`, FilterExtract: "$ts_x"}, "filterTags.extract", `filterTags.extract: invalid template "$ts_x": pattern has no group named "ts_x"; to follow group ts with "_x", write ${ts}_x`},
		{"extract $01 is a name", policy.Spec{SemVer: "*", FilterPattern: `^(\d+)$`, FilterExtract: "$01"}, "filterTags.extract", `filterTags.extract: invalid template "$01": pattern has no group named "01"; to follow group 0 with "1", write ${0}1`},
		{"extract second reference missing", policy.Spec{SemVer: "*", FilterPattern: `^(?P<a>\d+)$`, FilterExtract: "$a.$b"}, "filterTags.extract", `filterTags.extract: invalid template "$a.$b": pattern has no group named "b"`},
		{"extract unclosed brace", policy.Spec{SemVer: "*", FilterPattern: `^(?P<ts>\d+)$`, FilterExtract: "${ts"}, "filterTags.extract", `filterTags.extract: invalid template "${ts": "${ts" has no closing brace or no group name`},
		{"bad digest mode", policy.Spec{SemVer: "*", Digest: "Always"}, "digest", `digest: invalid mode "Always": must be "never", "always" or "ifNotPresent"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := policy.New(tt.spec)
			if err == nil {
				t.Fatalf("New(%+v) = %v, want an error", tt.spec, p)
			}
			var se *policy.SpecError
			if !errors.As(err, &se) {
				t.Fatalf("New(%+v) error %T is not a *SpecError: %v", tt.spec, err, err)
			}
			if se.Field != tt.wantField {
				t.Errorf("Field = %q, want %q", se.Field, tt.wantField)
			}
			if got := err.Error(); got != tt.wantText {
				t.Errorf("Error() =\n%s\nwant\n%s", got, tt.wantText)
			}
		})
	}
}

func TestNewAccepts(t *testing.T) {
	tests := []struct {
		name string
		spec policy.Spec
	}{
		{"every digest mode: empty", policy.Spec{SemVer: "*"}},
		{"never", policy.Spec{SemVer: "*", Digest: policy.DigestNever}},
		{"always", policy.Spec{SemVer: "*", Digest: policy.DigestAlways}},
		{"ifNotPresent", policy.Spec{SemVer: "*", Digest: policy.DigestIfNotPresent}},
		{"$0 is the whole match", policy.Spec{Alphabetical: "asc", FilterPattern: `x`, FilterExtract: "$0"}},
		{"$$ is a dollar", policy.Spec{Alphabetical: "asc", FilterPattern: `x`, FilterExtract: "$$v"}},
		{"lone $ is text", policy.Spec{Alphabetical: "asc", FilterPattern: `x`, FilterExtract: "a$-b$"}},
		{"duplicate group names", policy.Spec{Alphabetical: "asc", FilterPattern: `^(?:a(?P<n>\d+)|b(?P<n>\d+))$`, FilterExtract: "$n"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := policy.New(tt.spec); err != nil {
				t.Errorf("New(%+v): %v", tt.spec, err)
			}
		})
	}
}

func TestSpecIsCopied(t *testing.T) {
	spec := policy.Spec{SemVer: ">=1", Exclude: []string{"^x$"}}
	p, err := policy.New(spec)
	if err != nil {
		t.Fatal(err)
	}
	spec.Exclude[0] = "^1"
	if got := p.Select([]string{"1.0.0", "x"}).Latest; got != "1.0.0" {
		t.Errorf("after the caller changed its Exclude, Latest = %q, want 1.0.0", got)
	}
	got := p.Spec()
	got.Exclude[0] = "changed"
	if diff := cmp.Diff(p.Spec(), policy.Spec{SemVer: ">=1", Exclude: []string{"^x$"}}); diff != "" {
		t.Errorf("Spec() mismatch (-got +want):\n%s", diff)
	}
}

func TestSummary(t *testing.T) {
	tests := []struct {
		name string
		spec policy.Spec
		tags []string
		want string
	}{
		{"picked", policy.Spec{SemVer: "~5.3.x"}, []string{"5.2.9", "5.3.0", "5.3.12", "5.4.0"}, "picked 5.3.12 from 4 tags (0 excluded, 0 filtered, 2 skipped)"},
		{"one tag", policy.Spec{SemVer: "*"}, []string{"1.0.0"}, "picked 1.0.0 from 1 tag (0 excluded, 0 filtered, 0 skipped)"},
		{"no match", policy.Spec{SemVer: "*", FilterPattern: "^v"}, []string{"a.sig", "1.0.0", "2.0.0", "vlatest"}, "no tag matches: 4 tags seen, 1 excluded, 2 filtered, 1 skipped"},
		{"no tags", policy.Spec{Numerical: "asc"}, nil, "no tag matches: 0 tags seen, 0 excluded, 0 filtered, 0 skipped"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := policy.New(tt.spec)
			if err != nil {
				t.Fatal(err)
			}
			if got := p.Select(tt.tags).Summary(); got != tt.want {
				t.Errorf("Summary() = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestResultJSON(t *testing.T) {
	p, err := policy.New(policy.Spec{SemVer: "*"})
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(p.Select([]string{"1.0.0"}))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"seen":1,"invalid":[],"excluded":[],"filtered":[],"skipped":[],"candidates":["1.0.0"],"latest":"1.0.0"}`
	if got := string(b); got != want {
		t.Errorf("JSON = %s, want %s", got, want)
	}
}

func TestPolicerLatest(t *testing.T) {
	mustSemVer := func(r string) policy.Policer {
		p, err := policy.NewSemVer(r)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	mustAlpha := func(o string) policy.Policer {
		p, err := policy.NewAlphabetical(o)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	mustNum := func(o string) policy.Policer {
		p, err := policy.NewNumerical(o)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	tests := []struct {
		name    string
		policer policy.Policer
		values  []string
		want    string
		wantErr error
	}{
		{"semver", mustSemVer(">=1"), []string{"1.0.0", "v1.1.0", "latest"}, "v1.1.0", nil},
		{"semver none", mustSemVer(">=1"), []string{"latest"}, "", policy.ErrNoMatch},
		{"semver empty list", mustSemVer(">=1"), nil, "", policy.ErrNoMatch},
		{"alphabetical asc", mustAlpha("asc"), []string{"a", "c", "b"}, "c", nil},
		{"alphabetical desc", mustAlpha("desc"), []string{"b", "a", "c"}, "a", nil},
		{"alphabetical ignores empty", mustAlpha("desc"), []string{"b", ""}, "b", nil},
		{"alphabetical only empty", mustAlpha("asc"), []string{""}, "", policy.ErrNoMatch},
		{"numerical asc", mustNum("asc"), []string{"1", "latest", "20", "3"}, "20", nil},
		{"numerical desc", mustNum("desc"), []string{"1", "latest", "20", "0.5"}, "0.5", nil},
		{"numerical never picks an invalid tag", mustNum("desc"), []string{"1", "-3"}, "1", nil},
		{"alphabetical never picks an invalid tag", mustAlpha("asc"), []string{"a", "{{ .X }}", "${VAR}"}, "a", nil},
		{"numerical none", mustNum("asc"), []string{"NaN", "x"}, "", policy.ErrNoMatch},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.policer.Latest(tt.values)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("Latest(%q) error = %v, want %v", tt.values, err, tt.wantErr)
			}
			if got != tt.want {
				t.Errorf("Latest(%q) = %q, want %q", tt.values, got, tt.want)
			}
		})
	}
}

func TestDigestMode(t *testing.T) {
	tests := []struct {
		mode                          policy.DigestMode
		latest, knownTag, knownDigest string
		wantLookup                    bool
	}{
		{"", "1.1.0", "", "", false},
		{policy.DigestNever, "1.1.0", "1.0.0", "", false},
		{policy.DigestNever, "1.1.0", "1.1.0", "sha256:aa", false},
		{policy.DigestAlways, "1.1.0", "1.1.0", "sha256:aa", true},
		{policy.DigestAlways, "1.1.0", "", "", true},
		{policy.DigestIfNotPresent, "1.1.0", "1.1.0", "sha256:aa", false},
		{policy.DigestIfNotPresent, "1.1.0", "1.1.0", "", true},
		{policy.DigestIfNotPresent, "1.1.0", "1.0.0", "sha256:aa", true},
		{policy.DigestIfNotPresent, "1.1.0", "", "", true},
	}
	for _, tt := range tests {
		name := strings.Join([]string{string(tt.mode), tt.latest, tt.knownTag, tt.knownDigest}, ",")
		t.Run(name, func(t *testing.T) {
			if got := tt.mode.NeedsLookup(tt.latest, tt.knownTag, tt.knownDigest); got != tt.wantLookup {
				t.Errorf("NeedsLookup = %v, want %v", got, tt.wantLookup)
			}
		})
	}
	for mode, want := range map[policy.DigestMode]bool{"": false, policy.DigestNever: false, policy.DigestAlways: true, policy.DigestIfNotPresent: true} {
		if got := mode.Reflects(); got != want {
			t.Errorf("DigestMode(%q).Reflects() = %v, want %v", mode, got, want)
		}
	}
}

func TestDefaultExclusions(t *testing.T) {
	got := policy.DefaultExclusions()
	want := []string{`^.*\.sig$`, `^.*\.att$`, `^.*\.sbom$`}
	if diff := cmp.Diff(got, want); diff != "" {
		t.Errorf("DefaultExclusions() mismatch (-got +want):\n%s", diff)
	}
	got[0] = "changed"
	if policy.DefaultExclusions()[0] != want[0] {
		t.Error("DefaultExclusions() returned shared storage")
	}
}

// TestPickListFilteredVersions: a semver policy with a filter orders tags
// by the version it extracts, and PickList, over a list other policies of
// the repository share, picks as Pick does. The bug it guards against: a
// policy with filterTags (prod-1.2.0 and the like) picking nothing, or the
// unfiltered 1.5.0, once several policies share a repository's tag list.
func TestPickListFilteredVersions(t *testing.T) {
	for _, tt := range []struct {
		name string
		spec policy.Spec
		tags []string
		want string
	}{
		{"prefix extracted", policy.Spec{SemVer: ">=1.0.0", FilterPattern: `^prod-(?P<v>.*)$`, FilterExtract: "$v"},
			[]string{"prod-1.0.0", "prod-1.2.0", "1.5.0"}, "prod-1.2.0"},
		{"suffix extracted", policy.Spec{SemVer: "<2", FilterPattern: `^(?P<v>\d+\.\d+\.\d+)-alpine$`, FilterExtract: "$v"},
			[]string{"1.9.0-alpine", "1.10.0-alpine", "1.11.0", "2.0.0-alpine"}, "1.10.0-alpine"},
		{"filter without extract", policy.Spec{SemVer: ">=1.0.0", FilterPattern: `^1\.`},
			[]string{"1.0.0", "1.2.0", "2.0.0"}, "1.2.0"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p, err := policy.New(tt.spec)
			if err != nil {
				t.Fatal(err)
			}
			want, err := p.Pick(t.Context(), tt.tags)
			if err != nil {
				t.Fatal(err)
			}
			if want.Latest != tt.want {
				t.Fatalf("Pick(%q) = %q, want %q", tt.tags, want.Latest, tt.want)
			}
			got, err := p.PickList(t.Context(), policy.NewTagList(tt.tags))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("PickList differs from Pick (-Pick +PickList):\n%s", diff)
			}
		})
	}
}

// TestPickListAsPick checks that policies sharing one TagList, run at
// once, pick exactly as each does over the tags alone, on random tag
// lists mixing versions, prereleases, leading zeros, "v" prefixes,
// invalid tags, signatures and numbers.
func TestPickListAsPick(t *testing.T) {
	specs := []policy.Spec{
		{SemVer: ">=1.0.0"},
		{SemVer: ">=0.0.0-0"},
		{SemVer: "~2.3"},
		{SemVer: ">=1.0.0-rc.0 <3"},
		{SemVer: ">=1.0.0", Exclude: []string{`^v`}},
		{SemVer: ">=1.0.0", FilterPattern: `^v(?P<v>.*)$`, FilterExtract: "$v"},
		{SemVer: "*", FilterPattern: `-rc`},
		{Alphabetical: "asc"},
		{Alphabetical: "desc", FilterPattern: `^\d`},
		{Numerical: "asc"},
		{Numerical: "desc", FilterPattern: `^(?P<n>\d+)`, FilterExtract: "$n"},
	}
	policies := make([]*policy.Policy, len(specs))
	for i, spec := range specs {
		p, err := policy.New(spec)
		if err != nil {
			t.Fatalf("%+v: %v", spec, err)
		}
		policies[i] = p
	}
	pieces := []string{"1", "2", "3", "0", "01", "10", "2025"}
	for seed := range uint64(40) {
		rng := rand.New(rand.NewPCG(seed, 13))
		tags := make([]string, rng.IntN(300))
		for i := range tags {
			n := func() string { return pieces[rng.IntN(len(pieces))] }
			switch rng.IntN(8) {
			case 0:
				tags[i] = "v" + n() + "." + n() + "." + n()
			case 1:
				tags[i] = n() + "." + n() + "." + n() + "-rc." + n()
			case 2:
				tags[i] = n() + "." + n() + "." + n() + "+build." + n()
			case 3:
				tags[i] = n() + "." + n()
			case 4:
				tags[i] = []string{"latest", "", "a b", "${TAG}", "sha256-" + n() + ".sig", "-1"}[rng.IntN(6)]
			case 5:
				tags[i] = n() + n()
			default:
				tags[i] = n() + "." + n() + "." + n()
			}
		}
		list := policy.NewTagList(tags)
		got := make([]policy.Result, len(policies))
		done := make(chan int)
		for i, p := range policies {
			go func() {
				var err error
				if got[i], err = p.PickList(t.Context(), list); err != nil {
					t.Error(err)
				}
				done <- i
			}()
		}
		for range policies {
			<-done
		}
		for i, p := range policies {
			want, err := p.Pick(t.Context(), tags)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, got[i]); diff != "" {
				t.Errorf("seed %d, %+v: PickList differs from Pick (-Pick +PickList):\n%s", seed, specs[i], diff)
			}
		}
	}
}
