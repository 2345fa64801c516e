// Package msgtemplate parses the Go text/templates users write for commit
// messages and pull request titles, with the functions imagebump adds, so
// the config loader and the cycle accept exactly the same templates.
package msgtemplate

import (
	"strings"
	"text/template"
)

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
// missing map keys at execution.
func Parse(name, text string) (*template.Template, error) {
	return template.New(name).Funcs(Funcs).Option("missingkey=error").Parse(text)
}
