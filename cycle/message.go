package cycle

import (
	"sort"

	"github.com/imagebump/imagebump/internal/msgtemplate"
	"github.com/imagebump/imagebump/internal/printable"
	"github.com/imagebump/imagebump/setters"
)

// MessageData is what commit message (and pull request title) templates
// see; MessageChange and PolicyUpdate are its parts.
type (
	MessageData   = msgtemplate.Data
	MessageChange = msgtemplate.Change
	PolicyUpdate  = msgtemplate.PolicyUpdate
)

// NewMessageData gathers the template data of a report's changes. The
// values that come from the repository's files (a file's path, a marked
// field's old value) are escaped as printable.String escapes them, and
// cut: a value written to forge a commit trailer ("1.0\n\nSigned-off-by:
// ...") or to carry a terminal escape or a NUL byte reaches the message
// as inert text.
func NewMessageData(rep *Report, repository, target string) MessageData {
	d := MessageData{Repository: repository, Target: target}
	byPolicy := map[string]*PolicyUpdate{}
	for _, c := range rep.Changes {
		// The old tag is split from the raw value, then escaped with it.
		oldTag := c.Old
		if c.Field == setters.FieldImage {
			oldTag = splitReference(c.Old).tag
		}
		oldTag = printable.String(oldTag)
		c.File, c.Old = printable.String(c.File), printable.String(c.Old)
		d.Changes = append(d.Changes, MessageChange{File: c.File, Line: c.Line, Policy: c.Policy, Field: fieldString(c.Field), Old: c.Old, New: c.New})
		u := byPolicy[c.Policy]
		if u == nil {
			u = &PolicyUpdate{Policy: c.Policy}
			for _, p := range rep.Policies {
				if p.Name == c.Policy {
					u.Repository, u.Tag, u.Digest = p.Repository, p.Selection.Latest, p.Digest
				}
			}
			byPolicy[c.Policy] = u
		}
		switch c.Field {
		case setters.FieldImage, setters.FieldTag:
			if oldTag != "" {
				u.Old = appendUnique(u.Old, oldTag)
			}
		}
		u.Files = appendUnique(u.Files, c.File)
	}
	for _, u := range byPolicy {
		d.Updated = append(d.Updated, *u)
	}
	sort.Slice(d.Updated, func(i, j int) bool { return d.Updated[i].Policy < d.Updated[j].Policy })
	return d
}

func appendUnique(s []string, v string) []string {
	for _, x := range s {
		if x == v {
			return s
		}
	}
	return append(s, v)
}

func fieldString(f setters.Field) string {
	if f == setters.FieldImage {
		return "image"
	}
	return string(f)
}

// DefaultMessageTemplate is the commit message when the config sets none:
// a subject naming the bumps, then one line per policy and its files.
const DefaultMessageTemplate = `{{ if eq (len .Updated) 1 }}{{ with index .Updated 0 }}Bump {{ .Policy }} to {{ .Tag }}{{ end }}{{ else }}Bump {{ len .Updated }} images{{ end }}

{{ range .Updated -}}
- {{ .Policy }}: {{ .Repository }} {{ if .Old }}{{ join .Old ", " }} -> {{ end }}{{ .Tag }}{{ if .Digest }}@{{ .Digest }}{{ end }}
{{ range .Files }}  {{ . }}
{{ end }}{{ end -}}
`

// DefaultTitleTemplate is the pull request title when the config sets none.
const DefaultTitleTemplate = `{{ if eq (len .Updated) 1 }}{{ with index .Updated 0 }}Bump {{ .Policy }} to {{ .Tag }}{{ end }}{{ else }}Bump {{ len .Updated }} images{{ end }}`

// RenderTemplate executes a message template over data. what names the
// template in errors (for example "commit.messageTemplate in imagebump.yaml"),
// so a bad template's error says where it is and which template line fails.
func RenderTemplate(what, text string, data MessageData) (string, error) {
	return msgtemplate.Render(what, text, data)
}
