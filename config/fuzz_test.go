package config

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var fuzzErrorLineRE = regexp.MustCompile(`^name\.yaml:[1-9][0-9]*:`)

// FuzzParse checks that Parse never panics, that every problem it reports
// starts with the file name and a line number, and that a successful parse is
// deterministic and complete.
func FuzzParse(f *testing.F) {
	example, err := os.ReadFile("../docs/examples/imagebump.yaml")
	if err != nil {
		f.Fatal(err)
	}
	for _, seed := range []string{
		string(example),
		"",
		"images:\n  - name: app\n    repository: nginx\n    policy: {semver: \">=1\"}\n",
		"images:\n  - &a {name: a, repository: nginx, policy: {numerical: asc}}\n  - <<: *a\n    name: b\n",
		"targets:\n  - name: t\n    git: {url: \"git@h:p\"}\n    schedule: \"*/5 * * * *\"\n    policies: [\"*:*\"]\n",
		"registries:\n  - host: ghcr.io\n    auth: {usernameFile: u}\n    rateLimit: {requestsPerSecond: .nan}\n",
		"a: &a [*a]\n",
		"images: [\n",
		"x: 1\n---\ny: 2\n",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := Parse(data, "name.yaml")
		if err != nil {
			if c != nil {
				t.Errorf("Parse returned a config and an error")
			}
			for _, line := range strings.Split(err.Error(), "\n") {
				if !fuzzErrorLineRE.MatchString(line) {
					t.Errorf("error line %q does not start with name.yaml:LINE:", line)
				}
			}
			return
		}
		again, err := Parse(data, "name.yaml")
		if err != nil {
			t.Fatalf("second Parse failed: %v", err)
		}
		if diff := cmp.Diff(c, again, ignoreInternal); diff != "" {
			t.Errorf("Parse is not deterministic (-first +second):\n%s", diff)
		}
		for i := range c.Images {
			im := &c.Images[i]
			if im.Policy() == nil {
				t.Errorf("image %q has no policy", im.Name)
			}
			if got, ok := c.Image(im.Name); !ok || got != im {
				t.Errorf("Image(%q) does not find the image", im.Name)
			}
		}
	})
}
