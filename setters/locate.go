package setters

import (
	"bytes"
	"errors"
	"unicode/utf8"

	"gopkg.in/yaml.v3"
)

// bom is the UTF-8 byte order mark. yaml.v3 skips it and does not count it
// in columns.
var bom = []byte{0xEF, 0xBB, 0xBF}

// lineIndex maps yaml.v3's 1-based line numbers to byte offsets. It counts
// line breaks exactly as yaml.v3 does: CRLF, LF and a lone CR, and also NEL
// (U+0085), LINE SEPARATOR (U+2028) and PARAGRAPH SEPARATOR (U+2029), which
// yaml.v3 inherits from YAML 1.1.
type lineIndex struct {
	src    []byte
	starts []int // offset of each line's first byte
	ends   []int // offset of each line's break (or len(src))
	// odd is set when a break other than LF or CRLF occurs: yaml.v3's line
	// numbers then differ from an editor's.
	odd bool
}

func newLineIndex(src []byte) *lineIndex {
	// Without another kind of break, IndexByte finds each LF many times
	// faster than looking at every byte.
	return indexLines(src, !mayHaveOddBreak(src))
}

// indexLines indexes the lines of src, finding each break with nextLF
// when lfOnly is set, with nextBreak otherwise.
func indexLines(src []byte, lfOnly bool) *lineIndex {
	lines := bytes.Count(src, lf) + 1
	ix := &lineIndex{src: src, starts: make([]int, 1, lines), ends: make([]int, 0, lines)}
	for i := 0; ; {
		var j, n int
		if lfOnly {
			j, n = nextLF(src, i)
		} else {
			j, n = nextBreak(src, i)
		}
		if n == 0 {
			break
		}
		ix.ends = append(ix.ends, j)
		if src[j] != '\n' && n != 2 || n == 2 && src[j] != '\r' {
			ix.odd = true
		}
		i = j + n
		ix.starts = append(ix.starts, i)
	}
	ix.ends = append(ix.ends, len(src))
	return ix
}

// nextBreak returns the offset and length of the first line break of any
// kind at or after i, or a length of 0 when there is none.
func nextBreak(src []byte, i int) (at, n int) {
	for ; i < len(src); i++ {
		if n := breakLen(src[i:]); n > 0 {
			return i, n
		}
	}
	return 0, 0
}

// nextLF is nextBreak for a source whose only breaks are LF.
func nextLF(src []byte, i int) (at, n int) {
	j := bytes.IndexByte(src[i:], '\n')
	if j < 0 {
		return 0, 0
	}
	return i + j, 1
}

// lf is a line feed, for bytes.Count.
var lf = []byte{'\n'}

// The line breaks other than LF and CR that yaml.v3 counts.
var (
	nel = []byte("\u0085")
	ls  = []byte("\u2028")
	ps  = []byte("\u2029")
)

// mayHaveOddBreak reports whether src holds a line break other than LF:
// a CR, a NEL, or a LINE or PARAGRAPH SEPARATOR. Without one, every break
// is an LF.
func mayHaveOddBreak(src []byte) bool {
	return bytes.IndexByte(src, '\r') >= 0 || bytes.Contains(src, nel) || bytes.Contains(src, ls) || bytes.Contains(src, ps)
}

// breakLen returns the length of the line break at the start of b, or 0.
func breakLen(b []byte) int {
	switch {
	case len(b) == 0:
		return 0
	case b[0] == '\n':
		return 1
	case b[0] == '\r':
		if len(b) > 1 && b[1] == '\n' {
			return 2
		}
		return 1
	case b[0] == 0xC2 && len(b) > 1 && b[1] == 0x85:
		return 2
	case b[0] == 0xE2 && len(b) > 2 && b[1] == 0x80 && (b[2] == 0xA8 || b[2] == 0xA9):
		return 3
	}
	return 0
}

// editorLine converts yaml.v3's 1-based line number to the one an editor
// shows, which counts LF only: a lone CR, NEL, LINE SEPARATOR or PARAGRAPH
// SEPARATOR starts no line there.
func (ix *lineIndex) editorLine(n int) int {
	if !ix.odd || n < 1 || n > len(ix.starts) {
		return n
	}
	return bytes.Count(ix.src[:ix.starts[n-1]], []byte{'\n'}) + 1
}

// lines returns the number of lines.
func (ix *lineIndex) lines() int { return len(ix.starts) }

// line returns the bytes of a 1-based line without its break.
func (ix *lineIndex) line(n int) []byte {
	if n < 1 || n > len(ix.starts) {
		return nil
	}
	return ix.src[ix.starts[n-1]:ix.ends[n-1]]
}

// offset converts yaml.v3's 1-based line and column (counted in characters,
// not bytes, and not counting a byte order mark) to a byte offset, or -1.
func (ix *lineIndex) offset(line, col int) int {
	if line < 1 || line > len(ix.starts) || col < 1 {
		return -1
	}
	p, end := ix.starts[line-1], ix.ends[line-1]
	if line == 1 && bytes.HasPrefix(ix.src, bom) {
		p += len(bom)
	}
	for i := 1; i < col; i++ {
		if p >= end {
			return -1
		}
		_, size := utf8.DecodeRune(ix.src[p:end])
		p += size
	}
	if p > end {
		return -1
	}
	return p
}

// Reasons a marked scalar cannot be rewritten in place.
var (
	errMultiline = errors.New("the marked scalar spans several lines; only single-line scalars can be rewritten")
	errNotFound  = errors.New("cannot find the marked scalar's bytes in the file")
)

// span is the byte range [start, end) of a scalar in the source.
type span struct{ start, end int }

// scalarSpan finds the bytes of the scalar n (plain, single- or
// double-quoted) on its line by scanning the source, and checks that they
// read back as n.Value. With lineComment set, the scalar must be followed on
// its line by exactly that comment.
func scalarSpan(ix *lineIndex, n *yaml.Node, lineComment string) (span, error) {
	src := ix.src
	p := ix.offset(n.Line, n.Column)
	if p < 0 {
		return span{}, errNotFound
	}
	end := ix.ends[n.Line-1]
	// yaml.v3 positions a node at its properties (anchor, tag) when it has
	// any; skip them.
	for p < end && (src[p] == '&' || src[p] == '!') {
		for p < end && src[p] != ' ' && src[p] != '\t' {
			p++
		}
		for p < end && (src[p] == ' ' || src[p] == '\t') {
			p++
		}
	}
	if p >= end {
		return span{}, errMultiline
	}
	var q int
	switch {
	case n.Style&yaml.DoubleQuotedStyle != 0:
		if src[p] != '"' {
			return span{}, errNotFound
		}
		q = -1
		for i := p + 1; i < end; i++ {
			if src[i] == '\\' {
				i++
				continue
			}
			if src[i] == '"' {
				q = i + 1
				break
			}
		}
	case n.Style&yaml.SingleQuotedStyle != 0:
		if src[p] != '\'' {
			return span{}, errNotFound
		}
		q = -1
		for i := p + 1; i < end; i++ {
			if src[i] == '\'' {
				if i+1 < end && src[i+1] == '\'' {
					i++
					continue
				}
				q = i + 1
				break
			}
		}
	default:
		q = p
		for q < end && !(src[q] == '#' && q > p && (src[q-1] == ' ' || src[q-1] == '\t')) {
			q++
		}
		for q > p && (src[q-1] == ' ' || src[q-1] == '\t') {
			q--
		}
	}
	if q < 0 {
		return span{}, errMultiline
	}
	if got, ok := scalarValue(src[p:q], n.Style); !ok || got != n.Value {
		return span{}, errMultiline
	}
	if lineComment != "" {
		rest := bytes.TrimLeft(src[q:end], " \t")
		if !bytes.Equal(bytes.TrimRight(rest, " \t"), []byte(trimRight(lineComment))) {
			return span{}, errMultiline
		}
	}
	return span{p, q}, nil
}

func trimRight(s string) string {
	for len(s) > 0 && (s[len(s)-1] == ' ' || s[len(s)-1] == '\t') {
		s = s[:len(s)-1]
	}
	return s
}

// scalarValue reads back the value of a scalar token in the given style:
// plain tokens are their value; quoted ones are decoded by yaml.v3 itself.
func scalarValue(tok []byte, style yaml.Style) (string, bool) {
	if style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle) == 0 {
		return string(tok), true
	}
	var n yaml.Node
	if err := yaml.Unmarshal(tok, &n); err != nil || len(n.Content) != 1 || n.Content[0].Kind != yaml.ScalarNode {
		return "", false
	}
	return n.Content[0].Value, true
}
