package flux

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/imagebump/imagebump/config"
	"github.com/imagebump/imagebump/internal/fluxmsg"
	"github.com/imagebump/imagebump/internal/msgtemplate"
	"github.com/imagebump/imagebump/policy"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

const fleet = "../testdata/flux"

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	p := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(p, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(p)
	if err != nil {
		t.Fatalf("%v (run go test ./flux -update)", err)
	}
	if diff := cmp.Diff(string(got), string(want)); diff != "" {
		t.Errorf("%s (-got +want):\n%s", p, diff)
	}
}

func loadFleet(t *testing.T, opts LoadOptions) *Set {
	t.Helper()
	set, err := Load(context.Background(), []string{fleet + "/clusters"}, opts)
	if err != nil {
		t.Fatal(err)
	}
	return set
}

func fleetNative(t *testing.T) *Native {
	t.Helper()
	sec, err := LoadSecrets(fleet + "/secrets.yaml")
	if err != nil {
		t.Fatal(err)
	}
	n, err := loadFleet(t, LoadOptions{}).Native(NativeOptions{Secrets: sec, File: "imagebump.yaml"})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestFleet reads the sample fleet and checks the native config and the
// report against golden files.
func TestFleet(t *testing.T) {
	n := fleetNative(t)
	golden(t, "fleet.imagebump.yaml", n.YAML)
	var b bytes.Buffer
	if err := n.Report.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	golden(t, "fleet.report.txt", b.Bytes())
}

func TestFleetMapping(t *testing.T) {
	c := fleetNative(t).Config
	image := func(name string) *config.Image {
		im, ok := c.Image(name)
		if !ok {
			t.Fatalf("no image %s", name)
		}
		return im
	}
	tests := []struct {
		name string
		got  any
		want any
	}{
		{"semver policy", image("flux-system:podinfo").Rule, config.Rule{SemVer: ">=6.0.0 <7.0.0"}},
		{"timestamp policy with extract", *image("apps:minio").FilterTags, config.FilterTags{Pattern: `^RELEASE\.(?P<timestamp>.*)Z$`, Extract: "$timestamp"}},
		{"exclusionList replaces the defaults", image("apps:minio").Spec().ExcludeReplacesDefaults, true},
		{"no exclusionList keeps imagebump's defaults", image("flux-system:podinfo").Spec().ExcludeReplacesDefaults, false},
		{"numerical rule from the kustomize patch", image("apps:build").Rule, config.Rule{Numerical: "asc"}},
		{"digest reflection", image("apps:web").Digest, policy.DigestIfNotPresent},
		{"registry per host", c.Registries, []config.Registry{{Host: "registry.fleet.test", Insecure: true, Auth: &config.RegistryAuth{DockerConfig: mustAbs(t, fleet+"/secrets/docker-config.json")}, Line: 3}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.got, tt.want); diff != "" {
				t.Errorf("(-got +want):\n%s", diff)
			}
		})
	}
	targets := c.Targets()
	if len(targets) != 2 {
		t.Fatalf("targets = %d, want 2", len(targets))
	}
	apps := targets[0]
	if diff := cmp.Diff(*apps.Push, config.Push{Branch: "image-updates", Refspec: "refs/heads/image-updates:refs/for/main", Options: []string{"merge_request.create", "topic=image-updates"}}); diff != "" {
		t.Errorf("push (-got +want):\n%s", diff)
	}
	if !apps.Selects("apps:minio") || apps.Selects("flux-system:podinfo") {
		t.Errorf("target apps selects %v: want the apps namespace only", apps.Policies)
	}
	fm := apps.Commit.FluxMessage
	if fm == nil || fm.Automation != "apps/apps" || !strings.Contains(fm.Template, ".Changed.FileChanges") || !slices.Equal(fm.Values, []config.TemplateValue{{Name: "cluster", Value: "prod"}}) {
		t.Errorf("flux message = %+v", fm)
	}
	if got := targets[1].Git.Paths; !slices.Equal(got, []string{"apps/podinfo"}) {
		t.Errorf("flux-system paths = %q", got)
	}
}

func mustAbs(t *testing.T, p string) string {
	t.Helper()
	a, err := filepath.Abs(p)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// TestKustomizePatch checks that the ImagePolicy's rule is read after the
// kustomization's patch, and as written without the build.
func TestKustomizePatch(t *testing.T) {
	for _, tt := range []struct {
		opts LoadOptions
		want bool // numerical, from the patch
	}{{LoadOptions{}, true}, {LoadOptions{NoKustomize: true}, false}} {
		set := loadFleet(t, tt.opts)
		for _, p := range set.Policies {
			if p.Name != "build" {
				continue
			}
			if got := p.Spec.Policy.Numerical != nil; got != tt.want {
				t.Errorf("NoKustomize=%v: numerical = %v, want %v", tt.opts.NoKustomize, got, tt.want)
			}
			if built := p.Kustomization != ""; built != tt.want {
				t.Errorf("NoKustomize=%v: Kustomization = %q", tt.opts.NoKustomize, p.Kustomization)
			}
			if !strings.HasSuffix(p.File, "image-policies.yaml") || p.Line != 19 {
				t.Errorf("position = %s, want image-policies.yaml:19", p.Pos())
			}
		}
	}
}

// TestKustomizeBuildFails: a kustomization that does not build is an
// error at its file, saying what to do in words a user has (a flag, not
// a Go option).
func TestKustomizeBuildFails(t *testing.T) {
	dir := t.TempDir()
	kfile := writeFile(t, dir, "kustomization.yaml", "resources: [missing.yaml]\n")
	_, err := Load(context.Background(), []string{dir}, LoadOptions{})
	if err == nil || !strings.Contains(err.Error(), kfile+":1") || !strings.Contains(err.Error(), "kustomize build failed: fix the kustomization, or read the folder as written with flux export --no-kustomize") {
		t.Errorf("Load error = %v; want the kustomization named, with what to do", err)
	}
}

// TestUnbuildableNote: a kustomization imagebump does not build is a
// warning at the line of what stops it, naming the file once and a nested
// kustomization by its path, with no empty object name.
func TestUnbuildableNote(t *testing.T) {
	for _, tt := range []struct {
		name  string
		files map[string]string
		want  []string
	}{
		{"remote resource", map[string]string{"kustomization.yaml": "resources:\n- app.yaml\n- github.com/acme/fleet//base?ref=v1\n"},
			[]string{`kustomization.yaml:3: warning: not built with kustomize (names the remote resource "github.com/acme/fleet//base?ref=v1", which is not fetched): its files are read as written, so patches are not applied`}},
		{"helm chart", map[string]string{"kustomization.yaml": "resources: [app.yaml]\nhelmCharts:\n- name: app\n"},
			[]string{`kustomization.yaml:2: warning: not built with kustomize (uses helmCharts, which needs helm): its files are read as written, so patches are not applied`}},
		{"remote resource below", map[string]string{"kustomization.yaml": "resources: [base]\n", "base/kustomization.yaml": "resources: [https://example.com/app.yaml]\n"},
			[]string{
				// The folders below are read one by one, so base's own kustomization is noted too.
				`base/kustomization.yaml:1: warning: not built with kustomize (names the remote resource "https://example.com/app.yaml", which is not fetched): its files are read as written, so patches are not applied`,
				`kustomization.yaml:1: warning: not built with kustomize (base/kustomization.yaml names the remote resource "https://example.com/app.yaml", which is not fetched): its files are read as written, so patches are not applied`,
			}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			for name, text := range tt.files {
				writeFile(t, dir, name, text)
			}
			set, err := Load(context.Background(), []string{dir}, LoadOptions{})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, n := range set.Report.Notes {
				got = append(got, strings.ReplaceAll(n.String(), dir+string(filepath.Separator), ""))
			}
			if diff := cmp.Diff(got, tt.want); diff != "" {
				t.Errorf("notes (-got +want):\n%s", diff)
			}
		})
	}
}

func writeFile(t *testing.T, dir, name, text string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// loadText loads Flux objects from one file holding text.
func loadText(t *testing.T, text string) *Set {
	t.Helper()
	dir := t.TempDir()
	writeFile(t, dir, "f.yaml", text)
	set, err := Load(context.Background(), []string{dir}, LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return set
}

// mustNative maps set to a native config, failing the test on an error.
func mustNative(t *testing.T, set *Set, opts NativeOptions) *Native {
	t.Helper()
	n, err := set.Native(opts)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

const repoYAML = `apiVersion: image.toolkit.fluxcd.io/v1
kind: ImageRepository
metadata:
  name: app
  namespace: apps
spec:
  image: ghcr.io/acme/app
`

// TestStrictDecoding checks that what Flux's API refuses is an error with
// file, line and field.
func TestStrictDecoding(t *testing.T) {
	tests := []struct {
		name, text, want string
	}{
		{"typo in spec", "# head\n" + repoYAML + "  exclusionLst: [a]\n",
			`f.yaml:9: ImageRepository apps/app: spec.exclusionLst: unknown field "exclusionLst" (did you mean "exclusionList"?) in image.toolkit.fluxcd.io/v1 ImageRepository`},
		{"typo deep in the second document", "kind: ConfigMap\napiVersion: v1\n---\napiVersion: image.toolkit.fluxcd.io/v1\nkind: ImagePolicy\nmetadata: {name: app, namespace: apps}\nspec:\n  imageRepositoryRef: {name: app}\n  policy:\n    semver:\n      rnage: 1.x\n",
			`f.yaml:11: ImagePolicy apps/app: spec.policy.semver.rnage: unknown field "rnage" (did you mean "range"?) in image.toolkit.fluxcd.io/v1 ImagePolicy`},
		{"wrong type", repoYAML + "  insecure: \"yes\"\n",
			`f.yaml:8: ImageRepository apps/app: spec.insecure: expected a boolean (true or false), got string`},
		{"bad duration", repoYAML + "  interval: 5 minutes\n",
			`f.yaml:8: ImageRepository apps/app: spec.interval: "5 minutes" is not a duration such as 5m, 1h or 30s`},
		{"duplicate key", repoYAML + "  image: ghcr.io/acme/other\n",
			`f.yaml:8: ImageRepository apps/app: invalid YAML`},
		{"old API version", strings.Replace(repoYAML, "/v1\n", "/v1beta1\n", 1),
			`f.yaml:1: ImageRepository apps/app: apiVersion: imagebump reads ImageRepository as image.toolkit.fluxcd.io/v1 and image.toolkit.fluxcd.io/v1beta2, not the older image.toolkit.fluxcd.io/v1beta1: upgrade the manifest to v1`},
		{"newer API version", strings.Replace(repoYAML, "/v1\n", "/v3\n", 1),
			`f.yaml:1: ImageRepository apps/app: apiVersion: imagebump reads ImageRepository as image.toolkit.fluxcd.io/v1 and image.toolkit.fluxcd.io/v1beta2, not image.toolkit.fluxcd.io/v3, which is newer than this imagebump knows: use an imagebump release that reads it, or write the object as v1 while Flux still serves that version`},
		{"newer beta API version", strings.Replace(repoYAML, "/v1\n", "/v2beta1\n", 1),
			`f.yaml:1: ImageRepository apps/app: apiVersion: imagebump reads ImageRepository as image.toolkit.fluxcd.io/v1 and image.toolkit.fluxcd.io/v1beta2, not image.toolkit.fluxcd.io/v2beta1, which is newer than this imagebump knows`},
		{"GitRepository API version", strings.Replace(repoYAML, "image.toolkit.fluxcd.io/v1\nkind: ImageRepository", "source.toolkit.fluxcd.io/v2\nkind: GitRepository", 1),
			`f.yaml:1: GitRepository apps/app: apiVersion: imagebump reads GitRepository as source.toolkit.fluxcd.io/v1 and source.toolkit.fluxcd.io/v1beta2, not source.toolkit.fluxcd.io/v2, which is newer`},
		{"not a version", strings.Replace(repoYAML, "/v1\n", "/latest\n", 1),
			`f.yaml:1: ImageRepository apps/app: apiVersion: imagebump reads ImageRepository as image.toolkit.fluxcd.io/v1 and image.toolkit.fluxcd.io/v1beta2, not image.toolkit.fluxcd.io/latest, which is no Kubernetes API version`},
		{"unknown metadata field", strings.Replace(repoYAML, "  namespace: apps\n", "  namespace: apps\n  lables: {a: b}\n", 1),
			`f.yaml:6: ImageRepository apps/app: metadata.lables: unknown field "lables" (did you mean "labels"?)`},
		{"defined twice", repoYAML + "---\n" + repoYAML,
			`f.yaml:9: ImageRepository apps/app: defined twice (first at f.yaml:1)`},
		{"bad YAML", repoYAML + "  insecure: [\n",
			`f.yaml:`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			writeFile(t, dir, "f.yaml", tt.text)
			_, err := Load(context.Background(), []string{dir}, LoadOptions{})
			if err == nil {
				t.Fatal("Load succeeded")
			}
			got := strings.ReplaceAll(err.Error(), dir+string(filepath.Separator), "")
			if !strings.HasPrefix(got, tt.want) {
				t.Errorf("error:\n got %s\nwant %s", got, tt.want)
			}
			var fe *Error
			if !errors.As(err, &fe) {
				t.Errorf("error %T is no *Error", err)
			}
		})
	}
}

// TestSkipsOtherObjects checks that the fleet's own manifests, broken or
// not, are none of the loader's business, and other Flux kinds are
// listed as ignored.
func TestSkipsOtherObjects(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "chart/templates/deploy.yaml", "{{ if .Values.x }}\nkind: Deployment\n{{ end }}\n")
	writeFile(t, dir, "app.yaml", "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: a}\nspec: {whatever: 1}\n")
	writeFile(t, dir, "sync.yaml", "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata: {name: apps, namespace: flux-system}\nspec: {anything: goes}\n")
	writeFile(t, dir, ".git/config.yaml", "apiVersion: image.toolkit.fluxcd.io/v1\nkind: Broken\n")
	set, err := Load(context.Background(), []string{dir}, LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(set.Report.Objects) != 0 || len(set.Report.Ignored) != 1 || set.Report.Ignored[0].Object.Ref() != "Kustomization flux-system/apps" {
		t.Errorf("report = %+v", set.Report)
	}
}

// TestEveryFieldHasARule walks the spec of every API type read and checks
// that each field is mapped or has a note: nothing is dropped without a
// word.
func TestEveryFieldHasARule(t *testing.T) {
	for _, kind := range []string{KindImageRepository, KindImagePolicy, KindImageUpdateAutomation, KindGitRepository} {
		group := groupImage
		if kind == KindGitRepository {
			group = groupSource
		}
		for _, v := range []string{"v1", "v1beta2"} {
			spec, _ := reflect.TypeOf(typeFor(group+"/"+v, kind)).Elem().FieldByName("Spec")
			var walk func(typ reflect.Type, path string)
			walk = func(typ reflect.Type, path string) {
				if _, ok := fieldRules[kind][path]; ok {
					return
				}
				if typ = derefType(typ); typ.Kind() != reflect.Struct {
					t.Errorf("%s %s: %s has no rule in fieldRules", kind, v, path)
					return
				}
				for name, ft := range jsonFields(typ) {
					walk(ft, path+"."+name)
				}
			}
			walk(spec.Type, "spec")
		}
	}
}

// TestIgnoredFieldsAreReported writes every field with a note and checks
// each gets one, at its line.
func TestIgnoredFieldsAreReported(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "f.yaml", `apiVersion: image.toolkit.fluxcd.io/v1
kind: ImageRepository
metadata: {name: app, namespace: apps}
spec:
  image: ghcr.io/acme/app
  interval: 5m
  timeout: 1m
  proxySecretRef: {name: proxy}
  serviceAccountName: puller
  accessFrom: {namespaceSelectors: [{matchLabels: {a: b}}]}
---
apiVersion: source.toolkit.fluxcd.io/v1beta2
kind: GitRepository
metadata: {name: repo, namespace: apps}
spec:
  url: https://git.example.com/fleet.git
  interval: 1m
  gitImplementation: go-git
  ignore: "/*"
  recurseSubmodules: true
  suspend: true
  verify: {mode: head, secretRef: {name: keys}}
  include: [{repository: {name: other}}]
  accessFrom: {namespaceSelectors: []}
  timeout: 1m
status: {}
`)
	set, err := Load(context.Background(), []string{dir}, LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, n := range set.Report.Notes {
		got = append(got, n.Object.Kind+" "+n.Field+":"+itoa(n.Line))
	}
	want := []string{
		"ImageRepository spec.accessFrom:10", "ImageRepository spec.interval:6", "ImageRepository spec.proxySecretRef:8",
		"ImageRepository spec.serviceAccountName:9", "ImageRepository spec.timeout:7",
		"GitRepository spec.accessFrom:24", "GitRepository spec.gitImplementation:18", "GitRepository spec.ignore:19",
		"GitRepository spec.include:23", "GitRepository spec.interval:17", "GitRepository spec.recurseSubmodules:20",
		"GitRepository spec.suspend:21", "GitRepository spec.timeout:25", "GitRepository spec.verify:22",
		"GitRepository status:26",
	}
	if diff := cmp.Diff(got, want, cmpopts.SortSlices(func(a, b string) bool { return a < b })); diff != "" {
		t.Errorf("notes (-got +want):\n%s", diff)
	}
}

// imageRepositoryYAML is the ImageRepository apps/NAME of
// ghcr.io/acme/NAME, followed by extra (more of its spec).
func imageRepositoryYAML(name, extra string) string {
	return `apiVersion: image.toolkit.fluxcd.io/v1
kind: ImageRepository
metadata: {name: ` + name + `, namespace: apps}
spec:
  image: ghcr.io/acme/` + name + `
` + extra
}

// imagePolicyYAML is the ImagePolicy apps/NAME, semver >=1.0.0, of the
// ImageRepository apps/REPO, followed by extra (more of its spec).
func imagePolicyYAML(name, repo, extra string) string {
	return `apiVersion: image.toolkit.fluxcd.io/v1
kind: ImagePolicy
metadata: {name: ` + name + `, namespace: apps}
spec:
  imageRepositoryRef: {name: ` + repo + `}
  policy: {semver: {range: ">=1.0.0"}}
` + extra
}

// appPolicyYAML is the ImagePolicy apps/app of repoYAML's repository, a
// document to append, followed by extra (more of its spec).
func appPolicyYAML(extra string) string {
	return `---
apiVersion: image.toolkit.fluxcd.io/v1
kind: ImagePolicy
metadata: {name: app, namespace: apps}
spec:
  imageRepositoryRef: {name: app}
  policy: {semver: {range: ">=1"}}
` + extra
}

// automationYAML is an ImageUpdateAutomation of the GitRepository
// apps/fleet, followed by extra (more of its spec.git).
func automationYAML(name, extra string) string {
	return `---
apiVersion: image.toolkit.fluxcd.io/v1
kind: ImageUpdateAutomation
metadata: {name: ` + name + `, namespace: apps}
spec:
  interval: 5m
  sourceRef: {kind: GitRepository, name: fleet}
  git:
    commit:
      author: {email: bot@example.com}
` + extra
}

// fleetAutoYAML is the GitRepository apps/fleet on main and its
// automation apps/auto, followed by extra.
func fleetAutoYAML(extra string) string {
	return `---
apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata: {name: fleet, namespace: apps}
spec: {url: "https://git.example.com/fleet.git", interval: 1m, ref: {branch: main}}
` + automationYAML("auto", extra)
}

// TestMappingErrors checks what Native refuses, with the Flux position.
func TestMappingErrors(t *testing.T) {
	policy, automation, auto := appPolicyYAML, automationYAML, fleetAutoYAML
	tests := []struct {
		name, text, want string
	}{
		{"repository in another namespace", strings.Replace(repoYAML, "apps", "flux-system", 1) + policy(""),
			`f.yaml:13: ImagePolicy apps/app: spec.imageRepositoryRef: ImageRepository apps/app is not among the objects read (did you mean "flux-system/app"? the namespace defaults to the referring object's)`},
		{"policy without spec", repoYAML + strings.Replace(policy(""), "spec:\n  imageRepositoryRef: {name: app}\n  policy: {semver: {range: \">=1\"}}\n", "spec: null\n", 1),
			`f.yaml:12: ImagePolicy apps/app: spec.imageRepositoryRef.name: missing: it names the ImageRepository`},
		{"policy without imageRepositoryRef", repoYAML + strings.Replace(policy(""), "  imageRepositoryRef: {name: app}\n", "", 1),
			`f.yaml:12: ImagePolicy apps/app: spec.imageRepositoryRef.name: missing: it names the ImageRepository`},
		{"imageRepositoryRef without name", repoYAML + strings.Replace(policy(""), "{name: app}", "{namespace: apps}", 1),
			`f.yaml:13: ImagePolicy apps/app: spec.imageRepositoryRef.name: missing: it names the ImageRepository`},
		{"tag in image", strings.Replace(repoYAML, "acme/app", "acme/app:1.0", 1) + policy(""),
			`f.yaml:7: ImageRepository apps/app: spec.image: "ghcr.io/acme/app:1.0" is not an image repository without tag or digest`},
		{"a variable in the image", strings.Replace(repoYAML, "acme/app", "acme/${APP}", 1) + policy(""),
			`f.yaml:7: ImageRepository apps/app: spec.image: "ghcr.io/acme/${APP}" is not an image repository without tag or digest (it holds a ${...} variable, which a Flux Kustomization's postBuild substitution would fill in`},
		{"a variable in the range", repoYAML + strings.Replace(policy(""), ">=1", "${RANGE}", 1),
			`f.yaml:14: ImagePolicy apps/app: spec.policy.semver.range: invalid semver range "${RANGE}" (it holds a ${...} variable`},
		{"bad range", repoYAML + strings.Replace(policy(""), ">=1", "not a range", 1),
			`f.yaml:14: ImagePolicy apps/app: spec.policy.semver.range: invalid semver range "not a range"`},
		{"two rules", repoYAML + strings.Replace(policy(""), "{semver: {range: \">=1\"}}", "{semver: {range: \">=1\"}, numerical: {}}", 1),
			`f.yaml:14: ImagePolicy apps/app: spec.policy: set exactly one of semver, alphabetical, numerical (found 2)`},
		{"interval without Always", repoYAML + policy("  interval: 10m\n"),
			`f.yaml:15: ImagePolicy apps/app: spec.interval: only accepted with digestReflectionPolicy: Always (the Kubernetes API server refuses this ImagePolicy)`},
		{"interval with IfNotPresent", repoYAML + policy("  digestReflectionPolicy: IfNotPresent\n  interval: 10m\n"),
			`f.yaml:16: ImagePolicy apps/app: spec.interval: only accepted with digestReflectionPolicy: Always`},
		{"Always without interval", repoYAML + policy("  digestReflectionPolicy: Always\n"),
			`f.yaml:15: ImagePolicy apps/app: spec.digestReflectionPolicy: Always needs an interval`},
		{"extract without pattern", repoYAML + policy("  filterTags: {extract: $v}\n"),
			`f.yaml:15: ImagePolicy apps/app: spec.filterTags.extract: extract needs a pattern`},
		{"checkout on a tag", repoYAML + policy("") + auto("    checkout: {ref: {tag: v1}}\n"),
			`f.yaml:30: ImageUpdateAutomation apps/auto: spec.git.checkout.ref: imagebump commits on a branch`},
		{"ssh signing", repoYAML + policy("") + auto("      signingKey: {type: ssh, secretRef: {name: k}}\n"),
			`f.yaml:30: ImageUpdateAutomation apps/auto: spec.git.commit.signingKey.type: "ssh" signing is not supported yet`},
		{"removed template field", repoYAML + policy("") + auto("      messageTemplate: '{{ range .Updated.Images }}{{ . }}{{ end }}'\n"),
			`f.yaml:30: ImageUpdateAutomation apps/auto: spec.git.commit.messageTemplate: invalid template: the template uses '.Updated', which Flux removed`},
		{"unknown provider", strings.Replace(repoYAML, "  image: ghcr.io/acme/app\n", "  image: ghcr.io/acme/app\n  provider: oci\n", 1) + policy(""),
			`f.yaml:8: ImageRepository apps/app: spec.provider: "oci" is not generic, aws, azure or gcp (the Kubernetes API server refuses it)`},
		{"a cloud provider on another cloud's host", strings.Replace(repoYAML, "  image: ghcr.io/acme/app\n", "  image: ghcr.io/acme/app\n  provider: gcp\n", 1) + policy(""),
			`f.yaml:8: ImageRepository apps/app: spec.provider: provider gcp needs a Google host name (gcr.io, *.gcr.io or *-docker.pkg.dev)`},
		{"a cloud provider over plain HTTP", strings.Replace(repoYAML, "  image: ghcr.io/acme/app\n", "  image: acme.azurecr.io/app\n  provider: azure\n  insecure: true\n", 1) + policy(""),
			`f.yaml:9: ImageRepository apps/app: spec.insecure: provider azure with plain HTTP to acme.azurecr.io`},
		{"no author email", repoYAML + policy("") + strings.Replace(auto(""), "author: {email: bot@example.com}", "author: {name: bot}", 1),
			`f.yaml:29: ImageUpdateAutomation apps/auto: spec.git.commit.author.email: missing: Flux requires the commit author's email`},
		{"no commit", repoYAML + policy("") + strings.Replace(auto("    push: {branch: auto}\n"), "    commit:\n      author: {email: bot@example.com}\n", "", 1),
			`f.yaml:27: ImageUpdateAutomation apps/auto: spec.git.commit.author.email: missing`},
		{"missing source", repoYAML + policy("") + strings.Replace(auto(""), "name: fleet}\n  git", "name: flet}\n  git", 1),
			`f.yaml:26: ImageUpdateAutomation apps/auto: spec.sourceRef: GitRepository apps/flet is not among the objects read (did you mean "apps/fleet"?)`},
		{"automation without sourceRef", repoYAML + policy("") + strings.Replace(auto(""), "  sourceRef: {kind: GitRepository, name: fleet}\n", "", 1),
			`f.yaml:24: ImageUpdateAutomation apps/auto: spec.sourceRef.name: missing: it names the GitRepository to update`},
		{"two automations pushing one branch", repoYAML + policy("") + auto("    push: {branch: auto}\n") + automation("auto2", "    push: {branch: auto}\n"), `f.yaml:41: ImageUpdateAutomation apps/auto2: spec.git.push.branch: "auto" is also the push branch of ImageUpdateAutomation apps/auto (f.yaml:21) on GitRepository apps/fleet: imagebump rebuilds its push branch`},
		{"ssh without secret", repoYAML + policy("") + strings.Replace(auto(""), "https://git.example.com", "ssh://git@git.example.com", 1),
			`f.yaml:19: GitRepository apps/fleet: spec.url: an ssh URL needs a secretRef with identity and known_hosts`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			writeFile(t, dir, "f.yaml", tt.text)
			set, err := Load(context.Background(), []string{dir}, LoadOptions{})
			if err != nil {
				t.Fatal(err)
			}
			_, err = set.Native(NativeOptions{})
			if err == nil {
				t.Fatal("Native succeeded")
			}
			got := strings.ReplaceAll(err.Error(), dir+string(filepath.Separator), "")
			if !strings.HasPrefix(got, tt.want) {
				t.Errorf("error:\n got %s\nwant %s", got, tt.want)
			}
		})
	}
}

func TestRegistryCredentialConflict(t *testing.T) {
	dir := t.TempDir()
	pair := func(name, secret string) string {
		return `---
apiVersion: image.toolkit.fluxcd.io/v1
kind: ImageRepository
metadata: {name: ` + name + `, namespace: apps}
spec: {image: ghcr.io/acme/` + name + `, secretRef: {name: ` + secret + `}}
---
apiVersion: image.toolkit.fluxcd.io/v1
kind: ImagePolicy
metadata: {name: ` + name + `, namespace: apps}
spec: {imageRepositoryRef: {name: ` + name + `}, policy: {alphabetical: {}}}
`
	}
	writeFile(t, dir, "f.yaml", pair("app", "a")+pair("other", "b"))
	set, err := Load(context.Background(), []string{dir}, LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sec := &Secrets{Keys: map[string]map[string]string{"apps/a": {".dockerconfigjson": "/a.json"}, "apps/b": {".dockerconfigjson": "/b.json"}}}
	_, err = set.Native(NativeOptions{Secrets: sec})
	want := "f.yaml:15: ImageRepository apps/other: spec.secretRef: ImageRepository apps/app"
	if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "imagebump has one set per registry host") {
		t.Errorf("err = %v, want a conflict at %s", err, want)
	}
	sec.Keys["apps/b"][".dockerconfigjson"] = "/a.json"
	n, err := set.Native(NativeOptions{Secrets: sec})
	if err != nil {
		t.Fatalf("one file for both Secrets: %v", err)
	}
	if got := n.Config.Registries[0].Auth.DockerConfig; got != "/a.json" {
		t.Errorf("dockerConfig = %q", got)
	}
}

// TestRoundTripFleet turns the fleet into a native config, that into Flux
// objects, reads them back and compares the native configs.
func TestRoundTripFleet(t *testing.T) {
	first := fleetNative(t)
	second := roundTrip(t, first.Config)
	if diff := cmp.Diff(normalize(second), normalize(first.Config), ignoreUnexported); diff != "" {
		t.Errorf("native -> Flux -> native (-got +want):\n%s", diff)
	}
	// And once more: Flux objects written from the second read give the
	// same text.
	e1, err := Export(second)
	if err != nil {
		t.Fatal(err)
	}
	e2, err := Export(roundTrip(t, second))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(e2.YAML), string(e1.YAML)); diff != "" {
		t.Errorf("export is not stable (-got +want):\n%s", diff)
	}
}

// TestRoundTripNative goes the other way: a native config, to Flux, back.
func TestRoundTripNative(t *testing.T) {
	c, err := config.Load("testdata/native.imagebump.yaml")
	if err != nil {
		t.Fatal(err)
	}
	e, err := Export(c)
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "native.flux.yaml", e.YAML)
	var notes []string
	for _, n := range e.Notes {
		notes = append(notes, n.Level.String()+": "+n.Object.Kind+" "+n.Object.Name+": "+n.Msg)
	}
	if diff := cmp.Diff(notes, []string{
		"warning: target prod: Flux opens no pull requests: commits go to push.branch only (a refspec such as refs/heads/BRANCH:refs/for/MAIN opens one on Gitea or Gerrit, push options merge_request.create on GitLab)",
		"info: target tools: applies policies of namespaces apps, tools: a Flux automation applies its own namespace's, so each gets one",
	}); diff != "" {
		t.Errorf("notes (-got +want):\n%s", diff)
	}
	back := roundTrip(t, c)
	want := normalize(c)
	for i := range want.TargetList {
		tg := &want.TargetList[i]
		tg.Push.PullRequest = nil // noted: Flux has none
		if tg.Commit.FluxMessage == nil {
			// A Flux automation commits with Flux's message.
			c := *tg.Commit
			c.FluxMessage = &config.FluxMessage{Automation: "apps/" + tg.Name}
			tg.Commit = &c
		}
	}
	// A target applying two namespaces' policies comes back as two.
	tools := want.TargetList[1]
	tools.Name, tools.Policies = "apps-tools", []string{"apps:worker"}
	tools.Commit = &config.Commit{Author: tools.Commit.Author, FluxMessage: &config.FluxMessage{Automation: "apps/tools", APIVersion: tools.Commit.FluxMessage.APIVersion, Template: tools.Commit.FluxMessage.Template}}
	want.TargetList[1].Name, want.TargetList[1].Policies = "tools-tools", []string{"tools:*"}
	want.TargetList = []config.Target{want.TargetList[0], tools, want.TargetList[1]}
	if diff := cmp.Diff(normalize(back), want, ignoreUnexported); diff != "" {
		t.Errorf("native -> Flux -> native (-got +want):\n%s", diff)
	}
}

// TestExportNotesOnce: a target written as several automations (one per
// namespace and path) has each of its notes said once, not per automation.
func TestExportNotesOnce(t *testing.T) {
	c, err := config.Parse([]byte(`
targets:
  - name: main
    schedule: "0 * * * *"
    git:
      url: https://example.com/fleet.git
      paths: [a, b]
    commit:
      messageTemplate: "bump {{ len .Changes }}"
images:
  - name: apps:web
    repository: ghcr.io/acme/web
    policy: {semver: ">=1"}
  - name: tools:cli
    repository: ghcr.io/acme/cli
    policy: {semver: ">=1"}
`), "imagebump.yaml")
	if err != nil {
		t.Fatal(err)
	}
	e, err := Export(c)
	if err != nil {
		t.Fatal(err)
	}
	var notes []string
	for _, n := range e.Notes {
		notes = append(notes, n.Level.String()+": "+n.Object.Kind+" "+n.Object.Name+": "+n.Msg)
	}
	if diff := cmp.Diff(notes, []string{
		"info: target main: applies policies of namespaces apps, tools: a Flux automation applies its own namespace's, so each gets one",
		`warning: target main: schedule "0 * * * *" is a cron expression, which Flux does not take: the automation runs every 5m`,
		"warning: target main: commit.messageTemplate is written for imagebump's data, which Flux does not give: the automation keeps Flux's default message",
	}); diff != "" {
		t.Errorf("notes (-got +want):\n%s", diff)
	}
	if n := bytes.Count(e.YAML, []byte("kind: ImageUpdateAutomation")); n != 4 {
		t.Errorf("%d automations, want 4 (2 namespaces x 2 paths)", n)
	}
}

var ignoreUnexported = cmpopts.IgnoreUnexported(config.Config{}, config.Image{})

func roundTrip(t *testing.T, c *config.Config) *config.Config {
	t.Helper()
	e, err := Export(c)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	writeFile(t, dir, "flux.yaml", string(e.YAML))
	set, err := Load(context.Background(), []string{dir}, LoadOptions{})
	if err != nil {
		t.Fatalf("reading the exported objects: %v\n%s", err, e.YAML)
	}
	n, err := set.Native(NativeOptions{Secrets: e.Secrets, File: c.File})
	if err != nil {
		t.Fatalf("mapping the exported objects: %v\n%s", err, e.YAML)
	}
	return n.Config
}

// normalize makes configs comparable: positions out, and an exclusion
// list equal to the defaults that replaces them is the defaults.
func normalize(c *config.Config) *config.Config {
	out := *c
	out.File, out.FromFlux = "", false
	out.Images = slices.Clone(c.Images)
	for i := range out.Images {
		im := &out.Images[i]
		im.Line = 0
		if im.ExcludeReplacesDefaults && len(im.Exclude) >= 3 && slices.Equal(im.Exclude[:3], policy.DefaultExclusions()) {
			im.Exclude = im.Exclude[3:]
			im.ExcludeReplacesDefaults = false
		}
		if len(im.Exclude) == 0 {
			im.Exclude = nil
		}
	}
	slices.SortFunc(out.Images, func(a, b config.Image) int { return strings.Compare(a.Name, b.Name) })
	out.Registries = slices.Clone(c.Registries)
	for i := range out.Registries {
		out.Registries[i].Line = 0
	}
	out.TargetList = slices.Clone(c.Targets())
	out.Git, out.Commit, out.Push, out.Schedule = nil, nil, nil, ""
	for i := range out.TargetList {
		tg := &out.TargetList[i]
		tg.Line = 0
		if tg.Push != nil {
			p := *tg.Push
			tg.Push = &p
		}
	}
	return &out
}

func TestSuggestPolicy(t *testing.T) {
	known := []string{"flux-system:podinfo", "apps:podinfo", "apps:minio", "default:web"}
	tests := []struct{ name, want string }{
		{"default:podinfo", `did you mean one of "apps:podinfo", "flux-system:podinfo"? A policy's namespace is part of its name`},
		{"podinfo", `did you mean one of "apps:podinfo", "flux-system:podinfo"? A policy's namespace is part of its name`},
		{"apps:minoi", `did you mean "apps:minio"?`},
		{"staging:minio", `did you mean "apps:minio"? A policy's namespace is part of its name`},
		{"apps:something-else", ""},
		{"wbe", `did you mean "default:web"?`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := SuggestPolicy(tt.name, known); got != tt.want {
				t.Errorf("SuggestPolicy(%q) = %q, want %q", tt.name, got, tt.want)
			}
		})
	}
}

func TestLoadCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Load(ctx, []string{fleet}, LoadOptions{}); !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", err)
	}
}

// TestFleetMessage renders the apps automation's template for a bump of
// the fleet's minio, build and web images, as Flux would write it: file
// names relative to update.path, objects in text/template's key order
// (apiVersion, kind, name, namespace).
func TestFleetMessage(t *testing.T) {
	c := fleetNative(t).Config
	var apps config.Target
	for _, tg := range c.Targets() {
		if tg.Name == "apps" {
			apps = tg
		}
	}
	data := msgtemplate.Data{
		Changes: []msgtemplate.Change{
			{File: "apps/build/cronjob.yaml", Line: 14, Policy: "apps:build", Field: "image", Old: "registry.fleet.test/acme/build:1041", New: "registry.fleet.test/acme/build:1042"},
			{File: "apps/minio/statefulset.yaml", Line: 11, Policy: "apps:minio", Field: "image", Old: "registry.fleet.test/minio/minio:RELEASE.2024-01-31T20-20-33Z", New: "registry.fleet.test/minio/minio:RELEASE.2024-02-09T21-25-16Z"},
			{File: "apps/web/release.yaml", Line: 17, Policy: "apps:web", Field: "tag", Old: "2.1.0", New: "2.1.3"},
		},
	}
	got, err := fluxmsg.Render(MessageInput(apps, data, os.DirFS(fleet)))
	if err != nil {
		t.Fatal(err)
	}
	want := `Automated image update for prod

Automation name: apps/apps

Files:
- build/cronjob.yaml
- minio/statefulset.yaml
- web/release.yaml
Objects:
- StatefulSet minio
  Changes:
    - registry.fleet.test/minio/minio:RELEASE.2024-01-31T20-20-33Z -> registry.fleet.test/minio/minio:RELEASE.2024-02-09T21-25-16Z
- CronJob nightly
  Changes:
    - registry.fleet.test/acme/build:1041 -> registry.fleet.test/acme/build:1042
- HelmRelease web
  Changes:
    - 2.1.0 -> 2.1.3
`
	if diff := cmp.Diff(got, want); diff != "" {
		t.Errorf("message (-got +want):\n%s", diff)
	}
}

// TestProviderAndSecretOnOneHost: one ImageRepository reads a host with a
// cloud provider, another with a Secret: imagebump has one source of
// credentials per host, so the mapping fails, naming both objects and
// the field to drop, in Flux's terms, whichever comes first.
func TestProviderAndSecretOnOneHost(t *testing.T) {
	repo := func(name, spec string) string {
		return `---
apiVersion: image.toolkit.fluxcd.io/v1
kind: ImageRepository
metadata: {name: ` + name + `, namespace: apps}
spec: {image: 123456789012.dkr.ecr.eu-west-1.amazonaws.com/acme/` + name + `, ` + spec + `}
---
apiVersion: image.toolkit.fluxcd.io/v1
kind: ImagePolicy
metadata: {name: ` + name + `, namespace: apps}
spec: {imageRepositoryRef: {name: ` + name + `}, policy: {alphabetical: {}}}
`
	}
	cloud, secret := repo("cloud", "provider: aws"), repo("keyed", "secretRef: {name: pull}")
	for _, tt := range []struct{ name, files, want string }{
		{"provider first", cloud + secret, "ImageRepository apps/keyed: spec.secretRef: Secret apps/pull gives credentials for 123456789012.dkr.ecr.eu-west-1.amazonaws.com, which ImageRepository apps/cloud reads with provider aws"},
		{"secret first", secret + cloud, "ImageRepository apps/cloud: spec.provider: provider aws gives credentials for 123456789012.dkr.ecr.eu-west-1.amazonaws.com, and the Secret of ImageRepository apps/keyed gives others"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			set := loadText(t, tt.files)
			sec := &Secrets{Keys: map[string]map[string]string{"apps/pull": {".dockerconfigjson": "/pull.json"}}}
			_, err := set.Native(NativeOptions{Secrets: sec})
			if err == nil || !strings.Contains(err.Error(), tt.want) || strings.Contains(err.Error(), "native config made from it") {
				t.Errorf("err = %v\nwant it to say %q", err, tt.want)
			}
		})
	}
}

// TestSuspendIsHold: a suspended ImagePolicy, or a policy whose
// ImageRepository is suspended, keeps its pick under Flux, so its markers
// stay: it becomes a held policy (still selected and reported, not an
// unknown one), noted at the suspend's line. A hold exports as suspend and
// comes back as a hold.
func TestSuspendIsHold(t *testing.T) {
	set := loadText(t, strings.Join([]string{
		imageRepositoryYAML("web", ""),
		imageRepositoryYAML("api", "  suspend: true\n"),
		imagePolicyYAML("web", "web", "  suspend: true\n"),
		imagePolicyYAML("api", "api", ""),
		imagePolicyYAML("db", "web", ""),
	}, "---\n"))
	n := mustNative(t, set, NativeOptions{})
	holds := map[string]string{}
	for _, im := range n.Config.Images {
		if im.Hold != nil {
			holds[im.Name] = im.Hold.Reason
		}
	}
	want := map[string]string{
		"apps:web": "ImagePolicy apps/web is suspended in Flux",
		"apps:api": "ImageRepository apps/api is suspended in Flux",
	}
	if diff := cmp.Diff(holds, want); diff != "" {
		t.Errorf("held policies (-got +want):\n%s", diff)
	}
	if len(n.Config.Images) != 3 {
		t.Errorf("%d images, want 3: a suspended policy is held, not left out", len(n.Config.Images))
	}
	var notes []string
	for _, note := range n.Report.Notes {
		if note.Field == "spec.suspend" {
			notes = append(notes, note.Object.Kind+" "+note.Object.Name+":"+itoa(note.Line))
		}
	}
	if diff := cmp.Diff(notes, []string{"ImageRepository api:12", "ImagePolicy web:20"}, cmpopts.SortSlices(func(a, b string) bool { return a < b })); diff != "" {
		t.Errorf("suspend notes (-got +want):\n%s", diff)
	}

	back := roundTrip(t, n.Config)
	for _, im := range back.Images {
		if (im.Hold != nil) != (holds[im.Name] != "") {
			t.Errorf("%s after export and back: hold %v, want held %v", im.Name, im.Hold, holds[im.Name] != "")
		}
	}
}

// TestBadNames: an object name or namespace that is no Kubernetes name (a
// line break that would forge a line of the report, a terminal escape) is
// refused, and shown escaped.
func TestBadNames(t *testing.T) {
	for _, tt := range []struct{ name, text, want string }{
		{"a name with a line break", strings.Replace(repoYAML, "  name: app\n", "  name: \"app\\nImagePolicy forged: ok\"\n", 1),
			`f.yaml:1: ImageRepository apps/app\nImagePolicy forged: ok: metadata.name: "app\nImagePolicy forged: ok" is not a Kubernetes object name`},
		{"a namespace with an escape", strings.Replace(repoYAML, "  namespace: apps\n", "  namespace: \"apps\\e[2J\"\n", 1),
			`f.yaml:1: ImageRepository apps\x1b[2J/app: metadata.namespace: "apps\x1b[2J" is not a namespace name`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			writeFile(t, dir, "f.yaml", tt.text)
			_, err := Load(context.Background(), []string{dir}, LoadOptions{})
			if err == nil || !strings.Contains(strings.ReplaceAll(err.Error(), dir+string(filepath.Separator), ""), tt.want) {
				t.Errorf("Load: %v; want %q", err, tt.want)
			}
			if err != nil && strings.ContainsAny(err.Error(), "\n\x1b") {
				t.Errorf("the error holds a raw control character: %q", err)
			}
		})
	}
}

// TestKustomizeLoadsAsFlux: a kustomization may name a file of another
// folder of its repository, as Flux's kustomize-controller allows (the
// kustomize CLI's default refuses it), but nothing outside the repository,
// directly or through a symbolic link.
func TestKustomizeLoadsAsFlux(t *testing.T) {
	top := t.TempDir()
	repo := filepath.Join(top, "fleet")
	if err := os.MkdirAll(filepath.Join(repo, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	policy := func(name string) string {
		return imageRepositoryYAML(name, "") + "---\n" + imagePolicyYAML(name, name, "")
	}
	writeFile(t, repo, "base/web.yaml", policy("web"))
	writeFile(t, top, "secret.yaml", policy("outside"))
	writeFile(t, repo, "overlay/kustomization.yaml", "resources: [../base/web.yaml]\n")
	set, err := Load(context.Background(), []string{filepath.Join(repo, "overlay")}, LoadOptions{})
	if err != nil {
		t.Fatalf("a kustomization naming a file of another folder: %v", err)
	}
	if len(set.Policies) != 1 || set.Policies[0].Name != "web" {
		t.Errorf("policies %v, want apps/web", set.Policies)
	}

	if err := os.Symlink(filepath.Join(top, "secret.yaml"), filepath.Join(repo, "base/link.yaml")); err != nil {
		t.Fatal(err)
	}
	for name, resource := range map[string]string{
		"outside":      "../../secret.yaml",
		"through link": "../base/link.yaml",
	} {
		t.Run(name, func(t *testing.T) {
			writeFile(t, repo, "overlay/kustomization.yaml", "resources: ["+resource+"]\n")
			_, err := Load(context.Background(), []string{filepath.Join(repo, "overlay")}, LoadOptions{})
			if err == nil || !strings.Contains(err.Error(), "kustomize build failed") || !strings.Contains(err.Error(), "only read files of the repository it is in") {
				t.Fatalf("Load of a kustomization naming %s: %v; want the build refused", resource, err)
			}
		})
	}

	// .git is in the repository, but Flux's sources carry none, and a CI
	// checkout keeps its token in .git/config: a kustomization reading it
	// into a field whose error quotes the value would print the token.
	const token = "c2VjcmV0LXRva2Vu"
	writeFile(t, repo, ".git/config", "[http]\n\textraheader = AUTHORIZATION: basic "+token+"\n")
	if err := os.Symlink(filepath.Join(repo, ".git", "config"), filepath.Join(repo, "base/git-config")); err != nil {
		t.Fatal(err)
	}
	for name, file := range map[string]string{
		"directly":     "../.git/config",
		"through link": "../base/git-config",
	} {
		t.Run(".git "+name, func(t *testing.T) {
			writeFile(t, repo, "overlay/kustomization.yaml", "resources: [../base/web.yaml]\nconfigMapGenerator: [{name: leak, files: [tok="+file+"]}]\n")
			_, err := Load(context.Background(), []string{filepath.Join(repo, "overlay")}, LoadOptions{})
			if err == nil || !strings.Contains(err.Error(), "kustomize build failed") || !strings.Contains(err.Error(), "is in a .git folder") {
				t.Fatalf("Load of a kustomization reading %s: %v; want the build refused", file, err)
			}
			if strings.Contains(err.Error(), token) {
				t.Errorf("the error holds .git/config's token: %v", err)
			}
		})
	}
}

// TestNoBranchIsMaster: a GitRepository without a ref, under an automation
// without a checkout, is checked out at master, as Flux's Git client does,
// whatever the remote's default branch; a warning says so at the
// automation's git.
func TestNoBranchIsMaster(t *testing.T) {
	noRef := strings.Replace(fleetAutoYAML("    push: {branch: auto}\n"), ", ref: {branch: main}", "", 1)
	set := loadText(t, repoYAML+appPolicyYAML("")+noRef)
	n := mustNative(t, set, NativeOptions{})
	tg := n.Config.Targets()
	if len(tg) != 1 || tg[0].Git.Branch != "master" || tg[0].Push.Branch != "auto" {
		t.Fatalf("targets %+v, want one checking out master and pushing auto", tg)
	}
	found := false
	for _, note := range n.Report.Notes {
		if note.Level == Warning && note.Field == "spec.git.checkout" && note.Line == 27 && strings.Contains(note.Msg, "Flux checks out master") {
			found = true
		}
	}
	if !found {
		t.Errorf("no warning at f.yaml:27 that master is checked out: %+v", n.Report.Notes)
	}
}

// TestHostAndNamespaceWarnings: where imagebump does what Flux would not,
// a warning says so at the object: a policy referring to an
// ImageRepository of another namespace that has no accessFrom (Flux
// refuses the reference), and a repository without a Secret on a host
// another repository's Secret gives credentials for (imagebump's
// credentials are per host), whichever comes first.
func TestHostAndNamespaceWarnings(t *testing.T) {
	repo := func(ns, name, extra string) string {
		return "---\napiVersion: image.toolkit.fluxcd.io/v1\nkind: ImageRepository\nmetadata: {name: " + name + ", namespace: " + ns + "}\nspec:\n  image: ghcr.io/acme/" + name + "\n" + extra
	}
	pol := func(ns, name, ref string) string {
		return "---\napiVersion: image.toolkit.fluxcd.io/v1\nkind: ImagePolicy\nmetadata: {name: " + name + ", namespace: " + ns + "}\nspec:\n  imageRepositoryRef: " + ref + "\n  policy: {alphabetical: {}}\n"
	}
	for _, tt := range []struct {
		name, text string
		want       []string // Kind name field, of each warning
	}{
		{"across namespaces without accessFrom",
			repo("shared", "base", "  secretRef: {name: pull}\n") + pol("apps", "base", "{name: base, namespace: shared}"),
			[]string{"ImagePolicy base spec.imageRepositoryRef"}},
		{"across namespaces with accessFrom",
			repo("shared", "base", "  secretRef: {name: pull}\n  accessFrom: {namespaceSelectors: [{matchLabels: {team: apps}}]}\n") + pol("apps", "base", "{name: base, namespace: shared}"),
			nil},
		{"Secret first",
			repo("shared", "a", "  secretRef: {name: pull}\n") + repo("shared", "b", "") + pol("shared", "a", "{name: a}") + pol("shared", "b", "{name: b}"),
			[]string{"ImageRepository b spec.secretRef"}},
		{"Secret last",
			repo("shared", "b", "") + repo("shared", "a", "  secretRef: {name: pull}\n") + pol("shared", "a", "{name: a}") + pol("shared", "b", "{name: b}"),
			[]string{"ImageRepository b spec.secretRef"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			set := loadText(t, tt.text)
			sec := &Secrets{Keys: map[string]map[string]string{"shared/pull": {".dockerconfigjson": "/pull.json"}}}
			n := mustNative(t, set, NativeOptions{Secrets: sec})
			var got []string
			for _, note := range n.Report.Notes {
				if note.Level == Warning && note.Object.Kind != "GitRepository" {
					got = append(got, note.Object.Kind+" "+note.Object.Name+" "+note.Field)
				}
			}
			if diff := cmp.Diff(got, tt.want); diff != "" {
				t.Errorf("warnings (-got +want):\n%s\n%+v", diff, n.Report.Notes)
			}
		})
	}
}

// TestTargetNamespaceWarning: a Flux Kustomization with a targetNamespace
// moves what it applies to that namespace under Flux, not in the files
// imagebump reads: a warning at its line says so.
func TestTargetNamespaceWarning(t *testing.T) {
	set := loadText(t, repoYAML+`---
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: apps, namespace: flux-system}
spec:
  interval: 10m
  path: ./apps
  targetNamespace: team-a
  sourceRef: {kind: GitRepository, name: flux-system}
---
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: infra, namespace: flux-system}
spec:
  path: ./infra
  sourceRef: {kind: GitRepository, name: flux-system}
`)
	var got []string
	for _, n := range set.Report.Notes {
		if n.Field == "spec.targetNamespace" {
			got = append(got, fmt.Sprintf("%s %s:%d %v", n.Object.Name, n.Field, n.Line, strings.Contains(n.Msg, "objects of ./apps in namespace team-a")))
		}
	}
	if diff := cmp.Diff(got, []string{"apps spec.targetNamespace:15 true"}); diff != "" {
		t.Errorf("targetNamespace warnings (-got +want):\n%s", diff)
	}
}

// TestMissingKind: a document with a Flux apiVersion and no kind is an
// error at its line, not an ignored object with no name of a kind.
func TestMissingKind(t *testing.T) {
	dir := t.TempDir()
	f := writeFile(t, dir, "f.yaml", repoYAML+"---\napiVersion: image.toolkit.fluxcd.io/v1\nmetadata: {name: nokind}\nspec: {}\n")
	_, err := Load(context.Background(), []string{dir}, LoadOptions{})
	if err == nil || !strings.Contains(err.Error(), f+":9: ") || !strings.Contains(err.Error(), "kind: missing") {
		t.Errorf("Load error = %v; want the document without a kind at f.yaml:9", err)
	}
}

// TestUnmappedSecretManifest: a Secret that is not mapped, whose manifest
// is among the files read (SOPS-encrypted, or plain), is named with where
// that manifest is and what to do, as imagebump reads no Secret manifest.
func TestUnmappedSecretManifest(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "repos.yaml", strings.Replace(repoYAML, "  image: ghcr.io/acme/app\n", "  image: ghcr.io/acme/app\n  secretRef: {name: pull}\n  certSecretRef: {name: ca}\n", 1)+appPolicyYAML(""))
	pull := writeFile(t, dir, "secrets/pull.yaml", "apiVersion: v1\nkind: Secret\nmetadata: {name: pull, namespace: apps}\ntype: kubernetes.io/dockerconfigjson\ndata:\n  .dockerconfigjson: ENC[AES256_GCM,data:xyz]\nsops:\n  version: 3.8.1\n")
	ca := writeFile(t, dir, "secrets/ca.yaml", "apiVersion: v1\nkind: Secret\nmetadata: {name: ca, namespace: apps}\nstringData:\n  ca.crt: pem\n")
	set, err := Load(context.Background(), []string{dir}, LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n := mustNative(t, set, NativeOptions{})
	want := map[string]string{
		"spec.secretRef":     "Secret apps/pull (its manifest, SOPS-encrypted, is in " + pull + ":1: imagebump reads no Secret manifest; decrypt its keys to files and map those) is not mapped",
		"spec.certSecretRef": "Secret apps/ca (its manifest is in " + ca + ":1: imagebump reads no Secret manifest; write its keys to files and map those) is not mapped",
	}
	for _, note := range n.Report.Notes {
		if w, ok := want[note.Field]; ok && note.Object.Kind == KindImageRepository {
			if !strings.HasPrefix(note.Msg, w) {
				t.Errorf("%s note %q, want it to start %q", note.Field, note.Msg, w)
			}
			delete(want, note.Field)
		}
	}
	if len(want) > 0 {
		t.Errorf("no note for %v", want)
	}
}

// TestChartTemplatesSkipped: a Helm chart's templates, which are not YAML
// until rendered, are not read, even when they mention Flux's API group.
func TestChartTemplatesSkipped(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "policies.yaml", repoYAML)
	writeFile(t, dir, "chart/Chart.yaml", "apiVersion: v2\nname: c\nversion: 1.0.0\n")
	writeFile(t, dir, "chart/templates/policy.yaml", "apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImagePolicy\n{{- if .Values.x }}\nmetadata: {name: {{ .Values.name }}}\n{{- end }}\n")
	set, err := Load(context.Background(), []string{dir}, LoadOptions{})
	if err != nil {
		t.Fatalf("Load read a chart template: %v", err)
	}
	if len(set.Repositories) != 1 {
		t.Errorf("%d repositories, want 1", len(set.Repositories))
	}
}

// TestFileOfAKustomization: a file named alone whose folder a
// kustomization builds is read as written, with a warning saying to pass
// the folder, as its namespace or patches come from the build.
func TestFileOfAKustomization(t *testing.T) {
	dir := t.TempDir()
	f := writeFile(t, dir, "policies.yaml", strings.Replace(repoYAML, "  namespace: apps\n", "", 1))
	k := writeFile(t, dir, "kustomization.yaml", "namespace: apps\nresources: [policies.yaml]\n")
	set, err := Load(context.Background(), []string{f}, LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, n := range set.Report.Notes {
		if n.Level == Warning && n.Object.File == f && strings.Contains(n.Msg, k+" builds its folder") {
			found = true
		}
	}
	if !found {
		t.Errorf("no warning that %s is built by %s: %v", f, k, set.Report.Notes)
	}
}

// TestNativeErrorsInFluxTerms: what the native config made from the
// objects refuses is reported at the object, under the Flux field it came
// from (spec.interval, spec.filterTags.extract), all at once, not under a
// native key such as targets[0].schedule.
func TestNativeErrorsInFluxTerms(t *testing.T) {
	policy := strings.Replace(appPolicyYAML(`  filterTags: {pattern: "^v(?P<x>.*)$", extract: "$y"}
`), `{semver: {range: ">=1"}}`, "{alphabetical: {}}", 1)
	auto := strings.Replace(fleetAutoYAML(""), "interval: 5m", "interval: 500ms", 1)
	set := loadText(t, repoYAML+policy+auto)
	_, err := set.Native(NativeOptions{})
	for _, want := range []string{
		"f.yaml:9: ImagePolicy apps/app: spec.filterTags.extract: invalid template",
		"f.yaml:22: ImageUpdateAutomation apps/auto: spec.interval: invalid schedule \"500ms\"",
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("err = %v\nwant it to say %q", err, want)
		}
	}
	if err != nil && strings.Contains(err.Error(), "native config") {
		t.Errorf("err speaks of the native config: %v", err)
	}
}

// TestMissingPath: a path of Flux objects that does not exist is named,
// with where relative paths are from, and a glob is said not to expand.
func TestMissingPath(t *testing.T) {
	dir := t.TempDir()
	for p, want := range map[string]string{
		filepath.Join(dir, "nope"):   "nope does not exist (a --flux path is relative to the current folder, one in flux.paths to the config's)",
		filepath.Join(dir, "*.yaml"): "globs are not expanded; name the folder",
	} {
		_, err := Load(context.Background(), []string{p}, LoadOptions{})
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Load(%s) = %v, want %q", p, err, want)
		}
	}
}
