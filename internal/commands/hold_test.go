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
	if code != 0 || !strings.Contains(out, "Held: apps:web stays where it is, until released") || !strings.Contains(out, "1.2.0 (held)") ||
		!strings.Contains(out, "No changes: every marked field is current, or held.") {
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
	// A marker with a problem is not current: the summary says so.
	writeFile(t, repo, "bad.yaml", "image: x:1 # {\"$imagepolicy\": \"apps:nope\"}\n")
	if out, _, _ = runMain(t, "plan", "-c", cfg, "--repo", repo); !strings.Contains(out, "No changes: every marked field is current; the markers with problems (below) are left as they are.") {
		t.Errorf("plan with a marker problem and nothing to change:\n%s", out)
	}
	os.Remove(filepath.Join(repo, "bad.yaml"))
	if _, stderr, code = runMain(t, "hold", "apps:web", "-c", cfg); code != ExitUsage || !strings.Contains(stderr, "--reason is required") {
		t.Errorf("hold without a reason: exit %d %s", code, stderr)
	}

	// A hold that has ended would hold nothing: the command refuses it,
	// and validate warns about one written by hand.
	if _, stderr, code = runMain(t, "hold", "apps:web", "-c", cfg, "--reason", "x", "--until", "2020-01-01"); code != ExitUsage || !strings.Contains(stderr, "--until 2020-01-01 has passed") {
		t.Errorf("hold --until in the past: exit %d %s", code, stderr)
	}
	if data, _ := os.ReadFile(cfg); string(data) != cfgText {
		t.Errorf("a refused hold changed the config:\n%s", data)
	}
	writeFile(t, dir, "imagebump.yaml", cfgText+"    hold: {reason: freeze, until: 2020-01-01}\n")
	out, _, code = runMain(t, "validate", "-c", cfg)
	if code != 0 || !strings.Contains(out, "policy apps:web: its hold ended at 2020-01-01T00:00:00Z, so it holds nothing") {
		t.Errorf("validate with an ended hold: exit %d\n%s", code, out)
	}
}

// TestSuspendedFluxPolicy: with Flux objects as the config, a suspended
// ImagePolicy is held (apply reports its pick and leaves its marker, and
// succeeds, where a policy left out made the marker name an unknown one),
// and hold and release refuse, naming the suspend to set instead.
func TestSuspendedFluxPolicy(t *testing.T) {
	host := startMemRegistry(t)
	flux, repo, marker := webFluxObjects(t, host, "  insecure: true\n", "  suspend: true\n")
	fluxDir := filepath.Dir(flux)

	out, stderr, code := runMain(t, "apply", "-c", fluxDir, "--repo", repo)
	if code != 0 || !strings.Contains(out, "1.2.0 (held)") || !strings.Contains(out, "ImagePolicy apps/web is suspended in Flux") {
		t.Errorf("apply with a suspended ImagePolicy: exit %d\n%s%s", code, out, stderr)
	}
	if got, _ := os.ReadFile(filepath.Join(repo, "app.yaml")); string(got) != marker {
		t.Errorf("a suspended policy's marker moved: %q", got)
	}
	for _, args := range [][]string{
		{"hold", "apps:web", "-c", fluxDir, "--reason", "x"},
		{"release", "apps:web", "-c", flux},
		{"hold", "apps:web", "--flux", fluxDir, "--reason", "x"},
	} {
		_, stderr, code := runMain(t, args...)
		if code != ExitUsage || !strings.Contains(stderr, "set spec.suspend: ") || !strings.Contains(stderr, "ImagePolicy apps/web") {
			t.Errorf("%v: exit %d, stderr %q; want 64 naming the suspend", args, code, stderr)
		}
	}
	if data, _ := os.ReadFile(flux); strings.Contains(string(data), "hold") {
		t.Errorf("the Flux objects were edited:\n%s", data)
	}
}
