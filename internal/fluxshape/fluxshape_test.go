package fluxshape

import (
	"testing"

	"gopkg.in/yaml.v3"
)

func node(t *testing.T, s string) *yaml.Node {
	t.Helper()
	var d yaml.Node
	if err := yaml.Unmarshal([]byte(s), &d); err != nil {
		t.Fatal(err)
	}
	return d.Content[0]
}

func TestForValue(t *testing.T) {
	tests := []struct{ path, value, want string }{
		{"images[0].policy.semver", `{range: ">=1.0.0 <2"}`, `this is Flux's shape; imagebump writes semver: ">=1.0.0 <2"`},
		{"images[3].policy.alphabetical", `{order: desc}`, `this is Flux's shape; imagebump writes alphabetical: desc`},
		{"images[0].policy.numerical", `{}`, `this is Flux's shape; imagebump writes numerical: asc`},
		{"images[0].policy.semver", `{range: 1.x, other: 2}`, ``},
		{"images[0].policy.alphabetical", `{sort: asc}`, ``},
		{"targets[0].policy.semver", `{range: 1.x}`, ``},
		{"images[0].policy.semver", `1.x`, ``},
	}
	for _, tt := range tests {
		t.Run(tt.path+" "+tt.value, func(t *testing.T) {
			if got := ForValue(tt.path, node(t, tt.value)); got != tt.want {
				t.Errorf("ForValue = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestForKey(t *testing.T) {
	tests := []struct{ parent, key, value, want string }{
		{"images[0]", "digestReflectionPolicy", "IfNotPresent", "Flux's key; imagebump writes digest: ifNotPresent"},
		{"images[0]", "digestReflectionPolicy", "Sometimes", "Flux's key; imagebump writes digest: always, ifNotPresent or never"},
		{"images[1]", "exclusionList", "[a]", "Flux's key (of ImageRepository); imagebump writes exclude:, which adds to the default exclusions; add excludeReplacesDefaults: true to replace them as Flux does"},
		{"images[0]", "semver", "1.x", "the rule goes under policy: (policy: {semver: ...})"},
		{"", "apiVersion", "image.toolkit.fluxcd.io/v1", "this looks like a Flux object: read Flux objects with --flux DIR, or turn them into imagebump.yaml with `imagebump flux export`"},
		{"targets[0]", "digestReflectionPolicy", "Always", ""},
		{"images[0]", "colour", "red", ""},
	}
	for _, tt := range tests {
		t.Run(tt.parent+" "+tt.key, func(t *testing.T) {
			if got := ForKey(tt.parent, tt.key, node(t, tt.value)); got != tt.want {
				t.Errorf("ForKey = %q, want %q", got, tt.want)
			}
		})
	}
}
