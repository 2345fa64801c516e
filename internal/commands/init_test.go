package commands

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/go-git/go-git/v5"
	gitconfig "github.com/go-git/go-git/v5/config"
	"github.com/google/go-cmp/cmp"
	"gopkg.in/yaml.v3"

	"github.com/imagebump/imagebump/config"
	"github.com/imagebump/imagebump/internal/testkit/testregistry"
	"github.com/imagebump/imagebump/report"
)

// initDir holds the init cases: one sample repository each under input/,
// the tree init --write makes of it under expected/, and init's text, JSON
// and diff outputs, with the registry's address written REGISTRY and the
// repository's path REPO. `go test ./internal/commands -update` rewrites
// them.
var initDir = filepath.Join("..", "..", "testdata", "init")

var (
	initRegistryOnce sync.Once
	initRegistryHost string
)

// startInitRegistry runs the CNCF distribution registry on loopback with
// the tags of testdata/init/registry.yaml, once for all init tests.
func startInitRegistry(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(initDir, "registry.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var repos map[string][]string
	if err := yaml.Unmarshal(data, &repos); err != nil {
		t.Fatal(err)
	}
	srv := testregistry.Start(t, testregistry.Options{Version: testregistry.V2, InMemory: true})
	names := make([]string, 0, len(repos))
	for r := range repos {
		names = append(names, r)
	}
	slices.Sort(names)
	for _, r := range names {
		srv.Push(t, r, repos[r]...)
	}
	return srv.Host
}

// copyCase copies a case's input to a new folder, with REGISTRY replaced
// by host.
func copyCase(t *testing.T, name, host string) string {
	t.Helper()
	dst := t.TempDir()
	src := filepath.Join(initDir, name, "input")
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		writeFile(t, dst, filepath.ToSlash(rel), strings.ReplaceAll(string(data), "REGISTRY", host))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

// checkoutCase makes repo, the copy of a case, a Git checkout with the
// remotes of the case's remotes file ("NAME URL" a line, # starting a
// comment), as init compares Flux GitRepository urls with them; a case
// without that file is no checkout.
func checkoutCase(t *testing.T, name, repo string) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(initDir, name, "remotes"))
	if errors.Is(err, fs.ErrNotExist) {
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	r, err := git.PlainInit(repo, false)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		remote, u, ok := strings.Cut(line, " ")
		if !ok {
			t.Fatalf("%s/remotes: %q is not NAME URL", name, line)
		}
		if _, err := r.CreateRemote(&gitconfig.RemoteConfig{Name: remote, URLs: []string{u}}); err != nil {
			t.Fatal(err)
		}
	}
}

// worktreeSnapshot is snapshot without the files of .git, which a case
// with remotes has (checkoutCase) and init never writes.
func worktreeSnapshot(root string) (map[string][]byte, error) {
	files, err := snapshot(root)
	for f := range files {
		if f == ".git" || strings.HasPrefix(f, ".git/") {
			delete(files, f)
		}
	}
	return files, err
}

// initGolden compares (or, with -update, writes) an output of a case.
func initGolden(t *testing.T, path, got string) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./internal/commands -update to create it)", err)
	}
	if diff := cmp.Diff(got, string(want)); diff != "" {
		t.Errorf("%s mismatch (-got +want):\n%s", path, diff)
	}
}

// normalize replaces the registry's address and the repository's path
// with placeholders, and, in text, the padding of table columns.
func normalize(s, host, repo string, text bool) string {
	s = strings.ReplaceAll(s, repo, "REPO")
	s = strings.ReplaceAll(s, host, "REGISTRY")
	if !text {
		return s
	}
	// Only the table's columns depend on the address's length.
	lines := strings.Split(s, "\n")
	in := false
	for i, l := range lines {
		switch {
		case strings.HasPrefix(l, "POLICY "):
			in = true
		case l == "":
			in = false
		}
		if in {
			lines[i] = columnGap.ReplaceAllString(l, "  ")
		}
	}
	return strings.Join(lines, "\n")
}

// initCases lists the case folders.
func initCases(t *testing.T) []string {
	t.Helper()
	entries, err := os.ReadDir(initDir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		if e.IsDir() {
			out = append(out, e.Name())
		}
	}
	return out
}

// TestInitCases runs init on each sample repository against the real
// distribution registry: its outputs and the tree --write makes are
// golden; the diff applies with git apply and gives that tree; plan then
// picks exactly what init said it would; validate accepts every marker;
// and init again changes nothing.
func TestInitCases(t *testing.T) {
	host := startInitRegistry(t)
	for _, name := range initCases(t) {
		t.Run(name, func(t *testing.T) {
			dir := filepath.Join(initDir, name)
			repo := copyCase(t, name, host)
			checkoutCase(t, name, repo)
			args := []string{"init", "--repo", repo, "--insecure-registry", host}
			before, err := worktreeSnapshot(repo)
			if err != nil {
				t.Fatal(err)
			}

			out, stderr, code := runMain(t, args...)
			wantCode := 0
			if _, err := os.Stat(filepath.Join(dir, "exit1")); err == nil {
				wantCode = 1
			}
			if code != wantCode {
				t.Fatalf("init exit %d, want %d\n%s\n%s", code, wantCode, out, stderr)
			}
			initGolden(t, filepath.Join(dir, "init.txt"), normalize(out, host, repo, true))

			jsonOut, _, _ := runMain(t, append(args, "-o", "json")...)
			initGolden(t, filepath.Join(dir, "init.json"), normalize(jsonOut, host, repo, false))
			var rep InitReport
			if err := json.Unmarshal([]byte(jsonOut), &rep); err != nil {
				t.Fatal(err)
			}

			diffOut, _, _ := runMain(t, append(args, "-o", "diff")...)
			initGolden(t, filepath.Join(dir, "init.diff"), normalize(diffOut, host, repo, false))

			after, err := worktreeSnapshot(repo)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(after, before); diff != "" {
				t.Fatalf("init without --write wrote to the repository:\n%s", diff)
			}

			// The diff applies with git apply; the result is what --write
			// writes.
			patched := t.TempDir()
			for f, data := range before {
				writeFile(t, patched, f, string(data))
			}
			if diffOut != "" {
				gitApply(t, patched, diffOut)
			}

			out, stderr, code = runMain(t, append(args, "--write")...)
			if code != wantCode {
				t.Fatalf("init --write exit %d, want %d\n%s\n%s", code, wantCode, out, stderr)
			}
			written, err := worktreeSnapshot(repo)
			if err != nil {
				t.Fatal(err)
			}
			fromDiff, err := snapshot(patched)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(fromDiff, written); diff != "" {
				t.Errorf("git apply of init -o diff differs from init --write (-git apply +write):\n%s", diff)
			}
			checkExpectedTree(t, filepath.Join(dir, "expected"), written, host)

			// Again: nothing changes, and init says so.
			out, _, _ = runMain(t, args...)
			if !strings.Contains(out, "Nothing to do") {
				t.Errorf("second init has something to do:\n%s", out)
			}
			out, _, _ = runMain(t, append(args, "--write")...)
			again, err := worktreeSnapshot(repo)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(again, written); diff != "" {
				t.Errorf("second init --write changed the repository:\n%s\n%s", diff, out)
			}

			cfg := filepath.Join(repo, "imagebump.yaml")
			if _, err := os.Stat(cfg); err != nil {
				return // nothing proposed
			}
			// validate accepts every marker.
			out, stderr, code = runMain(t, "validate", "-c", cfg, "--repo", repo)
			if code != 0 {
				t.Errorf("validate exit %d\n%s\n%s", code, out, stderr)
			}
			// plan picks exactly what init proposed.
			out, stderr, _ = runMain(t, "plan", "-c", cfg, "--repo", repo, "-o", "json")
			var plan report.Plan
			if err := json.Unmarshal([]byte(out), &plan); err != nil {
				t.Fatalf("plan -o json: %v\n%s\n%s", err, out, stderr)
			}
			checkPicks(t, rep, plan, cfg)
		})
	}
}

// checkPicks checks that plan picked, for every policy init proposed and
// marked, the tag init said the policy would pick.
func checkPicks(t *testing.T, rep InitReport, plan report.Plan, cfgFile string) {
	t.Helper()
	cfg, err := config.Load(cfgFile)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, p := range plan.Policies {
		got[p.Name] = p.Latest
	}
	want := map[string]string{}
	for _, p := range rep.Policies {
		if p.Choice || len(p.Uses) == 0 {
			continue
		}
		marked := false
		for _, m := range rep.Markers {
			if strings.Contains(m.Marker, `"`+p.Name) && m.Status != "refused" {
				marked = true
			}
		}
		// A policy is in the config when a marker names it: one none of
		// whose references could be marked is left out.
		_, inConfig := cfg.Image(p.Name)
		switch {
		case marked && !inConfig:
			t.Errorf("policy %s is not in the config init wrote", p.Name)
		case !marked && inConfig && !p.Existing:
			t.Errorf("policy %s, which no marker names, is in the config init wrote", p.Name)
		}
		if marked {
			want[p.Name] = p.Latest
		}
	}
	if diff := cmp.Diff(got, want); diff != "" {
		t.Errorf("plan's picks differ from init's proposals (-plan +init):\n%s", diff)
	}
}

// checkExpectedTree compares the written tree with a case's expected/
// folder (or, with -update, writes it).
func checkExpectedTree(t *testing.T, expected string, got map[string][]byte, host string) {
	t.Helper()
	norm := map[string][]byte{}
	for f, data := range got {
		norm[f] = []byte(strings.ReplaceAll(string(data), host, "REGISTRY"))
	}
	if *update {
		if err := os.RemoveAll(expected); err != nil {
			t.Fatal(err)
		}
		for f, data := range norm {
			writeFile(t, expected, f, string(data))
		}
		return
	}
	want, err := snapshot(expected)
	if err != nil {
		t.Fatalf("%v (run go test ./internal/commands -update)", err)
	}
	if diff := cmp.Diff(stringsOf(norm), stringsOf(want)); diff != "" {
		t.Errorf("written tree differs from %s (-got +want):\n%s", expected, diff)
	}
}

func stringsOf(m map[string][]byte) map[string]string {
	out := map[string]string{}
	for k, v := range m {
		out[k] = string(v)
	}
	return out
}

// TestInitUsage checks the usage errors: exit 64, nothing written.
func TestInitUsage(t *testing.T) {
	repo := t.TempDir()
	writeFile(t, repo, "app.yaml", "image: ghcr.io/acme/app:1.0.0\n")
	bad := writeFile(t, t.TempDir(), "imagebump.yaml", "images:\n  - name: x\n    repository: nginx\n")
	for _, tt := range []struct {
		name string
		args []string
		want string
	}{
		{"bad output", []string{"init", "--repo", repo, "-o", "yaml"}, `-o "yaml"`},
		{"argument", []string{"init", "--repo", repo, "extra"}, "unknown command"},
		{"no such repo", []string{"init", "--repo", filepath.Join(repo, "nope")}, "nope does not exist"},
		{"repo is a file", []string{"init", "--repo", filepath.Join(repo, "app.yaml")}, "app.yaml is a file, not a folder"},
		{"config is a folder", []string{"init", "--repo", repo, "-c", repo}, "is a folder"},
		{"invalid config", []string{"init", "--repo", repo, "-c", bad}, "fix it first (imagebump validate -c " + bad + "): " + bad + ":2:"},
		{"no such path", []string{"init", "--repo", repo, "--paths", "nosuch"}, "--paths nosuch: no such file or folder under --repo"},
		{"absolute path", []string{"init", "--repo", repo, "--paths", filepath.Join(repo, "app.yaml")}, "absolute paths are refused"},
		{"path out of the repository", []string{"init", "--repo", repo, "--paths", "../" + filepath.Base(repo)}, "leads outside --repo"},
		{"config in no folder", []string{"init", "--repo", repo, "-c", filepath.Join(repo, "ib", "imagebump.yaml"), "--write"}, "does not exist; create it first"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, stderr, code := runMain(t, tt.args...)
			if code != ExitUsage || !strings.Contains(stderr, tt.want) {
				t.Errorf("exit %d, stderr %q; want 64 and %q", code, stderr, tt.want)
			}
			if strings.Count(stderr, "\n") != 1 || strings.Contains(stderr, `\n`) {
				t.Errorf("stderr is not one line: %q", stderr)
			}
		})
	}
	if got, _ := snapshot(repo); len(got) != 1 {
		t.Errorf("files written: %v", got)
	}

	// The checkout's imagebump.yaml as a link out of it (a contributor's
	// to the operator's file): neither read nor extended, unless -c
	// names it.
	outside := writeFile(t, t.TempDir(), "operator.yaml", "images:\n  - name: secret-policy\n    repository: ghcr.io/acme/secret\n    policy: {semver: \">=1\"}\n")
	linked := t.TempDir()
	writeFile(t, linked, "app.yaml", "image: ghcr.io/acme/app:1.0.0\n")
	if err := os.Symlink(outside, filepath.Join(linked, "imagebump.yaml")); err != nil {
		t.Fatal(err)
	}
	out, stderr, code := runMain(t, "init", "--repo", linked, "-o", "json")
	if code != ExitUsage || !strings.Contains(stderr, "is a symbolic link to "+outside+", outside the repository") || strings.Contains(out+stderr, "secret-policy") {
		t.Errorf("init with imagebump.yaml linking out: exit %d, stderr %q; want 64 naming the link, and nothing of the file", code, stderr)
	}
}

// TestInitConfigElsewhere writes the config where -c says, outside the
// repository, and refuses to write anything when the config cannot be
// extended by adding lines.
func TestInitConfigElsewhere(t *testing.T) {
	host := startMemRegistry(t)
	repo := t.TempDir()
	writeFile(t, repo, "deploy/web.yaml", "apiVersion: v1\nkind: Pod\nmetadata: {name: web}\nspec:\n  containers:\n    - name: web\n      image: "+host+"/acme/web:1.0.0\n")
	writeFile(t, repo, "values.yaml", "image:\n  repository: "+host+"/acme/api\n  tag: 2.3.0\n")
	cfgDir := t.TempDir()
	regs := "registries:\n  - host: " + host + "\n    insecure: true\n"

	// A flow images list cannot be added to.
	cfg := writeFile(t, cfgDir, "flow.yaml", regs+"images: []\n")
	out, _, code := runMain(t, "init", "--repo", repo, "-c", cfg)
	if code != 0 || !strings.Contains(out, "add these items to it by hand") || !strings.Contains(out, "  - name: default:api") {
		t.Errorf("dry run with a flow images list: exit %d\n%s", code, out)
	}
	// The items alone, to paste into the list: no new file's header, no
	// second images: key.
	if _, items, _ := strings.Cut(out, "by hand:\n"); strings.Contains(items, "proposed by imagebump init") || strings.Contains(items, "images:") {
		t.Errorf("the entries to add by hand are a whole config:\n%s", items)
	}
	out, _, code = runMain(t, "init", "--repo", repo, "-c", cfg, "--write")
	if code != ExitFailure || !strings.Contains(out, "nothing was written") {
		t.Errorf("--write with a flow images list: exit %d, want 1\n%s", code, out)
	}
	if got, _ := os.ReadFile(filepath.Join(repo, "values.yaml")); strings.Contains(string(got), "imagepolicy") {
		t.Errorf("markers were written though the config was not:\n%s", got)
	}

	// A block config outside the repository is extended; the diff leaves
	// it out and says so.
	cfg = writeFile(t, cfgDir, "block.yaml", regs)
	diffOut, stderr, code := runMain(t, "init", "--repo", repo, "-c", cfg, "-o", "diff")
	if code != 0 || strings.Contains(diffOut, "block.yaml") || !strings.Contains(stderr, "outside --repo") {
		t.Errorf("-o diff with the config outside: exit %d\n%s\n%s", code, diffOut, stderr)
	}
	out, _, code = runMain(t, "init", "--repo", repo, "-c", cfg, "--write")
	if code != 0 {
		t.Fatalf("init --write: exit %d\n%s", code, out)
	}
	data, err := os.ReadFile(cfg)
	if err != nil || !strings.HasPrefix(string(data), regs+"images:\n") {
		t.Errorf("config:\n%s", data)
	}
	if _, err := os.Stat(filepath.Join(repo, "imagebump.yaml")); err == nil {
		t.Errorf("a config was written in the repository too")
	}
	out, _, code = runMain(t, "plan", "-c", cfg, "--repo", repo)
	if code != 0 || !strings.Contains(out, "1.2.0") || !strings.Contains(out, "2.4.0") {
		t.Errorf("plan after init: exit %d\n%s", code, out)
	}
}

// TestInitPartialWrite: a marked file the user edits between init's scan
// and its writes is left as the user wrote it, and the rest is written;
// the output says what was written and what was not, and that running
// init again finishes it, and the JSON marks that file's markers failed.
// Running it again does finish it.
func TestInitPartialWrite(t *testing.T) {
	host := startMemRegistry(t)
	for _, output := range []string{"text", "json"} {
		t.Run(output, func(t *testing.T) {
			repo := t.TempDir()
			pod := "apiVersion: v1\nkind: Pod\nmetadata: {name: %s}\nspec:\n  containers:\n    - name: %[1]s\n      image: " + host + "/acme/%[1]s:%s\n"
			writeFile(t, repo, "a.yaml", fmt.Sprintf(pod, "web", "1.0.0"))
			writeFile(t, repo, "b.yaml", fmt.Sprintf(pod, "api", "2.3.0"))
			edited := fmt.Sprintf(pod, "api", "2.3.0") + "# edited meanwhile\n"
			initBeforeWrite = func() { writeFile(t, repo, "b.yaml", edited) }
			t.Cleanup(func() { initBeforeWrite = nil })
			out, _, code := runMain(t, "init", "--repo", repo, "--insecure-registry", host, "--write", "-o", output)
			if code != ExitFailure {
				t.Errorf("exit %d, want 1\n%s", code, out)
			}
			if got, _ := os.ReadFile(filepath.Join(repo, "b.yaml")); string(got) != edited {
				t.Errorf("b.yaml, edited meanwhile, is now:\n%s", got)
			}
			if got, _ := os.ReadFile(filepath.Join(repo, "a.yaml")); !strings.Contains(string(got), `{"$imagepolicy": "default:web"}`) {
				t.Errorf("a.yaml was not marked:\n%s", got)
			}
			if _, err := os.Stat(filepath.Join(repo, "imagebump.yaml")); err != nil {
				t.Errorf("the config was not written: %v", err)
			}
			if output == "text" {
				if !strings.Contains(out, "Wrote "+filepath.Join(repo, "imagebump.yaml")+" and 1 marker in 1 file; 1 file could not be written") || strings.Contains(out, "Nothing was written") {
					t.Errorf("the closing line does not say what was written:\n%s", out)
				}
				return
			}
			var rep InitReport
			if err := json.Unmarshal([]byte(out), &rep); err != nil {
				t.Fatal(err)
			}
			if rep.Written || !slices.Equal(rep.Files.Changed, []string{"a.yaml", "imagebump.yaml"}) {
				t.Errorf("written %v, changed %q; want false and [a.yaml imagebump.yaml]", rep.Written, rep.Files.Changed)
			}
			for _, m := range rep.Markers {
				if want := map[string]string{"a.yaml": "inserted", "b.yaml": "failed"}[m.File]; m.Status != want {
					t.Errorf("marker in %s: status %q, want %q", m.File, m.Status, want)
				}
			}

			// Run again: only b.yaml's marker is missing, and it is added.
			initBeforeWrite = nil
			out, _, code = runMain(t, "init", "--repo", repo, "--insecure-registry", host, "--write")
			if code != 0 || !strings.Contains(out, "Wrote no config entry and 1 marker in 1 file") {
				t.Errorf("init again: exit %d\n%s", code, out)
			}
		})
	}
}

// TestInitDiffNothingToDo: a second init -o diff, after the first was
// applied, prints nothing and says so on stderr (git apply refuses an
// empty patch).
func TestInitDiffNothingToDo(t *testing.T) {
	host := startMemRegistry(t)
	repo := t.TempDir()
	writeFile(t, repo, "a.yaml", "apiVersion: v1\nkind: Pod\nmetadata: {name: web}\nspec:\n  containers:\n    - name: web\n      image: "+host+"/acme/web:1.0.0\n")
	if out, _, code := runMain(t, "init", "--repo", repo, "--insecure-registry", host, "--write"); code != 0 {
		t.Fatalf("init --write: exit %d\n%s", code, out)
	}
	out, stderr, code := runMain(t, "init", "--repo", repo, "--insecure-registry", host, "-o", "diff")
	if code != 0 || out != "" || !strings.Contains(stderr, "nothing to change") {
		t.Errorf("init -o diff after --write: exit %d, stdout %q, stderr %q", code, out, stderr)
	}
}

// TestInitCancelled checks that a cancelled init fails and writes nothing.
func TestInitCancelled(t *testing.T) {
	repo := t.TempDir()
	writeFile(t, repo, "app.yaml", "image: ghcr.io/acme/app:1.0.0\n")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var out, errb bytes.Buffer
	code := Main(ctx, []string{"init", "--repo", repo, "--write"}, &out, &errb)
	if code != ExitFailure {
		t.Errorf("exit %d, want 1\n%s", code, errb.String())
	}
	if got, _ := snapshot(repo); len(got) != 1 {
		t.Errorf("files written: %v", got)
	}
}

// TestInitWithFluxPolicies checks that the policies of Flux objects count
// as existing: their repositories get markers naming them, and no config
// entry.
func TestInitWithFluxPolicies(t *testing.T) {
	host := startMemRegistry(t)
	repo := t.TempDir()
	writeFile(t, repo, "flux/web.yaml", `apiVersion: image.toolkit.fluxcd.io/v1
kind: ImageRepository
metadata: {name: web, namespace: flux-system}
spec:
  image: `+host+`/acme/web
  interval: 5m
  insecure: true
---
apiVersion: image.toolkit.fluxcd.io/v1
kind: ImagePolicy
metadata: {name: web, namespace: flux-system}
spec:
  imageRepositoryRef: {name: web}
  policy: {semver: {range: ">=1.0.0 <2"}}
`)
	writeFile(t, repo, "apps/web.yaml", "apiVersion: v1\nkind: Pod\nmetadata: {name: web}\nspec:\n  containers:\n    - name: web\n      image: "+host+"/acme/web:1.0.0\n")
	flux := filepath.Join(repo, "flux")
	out, stderr, code := runMain(t, "init", "--repo", repo, "--flux", flux, "--write")
	if code != 0 || !strings.Contains(out, "flux-system:web (in config)") {
		t.Fatalf("init --flux: exit %d\n%s\n%s", code, out, stderr)
	}
	if _, err := os.Stat(filepath.Join(repo, "imagebump.yaml")); err == nil {
		t.Errorf("a config was written for a policy Flux defines")
	}
	got, _ := os.ReadFile(filepath.Join(repo, "apps/web.yaml"))
	if !strings.Contains(string(got), `# {"$imagepolicy": "flux-system:web"}`) {
		t.Errorf("no marker naming the Flux policy:\n%s", got)
	}
	// The command init says to run next reads the Flux objects too (the
	// marker names their policy), and no config, as init wrote none; it
	// runs as printed.
	next := "Next: imagebump plan --repo " + repo + " --flux " + flux + "\nrun and serve read Flux objects from the config's flux.paths"
	if !strings.Contains(out, next) {
		t.Fatalf("init --flux does not say to plan with --flux alone:\n%s", out)
	}
	_, cmd, _ := strings.Cut(out, "Next: imagebump ")
	cmd, _, _ = strings.Cut(cmd, "\n")
	out, stderr, code = runMain(t, strings.Fields(cmd)...)
	if code != 0 || !strings.Contains(out, "1.2.0") {
		t.Errorf("%s, after init: exit %d\n%s\n%s", cmd, code, out, stderr)
	}

	// A config that names them in flux.paths needs no --flux.
	objects, err := os.ReadFile(filepath.Join(flux, "web.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, withFlux := range []bool{false, true} {
		repo2 := t.TempDir()
		writeFile(t, repo2, "flux/web.yaml", string(objects))
		writeFile(t, repo2, "apps/web.yaml", "apiVersion: v1\nkind: Pod\nmetadata: {name: web}\nspec:\n  containers:\n    - name: web\n      image: "+host+"/acme/web:1.0.0\n")
		cfg := writeFile(t, repo2, "imagebump.yaml", "flux:\n  paths: [flux]\n")
		args := []string{"init", "--repo", repo2, "-c", cfg, "--write"}
		if withFlux {
			args = append(args, "--flux", filepath.Join(repo2, "flux"))
		}
		out, stderr, code = runMain(t, args...)
		if code != 0 || !strings.Contains(out, "Next: imagebump plan --repo "+repo2+" -c "+cfg+"\n") {
			t.Errorf("init %v with flux.paths in the config: exit %d\n%s\n%s", args, code, out, stderr)
		}
	}
}

// TestInitNothingFound checks init on a tree without images.
func TestInitNothingFound(t *testing.T) {
	repo := t.TempDir()
	writeFile(t, repo, "config.yaml", "a: 1\n")
	out, _, code := runMain(t, "init", "--repo", repo, "--write")
	if code != 0 || !strings.Contains(out, "No image reference to track") {
		t.Errorf("exit %d\n%s", code, out)
	}
	if got, _ := snapshot(repo); len(got) != 1 {
		t.Errorf("files written: %v", got)
	}
}

// TestInitTargetsApply checks that init names a new policy in a namespace
// that the config's targets apply (a native target's policies, a Flux
// automation's own namespace), so that plan moves its marker, and warns
// about a policy no target applies.
func TestInitTargetsApply(t *testing.T) {
	host := startMemRegistry(t)
	deployment := "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: proxy, namespace: staging}\nspec:\n  template:\n    spec:\n      containers:\n        - name: proxy\n          image: " + host + "/acme/proxy:1.0.0\n"
	native := func(policies string) string {
		return "targets:\n  - name: fleet\n    git: {url: https://example.com/acme/deploy.git, branch: main}\n    policies: " + policies + "\nregistries:\n  - host: " + host + "\n    insecure: true\nimages:\n  - name: flux-system:web\n    repository: " + host + "/acme/web\n    policy: {semver: '>=1.0.0 <2'}\n"
	}
	fluxObjects := `apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata: {name: fleet, namespace: flux-system}
spec: {url: https://example.com/acme/deploy.git, interval: 5m, ref: {branch: main}}
---
apiVersion: image.toolkit.fluxcd.io/v1
kind: ImageRepository
metadata: {name: web, namespace: flux-system}
spec: {image: ` + host + `/acme/web, interval: 5m, insecure: true}
---
apiVersion: image.toolkit.fluxcd.io/v1
kind: ImagePolicy
metadata: {name: web, namespace: flux-system}
spec:
  imageRepositoryRef: {name: web}
  policy: {semver: {range: ">=1.0.0 <2"}}
---
apiVersion: image.toolkit.fluxcd.io/v1
kind: ImageUpdateAutomation
metadata: {name: fleet, namespace: flux-system}
spec:
  interval: 5m
  sourceRef: {kind: GitRepository, name: fleet}
  git:
    commit: {author: {name: bot, email: bot@example.com}}
  update: {path: ./apps, strategy: Setters}
`
	for _, tc := range []struct {
		name, config, flux string
		want               string // the policy named
		warn               string // in the output, "" for none
	}{
		{name: "native target", config: native("[flux-system:*]"), want: "flux-system:proxy"},
		{name: "flux automation", flux: fluxObjects, want: "flux-system:proxy"},
		{name: "no namespace fits", config: native("[flux-system:web]"), want: "staging:proxy",
			warn: "staging:proxy: target fleet scans apps/proxy.yaml but its policies (flux-system:web) leave staging:proxy out: add staging:proxy to them"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			repo := t.TempDir()
			writeFile(t, repo, "apps/proxy.yaml", deployment)
			args := []string{"init", "--repo", repo, "--paths", "apps", "--insecure-registry", host, "--write"}
			planArgs := []string{"plan", "--repo", repo, "-c", filepath.Join(repo, "imagebump.yaml")}
			if tc.config != "" {
				writeFile(t, repo, "imagebump.yaml", tc.config)
			}
			if tc.flux != "" {
				flux := writeFile(t, t.TempDir(), "flux.yaml", tc.flux)
				args = append(args, "--flux", flux)
				planArgs = append(planArgs, "--flux", flux)
			}
			out, stderr, code := runMain(t, args...)
			if code != 0 {
				t.Fatalf("init: exit %d\n%s\n%s", code, out, stderr)
			}
			got, _ := os.ReadFile(filepath.Join(repo, "apps/proxy.yaml"))
			if !strings.Contains(string(got), `# {"$imagepolicy": "`+tc.want+`"}`) {
				t.Errorf("marker is not for %s:\n%s\n%s", tc.want, got, out)
			}
			const heading = "Not applied by any target of the config"
			if tc.warn == "" && strings.Contains(out, heading) || tc.warn != "" && !strings.Contains(out, heading+" (plan and run would never move these markers):\n  "+tc.warn+"\n") {
				t.Errorf("warning: want %q in\n%s", tc.warn, out)
			}
			out, stderr, code = runMain(t, planArgs...)
			if moves := strings.Contains(out, "1.0.1"); moves != (tc.warn == "") {
				t.Errorf("plan moves the marker: %v (exit %d)\n%s\n%s", moves, code, out, stderr)
			}
		})
	}
}

// TestInitWriteWithRegistryFailure: when a registry failed and --write
// wrote the unchecked rules anyway, the closing advice is to review them in
// the config, not to run init again before --write.
func TestInitWriteWithRegistryFailure(t *testing.T) {
	host := startMemRegistry(t)
	repo := t.TempDir()
	writeFile(t, repo, "a.yaml", "apiVersion: v1\nkind: Pod\nmetadata: {name: m}\nspec:\n  containers:\n    - name: m\n      image: "+host+"/acme/missing:1.0.0\n")
	out, _, code := runMain(t, "init", "--repo", repo, "--insecure-registry", host, "--write")
	if code != ExitFailure || !strings.Contains(out, "unchecked; review those entries in the config") || strings.Contains(out, "before --write") {
		t.Errorf("init --write with a registry failing: exit %d\n%s", code, out)
	}
}

// TestInitMaxFileSize: init reads files up to the config's maxFileSize, as
// validate and plan do, and a file over it is named with the key to raise.
func TestInitMaxFileSize(t *testing.T) {
	host := startMemRegistry(t)
	pod := "apiVersion: v1\nkind: Pod\nmetadata: {name: web}\nspec:\n  containers:\n    - name: web\n      image: " + host + "/acme/web:1.0.0\n"
	big := pod + "data: " + strings.Repeat("x", 3<<20) + "\n" // over the 2 MiB default
	for _, tt := range []struct {
		name, config string
		want         string
	}{
		{"the default limit", "", "over the limit of 2.0 MiB; not read (raise maxFileSize in imagebump.yaml to read it)"},
		{"the config's limit", "maxFileSize: 8MiB\n", host + "/acme/web"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			repo := t.TempDir()
			writeFile(t, repo, "big.yaml", big)
			args := []string{"init", "--repo", repo, "--insecure-registry", host}
			if tt.config != "" {
				args = append(args, "-c", writeFile(t, repo, "imagebump.yaml", tt.config))
			}
			out, stderr, code := runMain(t, args...)
			if !strings.Contains(out+stderr, tt.want) {
				t.Errorf("exit %d: output lacks %q:\n%s\n%s", code, tt.want, out, stderr)
			}
		})
	}
}

// TestInitPlainHTTPAdvice: a registry that answers plain HTTP fails init
// with a problem ending in what to do; the text output cut it off before
// that, at 512 bytes.
func TestInitPlainHTTPAdvice(t *testing.T) {
	host := startMemRegistry(t)
	repo := t.TempDir()
	writeFile(t, repo, "pod.yaml", "apiVersion: v1\nkind: Pod\nmetadata: {name: web}\nspec:\n  containers:\n    - name: web\n      image: "+host+"/acme/web:1.0.0\n")
	out, stderr, _ := runMain(t, "init", "--repo", repo)
	want := "run init again with --insecure-registry " + host + ", which a new config keeps under registries:"
	if !strings.Contains(out, want) {
		t.Errorf("init's problems lack %q:\n%s\n%s", want, out, stderr)
	}
}

// TestInitFluxSourceNote: when init cannot tell which of the Flux
// Kustomizations' GitRepository sources is this repository, it reads none
// of their paths as its folders, and says so in the text and the JSON.
func TestInitFluxSourceNote(t *testing.T) {
	host := startMemRegistry(t)
	repo := t.TempDir()
	ks := "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata: {name: %s, namespace: flux-system}\nspec:\n  path: ./apps\n  targetNamespace: %[1]s\n  sourceRef: {kind: GitRepository, name: %s}\n"
	writeFile(t, repo, "clusters/shop.yaml", fmt.Sprintf(ks, "shop", "fleet"))
	writeFile(t, repo, "clusters/team.yaml", fmt.Sprintf(ks, "team", "team-apps"))
	writeFile(t, repo, "apps/web.yaml", "apiVersion: v1\nkind: Pod\nmetadata: {name: web, namespace: web}\nspec:\n  containers:\n    - name: web\n      image: "+host+"/acme/web:1.0.0\n")
	const note = "cannot tell which GitRepository is this repository: the Flux Kustomizations use 2 (flux-system/fleet, flux-system/team-apps)"
	out, stderr, code := runMain(t, "init", "--repo", repo, "--insecure-registry", host)
	if code != 0 || !strings.Contains(out, "\nNotes on the scan:\n  "+note) || !strings.Contains(out, "web:web") {
		t.Errorf("exit %d, want the note and policy web:web\n%s\n%s", code, out, stderr)
	}
	out, _, _ = runMain(t, "init", "--repo", repo, "--insecure-registry", host, "-o", "json")
	var rep InitReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Notes) != 1 || !strings.HasPrefix(rep.Notes[0], note) {
		t.Errorf("notes %q, want one starting %q", rep.Notes, note)
	}
}

// TestInitFluxSourceRemotes: in a Git checkout, a GitRepository whose url
// names the repository of a remote is this repository, and the note goes;
// when no url does, the note shows the urls and the remotes compared,
// without the credentials the remote's URL holds.
func TestInitFluxSourceRemotes(t *testing.T) {
	host := startMemRegistry(t)
	repo := t.TempDir()
	ks := "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata: {name: %s, namespace: flux-system}\nspec:\n  path: ./apps\n  targetNamespace: %[1]s\n  sourceRef: {kind: GitRepository, name: %s}\n"
	src := "apiVersion: source.toolkit.fluxcd.io/v1\nkind: GitRepository\nmetadata: {name: %s, namespace: flux-system}\nspec:\n  url: %s\n"
	writeFile(t, repo, "clusters/shop.yaml", fmt.Sprintf(ks, "shop", "fleet"))
	writeFile(t, repo, "clusters/team.yaml", fmt.Sprintf(ks, "team", "team-apps"))
	writeFile(t, repo, "clusters/sources.yaml", fmt.Sprintf(src, "fleet", "ssh://git@github.com/acme/fleet")+"---\n"+fmt.Sprintf(src, "team-apps", "https://github.com/acme/team-apps"))
	writeFile(t, repo, "apps/web.yaml", "apiVersion: v1\nkind: Pod\nmetadata: {name: web, namespace: web}\nspec:\n  containers:\n    - name: web\n      image: "+host+"/acme/web:1.0.0\n")
	r, err := git.PlainInit(repo, false)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.CreateRemote(&gitconfig.RemoteConfig{Name: "origin", URLs: []string{"https://bot:s3cret@github.com/acme/fork.git"}}); err != nil {
		t.Fatal(err)
	}
	out, stderr, code := runMain(t, "init", "--repo", repo, "--insecure-registry", host)
	const compared = "Their spec.url: flux-system/fleet ssh://github.com/acme/fleet, flux-system/team-apps https://github.com/acme/team-apps; the remotes of the checkout: origin https://github.com/acme/fork.git."
	if code != 0 || !strings.Contains(out, compared) || strings.Contains(out+stderr, "s3cret") || !strings.Contains(out, "web:web") {
		t.Errorf("exit %d, want the note saying %q, without the remote's password, and policy web:web\n%s\n%s", code, compared, out, stderr)
	}

	if _, err := r.CreateRemote(&gitconfig.RemoteConfig{Name: "upstream", URLs: []string{"git@github.com:acme/fleet.git"}}); err != nil {
		t.Fatal(err)
	}
	out, stderr, code = runMain(t, "init", "--repo", repo, "--insecure-registry", host, "-o", "json")
	var rep InitReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	if code != 0 || len(rep.Notes) != 0 || len(rep.Policies) != 1 || rep.Policies[0].Name != "shop:web" {
		t.Errorf("exit %d, notes %q, policies %+v; want no note and policy shop:web", code, rep.Notes, rep.Policies)
	}
}
