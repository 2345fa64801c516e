package discover

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/imagebump/imagebump/setters"
)

var update = flag.Bool("update", false, "rewrite testdata/init/*/find.txt")

// casesDir holds the sample repositories init's tests share.
var casesDir = filepath.Join("..", "testdata", "init")

// testHost stands for the registry in the samples (REGISTRY there).
const testHost = "registry.example:5000"

// copyInput copies a case's input with REGISTRY replaced.
func copyInput(t *testing.T, name string) string {
	t.Helper()
	dst := t.TempDir()
	src := filepath.Join(casesDir, name, "input")
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		out := filepath.Join(dst, rel)
		if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
			return err
		}
		return os.WriteFile(out, bytes.ReplaceAll(data, []byte("REGISTRY"), []byte(testHost)), 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

// caseRemotes reads a case's remotes file, which makes its copy a Git
// checkout with those remotes: one "NAME URL" a line, # starting a
// comment. It is nil for a case without one, which is no checkout.
func caseRemotes(t *testing.T, name string) []string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(casesDir, name, "remotes"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	remotes := []string{}
	for _, line := range strings.Split(string(data), "\n") {
		if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
			remotes = append(remotes, line)
		}
	}
	return remotes
}

// render writes an inventory one line per item.
func render(inv *Inventory) string {
	var b strings.Builder
	fmt.Fprintf(&b, "scanned %d, chart templates %d\n", inv.FilesScanned, inv.ChartTemplates)
	for _, u := range inv.Uses {
		fmt.Fprintf(&b, "use %s:%d [%s] %s ns=%q repo=%s tag=%q digest=%q\n", u.File, u.Line, u.Source, u.Path, u.Namespace, u.Repository, u.Tag, u.Digest)
		for _, v := range u.Values {
			fmt.Fprintf(&b, "    %d:%d %s %q", v.Line, v.Column, fieldName(v.Field), v.Value)
			if v.Marker != "" {
				fmt.Fprintf(&b, " marked %s", setters.FormatMarker(v.Marker, v.MarkerField))
			}
			b.WriteString("\n")
		}
	}
	for _, u := range inv.Untracked {
		fmt.Fprintf(&b, "untracked %s:%d [%s] %s %q: %s\n", u.File, u.Line, u.Source, u.Path, u.Value, u.Reason)
	}
	for _, p := range inv.Problems {
		fmt.Fprintf(&b, "problem %s\n", p.Error())
	}
	for _, n := range inv.Notes {
		fmt.Fprintf(&b, "note %s\n", n)
	}
	return strings.ReplaceAll(b.String(), testHost, "REGISTRY")
}

func fieldName(f setters.Field) string {
	if f == setters.FieldImage {
		return "image"
	}
	return string(f)
}

// TestFindCases reads each sample repository and compares what Find
// found, reference by reference, with find.txt.
func TestFindCases(t *testing.T) {
	entries, err := os.ReadDir(casesDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		t.Run(e.Name(), func(t *testing.T) {
			root := copyInput(t, e.Name())
			if remotes := caseRemotes(t, e.Name()); remotes != nil {
				makeCheckout(t, root, remotes...)
			}
			inv, err := Find(context.Background(), FindOptions{Root: root})
			if err != nil {
				t.Fatal(err)
			}
			got := render(inv)
			golden := filepath.Join(casesDir, e.Name(), "find.txt")
			if *update {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test ./discover -update)", err)
			}
			if diff := cmp.Diff(got, string(want)); diff != "" {
				t.Errorf("find.txt mismatch (-got +want):\n%s", diff)
			}
			// Every value found is where Insert looks for it.
			for _, fm := range Markers(inv, Propose(inv, ProposeOptions{})) {
				if fm.Err != nil {
					t.Errorf("%s: %v", fm.File, fm.Err)
				}
				for _, m := range fm.Marks {
					if m.Err != nil && strings.Contains(m.Err.Error(), "no scalar") {
						t.Errorf("%s:%d: %v", m.File, m.Line, m.Err)
					}
				}
			}
		})
	}
}

func TestFindPaths(t *testing.T) {
	root := copyInput(t, "workloads")
	inv, err := Find(context.Background(), FindOptions{Root: root, Paths: []string{"apps", "jobs/backup.yaml", "nope"}})
	if err != nil {
		t.Fatal(err)
	}
	var files []string
	for _, u := range inv.Uses {
		files = append(files, u.File)
	}
	if diff := cmp.Diff(files, []string{"apps/web-canary.yaml", "apps/web.yaml", "apps/web.yaml", "jobs/backup.yaml"}); diff != "" {
		t.Errorf("files (-got +want):\n%s", diff)
	}
	if len(inv.Problems) != 1 || !strings.Contains(inv.Problems[0].Error(), "nope: the path does not exist") {
		t.Errorf("problems: %v", inv.Problems)
	}
}

func TestFindCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Find(ctx, FindOptions{Root: t.TempDir()}); !errors.Is(err, context.Canceled) {
		t.Errorf("Find with a cancelled ctx: %v", err)
	}
}

// FuzzFind reads fuzzed files as a Kubernetes manifest, a kustomization,
// a compose file and Helm values, and checks that Find does not fail on
// them and that every value it reports is one Insert can find and mark,
// by setters' proof.
func FuzzFind(f *testing.F) {
	_ = filepath.WalkDir(casesDir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() && strings.Contains(p, "input") {
			if b, err := os.ReadFile(p); err == nil {
				f.Add(bytes.ReplaceAll(b, []byte("REGISTRY"), []byte(testHost)))
			}
		}
		return nil
	})
	f.Add([]byte("services:\n  a:\n    <<: [*x]\n"))
	f.Add([]byte("image: {repository: a, tag: &t 1.0.0}\nother: {image: {repository: b, tag: *t}}\n"))
	f.Fuzz(func(t *testing.T, src []byte) {
		root := t.TempDir()
		for _, name := range []string{"deploy.yaml", "kustomization.yaml", "compose.yaml", "values.yaml"} {
			if err := os.WriteFile(filepath.Join(root, name), src, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		inv, err := Find(context.Background(), FindOptions{Root: root})
		if err != nil {
			t.Fatal(err)
		}
		for _, u := range inv.Uses {
			if len(u.Values) == 0 || u.Repository == "" {
				t.Fatalf("use without values or repository: %+v", u)
			}
		}
		for _, fm := range Markers(inv, Propose(inv, ProposeOptions{})) {
			if fm.Err != nil {
				t.Fatalf("%s: %v", fm.File, fm.Err)
			}
			for _, m := range fm.Marks {
				if m.Err != nil && strings.Contains(m.Err.Error(), "no scalar") {
					t.Fatalf("%s:%d: %v", m.File, m.Line, m.Err)
				}
			}
		}
	})
}

// TestFindOverrideScope checks that a kustomization images entry takes
// over the workload references only in what the kustomization builds.
func TestFindOverrideScope(t *testing.T) {
	deploy := "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: a}\nspec:\n  template:\n    spec:\n      containers:\n        - name: a\n          image: ghcr.io/acme/app:1.0.0\n"
	inv := findTree(t, map[string]string{
		"base/deploy.yaml":                 deploy,
		"overlays/prod/kustomization.yaml": "resources: [../../base]\nimages:\n  - name: ghcr.io/acme/app\n    newTag: 1.1.0\n",
		"other/deploy.yaml":                deploy,
		"flux/ks.yaml":                     "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata: {name: x}\nspec:\n  path: ./fluxed\n  images:\n    - name: ghcr.io/acme/app\n      newTag: 1.2.0\n",
		"fluxed/deploy.yaml":               deploy,
		"overlays/prod/local/deploy.yaml":  deploy,
	})
	var tracked, untracked []string
	for _, u := range inv.Uses {
		tracked = append(tracked, u.File)
	}
	for _, u := range inv.Untracked {
		untracked = append(untracked, u.File)
	}
	if diff := cmp.Diff(tracked, []string{"flux/ks.yaml", "other/deploy.yaml", "overlays/prod/kustomization.yaml"}); diff != "" {
		t.Errorf("tracked (-got +want):\n%s", diff)
	}
	if diff := cmp.Diff(untracked, []string{"base/deploy.yaml", "fluxed/deploy.yaml", "overlays/prod/local/deploy.yaml"}); diff != "" {
		t.Errorf("untracked (-got +want):\n%s", diff)
	}
}

func TestGeneratedHeader(t *testing.T) {
	tests := []struct {
		name string
		src  string
		want int
	}{
		{"flux bootstrap", "---\n# This manifest was generated by flux. DO NOT EDIT.\n# Flux Version: v2.4.0\napiVersion: v1\n", 2},
		{"first line", "# Code generated by gen; DO NOT EDIT.\nkind: Pod\n", 1},
		{"any case", "# do not edit: generated\nkind: Pod\n", 1},
		{"CRLF and BOM", "\ufeff# Comment\r\n\r\n# Do Not Edit\r\nkind: Pod\r\n", 3},
		{"on the document start", "--- # DO NOT EDIT\nkind: Pod\n", 1},
		{"after a directive", "%YAML 1.2\n---\n# DO NOT EDIT\nkind: Pod\n", 3},
		{"after the content", "kind: Pod\n# DO NOT EDIT\n", 0},
		{"in a value", "description: DO NOT EDIT\n", 0},
		{"past the first lines", strings.Repeat("#\n", generatedLines) + "# DO NOT EDIT\nkind: Pod\n", 0},
		{"last of the first lines", strings.Repeat("#\n", generatedLines-1) + "# DO NOT EDIT\nkind: Pod\n", generatedLines},
		{"no header", "# A deployment.\nkind: Pod\n", 0},
		{"a document start with content", "--- {a: 1}\n# DO NOT EDIT\n", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := generatedHeader([]byte(tt.src)); got != tt.want {
				t.Errorf("generatedHeader(%q) = %d, want %d", tt.src, got, tt.want)
			}
		})
	}
}

// TestFindOverrideEvery checks that a workload reference gives way to
// kustomization images entries only when every kustomization that builds
// it sets its image: one that builds it without an entry deploys its tag.
func TestFindOverrideEvery(t *testing.T) {
	deploy := "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: a}\nspec:\n  template:\n    spec:\n      containers:\n        - name: a\n          image: ghcr.io/acme/app:1.0.0\n"
	sets := "images:\n  - name: ghcr.io/acme/app\n    newTag: 1.1.0\n"
	base := map[string]string{
		"base/kustomization.yaml": "resources: [deploy.yaml]\n",
		"base/deploy.yaml":        deploy,
	}
	flux := func(p string) string {
		return "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata: {name: x}\nspec:\n  path: " + p + "\n"
	}
	tests := []struct {
		name  string
		files map[string]string
		// untracked is the reason's start for base/deploy.yaml, "" when
		// it is tracked.
		untracked string
	}{
		{"one overlay of two sets it", map[string]string{
			"overlays/prod/kustomization.yaml":    "resources: [../../base]\n" + sets,
			"overlays/staging/kustomization.yaml": "resources: [../../base]\n",
		}, ""},
		{"both overlays set it", map[string]string{
			"overlays/prod/kustomization.yaml":    "resources: [../../base]\n" + sets,
			"overlays/staging/kustomization.yaml": "resources: [../../base]\n" + sets,
		}, "kustomization images entries (overlays/prod/kustomization.yaml:3, overlays/staging/kustomization.yaml:3)"},
		{"the only overlay sets it", map[string]string{
			"overlays/prod/kustomization.yaml": "resources: [../../base]\n" + sets,
		}, "a kustomization images entry (overlays/prod/kustomization.yaml:3)"},
		{"the base sets it", map[string]string{
			"base/kustomization.yaml":             "resources: [deploy.yaml]\n" + sets,
			"overlays/prod/kustomization.yaml":    "resources: [../../base]\n",
			"overlays/staging/kustomization.yaml": "bases: [../../base]\n",
		}, "a kustomization images entry (base/kustomization.yaml:3)"},
		{"an overlay of an overlay", map[string]string{
			"overlays/prod/kustomization.yaml":    "resources: [../../base]\n" + sets,
			"overlays/prod-eu/kustomization.yaml": "resources: [../prod]\n",
		}, "a kustomization images entry (overlays/prod/kustomization.yaml:3)"},
		{"a Flux Kustomization builds the base", map[string]string{
			"overlays/prod/kustomization.yaml": "resources: [../../base]\n" + sets,
			"clusters/base.yaml":               flux("./base"),
		}, ""},
		{"a Flux Kustomization builds the overlay", map[string]string{
			"overlays/prod/kustomization.yaml": "resources: [../../base]\n" + sets,
			"clusters/prod.yaml":               flux("./overlays/prod"),
		}, "a kustomization images entry (overlays/prod/kustomization.yaml:3)"},
		{"a Flux Kustomization builds a folder without a kustomization", map[string]string{
			"base/kustomization.yaml":          "",
			"overlays/prod/kustomization.yaml": "resources: [../../base]\n" + sets,
			"clusters/all.yaml":                flux("./"),
		}, ""},
		{"Flux builds the kustomization of a folder below its path", map[string]string{
			"base/kustomization.yaml": "resources: [deploy.yaml]\n" + sets,
			"clusters/all.yaml":       flux("./"),
		}, "a kustomization images entry (base/kustomization.yaml:3)"},
		{"a Flux Kustomization of another source sets it there", map[string]string{
			"clusters/team.yaml": flux("./base") + "  sourceRef: {kind: OCIRepository, name: team}\n  images:\n    - name: ghcr.io/acme/app\n      newTag: 1.1.0\n",
		}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			files := map[string]string{}
			for name, content := range base {
				files[name] = content
			}
			for name, content := range tt.files {
				files[name] = content
			}
			for name, content := range files {
				if content == "" {
					delete(files, name)
				}
			}
			inv := findTree(t, files)
			got := ""
			for _, u := range inv.Untracked {
				if u.File == "base/deploy.yaml" {
					got = u.Reason
				}
			}
			tracked := slices.ContainsFunc(inv.Uses, func(u Use) bool { return u.File == "base/deploy.yaml" })
			switch {
			case tt.untracked == "" && !tracked:
				t.Errorf("base/deploy.yaml is not tracked: %s", got)
			case tt.untracked != "" && (tracked || !strings.HasPrefix(got, tt.untracked)):
				t.Errorf("base/deploy.yaml: tracked %v, reason %q; want untracked, reason %q…", tracked, got, tt.untracked)
			}
			if len(inv.Problems) > 0 {
				t.Errorf("problems: %v", inv.Problems)
			}
		})
	}
}

// TestFindBuildsOnly checks that a file without the word image, read only
// for what its kustomizations build, yields no reference and no problem.
func TestFindBuildsOnly(t *testing.T) {
	inv := findTree(t, map[string]string{
		"broken/kustomization.yaml": "resources: [\n",
		"clusters/apps.yaml": "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata: {name: apps}\nspec: {path: ./apps}\n---\n" +
			"apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata: {name: app}\nspec:\n  values:\n    app: {repository: ghcr.io/acme/app, tag: 1.0.0}\n",
	})
	if len(inv.Uses) > 0 || len(inv.Untracked) > 0 || len(inv.Problems) > 0 || inv.FilesScanned != 2 {
		t.Errorf("scanned %d, uses %v, untracked %v, problems %v; want 2 scanned and nothing found", inv.FilesScanned, inv.Uses, inv.Untracked, inv.Problems)
	}
}

// findTree writes files (slash paths to contents) in a new folder and
// returns what Find finds there.
func findTree(t *testing.T, files map[string]string) *Inventory {
	t.Helper()
	return findCheckout(t, files, nil)
}

// findCheckout is findTree in a Git checkout with remotes ("NAME URL",
// see makeCheckout); in a folder that is no checkout for nil remotes.
func findCheckout(t *testing.T, files map[string]string, remotes []string) *Inventory {
	t.Helper()
	root := t.TempDir()
	if remotes != nil {
		makeCheckout(t, root, remotes...)
	}
	for name, content := range files {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	inv, err := Find(context.Background(), FindOptions{Root: root})
	if err != nil {
		t.Fatal(err)
	}
	return inv
}

// TestMarkersWrongField: a value carrying its policy's marker for another
// part of the reference (:tag on a whole image, say, which a bump would
// replace by the tag alone) is left alone, saying what to write instead;
// it said only that the value was marked already.
func TestMarkersWrongField(t *testing.T) {
	inv := findTree(t, map[string]string{
		"pod.yaml": "apiVersion: v1\nkind: Pod\nmetadata: {name: a}\nspec:\n  containers:\n    - name: a\n      image: ghcr.io/acme/web:1.3.0 # {\"$imagepolicy\": \"apps:web:tag\"}\n",
	})
	var errs []string
	for _, fm := range Markers(inv, Propose(inv, ProposeOptions{})) {
		for _, m := range fm.Marks {
			if m.Err != nil {
				errs = append(errs, m.Err.Error())
			}
		}
	}
	want := `the value is marked already with {"$imagepolicy": "apps:web:tag"}; it is left as it is: but it says the tag alone where the value holds the whole reference, and a bump would write the tag alone over it; write {"$imagepolicy": "apps:web"} instead`
	if len(errs) != 1 || errs[0] != want {
		t.Errorf("errors %q, want [%q]", errs, want)
	}
}

// TestFindFluxSources checks that a Flux Kustomization's spec.path is read
// as a folder of this repository only when its source is this repository:
// a GitRepository that a Kustomization syncing the repository uses (one
// named flux-system, or whose path holds its own file), else the only
// GitRepository the Kustomizations use. Its targetNamespace applied to
// this repository's folder of the same name whatever its sourceRef named.
func TestFindFluxSources(t *testing.T) {
	ks := fluxKustomization
	const (
		fleet = "{kind: GitRepository, name: flux-system}"
		team  = "{kind: GitRepository, name: team-apps}"
	)
	sync := ks("flux-system", "flux-system", "./clusters/prod", "", fleet)
	tests := []struct {
		name  string
		files map[string]string
		ns    string // the namespace of apps/web.yaml's image
		note  string // in the one note, "" for none
	}{
		{"this repository's source", map[string]string{
			"clusters/prod/flux-system/gotk-sync.yaml": sync,
			"clusters/prod/apps.yaml":                  ks("apps", "flux-system", "./apps", "shop", fleet),
			"clusters/prod/team.yaml":                  ks("team", "flux-system", "./team", "team", team),
		}, "shop", ""},
		{"another repository's", map[string]string{
			"clusters/prod/flux-system/gotk-sync.yaml": sync,
			"clusters/prod/team.yaml":                  ks("team", "flux-system", "./apps", "team", team),
		}, "own", ""},
		{"another repository's beside this one's", map[string]string{
			"clusters/prod/flux-system/gotk-sync.yaml": sync,
			"clusters/prod/apps.yaml":                  ks("apps", "flux-system", "./apps", "shop", fleet),
			"clusters/prod/team.yaml":                  ks("team", "flux-system", "./apps", "team", team),
		}, "shop", ""},
		{"an OCIRepository", map[string]string{
			"clusters/prod/batch.yaml": ks("batch", "flux-system", "./apps", "batch", "{kind: OCIRepository, name: batch}"),
		}, "own", ""},
		{"a Bucket", map[string]string{
			"clusters/prod/batch.yaml": ks("batch", "flux-system", "./apps", "batch", "{kind: Bucket, name: batch}"),
		}, "own", ""},
		{"the only GitRepository", map[string]string{
			"clusters/prod/apps.yaml": ks("apps", "flux-system", "./apps", "shop", "{kind: GitRepository, name: fleet}"),
			"clusters/prod/more.yaml": ks("more", "flux-system", "./more", "more", "{kind: GitRepository, name: fleet}"),
		}, "shop", ""},
		{"two GitRepository sources, none told", map[string]string{
			"clusters/prod/apps.yaml": ks("apps", "flux-system", "./apps", "shop", "{kind: GitRepository, name: fleet}"),
			"clusters/prod/team.yaml": ks("team", "flux-system", "./team", "team", team),
		}, "own", "cannot tell which GitRepository is this repository: the Flux Kustomizations use 2 (flux-system/fleet, flux-system/team-apps), none that syncs the repository it is in (named flux-system, or whose spec.path holds its own file, as flux bootstrap writes it) uses one, and no spec.url of theirs names the repository of a remote of the checkout; so the spec.path of clusters/prod/apps.yaml (Kustomization apps), clusters/prod/team.yaml (Kustomization team) is not read as a folder here, and their targetNamespace and images entries apply to none of its files. No GitRepository object is scanned for flux-system/fleet, flux-system/team-apps; the folder scanned is in no Git checkout. If one"},
		{"flux-system outside its own path", map[string]string{
			"sync.yaml":               sync,
			"clusters/prod/apps.yaml": ks("apps", "flux-system", "./apps", "shop", fleet),
			"clusters/prod/team.yaml": ks("team", "flux-system", "./team", "team", team),
		}, "shop", ""},
		{"a path holding its own file", map[string]string{
			"clusters/prod/sync.yaml": ks("fleet", "flux-system", "./clusters", "", "{kind: GitRepository, name: fleet}"),
			"clusters/prod/apps.yaml": ks("apps", "flux-system", "./apps", "shop", "{kind: GitRepository, name: fleet}"),
			"clusters/prod/team.yaml": ks("team", "flux-system", "./apps", "team", team),
		}, "shop", ""},
		{"the root holds every file, and tells nothing", map[string]string{
			"clusters/prod/apps.yaml": ks("apps", "flux-system", "./apps", "shop", "{kind: GitRepository, name: fleet}"),
			"clusters/prod/team.yaml": ks("team", "flux-system", "./", "team", team),
		}, "own", "cannot tell which GitRepository is this repository: the Flux Kustomizations use 2 (flux-system/fleet, flux-system/team-apps)"},
		{"a source of that name in another namespace", map[string]string{
			"clusters/prod/flux-system/gotk-sync.yaml": sync,
			"clusters/prod/team.yaml":                  ks("team", "team", "./apps", "team", fleet),
			"clusters/prod/apps.yaml":                  ks("apps", "apps", "./apps", "shop", "{kind: GitRepository, name: flux-system, namespace: flux-system}"),
		}, "shop", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.files["apps/web.yaml"] = "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web, namespace: own}\nspec:\n  template:\n    spec:\n      containers:\n        - name: web\n          image: ghcr.io/acme/web:1.0.0\n"
			inv := findTree(t, tt.files)
			if len(inv.Uses) != 1 || inv.Uses[0].Namespace != tt.ns {
				t.Fatalf("uses %+v; want one in namespace %s", inv.Uses, tt.ns)
			}
			switch {
			case tt.note == "" && len(inv.Notes) > 0:
				t.Errorf("notes %q, want none", inv.Notes)
			case tt.note != "" && (len(inv.Notes) != 1 || !strings.HasPrefix(inv.Notes[0], tt.note)):
				t.Errorf("notes %q, want one starting %q", inv.Notes, tt.note)
			}
		})
	}
}

// fluxKustomization writes a Flux Kustomization called name in namespace
// ns, of spec.path path, spec.targetNamespace target (none for "") and
// spec.sourceRef source (a flow mapping).
func fluxKustomization(name, ns, path, target, source string) string {
	s := "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata: {name: " + name + ", namespace: " + ns + "}\nspec:\n  path: " + path + "\n"
	if target != "" {
		s += "  targetNamespace: " + target + "\n"
	}
	return s + "  sourceRef: " + source + "\n"
}

// gitRepositoryObject writes a Flux GitRepository called name in
// namespace ns (none for ""), of spec.url url.
func gitRepositoryObject(name, ns, url string) string {
	meta := "{name: " + name + "}"
	if ns != "" {
		meta = "{name: " + name + ", namespace: " + ns + "}"
	}
	return "apiVersion: source.toolkit.fluxcd.io/v1\nkind: GitRepository\nmetadata: " + meta + "\nspec:\n  interval: 1m\n  ref: {branch: main}\n  url: " + url + "\n"
}

// TestFindFluxSourceURLs checks that a GitRepository whose spec.url names
// the repository of a remote of the checkout is this repository: beside
// the one a syncing Kustomization uses, which wins whatever its url, and
// in place of the only one used, when its url names another repository.
// When the urls tell nothing, the note shows what was compared, without
// credentials.
func TestFindFluxSourceURLs(t *testing.T) {
	ks := fluxKustomization
	const (
		fleet = "{kind: GitRepository, name: fleet}"
		team  = "{kind: GitRepository, name: team-apps}"
	)
	// Two sources, none syncing: the urls must tell.
	two := func(fleetURL string) map[string]string {
		return map[string]string{
			"clusters/prod/sources.yaml": gitRepositoryObject("fleet", "flux-system", fleetURL) + "---\n" + gitRepositoryObject("team-apps", "flux-system", "https://github.com/acme/team-apps"),
			"clusters/prod/apps.yaml":    ks("apps", "flux-system", "./apps", "shop", fleet),
			"clusters/prod/team.yaml":    ks("team", "flux-system", "./apps", "team", team),
		}
	}
	tests := []struct {
		name    string
		files   map[string]string
		remotes []string // nil: not a checkout
		ns      string   // the namespace of apps/web.yaml's image
		note    []string // what the one note holds; none for nil
		not     []string // what it must not hold
	}{
		{
			name:    "a url names the remote",
			files:   two("https://github.com/acme/fleet"),
			remotes: []string{"origin git@github.com:acme/fleet.git"},
			ns:      "shop",
		},
		{
			name:    "another form of the remote's url",
			files:   two("ssh://git@GitHub.com:22/acme/fleet.git/"),
			remotes: []string{"fork https://github.com/me/fleet", "upstream https://github.com/acme/fleet"},
			ns:      "shop",
		},
		{
			name:    "urls of other repositories",
			files:   two("https://github.com/acme/fleet"),
			remotes: []string{"origin git@github.com:other/fleet.git"},
			ns:      "own",
			note: []string{
				"cannot tell which GitRepository is this repository: the Flux Kustomizations use 2 (flux-system/fleet, flux-system/team-apps), none that syncs the repository it is in",
				"and no spec.url of theirs names the repository of a remote of the checkout; so the spec.path of clusters/prod/apps.yaml (Kustomization apps), clusters/prod/team.yaml (Kustomization team) is not read",
				". Their spec.url: flux-system/fleet https://github.com/acme/fleet, flux-system/team-apps https://github.com/acme/team-apps; the remotes of the checkout: origin github.com:other/fleet.git. If one of those sources",
			},
		},
		{
			name:    "credentials are not shown",
			files:   two("https://flux:pa55word@github.com/acme/fleet?token=t0ken"),
			remotes: []string{"origin https://bot:s3cret@gitlab.com/acme/fleet"},
			ns:      "own",
			note:    []string{"Their spec.url: flux-system/fleet https://github.com/acme/fleet?token=REDACTED, flux-system/team-apps https://github.com/acme/team-apps; the remotes of the checkout: origin https://gitlab.com/acme/fleet."},
			not:     []string{"pa55word", "t0ken", "s3cret", "bot", "flux:"},
		},
		{
			name:    "a remote that is a local path",
			files:   two("https://github.com/acme/fleet"),
			remotes: []string{"origin /srv/git/fleet.git"},
			ns:      "own",
			note:    []string{"the remotes of the checkout: origin /srv/git/fleet.git (not a URL of a host)."},
		},
		{
			name:    "a checkout without remotes",
			files:   two("https://github.com/acme/fleet"),
			remotes: []string{},
			ns:      "own",
			note:    []string{"Their spec.url: flux-system/fleet https://github.com/acme/fleet, flux-system/team-apps https://github.com/acme/team-apps; the Git checkout has no remote."},
		},
		{
			name:  "no checkout",
			files: two("https://github.com/acme/fleet"),
			ns:    "own",
			note:  []string{"; the folder scanned is in no Git checkout."},
		},
		{
			name: "a source whose GitRepository is not scanned",
			files: map[string]string{
				"clusters/prod/sources.yaml": gitRepositoryObject("fleet", "flux-system", "https://github.com/other/fleet"),
				"clusters/prod/apps.yaml":    ks("apps", "flux-system", "./apps", "shop", fleet),
				"clusters/prod/team.yaml":    ks("team", "flux-system", "./apps", "team", team),
			},
			remotes: []string{"origin https://github.com/acme/fleet"},
			ns:      "own",
			note:    []string{"Their spec.url: flux-system/fleet https://github.com/other/fleet; no GitRepository object is scanned for flux-system/team-apps; the remotes"},
		},
		{
			name: "two GitRepository objects of the repository",
			files: map[string]string{
				"clusters/prod/sources.yaml": gitRepositoryObject("fleet", "flux-system", "https://github.com/acme/fleet") + "---\n" + gitRepositoryObject("fleet-next", "flux-system", "git@github.com:acme/fleet"),
				"clusters/prod/apps.yaml":    ks("apps", "flux-system", "./apps", "shop", fleet),
				"clusters/prod/next.yaml":    ks("next", "flux-system", "./next", "next", "{kind: GitRepository, name: fleet-next}"),
				"clusters/prod/team.yaml":    ks("team", "flux-system", "./apps", "team", team),
			},
			remotes: []string{"origin https://github.com/acme/fleet"},
			ns:      "shop",
		},
		{
			name: "a GitRepository without a namespace",
			files: map[string]string{
				"sources/fleet.yaml":      gitRepositoryObject("fleet", "", "https://github.com/acme/fleet"),
				"clusters/prod/apps.yaml": ks("apps", "flux-system", "./apps", "shop", fleet),
				"clusters/prod/team.yaml": ks("team", "flux-system", "./apps", "team", team),
			},
			remotes: []string{"origin https://github.com/acme/fleet"},
			ns:      "shop",
		},
		{
			name: "one of that name in another namespace",
			files: map[string]string{
				"sources/fleet.yaml":      gitRepositoryObject("fleet", "tenants", "https://github.com/acme/fleet"),
				"clusters/prod/apps.yaml": ks("apps", "flux-system", "./apps", "shop", fleet),
				"clusters/prod/team.yaml": ks("team", "flux-system", "./apps", "team", team),
			},
			remotes: []string{"origin https://github.com/acme/fleet"},
			ns:      "own",
			note:    []string{"No GitRepository object is scanned for flux-system/fleet, flux-system/team-apps;"},
		},
		{
			name: "a tenant's GitRepository of this repository, beside the sync",
			files: map[string]string{
				"clusters/prod/flux-system/gotk-sync.yaml": gitRepositoryObject("flux-system", "flux-system", "ssh://git@github.com/acme/fleet") + "---\n" +
					ks("flux-system", "flux-system", "./clusters/prod", "", "{kind: GitRepository, name: flux-system}"),
				"tenants/shop.yaml": gitRepositoryObject("fleet", "shop", "https://github.com/acme/fleet") + "---\n" + ks("apps", "shop", "./apps", "shop", fleet),
				"tenants/team.yaml": gitRepositoryObject("team-apps", "team", "https://github.com/acme/team-apps") + "---\n" + ks("team", "team", "./apps", "team", team),
			},
			remotes: []string{"origin git@github.com:acme/fleet.git"},
			ns:      "shop",
		},
		{
			name: "the sync wins whatever its url",
			files: map[string]string{
				"clusters/prod/flux-system/gotk-sync.yaml": gitRepositoryObject("flux-system", "flux-system", "ssh://git@git.internal/mirrors/fleet") + "---\n" +
					ks("flux-system", "flux-system", "./clusters/prod", "", "{kind: GitRepository, name: flux-system}"),
				"clusters/prod/apps.yaml": ks("apps", "flux-system", "./apps", "shop", "{kind: GitRepository, name: flux-system}"),
			},
			remotes: []string{"origin https://github.com/acme/fleet"},
			ns:      "shop",
		},
		{
			name: "the only GitRepository, of another repository",
			files: map[string]string{
				"clusters/prod/team.yaml": gitRepositoryObject("team-apps", "flux-system", "https://github.com/acme/team-apps") + "---\n" + ks("team", "flux-system", "./apps", "team", team),
			},
			remotes: []string{"origin https://github.com/acme/fleet"},
			ns:      "own",
			note:    []string{"the Flux Kustomizations use 1 (flux-system/team-apps)", "Their spec.url: flux-system/team-apps https://github.com/acme/team-apps; the remotes of the checkout: origin https://github.com/acme/fleet."},
		},
		{
			name: "the only GitRepository, its url not scanned",
			files: map[string]string{
				"clusters/prod/apps.yaml": ks("apps", "flux-system", "./apps", "shop", fleet),
			},
			remotes: []string{"origin https://github.com/acme/fleet"},
			ns:      "shop",
		},
		{
			name: "the only GitRepository, in a checkout without remotes",
			files: map[string]string{
				"clusters/prod/apps.yaml": gitRepositoryObject("fleet", "flux-system", "https://github.com/acme/fleet") + "---\n" + ks("apps", "flux-system", "./apps", "shop", fleet),
			},
			remotes: []string{},
			ns:      "shop",
		},
		{
			name: "the only GitRepository, of a url with a variable",
			files: map[string]string{
				"clusters/prod/apps.yaml": gitRepositoryObject("fleet", "flux-system", "https://github.com/${OWNER}/fleet") + "---\n" + ks("apps", "flux-system", "./apps", "shop", fleet),
			},
			remotes: []string{"origin https://github.com/acme/fleet"},
			ns:      "shop",
		},
		{
			name: "the only GitRepository, of a url that names no host",
			files: map[string]string{
				"clusters/prod/apps.yaml": gitRepositoryObject("fleet", "flux-system", "${FLEET_URL}") + "---\n" + ks("apps", "flux-system", "./apps", "shop", fleet),
			},
			remotes: []string{"origin https://github.com/acme/fleet"},
			ns:      "shop",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.files["apps/web.yaml"] = "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web, namespace: own}\nspec:\n  template:\n    spec:\n      containers:\n        - name: web\n          image: ghcr.io/acme/web:1.0.0\n"
			inv := findCheckout(t, tt.files, tt.remotes)
			if len(inv.Uses) != 1 || inv.Uses[0].Namespace != tt.ns {
				t.Fatalf("uses %+v; want one in namespace %s (notes %q)", inv.Uses, tt.ns, inv.Notes)
			}
			if tt.note == nil {
				if len(inv.Notes) > 0 {
					t.Errorf("notes %q, want none", inv.Notes)
				}
				return
			}
			if len(inv.Notes) != 1 {
				t.Fatalf("notes %q, want one", inv.Notes)
			}
			for _, want := range tt.note {
				if !strings.Contains(inv.Notes[0], want) {
					t.Errorf("note %q\nlacks %q", inv.Notes[0], want)
				}
			}
			for _, secret := range tt.not {
				if strings.Contains(inv.Notes[0], secret) {
					t.Errorf("note %q\nholds %q", inv.Notes[0], secret)
				}
			}
			if len(inv.Problems) > 0 {
				t.Errorf("problems: %v", inv.Problems)
			}
		})
	}
}
