// Package policy picks the latest tag of an image from a list of tags, by an
// image policy: semver, alphabetical or numerical ordering, with tag filters
// and exclusions. It does no I/O.
package policy

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/Masterminds/semver/v3"
)

// Spec is an image policy as written in the config. Exactly one of SemVer,
// Alphabetical and Numerical is set.
type Spec struct {
	// SemVer is a Masterminds/semver v3 range, such as ">=1.0.0 <2".
	SemVer string
	// Alphabetical is "asc" or "desc".
	Alphabetical string
	// Numerical is "asc" or "desc".
	Numerical string
	// FilterPattern is an RE2 pattern; tags that do not match are dropped.
	// It is unanchored, as in Flux.
	FilterPattern string
	// FilterExtract is a template ($name, ${name}, $1) expanded from the
	// pattern's match; the policy orders tags by it. Empty means the tag.
	FilterExtract string
	// Exclude holds RE2 patterns of tags to drop, in addition to the defaults.
	Exclude []string
	// ExcludeReplacesDefaults makes Exclude replace DefaultExclusions
	// rather than add to them, as a Flux ImageRepository's exclusionList
	// does.
	ExcludeReplacesDefaults bool
	// Digest is the digest reflection mode: "", "never", "always" or "ifNotPresent".
	Digest DigestMode
}

// Policy is a validated Spec, ready to select tags. It is safe for
// concurrent use.
type Policy struct {
	spec    Spec
	kind    kind
	exclude []*regexp.Regexp // Spec.Exclude; the defaults are checked apart
	filter  *regexp.Regexp   // nil: every tag passes
	extract template         // zero: a tag's value is the tag
	// checkEvery is how many tags SelectContext handles between two looks
	// at its ctx: fewer when each tag costs more patterns.
	checkEvery int
}

// New validates spec and compiles it into a Policy. The error, when spec is
// refused, is a *SpecError naming the first offending field.
func New(spec Spec) (*Policy, error) {
	k, err := newKind(spec)
	if err != nil {
		return nil, err
	}
	p := &Policy{kind: k}
	for i, pattern := range spec.Exclude {
		re, err := regexp.Compile(pattern)
		if err != nil {
			return nil, &SpecError{Field: fmt.Sprintf("exclude[%d]", i), Value: pattern, Err: err, what: "pattern"}
		}
		p.exclude = append(p.exclude, re)
	}
	if spec.FilterPattern != "" {
		if p.filter, err = regexp.Compile(spec.FilterPattern); err != nil {
			return nil, &SpecError{Field: "filterTags.pattern", Value: spec.FilterPattern, Err: err, what: "pattern"}
		}
	}
	if spec.FilterExtract != "" {
		if p.filter == nil {
			return nil, &SpecError{Field: "filterTags.extract", Value: spec.FilterExtract, Err: errors.New("extract needs filterTags.pattern"), what: "template"}
		}
		if p.extract, err = parseTemplate(p.filter, spec.FilterExtract); err != nil {
			return nil, &SpecError{Field: "filterTags.extract", Value: spec.FilterExtract, Err: err, what: "template"}
		}
	}
	if err := spec.Digest.validate(); err != nil {
		return nil, &SpecError{Field: "digest", Value: string(spec.Digest), Err: err, what: "mode"}
	}
	spec.Exclude = slices.Clone(spec.Exclude)
	p.spec = spec
	p.checkEvery = max(1, 256/(1+len(p.exclude)))
	for _, pattern := range spec.Exclude {
		if len(pattern) > 256 {
			// A large pattern may cost more per tag than many small ones.
			p.checkEvery = 1
		}
	}
	if len(spec.FilterPattern) > 256 {
		p.checkEvery = 1
	}
	return p, nil
}

// newKind returns the Policer that spec names, checking that it names
// exactly one.
func newKind(spec Spec) (kind, error) {
	var set []string
	for _, f := range []struct{ name, value string }{
		{"semver", spec.SemVer}, {"alphabetical", spec.Alphabetical}, {"numerical", spec.Numerical},
	} {
		if f.value != "" {
			set = append(set, f.name)
		}
	}
	switch {
	case len(set) == 0:
		return nil, &SpecError{Field: "policy", Err: errors.New("one of semver, alphabetical or numerical must be set")}
	case len(set) > 1:
		return nil, &SpecError{Field: "policy", Err: fmt.Errorf("only one of semver, alphabetical or numerical may be set, found %s", strings.Join(set, " and "))}
	case spec.SemVer != "":
		return NewSemVer(spec.SemVer)
	case spec.Alphabetical != "":
		return NewAlphabetical(spec.Alphabetical)
	default:
		return NewNumerical(spec.Numerical)
	}
}

// Spec returns the Spec the policy was built from.
func (p *Policy) Spec() Spec {
	s := p.spec
	s.Exclude = slices.Clone(s.Exclude)
	return s
}

// DefaultExclusions returns the exclusion patterns that apply to every
// policy, before Spec.Exclude: cosign's signatures (as in Flux),
// attestations and SBOMs.
func DefaultExclusions() []string {
	return []string{`^.*\.sig$`, `^.*\.att$`, `^.*\.sbom$`}
}

// ErrNoMatch is returned by a Policer's Latest when no value qualifies.
var ErrNoMatch = errors.New("no tag matches")

// Result is the outcome of a selection, with the reasons behind it. Each
// tag given lands in exactly one of Invalid, Excluded, Filtered, Skipped
// and Candidates, in the order the tags were given; Latest and the counts do
// not depend on that order.
type Result struct {
	// Seen is the number of tags given.
	Seen int `json:"seen"`
	// Invalid are the tags that do not match the OCI tag grammar (see
	// ValidTag), such as "${VAR}" or "a b": they are never candidates, and
	// a warning names them. They are what the registry sent, so whoever
	// prints them must escape control characters.
	Invalid []string `json:"invalid"`
	// Excluded are the tags dropped by an exclusion pattern.
	Excluded []string `json:"excluded"`
	// Filtered are the tags dropped by the filter pattern.
	Filtered []string `json:"filtered"`
	// Skipped are tags the policy kind cannot order (not semver, not a
	// number, outside the range).
	Skipped []string `json:"skipped"`
	// Candidates are the tags that competed, as the registry spells them.
	Candidates []string `json:"candidates"`
	// Latest is the winning tag, or empty when no tag matches.
	Latest string `json:"latest"`
	// Warnings explain tags that were skipped with a warning.
	Warnings []string `json:"warnings,omitempty"`
	// Counts are the sizes of the lists above. Pick fills them and no
	// list but Invalid.
	Counts Counts `json:"-"`
}

// Counts are how many tags landed in each list of a Result.
type Counts struct {
	Invalid, Excluded, Filtered, Skipped, Candidates int
}

// Select is SelectContext without cancellation: it always runs to the end.
func (p *Policy) Select(tags []string) Result {
	res, _ := p.SelectContext(context.Background(), tags)
	return res
}

// SelectContext picks the latest tag from tags. Tags that are not valid OCI
// tags (ValidTag) are set aside first, with a warning; then exclusions run,
// then the filter pattern and extract template, then the policy kind.
// Candidates that order the same go to the byte-wise greater tag, so the
// pick does not depend on the order of tags.
//
// It parses each tag once and keeps only the best so far, so its cost grows
// linearly with len(tags) (and with the number of exclusion patterns). It
// checks ctx between tags: once ctx is done it stops and returns a zero
// Result and context.Cause(ctx), so that a long tag list or a costly set of
// patterns never outlives the cycle that asked.
func (p *Policy) SelectContext(ctx context.Context, tags []string) (Result, error) {
	return p.selectTags(ctx, tags, nil, true)
}

// Pick is SelectContext for a cycle, which shows how many tags landed in
// each list, not which: Excluded, Filtered, Skipped and Candidates stay
// nil, and Counts has their sizes. A cycle keeps the results of every
// policy, each of which would otherwise hold a copy of most of its
// repository's tags (a thousand policies on one repository of 10,000 tags
// held 160 MB of lists).
func (p *Policy) Pick(ctx context.Context, tags []string) (Result, error) {
	return p.selectTags(ctx, tags, nil, false)
}

// PickList is Pick over a TagList that the policies of one repository
// share: what they read the same way is read once for all of them.
func (p *Policy) PickList(ctx context.Context, list *TagList) (Result, error) {
	return p.selectTags(ctx, list.tags, list, false)
}

// selectTags is SelectContext, keeping the lists when lists is set, and
// taking what list has read of tags, when list is not nil.
func (p *Policy) selectTags(ctx context.Context, tags []string, list *TagList, lists bool) (Result, error) {
	res := Result{Seen: len(tags), Invalid: []string{}}
	if lists {
		res.Excluded, res.Filtered, res.Skipped, res.Candidates = []string{}, []string{}, []string{}, []string{}
	}
	keep := func(list *[]string, n *int, tag string) {
		*n++
		if lists {
			*list = append(*list, tag)
		}
	}
	r := p.kind.newRanker()
	// A policy that orders tags by the tag itself takes their versions
	// from the list, parsed once for every policy of the repository.
	var (
		versions []*semver.Version
		in       []bool
	)
	vr, _ := r.(versionRanker)
	if list != nil && vr != nil && p.filter == nil {
		versions = list.parsed()
		in = list.inRange(vr.rangeKey(), vr.admits)
	}
	var buf []byte
	var notNumber, notFinite []string
	done := ctx.Done()
	for i, tag := range tags {
		if done != nil && i%p.checkEvery == 0 {
			select {
			case <-done:
				return Result{}, context.Cause(ctx)
			default:
			}
		}
		if list != nil && list.invalid[i] || list == nil && !ValidTag(tag) {
			res.Invalid = append(res.Invalid, tag)
			res.Counts.Invalid++
			continue
		}
		if p.excludes(tag) {
			keep(&res.Excluded, &res.Counts.Excluded, tag)
			continue
		}
		value := tag
		if p.filter != nil {
			var ok bool
			if value, ok = p.value(tag, &buf); !ok {
				keep(&res.Filtered, &res.Counts.Filtered, tag)
				continue
			}
		}
		var why skip
		if versions != nil {
			why = vr.offerAdmitted(tag, versions[i], in[i])
		} else {
			why = r.offer(tag, value)
		}
		switch why {
		case skipNone:
			keep(&res.Candidates, &res.Counts.Candidates, tag)
			continue
		case skipNotNumber:
			notNumber = append(notNumber, tag)
		case skipNotFinite:
			notFinite = append(notFinite, tag)
		}
		keep(&res.Skipped, &res.Counts.Skipped, tag)
	}
	res.Latest, _ = r.latest()
	if len(res.Invalid) > 0 {
		res.Warnings = append(res.Warnings, invalidWarning(res.Invalid))
	}
	if len(notNumber) > 0 {
		res.Warnings = append(res.Warnings, skipWarning(notNumber, "not a number"))
	}
	if len(notFinite) > 0 {
		res.Warnings = append(res.Warnings, skipWarning(notFinite, "not a finite number"))
	}
	return res, nil
}

// excludes reports whether an exclusion pattern, default or configured,
// matches tag.
func (p *Policy) excludes(tag string) bool {
	if !p.spec.ExcludeReplacesDefaults && excludedByDefault(tag) {
		return true
	}
	for _, re := range p.exclude {
		if re.MatchString(tag) {
			return true
		}
	}
	return false
}

// value returns the value the policy orders tag by, and false when tag does
// not match the filter pattern. buf is scratch space reused across calls.
func (p *Policy) value(tag string, buf *[]byte) (string, bool) {
	if p.extract.text == "" {
		return tag, p.filter.MatchString(tag)
	}
	m := p.filter.FindStringSubmatchIndex(tag)
	if m == nil {
		return "", false
	}
	return p.extract.expand(p.filter, tag, m, buf), true
}

// maxListed caps how many tags a warning names, and maxShown how many
// bytes of each it shows.
const (
	maxListed = 5
	maxShown  = 48
)

// invalidWarning names the first few tags that are not valid OCI tags,
// quoted with Go's escapes (so a control character shows as \x1b) and cut
// to maxShown bytes.
func invalidWarning(tags []string) string {
	var b strings.Builder
	what := "is not a valid OCI tag"
	if len(tags) != 1 {
		what = "are not valid OCI tags"
	}
	fmt.Fprintf(&b, "skipped %s that %s ([A-Za-z0-9_][A-Za-z0-9._-]{0,127}): ", count(len(tags), "tag"), what)
	for i, tag := range tags[:min(len(tags), maxListed)] {
		if i > 0 {
			b.WriteString(", ")
		}
		if len(tag) > maxShown {
			fmt.Fprintf(&b, "%q... (%d bytes)", tag[:maxShown], len(tag))
		} else {
			fmt.Fprintf(&b, "%q", tag)
		}
	}
	if len(tags) > maxListed {
		fmt.Fprintf(&b, " and %d more", len(tags)-maxListed)
	}
	return b.String()
}

// skipWarning explains why tags were skipped, naming the first few.
func skipWarning(tags []string, why string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "numerical: skipped %s whose value is %s: ", count(len(tags), "tag"), why)
	for i, tag := range tags[:min(len(tags), maxListed)] {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%q", tag)
	}
	if len(tags) > maxListed {
		fmt.Fprintf(&b, " and %d more", len(tags)-maxListed)
	}
	return b.String()
}

// Summary explains the result in one line, such as
// "picked 5.3.12 from 4 tags (0 excluded, 0 filtered, 3 skipped)" or
// "no tag matches: 12 tags seen, 3 excluded, 9 filtered, 0 skipped". When
// some tags were invalid, ", N invalid" follows the skipped count.
func (r Result) Summary() string {
	c := r.Counts
	invalid := ""
	if c.Invalid > 0 {
		invalid = fmt.Sprintf(", %d invalid", c.Invalid)
	}
	if r.Latest == "" {
		return fmt.Sprintf("%v: %s seen, %d excluded, %d filtered, %d skipped%s",
			ErrNoMatch, count(r.Seen, "tag"), c.Excluded, c.Filtered, c.Skipped, invalid)
	}
	return fmt.Sprintf("picked %s from %s (%d excluded, %d filtered, %d skipped%s)",
		r.Latest, count(r.Seen, "tag"), c.Excluded, c.Filtered, c.Skipped, invalid)
}

// count writes n and noun, plural unless n is 1.
func count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// SpecError is a Spec that New refuses. Field names the offending setting as
// the config spells it, so that a config loader can point at its line:
// "policy" (none or several kinds set), "semver", "alphabetical",
// "numerical", "filterTags.pattern", "filterTags.extract", "exclude[i]" (i
// counts from 0) or "digest".
type SpecError struct {
	// Field is the offending setting.
	Field string
	// Value is what the setting holds.
	Value string
	// Err says what is wrong with Value.
	Err error

	what string // what Value is ("range", "pattern", ...); empty: Value is unused
}

// Error reads like `semver: invalid range "1.2.3 <": ...`.
func (e *SpecError) Error() string {
	if e.what == "" {
		return fmt.Sprintf("%s: %v", e.Field, e.Err)
	}
	return fmt.Sprintf("%s: invalid %s %q: %v", e.Field, e.what, e.Value, e.Err)
}

// Unwrap returns e.Err.
func (e *SpecError) Unwrap() error { return e.Err }
