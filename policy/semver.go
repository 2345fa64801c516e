package policy

import (
	"strings"

	"github.com/Masterminds/semver/v3"
)

// SemVer picks the highest version within a Masterminds/semver v3 range.
//
// A value is a candidate when, after one optional leading "v", it reads
// MAJOR.MINOR.PATCH with an optional -prerelease and +build: "1.2.3",
// "v1.2.3-rc.1", "1.2.3+build.5". "1.2", "v1", "1.2-rc.1" and "latest" are
// not. Leading zeros in MAJOR, MINOR and PATCH are allowed, as Flux allows
// them for date-like tags, so "2025.01.07" and "2025.1.7" are equal
// versions. Build metadata does not order versions.
//
// Prereleases are candidates only where the range admits them, by
// Masterminds' rule: ">=1.0.0" never picks "1.1.0-rc.1" while ">=1.0.0-0"
// may.
type SemVer struct {
	rng        string // as given
	constraint *semver.Constraints
	// noPre is set when no part of the range has a prerelease, so that no
	// prerelease version can satisfy it.
	noPre bool
}

var _ Policer = (*SemVer)(nil)

// NewSemVer returns a SemVer policy for rng, such as ">=1.0.0 <2", "~5.3.x"
// or "^1.2". A bad range is a *SpecError.
func NewSemVer(rng string) (*SemVer, error) {
	c, err := semver.NewConstraint(rng)
	if err != nil {
		return nil, &SpecError{Field: "semver", Value: rng, Err: err, what: "range"}
	}
	// A prerelease in a range starts with "-", so a range without one
	// admits no prerelease. Knowing it saves Check, which formats an error
	// for every version it refuses, on the many prerelease tags.
	return &SemVer{rng: rng, constraint: c, noPre: !strings.Contains(rng, "-")}, nil
}

// Latest returns the highest version among values in the range, as written
// in values (with its "v", if any).
func (p *SemVer) Latest(values []string) (string, error) { return latestOf(p, values) }

func (p *SemVer) newRanker() ranker { return &semverRanker{SemVer: p} }

type semverRanker struct {
	*SemVer
	best *semver.Version // nil until a candidate is seen
	tag  string
}

func (r *semverRanker) offer(tag, value string) skip {
	v := parseVersion(value)
	return r.offerAdmitted(tag, v, v != nil && r.admits(v))
}

func (r *semverRanker) rangeKey() string { return r.rng }

func (p *SemVer) admits(v *semver.Version) bool {
	return !(p.noPre && v.Prerelease() != "") && p.constraint.Check(v)
}

func (r *semverRanker) offerAdmitted(tag string, v *semver.Version, in bool) skip {
	switch {
	case v == nil:
		return skipNotSemVer
	case !in:
		return skipOutOfRange
	}
	if r.best == nil || wins(v.Compare(r.best), tag, r.tag) {
		r.best, r.tag = v, tag
	}
	return skipNone
}

func (r *semverRanker) latest() (string, bool) { return r.tag, r.best != nil }

// parseVersion reads value as a semver candidate (see SemVer), or returns
// nil.
func parseVersion(value string) *semver.Version {
	if len(value) > semver.MaxVersionLen {
		return nil // as semver.NewVersion, which Flux uses
	}
	s := strings.TrimPrefix(value, "v")
	// Check the MAJOR.MINOR.PATCH core by hand: most tags that are not
	// versions fail here without an allocation, and leading zeros, which
	// StrictNewVersion refuses, can be trimmed first.
	end, zeros := 0, false
	for seg := range 3 {
		if seg > 0 {
			if end == len(s) || s[end] != '.' {
				return nil
			}
			end++
		}
		start := end
		for end < len(s) && '0' <= s[end] && s[end] <= '9' {
			end++
		}
		if end == start {
			return nil
		}
		zeros = zeros || (s[start] == '0' && end-start > 1)
	}
	if end < len(s) && s[end] != '-' && s[end] != '+' {
		return nil
	}
	if zeros {
		s = trimZeros(s[:end]) + s[end:]
	}
	v, err := semver.StrictNewVersion(s)
	if err != nil {
		return nil
	}
	return v
}

// trimZeros drops leading zeros from each number of a MAJOR.MINOR.PATCH
// core, keeping a lone 0.
func trimZeros(core string) string {
	parts := strings.Split(core, ".")
	for i, p := range parts {
		t := strings.TrimLeft(p, "0")
		if t == "" {
			t = "0"
		}
		parts[i] = t
	}
	return strings.Join(parts, ".")
}
