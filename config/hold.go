package config

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// SetHold returns data, an imagebump.yaml, with a hold on the image policy
// called name: `hold: {reason: ..., until: ...}` added to its entry (or
// replacing the hold it has). ClearHold removes it. Both edit bytes, not a
// parsed tree: comments, quoting, order and line endings stay as they were,
// so that a hold is a small reviewed commit like any other change. The
// result is parsed again and must equal the original but for the hold, or
// it is refused.
func SetHold(data []byte, file, name string, h Hold) ([]byte, error) {
	if strings.TrimSpace(h.Reason) == "" {
		return nil, errors.New("a hold needs a reason")
	}
	if h.Until != "" {
		if _, err := ParseHoldTime(h.Until); err != nil {
			return nil, err
		}
	}
	value := "{reason: " + strconv.Quote(h.Reason)
	if h.Until != "" {
		value += ", until: " + strconv.Quote(h.Until)
	}
	value += "}"
	// A hold there already is replaced where it is, with the comment on
	// its key's line: a block or flow mapping's value is rewritten in its
	// own style.
	e, err := newHoldEditor(data, file, name)
	if err != nil {
		return nil, err
	}
	if key, _ := e.field("hold"); key != nil {
		if out, ok := e.replaceHold(value, h); ok {
			if out, err := e.check(out, &h); err == nil {
				return out, nil
			}
		}
		// A hold of a shape the line scan misreads (a block scalar with
		// blank lines, say): cleared, and written anew below.
		cleared, err := ClearHold(data, file, name)
		if err != nil {
			return nil, err
		}
		data = cleared
		if e, err = newHoldEditor(data, file, name); err != nil {
			return nil, err
		}
	}
	var out []byte
	if e.item.Style&yaml.FlowStyle != 0 {
		end, err := e.flowEnd(e.offset(e.item.Line, e.item.Column))
		if err != nil {
			return nil, err
		}
		out = splice(data, end, end, ", hold: "+value)
	} else {
		at := e.blockEnd()
		indent := strings.Repeat(" ", e.item.Content[0].Column-1)
		line := indent + "hold: " + value + e.eol
		if at == len(data) && len(data) > 0 && data[len(data)-1] != '\n' {
			line = e.eol + line
		}
		out = splice(data, at, at, line)
	}
	return e.check(out, &h)
}

// replaceHold returns the bytes with the value of the entry's hold (a
// mapping) replaced by h, in the style it is written in: flow, as value
// ({reason: ..., until: ...}), or block, one key a line at its indent.
// The hold key, its comments and its place stay. ok is false when the
// entry has no hold, or one of another shape.
func (e *holdEditor) replaceHold(flow string, h Hold) (out []byte, ok bool) {
	key, value := e.field("hold")
	if key == nil || value.Kind != yaml.MappingNode || len(value.Content) == 0 {
		return nil, false
	}
	if value.Style&yaml.FlowStyle != 0 {
		start := e.offset(value.Line, value.Column)
		end, err := e.flowEnd(start)
		if err != nil {
			return nil, false
		}
		return splice(e.data, start, end+1, flow), true
	}
	if value.Line <= key.Line {
		return nil, false
	}
	// The value's lines: from its first key's to its last node's, then
	// any line indented deeper than the hold key (a long scalar's rest).
	last := value.Line
	for _, n := range value.Content {
		last = max(last, n.Line)
	}
	next := e.nextKeyLine(key)
	for last+1 < next {
		line := string(e.data[e.lineStart(last+1):min(e.lineStart(last+2), len(e.data))])
		trimmed := strings.TrimLeft(line, " ")
		if strings.TrimSpace(line) == "" || len(line)-len(trimmed) < key.Column {
			break
		}
		last++
	}
	indent := strings.Repeat(" ", value.Content[0].Column-1)
	block := indent + "reason: " + strconv.Quote(h.Reason) + e.eol
	if h.Until != "" {
		block += indent + "until: " + strconv.Quote(h.Until) + e.eol
	}
	end := e.lineStart(last + 1)
	if end == len(e.data) && len(e.data) > 0 && e.data[len(e.data)-1] != '\n' {
		block = strings.TrimSuffix(block, e.eol)
	}
	return splice(e.data, e.lineStart(value.Line), end, block), true
}

// ErrNoPolicy is wrapped by SetHold's and ClearHold's error when the
// file has no image policy of that name.
var ErrNoPolicy = errors.New("no such policy in the file")

// ErrNotHeld is returned by ClearHold when the policy has no hold.
var ErrNotHeld = errors.New("the policy has no hold")

// ClearHold returns data with the hold of the image policy called name
// removed, byte-minimally; see SetHold. It returns an error wrapping
// ErrNotHeld when the policy has none.
func ClearHold(data []byte, file, name string) ([]byte, error) {
	e, err := newHoldEditor(data, file, name)
	if err != nil {
		return nil, err
	}
	key, value := e.field("hold")
	if key == nil {
		return nil, fmt.Errorf("%s: policy %s: %w", file, e.name, ErrNotHeld)
	}
	var out []byte
	if e.item.Style&yaml.FlowStyle != 0 {
		start := e.offset(key.Line, key.Column)
		end := e.offset(value.Line, value.Column)
		if value.Kind == yaml.MappingNode || value.Kind == yaml.SequenceNode {
			if end, err = e.flowEnd(end); err != nil {
				return nil, err
			}
			end++ // past the closing bracket
		} else {
			end = e.scalarEnd(end)
		}
		// Take the comma and spaces on one side with it.
		if i := skipSpace(data, end); i < len(data) && data[i] == ',' {
			end = skipSpace(data, i+1)
		} else if j := bytes.LastIndexByte(data[:start], ','); j >= 0 && strings.TrimSpace(string(data[j+1:start])) == "" {
			start = j
		}
		out = splice(data, start, end, "")
	} else {
		start := e.lineStart(key.Line)
		end := e.lineStart(e.nextKeyLine(key))
		out = splice(data, start, end, "")
	}
	return e.check(out, nil)
}

// holdEditor locates one image entry in a config's bytes.
type holdEditor struct {
	data   []byte
	file   string
	name   string // normalized
	root   *yaml.Node
	images *yaml.Node // the images sequence
	item   *yaml.Node // the image's mapping
	index  int        // its index in images
	eol    string
	starts []int // offset of each line's first byte
}

func newHoldEditor(data []byte, file, name string) (*holdEditor, error) {
	e := &holdEditor{data: data, file: file, name: NormalizeName(name), eol: "\n"}
	if bytes.Contains(data, []byte("\r\n")) {
		e.eol = "\r\n"
	}
	e.starts = []int{0}
	for i, c := range data {
		if c == '\n' {
			e.starts = append(e.starts, i+1)
		}
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	if len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, fmt.Errorf("%s has no images", file)
	}
	e.root = doc.Content[0]
	for i := 0; i+1 < len(e.root.Content); i += 2 {
		if e.root.Content[i].Value == "images" {
			e.images = e.root.Content[i+1]
		}
	}
	if e.images == nil || e.images.Kind != yaml.SequenceNode {
		return nil, fmt.Errorf("%s has no images list", file)
	}
	var names []string
	for i, it := range e.images.Content {
		if it.Kind != yaml.MappingNode {
			continue
		}
		for j := 0; j+1 < len(it.Content); j += 2 {
			if it.Content[j].Value == "name" {
				names = append(names, it.Content[j+1].Value)
				if NormalizeName(it.Content[j+1].Value) == e.name {
					e.item, e.index = it, i
				}
			}
		}
	}
	if e.item == nil {
		return nil, fmt.Errorf("%s has no image policy %s (it has: %s): %w", file, e.name, strings.Join(names, ", "), ErrNoPolicy)
	}
	if e.item.Style&yaml.FlowStyle == 0 && e.images.Style&yaml.FlowStyle != 0 {
		return nil, fmt.Errorf("%s: images is a flow list [...]; write it as a block list to hold a policy", file)
	}
	return e, nil
}

// field returns the key and value nodes of key in the image's mapping.
func (e *holdEditor) field(key string) (*yaml.Node, *yaml.Node) {
	for j := 0; j+1 < len(e.item.Content); j += 2 {
		if e.item.Content[j].Value == key {
			return e.item.Content[j], e.item.Content[j+1]
		}
	}
	return nil, nil
}

// offset converts a 1-based line and column (in characters) to a byte
// offset.
func (e *holdEditor) offset(line, col int) int {
	p := e.lineStart(line)
	for i := 1; i < col && p < len(e.data); i++ {
		_, size := decodeRune(e.data[p:])
		p += size
	}
	return p
}

func (e *holdEditor) lineStart(line int) int {
	if line-1 < len(e.starts) {
		return e.starts[line-1]
	}
	return len(e.data)
}

// nextLine returns the line after the image's entry: the next item's or,
// for the last one, the line of whatever follows the images list.
func (e *holdEditor) nextLine() int {
	if e.index+1 < len(e.images.Content) {
		return e.images.Content[e.index+1].Line
	}
	for i := 0; i+1 < len(e.root.Content); i += 2 {
		if k := e.root.Content[i]; k.Line > e.item.Line {
			return k.Line
		}
	}
	return len(e.starts) + 1
}

// nextKeyLine returns the line of the key after key in the image's mapping,
// or the entry's end.
func (e *holdEditor) nextKeyLine(key *yaml.Node) int {
	for j := 0; j+1 < len(e.item.Content); j += 2 {
		if e.item.Content[j] == key && j+2 < len(e.item.Content) {
			return e.item.Content[j+2].Line
		}
	}
	return e.lastLine() + 1
}

// lastLine returns the entry's last line: before the next entry, skipping
// blank lines and comment lines that separate entries, and the "---" or
// "..." that end the document (Parse takes an empty document after it).
func (e *holdEditor) lastLine() int {
	last := e.nextLine() - 1
	for last > e.item.Line {
		line := string(e.data[e.lineStart(last):min(e.lineStart(last+1), len(e.data))])
		text := strings.TrimSpace(line)
		if text != "" && !strings.HasPrefix(text, "#") && !docMarker(line) {
			break
		}
		last--
	}
	return last
}

// docMarker reports whether line is a YAML document marker, "---" or
// "...", alone or before a comment, at the start of the line.
func docMarker(line string) bool {
	for _, m := range []string{"---", "..."} {
		if rest, ok := strings.CutPrefix(line, m); ok {
			rest = strings.TrimSpace(rest)
			return rest == "" || strings.HasPrefix(rest, "#")
		}
	}
	return false
}

// blockEnd returns the offset just after the entry's last line.
func (e *holdEditor) blockEnd() int {
	return e.lineStart(e.lastLine() + 1)
}

// flowEnd returns the offset of the bracket closing the flow collection
// that opens at start.
func (e *holdEditor) flowEnd(start int) (int, error) {
	depth := 0
	for i := start; i < len(e.data); i++ {
		switch c := e.data[i]; c {
		case '{', '[':
			depth++
		case '}', ']':
			depth--
			if depth == 0 {
				return i, nil
			}
		case '"':
			for i++; i < len(e.data) && e.data[i] != '"'; i++ {
				if e.data[i] == '\\' {
					i++
				}
			}
		case '\'':
			for i++; i < len(e.data); i++ {
				if e.data[i] == '\'' {
					if i+1 < len(e.data) && e.data[i+1] == '\'' {
						i++
						continue
					}
					break
				}
			}
		}
	}
	return 0, fmt.Errorf("%s: cannot find the end of policy %s's entry", e.file, e.name)
}

// scalarEnd returns the offset after a flow scalar starting at start.
func (e *holdEditor) scalarEnd(start int) int {
	i := start
	for i < len(e.data) && e.data[i] != ',' && e.data[i] != '}' {
		i++
	}
	for i > start && (e.data[i-1] == ' ' || e.data[i-1] == '\t') {
		i--
	}
	return i
}

// check parses out as a config and compares it with the original: the two
// must be equal but for the image's hold, which must be want (nil: none).
func (e *holdEditor) check(out []byte, want *Hold) ([]byte, error) {
	if _, err := Parse(out, e.file); err != nil {
		return nil, fmt.Errorf("the edited %s would not load (edit it by hand): %w", e.file, err)
	}
	var before, after map[string]any
	if err := yaml.Unmarshal(e.data, &before); err != nil {
		return nil, err
	}
	if err := yaml.Unmarshal(out, &after); err != nil {
		return nil, err
	}
	item := before["images"].([]any)[e.index].(map[string]any)
	delete(item, "hold")
	if want != nil {
		h := map[string]any{"reason": want.Reason}
		if want.Until != "" {
			h["until"] = want.Until
		}
		item["hold"] = h
	}
	if !reflect.DeepEqual(before, after) {
		return nil, fmt.Errorf("%s: the edit would change more than the hold of %s; edit the file by hand", e.file, e.name)
	}
	return out, nil
}

func splice(data []byte, start, end int, text string) []byte {
	out := make([]byte, 0, len(data)+len(text))
	out = append(out, data[:start]...)
	out = append(out, text...)
	return append(out, data[end:]...)
}

func skipSpace(data []byte, i int) int {
	for i < len(data) && (data[i] == ' ' || data[i] == '\t') {
		i++
	}
	return i
}

func decodeRune(b []byte) (rune, int) {
	if len(b) == 0 {
		return 0, 0
	}
	if b[0] < 0x80 {
		return rune(b[0]), 1
	}
	r := []rune(string(b[:min(4, len(b))]))
	if len(r) == 0 {
		return 0, 1
	}
	return r[0], len(string(r[0]))
}
