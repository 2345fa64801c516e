package flux

import (
	"context"
	"strings"
	"testing"
)

// TestMisspeltObjects: an object of a kind imagebump reads, written with a
// misspelt group, without its apiVersion, or with a kind the image group
// does not have, was skipped or listed as ignored, and the markers naming
// its policy then failed as naming an unknown one. Each is now an error at
// its line; another project's kinds of the same names are not.
func TestMisspeltObjects(t *testing.T) {
	const rest = "metadata: {name: web, namespace: apps}\nspec: {}\n"
	for _, tt := range []struct {
		name, doc string
		want      string // "" for no error
	}{
		{"a misspelt group", "apiVersion: image.toolkit.fluxcd.oi/v1\nkind: ImagePolicy\n" + rest,
			`f.yaml:1: ImagePolicy apps/web: apiVersion: "image.toolkit.fluxcd.oi/v1": the group is misspelt (did you mean image.toolkit.fluxcd.io/v1?)`},
		{"a misspelt source group", "apiVersion: source.toolkit.flux.io/v1\nkind: GitRepository\n" + rest,
			`did you mean source.toolkit.fluxcd.io/v1?`},
		{"apiVersion in lower case", "apiversion: image.toolkit.fluxcd.io/v1\nkind: ImageRepository\n" + rest,
			`f.yaml:1: ImageRepository apps/web: apiVersion: missing: the key is written apiversion; Flux's ImageRepository is apiVersion: image.toolkit.fluxcd.io/v1`},
		{"no apiVersion", "kind: ImagePolicy\n" + rest,
			`apiVersion: missing: Flux's ImagePolicy is apiVersion: image.toolkit.fluxcd.io/v1`},
		{"the group of the CRD's name", "apiVersion: images.toolkit.fluxcd.io/v1\nkind: ImagePolicy\n" + rest,
			`"images.toolkit.fluxcd.io/v1": ImagePolicy is in group image.toolkit.fluxcd.io`},
		// A Helm chart templating the apiVersion: not a string, no error.
		{"a templated apiVersion", "apiVersion: {{ include \"x.apiVersion\" . }}\nkind: GitRepository\n" + rest, ""},
		{"a List of policies", "apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImagePolicyList\nitems: []\n", ""},
		{"a List of Git repositories", "apiVersion: source.toolkit.fluxcd.io/v1\nkind: GitRepositoryList\nitems: []\n", ""},
		// Read for a misspelt object (it mentions fluxcd), and no YAML
		// stream: skipped, as before.
		{"a non-Flux file that is no YAML stream", "--- |\n  image: ghcr.io/fluxcd/flux-cli\n", ""},
		{"a misspelt kind", "apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImagePolcy\n" + rest,
			`f.yaml:1: ImagePolcy apps/web: kind: "ImagePolcy" is no kind of image.toolkit.fluxcd.io (did you mean ImagePolicy?): it has ImageRepository, ImagePolicy, ImageUpdateAutomation`},
		{"a kind in lower case", "apiVersion: image.toolkit.fluxcd.io/v1\nkind: imagepolicy\n" + rest,
			`(did you mean ImagePolicy?)`},
		{"another kind in the image group", "apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImageScan\n" + rest,
			`"ImageScan" is no kind of image.toolkit.fluxcd.io: it has`},
		{"a misspelt GitRepository", "apiVersion: source.toolkit.fluxcd.io/v1\nkind: GitRepositry\n" + rest,
			`(did you mean GitRepository?)`},
		{"another source kind", "apiVersion: source.toolkit.fluxcd.io/v1\nkind: ExternalArtifact\n" + rest, ""},
		{"another project's ImagePolicy", "apiVersion: config.openshift.io/v1\nkind: ImagePolicy\n" + rest, ""},
		{"a Deployment", "apiVersion: apps/v1\nkind: Deployment\n" + rest, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			writeFile(t, dir, "f.yaml", tt.doc)
			_, err := Load(context.Background(), []string{dir}, LoadOptions{})
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("Load: %v; want no error", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("Load: %v; want an error holding %q", err, tt.want)
			}
		})
	}
}
