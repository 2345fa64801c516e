package flux

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sort"
	"strings"
)

// Flux kinds imagebump reads.
const (
	KindImageRepository       = "ImageRepository"
	KindImagePolicy           = "ImagePolicy"
	KindImageUpdateAutomation = "ImageUpdateAutomation"
	KindGitRepository         = "GitRepository"
)

// Object is one Flux object, and where it was read.
type Object struct {
	Kind       string
	APIVersion string
	Namespace  string
	Name       string
	// File and Line locate the object's first line. For an object out of a
	// kustomize build they are those of the file the object was found in
	// before the build, or the kustomization's when it was not found.
	File string
	Line int
	// Kustomization is the kustomization file the object was built by,
	// empty when it was read as written. Positions of the fields of a
	// built object are the object's: patches may have set them.
	Kustomization string
}

// Ref is "Kind namespace/name", or "Kind name" for an entry of
// imagebump's own config, which has no namespace ("target default").
func (o Object) Ref() string {
	if o.Namespace == "" {
		return o.Kind + " " + o.Name
	}
	return o.Kind + " " + o.Namespace + "/" + o.Name
}

// Pos is "file:line", with the kustomization that built the object.
func (o Object) Pos() string { return pos(o, o.Line) }

func pos(o Object, line int) string {
	s := fmt.Sprintf("%s:%d", o.File, line)
	if o.Kustomization != "" {
		s += ", after the kustomize build of " + o.Kustomization
	}
	return s
}

// String is "Kind namespace/name (file:line)".
func (o Object) String() string { return o.Ref() + " (" + o.Pos() + ")" }

// Level says how much a note matters.
type Level int

// Note levels.
const (
	// Info is a field imagebump reads differently or does not need, with no
	// change to the bumps made.
	Info Level = iota
	// Warning is a field imagebump does not honour in a way that can change
	// what it does: the user should read it.
	Warning
)

func (l Level) String() string {
	if l == Warning {
		return "warning"
	}
	return "info"
}

// Note is something imagebump does differently from Flux with one field
// of one object: nothing is dropped without one.
type Note struct {
	Level  Level
	Object Object
	// Field is the field's path, such as spec.accessFrom; empty for the
	// object as a whole.
	Field string
	// Line is the field's line (the object's when the field has no own
	// position).
	Line int
	// Msg says what imagebump does instead, and why.
	Msg string
}

// String is "file:line: level: Kind ns/name: field: msg", without the
// object for a note on a file (a kustomization) and without an empty field.
func (n Note) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %s", pos(n.Object, n.Line), n.Level)
	if n.Object.Kind != "" {
		b.WriteString(": " + n.Object.Ref())
	}
	if n.Field != "" {
		b.WriteString(": " + n.Field)
	}
	b.WriteString(": " + n.Msg)
	return b.String()
}

// Error is a Flux object imagebump cannot read or map.
type Error struct {
	Object Object
	Field  string
	Line   int
	Msg    string
	Err    error
}

// Error is "file:line: Kind ns/name: field: msg: err".
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(pos(e.Object, e.Line) + ": ")
	if e.Object.Kind != "" {
		b.WriteString(e.Object.Ref() + ": ")
	}
	if e.Field != "" {
		b.WriteString(e.Field + ": ")
	}
	b.WriteString(e.Msg)
	if e.Err != nil {
		b.WriteString(": " + e.Err.Error())
	}
	return strings.NewReplacer("\r", `\r`, "\n", `\n`).Replace(b.String())
}

// Unwrap returns the underlying error.
func (e *Error) Unwrap() error { return e.Err }

// Ignored is a Flux object of a kind imagebump does not read.
type Ignored struct {
	Object Object
	Reason string
}

// Report lists the Flux objects read and everything imagebump does
// differently with them.
type Report struct {
	// Objects are the objects of the four kinds imagebump reads, in the
	// order read.
	Objects []Object
	// Ignored are Flux objects of other kinds (Kustomization, HelmRelease,
	// ...), which imagebump has no use for.
	Ignored []Ignored
	// Notes are the fields imagebump does not take as Flux does.
	Notes []Note
}

// WriteText writes the report for people: objects read, objects ignored,
// notes, one per line.
func (r *Report) WriteText(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "Flux objects read: %d\n", len(r.Objects))
	for _, o := range r.Objects {
		fmt.Fprintf(&b, "  %s\n", o)
	}
	if len(r.Ignored) > 0 {
		fmt.Fprintf(&b, "Flux objects ignored: %d\n", len(r.Ignored))
		for _, ig := range r.Ignored {
			fmt.Fprintf(&b, "  %s: %s\n", ig.Object, ig.Reason)
		}
	}
	if len(r.Notes) > 0 {
		fmt.Fprintf(&b, "Notes: %d\n", len(r.Notes))
		for _, n := range r.Notes {
			fmt.Fprintf(&b, "  %s\n", n)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// Log writes the report as log records, for a process whose logs are
// JSON (serve's), where the lines of WriteText would be the only ones a
// collector cannot read: one record for the objects read, one for each
// object ignored, and one for each note, at warn level for a Warning.
func (r *Report) Log(log *slog.Logger) {
	read := make([]string, len(r.Objects))
	for i, o := range r.Objects {
		read[i] = o.String()
	}
	log.Info("Flux objects read", "count", len(r.Objects), "objects", read)
	for _, ig := range r.Ignored {
		log.Info("Flux object ignored: "+ig.Reason, "object", ig.Object.Ref(), "at", ig.Object.Pos())
	}
	for _, n := range r.Notes {
		level := slog.LevelInfo
		if n.Level == Warning {
			level = slog.LevelWarn
		}
		attrs := []any{"at", pos(n.Object, n.Line)}
		if n.Object.Kind != "" {
			attrs = append(attrs, "object", n.Object.Ref())
		}
		if n.Field != "" {
			attrs = append(attrs, "field", n.Field)
		}
		log.Log(context.Background(), level, n.Msg, attrs...)
	}
}

// problems collects notes and errors.
type problems struct {
	notes []Note
	errs  []*Error
}

// note records a note, once: an object used by several others (an
// ImageRepository of two policies, a GitRepository of two automations) is
// looked at for each, and says the same thing each time.
func (p *problems) note(level Level, o Object, field string, line int, format string, args ...any) {
	n := Note{Level: level, Object: o, Field: field, Line: line, Msg: fmt.Sprintf(format, args...)}
	for _, m := range p.notes {
		if m == n {
			return
		}
	}
	p.notes = append(p.notes, n)
}

// fail records an error, once (see note).
func (p *problems) fail(o Object, field string, line int, err error, format string, args ...any) {
	e := &Error{Object: o, Field: field, Line: line, Msg: fmt.Sprintf(format, args...), Err: err}
	for _, f := range p.errs {
		if f.Object == e.Object && f.Field == e.Field && f.Line == e.Line && f.Msg == e.Msg {
			return
		}
	}
	p.errs = append(p.errs, e)
}

// err returns the errors ordered by file and line, joined, or nil.
func (p *problems) err() error {
	if len(p.errs) == 0 {
		return nil
	}
	sort.SliceStable(p.errs, func(i, j int) bool {
		a, b := p.errs[i], p.errs[j]
		if a.Object.File != b.Object.File {
			return a.Object.File < b.Object.File
		}
		return a.Line < b.Line
	})
	errs := make([]error, len(p.errs))
	for i, e := range p.errs {
		errs[i] = e
	}
	return errors.Join(errs...)
}

func (p *problems) sortNotes() {
	sort.SliceStable(p.notes, func(i, j int) bool {
		a, b := p.notes[i], p.notes[j]
		if a.Object.File != b.Object.File {
			return a.Object.File < b.Object.File
		}
		return a.Line < b.Line
	})
}
