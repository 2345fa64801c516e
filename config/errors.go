package config

import (
	"errors"
	"fmt"
	"sort"
	"strings"
)

// Error is one problem in a config file, at a position. Line and Column are
// 1-based; Column is 0 when only the line is known (YAML syntax errors).
type Error struct {
	// File is the config's file name.
	File string
	// Line and Column locate the key or value at fault.
	Line, Column int
	// Path is the key path, such as images[0].policy; empty for the root.
	Path string
	// Msg says what is wrong.
	Msg string
	// Err is the underlying error, if any.
	Err error
}

// Error returns "file:line:column: path: msg: err", on one line.
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	fmt.Fprintf(&b, ":%d:", e.Line)
	if e.Column > 0 {
		fmt.Fprintf(&b, "%d:", e.Column)
	}
	b.WriteString(" ")
	if e.Path != "" {
		b.WriteString(e.Path)
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	if e.Err != nil {
		b.WriteString(": ")
		b.WriteString(e.Err.Error())
	}
	// One problem is one line: messages quote user input, but errors from
	// other packages (regexp) may echo it raw.
	return strings.NewReplacer("\r", `\r`, "\n", `\n`).Replace(b.String())
}

// Unwrap returns the underlying error.
func (e *Error) Unwrap() error { return e.Err }

// maxErrors is the number of problems reported at most; a file with more
// is likely not an imagebump config at all.
const maxErrors = 50

// pos is a position in the file.
type pos struct {
	line, col int
}

// errorList collects problems.
type errorList struct {
	file string
	errs []*Error
}

func (l *errorList) add(p pos, path, format string, args ...any) {
	l.errs = append(l.errs, &Error{File: l.file, Line: p.line, Column: p.col, Path: path, Msg: fmt.Sprintf(format, args...)})
}

func (l *errorList) wrap(p pos, path string, err error, format string, args ...any) {
	l.errs = append(l.errs, &Error{File: l.file, Line: p.line, Column: p.col, Path: path, Msg: fmt.Sprintf(format, args...), Err: err})
}

// err returns the problems ordered by position, joined, or nil.
func (l *errorList) err() error {
	if len(l.errs) == 0 {
		return nil
	}
	sort.SliceStable(l.errs, func(i, j int) bool {
		a, b := l.errs[i], l.errs[j]
		if a.Line != b.Line {
			return a.Line < b.Line
		}
		return a.Column < b.Column
	})
	// An aliased or merged mapping is decoded once per use, under another
	// path each time; report each problem in it once, at its first path.
	seen := map[string]bool{}
	var errs []error
	for _, e := range l.errs {
		k := fmt.Sprintf("%d:%d:%s", e.Line, e.Column, e.Msg)
		if e.Err != nil {
			k += ": " + e.Err.Error()
		}
		if !seen[k] {
			seen[k] = true
			errs = append(errs, e)
		}
	}
	if len(errs) > maxErrors {
		next := errs[maxErrors].(*Error)
		more := &Error{File: l.file, Line: next.Line, Msg: fmt.Sprintf("and %d more problems", len(errs)-maxErrors)}
		errs = append(errs[:maxErrors], more)
	}
	return errors.Join(errs...)
}
