package fluxmsg

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/imagebump/imagebump/internal/msgtemplate"
)

// repo is a repository after an update: two objects in one file (and a
// List), a Helm values file without metadata, all under clusters/prod.
var repo = fstest.MapFS{
	"clusters/prod/apps/podinfo.yaml": {Data: []byte(`apiVersion: v1
kind: Namespace
metadata:
  name: apps
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: podinfo
  namespace: apps
spec:
  template:
    spec:
      containers:
        - name: podinfo
          image: ghcr.io/stefanprodan/podinfo:5.0.3 # {"$imagepolicy": "flux-system:podinfo"}
        - name: sidecar
          image: ghcr.io/stefanprodan/podinfo:5.0.3 # {"$imagepolicy": "flux-system:podinfo"}
`)},
	"clusters/prod/apps/values.yaml": {Data: []byte(`image:
  repository: ghcr.io/acme/api # {"$imagepolicy": "flux-system:api:name"}
  tag: 2.3.4 # {"$imagepolicy": "flux-system:api:tag"}
`)},
	"clusters/prod/list.yaml": {Data: []byte(`apiVersion: v1
kind: List
items:
  - apiVersion: batch/v1
    kind: CronJob
    metadata:
      name: report
    spec:
      image: ghcr.io/acme/api:2.3.4 # {"$imagepolicy": "flux-system:api"}
`)},
}

var changes = []msgtemplate.Change{
	{File: "clusters/prod/apps/podinfo.yaml", Line: 16, Policy: "flux-system:podinfo", Field: "image", Old: "ghcr.io/stefanprodan/podinfo:5.0.0", New: "ghcr.io/stefanprodan/podinfo:5.0.3"},
	{File: "clusters/prod/apps/podinfo.yaml", Line: 18, Policy: "flux-system:podinfo", Field: "image", Old: "ghcr.io/stefanprodan/podinfo:5.0.0", New: "ghcr.io/stefanprodan/podinfo:5.0.3"},
	{File: "clusters/prod/apps/values.yaml", Line: 3, Policy: "flux-system:api", Field: "tag", Old: "2.3.0", New: "2.3.4"},
	{File: "clusters/prod/list.yaml", Line: 9, Policy: "flux-system:api", Field: "image", Old: "ghcr.io/acme/api:2.3.0", New: "ghcr.io/acme/api:2.3.4"},
}

var updated = []msgtemplate.PolicyUpdate{
	{Policy: "flux-system:api", Repository: "ghcr.io/acme/api", Tag: "2.3.4"},
	{Policy: "flux-system:podinfo", Repository: "ghcr.io/stefanprodan/podinfo", Tag: "5.0.3"},
}

func input(apiVersion, tmpl string) Input {
	return Input{
		Automation: "flux-system/podinfo-update",
		APIVersion: apiVersion,
		Template:   tmpl,
		Values:     map[string]string{"cluster": "prod"},
		UpdatePath: "./clusters/prod",
		Changes:    changes,
		Updated:    updated,
		Files:      repo,
	}
}

// The templates are the examples of Flux's ImageUpdateAutomation
// documentation (v1 and, for .Updated, v1beta1); the expected text follows
// from Flux's template data.
func TestRenderFluxDocExamples(t *testing.T) {
	tests := []struct {
		name, apiVersion, tmpl, want string
	}{
		{
			name: "default", tmpl: "",
			want: "Update from image update automation",
		},
		{
			name: "v1 objects and changes",
			tmpl: `Automated image update

Automation name: {{ .AutomationObject }}

Files:
{{ range $filename, $_ := .Changed.FileChanges -}}
- {{ $filename }}
{{ end -}}

Objects:
{{ range $resource, $changes := .Changed.Objects -}}
- {{ $resource.Kind }} {{ $resource.Name }}
  Changes:
{{- range $_, $change := $changes }}
    - {{ $change.OldValue }} -> {{ $change.NewValue }}
{{ end -}}
{{ end -}}
`,
			want: `Automated image update

Automation name: flux-system/podinfo-update

Files:
- apps/podinfo.yaml
- apps/values.yaml
- list.yaml
Objects:
-  
  Changes:
    - 2.3.0 -> 2.3.4
- Deployment podinfo
  Changes:
    - ghcr.io/stefanprodan/podinfo:5.0.0 -> ghcr.io/stefanprodan/podinfo:5.0.3

    - ghcr.io/stefanprodan/podinfo:5.0.0 -> ghcr.io/stefanprodan/podinfo:5.0.3
- CronJob report
  Changes:
    - ghcr.io/acme/api:2.3.0 -> ghcr.io/acme/api:2.3.4
`,
		},
		{
			name: "v1 with functions",
			tmpl: `{{ range $resource, $changes := .Changed.Objects -}}
- {{ $resource.Kind | lower }} {{ $resource.Name | lower }}
{{- range $_, $change := $changes }}
  {{ if contains "5.0.3" $change.NewValue -}}
    - {{ $change.OldValue }} -> {{ $change.NewValue }}
  {{ else -}}
    [skip ci] wrong image
  {{ end -}}
{{ end -}}
{{ end -}}`,
			want: `-  
  [skip ci] wrong image
  - deployment podinfo
  - ghcr.io/stefanprodan/podinfo:5.0.0 -> ghcr.io/stefanprodan/podinfo:5.0.3
  
  - ghcr.io/stefanprodan/podinfo:5.0.0 -> ghcr.io/stefanprodan/podinfo:5.0.3
  - cronjob report
  [skip ci] wrong image
  `,
		},
		{
			name: "values",
			tmpl: `Automated image update by Flux for cluster {{ .Values.cluster }}.`,
			want: `Automated image update by Flux for cluster prod.`,
		},
		{
			name: "gitea changes",
			tmpl: `{{range .Changed.Changes}}{{print .OldValue}} -> {{println .NewValue}}{{end}}`,
			want: "ghcr.io/stefanprodan/podinfo:5.0.0 -> ghcr.io/stefanprodan/podinfo:5.0.3\n2.3.0 -> 2.3.4\nghcr.io/acme/api:2.3.0 -> ghcr.io/acme/api:2.3.4\n",
		},
		{
			name: "setters", tmpl: `{{ range .Changed.Changes }}{{ .Setter }} {{ end }}`,
			want: "flux-system:podinfo flux-system:api:tag flux-system:api ",
		},
		{
			name: "v1beta1 updated", apiVersion: APIVersionV1beta2,
			tmpl: `Automation name: {{ .AutomationObject }}

Files:
{{ range $filename, $_ := .Updated.Files -}}
- {{ $filename }}
{{ end -}}

Objects:
{{ range $resource, $_ := .Updated.Objects -}}
- {{ $resource.Kind }} {{ $resource.Name }}
{{ end -}}

Images:
{{ range .Updated.Images -}}
- {{.}}
{{ end -}}
`,
			want: `Automation name: flux-system/podinfo-update

Files:
- apps/podinfo.yaml
- apps/values.yaml
- list.yaml
Objects:
-  
- Deployment podinfo
- CronJob report
Images:
- ghcr.io/stefanprodan/podinfo:5.0.3
- ghcr.io/acme/api:2.3.4
`,
		},
		{
			name: "v1beta2 image result", apiVersion: APIVersionV1beta2,
			tmpl: `{{ range .Changed.ImageResult.Images }}{{ .Registry }} {{ .Repository }} {{ .Identifier }} {{ .Name }} {{ .Policy }}
{{ end }}`,
			want: "ghcr.io stefanprodan/podinfo 5.0.3 ghcr.io/stefanprodan/podinfo:5.0.3 flux-system/podinfo\nghcr.io acme/api 2.3.4 ghcr.io/acme/api:2.3.4 flux-system/api\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Render(input(tt.apiVersion, tt.tmpl))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(got, tt.want); diff != "" {
				t.Errorf("Render (-got +want):\n%s", diff)
			}
		})
	}
}

// TestRenderGerrit checks the Gerrit example of Flux's documentation: its
// Change-Id hashes the printed data, so the printed form must be Flux's.
func TestRenderGerrit(t *testing.T) {
	tmpl := `Perform automatic image update

Automation name: {{ .AutomationObject }}

{{- $ChangeId := .AutomationObject -}}
{{- $ChangeId = printf "%s%s" $ChangeId ( .Changed.FileChanges | toString ) -}}
{{- $ChangeId = printf "%s%s" $ChangeId ( .Changed.Objects | toString ) -}}
{{- $ChangeId = printf "%s%s" $ChangeId ( .Changed.Changes | toString ) }}
Change-Id: {{ printf "I%s" ( sha256sum $ChangeId | trunc 40 ) }}
`
	in := input("", tmpl)
	in.Changes = changes[3:]
	got, err := Render(in)
	if err != nil {
		t.Fatal(err)
	}
	// Flux prints its types this way: ObjectIdentifier embeds kyaml's
	// ResourceIdentifier{TypeMeta{APIVersion, Kind}, NameMeta{Name,
	// Namespace}}, and Change is {OldValue, NewValue, Setter}.
	printed := "flux-system/podinfo-update" +
		"map[list.yaml:map[{{{batch/v1 CronJob} {report }}}:[{ghcr.io/acme/api:2.3.0 ghcr.io/acme/api:2.3.4 flux-system:api}]]]" +
		"map[{{{batch/v1 CronJob} {report }}}:[{ghcr.io/acme/api:2.3.0 ghcr.io/acme/api:2.3.4 flux-system:api}]]" +
		"[{ghcr.io/acme/api:2.3.0 ghcr.io/acme/api:2.3.4 flux-system:api}]"
	sum := sha256.Sum256([]byte(printed))
	want := "Perform automatic image update\n\nAutomation name: flux-system/podinfo-update\nChange-Id: I" + hex.EncodeToString(sum[:])[:40] + "\n"
	if diff := cmp.Diff(got, want); diff != "" {
		t.Errorf("Render (-got +want):\n%s", diff)
	}
}

func TestRemovedFields(t *testing.T) {
	for _, tmpl := range []string{`{{ range .Updated.Images }}{{ . }}{{ end }}`, `{{ .Changed.ImageResult }}`} {
		_, err := Render(input(APIVersionV1, tmpl))
		if !errors.Is(err, ErrRemovedField) {
			t.Errorf("%s: err = %v, want a RemovedFieldError", tmpl, err)
		}
		if err := Check(APIVersionV1, tmpl); !errors.Is(err, ErrRemovedField) {
			t.Errorf("Check %s: err = %v, want a RemovedFieldError", tmpl, err)
		}
		if err := Check(APIVersionV1beta2, tmpl); err != nil {
			t.Errorf("Check v1beta2 %s: %v", tmpl, err)
		}
	}
}

func TestCheck(t *testing.T) {
	tests := []struct {
		tmpl, apiVersion, wantErr string
	}{
		{tmpl: "{{ .Changed.Changes }}"},
		{tmpl: "{{ .Values.anything }}"},
		{tmpl: "{{ now }}", wantErr: `function "now" not defined`},
		{tmpl: "{{ .Changes }}", wantErr: "can't evaluate field Changes"},
		{tmpl: "{{ if }}", wantErr: "missing value for if"},
		{tmpl: "x", apiVersion: "image.toolkit.fluxcd.io/v1beta1", wantErr: `apiVersion "image.toolkit.fluxcd.io/v1beta1"`},
	}
	for _, tt := range tests {
		t.Run(tt.tmpl, func(t *testing.T) {
			err := Check(tt.apiVersion, tt.tmpl)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Errorf("Check: %v", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Errorf("Check = %v, want it to contain %q", err, tt.wantErr)
			}
		})
	}
}

// TestBoundedFunctions: a template from a repository cannot take
// gigabytes (repeat, until, seq of any length), write a message of any
// length, or run for minutes (loops nested deep enough to never end).
func TestBoundedFunctions(t *testing.T) {
	defer func(d time.Duration) { maxRun = d }(maxRun)
	maxRun = 300 * time.Millisecond
	tests := []struct{ tmpl, wantErr string }{
		{tmpl: `{{ repeat 2000000000 "x" }}`, wantErr: "repeat: 2000000000 items is over the 10000"},
		{tmpl: `{{ range until 100000000 }}{{ end }}`, wantErr: "until: more than the 10000 items"},
		{tmpl: `{{ range until -200000000 }}{{ end }}`, wantErr: "until: more than the 10000 items"},
		{tmpl: `{{ range untilStep 0 100000000 1 }}{{ end }}`, wantErr: "untilStep: more than the 10000 items"},
		{tmpl: `{{ range untilStep 0 -9223372036854775808 -1 }}{{ end }}`, wantErr: "untilStep: "},
		{tmpl: `{{ range untilStep 0 9223372036854775807 4611686018427387904 }}{{ end }}`},
		{tmpl: `{{ seq 100000000 }}`, wantErr: "seq: "},
		{tmpl: `{{ seq -9223372036854775808 }}`}, // wraps, as in Sprig: empty
		{tmpl: `{{ range until 10000 }}{{ repeat 10000 "x" }}{{ end }}`, wantErr: "longer than 1048576 bytes"},
		{tmpl: `{{ range 9223372036854775807 }}{{ end }}`, wantErr: "range: the template's loops go over more than 200000 items"},
		{tmpl: `{{ $l := until 10000 }}{{ range $l }}{{ range $l }}{{ range $l }}{{ end }}{{ end }}{{ end }}`, wantErr: "range: the template's loops go over more than 200000 items"},
		{tmpl: `{{ $x := "ab" }}{{ range until 100 }}{{ $x = printf "%s%s" $x $x }}{{ end }}{{ $x }}`, wantErr: "printf: its arguments hold more than 1048576 bytes"},
		{tmpl: `{{ $x := "ab" }}{{ range until 100 }}{{ $x = cat $x $x }}{{ end }}`, wantErr: "cat: its arguments hold more than"},
		{tmpl: `{{ printf "%*d" 1000000 1 }}{{ printf "%1000000d%1000000d" 1 2 }}`, wantErr: "longer than 1048576 bytes"},
		{tmpl: `{{ indent 3000000000 "x" }}`, wantErr: "indent: "},
		{tmpl: `{{ $s := repeat 1000 "abcdefghij" }}{{ replace "" $s $s }}`, wantErr: "replace: "},
		{tmpl: `{{ $s := repeat 1000 "abcdefghij" }}{{ regexReplaceAll "" $s $s }}`, wantErr: "regexReplaceAll: "},
		{tmpl: `{{ $s := repeat 1000 "abcdefghij" }}{{ regexReplaceAllLiteral "" $s $s }}`, wantErr: "regexReplaceAllLiteral: "},
		{tmpl: `{{ $s := repeat 1000 "abcdefghij" }}{{ wrapWith 1 $s $s }}`, wantErr: "wrapWith: "},
		{tmpl: `{{ $s := repeat 10000 "abcdefghij" }}{{ repeat 3000 $s }}`, wantErr: "repeat: "},
		{tmpl: `{{ $l := list 1 }}{{ range until 40 }}{{ $l = concat $l $l }}{{ end }}`, wantErr: "concat: "},
		{tmpl: `{{ $s := repeat 10000 "abcdefghij" }}{{ $l := list $s }}{{ range until 20 }}{{ $l = concat $l $l }}{{ end }}{{ join "," $l }}`, wantErr: "its arguments hold more than"},
		{tmpl: `{{ repeat 3 "ab" }} {{ range until 3 }}{{ . }}{{ end }} {{ seq 3 }}`},
		{tmpl: `{{ default "x" "" }} {{ printf "%d-%s" 3 "a" }} {{ lower "AB" | upper }} {{ list 1 2 | len }} {{ range $i, $e := list "a" "b" }}{{ $i }}{{ $e }}{{ end }} {{ indent 2 "a" }} {{ replace "a" "b" "aa" }}`},
	}
	for _, tt := range tests {
		t.Run(tt.tmpl, func(t *testing.T) {
			start := time.Now()
			err := Check(APIVersionV1, tt.tmpl)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Errorf("Check: %v", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Errorf("Check = %v, want it to contain %q", err, tt.wantErr)
			}
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("Check took %v", d)
			}
		})
	}
	if msg, err := Execute(APIVersionV1, `{{ repeat 3 "ab" }} {{ range until 3 }}{{ . }}{{ end }} {{ seq 3 }}`, sample(APIVersionV1)); err != nil || msg != "ababab 012 1 2 3" {
		t.Errorf("bounded functions within their bounds: %q, %v", msg, err)
	}
	if msg, err := Execute(APIVersionV1, `{{ regexReplaceAll "a(.)" "xaby" "<$1>" }} {{ mustRegexReplaceAllLiteral "a." "xab" "$1" }}`, sample(APIVersionV1)); err != nil || msg != "x<b>y x$1" {
		t.Errorf("the regular expression replacers, as Sprig's: %q, %v", msg, err)
	}
}

func TestRelative(t *testing.T) {
	for _, tt := range []struct{ dir, file, want string }{
		{"", "a/b.yaml", "a/b.yaml"},
		{"./", "a/b.yaml", "a/b.yaml"},
		{"./a", "a/b.yaml", "b.yaml"},
		{"a/", "a/b.yaml", "b.yaml"},
		{"ab", "a/b.yaml", "a/b.yaml"},
	} {
		if got := relative(tt.dir, tt.file); got != tt.want {
			t.Errorf("relative(%q, %q) = %q, want %q", tt.dir, tt.file, got, tt.want)
		}
	}
}

func TestBuildNeedsFiles(t *testing.T) {
	in := input("", "x")
	in.Files = nil
	if _, err := Render(in); !errors.Is(err, errNoFiles) {
		t.Errorf("err = %v", err)
	}
}
