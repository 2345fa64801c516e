// Package unidiff renders the difference between two versions of a text file
// as a unified diff that `git apply` and `patch -p1` accept.
package unidiff

import (
	"bytes"
	"fmt"
	"io"
	"strings"
)

// Context is the number of unchanged lines shown around each change.
const Context = 3

// Write writes a unified diff of before and after for the file at path
// (slash-separated, relative to the repository root) to w, with git's
// a/ and b/ prefixes. Equal inputs write nothing. Lines keep their endings,
// so CRLF files produce CRLF diff lines as git does, and a last line without
// a newline is marked "\ No newline at end of file".
func Write(w io.Writer, path string, before, after []byte) error {
	if bytes.Equal(before, after) {
		return nil
	}
	a, b := splitLines(before), splitLines(after)
	ops := diff(a, b)
	var buf bytes.Buffer
	from, to := QuotePath("a/"+path), QuotePath("b/"+path)
	fmt.Fprintf(&buf, "diff --git %s %s\n--- %s\n+++ %s\n", from, to, from, to)
	for _, h := range hunks(ops, len(a), len(b)) {
		writeHunk(&buf, h, a, b)
	}
	_, err := w.Write(buf.Bytes())
	return err
}

// splitLines cuts data after each '\n'; the last line may lack one.
func splitLines(data []byte) [][]byte {
	var lines [][]byte
	for len(data) > 0 {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			lines = append(lines, data)
			break
		}
		lines = append(lines, data[:i+1])
		data = data[i+1:]
	}
	return lines
}

// opKind says what an edit-script step does.
type opKind byte

const (
	opEqual opKind = iota
	opDelete
	opInsert
)

// op is one step of the edit script: line ai of a, or line bi of b.
type op struct {
	kind   opKind
	ai, bi int
}

// diff returns a shortest edit script from a to b (Myers' O(ND) algorithm,
// after trimming the common prefix and suffix, which is where almost all of
// an imagebump edit's lines are).
func diff(a, b [][]byte) []op {
	pre := 0
	for pre < len(a) && pre < len(b) && bytes.Equal(a[pre], b[pre]) {
		pre++
	}
	suf := 0
	for suf < len(a)-pre && suf < len(b)-pre && bytes.Equal(a[len(a)-1-suf], b[len(b)-1-suf]) {
		suf++
	}
	var ops []op
	for i := 0; i < pre; i++ {
		ops = append(ops, op{opEqual, i, i})
	}
	ops = append(ops, myers(a[pre:len(a)-suf], b[pre:len(b)-suf], pre, pre)...)
	for i := 0; i < suf; i++ {
		ops = append(ops, op{opEqual, len(a) - suf + i, len(b) - suf + i})
	}
	return ops
}

// myers computes the edit script of a and b, whose first lines are at
// offsets aoff and boff of the whole files.
func myers(a, b [][]byte, aoff, boff int) []op {
	n, m := len(a), len(b)
	max := n + m
	if max == 0 {
		return nil
	}
	v := make([]int, 2*max+1)
	var trace [][]int
	for d := 0; d <= max; d++ {
		trace = append(trace, append([]int(nil), v...))
		for k := -d; k <= d; k += 2 {
			var x int
			if k == -d || (k != d && v[max+k-1] < v[max+k+1]) {
				x = v[max+k+1]
			} else {
				x = v[max+k-1] + 1
			}
			y := x - k
			for x < n && y < m && bytes.Equal(a[x], b[y]) {
				x++
				y++
			}
			v[max+k] = x
			if x >= n && y >= m {
				return backtrack(trace, a, b, d, aoff, boff)
			}
		}
	}
	panic("unidiff: no edit script found")
}

// backtrack walks the saved frontiers back from (n, m) to (0, 0).
func backtrack(trace [][]int, a, b [][]byte, d, aoff, boff int) []op {
	n, m := len(a), len(b)
	max := n + m
	x, y := n, m
	var rev []op
	for ; d > 0; d-- {
		v := trace[d]
		k := x - y
		var prevK int
		if k == -d || (k != d && v[max+k-1] < v[max+k+1]) {
			prevK = k + 1
		} else {
			prevK = k - 1
		}
		prevX := v[max+prevK]
		prevY := prevX - prevK
		for x > prevX && y > prevY {
			x--
			y--
			rev = append(rev, op{opEqual, aoff + x, boff + y})
		}
		if x == prevX {
			y--
			rev = append(rev, op{opInsert, aoff + x, boff + y})
		} else {
			x--
			rev = append(rev, op{opDelete, aoff + x, boff + y})
		}
	}
	for x > 0 && y > 0 {
		x--
		y--
		rev = append(rev, op{opEqual, aoff + x, boff + y})
	}
	ops := make([]op, len(rev))
	for i := range rev {
		ops[i] = rev[len(rev)-1-i]
	}
	return ops
}

// hunk is a run of ops shown together.
type hunk struct{ ops []op }

// hunks groups the changes with Context lines around them, merging changes
// whose context would touch.
func hunks(ops []op, na, nb int) []hunk {
	var out []hunk
	i := 0
	for i < len(ops) {
		for i < len(ops) && ops[i].kind == opEqual {
			i++
		}
		if i == len(ops) {
			break
		}
		start := i - Context
		if start < 0 {
			start = 0
		}
		for start < i && ops[start].kind != opEqual {
			start++
		}
		end := i
		for {
			for end < len(ops) && ops[end].kind != opEqual {
				end++
			}
			eq := 0
			for end+eq < len(ops) && ops[end+eq].kind == opEqual {
				eq++
			}
			if end+eq < len(ops) && eq <= 2*Context {
				end += eq
				continue
			}
			if eq > Context {
				eq = Context
			}
			end += eq
			break
		}
		out = append(out, hunk{ops: ops[start:end]})
		i = end
	}
	return out
}

func writeHunk(buf *bytes.Buffer, h hunk, a, b [][]byte) {
	astart, bstart, acount, bcount := -1, -1, 0, 0
	for _, o := range h.ops {
		switch o.kind {
		case opEqual:
			acount++
			bcount++
		case opDelete:
			acount++
		case opInsert:
			bcount++
		}
		if astart < 0 && o.kind != opInsert {
			astart = o.ai
		}
		if bstart < 0 && o.kind != opDelete {
			bstart = o.bi
		}
	}
	if astart < 0 {
		astart = h.ops[0].ai
	}
	if bstart < 0 {
		bstart = h.ops[0].bi
	}
	fmt.Fprintf(buf, "@@ -%s +%s @@\n", rangeOf(astart, acount), rangeOf(bstart, bcount))
	for _, o := range h.ops {
		switch o.kind {
		case opEqual:
			writeLine(buf, ' ', a[o.ai])
		case opDelete:
			writeLine(buf, '-', a[o.ai])
		case opInsert:
			writeLine(buf, '+', b[o.bi])
		}
	}
}

// rangeOf formats a hunk range: start is 0-based; an empty range names the
// line before it, as diff(1) does.
func rangeOf(start, count int) string {
	switch count {
	case 0:
		return fmt.Sprintf("%d,0", start)
	case 1:
		return fmt.Sprintf("%d", start+1)
	default:
		return fmt.Sprintf("%d,%d", start+1, count)
	}
}

func writeLine(buf *bytes.Buffer, prefix byte, line []byte) {
	buf.WriteByte(prefix)
	buf.Write(line)
	if len(line) == 0 || line[len(line)-1] != '\n' {
		buf.WriteString("\n\\ No newline at end of file\n")
	}
}

// QuotePath quotes a path for a diff header the way git does with
// core.quotePath on (its default): a path holding a double quote, a
// backslash, a control character or a byte of 0x80 and above is written
// between double quotes, with C escapes (\n, \t, \", \\) and octal escapes
// (\303) for the other bytes; any other path is written as it is. Quoted, a
// file name holding a newline can neither break nor forge a hunk, and git
// apply reads it back.
func QuotePath(p string) string {
	needs := false
	for i := 0; i < len(p); i++ {
		if c := p[i]; c < 0x20 || c == '"' || c == '\\' || c >= 0x7f {
			needs = true
			break
		}
	}
	if !needs {
		return p
	}
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(p); i++ {
		switch c := p[i]; c {
		case '\a':
			b.WriteString(`\a`)
		case '\b':
			b.WriteString(`\b`)
		case '\t':
			b.WriteString(`\t`)
		case '\n':
			b.WriteString(`\n`)
		case '\v':
			b.WriteString(`\v`)
		case '\f':
			b.WriteString(`\f`)
		case '\r':
			b.WriteString(`\r`)
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		default:
			if c < 0x20 || c >= 0x7f {
				fmt.Fprintf(&b, "\\%03o", c)
			} else {
				b.WriteByte(c)
			}
		}
	}
	b.WriteByte('"')
	return b.String()
}
