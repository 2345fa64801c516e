// Package yamlstream splits a YAML stream into its documents the way
// kustomize's kyaml (kio.ByteReader), and so Flux, splits it, and keeps
// the line each document starts on.
//
// kyaml parses each document on its own, so the lines of the nodes it
// returns count from the document's start; Doc.Line turns them back into
// lines of the file, which is what error messages must name.
package yamlstream

import (
	"fmt"
	"regexp"
	"strings"
)

// Doc is one document of a stream.
type Doc struct {
	// Text is the document, line endings normalized to LF, with its final
	// line break (but the last document keeps the stream's ending).
	Text string
	// Line is the line of the file the document's first line is on,
	// counting from 1.
	Line int
}

// FileLine turns line, counted from 1 within the document, into a line of
// the file.
func (d Doc) FileLine(line int) int {
	if line <= 0 {
		return d.Line
	}
	return d.Line + line - 1
}

// separator is kyaml's: a line starting with "---", which may be followed
// by a comment only.
var separator = regexp.MustCompile(`\n---.*\n`)

// Split returns the documents of data, empty ones included, as kyaml's
// ByteReader cuts them: CRLF becomes LF, and every line starting with
// "---" ends a document. A separator followed by anything but a comment is
// an error, as in kyaml.
func Split(data []byte) ([]Doc, error) {
	s := strings.ReplaceAll(string(data), "\r\n", "\n")
	if s == "" {
		return nil, nil
	}
	var docs []Doc
	prev, line := 0, 1
	for _, loc := range separator.FindAllStringIndex(s, -1) {
		sep := s[loc[0]:loc[1]]
		if rest := strings.TrimSpace(sep[4:]); rest != "" && rest[0] != '#' {
			sepLine := line + strings.Count(s[prev:loc[0]], "\n") + 1
			return nil, fmt.Errorf("line %d: invalid document separator %q", sepLine, strings.TrimSpace(sep))
		}
		docs = append(docs, Doc{Text: s[prev:loc[0]] + "\n", Line: line})
		// The document ends with the separator's leading newline; the next
		// starts after the separator's line.
		line += strings.Count(s[prev:loc[1]], "\n")
		prev = loc[1]
	}
	docs = append(docs, Doc{Text: s[prev:], Line: line})
	return docs, nil
}
