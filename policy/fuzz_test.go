package policy

import (
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/Masterminds/semver/v3"
)

// FuzzSelect checks properties of any selection: every tag lands in one
// list, the winner is a candidate that beats every other candidate, and the
// order of the tags does not change the winner.
func FuzzSelect(f *testing.F) {
	f.Add(uint8(0), ">=1.0.0", "", "1.0.0,v1.0.0,1.1.0-rc.1,latest,1.0.0+b,1.0.0+a")
	f.Add(uint8(0), ">=1.0.0-0", "rc", "1.0.0,1.1.0-rc.1,1.1.0-rc.10,x.sig")
	f.Add(uint8(1), "asc", "", "b,a,c,,a.att")
	f.Add(uint8(5), "desc", "^R", "RELEASE.2,RELEASE.1,latest")
	f.Add(uint8(2), "asc", "", "1,1.0,1e0,NaN,-Inf,latest,2,0x1p1")
	f.Add(uint8(6), "desc", `\d`, "0,-0,0.0,zero,1e400")
	f.Fuzz(func(t *testing.T, sel uint8, arg, pattern, joined string) {
		spec := Spec{Exclude: []string{`^x`}}
		switch sel % 3 {
		case 0:
			spec.SemVer = arg
		case 1:
			spec.Alphabetical = arg
		default:
			spec.Numerical = arg
		}
		if sel&4 != 0 {
			spec.FilterPattern = pattern
		}
		p, err := New(spec)
		if err != nil {
			return
		}
		tags := strings.Split(joined, ",")
		res := p.Select(tags)

		if res.Seen != len(tags) {
			t.Fatalf("Seen = %d, want %d", res.Seen, len(tags))
		}
		all := slices.Concat(res.Invalid, res.Excluded, res.Filtered, res.Skipped, res.Candidates)
		slices.Sort(all)
		sorted := slices.Sorted(slices.Values(tags))
		if !slices.Equal(all, sorted) {
			t.Fatalf("lists %q do not partition the tags %q", all, sorted)
		}
		if (res.Latest == "") != (len(res.Candidates) == 0) {
			t.Fatalf("Latest = %q with %d candidates", res.Latest, len(res.Candidates))
		}
		if res.Latest != "" && !slices.Contains(res.Candidates, res.Latest) {
			t.Fatalf("Latest %q is not a candidate: %q", res.Latest, res.Candidates)
		}
		for _, c := range res.Candidates {
			if !ValidTag(c) {
				t.Fatalf("candidate %q is not a valid tag", c)
			}
		}
		for _, c := range res.Invalid {
			if ValidTag(c) {
				t.Fatalf("valid tag %q set aside as invalid", c)
			}
		}
		for _, c := range res.Candidates[:min(len(res.Candidates), 50)] {
			for _, pair := range [][]string{{c, res.Latest}, {res.Latest, c}} {
				if got := p.Select(pair).Latest; got != res.Latest {
					t.Fatalf("Select(%q).Latest = %q, want %q", pair, got, res.Latest)
				}
			}
		}
		// A list shared with another policy, which read it first, picks
		// as the tags themselves do.
		list := NewTagList(tags)
		other, err := New(Spec{SemVer: ">=0.0.0-0"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := other.PickList(t.Context(), list); err != nil {
			t.Fatal(err)
		}
		picked, err := p.Pick(t.Context(), tags)
		if err != nil {
			t.Fatal(err)
		}
		shared, err := p.PickList(t.Context(), list)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(shared, picked) {
			t.Fatalf("PickList = %+v, Pick = %+v", shared, picked)
		}
		reversed := slices.Clone(tags)
		slices.Reverse(reversed)
		if got := p.Select(reversed).Latest; got != res.Latest {
			t.Fatalf("reversed tags: Latest = %q, want %q", got, res.Latest)
		}
		if len(tags) > 1 {
			rotated := append(slices.Clone(tags[1:]), tags[0])
			if got := p.Select(rotated).Latest; got != res.Latest {
				t.Fatalf("rotated tags: Latest = %q, want %q", got, res.Latest)
			}
		}
	})
}

// FuzzExtract checks that New never panics on a pattern and template, and
// that for any template it accepts, the value Select orders a tag by is
// what regexp.Expand makes of it.
func FuzzExtract(f *testing.F) {
	f.Add(`^RELEASE\.(?P<timestamp>.*)Z$`, "$timestamp", "RELEASE.2022-10-22T19-06-08Z")
	f.Add(`^(\d+)\.(\d+)`, "${1}x$2", "12.34")
	f.Add(`^(?:a(?P<n>\d+)|b(?P<n>\d+))$`, "$n", "b7")
	f.Add(`(a)|(b)`, "$2", "a")
	f.Add(`x`, "$$0$", "x")
	f.Add(`(?P<é>x)`, "$é", "x")
	f.Add(`(x)`, "${1", "x")
	f.Add(`(x)`, "$0001", "x")
	f.Fuzz(func(t *testing.T, pattern, extract, tag string) {
		p, err := New(Spec{Alphabetical: "asc", FilterPattern: pattern, FilterExtract: extract})
		if err != nil {
			return
		}
		res := p.Select([]string{tag})
		if p.filter == nil {
			return
		}
		m := p.filter.FindStringSubmatchIndex(tag)
		if (m != nil) != slices.Contains(res.Candidates, tag) && tag != "" && !excludedByDefault(tag) {
			t.Fatalf("tag %q matched = %v, but candidates are %q", tag, m != nil, res.Candidates)
		}
		if m == nil {
			return
		}
		var buf []byte
		got, _ := p.value(tag, &buf)
		want := tag
		if extract != "" {
			want = string(p.filter.ExpandString(nil, extract, tag, m))
		}
		if got != want {
			t.Fatalf("value of %q = %q, regexp.Expand gives %q", tag, got, want)
		}
	})
}

// FuzzDefaultExclusions checks excludedByDefault against the patterns it
// stands for.
func FuzzDefaultExclusions(f *testing.F) {
	for _, s := range []string{"a.sig", ".sig", "a.sig\n", "a\n.sig", "a.att", "x.sbom", "sig", "a.SIG", "\xff.sig", "a.sigx"} {
		f.Add(s)
	}
	var res []*regexp.Regexp
	for _, p := range DefaultExclusions() {
		res = append(res, regexp.MustCompile(p))
	}
	f.Fuzz(func(t *testing.T, tag string) {
		want := slices.ContainsFunc(res, func(re *regexp.Regexp) bool { return re.MatchString(tag) })
		if got := excludedByDefault(tag); got != want {
			t.Fatalf("excludedByDefault(%q) = %v, the patterns say %v", tag, got, want)
		}
	})
}

// FuzzSemVerRange checks that SemVer's shortcut for prereleases (a range
// without "-" admits none) agrees with Masterminds' Check.
func FuzzSemVerRange(f *testing.F) {
	f.Add(">=1.0.0", "1.1.0-rc.1")
	f.Add(">=1.0.0-0", "1.1.0-rc.1")
	f.Add("1.0 - 2.0", "1.5.0-beta")
	f.Add("*", "0.0.0-0")
	f.Add("^1.2 || ~2.0.0-alpha", "2.0.1-beta.2")
	f.Fuzz(func(t *testing.T, rng, tag string) {
		p, err := NewSemVer(rng)
		if err != nil {
			return
		}
		v := parseVersion(tag)
		if v == nil {
			return
		}
		got := p.newRanker().offer(tag, tag) == skipNone
		if want := p.constraint.Check(v); got != want {
			t.Fatalf("range %q admits %q: got %v, Check says %v", rng, tag, got, want)
		}
	})
}

// FuzzParseVersion checks that every tag SemVer takes as a version is one
// Flux takes too (semver.NewVersion, which allows a "v" and leading zeros),
// with the same value.
func FuzzParseVersion(f *testing.F) {
	for _, s := range []string{"1.2.3", "v1.2.3", "2025.01.07", "1.2", "1.2-rc.1", "01.2.3-rc.01", "1.2.3+b.1", "v00.0.0-0"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, tag string) {
		got := parseVersion(tag)
		if got == nil {
			return
		}
		want, err := semver.NewVersion(tag)
		if err != nil {
			t.Fatalf("parseVersion(%q) = %v, but semver.NewVersion refuses it: %v", tag, got, err)
		}
		if got.Compare(want) != 0 || got.Metadata() != want.Metadata() {
			t.Fatalf("parseVersion(%q) = %v, semver.NewVersion gives %v", tag, got, want)
		}
	})
}
