package discover

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
)

// Kind is the kind of rule proposed for a repository.
type Kind string

// The kinds of proposals.
const (
	// KindSemVer: version tags (1.2.3, v1.2.3, 1.25-alpine); a semver
	// range that keeps the major in use (the minor for 0.x).
	KindSemVer Kind = "semver"
	// KindTimestamp: tags holding a date or a time (20240102,
	// RELEASE.2024-01-02T03-04-05Z, main-20240102-abc1234); a pattern that
	// extracts the timestamp, ordered alphabetically.
	KindTimestamp Kind = "timestamp"
	// KindNumerical: build numbers (1234, build-1234); a pattern that
	// extracts the number, ordered numerically.
	KindNumerical Kind = "numerical"
	// KindMoving: a tag that moves (latest, stable, no tag at all, or a
	// major line such as 16), or a lone number such as 16 when the
	// registry's tags are unknown: pinning its digest is a choice to make.
	KindMoving Kind = "moving"
	// KindUnordered: tags that carry no order (commit hashes, names): no
	// rule is proposed.
	KindUnordered Kind = "unordered"
)

// rank orders kinds when tags of several shapes are in use equally often.
func (k Kind) rank() int {
	switch k {
	case KindSemVer:
		return 0
	case KindTimestamp:
		return 1
	case KindNumerical:
		return 2
	case KindMoving:
		return 3
	}
	return 4
}

// shape is what one tag in use looks like.
type shape struct {
	kind Kind
	// family identifies the tags one rule can cover: equal families are
	// one rule.
	family string
	// For versions: the literal text around the version, how many parts
	// it has, the parts, whether it is a prerelease, whether its major is
	// a year (CalVer).
	prefix, suffix string
	parts          int
	version        [3]int
	pre, calver    bool
	// For timestamps and build numbers: the filter pattern and extract.
	pattern, extract string
	// why explains the shape in a note.
	why string
}

// lazyRegexp returns a function that compiles expr on its first call.
// discover runs only for `init`, and compiling its expressions when the
// package loads cost every command of the binary about 3 ms of start-up.
func lazyRegexp(expr string) func() *regexp.Regexp {
	return sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(expr) })
}

var (
	// versionRE reads 1.2.3, v1.2, 3-alpine, 1.25.3-alpine3.19, 2.0.0-rc.1.
	versionRE = lazyRegexp(`^(v?)([0-9]+)(?:\.([0-9]+))?(?:\.([0-9]+))?((?:-[A-Za-z0-9][A-Za-z0-9._-]*)?)$`)
	// preRE reads a prerelease suffix.
	preRE = lazyRegexp(`^-(?i:alpha|beta|rc|pre|preview|dev|snapshot|canary|next|nightly|m)(?:[.-]?[0-9]+)*$`)
	// dateRE finds a date with one separator (or none) and an optional
	// time after it.
	dateRE = lazyRegexp(`(?:19|20)[0-9]{2}(?:-(?:0[1-9]|1[0-2])-(?:0[1-9]|[12][0-9]|3[01])|\.(?:0[1-9]|1[0-2])\.(?:0[1-9]|[12][0-9]|3[01])|_(?:0[1-9]|1[0-2])_(?:0[1-9]|[12][0-9]|3[01])|(?:0[1-9]|1[0-2])(?:0[1-9]|[12][0-9]|3[01]))(?:[T_.-]?[0-2][0-9][-:._]?[0-5][0-9](?:[-:._]?[0-5][0-9])?(?:\.[0-9]+)?)?`)
	// buildRE reads a build number with an optional word before it and an
	// optional commit hash after it: 1234, build-1234, r12, 1234-abc1234.
	buildRE = lazyRegexp(`^((?:[A-Za-z][A-Za-z_]*[-._]?)?)([0-9]+)((?:[-._][0-9a-f]{7,40})?)$`)
	// hashRE reads a bare commit hash.
	hashRE = lazyRegexp(`^[0-9a-f]{7,40}$`)
	// shaRE reads a commit hash, optionally after a word.
	shaRE = lazyRegexp(`^(?:[A-Za-z]+[-_])?[0-9a-f]{7,40}$`)
	// hexSuffixRE reads a commit hash after a separator.
	hexSuffixRE = lazyRegexp(`^[-._][0-9a-f]{7,40}$`)
	digitsRE    = lazyRegexp(`[0-9]+`)
)

// classify reads the shape of one tag in use. registryTags are the
// registry's tags, used to tell a major line (16, of 16.4.1) from a build
// number; without them a lone number below 1000 is a moving tag.
func classify(tag string, registryTags []string) shape {
	switch {
	case tag == "":
		return shape{kind: KindMoving, family: "moving:", why: "no tag is written, so latest is pulled, and latest moves"}
	case !strings.ContainsAny(tag, "0123456789"):
		return shape{kind: KindMoving, family: "moving:" + tag, why: tag + " is a tag that moves"}
	}
	if m := versionRE().FindStringSubmatch(tag); m != nil {
		if s, ok := versionShape(tag, m, registryTags); ok {
			return s
		}
	}
	if loc := dateRE().FindStringIndex(tag); loc != nil {
		return timestampShape(tag, loc)
	}
	if hashRE().MatchString(tag) && strings.ContainsAny(tag, "abcdef") && strings.ContainsAny(tag, "0123456789") {
		return shape{kind: KindUnordered, family: "unordered:hash", why: tag + " looks like a commit hash: such tags carry no order, so no policy can tell which is newer (tag the images with a version, a timestamp or a build number too)"}
	}
	if m := buildRE().FindStringSubmatch(tag); m != nil {
		pattern := "^" + regexp.QuoteMeta(m[1]) + "(?P<build>[0-9]+)" + generalize(m[3]) + "$"
		return shape{kind: KindNumerical, family: "numerical:" + pattern, pattern: pattern, extract: "$build", why: "the build number " + tag}
	}
	if shaRE().MatchString(tag) {
		return shape{kind: KindUnordered, family: "unordered:hash", why: tag + " looks like a commit hash: such tags carry no order, so no policy can tell which is newer (tag the images with a version, a timestamp or a build number too)"}
	}
	return shape{kind: KindUnordered, family: "unordered:" + tag, why: tag + " is neither a version, a timestamp nor a build number, so no order is proposed"}
}

// versionShape reads a tag that versionRE matched.
func versionShape(tag string, m []string, registryTags []string) (shape, bool) {
	s := shape{kind: KindSemVer, prefix: m[1]}
	for i := 0; i < 3; i++ {
		if m[2+i] == "" {
			break
		}
		n, err := strconv.Atoi(m[2+i])
		if err != nil || len(m[2+i]) > 9 {
			return shape{}, false
		}
		s.version[i] = n
		s.parts++
	}
	suffix := m[5]
	switch {
	case suffix != "" && preRE().MatchString(suffix) && s.parts == 3:
		s.pre = true
	case suffix != "":
		s.suffix = suffix
	}
	s.calver = s.version[0] >= 1990 && s.version[0] <= 2100
	if s.parts == 1 {
		// A lone number: the moving tag of a major line when the registry
		// has versions in that line, else a build number.
		if s.calver || len(m[2]) >= 4 {
			return shape{}, false // 2024 or 1234: a timestamp or a build
		}
		if len(registryTags) == 0 && !hexSuffixRE().MatchString(suffix) {
			// Only the registry's tags tell 16 (of 16.4.1) from build 16;
			// without them a numerical rule would move postgres:16 to 17,
			// a major, so it is a choice to make. A commit hash after the
			// number (412-abc1234) says build.
			return shape{kind: KindMoving, family: "moving:" + tag, why: fmt.Sprintf("%s may be the moving tag of the %s line or a build number, and without the registry's tags there is no telling which", tag, m[1]+m[2])}, true
		}
		line := m[1] + m[2] + "."
		for _, t := range registryTags {
			if strings.HasPrefix(t, line) && strings.HasSuffix(t, suffix) {
				return shape{kind: KindMoving, family: "moving:" + tag, why: fmt.Sprintf("%s is a tag that moves along the %s line (the registry has %s)", tag, m[1]+m[2], t)}, true
			}
		}
		return shape{}, false
	}
	s.family = fmt.Sprintf("semver:%d:%s:%s", s.parts, s.prefix, s.suffix)
	s.why = "the version " + tag
	return s, true
}

// timestampShape makes the shape of a tag holding a timestamp at loc.
func timestampShape(tag string, loc []int) shape {
	prefix, ts, suffix := tag[:loc[0]], tag[loc[0]:loc[1]], tag[loc[1]:]
	var b strings.Builder
	b.WriteString("^")
	b.WriteString(regexp.QuoteMeta(prefix))
	b.WriteString("(?P<ts>")
	b.WriteString(digitShape(ts))
	b.WriteString(")")
	b.WriteString(generalize(suffix))
	b.WriteString("$")
	pattern := b.String()
	return shape{kind: KindTimestamp, family: "timestamp:" + pattern, pattern: pattern, extract: "$ts", why: "the timestamp in " + tag}
}

// digitShape writes s as a pattern where each run of digits is [0-9]{n},
// so that timestamps of equal width sort alphabetically in time order.
func digitShape(s string) string {
	var b strings.Builder
	last := 0
	for _, loc := range digitsRE().FindAllStringIndex(s, -1) {
		b.WriteString(regexp.QuoteMeta(s[last:loc[0]]))
		fmt.Fprintf(&b, "[0-9]{%d}", loc[1]-loc[0])
		last = loc[1]
	}
	b.WriteString(regexp.QuoteMeta(s[last:]))
	return b.String()
}

// generalize writes the text after a timestamp or build number as a
// pattern: a commit hash becomes [0-9a-f]{7,40}, other digits [0-9]+, the
// rest stays as written.
func generalize(s string) string {
	if s == "" {
		return ""
	}
	if hexSuffixRE().MatchString(s) {
		return regexp.QuoteMeta(s[:1]) + "[0-9a-f]{7,40}"
	}
	var b strings.Builder
	last := 0
	for _, loc := range digitsRE().FindAllStringIndex(s, -1) {
		b.WriteString(regexp.QuoteMeta(s[last:loc[0]]))
		b.WriteString("[0-9]+")
		last = loc[1]
	}
	b.WriteString(regexp.QuoteMeta(s[last:]))
	return b.String()
}
