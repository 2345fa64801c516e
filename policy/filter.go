package policy

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// excludedByDefault reports whether one of DefaultExclusions matches tag.
// It tests what the patterns say (the tag ends in ".sig", ".att" or ".sbom"
// and has no newline, the one character "." does not match) instead of
// running three regular expressions on every tag: those dominated the cost
// of Select over long tag lists.
func excludedByDefault(tag string) bool {
	return (strings.HasSuffix(tag, ".sig") || strings.HasSuffix(tag, ".att") || strings.HasSuffix(tag, ".sbom")) &&
		!strings.Contains(tag, "\n")
}

// template is a compiled filterTags.extract.
type template struct {
	text string // empty: no extract, a tag's value is the tag
	// groups is set when text is exactly one group reference ("$ts",
	// "${ts}", "$1"): the pattern's groups it names, in the order
	// regexp.Expand tries them. The value is then a substring of the tag,
	// found without expanding the template.
	groups []int
}

// parseTemplate checks that every group text refers to exists in re,
// reading text the way regexp.Expand does: "$$" is a "$", "$name" takes the
// longest run of letters, digits and underscores, "${name}" is braced, and a
// name that is a number without leading zeros is a group number. Expand
// writes nothing for a group the pattern lacks, which would give every tag
// the same value; here it is an error, and so is a "${" without its "}".
func parseTemplate(re *regexp.Regexp, text string) (template, error) {
	t := template{text: text}
	var refs int
	literal := false // text has characters outside group references
	var last []int
	for rest := text; ; {
		i := strings.IndexByte(rest, '$')
		if i < 0 {
			literal = literal || rest != ""
			break
		}
		literal = literal || i > 0
		rest = rest[i+1:]
		if strings.HasPrefix(rest, "$") {
			literal = true
			rest = rest[1:]
			continue
		}
		name, n := groupRef(rest)
		if n == 0 {
			if strings.HasPrefix(rest, "{") {
				return template{}, fmt.Errorf("%q has no closing brace or no group name", "$"+rest)
			}
			literal = true // Expand keeps a lone "$" as it is
			continue
		}
		rest = rest[n:]
		last = groupsNamed(re, name)
		if len(last) == 0 {
			return template{}, missingGroup(re, name)
		}
		refs++
	}
	if refs == 1 && !literal {
		t.groups = last
	}
	return t, nil
}

// groupRef reads the group name at the start of s, which follows a "$",
// and returns it with the length of the reference (braces included), or
// n == 0 when s starts with no well-formed reference.
func groupRef(s string) (name string, n int) {
	brace := strings.HasPrefix(s, "{")
	if brace {
		n = 1
	}
	start := n
	for n < len(s) {
		r, size := utf8.DecodeRuneInString(s[n:])
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '_' {
			break
		}
		n += size
	}
	if n == start {
		return "", 0
	}
	name = s[start:n]
	if brace {
		if n == len(s) || s[n] != '}' {
			return "", 0
		}
		n++
	}
	return name, n
}

// groupsNamed returns the groups of re that the reference name selects, in
// the order regexp.Expand tries them: the group with that number, or else
// every group with that name.
func groupsNamed(re *regexp.Regexp, name string) []int {
	if num, ok := groupNumber(name); ok {
		if num <= re.NumSubexp() {
			return []int{num}
		}
		return nil
	}
	var groups []int
	for i, n := range re.SubexpNames() {
		if i > 0 && n == name {
			groups = append(groups, i)
		}
	}
	return groups
}

// groupNumber reports whether regexp.Expand reads name as a group number:
// ASCII digits, no leading zero, and fewer than ten of them.
func groupNumber(name string) (int, bool) {
	if len(name) > 9 || (len(name) > 1 && name[0] == '0') {
		return 0, false
	}
	for i := range len(name) {
		if name[i] < '0' || name[i] > '9' {
			return 0, false
		}
	}
	num, err := strconv.Atoi(name)
	return num, err == nil
}

// missingGroup explains that re has no group name, suggesting braces when
// name starts with one that exists ("$1x" is the group named "1x", not
// group 1 followed by "x").
func missingGroup(re *regexp.Regexp, name string) error {
	var msg string
	if _, ok := groupNumber(name); ok {
		msg = fmt.Sprintf("pattern has no group %s (it has %d)", name, re.NumSubexp())
	} else {
		msg = fmt.Sprintf("pattern has no group named %q", name)
	}
	for i := len(name) - 1; i > 0; i-- {
		if len(groupsNamed(re, name[:i])) > 0 {
			return fmt.Errorf("%s; to follow group %s with %q, write ${%s}%s", msg, name[:i], name[i:], name[:i], name[i:])
		}
	}
	return errors.New(msg)
}

// expand returns the value of tag, whose match of re is m. buf is scratch
// space reused across calls.
func (t template) expand(re *regexp.Regexp, tag string, m []int, buf *[]byte) string {
	if t.groups != nil {
		for _, g := range t.groups {
			if m[2*g] >= 0 {
				return tag[m[2*g]:m[2*g+1]]
			}
		}
		return ""
	}
	*buf = re.ExpandString((*buf)[:0], t.text, tag, m)
	return string(*buf)
}
