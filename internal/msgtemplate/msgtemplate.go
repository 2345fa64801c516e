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
	return template.New(name).Funcs(Bound(Funcs, time.Now().Add(MaxRun), MaxRun)).Option("missingkey=error").Parse(text)
}

// MaxRun bounds the run of one template: past it, its next function call
// fails.
const MaxRun = 10 * time.Second

var errorType = reflect.TypeFor[error]()

// Bound returns funcs, with text/template's printf, print and println
// added, each wrapped to fail when called past deadline (maxRun after the
// run began, for the message) or when it returns a string longer than
// MaxLen: a loop that doubles a string with printf would otherwise take
// all memory before the output's limit is met. A function without an
// error result gains one.
func Bound(funcs template.FuncMap, deadline time.Time, maxRun time.Duration) template.FuncMap {
	out := template.FuncMap{"printf": fmt.Sprintf, "print": fmt.Sprint, "println": fmt.Sprintln}
	for name, f := range funcs {
		out[name] = f
	}
	for name, f := range out {
		out[name] = bounded(name, f, deadline, maxRun)
	}
	return out
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
