package setters

import (
	"fmt"
	"regexp"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"gopkg.in/yaml.v3"
)

// nonStringPlain matches plain scalars that YAML 1.1 or YAML 1.2 (core
// schema) resolves to something other than a string: null, booleans
// (including 1.1's yes/no/on/off/y/n), integers (decimal, octal, hex, binary,
// base 60, with 1.1's underscores), floats (including .inf and .nan) and
// timestamps. Floats follow the 1.1 regular expression as parsers implement
// it (one dot), so versions such as 1.2.3 stay strings, as every parser
// reads them.
var nonStringPlain = regexp.MustCompile(`^(?:` +
	`~|null|Null|NULL|` +
	`y|Y|yes|Yes|YES|n|N|no|No|NO|true|True|TRUE|false|False|FALSE|on|On|ON|off|Off|OFF|` +
	`<<|=|` +
	// integers, YAML 1.1 and 1.2
	`[-+]?0b[01_]+|[-+]?0o?[0-7_]+|[-+]?[0-9][0-9_]*|[-+]?0x[0-9a-fA-F_]+|[-+]?[1-9][0-9_]*(?::[0-5]?[0-9])+|` +
	// floats, YAML 1.1 and 1.2
	`[-+]?(?:[0-9][0-9_]*)?\.[0-9_]*(?:[eE][-+]?[0-9]+)?|[-+]?[0-9][0-9_]*(?:\.[0-9_]*)?[eE][-+]?[0-9]+|` +
	`[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+\.[0-9_]*|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN)|` +
	// timestamps, YAML 1.1
	`[0-9]{4}-[0-9]{1,2}-[0-9]{1,2}(?:(?:[Tt]|[ \t]+)[0-9]{1,2}:[0-9]{2}:[0-9]{2}(?:\.[0-9]*)?(?:[ \t]*(?:Z|[-+][0-9]{1,2}(?::[0-9]{2})?))?)?` +
	`)$`)

// indicators are the characters that may not start a plain scalar (or that
// change its meaning there). '-', '?' and ':' may start one when followed by
// a safe character, but quoting them is always correct and simpler.
const indicators = "-?:,[]{}#&*!|>'\"%@`"

// checkValue reports whether a value can be written into a YAML scalar on
// one line in any style.
func checkValue(v string) error {
	if v == "" {
		return fmt.Errorf("empty value")
	}
	if !utf8.ValidString(v) {
		return fmt.Errorf("value %q is not valid UTF-8", v)
	}
	for _, r := range v {
		// IsPrint excludes control characters, U+FEFF and the Unicode line
		// and paragraph separators, which YAML parsers treat as line breaks.
		if !unicode.IsPrint(r) {
			return fmt.Errorf("value %q contains the unprintable character %U", v, r)
		}
	}
	return nil
}

// needsQuotes reports whether v, written as a plain scalar in block context,
// would not read back as the string v: it would resolve to a number, boolean,
// null or timestamp, or it is not a valid plain scalar.
func needsQuotes(v string) bool {
	if v == "" || strings.IndexByte(indicators, v[0]) >= 0 {
		return true
	}
	if v != strings.TrimSpace(v) || strings.HasPrefix(v, "...") {
		return true
	}
	if strings.Contains(v, ": ") || strings.HasSuffix(v, ":") || strings.Contains(v, " #") ||
		strings.ContainsAny(v, "\t\r\n") {
		return true
	}
	if nonStringPlain.MatchString(v) {
		return true
	}
	// Last, ask the parser that will read the file back. The answers are
	// kept: the same few values recur in every file.
	if q, ok := parserQuotes.Load(v); ok {
		return q.(bool)
	}
	q := parserNeedsQuotes(v)
	parserQuotes.Store(v, q)
	return q
}

// parserQuotes caches parserNeedsQuotes by value.
var parserQuotes sync.Map

// parserNeedsQuotes reports whether yaml.v3 reads the plain scalar v as
// anything but the string v.
func parserNeedsQuotes(v string) bool {
	var n yaml.Node
	if err := yaml.Unmarshal([]byte(v), &n); err != nil || len(n.Content) != 1 {
		return true
	}
	s := n.Content[0]
	return s.Kind != yaml.ScalarNode || s.Tag != "!!str" || s.Value != v || s.Style != 0
}

// quoteDouble writes v as a double-quoted scalar. v passed checkValue, so
// only the backslash and the double quote need escaping.
func quoteDouble(v string) string {
	var b strings.Builder
	b.Grow(len(v) + 2)
	b.WriteByte('"')
	for i := 0; i < len(v); i++ {
		if c := v[i]; c == '"' || c == '\\' {
			b.WriteByte('\\')
		}
		b.WriteByte(v[i])
	}
	b.WriteByte('"')
	return b.String()
}

// quoteSingle writes v as a single-quoted scalar.
func quoteSingle(v string) string {
	return "'" + strings.ReplaceAll(v, "'", "''") + "'"
}

// render writes v in the style of the scalar it replaces: quoted scalars keep
// their quotes, plain ones stay plain unless that would change v's type or
// meaning, in which case they are double-quoted.
func render(v string, style yaml.Style) string {
	switch {
	case style&yaml.DoubleQuotedStyle != 0:
		return quoteDouble(v)
	case style&yaml.SingleQuotedStyle != 0:
		return quoteSingle(v)
	case needsQuotes(v):
		return quoteDouble(v)
	default:
		return v
	}
}
