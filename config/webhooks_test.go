package config

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestWebhooksValid parses the webhooks key: relative secret files are
// resolved against the config's folder, env:NAME is kept, and each entry
// knows its line.
func TestWebhooksValid(t *testing.T) {
	c, err := Parse([]byte(`
webhooks:
  - name: registry
    secretFile: secrets/hook
  - name: hub
    tokenFile: env:HUB_TOKEN
    tokenInQuery: true
  - {name: harbor, tokenFile: /run/secrets/harbor}
`), filepath.Join("etc", "imagebump.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	want := []Webhook{
		{Name: "registry", SecretFile: filepath.Join("etc", "secrets", "hook"), Line: 3},
		{Name: "hub", TokenFile: "env:HUB_TOKEN", TokenInQuery: true, Line: 5},
		{Name: "harbor", TokenFile: "/run/secrets/harbor", Line: 8},
	}
	if diff := cmp.Diff(c.Webhooks, want); diff != "" {
		t.Errorf("webhooks (-got +want):\n%s", diff)
	}
}

// TestWebhooksInvalid holds one mistake per row; want is the one error
// Parse must return, at its position.
func TestWebhooksInvalid(t *testing.T) {
	for _, tt := range []struct {
		name   string
		yaml   string
		want   string
		phrase string
	}{
		{"no name", `
webhooks:
  - secretFile: /s
`, "imagebump.yaml:3:5: webhooks[0]:", `missing required key "name"`},
		{"name with a slash", `
webhooks:
  - {name: a/b, secretFile: /s}
`, "imagebump.yaml:3:12: webhooks[0].name:", "lowercase RFC 1123 label"},
		{"upper-case name", `
webhooks:
  - {name: Registry, secretFile: /s}
`, "imagebump.yaml:3:12: webhooks[0].name:", "lowercase RFC 1123 label"},
		{"duplicate name", `
webhooks:
  - {name: registry, secretFile: /s}
  - {name: registry, tokenFile: /t}
`, "imagebump.yaml:4:12: webhooks[1].name:", `duplicate webhook "registry" (first at line 3)`},
		{"no auth", `
webhooks:
  - name: registry
`, "imagebump.yaml:3:5: webhooks[0]:", "a webhook is never open to anyone"},
		{"both auths", `
webhooks:
  - name: registry
    secretFile: /s
    tokenFile: /t
`, "imagebump.yaml:5:5: webhooks[0]:", "secretFile and tokenFile: keep one"},
		{"query token with a signature", `
webhooks:
  - {name: registry, secretFile: /s, tokenInQuery: true}
`, "imagebump.yaml:3:38: webhooks[0].tokenInQuery:", "needs tokenFile"},
		{"inline secret", `
webhooks:
  - {name: registry, secret: hunter2}
`, "imagebump.yaml:3:22: webhooks[0]:", `unknown key "secret"`},
		{"bad env reference", `
webhooks:
  - {name: registry, tokenFile: "env:1X"}
`, "imagebump.yaml:3:33: webhooks[0].tokenFile:", "not a valid environment variable reference"},
		{"unknown key", `
webhooks:
  - {name: registry, tokenFile: /t, url: /x}
`, "imagebump.yaml:3:37: webhooks[0]:", `unknown key "url"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.yaml), "imagebump.yaml")
			if err == nil {
				t.Fatal("Parse succeeded, want an error")
			}
			lines := strings.Split(err.Error(), "\n")
			if len(lines) != 1 {
				t.Fatalf("Parse returned %d errors, want 1:\n%v", len(lines), err)
			}
			if got := lines[0]; !strings.HasPrefix(got, tt.want+" ") || !strings.Contains(got, tt.phrase) {
				t.Errorf("Parse error:\n got %s\nwant %s ...%s...", got, tt.want, tt.phrase)
			}
			if strings.Contains(err.Error(), "hunter2") {
				t.Errorf("the error repeats an inline secret: %v", err)
			}
		})
	}
}

// TestMergeWebhooks keeps the webhooks of both sides, and refuses a name
// given in both.
func TestMergeWebhooks(t *testing.T) {
	a, err := Parse([]byte("webhooks: [{name: registry, secretFile: /s}]\n"), "imagebump.yaml")
	if err != nil {
		t.Fatal(err)
	}
	b, err := Parse([]byte("webhooks: [{name: other, tokenFile: /t}]\n"), "flux")
	if err != nil {
		t.Fatal(err)
	}
	c, err := Merge(a, b)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, h := range c.Webhooks {
		names = append(names, h.Name)
	}
	if diff := cmp.Diff(names, []string{"registry", "other"}); diff != "" {
		t.Errorf("merged webhooks (-got +want):\n%s", diff)
	}
	if _, err := Merge(a, a); err == nil || !strings.Contains(err.Error(), "webhook registry is in both") {
		t.Errorf("Merge of a config with itself = %v, want a duplicate webhook error", err)
	}
}
