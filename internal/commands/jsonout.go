package commands

import (
	"bytes"
	"encoding/json"
	"io"
)

// encodeJSON writes v indented, without escaping <, > and & (ranges such
// as ">=1.0.0" stay readable).
func encodeJSON(w io.Writer, v any) error {
	var compact bytes.Buffer
	enc := json.NewEncoder(&compact)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return err
	}
	_, err := w.Write(indentJSON(make([]byte, 0, 2*compact.Len()), compact.Bytes()))
	return err
}

// indentJSON appends src, compact JSON as encoding/json writes it (no
// white space outside strings but a final newline), to dst with each
// member and element on a line of its own, two spaces deeper per level:
// the bytes json.Indent(dst, src, "", "  ") appends. json.Indent runs a
// full JSON scanner over every byte, which took most of the time of
// writing a plan of a few thousand changes; this loop knows the input is
// valid and only tracks strings.
func indentJSON(dst, src []byte) []byte {
	depth := 0
	newline := func() {
		dst = append(dst, '\n')
		for range depth {
			dst = append(dst, "  "...)
		}
	}
	for i := 0; i < len(src); i++ {
		switch c := src[i]; c {
		case '"':
			j := i + 1
			for j < len(src) && src[j] != '"' {
				if src[j] == '\\' {
					j++
				}
				j++
			}
			j = min(j, len(src)-1)
			dst = append(dst, src[i:j+1]...)
			i = j
		case '{', '[':
			dst = append(dst, c)
			if i+1 < len(src) && (src[i+1] == '}' || src[i+1] == ']') {
				dst = append(dst, src[i+1])
				i++
				continue
			}
			depth++
			newline()
		case '}', ']':
			depth--
			newline()
			dst = append(dst, c)
		case ',':
			dst = append(dst, c)
			newline()
		case ':':
			dst = append(dst, ':', ' ')
		default:
			dst = append(dst, c)
		}
	}
	return dst
}
