package cycle

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/imagebump/imagebump/policy"
	"github.com/imagebump/imagebump/setters"
)

func sampleReport() *Report {
	return &Report{
		Policies: []PolicyResult{
			{Name: "apps:web", Repository: "ghcr.io/acme/web", Selection: policy.Result{Latest: "1.2.0"}},
			{Name: "apps:api", Repository: "ghcr.io/acme/api", Selection: policy.Result{Latest: "2.3.4"}, Digest: "sha256:0123456789abcdef"},
		},
		Changes: []setters.Change{
			{File: "a/web.yaml", Line: 3, Policy: "apps:web", Field: setters.FieldImage, Old: "ghcr.io/acme/web:1.0.0", New: "ghcr.io/acme/web:1.2.0"},
			{File: "b/values.yaml", Line: 4, Policy: "apps:api", Field: setters.FieldTag, Old: "2.3.0", New: "2.3.4"},
			{File: "c/compose.yml", Line: 2, Policy: "apps:web", Field: setters.FieldImage, Old: "ghcr.io/acme/web:1.0.0", New: "ghcr.io/acme/web:1.2.0"},
		},
	}
}

func TestRenderTemplate(t *testing.T) {
	data := NewMessageData(sampleReport(), "https://git.example/fleet.git", "prod")
	tests := []struct {
		name    string
		tmpl    string
		want    string
		wantErr string
	}{
		{
			name: "default",
			tmpl: DefaultMessageTemplate,
			want: "Bump 2 images\n\n" +
				"- apps:api: ghcr.io/acme/api 2.3.0 -> 2.3.4@sha256:0123456789abcdef\n  b/values.yaml\n" +
				"- apps:web: ghcr.io/acme/web 1.0.0 -> 1.2.0\n  a/web.yaml\n  c/compose.yml\n",
		},
		{
			name: "custom with every change",
			tmpl: "{{ .Target }}: {{ len .Changes }} edits\n{{ range .Changes }}{{ .File }}:{{ .Line }} {{ .Field }} {{ .Old }} -> {{ .New }}\n{{ end }}",
			want: "prod: 3 edits\na/web.yaml:3 image ghcr.io/acme/web:1.0.0 -> ghcr.io/acme/web:1.2.0\n" +
				"b/values.yaml:4 tag 2.3.0 -> 2.3.4\nc/compose.yml:2 image ghcr.io/acme/web:1.0.0 -> ghcr.io/acme/web:1.2.0\n",
		},
		{
			name: "short digest",
			tmpl: "{{ range .Updated }}{{ if .Digest }}{{ short .Digest }}{{ end }}{{ end }}",
			want: "0123456789ab\n",
		},
		{name: "parse error names the line", tmpl: "ok\n{{ .Nope", wantErr: "commit.messageTemplate: template: template:2:"},
		{name: "unknown field names the line", tmpl: "a\nb\n{{ .Nope }}", wantErr: "template:3:"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := RenderTemplate("commit.messageTemplate", tt.tmpl, data)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want it to contain %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(got, tt.want); diff != "" {
				t.Errorf("message (-got +want):\n%s", diff)
			}
		})
	}
}

// TestMessageDataEscapesRepositoryValues: a marked value or a file name
// of the repository written to forge commit trailers, or to carry a
// terminal escape or a NUL byte, reaches the commit message as inert
// text, one line; a template's own NUL is refused, as Git refuses it.
func TestMessageDataEscapesRepositoryValues(t *testing.T) {
	forged := "1.0.0\n\nSigned-off-by: Mallory <m@evil.example>\x1b[2J\x00"
	rep := &Report{
		Policies: []PolicyResult{{Name: "apps:web", Repository: "ghcr.io/acme/web", Selection: policy.Result{Latest: "1.2.0"}}},
		Changes: []setters.Change{
			{File: "zz\n\nCo-authored-by: Mallory <m@evil.example>/web.yaml", Line: 3, Policy: "apps:web", Field: setters.FieldTag, Old: forged, New: "1.2.0"},
			{File: "a/web.yaml", Line: 3, Policy: "apps:web", Field: setters.FieldImage, Old: "ghcr.io/acme/web:" + strings.Repeat("9", 2000), New: "ghcr.io/acme/web:1.2.0"},
		},
	}
	data := NewMessageData(rep, "https://git.example/fleet.git", "prod")
	for _, tmpl := range []string{DefaultMessageTemplate, "{{ range .Changes }}{{ .File }} {{ .Old }}\n{{ end }}"} {
		msg, err := RenderTemplate("commit.messageTemplate", tmpl, data)
		if err != nil {
			t.Fatal(err)
		}
		for line := range strings.Lines(msg) {
			if strings.HasPrefix(line, "Signed-off-by") || strings.HasPrefix(line, "Co-authored-by") {
				t.Errorf("a forged trailer line: %q in\n%s", line, msg)
			}
		}
		if strings.ContainsAny(msg, "\x1b\x00") {
			t.Errorf("a control character reached the message: %q", msg)
		}
		if !strings.Contains(msg, `1.0.0\n\nSigned-off-by`) || len(msg) > 1500 {
			t.Errorf("the values are not escaped and cut (%d bytes): %q", len(msg), msg)
		}
	}
	if _, err := RenderTemplate("commit.messageTemplate", "a{{ \"\\x00\" }}b", data); err == nil || !strings.Contains(err.Error(), "NUL byte") {
		t.Errorf("a template writing NUL: %v, want refused", err)
	}
	if _, err := RenderTemplate("commit.messageTemplate", "{{ range $.Changes }}{{ range $.Changes }}{{ range $.Changes }}{{ range $.Changes }}{{ range $.Changes }}{{ range $.Changes }}{{ range $.Changes }}{{ range $.Changes }}{{ range $.Changes }}{{ range $.Changes }}{{ range $.Changes }}{{ range $.Changes }}{{ range $.Changes }}{{ range $.Changes }}{{ range $.Changes }}{{ range $.Changes }}{{ range $.Changes }}{{ range $.Changes }}{{ range $.Changes }}{{ range $.Changes }}{{ .Old }}{{ end }}{{ end }}{{ end }}{{ end }}{{ end }}{{ end }}{{ end }}{{ end }}{{ end }}{{ end }}{{ end }}{{ end }}{{ end }}{{ end }}{{ end }}{{ end }}{{ end }}{{ end }}{{ end }}{{ end }}", data); err == nil || !strings.Contains(err.Error(), "longer than") {
		t.Errorf("a template writing 2^20 values: %v, want refused past the limit", err)
	}
}

// TestTemplateFunctionsBounded: a loop doubling a string with printf
// fails at the message's limit, before it takes the memory.
func TestLongOldReferenceKeepsItsTag(t *testing.T) {
	// The escaped value is cut at 512 bytes; the tag is split from the
	// whole value first.
	rep := &Report{
		Policies: []PolicyResult{{Name: "apps:web", Repository: "ghcr.io/acme/web", Selection: policy.Result{Latest: "1.2.0"}}},
		Changes: []setters.Change{{File: "a.yaml", Line: 1, Policy: "apps:web", Field: setters.FieldImage,
			Old: "ghcr.io/acme/" + strings.Repeat("a", 600) + ":1.0.0", New: "ghcr.io/acme/web:1.2.0"}},
	}
	d := NewMessageData(rep, "https://git.example/fleet.git", "prod")
	if len(d.Updated) != 1 || !slices.Equal(d.Updated[0].Old, []string{"1.0.0"}) {
		t.Errorf("old tags %q, want [1.0.0]", d.Updated[0].Old)
	}
}

func TestTemplateFunctionsBounded(t *testing.T) {
	data := NewMessageData(sampleReport(), "https://git.example/fleet.git", "prod")
	tmpl := `{{ $x := "ab" }}` + strings.Repeat(`{{ range $.Changes }}`, 20) + `{{ $x = printf "%s%s" $x $x }}` + strings.Repeat(`{{ end }}`, 20)
	if _, err := RenderTemplate("commit.messageTemplate", tmpl, data); err == nil || !strings.Contains(err.Error(), "printf: its arguments hold more than 1048576 bytes") {
		t.Errorf("a template doubling a string: %v, want refused at the limit", err)
	}
	for _, tmpl := range []string{`{{ range 9223372036854775807 }}{{ end }}`, strings.Repeat(`{{ range $.Changes }}`, 20) + strings.Repeat(`{{ end }}`, 20)} {
		if _, err := RenderTemplate("commit.messageTemplate", tmpl, data); err == nil || !strings.Contains(err.Error(), "loops go over more than 200000 items") {
			t.Errorf("a loop of no end: %v, want refused", err)
		}
	}
}

func TestDefaultTitleOnePolicy(t *testing.T) {
	rep := sampleReport()
	rep.Changes = rep.Changes[:1]
	got, err := RenderTemplate("title", DefaultTitleTemplate, NewMessageData(rep, "", ""))
	if err != nil {
		t.Fatal(err)
	}
	if got != "Bump apps:web to 1.2.0\n" {
		t.Errorf("title = %q", got)
	}
}
