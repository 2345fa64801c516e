package discover

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/imagebump/imagebump/setters"
)

// Mark is the outcome of one marker insertion.
type Mark struct {
	setters.InsertResult
	// File is relative to the root; EditorLine is the line an editor shows.
	File       string
	EditorLine int
	// Source and Path are the use's.
	Source, Path string
}

// FileMarkers holds the marker insertions of one file.
type FileMarkers struct {
	// File is relative to the root, slash-separated.
	File string
	// Before is the file as Find read it; After the file with the markers,
	// equal to Before when none was inserted.
	Before, After []byte
	// Marks are the insertions, by line.
	Marks []Mark
	// Err is why the file could not be edited at all.
	Err error
}

// Changed reports whether markers were inserted.
func (f *FileMarkers) Changed() bool { return f.Err == nil && string(f.Before) != string(f.After) }

// Markers works out, file by file, the markers that put the proposals'
// uses under their policies (proposals that are choices get none), with
// setters.Insert: byte-minimal and verified. A value that carries the
// marker already is Present, so Markers over a tree it marked changes
// nothing. Files are sorted by name.
func Markers(inv *Inventory, props []Proposal) []FileMarkers {
	type want struct {
		ins    setters.Insertion
		source string
		path   string
	}
	byFile := map[string][]want{}
	for _, p := range props {
		if !p.Marks() {
			continue
		}
		for _, u := range p.Uses {
			for _, v := range u.Values {
				// A value reached through several aliases is marked once.
				if slices.ContainsFunc(byFile[u.File], func(w want) bool {
					return w.ins.Line == v.Line && w.ins.Column == v.Column && w.ins.Policy == p.Policy && w.ins.Field == v.Field
				}) {
					continue
				}
				byFile[u.File] = append(byFile[u.File], want{
					ins:    setters.Insertion{Line: v.Line, Column: v.Column, Value: v.Value, Policy: p.Policy, Field: v.Field},
					source: u.Source, path: u.Path,
				})
			}
		}
	}
	var files []string
	for f := range byFile {
		files = append(files, f)
	}
	slices.Sort(files)
	out := make([]FileMarkers, 0, len(files))
	for _, file := range files {
		wants := byFile[file]
		slices.SortStableFunc(wants, func(a, b want) int {
			return cmp.Or(cmp.Compare(a.ins.Line, b.ins.Line), cmp.Compare(a.ins.Column, b.ins.Column))
		})
		src := inv.src[file]
		fm := FileMarkers{File: file, Before: src, After: src}
		ins := make([]setters.Insertion, len(wants))
		for i, w := range wants {
			ins[i] = w.ins
		}
		after, res, err := setters.Insert(src, ins)
		if err != nil {
			fm.Err = err
			out = append(out, fm)
			continue
		}
		fm.After = after
		odd := !onlyCRLF(src) || strings.ContainsAny(string(src), "\u0085\u2028\u2029")
		for i, r := range res {
			if me := (*setters.MarkedError)(nil); errors.As(r.Err, &me) && me.Policy == r.Policy && me.Field != r.Field {
				// The policy's own marker, for another part of the
				// reference: a bump would write that part over the whole.
				r.Err = fmt.Errorf("%w: but it says %s where the value holds %s, and a bump would write %s over it; write %s instead",
					me, fieldWords(me.Field), fieldWords(r.Field), fieldWords(me.Field), setters.FormatMarker(r.Policy, r.Field))
			}
			line := r.Line
			if odd {
				line = setters.EditorLine(src, line)
			}
			fm.Marks = append(fm.Marks, Mark{InsertResult: r, File: file, EditorLine: line, Source: wants[i].source, Path: wants[i].path})
		}
		out = append(out, fm)
	}
	return out
}

// fieldWords names what a marker's field owns.
func fieldWords(f setters.Field) string {
	switch f {
	case setters.FieldTag:
		return "the tag alone"
	case setters.FieldName:
		return "the repository name alone"
	case setters.FieldDigest:
		return "the digest alone"
	}
	return "the whole reference"
}
