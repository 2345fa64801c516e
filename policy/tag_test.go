package policy_test

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/imagebump/imagebump/internal/testkit/hostile"
	"github.com/imagebump/imagebump/policy"
)

func TestValidTag(t *testing.T) {
	tests := []struct {
		tag  string
		want bool
	}{
		{"1.2.3", true},
		{"v1.2.3-rc.1", true},
		{"_internal", true},
		{"RELEASE.2022-10-08T20-11-00Z", true},
		{"a", true},
		{strings.Repeat("a", 128), true},
		{"", false},
		{strings.Repeat("a", 129), false},
		{".hidden", false},
		{"-flag", false},
		{"1.0.0+build", false},
		{"${VAR}", false},
		{"{{ .Values.tag }}", false},
		{"a/b", false},
		{"a@sha256", false},
		{"a:b", false},
		{"a b", false},
		{"a\tb", false},
		{"a\nb", false},
		{"\x1b[31mred", false},
		{"café", false},
		{"a\x00", false},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%.40q", tt.tag), func(t *testing.T) {
			if got := policy.ValidTag(tt.tag); got != tt.want {
				t.Errorf("ValidTag(%q) = %v, want %v", tt.tag, got, tt.want)
			}
		})
	}
}

// grammar is the OCI distribution tag grammar, as the specification
// writes it.
var grammar = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9._-]{0,127}$`)

// FuzzValidTag checks ValidTag against the specification's regular
// expression, and that a valid tag carries no byte that could start a
// template, a variable, a path, a digest or a new YAML token.
func FuzzValidTag(f *testing.F) {
	for _, tag := range hostile.BadTags() {
		f.Add(tag)
	}
	f.Add("1.2.3")
	f.Add("v1.0.0-rc.1")
	f.Add(strings.Repeat("x", 128))
	f.Fuzz(func(t *testing.T, tag string) {
		got := policy.ValidTag(tag)
		if want := grammar.MatchString(tag); got != want {
			t.Fatalf("ValidTag(%q) = %v, the grammar says %v", tag, got, want)
		}
		if got && (len(tag) > policy.MaxTagLen || strings.ContainsAny(tag, "${}/@: \t\r\n\"'#&*!|>%`\\") || strings.ContainsFunc(tag, func(r rune) bool { return r < 0x20 || r > 0x7e })) {
			t.Fatalf("ValidTag(%q) accepts a dangerous tag", tag)
		}
	})
}

// TestSelectHostileTags offers every hostile tag next to valid ones: none
// can be picked, even by policies that would rank it first, and each is
// counted and named in a warning with its control characters escaped.
func TestSelectHostileTags(t *testing.T) {
	bad := hostile.BadTags()
	valid := []string{"1.0.0", "2.0.0", "3"}
	tags := append(valid, bad...)
	for name, spec := range map[string]policy.Spec{
		"semver":                  {SemVer: "*"},
		"alphabetical asc":        {Alphabetical: "asc"},
		"alphabetical desc":       {Alphabetical: "desc"},
		"numerical asc":           {Numerical: "asc"},
		"numerical desc":          {Numerical: "desc"},
		"semver extract all":      {SemVer: "*", FilterPattern: `^(?P<v>.*)$`, FilterExtract: "$v"},
		"alphabetical any filter": {Alphabetical: "asc", FilterPattern: `.`},
	} {
		t.Run(name, func(t *testing.T) {
			p, err := policy.New(spec)
			if err != nil {
				t.Fatal(err)
			}
			res := p.Select(tags)
			if !slices.Contains(valid, res.Latest) {
				t.Errorf("Latest = %q, want one of the valid tags", res.Latest)
			}
			if len(res.Invalid) != len(bad) {
				t.Errorf("%d invalid tags, want %d: %q", len(res.Invalid), len(bad), res.Invalid)
			}
			if len(res.Warnings) == 0 || !strings.HasPrefix(res.Warnings[0], fmt.Sprintf("skipped %d tags that are not valid OCI tags", len(bad))) {
				t.Fatalf("warnings %q do not start with the invalid tags", res.Warnings)
			}
			if strings.ContainsFunc(res.Warnings[0], func(r rune) bool { return r < 0x20 || r == 0x7f }) {
				t.Errorf("warning %q carries control characters", res.Warnings[0])
			}
			if len(res.Warnings[0]) > 600 {
				t.Errorf("warning is %d bytes long", len(res.Warnings[0]))
			}
			if !strings.Contains(res.Summary(), fmt.Sprintf(", %d invalid", len(bad))) {
				t.Errorf("Summary %q does not count the invalid tags", res.Summary())
			}
		})
	}
}

// manyTags returns n valid tags that no test pattern excludes.
func manyTags(n int) []string {
	tags := make([]string, n)
	for i := range tags {
		tags[i] = fmt.Sprintf("build-%d-%x", i, i*7919)
	}
	return tags
}

// TestSelectContextStops checks that a selection over many tags, with many
// costly patterns, ends soon after its ctx does, with the ctx's cause.
func TestSelectContextStops(t *testing.T) {
	var many []string
	for i := range 300 {
		many = append(many, fmt.Sprintf(`^nomatch-%d-[a-z]{3,}(x|y|z)+\d*$`, i))
	}
	// Every alternative can start anywhere, so each stays live along
	// the whole tag: matching costs the pattern's size times the tag's.
	var alts []string
	for i := range 400 {
		alts = append(alts, fmt.Sprintf(`[a-z0-9-]*q%d[a-f]+`, i))
	}
	huge := "(?:" + strings.Join(alts, "|") + ")"
	tests := []struct {
		name string
		spec policy.Spec
	}{
		{"many exclusions", policy.Spec{Alphabetical: "asc", Exclude: many}},
		{"one huge exclusion", policy.Spec{Alphabetical: "asc", Exclude: []string{huge}}},
		{"huge filter", policy.Spec{Alphabetical: "asc", FilterPattern: huge}},
	}
	tags := manyTags(300_000)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := policy.New(tt.spec)
			if err != nil {
				t.Fatal(err)
			}
			// First a slice of the work, uncancelled, to show the whole
			// would take far longer than the bound below.
			start := time.Now()
			if _, err := p.SelectContext(context.Background(), tags[:30]); err != nil {
				t.Fatal(err)
			}
			full := time.Since(start) * time.Duration(len(tags)/30)
			cause := errors.New("cycle interrupted")
			ctx, cancel := context.WithCancelCause(context.Background())
			time.AfterFunc(20*time.Millisecond, func() { cancel(cause) })
			start = time.Now()
			res, err := p.SelectContext(ctx, tags)
			took := time.Since(start)
			if !errors.Is(err, cause) {
				t.Fatalf("SelectContext = %v, want the ctx's cause", err)
			}
			if res.Seen != 0 || res.Latest != "" {
				t.Errorf("a cancelled selection returned %+v", res)
			}
			const bound = time.Second
			if took > bound {
				t.Errorf("SelectContext took %v after a cancel at 20ms, want under %v (the whole would take about %v)", took, bound, full)
			}
			if full < 2*bound {
				t.Logf("note: the whole selection would take only about %v", full)
			}
		})
	}
}

func TestSelectContextDoneBefore(t *testing.T) {
	p, err := policy.New(policy.Spec{SemVer: "*"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := p.SelectContext(ctx, []string{"1.0.0"}); !errors.Is(err, context.Canceled) {
		t.Errorf("SelectContext with a done ctx = %v, want context.Canceled", err)
	}
}
