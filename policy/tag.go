package policy

// MaxTagLen is the longest tag the OCI distribution specification allows.
const MaxTagLen = 128

// ValidTag reports whether tag matches the OCI distribution tag grammar,
// [A-Za-z0-9_][A-Za-z0-9._-]{0,127}. Only such a tag can be a candidate:
// a registry decides what it lists, and a tag such as "${VAR}", "{{ x }}",
// "a/b", "a@b", one with spaces or control characters, or one longer than
// 128 bytes must never reach a file. Its characters are all safe in a YAML
// plain scalar and in an image reference.
func ValidTag(tag string) bool {
	if len(tag) == 0 || len(tag) > MaxTagLen {
		return false
	}
	for i := 0; i < len(tag); i++ {
		c := tag[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '_':
		case (c == '.' || c == '-') && i > 0:
		default:
			return false
		}
	}
	return true
}
