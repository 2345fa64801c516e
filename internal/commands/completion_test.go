package commands

import (
	"strings"
	"testing"
)

// TestCompletion asks cobra's completion entry point, as a shell does, for
// policy and target names from the config.
func TestCompletion(t *testing.T) {
	dir := t.TempDir()
	cfg := writeFile(t, dir, "imagebump.yaml", `images:
  - {name: apps:web, repository: ghcr.io/acme/web, policy: {semver: ">=1.0.0"}}
  - {name: apps:worker, repository: ghcr.io/acme/worker, policy: {semver: ">=1.0.0"}}
  - {name: db, repository: ghcr.io/acme/db, policy: {semver: ">=1.0.0"}}
targets:
  - {name: prod, git: {url: "https://git.example/fleet.git"}}
  - {name: staging, git: {url: "https://git.example/fleet.git"}}
`)
	for _, tt := range []struct {
		name string
		args []string
		want []string
		not  []string
	}{
		{"policies", []string{"__complete", "-c", cfg, "tags", "apps:w"}, []string{"apps:web\tghcr.io/acme/web", "apps:worker\tghcr.io/acme/worker"}, []string{"default:db"}},
		{"targets of plan", []string{"__complete", "-c", cfg, "plan", "--target", "st"}, []string{"staging\thttps://git.example/fleet.git"}, []string{"prod"}},
		{"targets of run", []string{"__complete", "-c", cfg, "run", "--target", ""}, []string{"prod\t", "staging\t"}, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			out, stderr, code := runMain(t, tt.args...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			for _, w := range tt.want {
				if !strings.Contains(out, w) {
					t.Errorf("completion lacks %q:\n%s", w, out)
				}
			}
			for _, n := range tt.not {
				if strings.Contains(out, n) {
					t.Errorf("completion offers %q:\n%s", n, out)
				}
			}
		})
	}
}

// TestGroupCommandsRefuseUnknown: a command that only groups others prints
// its help without an argument, and refuses one that names none of them
// (cobra printed the help and exited 0).
func TestGroupCommandsRefuseUnknown(t *testing.T) {
	for _, tt := range []struct {
		args     []string
		wantCode int
		want     string
	}{
		{[]string{"completion", "tcsh"}, ExitUsage, `unknown command "tcsh" for "imagebump completion"`},
		{[]string{"flux", "exprot", "x"}, ExitUsage, `unknown command "exprot" for "imagebump flux"`},
		{[]string{"flux"}, 0, "Available Commands:"},
		{[]string{"completion", "bash"}, 0, "bash completion"},
	} {
		stdout, stderr, code := runMain(t, tt.args...)
		if code != tt.wantCode || !strings.Contains(stdout+stderr, tt.want) {
			t.Errorf("imagebump %v: exit %d, output %q; want exit %d and %q", tt.args, code, stdout+stderr, tt.wantCode, tt.want)
		}
	}
}
