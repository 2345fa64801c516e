// Package msgtemplate parses and runs the Go text/templates users write for
// commit messages and pull request titles, with the functions and the data
// imagebump gives them, so that the config loader can refuse a broken
// template before anything runs and the cycle renders exactly what the
// loader accepted.
package msgtemplate

import (
	"fmt"
	"reflect"
	"strings"
	"text/template"
	"text/template/parse"
	"time"
)

// Data is what a template sees.
type Data struct {
	// Changes lists every edit, sorted by file and line.
	Changes []Change
	// Updated lists each policy that moved, sorted by name.
	Updated []PolicyUpdate
	// Repository is the Git remote, without credentials.
	Repository string
	// Target is the config target's name ("default" for the top-level one).
	Target string
}

// Change is one edit in Data.
type Change struct {
	File   string
	Line   int
	Policy string
	Field  string // image, tag, name or digest
	Old    string
	New    string
}

// PolicyUpdate is one policy's move in Data.
type PolicyUpdate struct {
	Policy     string
	Repository string
	Tag        string
	Digest     string
	// Old holds the distinct tags the policy's markers had before.
	Old []string
	// Files lists the files the policy changed.
	Files []string
}

// Funcs are the functions templates may call besides text/template's
// built-ins.
var Funcs = template.FuncMap{
	// join joins a list with a separator: {{ join .Old ", " }}.
	"join": strings.Join,
	// short cuts a digest or commit hash to 12 characters after any
	// "sha256:" prefix: {{ short .Digest }}.
	"short": func(s string) string {
		s = strings.TrimPrefix(s, "sha256:")
		if len(s) > 12 {
			return s[:12]
		}
		return s
	},
}

// Parse parses text as a template named name, with Funcs, failing on
// missing map keys at execution. Its functions are bounded (Bound), for
// a run starting now.
func Parse(name, text string) (*template.Template, error) {
	t, err := template.New(name).Funcs(Bound(Funcs, time.Now().Add(MaxRun), MaxRun)).Option("missingkey=error").Parse(text)
	if err != nil {
		return nil, err
	}
	BoundRanges(t)
	return t, nil
}

// MaxRun bounds the run of one template: past it, its next function call
// fails.
const MaxRun = 10 * time.Second

var errorType = reflect.TypeFor[error]()

// Bound returns funcs, with text/template's printf, print and println
// added, each wrapped to fail when called past deadline (maxRun after the
// run began, for the message) or when it returns a string longer than
// MaxLen, or a list longer than MaxItems: a loop that doubles a string
// with printf would otherwise take all memory before the output's limit
// is met. printf, print and println also refuse, before they run, what
// would make a string over MaxLen. A function without an error result
// gains one. It adds boundRange, which BoundRanges puts at the end of
// every range's pipeline: the ranges of one run may go over MaxItems
// items in all, so that loops without a function call (over an integer,
// or nested over a list) end too.
func Bound(funcs template.FuncMap, deadline time.Time, maxRun time.Duration) template.FuncMap {
	out := template.FuncMap{
		"printf": func(format string, args ...any) (string, error) {
			if err := fitsPrintf(format, args); err != nil {
				return "", err
			}
			return fmt.Sprintf(format, args...), nil
		},
		"print": func(args ...any) (string, error) {
			if err := fitsArgs(0, args); err != nil {
				return "", err
			}
			return fmt.Sprint(args...), nil
		},
		"println": func(args ...any) (string, error) {
			if err := fitsArgs(0, args); err != nil {
				return "", err
			}
			return fmt.Sprintln(args...), nil
		},
	}
	for name, f := range funcs {
		out[name] = f
	}
	for name, f := range out {
		out[name] = bounded(name, f, deadline, maxRun)
	}
	left := MaxItems
	out[rangeFunc] = func(v any) (any, error) {
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("range: the template has run for more than %v", maxRun)
		}
		n, err := rangeLen(v)
		if err != nil {
			return nil, err
		}
		if left -= n; left < 0 {
			return nil, fmt.Errorf("range: the template's loops go over more than %d items in all", MaxItems)
		}
		return v, nil
	}
	return out
}

// MaxItems bounds a list a template function returns, and the items all
// the ranges of one run go over together.
const MaxItems = 200000

// rangeFunc is the function BoundRanges ends each range's pipeline with.
const rangeFunc = "boundRange"

// rangeLen is how many items a range over v goes over.
func rangeLen(v any) (int, error) {
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Invalid:
		return 0, nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if n := rv.Int(); n > MaxItems {
			return MaxItems + 1, nil
		} else {
			return int(max(n, 0)), nil
		}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return int(min(rv.Uint(), MaxItems+1)), nil
	case reflect.Slice, reflect.Array, reflect.Map, reflect.String:
		return rv.Len(), nil
	case reflect.Pointer:
		return rangeLen(rv.Elem().Interface())
	}
	return 0, fmt.Errorf("range: over a %s, which a message template does not range over", rv.Kind())
}

// BoundRanges ends the pipeline of every range of t (and of the templates
// it defines) with boundRange: {{ range X }} runs as {{ range X |
// boundRange }}. t's functions must come from Bound.
func BoundRanges(t *template.Template) {
	for _, tt := range t.Templates() {
		if tt.Tree != nil && tt.Tree.Root != nil {
			boundRangesIn(tt.Tree, tt.Tree.Root)
		}
	}
}

func boundRangesIn(tr *parse.Tree, n parse.Node) {
	switch n := n.(type) {
	case *parse.ListNode:
		if n == nil {
			return
		}
		for _, c := range n.Nodes {
			boundRangesIn(tr, c)
		}
	case *parse.IfNode:
		boundRangesIn(tr, n.List)
		boundRangesIn(tr, n.ElseList)
	case *parse.WithNode:
		boundRangesIn(tr, n.List)
		boundRangesIn(tr, n.ElseList)
	case *parse.RangeNode:
		pos := n.Pipe.Position()
		ident := parse.NewIdentifier(rangeFunc).SetTree(tr).SetPos(pos)
		n.Pipe.Cmds = append(n.Pipe.Cmds, &parse.CommandNode{NodeType: parse.NodeCommand, Pos: pos, Args: []parse.Node{ident}})
		boundRangesIn(tr, n.List)
		boundRangesIn(tr, n.ElseList)
	}
}

// fitsPrintf refuses a printf whose result would pass MaxLen: its format
// and arguments, plus the widths and precisions it asks for (fmt takes
// each up to a million; a * takes one from the arguments).
func fitsPrintf(format string, args []any) error {
	n := len(format)
	for i := 0; i < len(format); i++ {
		if format[i] != '%' {
			continue
		}
		i++
		for i < len(format) && strings.IndexByte("+-# 0", format[i]) >= 0 {
			i++
		}
		for part := 0; part < 2; part++ {
			if i < len(format) && format[i] == '*' {
				n += 1000000
				i++
			} else {
				w := 0
				for i < len(format) && format[i] >= '0' && format[i] <= '9' {
					w = min(w*10+int(format[i]-'0'), 1000000)
					i++
				}
				n += w
			}
			if part == 0 && i < len(format) && format[i] == '.' {
				i++
				continue
			}
			break
		}
		if n > MaxLen {
			break
		}
	}
	return fitsArgs(n, args)
}

// fitsArgs refuses what would pass MaxLen once the text of args is added
// to n bytes.
func fitsArgs(n int, args []any) error {
	for _, a := range args {
		if n = textSize(reflect.ValueOf(a), n+8, 0); n > MaxLen {
			return ErrTooLong
		}
	}
	return nil
}

// textSize adds to n the bytes of text v holds (strings, in lists, maps
// and structs, however deep: one string in a list of a million is counted
// a million times, as printing the list would), stopping once past
// MaxLen.
func textSize(v reflect.Value, n, depth int) int {
	if n > MaxLen || depth > 32 {
		return n
	}
	switch v.Kind() {
	case reflect.String:
		return n + v.Len()
	case reflect.Slice, reflect.Array:
		for i := 0; i < v.Len() && n <= MaxLen; i++ {
			n = textSize(v.Index(i), n+1, depth+1)
		}
	case reflect.Map:
		it := v.MapRange()
		for it.Next() && n <= MaxLen {
			n = textSize(it.Value(), textSize(it.Key(), n+1, depth+1), depth+1)
		}
	case reflect.Struct:
		for i := 0; i < v.NumField() && n <= MaxLen; i++ {
			n = textSize(v.Field(i), n, depth+1)
		}
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			return textSize(v.Elem(), n, depth+1)
		}
	}
	return n
}

// bounded wraps one template function for Bound.
func bounded(name string, f any, deadline time.Time, maxRun time.Duration) any {
	v := reflect.ValueOf(f)
	t := v.Type()
	ins := make([]reflect.Type, t.NumIn())
	for i := range ins {
		ins[i] = t.In(i)
	}
	outs := make([]reflect.Type, t.NumOut())
	for i := range outs {
		outs[i] = t.Out(i)
	}
	hasErr := len(outs) > 0 && outs[len(outs)-1] == errorType
	if !hasErr {
		outs = append(outs, errorType)
	}
	fail := func(err error) []reflect.Value {
		res := make([]reflect.Value, len(outs))
		for i, o := range outs[:len(outs)-1] {
			res[i] = reflect.Zero(o)
		}
		res[len(res)-1] = reflect.ValueOf(&err).Elem()
		return res
	}
	return reflect.MakeFunc(reflect.FuncOf(ins, outs, t.IsVariadic()), func(args []reflect.Value) []reflect.Value {
		if time.Now().After(deadline) {
			return fail(fmt.Errorf("%s: the template has run for more than %v", name, maxRun))
		}
		n := 0
		for _, a := range args {
			if n = textSize(a, n, 0); n > MaxLen {
				return fail(fmt.Errorf("%s: its arguments hold more than %d bytes of text, more than a message may be", name, MaxLen))
			}
		}
		var res []reflect.Value
		if t.IsVariadic() {
			res = v.CallSlice(args)
		} else {
			res = v.Call(args)
		}
		for _, r := range res {
			if r.Kind() == reflect.Interface && !r.IsNil() {
				r = r.Elem()
			}
			if r.Kind() == reflect.String && r.Len() > MaxLen {
				return fail(fmt.Errorf("%s: a string of %d bytes is longer than a message may be (%d)", name, r.Len(), MaxLen))
			}
			if (r.Kind() == reflect.Slice || r.Kind() == reflect.Map) && r.Len() > MaxItems {
				return fail(fmt.Errorf("%s: %d items are more than a message template may make (%d)", name, r.Len(), MaxItems))
			}
		}
		if !hasErr {
			res = append(res, reflect.Zero(errorType))
		}
		return res
	}).Interface()
}

// Render runs the template text over data. what names the template in
// errors (for example "commit.messageTemplate in imagebump.yaml"); the
// error also carries text/template's line and column.
func Render(what, text string, data Data) (string, error) {
	t, err := Parse("template", text)
	if err != nil {
		return "", fmt.Errorf("%s: %w", what, err)
	}
	var b Limited
	if err := t.Execute(&b, data); err != nil {
		return "", fmt.Errorf("%s: %w", what, err)
	}
	msg := strings.TrimRight(b.String(), "\n") + "\n"
	if err := CheckText(msg); err != nil {
		return "", fmt.Errorf("%s: %w", what, err)
	}
	return msg, nil
}

// MaxLen bounds a rendered message: a commit message of every file of a
// first run over a 50,000-file fleet is a few hundred kilobytes.
const MaxLen = 1 << 20

// ErrTooLong is the error of a template whose output passes MaxLen.
var ErrTooLong = fmt.Errorf("the message would be longer than %d bytes", MaxLen)

// Limited collects a template's output up to MaxLen bytes; a write past
// that fails with ErrTooLong, which stops the template there.
type Limited struct{ b strings.Builder }

func (l *Limited) Write(p []byte) (int, error) {
	if l.b.Len()+len(p) > MaxLen {
		return 0, ErrTooLong
	}
	return l.b.Write(p)
}

// String returns what was written.
func (l *Limited) String() string { return l.b.String() }

// CheckText refuses a rendered message Git would refuse, or that its
// readers could not: one holding a NUL byte. (The values of the
// repository that templates see are escaped; a NUL comes from the
// template.)
func CheckText(msg string) error {
	if i := strings.IndexByte(msg, 0); i >= 0 {
		return fmt.Errorf("the message holds a NUL byte (at byte %d), which Git refuses in a commit", i)
	}
	return nil
}

// Check parses text and runs it over Sample, so a template that names a
// field imagebump does not give is refused when the config loads rather
// than in the middle of a cycle.
func Check(name, text string) error {
	t, err := Parse(name, text)
	if err != nil {
		return err
	}
	var b Limited
	return t.Execute(&b, Sample())
}

// Sample is plausible template data with every field set.
func Sample() Data {
	return Data{
		Changes: []Change{
			{File: "clusters/prod/web.yaml", Line: 12, Policy: "apps:web", Field: "image", Old: "ghcr.io/acme/web:1.0.0", New: "ghcr.io/acme/web:1.1.0"},
			{File: "clusters/prod/values.yaml", Line: 4, Policy: "apps:api", Field: "tag", Old: "2.3.0", New: "2.3.4"},
		},
		Updated: []PolicyUpdate{
			{Policy: "apps:api", Repository: "ghcr.io/acme/api", Tag: "2.3.4", Old: []string{"2.3.0"}, Files: []string{"clusters/prod/values.yaml"}},
			{Policy: "apps:web", Repository: "ghcr.io/acme/web", Tag: "1.1.0", Digest: "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", Old: []string{"1.0.0"}, Files: []string{"clusters/prod/web.yaml"}},
		},
		Repository: "https://git.example/acme/fleet.git",
		Target:     "default",
	}
}
