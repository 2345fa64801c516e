package setters

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/imagebump/imagebump/internal/printable"
)

// Field says which part of an image reference a marker owns.
type Field string

// The fields a marker can own, named by the suffix of its policy reference.
const (
	// FieldImage owns the full reference: name:tag, or name:tag@digest when
	// a digest is pinned. Its marker has no suffix: {"$imagepolicy": "ns:name"}.
	FieldImage Field = ""
	// FieldTag owns the tag: {"$imagepolicy": "ns:name:tag"}.
	FieldTag Field = "tag"
	// FieldName owns the repository name: {"$imagepolicy": "ns:name:name"}.
	FieldName Field = "name"
	// FieldDigest owns the digest: {"$imagepolicy": "ns:name:digest"}.
	FieldDigest Field = "digest"
)

// markerKey is the JSON key of a marker object, as Flux spells it.
const markerKey = "$imagepolicy"

// MarkerError reports a comment that is meant as an $imagepolicy marker but
// cannot be used: it is not a JSON object, lacks the key, or names a
// malformed policy reference.
type MarkerError struct {
	// Comment is the comment text without the leading '#'.
	Comment string
	// Reason says what is wrong.
	Reason string
	// Err is the underlying error, such as a JSON syntax error; it may be nil.
	Err error
}

// Error implements error.
func (e *MarkerError) Error() string {
	s := "malformed marker " + e.Comment + ": " + e.Reason
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

// Unwrap returns the underlying error.
func (e *MarkerError) Unwrap() error { return e.Err }

// ParseMarker reads a YAML comment's text, with or without its leading '#',
// and reports whether it is meant as an $imagepolicy marker (ok), and if so
// its policy reference ("ns:name") and field. A comment that is meant as a
// marker but is malformed returns ok and a *MarkerError saying what is wrong.
//
// The JSON is read as Flux reads it: leading '#' characters and white space
// are ignored, other string-valued keys are allowed, and the reference must
// be NAMESPACE:NAME with an optional :tag, :name or :digest suffix. A
// reference without a namespace is malformed.
//
// A comment counts as meant to be a marker when it holds "$imagepolicy" in
// double quotes, or starts with '{' and mentions $imagepolicy in any case.
func ParseMarker(comment string) (policy string, field Field, ok bool, err error) {
	text := markerText(comment)
	if !mentionsMarker(text) {
		return "", "", false, nil
	}
	fail := func(reason string, err error) (string, Field, bool, error) {
		return "", "", true, &MarkerError{Comment: text, Reason: reason, Err: err}
	}
	if !strings.HasPrefix(text, "{") {
		return fail(`want a JSON object such as {"$imagepolicy": "NAMESPACE:NAME"} and nothing else in the comment`, nil)
	}
	ref, simple := simpleMarker(text)
	if !simple {
		var reason string
		var err error
		if ref, reason, err = decodeMarker(text); reason != "" {
			return fail(reason, err)
		}
	}
	policy, field, reason := parseReference(ref)
	if reason != "" {
		return fail(reason, nil)
	}
	return policy, field, true, nil
}

// simpleMarker reads text as a marker of the one form nearly every marker
// takes, {"$imagepolicy": "REF"} with JSON white space between the tokens
// and no escape or control character in REF, without a JSON decoder, which
// allocated most of what a marker cost to read. It reports false for any
// other text, which decodeMarker then reads; for the texts it accepts,
// decodeMarker would return the same REF.
func simpleMarker(text string) (ref string, ok bool) {
	rest, ok := strings.CutPrefix(text, "{")
	if !ok {
		return "", false
	}
	if rest, ok = strings.CutPrefix(skipJSONSpace(rest), `"`+markerKey+`"`); !ok {
		return "", false
	}
	if rest, ok = strings.CutPrefix(skipJSONSpace(rest), ":"); !ok {
		return "", false
	}
	if rest, ok = strings.CutPrefix(skipJSONSpace(rest), `"`); !ok {
		return "", false
	}
	end := strings.IndexFunc(rest, func(r rune) bool { return r == '"' || r == '\\' || r < 0x20 || r == utf8.RuneError })
	if end < 0 || rest[end] != '"' {
		// No closing quote, an escape, a control character, or bytes
		// that are not UTF-8 (which the decoder would replace).
		return "", false
	}
	ref, rest = rest[:end], rest[end+1:]
	if skipJSONSpace(rest) != "}" {
		return "", false
	}
	return ref, true
}

// skipJSONSpace returns s without the JSON white space it starts with.
func skipJSONSpace(s string) string {
	return strings.TrimLeft(s, " \t\r\n")
}

// decodeMarker reads text, a comment that starts with '{', as a JSON
// object with a decoder, and returns the value of its $imagepolicy key, or
// the reason (and underlying error) it holds no usable one.
func decodeMarker(text string) (ref, reason string, err error) {
	fail := func(reason string, err error) (string, string, error) { return "", reason, err }
	dec := json.NewDecoder(strings.NewReader(text))
	if _, err := dec.Token(); err != nil {
		return fail("invalid JSON", err)
	}
	found := false
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return fail("invalid JSON", err)
		}
		key, _ := tok.(string)
		var v any
		if err := dec.Decode(&v); err != nil {
			return fail("invalid JSON", err)
		}
		s, isString := v.(string)
		switch {
		case key == markerKey && found:
			return fail(fmt.Sprintf("duplicate key %q", markerKey), nil)
		case key == markerKey && !isString:
			return fail(fmt.Sprintf("the value of %q must be a string", markerKey), nil)
		case key == markerKey:
			ref, found = s, true
		case strings.EqualFold(key, markerKey):
			return fail(fmt.Sprintf("unknown key %q (the key is %q)", key, markerKey), nil)
		case !isString:
			// Flux reads markers into map[string]string, so it would ignore
			// this one silently; say so instead.
			return fail(fmt.Sprintf("the value of key %q must be a string", key), nil)
		}
	}
	if _, err := dec.Token(); err != nil {
		return fail("invalid JSON", err)
	}
	if off := dec.InputOffset(); strings.TrimSpace(text[off:]) != "" {
		// Words after the object ("# {...} keep at 1.x") would fail the
		// decoder as a JSON literal it does not know: say what it is.
		rest := printable.Cut(strings.TrimSpace(text[off:]), 40)
		return fail(fmt.Sprintf("text after the JSON object: %q; a marker comment holds the object alone, so put other words in a comment of their own, on the line above", rest), nil)
	}
	if !found {
		return fail(fmt.Sprintf("no %q key", markerKey), nil)
	}
	return ref, "", nil
}

// markerText strips a comment of white space and leading '#' characters.
func markerText(comment string) string {
	return strings.TrimSpace(strings.TrimLeft(strings.TrimSpace(comment), "#"))
}

// mentionsMarker reports whether comment text (see markerText) is meant as a
// marker.
func mentionsMarker(text string) bool {
	if strings.Contains(text, `"`+markerKey+`"`) {
		return true
	}
	return strings.HasPrefix(text, "{") && strings.Contains(strings.ToLower(text), markerKey)
}

// looksLikeMarker reports whether a comment line consists of a marker object
// alone: the stricter test used for comments that sit where no marker
// applies, so prose that mentions markers is not reported.
func looksLikeMarker(line string) bool {
	text := markerText(line)
	return strings.HasPrefix(text, "{") && mentionsMarker(text)
}

// parseReference splits "ns:name[:field]" and returns a reason when it is
// malformed.
func parseReference(ref string) (policy string, field Field, reason string) {
	parts := strings.Split(ref, ":")
	for _, p := range parts {
		if p == "" {
			return "", "", fmt.Sprintf("reference %q has an empty part (want NAMESPACE:NAME[:FIELD])", ref)
		}
		if strings.IndexFunc(p, func(r rune) bool { return unicode.IsSpace(r) || !unicode.IsPrint(r) }) >= 0 {
			return "", "", fmt.Sprintf("reference %q contains white space or control characters", ref)
		}
	}
	switch len(parts) {
	case 1:
		return "", "", fmt.Sprintf("reference %q has no namespace (want NAMESPACE:NAME[:FIELD])", ref)
	case 2:
		return ref, FieldImage, ""
	case 3:
		switch f := Field(parts[2]); f {
		case FieldTag, FieldName, FieldDigest:
			return parts[0] + ":" + parts[1], f, ""
		default:
			return "", "", fmt.Sprintf("unknown field %q in reference %q (want tag, name or digest)", parts[2], ref)
		}
	default:
		return "", "", fmt.Sprintf("reference %q has too many parts (want NAMESPACE:NAME[:FIELD])", ref)
	}
}

// FormatMarker returns the marker comment text, without the leading '#', for
// a policy reference ("ns:name") and field, such as
// {"$imagepolicy": "apps:app:tag"}.
func FormatMarker(policy string, field Field) string {
	ref := policy
	if field != FieldImage {
		ref += ":" + string(field)
	}
	b, _ := json.Marshal(ref) // a string always marshals
	return `{"` + markerKey + `": ` + string(b) + `}`
}
