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

// FuzzSetHold checks that SetHold and ClearHold never panic, and that what
// they return parses, with the policy held (then released) and every other
// entry as it was: SetHold's own check refuses any other result, so an
// error is fine and a wrong output is not.
func FuzzSetHold(f *testing.F) {
	entries, err := os.ReadDir("testdata/hold")
	if err != nil {
		f.Fatal(err)
	}
	for _, e := range entries {
		if data, err := os.ReadFile("testdata/hold/" + e.Name()); err == nil && !e.IsDir() {
			f.Add(data, "apps:web", "r")
		}
	}
	f.Add([]byte("images:\n  - name: apps:web\n    hold:  # c\n      reason: x\n"), "apps:web", "new")
	f.Fuzz(func(t *testing.T, data []byte, policy, reason string) {
		before, err := Parse(data, "f.yaml")
		if err != nil || strings.TrimSpace(reason) == "" {
			return
		}
		out, err := SetHold(data, "f.yaml", policy, Hold{Reason: reason})
		if err != nil {
			return
		}
		held, err := Parse(out, "f.yaml")
		if err != nil {
			t.Fatalf("SetHold gave a config that does not parse: %v\n%s", err, out)
		}
		im, ok := held.Image(policy)
		if !ok || im.Hold == nil || im.Hold.Reason != reason {
			t.Fatalf("SetHold did not hold %s with reason %q:\n%s", policy, reason, out)
		}
		if len(held.Images) != len(before.Images) {
			t.Fatalf("SetHold changed the number of images from %d to %d", len(before.Images), len(held.Images))
		}
		cleared, err := ClearHold(out, "f.yaml", policy)
		if err != nil {
			t.Fatalf("ClearHold of a hold SetHold made: %v\n%s", err, out)
		}
		after, err := Parse(cleared, "f.yaml")
		if err != nil {
			t.Fatalf("ClearHold gave a config that does not parse: %v", err)
		}
		if im, _ := after.Image(policy); im.Hold != nil {
			t.Fatalf("ClearHold left a hold:\n%s", cleared)
		}
	})
}
