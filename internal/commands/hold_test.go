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
	// The Markdown plan (a pull request's check) says so too.
	out, _, code = runMain(t, "plan", "-c", cfg, "--repo", repo, "-o", "markdown")
	if code != 0 || !strings.Contains(out, "**Held**\n\n- `Held: apps:web stays where it is, until released (imagebump release apps:web): incident 42`") ||
		!strings.Contains(out, "`1.2.0` (held) |") {
		t.Errorf("plan -o markdown of a held policy: exit %d\n%s", code, out)
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

// TestHoldThroughSymlink: hold and release through a config named by a
// symbolic link edit the file it names, and the link stays a link (the
// link was replaced by a held copy, and the config itself never held).
func TestHoldThroughSymlink(t *testing.T) {
	dir := t.TempDir()
	cfgText := "images:\n  - name: apps:web\n    repository: ghcr.io/acme/web\n    policy: {semver: \">=1.0.0\"}\n"
	real := writeFile(t, filepath.Join(dir, "configs"), "imagebump.yaml", cfgText)
	link := filepath.Join(dir, "imagebump.yaml")
	if err := os.Symlink(filepath.Join("configs", "imagebump.yaml"), link); err != nil {
		t.Fatal(err)
	}
	check := func(what, want string) {
		t.Helper()
		if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
			t.Fatalf("after %s, %s is no symbolic link any more (%v)", what, link, err)
		}
		if data, _ := os.ReadFile(real); string(data) != want {
			t.Errorf("after %s, the config reads:\n%s\nwant:\n%s", what, data, want)
		}
	}
	if out, stderr, code := runMain(t, "hold", "apps:web", "-c", link, "--reason", "freeze"); code != 0 {
		t.Fatalf("hold: exit %d\n%s%s", code, out, stderr)
	}
	check("hold", cfgText+"    hold: {reason: \"freeze\"}\n")
	if out, stderr, code := runMain(t, "release", "apps:web", "-c", link); code != 0 {
		t.Fatalf("release: exit %d\n%s%s", code, out, stderr)
	}
	check("release", cfgText)
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

// TestHoldFluxPathsPolicy: a policy the config reads from Flux objects by
// its flux.paths cannot be held in the file, which has no entry for it:
// hold and release say to suspend the ImagePolicy, naming where it is,
// where they said the file had no such policy; and print no Flux report.
func TestHoldFluxPathsPolicy(t *testing.T) {
	dir := t.TempDir()
	cfg := writeFile(t, dir, "imagebump.yaml", "flux:\n  paths: [flux]\nimages:\n  - {name: native, repository: ghcr.io/a/b, policy: {semver: \">=1\"}}\n")
	objects := writeFile(t, filepath.Join(dir, "flux"), "policy.yaml", `apiVersion: image.toolkit.fluxcd.io/v1beta2
kind: ImageRepository
metadata: {name: app, namespace: apps}
spec: {image: ghcr.io/acme/app}
---
apiVersion: image.toolkit.fluxcd.io/v1beta2
kind: ImagePolicy
metadata: {name: app, namespace: apps}
spec:
  imageRepositoryRef: {name: app}
  policy: {semver: {range: ">=1.0.0"}}
`)
	before, _ := os.ReadFile(cfg)
	for _, args := range [][]string{{"hold", "apps:app", "--reason", "x"}, {"release", "apps:app"}} {
		_, stderr, code := runMain(t, append(args, "-c", cfg)...)
		if code != ExitUsage || !strings.Contains(stderr, "apps:app is an ImagePolicy of the Flux objects") || !strings.Contains(stderr, objects+":6") ||
			!strings.Contains(stderr, "spec.suspend") || strings.Contains(stderr, "Flux objects read") {
			t.Errorf("%s: exit %d, stderr %q", args[0], code, stderr)
		}
	}
	// The file's own policy's errors are its own: a bad --until is said
	// as such, not as a Flux object's.
	_, stderr, code := runMain(t, "hold", "native", "-c", cfg, "--reason", "x", "--until", "tomorrow")
	if code != ExitUsage || strings.Contains(stderr, "ImagePolicy") || !strings.Contains(stderr, "tomorrow") {
		t.Errorf("hold --until tomorrow: exit %d, stderr %q", code, stderr)
	}
	if after, _ := os.ReadFile(cfg); string(after) != string(before) {
		t.Errorf("the config changed:\n%s", after)
	}
}
