package commands

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestHoldAndRelease holds a policy through the command line, checks that
// plan reports the pick but leaves the marker, and releases it.
func TestHoldAndRelease(t *testing.T) {
	host := startMemRegistry(t)
	dir := t.TempDir()
	cfgText := "registries:\n  - {host: \"" + host + "\", insecure: true}\nimages:\n  # the storefront\n  - name: apps:web\n    repository: " + host + "/acme/web\n    policy: {semver: \">=1.0.0 <2\"}\n"
	cfg := writeFile(t, dir, "imagebump.yaml", cfgText)
	repo := filepath.Join(dir, "repo")
	marker := "image: " + host + "/acme/web:1.0.0 # {\"$imagepolicy\": \"apps:web\"}\n"
	writeFile(t, repo, "app.yaml", marker)

	out, stderr, code := runMain(t, "hold", "apps:web", "-c", cfg, "--reason", "incident 42")
	if code != 0 {
		t.Fatalf("hold: exit %d\n%s%s", code, out, stderr)
	}
	data, _ := os.ReadFile(cfg)
	if want := cfgText + "    hold: {reason: \"incident 42\"}\n"; string(data) != want {
		t.Errorf("held config:\n%s\nwant:\n%s", data, want)
	}
	out, _, code = runMain(t, "apply", "-c", cfg, "--repo", repo)
	if code != 0 || !strings.Contains(out, "Held: apps:web stays where it is, until released") || !strings.Contains(out, "1.2.0 (held)") {
		t.Errorf("apply of a held policy: exit %d\n%s", code, out)
	}
	if got, _ := os.ReadFile(filepath.Join(repo, "app.yaml")); string(got) != marker {
		t.Errorf("a held marker moved: %q", got)
	}

	if out, stderr, code = runMain(t, "release", "apps:web", "-c", cfg); code != 0 {
		t.Fatalf("release: exit %d\n%s%s", code, out, stderr)
	}
	if data, _ := os.ReadFile(cfg); string(data) != cfgText {
		t.Errorf("released config:\n%s\nwant the original", data)
	}
	if _, _, code = runMain(t, "apply", "-c", cfg, "--repo", repo); code != 0 {
		t.Fatalf("apply after release: exit %d", code)
	}
	if got, _ := os.ReadFile(filepath.Join(repo, "app.yaml")); !strings.Contains(string(got), "web:1.2.0 ") {
		t.Errorf("the released marker did not move: %q", got)
	}
	if _, stderr, code = runMain(t, "hold", "apps:web", "-c", cfg); code != ExitUsage || !strings.Contains(stderr, "--reason is required") {
		t.Errorf("hold without a reason: exit %d %s", code, stderr)
	}
}
