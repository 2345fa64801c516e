package commands

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/imagebump/imagebump/internal/testkit/testregistry"
	"github.com/imagebump/imagebump/report"
	"github.com/imagebump/imagebump/setters"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/plan")

// goldenDir holds plan's expected output, with the registry's address
// replaced by REGISTRY.
var goldenDir = filepath.Join("..", "..", "testdata", "plan")

// columnGap matches the padding between table columns.
var columnGap = regexp.MustCompile(` {2,}`)

// demoSetup writes the demo's config and sample repository for a registry at
// host, and returns the config path and the repository path.
func demoSetup(t *testing.T, host string) (cfg, repo string) {
	t.Helper()
	dir := t.TempDir()
	if err := writeDemoFiles(dir, host); err != nil {
		t.Fatal(err)
	}
	return filepath.Join(dir, "imagebump.yaml"), filepath.Join(dir, "repo")
}

// startRealRegistry runs the CNCF distribution registry (Debian's 2.8.2) on
// loopback with the demo's images.
func startRealRegistry(t *testing.T) string {
	t.Helper()
	srv := testregistry.Start(t, testregistry.Options{Version: testregistry.V2})
	if err := pushDemoImages(context.Background(), srv.Host, srv.Transport); err != nil {
		t.Fatal(err)
	}
	return srv.Host
}

func checkGolden(t *testing.T, name, host, got string) {
	t.Helper()
	got = strings.ReplaceAll(got, host, "REGISTRY")
	if strings.HasSuffix(name, ".txt") {
		// Column widths depend on the length of the registry's port.
		got = columnGap.ReplaceAllString(got, "  ")
	}
	path := filepath.Join(goldenDir, name)
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
		t.Errorf("%s mismatch (-got +want):\n%s", name, diff)
	}
}

// TestPlanApplyEndToEnd runs plan, apply and validate against the real
// distribution registry and the demo's sample repository.
func TestPlanApplyEndToEnd(t *testing.T) {
	host := startRealRegistry(t)
	cfg, repo := demoSetup(t, host)
	before, err := snapshot(repo)
	if err != nil {
		t.Fatal(err)
	}

	// plan: text, JSON and diff outputs are golden, and nothing is written.
	out, stderr, code := runMain(t, "plan", "-c", cfg, "--repo", repo)
	if code != 0 {
		t.Fatalf("plan exit %d\n%s\n%s", code, out, stderr)
	}
	checkGolden(t, "demo/plan.txt", host, out)

	// Later runs may serve files from the marker index, depending on how
	// long ago they were written (Git's racy rule): the golden outputs are
	// of runs that read every file.
	out, _, code = runMain(t, "plan", "-c", cfg, "--repo", repo, "-o", "json", "--detailed-exitcode", "--no-cache")
	if code != ExitChanges {
		t.Fatalf("plan --detailed-exitcode with changes: exit %d, want 2", code)
	}
	checkGolden(t, "demo/plan.json", host, out)
	var rep report.Plan
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Changes) == 0 || rep.Applied || len(rep.Policies) != 5 {
		t.Errorf("plan JSON: %d changes, applied=%v, %d policies", len(rep.Changes), rep.Applied, len(rep.Policies))
	}

	diffOut, _, code := runMain(t, "plan", "-c", cfg, "--repo", repo, "-o", "diff")
	if code != 0 {
		t.Fatalf("plan -o diff exit %d", code)
	}
	checkGolden(t, "demo/plan.diff", host, diffOut)

	after, err := snapshot(repo)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(after, before); diff != "" {
		t.Fatalf("plan wrote to the repository:\n%s", diff)
	}

	// The diff applies with git apply on a copy and gives what apply gives.
	copyDir := t.TempDir()
	for name, data := range before {
		writeFile(t, copyDir, name, string(data))
	}
	gitApply(t, copyDir, diffOut)

	out, stderr, code = runMain(t, "apply", "-c", cfg, "--repo", repo, "--no-cache")
	if code != 0 {
		t.Fatalf("apply exit %d\n%s\n%s", code, out, stderr)
	}
	checkGolden(t, "demo/apply.txt", host, out)
	applied, err := snapshot(repo)
	if err != nil {
		t.Fatal(err)
	}
	patched, err := snapshot(copyDir)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(patched, applied); diff != "" {
		t.Errorf("git apply of plan -o diff differs from apply (-git apply +apply):\n%s", diff)
	}

	// Idempotent: a second plan has nothing to do.
	out, _, code = runMain(t, "plan", "-c", cfg, "--repo", repo, "--detailed-exitcode")
	if code != 0 || !strings.Contains(out, "No changes") {
		t.Errorf("second plan: exit %d, want 0 and no changes:\n%s", code, out)
	}

	out, stderr, code = runMain(t, "validate", "-c", cfg, "--repo", repo)
	if code != 0 {
		t.Errorf("validate exit %d\n%s\n%s", code, out, stderr)
	}
}

// TestPlanProblems checks that a failing policy, an unknown marker and a
// broken file are all reported with where they are, while the rest is done.
func TestPlanProblems(t *testing.T) {
	host := startMemRegistry(t)
	dir := t.TempDir()
	cfg := writeFile(t, dir, "imagebump.yaml", `registries:
  - host: `+host+`
    insecure: true
images:
  - name: apps:web
    repository: `+host+`/acme/web
    policy: {semver: ">=1.0.0 <2"}
  - name: apps:gone
    repository: `+host+`/acme/gone
    policy: {semver: ">=1.0.0"}
`)
	repo := filepath.Join(dir, "repo")
	writeFile(t, repo, "ok.yaml", "image: "+host+"/acme/web:1.0.0 # {\"$imagepolicy\": \"apps:web\"}\n")
	writeFile(t, repo, "gone.yaml", "image: "+host+"/acme/gone:1.0.0 # {\"$imagepolicy\": \"apps:gone\"}\n")
	writeFile(t, repo, "unknown.yaml", "a: 1\nimage: x:1 # {\"$imagepolicy\": \"apps:nope\"}\n")
	writeFile(t, repo, "broken.yaml", "a: [\nimage: x:1 # {\"$imagepolicy\": \"apps:web\"}\n")

	out, _, code := runMain(t, "apply", "-c", cfg, "--repo", repo)
	if code != ExitFailure {
		t.Fatalf("apply exit %d, want 1:\n%s", code, out)
	}
	for _, want := range []string{
		"policy apps:gone", "acme/gone",
		"unknown.yaml:2", "apps:nope",
		"broken.yaml",
		"ok.yaml:1",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("apply output does not mention %q:\n%s", want, out)
		}
	}
	got, err := os.ReadFile(filepath.Join(repo, "ok.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if want := "image: " + host + "/acme/web:1.2.0 # {\"$imagepolicy\": \"apps:web\"}\n"; string(got) != want {
		t.Errorf("ok.yaml = %q, want %q: the failures must not stop the others", got, want)
	}
	got, err = os.ReadFile(filepath.Join(repo, "gone.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(got), "acme/gone:1.0.0") {
		t.Errorf("gone.yaml changed although its policy failed: %q", got)
	}

	out, _, code = runMain(t, "plan", "-c", cfg, "--repo", repo, "--detailed-exitcode", "-o", "json")
	if code != ExitFailure {
		t.Errorf("plan --detailed-exitcode with errors: exit %d, want 1", code)
	}
	var rep report.Plan
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	var failed []string
	for _, p := range rep.Policies {
		if p.Error != "" {
			failed = append(failed, p.Name)
		}
	}
	if diff := cmp.Diff(failed, []string{"apps:gone"}); diff != "" {
		t.Errorf("failed policies (-got +want):\n%s", diff)
	}
	if len(rep.Problems) < 2 {
		t.Errorf("problems = %+v, want the unknown marker and the broken file", rep.Problems)
	}
}

func TestValidate(t *testing.T) {
	dir := t.TempDir()
	good := writeFile(t, dir, "good.yaml", `images:
  - name: apps:web
    repository: ghcr.io/acme/web
    policy: {semver: ">=1.0.0"}
  - name: apps:unused
    repository: ghcr.io/acme/unused
    policy: {semver: ">=1.0.0"}
`)
	bad := writeFile(t, dir, "bad.yaml", `images:
  - name: apps:web
    repository: ghcr.io/acme/web
    policy: {semvar: ">=1.0.0"}
`)
	globs := writeFile(t, dir, "globs.yaml", `images:
  - name: apps:web
    repository: ghcr.io/acme/web
    policy: {semver: ">=1.0.0"}
targets:
  - name: prod
    git: {url: "https://example.com/fleet.git"}
    policies: ["app:*", "apps:*"]
`)
	noOwner := writeFile(t, dir, "noowner.yaml", `images:
  - name: apps:web
    repository: ghcr.io/acme/web
    policy: {semver: ">=1.0.0"}
targets:
  - name: tp
    git: {url: "http://git.example.com/fleet.git"}
    push: {branch: imagebump/main, pullRequest: {provider: gitea, tokenFile: token}}
`)
	subPath := writeFile(t, dir, "subpath.yaml", `images:
  - name: apps:web
    repository: ghcr.io/acme/web
    policy: {semver: ">=1.0.0"}
targets:
  - name: tp
    git: {url: "https://git.example.com/git/acme/fleet.git"}
    push: {branch: imagebump/main, pullRequest: {provider: gitea, tokenFile: token}}
`)
	repo := filepath.Join(dir, "repo")
	writeFile(t, repo, "a.yaml", "image: ghcr.io/acme/web:1 # {\"$imagepolicy\": \"apps:web\"}\n")
	badRepo := filepath.Join(dir, "badrepo")
	writeFile(t, badRepo, "a.yaml", "x: 1\nimage: ghcr.io/acme/web:1 # {\"$imagepolicy\": \"apps:wbe\"}\n")
	misspelt := filepath.Join(dir, "misspelt")
	writeFile(t, misspelt, "a.yaml", "x: 1\nimage: ghcr.io/acme/web:1 # {\"$imagePolicy\": \"apps:web\"}\n")
	dockerfile := filepath.Join(dir, "dockerfile")
	writeFile(t, dockerfile, "a.yaml", "image: ghcr.io/acme/web:1 # {\"$imagepolicy\": \"apps:web\"}\n")
	writeFile(t, dockerfile, "Dockerfile", "FROM ghcr.io/acme/web:1 # {\"$imagepolicy\": \"apps:web\"}\n")

	tests := []struct {
		name     string
		args     []string
		wantCode int
		want     []string
	}{
		{name: "config only", args: []string{"validate", "-c", good}, want: []string{"config is valid"}},
		{name: "markers and an unused policy", args: []string{"validate", "-c", good, "--repo", repo}, want: []string{"1 marker", "warning", "apps:unused", "good.yaml:5"}},
		{name: "unknown config key", args: []string{"validate", "-c", bad}, wantCode: ExitUsage, want: []string{"bad.yaml:4", "semvar"}},
		{name: "pull requests on a forge under a sub-path", args: []string{"validate", "-c", subPath}, wantCode: ExitUsage, want: []string{"config read, with problems", "error: " + subPath + `:6: target tp: push.pullRequest: repository path "git/acme/fleet" of git.url is not owner/repo`}},
		{name: "pull requests at a URL with no owner", args: []string{"validate", "-c", noOwner}, wantCode: ExitUsage, want: []string{"config read, with problems", "error: " + noOwner + ":6: target tp: push.pullRequest: git URL http://git.example.com/fleet.git: the path needs an owner and a repository"}},
		{name: "a target glob matching no policy", args: []string{"validate", "-c", globs}, want: []string{"config is valid", `warning: ` + globs + `:6: target prod: policies entry "app:*" matches no image policy`, "such as apps:web"}},
		{name: "marker naming an unknown policy", args: []string{"validate", "-c", good, "--repo", badRepo}, wantCode: ExitUsage, want: []string{"a.yaml:2", "apps:wbe"}},
		// The file lacks the text "$imagepolicy": plan skips it, as Flux.
		{name: "a misspelt marker alone in its file", args: []string{"validate", "-c", good, "--repo", misspelt}, wantCode: ExitUsage, want: []string{"0 markers", `a.yaml:2: malformed marker {"$imagePolicy": "apps:web"}: unknown key "$imagePolicy"`}},
		// Flux reads YAML files alone: a warning, as the mention may be
		// no marker.
		{name: "a marker in a Dockerfile", args: []string{"validate", "-c", good, "--repo", dockerfile}, want: []string{"1 marker in 1 of 1 YAML files", "warning: Dockerfile:1: $imagepolicy is mentioned in a file that is never scanned"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, stderr, code := runMain(t, tt.args...)
			if code != tt.wantCode {
				t.Fatalf("exit %d, want %d\n%s\n%s", code, tt.wantCode, out, stderr)
			}
			for _, w := range tt.want {
				if !strings.Contains(out+stderr, w) {
					t.Errorf("output does not mention %q:\n%s%s", w, out, stderr)
				}
			}
		})
	}
}

// TestValidateMissingFiles: a file the config names that is not there is
// a warning naming its key and path (resolved from the config's folder),
// not an error, as a config may be meant for a pod where the Secret is
// mounted; an env:NAME reference is no file; -o json lists it too.
func TestValidateMissingFiles(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "present.json", `{"auths": {}}`)
	cfg := writeFile(t, dir, "imagebump.yaml", `registries:
  - host: ghcr.io
    auth: {dockerConfig: secrets/missing.json}
  - host: quay.io
    auth: {dockerConfig: present.json}
images:
  - name: apps:web
    repository: ghcr.io/acme/web
    policy: {semver: ">=1.0.0"}
targets:
  - name: prod
    git: {url: "https://example.com/fleet.git", auth: {tokenFile: "env:GIT_TOKEN"}}
`)
	t.Setenv("GIT_TOKEN", "set")
	out, stderr, code := runMain(t, "validate", "-c", cfg)
	want := "warning: " + cfg + ":3: registries[0].auth.dockerConfig: " + filepath.Join(dir, "secrets/missing.json") + " does not exist here"
	if code != 0 || !strings.Contains(out, want) {
		t.Errorf("validate: exit %d, want 0 and %q:\n%s%s", code, want, out, stderr)
	}
	if strings.Count(out, "does not exist here") != 1 {
		t.Errorf("warnings for files that are there, or for env:GIT_TOKEN:\n%s", out)
	}
	out, _, code = runMain(t, "validate", "-c", cfg, "-o", "json")
	var rep ValidateReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil || code != 0 || len(rep.Warnings) != 1 || !strings.Contains(rep.Warnings[0].Message, "registries[0].auth.dockerConfig") {
		t.Errorf("validate -o json: exit %d, warnings %+v (%v)", code, rep.Warnings, err)
	}

	// An env:NAME whose variable is not set here is warned of too
	// (validate passed, and plan failed on it).
	os.Unsetenv("GIT_TOKEN")
	out, _, code = runMain(t, "validate", "-c", cfg)
	if code != 0 || !strings.Contains(out, "warning: "+cfg+":12: targets[0].git.auth.tokenFile is env:GIT_TOKEN, and GIT_TOKEN is not set here: the cycles that read it will fail until it is") {
		t.Errorf("validate with GIT_TOKEN unset: exit %d\n%s", code, out)
	}

	// Keys outside a list entry are named at their own line, where the
	// warning said FILE:0.
	top := writeFile(t, dir, "top.yaml", `images:
  - name: apps:web
    repository: ghcr.io/acme/web
    policy: {semver: ">=1.0.0"}
git: {url: "https://github.com/acme/fleet.git"}
commit:
  author: {name: bot, email: bot@example.com}
  signingKeyFile: missing.asc
push:
  branch: imagebump/main
  pullRequest:
    provider: github
    tokenFile: missing-token
`)
	out, stderr, code = runMain(t, "validate", "-c", top)
	for _, want := range []string{top + ":8: commit.signingKeyFile", top + ":13: push.pullRequest.tokenFile"} {
		if code != 0 || !strings.Contains(out, "warning: "+want) {
			t.Errorf("validate: exit %d, want 0 and a warning at %q:\n%s%s", code, want, out, stderr)
		}
	}

	// A password pasted where its file goes, too short to be refused as
	// one, is not printed as the missing file's name; a registry's dockerConfig, no secret, is.
	pasted := writeFile(t, dir, "pasted.yaml", `registries:
  - host: ghcr.io
    auth: {usernameFile: present.json, passwordFile: Tr0ub4dor3xyzQ}
  - host: quay.io
    auth: {dockerConfig: Config2024}
images:
  - name: apps:web
    repository: ghcr.io/acme/web
    policy: {semver: ">=1.0.0"}
`)
	out, stderr, code = runMain(t, "validate", "-c", pasted)
	if code != 0 || strings.Contains(out+stderr, "Tr0ub4dor") || !strings.Contains(out, pasted+":3: registries[0].auth.passwordFile: [file name not shown") || !strings.Contains(out, filepath.Join(dir, "Config2024")+" does not exist here") {
		t.Errorf("validate: exit %d, want 0, a warning that hides the password and one that names Config2024:\n%s%s", code, out, stderr)
	}
}

// TestValidateProviders: validate says what each registry's provider
// stands for, auto resolved from the host name, and warns of auto on a
// host no cloud serves (no cloud credentials go there).
func TestValidateProviders(t *testing.T) {
	dir := t.TempDir()
	cfg := writeFile(t, dir, "imagebump.yaml", `registries:
  - host: 123456789012.dkr.ecr.eu-west-1.amazonaws.com
    provider: auto
  - host: europe-docker.pkg.dev
    provider: gcp
  - host: registry.example.com
    provider: auto
  - host: ghcr.io
images:
  - name: apps:web
    repository: ghcr.io/acme/web
    policy: {semver: ">=1.0.0"}
`)
	out, stderr, code := runMain(t, "validate", "-c", cfg)
	for _, want := range []string{
		cfg + ":2: registry 123456789012.dkr.ecr.eu-west-1.amazonaws.com: provider auto resolves to aws: credentials from AWS",
		cfg + ":4: registry europe-docker.pkg.dev: provider gcp: credentials from Google",
		"warning: " + cfg + ":6: registry registry.example.com: provider auto resolves to generic",
	} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("validate: exit %d, want 0 and %q:\n%s%s", code, want, out, stderr)
		}
	}
	if strings.Contains(out, "ghcr.io:") {
		t.Errorf("a registry without provider is described:\n%s", out)
	}
	out, _, code = runMain(t, "validate", "-c", cfg, "-o", "json")
	var rep ValidateReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil || code != 0 {
		t.Fatalf("validate -o json: exit %d, %v:\n%s", code, err, out)
	}
	want := []ProviderReport{
		{Host: "123456789012.dkr.ecr.eu-west-1.amazonaws.com", Line: 2, Provider: "auto", Resolved: "aws"},
		{Host: "europe-docker.pkg.dev", Line: 4, Provider: "gcp", Resolved: "gcp"},
		{Host: "registry.example.com", Line: 6, Provider: "auto", Resolved: "generic"},
	}
	if diff := cmp.Diff(rep.Providers, want); diff != "" {
		t.Errorf("providers (-got +want):\n%s", diff)
	}
	if len(rep.Warnings) != 1 || rep.Warnings[0].Line != 6 {
		t.Errorf("warnings: %+v, want the one for auto at line 6", rep.Warnings)
	}
}

// TestValidateKeyFile: a verify.key file that holds no public key (a
// private key, junk) is a problem validate reports at the policy, where it
// said the config was valid and each cycle failed.
func TestValidateKeyFile(t *testing.T) {
	dir := t.TempDir()
	for _, tt := range []struct{ name, content, want string }{
		{"private key", "-----BEGIN EC PRIVATE KEY-----\nMHcCAQEEIA==\n-----END EC PRIVATE KEY-----\n", "never the private key"},
		{"not PEM", "not a key\n", "holds no PEM public key"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			writeFile(t, dir, "cosign.pub", tt.content)
			cfg := writeFile(t, dir, "imagebump.yaml", "images:\n  - name: apps:web\n    repository: ghcr.io/acme/web\n    policy: {semver: \">=1.0.0\"}\n    verify: {key: cosign.pub}\n")
			out, stderr, code := runMain(t, "validate", "-c", cfg)
			if code != ExitUsage || !strings.Contains(out, "error: "+cfg+":2: policy apps:web: verify.key: ") || !strings.Contains(out, tt.want) {
				t.Errorf("validate: exit %d, want 64 and %q at the policy:\n%s%s", code, tt.want, out, stderr)
			}
		})
	}
}

func TestDemo(t *testing.T) {
	cache := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", cache)
	var out bytes.Buffer
	if err := runDemo(context.Background(), &DemoOptions{}, &out); err != nil {
		t.Fatalf("demo: %v\n%s", err, out.String())
	}
	// plan's marker index went with the sample, not to the user's cache.
	if got, _ := filepath.Glob(filepath.Join(cache, "imagebump", "*")); len(got) > 0 {
		t.Errorf("the demo left %v in the user's cache folder", got)
	}
	for _, want := range []string{
		"picked RELEASE.2024-03-01T08-30-00Z",
		"+  tag: 2.3.4 # {\"$imagepolicy\": \"apps:api:tag\"}",
		"+    newTag: \"100\" # {\"$imagepolicy\": \"apps:cache:tag\"}",
		"No changes: every marked field is current.",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("demo output does not contain %q", want)
		}
	}
}

func TestPlanFlags(t *testing.T) {
	tests := []struct {
		name     string
		args     []string
		want     PlanOptions
		wantCode int
	}{
		{name: "plan json detailed", args: []string{"plan", "--repo", "r", "-o", "json", "--detailed-exitcode"}, want: PlanOptions{Repo: "r", Output: "json", DetailedExitcode: true}},
		{name: "plan diff target", args: []string{"plan", "--repo", "r", "-o", "diff", "--target", "prod"}, want: PlanOptions{Repo: "r", Output: "diff", Target: "prod"}},
		{name: "plan bad output", args: []string{"plan", "-o", "yaml"}, wantCode: ExitUsage},
		{name: "apply writes", args: []string{"apply", "--repo", "r"}, want: PlanOptions{Repo: "r", Output: "text", Write: true}},
		{name: "apply has no diff output", args: []string{"apply", "--repo", "r", "-o", "diff"}, wantCode: ExitUsage},
		{name: "apply has no detailed exit code", args: []string{"apply", "--detailed-exitcode"}, wantCode: ExitUsage},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got *PlanOptions
			capture := func(_ context.Context, o *PlanOptions, _ io.Writer) error { got = o; return nil }
			root := NewCmdRoot(io.Discard, io.Discard)
			for _, c := range root.Commands() {
				if c.Name() == "plan" || c.Name() == "apply" {
					root.RemoveCommand(c)
				}
			}
			g := &globalOptions{}
			root.AddCommand(NewCmdPlan(g, io.Discard, capture), NewCmdApply(g, io.Discard, capture))
			root.SetArgs(tt.args)
			code := exitCode(root.Execute())
			if code != tt.wantCode {
				t.Fatalf("exit code %d, want %d", code, tt.wantCode)
			}
			if code != 0 {
				return
			}
			got.global = nil
			if diff := cmp.Diff(*got, tt.want, cmp.AllowUnexported(PlanOptions{})); diff != "" {
				t.Errorf("options (-got +want):\n%s", diff)
			}
		})
	}
}

func gitApply(t *testing.T, dir, patch string) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		// git is part of the test setup (./scripts/test.sh installs it).
		t.Fatal("git is not installed: install the Debian package git, or run ./scripts/test.sh")
	}
	cmd := exec.Command("git", "apply", "--whitespace=nowarn", "-")
	cmd.Dir = dir
	cmd.Stdin = strings.NewReader(patch)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git apply: %v\n%s\npatch:\n%s", err, out, patch)
	}
}

// TestPlanJSONWhenItStops: plan -o json that stops before it has a
// result (a config it cannot load, a clone that fails) prints the
// document with the error, where a JSON reader got nothing.
func TestPlanJSONWhenItStops(t *testing.T) {
	dir := t.TempDir()
	bad := writeFile(t, dir, "bad.yaml", "images: [{name: apps:web}]\n")
	noRepo := writeFile(t, dir, "norepo.yaml", `images:
  - {name: apps:web, repository: ghcr.io/acme/web, policy: {semver: ">=1.0.0"}}
git: {url: "file://`+filepath.Join(dir, "missing.git")+`", branch: main}
`)
	for _, c := range []struct {
		name     string
		args     []string
		wantCode int
		want     string
	}{
		{"a config it cannot load", []string{"plan", "-c", bad, "-o", "json", "--repo", dir}, ExitUsage, "bad.yaml:1"},
		{"a clone that fails", []string{"plan", "-c", noRepo, "-o", "json", "--detailed-exitcode"}, ExitFailure, "missing.git"},
	} {
		t.Run(c.name, func(t *testing.T) {
			out, stderr, code := runMain(t, c.args...)
			var doc report.Plan
			if err := json.Unmarshal([]byte(out), &doc); err != nil || code != c.wantCode || !strings.Contains(doc.Error, c.want) || doc.Version != 1 || doc.Changes == nil {
				t.Errorf("exit %d (want %d), document %+v (%v); want one whose error says %q\nstdout: %s\nstderr: %s", code, c.wantCode, doc, err, c.want, out, stderr)
			}
			if !strings.Contains(stderr, c.want) {
				t.Errorf("stderr lacks the error: %s", stderr)
			}
		})
	}
}

// TestJSONConfigProblems: a refused config's problems are in plan's,
// apply's and run's documents one by one, with file, line and column, as
// validate -o json gives them (they came as one joined error string); so
// are a Flux object's. A failure that is no config problem adds none.
func TestJSONConfigProblems(t *testing.T) {
	dir := t.TempDir()
	bad := writeFile(t, dir, "bad.yaml", `images:
  - name: apps:web
    repository: localhost:99999/web
    policy: {semver: ">=1"}
  - name: apps:api
    repository: ghcr.io/acme/api
    policy: {semverr: ">=1"}
`)
	fluxDir := filepath.Join(dir, "flux")
	writeFile(t, fluxDir, "policy.yaml", "apiVersion: image.toolkit.fluxcd.io/v1beta2\nkind: ImagePolcy\nmetadata: {name: web}\n")
	repo := t.TempDir()
	want := []report.Problem{
		{File: bad, Line: 3, Column: 17},
		{File: bad, Line: 7, Column: 14},
	}
	type doc struct {
		Error    string           `json:"error"`
		Problems []report.Problem `json:"problems"`
	}
	check := func(t *testing.T, args []string, want []report.Problem) {
		t.Helper()
		out, stderr, code := runMain(t, args...)
		var d doc
		if err := json.Unmarshal([]byte(out), &d); err != nil || code != ExitUsage || d.Error == "" {
			t.Fatalf("exit %d, document %q (%v)\n%s", code, out, err, stderr)
		}
		if len(d.Problems) != len(want) {
			t.Fatalf("problems %+v, want %d", d.Problems, len(want))
		}
		for i, p := range d.Problems {
			w := want[i]
			if p.File != w.File || p.Line != w.Line || p.Column != w.Column || !strings.HasPrefix(p.Message, fmt.Sprintf("%s:%d", w.File, w.Line)) {
				t.Errorf("problem %d is %+v, want %s:%d:%d", i, p, w.File, w.Line, w.Column)
			}
		}
	}
	for _, args := range [][]string{
		{"plan", "-c", bad, "--repo", repo, "-o", "json"},
		{"apply", "-c", bad, "--repo", repo, "-o", "json"},
		{"run", "-c", bad, "-o", "json"},
	} {
		t.Run(args[0], func(t *testing.T) { check(t, args, want) })
	}
	t.Run("flux", func(t *testing.T) {
		check(t, []string{"plan", "--flux", fluxDir, "--repo", repo, "-o", "json"}, []report.Problem{{File: filepath.Join(fluxDir, "policy.yaml"), Line: 1}})
	})
	t.Run("not a config problem", func(t *testing.T) {
		out, _, code := runMain(t, "plan", "-c", bad+".missing", "--repo", repo, "-o", "json")
		var d doc
		if err := json.Unmarshal([]byte(out), &d); err != nil || code != ExitUsage || d.Error == "" || len(d.Problems) != 0 {
			t.Errorf("exit %d, document %s (%v); want an error and no problems", code, out, err)
		}
	})
}

// TestPlanDiffInGitTree: with --repo a folder inside a Git working tree,
// plan -o diff writes paths from the tree's top, as git diff does, so that
// git apply takes the patch from the top or from the folder (with paths
// from the folder, it failed from the top and, from the folder, skipped
// every file without a word); once applied, the empty diff is said to be
// empty on stderr, as git apply refuses it.
func TestPlanDiffInGitTree(t *testing.T) {
	host := startMemRegistry(t)
	cfg, demo := demoSetup(t, host)
	top := t.TempDir()
	sub := filepath.Join(top, "fleet")
	if err := os.CopyFS(sub, os.DirFS(demo)); err != nil {
		t.Fatal(err)
	}
	git := func(dir string, stdin string, args ...string) error {
		cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@example.invalid"}, args...)...)
		cmd.Dir, cmd.Stdin = dir, strings.NewReader(stdin)
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("git %v in %s: %v\n%s", args, dir, err, out)
		}
		return nil
	}
	for _, args := range [][]string{{"init", "-q"}, {"add", "-A"}, {"commit", "-q", "-m", "fleet"}} {
		if err := git(top, "", args...); err != nil {
			t.Fatal(err)
		}
	}
	plan := func() (string, string, int) {
		return runMain(t, "plan", "-c", cfg, "--repo", sub, "-o", "diff", "--no-cache")
	}
	diffOut, stderr, code := plan()
	if code != 0 || !strings.Contains(diffOut, "--- a/fleet/clusters/prod/web.yaml\n+++ b/fleet/clusters/prod/web.yaml\n") {
		t.Fatalf("plan -o diff: exit %d, want paths from the Git tree's top:\n%s%s", code, diffOut, stderr)
	}
	for _, dir := range []string{top, sub} {
		if err := git(dir, diffOut, "apply", "--check", "-"); err != nil {
			t.Errorf("the patch does not apply from %s: %v", dir, err)
		}
	}
	if err := git(sub, diffOut, "apply", "-"); err != nil {
		t.Fatal(err)
	}
	diffOut, stderr, code = plan()
	if code != 0 || diffOut != "" || !strings.Contains(stderr, "nothing would change: the diff is empty") {
		t.Errorf("plan -o diff once applied: exit %d, stdout %q, stderr %q; want nothing, and the empty diff said so", code, diffOut, stderr)
	}
}

// TestPlanDetailedExitCodesAndMarkdown checks the four answers of
// --detailed-exitcode and the Markdown table, whose cells must not let a
// file name break out of its code span or its cell.
func TestPlanDetailedExitCodesAndMarkdown(t *testing.T) {
	host := startMemRegistry(t)
	dir := t.TempDir()
	cfg := writeFile(t, dir, "imagebump.yaml", "registries:\n  - {host: \""+host+"\", insecure: true}\nimages:\n  - {name: apps:web, repository: "+host+"/acme/web, policy: {semver: \">=1.0.0 <2\"}}\n")
	marker := func(tag string) string {
		return "image: " + host + "/acme/web:" + tag + " # {\"$imagepolicy\": \"apps:web\"}\n"
	}
	for _, tt := range []struct {
		name  string
		files map[string]string
		want  int
	}{
		{"nothing", map[string]string{"a.yaml": marker("1.2.0")}, ExitOK},
		{"changes", map[string]string{"a.yaml": marker("1.0.0")}, ExitChanges},
		{"problems", map[string]string{"a.yaml": marker("1.2.0"), "b.yaml": "x: 1 # {\"$imagepolicy\": \"apps:nope\"}\n"}, ExitFailure},
		{"changes and problems", map[string]string{"a.yaml": marker("1.0.0"), "b.yaml": "x: 1 # {\"$imagepolicy\": \"apps:nope\"}\n"}, ExitFailure},
	} {
		t.Run(tt.name, func(t *testing.T) {
			repo := t.TempDir()
			for name, content := range tt.files {
				writeFile(t, repo, name, content)
			}
			out, stderr, code := runMain(t, "plan", "-c", cfg, "--repo", repo, "--detailed-exitcode")
			if code != tt.want {
				t.Errorf("exit %d, want %d\n%s\n%s", code, tt.want, out, stderr)
			}
		})
	}

	repo := t.TempDir()
	writeFile(t, repo, "a|b`c.yaml", marker("1.0.0"))
	out, _, code := runMain(t, "plan", "-c", cfg, "--repo", repo, "-o", "markdown")
	if code != 0 {
		t.Fatalf("plan -o markdown: exit %d\n%s", code, out)
	}
	for _, want := range []string{
		"### imagebump plan: 1 change in 1 file, 0 problems",
		"| ``a\\|b`c.yaml`` | 1 | `apps:web` | `" + host + "/acme/web:1.0.0` | `" + host + "/acme/web:1.2.0` |",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("markdown lacks %q:\n%s", want, out)
		}
	}
}

// TestPlanCache runs plan and apply over a checkout whose files are older
// than the racy window: the first run reads every file and keeps the
// marker index in the cache folder, the next read only the files they
// must (none for a plan, the changed ones for an apply, and none after
// it), and --no-cache reads every file. Each run reports the same
// changes.
func TestPlanCache(t *testing.T) {
	host := startMemRegistry(t)
	cfg, repo := demoSetup(t, host)
	cache := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", cache)
	// Git's racy rule: a file written within two seconds of a scan is
	// read again by the next one.
	time.Sleep(2100 * time.Millisecond)
	plan := func(args ...string) report.Plan {
		t.Helper()
		out, stderr, code := runMain(t, append([]string{"-c", cfg, "--repo", repo, "-o", "json"}, args...)...)
		if code != 0 {
			t.Fatalf("%v: exit %d\n%s\n%s", args, code, out, stderr)
		}
		var rep report.Plan
		if err := json.Unmarshal([]byte(out), &rep); err != nil {
			t.Fatal(err)
		}
		return rep
	}
	files := func(rep report.Plan) [3]int { return [3]int{rep.Files.Scanned, rep.Files.Read, rep.Files.Cached} }

	cold := plan("plan")
	if n := cold.Files.Scanned; n == 0 || files(cold) != [3]int{n, n, 0} {
		t.Fatalf("cold plan: files %v, want every file read", files(cold))
	}
	if got, _ := filepath.Glob(filepath.Join(cache, "imagebump", "markers", "*")); len(got) != 1 {
		t.Errorf("index files in the cache folder: %v, want one", got)
	}
	n := cold.Files.Scanned
	warm := plan("plan")
	if files(warm) != [3]int{n, len(warm.Files.Changed), n - len(warm.Files.Changed)} {
		t.Errorf("warm plan: files %v, want only the %d files that change read", files(warm), len(warm.Files.Changed))
	}
	if diff := cmp.Diff(warm.Changes, cold.Changes); diff != "" {
		t.Errorf("warm plan changes differ (-warm +cold):\n%s", diff)
	}
	if nc := plan("plan", "--no-cache"); files(nc) != [3]int{n, n, 0} || !cmp.Equal(nc.Changes, cold.Changes) {
		t.Errorf("plan --no-cache: files %v, want every file read, and the same changes", files(nc))
	}
	applied := plan("apply")
	if diff := cmp.Diff(applied.Changes, cold.Changes); diff != "" {
		t.Errorf("apply changes differ from the plan's (-apply +plan):\n%s", diff)
	}
	// The files apply wrote are racy; the others are served.
	time.Sleep(2100 * time.Millisecond)
	after := plan("plan")
	if len(after.Changes) != 0 || after.Files.Read != len(applied.Files.Changed) {
		t.Errorf("plan after apply: %d changes, files %v; want none, and the %d files apply wrote read again", len(after.Changes), files(after), len(applied.Files.Changed))
	}
	if again := plan("plan"); again.Files.Read != 0 || len(again.Changes) != 0 {
		t.Errorf("plan again: files %v, %d changes; want nothing read", files(again), len(again.Changes))
	}
}

// TestPlanCachePerPaths: plans of two targets with other paths on one
// checkout keep an index file each, so that neither rebuilds the
// other's: the second plan of a target reads only the files whose picks
// move.
func TestPlanCachePerPaths(t *testing.T) {
	host := startMemRegistry(t)
	cfg, repo := demoSetup(t, host)
	f, err := os.OpenFile(cfg, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.WriteString("targets:\n" +
		"  - {name: clusters, git: {url: https://git.example/fleet.git, branch: main, paths: [clusters]}}\n" +
		"  - {name: charts, git: {url: https://git.example/fleet.git, branch: main, paths: [charts]}}\n")
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	// A file in each target's paths that no pick changes: only those are
	// served from the index.
	for _, p := range []string{"clusters/prod/settings.yaml", "charts/api/settings.yaml"} {
		if err := os.WriteFile(filepath.Join(repo, filepath.FromSlash(p)), []byte("kind: ConfigMap\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cache := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", cache)
	time.Sleep(2100 * time.Millisecond) // out of the racy window
	plan := func(target string) report.Plan {
		t.Helper()
		out, stderr, code := runMain(t, "-c", cfg, "plan", "--repo", repo, "--target", target, "-o", "json")
		if code != 0 {
			t.Fatalf("plan --target %s: exit %d\n%s\n%s", target, code, out, stderr)
		}
		var rep report.Plan
		if err := json.Unmarshal([]byte(out), &rep); err != nil {
			t.Fatal(err)
		}
		return rep
	}
	for _, target := range []string{"clusters", "charts"} {
		if rep := plan(target); rep.Files.Read != rep.Files.Scanned || rep.Files.Scanned == 0 {
			t.Fatalf("first plan of %s: files %+v, want every file read", target, rep.Files)
		}
	}
	if got, _ := filepath.Glob(filepath.Join(cache, "imagebump", "markers", "*")); len(got) != 2 {
		t.Errorf("index files in the cache folder: %v, want one per target", got)
	}
	for _, target := range []string{"clusters", "charts"} {
		if rep := plan(target); rep.Files.Read != len(rep.Files.Changed) || rep.Files.Cached == 0 {
			t.Errorf("second plan of %s: files %+v, want only the %d files that change read", target, rep.Files, len(rep.Files.Changed))
		}
	}
}

// TestJSONOnUsageErrors: run and tags with -o json print their document,
// empty but for the error, when they refuse the config or the argument
// (exit 64), as plan, apply and validate do: a CI step piping them to jq
// got nothing to parse.
func TestJSONOnUsageErrors(t *testing.T) {
	dir := t.TempDir()
	bad := writeFile(t, dir, "bad.yaml", "images:\n  - {name: apps:web, repository: ghcr.io/acme/web, policy: {semver: \"not a range\"}}\n")
	good := writeFile(t, dir, "good.yaml", "images:\n  - {name: apps:web, repository: ghcr.io/acme/web, policy: {semver: \">=1\"}}\ngit: {url: \"https://example.com/fleet.git\"}\n")
	for _, tt := range []struct {
		name string
		args []string
		want string // in the document's error
	}{
		{"run, a bad config", []string{"run", "-c", bad, "-o", "json"}, "bad.yaml:2"},
		{"run, no such target", []string{"run", "-c", good, "--target", "nope", "-o", "json"}, "nope"},
		{"tags, a bad config", []string{"tags", "apps:web", "-c", bad, "-o", "json"}, "bad.yaml:2"},
		{"tags, a bad rule", []string{"tags", "ghcr.io/acme/web", "--semver", "not a range", "-o", "json"}, "not a range"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			out, stderr, code := runMain(t, tt.args...)
			if code != ExitUsage {
				t.Fatalf("exit %d, want %d\n%s", code, ExitUsage, stderr)
			}
			var doc struct {
				Error string `json:"error"`
			}
			if err := json.Unmarshal([]byte(out), &doc); err != nil {
				t.Fatalf("stdout is no JSON document (%v): %q", err, out)
			}
			if !strings.Contains(doc.Error, tt.want) {
				t.Errorf("error %q lacks %q", doc.Error, tt.want)
			}
		})
	}
}

// TestPlanJSONInterrupted: plan -o json stopped by a signal says which in
// its document's error, as on stderr, where it said "context canceled".
func TestPlanJSONInterrupted(t *testing.T) {
	host := startMemRegistry(t)
	dir := t.TempDir()
	cfg := writeFile(t, dir, "imagebump.yaml", "registries:\n  - {host: \""+host+"\", insecure: true}\nimages:\n  - {name: apps:web, repository: "+host+"/acme/web, policy: {semver: \">=1.0.0 <2\"}}\n")
	repo := t.TempDir()
	writeFile(t, repo, "a.yaml", "image: "+host+"/acme/web:1.0.0 # {\"$imagepolicy\": \"apps:web\"}\n")
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(&InterruptedError{Signal: os.Interrupt})
	var out, errb bytes.Buffer
	code := Main(ctx, []string{"plan", "-c", cfg, "--repo", repo, "-o", "json", "--no-cache"}, &out, &errb)
	var doc struct {
		Error string `json:"error"`
	}
	if err := json.Unmarshal(out.Bytes(), &doc); err != nil {
		t.Fatalf("exit %d, stdout is no JSON document (%v): %q\n%s", code, err, out.String(), errb.String())
	}
	if code != ExitFailure || !strings.Contains(doc.Error, "interrupted by SIGINT") {
		t.Errorf("exit %d, error %q; want exit 1 and the signal named\n%s", code, doc.Error, errb.String())
	}
}

// TestPlanInterruptedDuringClone: plan stopped by a signal while it clones
// the target's repository from a server that never answers names the
// signal once, where it said "interrupted by SIGINT (Get ...: interrupted
// by SIGINT)": net/http returned the cause, and gitwriter put "context
// canceled" before it, which the signal's name then replaced too.
func TestPlanInterruptedDuringClone(t *testing.T) {
	host, accepted := silentServer(t)
	cfg := writeFile(t, t.TempDir(), "imagebump.yaml", "images:\n  - {name: apps:web, repository: ghcr.io/acme/web, policy: {semver: \">=1\"}}\ngit: {url: \"http://"+host+"/fleet.git\", branch: main}\n")
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	var out, errb bytes.Buffer
	done := make(chan int, 1)
	go func() { done <- Main(ctx, []string{"plan", "-c", cfg, "--no-cache"}, &out, &errb) }()
	select {
	case <-accepted:
	case <-time.After(30 * time.Second):
		t.Fatal("plan never reached the git server")
	}
	cancel(&InterruptedError{Signal: os.Interrupt})
	var code int
	select {
	case code = <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("plan did not stop within 30s of the signal")
	}
	if n := strings.Count(errb.String(), "interrupted by SIGINT"); code != ExitFailure || n != 1 || strings.Contains(errb.String(), "context canceled") {
		t.Errorf("exit %d, the signal named %d times, want exit 1 and once; stderr:\n%s", code, n, errb.String())
	}
}

// TestPathFlagErrors: --repo and --workdir naming a missing folder or a
// file say which, and what to name (exit 64); --workdir on a file failed
// each target's cycle with "mkdir: not a directory" (exit 1).
func TestPathFlagErrors(t *testing.T) {
	dir := t.TempDir()
	cfg := writeFile(t, dir, "imagebump.yaml", "images:\n  - {name: apps:web, repository: ghcr.io/acme/web, policy: {semver: \">=1\"}}\ngit: {url: \"file:///nonexistent.git\"}\n")
	file := writeFile(t, dir, "file", "")
	missing := filepath.Join(dir, "missing")
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"plan", "-c", cfg, "--repo", missing}, "--repo " + missing + " does not exist"},
		{[]string{"plan", "-c", cfg, "--repo", file}, "--repo " + file + " is a file, not a folder"},
		{[]string{"apply", "-c", cfg, "--repo", file}, "--repo " + file + " is a file, not a folder"},
		{[]string{"run", "-c", cfg, "--workdir", file}, "--workdir " + file + " is a file, not a folder"},
		{[]string{"run", "-c", cfg, "--workdir", filepath.Join(file, "sub")}, "--workdir " + filepath.Join(file, "sub") + " cannot be made"},
		{[]string{"validate", "-c", cfg, "--repo", missing}, "--repo " + missing + " does not exist"},
		{[]string{"validate", "-c", cfg, "--repo", file}, "--repo " + file + " is a file, not a folder"},
		{[]string{"init", "--repo", file}, "--repo " + file + " is a file, not a folder"},
	} {
		_, stderr, code := runMain(t, tt.args...)
		if code != ExitUsage || !strings.Contains(stderr, tt.want) {
			t.Errorf("%v: exit %d, %q; want exit 64 and %q", tt.args, code, stderr, tt.want)
		}
	}
}

// TestUnwrittenNote: files another writer changed while apply edited them
// (two applies at once) were said to be unwritable, with advice to free
// space; they are said to have changed, and what was unwritable still is.
func TestUnwrittenNote(t *testing.T) {
	full := setters.Problem{File: "a.yaml", Err: &setters.WriteError{Err: errors.New("no space left on device")}}
	changed := setters.Problem{File: "b.yaml", Err: &setters.WriteError{Err: setters.ErrChanged}}
	for _, tt := range []struct {
		name     string
		problems []setters.Problem
		want     []string
		not      []string
	}{
		{"unwritable", []setters.Problem{full}, []string{"1 file could not be written", "free space"}, []string{"changed on disk"}},
		{"changed", []setters.Problem{changed, changed}, []string{"2 files changed on disk while apply edited them", "were left as the other writer left them"}, []string{"free space"}},
		{"both", []setters.Problem{full, changed}, []string{"1 file could not be written", "1 file changed on disk while apply edited it"}, nil},
	} {
		got := unwrittenNote(tt.problems)
		for _, w := range tt.want {
			if !strings.Contains(got, w) {
				t.Errorf("%s: %q lacks %q", tt.name, got, w)
			}
		}
		for _, w := range tt.not {
			if strings.Contains(got, w) {
				t.Errorf("%s: %q says %q", tt.name, got, w)
			}
		}
	}
}

// TestNoChangesWithoutPolicies: with every marker naming a policy the
// config lacks, plan said "every marked field is current", when none was
// compared with anything.
func TestNoChangesWithoutPolicies(t *testing.T) {
	dir := t.TempDir()
	cfg := writeFile(t, dir, "imagebump.yaml", "images: []\n")
	writeFile(t, dir, "repo/a.yaml", "image: ghcr.io/a/b:1.0 # {\"$imagepolicy\": \"apps:b\"}\n")
	out, _, code := runMain(t, "plan", "-c", cfg, "--repo", filepath.Join(dir, "repo"))
	if code != ExitFailure || strings.Contains(out, "current") || !strings.Contains(out, "no marker names a policy that could be asked") {
		t.Errorf("exit %d:\n%s", code, out)
	}
}

// TestPlanIndexSlotIsAFolder: a folder where the index file goes made
// every run warn "make the folder ... writable", which it was; the
// warning now names the folder as what to remove.
func TestPlanIndexSlotIsAFolder(t *testing.T) {
	host := startMemRegistry(t)
	cfg, repo := demoSetup(t, host)
	cache := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", cache)
	if _, _, code := runMain(t, "plan", "-c", cfg, "--repo", repo); code != 0 {
		t.Fatalf("plan: exit %d", code)
	}
	slots, _ := filepath.Glob(filepath.Join(cache, "imagebump", "markers", "*"))
	if len(slots) != 1 {
		t.Fatalf("index files: %v, want one", slots)
	}
	if err := os.Remove(slots[0]); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(slots[0], 0o755); err != nil {
		t.Fatal(err)
	}
	_, stderr, code := runMain(t, "plan", "-c", cfg, "--repo", repo)
	if code != 0 || !strings.Contains(stderr, "a folder stands where the index file goes: remove it") {
		t.Errorf("exit %d, stderr:\n%s", code, stderr)
	}
}
