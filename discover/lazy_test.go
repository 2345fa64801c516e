package discover

import (
	"regexp"
	"testing"
)

// TestLazyRegexps compiles every expression the package compiles on first
// use, so that a bad one fails here rather than in the middle of `init`.
func TestLazyRegexps(t *testing.T) {
	for name, re := range map[string]func() *regexp.Regexp{
		"yamlErrLine": yamlErrLine, "valuesName": valuesName, "composeName": composeName,
		"nameRE": nameRE, "variableRE": variableRE, "digestRE": digestRE, "tagRE": tagRE,
		"versionRE": versionRE, "preRE": preRE, "dateRE": dateRE, "buildRE": buildRE,
		"hashRE": hashRE, "shaRE": shaRE, "hexSuffixRE": hexSuffixRE, "digitsRE": digitsRE,
		"dnsLabel": dnsLabel,
	} {
		if re() != re() {
			t.Errorf("%s compiled twice", name)
		}
	}
}
