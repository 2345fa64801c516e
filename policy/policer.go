package policy

import "github.com/Masterminds/semver/v3"

// Policer picks the latest of a list of values, the way Flux's image
// policies do: SemVer, Alphabetical and Numerical implement it. Values it
// cannot order are ignored, and equal values are decided by the tie rule
// (see wins), so the answer never depends on the order of values.
type Policer interface {
	// Latest returns the latest of values, or ErrNoMatch when none
	// qualifies. Values that are not valid OCI tags never qualify.
	Latest(values []string) (string, error)
}

// kind is a Policer that ranks values one at a time, so that Select parses
// each tag once and can say why a tag was skipped.
type kind interface {
	Policer
	newRanker() ranker
}

// ranker keeps the best value offered so far, and the tag it came from.
type ranker interface {
	// offer considers value, which is tag or was extracted from it, and
	// says why it is not a candidate, or skipNone.
	offer(tag, value string) skip
	// latest returns the tag of the best candidate, and false when there
	// was none.
	latest() (string, bool)
}

// versionRanker is a ranker that orders versions in a range, which can
// be offered a tag's version parsed, and checked against the range, once
// for every policy that has it (see TagList) instead of the tag itself.
type versionRanker interface {
	// rangeKey is the range, the same text for the same range.
	rangeKey() string
	// admits reports whether v is in the range.
	admits(v *semver.Version) bool
	// offerAdmitted considers tag, whose version is v (nil: not a
	// version) and in the range or not.
	offerAdmitted(tag string, v *semver.Version, in bool) skip
}

// skip says why a value is not a candidate.
type skip uint8

const (
	skipNone       skip = iota // a candidate
	skipNotSemVer              // not MAJOR.MINOR.PATCH
	skipOutOfRange             // a version outside the range
	skipNotNumber              // strconv.ParseFloat refuses it
	skipNotFinite              // NaN, ±Inf, or too large for a float64
)

// wins reports whether a candidate beats the best so far, given c, the
// comparison of its key with the best's in the policy's order (c > 0: the
// candidate is later). Equal keys go to the byte-wise greater tag, for asc
// and desc alike: this is imagebump's tie rule.
func wins(c int, tag, bestTag string) bool {
	return c > 0 || (c == 0 && tag > bestTag)
}

// latestOf implements Policer.Latest for k. A value that is not a valid
// OCI tag (ValidTag), the empty string included, is never picked.
func latestOf(k kind, values []string) (string, error) {
	r := k.newRanker()
	for _, v := range values {
		if ValidTag(v) {
			r.offer(v, v)
		}
	}
	if tag, ok := r.latest(); ok {
		return tag, nil
	}
	return "", ErrNoMatch
}
