package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/imagebump/imagebump/internal/fluxshape"
	"github.com/imagebump/imagebump/internal/typo"
	"gopkg.in/yaml.v3"
)

// maxNodes bounds the nodes decoded, aliases expanded, so that a small file
// of nested aliases cannot make the decoder run for ever.
const maxNodes = 100_000

// decoder decodes YAML nodes into the config types strictly, recording the
// position of every key and value it meets by key path.
type decoder struct {
	errorList
	keys    map[string]pos  // position of the key of each path
	values  map[string]pos  // position of the value of each path
	bad     map[string]bool // paths whose value failed to decode
	unknown map[string]bool // paths of mappings with an unknown key
	aliases map[string]pos  // position of each alias, at the path it is used
	nodes   int
	tooBig  bool
}

func newDecoder(file string) *decoder {
	return &decoder{
		errorList: errorList{file: file},
		keys:      map[string]pos{},
		values:    map[string]pos{},
		bad:       map[string]bool{},
		unknown:   map[string]bool{},
		aliases:   map[string]pos{},
	}
}

func reflectValue(c *Config) reflect.Value { return reflect.ValueOf(c).Elem() }

var yamlLineRE = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// root parses data and returns the top-level node to decode, or nil when the
// file is empty or could not be parsed (the error is recorded).
func (d *decoder) root(data []byte) (root *yaml.Node) {
	defer func() {
		// yaml.v3 has panicked on some malformed input in the past; a bad
		// file must be an error, never a crash.
		if r := recover(); r != nil {
			d.add(pos{line: 1}, "", "invalid YAML: parser failed: %v", r)
			root = nil
		}
	}()
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil
		}
		d.syntaxError(data, err)
		return nil
	}
	// Empty documents after the config are skipped: a trailing "---" is a
	// common habit of editors and of kustomize's output.
	for {
		var next yaml.Node
		err := dec.Decode(&next)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			d.syntaxError(data, err)
			break
		}
		if content(&next) != nil {
			d.add(pos{line: next.Line, col: next.Column}, "", "a config holds one YAML document; found another: join the two, or put the second in a file of its own")
			break
		}
	}
	return content(&doc)
}

// content returns the node a document holds, or nil when it is empty
// (nothing, comments only, or null).
func content(doc *yaml.Node) *yaml.Node {
	if len(doc.Content) == 0 {
		return nil
	}
	n := doc.Content[0]
	if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null" {
		return nil
	}
	return n
}

var unknownAnchorRE = regexp.MustCompile(`^yaml: unknown anchor '(.*)' referenced$`)

// syntaxError records a yaml.v3 error. Its line is the parser's, which can
// be the start of the block holding the mistake; yaml.v3 gives no column.
func (d *decoder) syntaxError(data []byte, err error) {
	msg := err.Error()
	line := 1
	if m := yamlLineRE.FindStringSubmatch(msg); m != nil {
		if n, err := strconv.Atoi(m[1]); err == nil && n > 0 {
			line = n
		}
		msg = m[2]
	} else {
		if m := unknownAnchorRE.FindStringSubmatch(msg); m != nil {
			// yaml.v3 does not say where; the first use is a good guess.
			if i := bytes.Index(data, []byte("*"+m[1])); i >= 0 {
				line = 1 + bytes.Count(data[:i], []byte("\n"))
			}
		}
		msg = strings.TrimPrefix(msg, "yaml: ")
		if strings.Contains(msg, "UTF-8") {
			// yaml.v3 does not say where: find the first byte that is
			// not UTF-8.
			for i := 0; i < len(data); {
				r, size := utf8.DecodeRune(data[i:])
				if r == utf8.RuneError && size == 1 {
					line = 1 + bytes.Count(data[:i], []byte("\n"))
					msg = fmt.Sprintf("%s (byte 0x%02x): the file must be UTF-8; save it as UTF-8", msg, data[i])
					break
				}
				i += size
			}
		}
	}
	d.add(pos{line: line}, "", "invalid YAML: %s%s", msg, quoteHint(data, line))
}

// unquotedRE finds a plain value starting with a character YAML reserves:
// "*" starts an alias, "@" and "`" are reserved, "%" starts a directive.
var unquotedRE = regexp.MustCompile("(?:^|:\\s+|-\\s+|[\\[,]\\s*)([*@`%][^\"']*)")

// quoteHint returns a hint for the commonest cause of a YAML error in a
// config: an unquoted cron expression ("*/5 * * * *", "@every 5m") or glob
// ("apps:*") on the given line, or the line before (yaml.v3 often names the
// next one). It returns "" when neither line has one.
func quoteHint(data []byte, line int) string {
	lines := bytes.Split(data, []byte("\n"))
	for _, n := range []int{line, line - 1} {
		if n < 1 || n > len(lines) {
			continue
		}
		text := string(bytes.TrimRight(lines[n-1], "\r"))
		if i := strings.Index(text, " #"); i >= 0 {
			text = text[:i]
		}
		if m := unquotedRE.FindStringSubmatch(strings.TrimSpace(text)); m != nil {
			v := strings.TrimSpace(m[1])
			return fmt.Sprintf(" (line %d: a value starting with %q must be quoted, as YAML reserves that character: write \"%s\")", n, v[:1], strings.TrimRight(v, ",]"))
		}
	}
	return ""
}

// fail reports that the value n at path cannot be decoded.
func (d *decoder) fail(n *yaml.Node, path, format string, args ...any) {
	d.bad[path] = true
	d.add(nodePos(n), path, format, args...)
}

func nodePos(n *yaml.Node) pos { return pos{line: n.Line, col: n.Column} }

// kindName names a node's type for error messages.
func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	}
	switch t := n.ShortTag(); t {
	case "!!str":
		return "a string"
	case "!!int":
		return "an integer"
	case "!!float":
		return "a number"
	case "!!bool":
		return "a boolean"
	case "!!null":
		return "no value"
	case "!!timestamp":
		return "a timestamp"
	default:
		return "a " + strings.TrimPrefix(t, "!!") + " value"
	}
}

var durationType = reflect.TypeFor[time.Duration]()

// describeScalar names a node for an error: a scalar's text, or its kind.
func describeScalar(n *yaml.Node) string {
	if n.Kind == yaml.ScalarNode {
		return strconv.Quote(n.Value)
	}
	return kindName(n)
}

// decode decodes n into v, a value of one of the config types, at path.
func (d *decoder) decode(n *yaml.Node, v reflect.Value, path string) {
	if d.tooBig {
		return
	}
	if d.nodes++; d.nodes > maxNodes {
		d.tooBig = true
		d.fail(n, path, "document too large (more than %d values after expanding aliases)", maxNodes)
		return
	}
	if n.Kind == yaml.AliasNode {
		if n.Alias == nil {
			d.fail(n, path, "unknown alias")
			return
		}
		// Positions of aliased values are those of the anchored text;
		// the alias's own is kept for errors about this use of it.
		d.aliases[path] = nodePos(n)
		d.decode(n.Alias, v, path)
		return
	}
	if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null" {
		d.fail(n, path, "no value (give one, or remove the key)")
		return
	}
	if v.Type() == durationType {
		// Durations are written as Go durations: 30s, 5m, 72h.
		dur, err := time.ParseDuration(n.Value)
		switch {
		case n.Kind != yaml.ScalarNode || err != nil:
			d.fail(n, path, "expected a duration such as 30s, 5m or 72h, got %s", describeScalar(n))
		case dur <= 0:
			d.fail(n, path, "expected a positive duration, got %s", n.Value)
		default:
			v.SetInt(int64(dur))
		}
		return
	}
	switch v.Kind() {
	case reflect.Pointer:
		p := reflect.New(v.Type().Elem())
		d.decode(n, p.Elem(), path)
		v.Set(p)
	case reflect.Struct:
		d.decodeStruct(n, v, path)
	case reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			d.fail(n, path, "expected a list, got %s", kindName(n))
			return
		}
		s := reflect.MakeSlice(v.Type(), len(n.Content), len(n.Content))
		for i, item := range n.Content {
			p := fmt.Sprintf("%s[%d]", path, i)
			d.values[p] = nodePos(item)
			d.decode(item, s.Index(i), p)
		}
		v.Set(s)
	case reflect.String:
		// hold.until is the one time-valued key: YAML reads an unquoted
		// 2026-12-24T00:00:00Z as a timestamp, and the text is what counts.
		isTime := strings.HasSuffix(path, ".hold.until") && n.Kind == yaml.ScalarNode && n.ShortTag() == "!!timestamp"
		if !isTime && (n.Kind != yaml.ScalarNode || n.ShortTag() != "!!str") {
			hint := ""
			if n.Kind == yaml.ScalarNode {
				hint = " (quote it)"
			} else if h := fluxshape.ForValue(path, n); h != "" {
				hint = " (" + h + ")"
			}
			d.fail(n, path, "expected a string, got %s%s", kindName(n), hint)
			return
		}
		if n.Value == "" {
			d.fail(n, path, "empty string (give a value, or remove the key)")
			return
		}
		v.SetString(n.Value)
	case reflect.Bool:
		var b bool
		if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!bool" || n.Decode(&b) != nil {
			d.fail(n, path, "expected a boolean (true or false), got %s", kindName(n))
			return
		}
		v.SetBool(b)
	case reflect.Int:
		var i int64
		if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!int" || n.Decode(&i) != nil || int64(int(i)) != i {
			d.fail(n, path, "expected an integer, got %s", kindName(n))
			return
		}
		v.SetInt(i)
	case reflect.Float64:
		var f float64
		t := n.ShortTag()
		if n.Kind != yaml.ScalarNode || (t != "!!int" && t != "!!float") || n.Decode(&f) != nil {
			d.fail(n, path, "expected a number, got %s", kindName(n))
			return
		}
		if math.IsNaN(f) || math.IsInf(f, 0) {
			d.fail(n, path, "expected a finite number, got %s", n.Value)
			return
		}
		v.SetFloat(f)
	default:
		panic(fmt.Sprintf("config: cannot decode into %s", v.Type())) // a bug in the config types
	}
}

// pair is one key and value of a mapping.
type pair struct {
	key, value *yaml.Node
}

// pairs returns the key/value pairs of mapping n, merge keys (<<) expanded:
// keys written in n win over merged ones, and earlier merged mappings win
// over later ones, as YAML's merge key type says. Duplicate keys written in
// n are reported.
func (d *decoder) pairs(n *yaml.Node, path string) []pair {
	var out []pair
	seen := map[string]*yaml.Node{}
	var merged []pair
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, val := n.Content[i], n.Content[i+1]
		if k.Kind == yaml.ScalarNode && k.Value == "<<" && k.ShortTag() == "!!merge" {
			merged = append(merged, d.mergePairs(val, path, 0)...)
			continue
		}
		if k.Kind != yaml.ScalarNode {
			d.add(nodePos(k), path, "a key must be a string, got %s", kindName(k))
			continue
		}
		if first, dup := seen[k.Value]; dup {
			d.add(nodePos(k), path, "duplicate key %q (first at line %d)", k.Value, first.Line)
			continue
		}
		seen[k.Value] = k
		out = append(out, pair{k, val})
	}
	for _, p := range merged {
		if _, ok := seen[p.key.Value]; ok {
			continue
		}
		seen[p.key.Value] = p.key
		out = append(out, p)
	}
	return out
}

// mergePairs returns the pairs a merge key's value brings in.
func (d *decoder) mergePairs(n *yaml.Node, path string, depth int) []pair {
	if depth > 8 {
		d.fail(n, path, "merge keys nested too deeply")
		return nil
	}
	if d.nodes++; d.nodes > maxNodes {
		return nil
	}
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	switch n.Kind {
	case yaml.MappingNode:
		return d.pairs(n, path)
	case yaml.SequenceNode:
		var out []pair
		for _, item := range n.Content {
			for item.Kind == yaml.AliasNode && item.Alias != nil {
				item = item.Alias
			}
			if item.Kind != yaml.MappingNode {
				d.add(nodePos(item), path, "a merge key (<<) takes a mapping or a list of mappings, got %s", kindName(item))
				continue
			}
			out = append(out, d.mergePairs(item, path, depth+1)...)
		}
		return out
	default:
		d.fail(n, path, "a merge key (<<) takes a mapping or a list of mappings, got %s", kindName(n))
		return nil
	}
}

func (d *decoder) decodeStruct(n *yaml.Node, v reflect.Value, path string) {
	if n.Kind != yaml.MappingNode {
		d.fail(n, path, "expected a mapping, got %s", kindName(n))
		return
	}
	fields := fieldsOf(v.Type())
	for _, p := range d.pairs(n, path) {
		key := p.key.Value
		f, ok := fields[key]
		if !ok {
			msg := fmt.Sprintf("unknown key %q", key)
			if _, ok := fields[key+"File"]; ok {
				msg += fmt.Sprintf(" (secrets are never inline: put it in a file and give its path in %q)", key+"File")
			} else if h := fluxshape.ForKey(path, key, p.value); h != "" {
				msg += " (" + h + ")"
			} else if s := suggest(key, fields); s != "" {
				msg += fmt.Sprintf(" (did you mean %q?)", s)
			}
			d.add(nodePos(p.key), path, "%s", msg)
			d.unknown[path] = true
			continue
		}
		fp := joinPath(path, key)
		d.keys[fp] = nodePos(p.key)
		val := p.value
		for val.Kind == yaml.AliasNode && val.Alias != nil {
			val = val.Alias
		}
		d.values[fp] = nodePos(val)
		fv := v.Field(f.index)
		d.decode(p.value, fv, fp)
		if len(f.enum) > 0 && fv.Kind() == reflect.String && fv.String() != "" && !contains(f.enum, fv.String()) {
			d.fail(val, fp, "%q is not one of %s", fv.String(), strings.Join(f.enum, ", "))
			fv.SetString("")
		}
	}
}

func joinPath(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// field describes a struct field the decoder fills.
type field struct {
	index int
	enum  []string
	path  bool // a file path, resolved against the config's directory
	// secret marks a path that may also be env:NAME (config:"secret").
	secret bool
}

// fieldCache holds fieldsOf's maps by type: a config is walked field by
// field several times, and building the maps each time was most of
// loading a config of hundreds of images.
var fieldCache sync.Map // reflect.Type -> map[string]field

// fieldsOf maps the yaml key of each decoded field of struct type t to it.
// The map is shared: callers must not change it.
func fieldsOf(t reflect.Type) map[string]field {
	if m, ok := fieldCache.Load(t); ok {
		return m.(map[string]field)
	}
	m := buildFields(t)
	fieldCache.Store(t, m)
	return m
}

func buildFields(t reflect.Type) map[string]field {
	m := map[string]field{}
	for i := range t.NumField() {
		sf := t.Field(i)
		key, _, _ := strings.Cut(sf.Tag.Get("yaml"), ",")
		if key == "" || key == "-" || !sf.IsExported() {
			continue
		}
		tag := sf.Tag.Get("config")
		f := field{index: i, path: tag == "path" || tag == "secret", secret: tag == "secret"}
		if e := sf.Tag.Get("enum"); e != "" {
			f.enum = strings.Split(e, ",")
		}
		m[key] = f
	}
	return m
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// suggest returns the known key closest to key, if it is close enough to be
// a likely typo.
func suggest(key string, fields map[string]field) string {
	best, bestDist := "", 3
	for k := range fields {
		dist := typo.Distance(strings.ToLower(key), strings.ToLower(k))
		if dist < bestDist || (dist == bestDist && best != "" && k < best) {
			best, bestDist = k, dist
		}
	}
	if bestDist > 2 || bestDist >= len(key) {
		return ""
	}
	return best
}
