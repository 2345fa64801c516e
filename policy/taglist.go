package policy

import (
	"sync"

	"github.com/Masterminds/semver/v3"
)

// A TagList is one repository's tags, read once for every policy that
// picks among them: which tags are valid (ValidTag), and, the first time a
// semver policy that orders tags by the tag itself asks, each tag's
// version. A cycle with many policies on one repository would otherwise
// parse every tag once per policy (a thousand policies on 10,000 tags:
// three seconds, most of it parsing the same versions).
//
// The versions are kept as long as the TagList is, about 100 bytes per
// tag that is a version: share a TagList among the policies of one
// repository, for one selection, and drop it after. A TagList is safe for
// concurrent use.
type TagList struct {
	tags    []string
	invalid []bool // by index, for ValidTag

	once     sync.Once
	versions []*semver.Version // by index; nil: not a version

	mu     sync.Mutex
	ranges map[string]*admitted // by semver range, at most maxRanges
}

// admitted is which of a TagList's tags are versions in one semver
// range, by index.
type admitted struct {
	once sync.Once
	in   []bool
}

// maxRanges bounds how many ranges' answers a TagList keeps: policies of
// one repository mostly share a few ranges (one per environment), and a
// thousand distinct ranges over 10,000 tags would keep 10 MB.
const maxRanges = 64

// NewTagList returns the TagList of tags, which it keeps and must not be
// changed after.
func NewTagList(tags []string) *TagList {
	l := &TagList{tags: tags, invalid: make([]bool, len(tags))}
	for i, tag := range tags {
		l.invalid[i] = !ValidTag(tag)
	}
	return l
}

// Tags returns the tags, as given.
func (l *TagList) Tags() []string { return l.tags }

// parsed returns each tag's version, parsing them on the first call.
func (l *TagList) parsed() []*semver.Version {
	l.once.Do(func() {
		l.versions = make([]*semver.Version, len(l.tags))
		for i, tag := range l.tags {
			if !l.invalid[i] {
				l.versions[i] = parseVersion(tag)
			}
		}
	})
	return l.versions
}

// inRange returns which tags are versions that admits accepts, by index,
// for the semver range rng that admits checks: asked once per range for
// every policy that has it, as Masterminds' Check is the costliest part of
// a selection (it formats an error for each version it refuses). Past
// maxRanges ranges, the answer is not kept.
func (l *TagList) inRange(rng string, admits func(*semver.Version) bool) []bool {
	versions := l.parsed()
	l.mu.Lock()
	a, ok := l.ranges[rng]
	if !ok && len(l.ranges) < maxRanges {
		if l.ranges == nil {
			l.ranges = map[string]*admitted{}
		}
		a = &admitted{}
		l.ranges[rng] = a
	}
	l.mu.Unlock()
	check := func() []bool {
		in := make([]bool, len(versions))
		for i, v := range versions {
			in[i] = v != nil && admits(v)
		}
		return in
	}
	if a == nil {
		return check()
	}
	a.once.Do(func() { a.in = check() })
	return a.in
}
