package treegen

import (
	"bytes"
	"strings"
)

// The generator builds each YAML document as a small tree of these nodes and
// prints it with a layout (indentation width, sequence style), so one
// renderer yields the many spellings real repositories use.

// node is a mapping, seq, scalar, block or flow.
type node any

// mapping is an ordered YAML mapping.
type mapping []pair

// pair is one key of a mapping. Comment, when set, is printed on its own line
// above the key.
type pair struct {
	key     string
	val     node
	comment string
}

// seq is a YAML block sequence.
type seq []node

// scalar is a one-line scalar. Quote is 0 (plain), or the double or single
// quote character that encloses the value. Trail is printed after the
// value, such as ` # {"$imagepolicy": "ns:name"}`.
type scalar struct {
	v     string
	quote byte
	trail string
}

// block is a literal block scalar (|).
type block string

// flow is printed as is, such as `{cpu: 100m}` or `["a", "b"]`.
type flow string

// layout is how a file is spelled.
type layout struct {
	// unit is the indentation width, 2 or 4.
	unit int
	// indentSeq puts sequence items one unit deeper than their key; false
	// puts the dash under the key, as kubectl prints.
	indentSeq bool
}

// plain returns a plain scalar.
func plain(v string) scalar { return scalar{v: v} }

// dq returns a double-quoted scalar.
func dq(v string) scalar { return scalar{v: v, quote: '"'} }

// printer writes nodes into a buffer.
type printer struct {
	b  *bytes.Buffer
	lo layout
}

func (p *printer) pad(n int) {
	for range n {
		p.b.WriteByte(' ')
	}
}

func (p *printer) scalar(s scalar) {
	switch s.quote {
	case '"':
		p.b.WriteByte('"')
		p.b.WriteString(s.v)
		p.b.WriteByte('"')
	case '\'':
		p.b.WriteByte('\'')
		p.b.WriteString(s.v)
		p.b.WriteByte('\'')
	default:
		p.b.WriteString(s.v)
	}
	p.b.WriteString(s.trail)
	p.b.WriteByte('\n')
}

// mapping prints m with its keys at column col. When first is set, the first
// line starts with it instead of col spaces (a sequence item's "- ").
func (p *printer) mapping(m mapping, col int, first string) {
	for i, kv := range m {
		if kv.comment != "" && (i > 0 || first == "") {
			p.pad(col)
			p.b.WriteString("# ")
			p.b.WriteString(kv.comment)
			p.b.WriteByte('\n')
		}
		if i == 0 && first != "" {
			p.b.WriteString(first)
		} else {
			p.pad(col)
		}
		p.b.WriteString(kv.key)
		p.b.WriteByte(':')
		p.value(kv.val, col)
	}
}

// value prints what follows "key:" for a key at column col.
func (p *printer) value(v node, col int) {
	switch v := v.(type) {
	case scalar:
		p.b.WriteByte(' ')
		p.scalar(v)
	case flow:
		p.b.WriteByte(' ')
		p.b.WriteString(string(v))
		p.b.WriteByte('\n')
	case block:
		p.b.WriteString(" |\n")
		for _, line := range strings.Split(strings.TrimSuffix(string(v), "\n"), "\n") {
			if line != "" {
				p.pad(col + p.lo.unit)
				p.b.WriteString(line)
			}
			p.b.WriteByte('\n')
		}
	case mapping:
		if len(v) == 0 {
			p.b.WriteString(" {}\n")
			return
		}
		p.b.WriteByte('\n')
		p.mapping(v, col+p.lo.unit, "")
	case seq:
		if len(v) == 0 {
			p.b.WriteString(" []\n")
			return
		}
		p.b.WriteByte('\n')
		if p.lo.indentSeq {
			col += p.lo.unit
		}
		p.seq(v, col)
	}
}

// seq prints s with its dashes at column col.
func (p *printer) seq(s seq, col int) {
	for _, item := range s {
		switch item := item.(type) {
		case mapping:
			p.mapping(item, col+2, strings.Repeat(" ", col)+"- ")
		case scalar:
			p.pad(col)
			p.b.WriteString("- ")
			p.scalar(item)
		case flow:
			p.pad(col)
			p.b.WriteString("- ")
			p.b.WriteString(string(item))
			p.b.WriteByte('\n')
		}
	}
}

// document prints one document: a mapping or, for files whose root is a
// list, a seq.
func (p *printer) document(root node) {
	switch root := root.(type) {
	case mapping:
		p.mapping(root, 0, "")
	case seq:
		p.seq(root, 0)
	}
}
