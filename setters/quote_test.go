package setters

import (
	"testing"

	"gopkg.in/yaml.v3"
)

func TestNeedsQuotes(t *testing.T) {
	for _, tc := range []struct {
		value string
		want  bool
	}{
		// strings in every YAML version: stay plain
		{"1.4.2", false},
		{"v1.10", false},
		{"1.2.3-rc.1", false},
		{"ghcr.io/acme/app:1.4.2", false},
		{"ghcr.io/acme/app:1.4.2@sha256:abcd", false},
		{"sha256:0123456789abcdef", false},
		{"latest", false},
		{"main-e5d27a2c-1619063680", false},
		{"2024-01-02-abc", false},
		{"RELEASE.2024-01-02T03-04-05Z", false},
		{"tag#hash", false},
		{"a b", false},
		{"0x", false},
		{"1e", false},
		{"yes-please", false},
		{"onion", false},
		{".git", false},
		// numbers
		{"1.10", true},
		{"20240102", true},
		{"0", true},
		{"-1", true},
		{"+12", true},
		{"1_000", true},
		{"017", true},
		{"0o17", true},
		{"0x1F", true},
		{"0b101", true},
		{"1:30", true},
		{"190:20:30.15", true},
		{"1e3", true},
		{"1.5e+3", true},
		{".5", true},
		{"1.", true},
		{".inf", true},
		{"-.Inf", true},
		{".NaN", true},
		// booleans and null
		{"on", true},
		{"Off", true},
		{"YES", true},
		{"no", true},
		{"y", true},
		{"N", true},
		{"true", true},
		{"False", true},
		{"~", true},
		{"null", true},
		{"NULL", true},
		{"", true},
		// timestamps
		{"2024-01-02", true},
		{"2024-1-2", true},
		{"2001-12-14t21:59:43.10-05:00", true},
		{"2001-12-14 21:59:43.10 -5", true},
		// not valid plain scalars
		{"-rc", true},
		{"*alias", true},
		{"&anchor", true},
		{"!tag", true},
		{"[a]", true},
		{"{a}", true},
		{"|x", true},
		{">x", true},
		{"'x", true},
		{`"x`, true},
		{"%x", true},
		{"@x", true},
		{"`x", true},
		{"#x", true},
		{"?x", true},
		{":x", true},
		{"a: b", true},
		{"a:", true},
		{"a #b", true},
		{" a", true},
		{"a ", true},
		{"a\tb", true},
		{"...x", true},
		{"<<", true},
		{"=", true},
	} {
		t.Run(tc.value, func(t *testing.T) {
			if got := needsQuotes(tc.value); got != tc.want {
				t.Errorf("needsQuotes(%q) = %v, want %v", tc.value, got, tc.want)
			}
		})
	}
}

func TestRender(t *testing.T) {
	for _, tc := range []struct {
		name  string
		value string
		style yaml.Style
		want  string
	}{
		{"plain", "1.4.2", 0, `1.4.2`},
		{"plain numeric", "1.10", 0, `"1.10"`},
		{"plain bool", "on", 0, `"on"`},
		{"plain indicator", "*x", 0, `"*x"`},
		{"plain tagged", "1.10", yaml.TaggedStyle, `"1.10"`},
		{"double", "1.4.2", yaml.DoubleQuotedStyle, `"1.4.2"`},
		{"double escapes", `a"b\c`, yaml.DoubleQuotedStyle, `"a\"b\\c"`},
		{"plain needing escapes", `"a\b`, 0, `"\"a\\b"`},
		{"single", "1.10", yaml.SingleQuotedStyle, `'1.10'`},
		{"single escapes", "it's", yaml.SingleQuotedStyle, `'it''s'`},
		{"unicode", "été", 0, `été`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := render(tc.value, tc.style)
			if got != tc.want {
				t.Errorf("render(%q, %v) = %s, want %s", tc.value, tc.style, got, tc.want)
			}
			// Whatever the style, the text reads back as the string.
			var n yaml.Node
			if err := yaml.Unmarshal([]byte("k: "+got), &n); err != nil {
				t.Fatalf("rendered %s does not parse: %v", got, err)
			}
			v := n.Content[0].Content[1]
			if v.Value != tc.value || v.Tag != "!!str" {
				t.Errorf("rendered %s reads as %s %q", got, v.Tag, v.Value)
			}
		})
	}
}

func TestCheckValue(t *testing.T) {
	for _, tc := range []struct {
		value string
		ok    bool
	}{
		{"ghcr.io/acme/app:1.4.2", true},
		{"été", true},
		{"", false},
		{"a\nb", false},
		{"a\x00b", false},
		{"a\u2028b", false},
		{"a\u0085b", false},
		{"\ufeffa", false},
		{"\xff", false},
	} {
		t.Run(tc.value, func(t *testing.T) {
			err := checkValue(tc.value)
			if (err == nil) != tc.ok {
				t.Errorf("checkValue(%q) = %v, want ok %v", tc.value, err, tc.ok)
			}
		})
	}
}
