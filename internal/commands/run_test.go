package commands

import (
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/imagebump/imagebump/cycle"
	"github.com/imagebump/imagebump/internal/testkit/testgit"
	"github.com/imagebump/imagebump/pullrequest"
	"github.com/imagebump/imagebump/report"
	"github.com/imagebump/imagebump/setters"
)

// demoRepoFiles returns the demo's sample repository with REGISTRY replaced
// by host, as testgit.NewBare wants it.
func demoRepoFiles(t *testing.T, host string) map[string]string {
	t.Helper()
	files := map[string]string{}
	err := fs.WalkDir(demoFiles, "demo/repo", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := demoFiles.ReadFile(p)
		if err != nil {
			return err
		}
		files[strings.TrimPrefix(p, "demo/repo/")] = strings.ReplaceAll(string(data), "REGISTRY", host)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// runConfig writes a config for the demo images whose git section is
// gitYAML (indented two spaces under git:) plus extra top-level YAML.
func runConfig(t *testing.T, dir, host, gitYAML, extra string) string {
	t.Helper()
	data, err := demoFiles.ReadFile("demo/imagebump.yaml")
	if err != nil {
		t.Fatal(err)
	}
	cfg := strings.ReplaceAll(string(data), "REGISTRY", host) + "\ngit:\n" + gitYAML + extra
	return writeFile(t, dir, "imagebump.yaml", cfg)
}

func decodeRun(t *testing.T, out string) report.Run {
	t.Helper()
	var rep report.Run
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("run output is not JSON: %v\n%s", err, out)
	}
	return rep
}

// TestRunEndToEnd runs full cycles against a real Git server (git
// http-backend with basic auth) and a registry: the first run commits and
// pushes every bump, the second changes nothing, and the password appears
// nowhere.
func TestRunEndToEnd(t *testing.T) {
	host := startMemRegistry(t)
	bare := testgit.NewBare(t, demoRepoFiles(t, host))
	srv := testgit.StartHTTP(t, bare, true)
	dir := t.TempDir()
	writeFile(t, dir, "user", srv.Username+"\n")
	writeFile(t, dir, "pass", srv.Password+"\n")
	cfg := runConfig(t, dir, host, "  url: "+srv.URL+"\n  branch: main\n  auth: {usernameFile: user, passwordFile: pass}\n",
		"commit:\n  author: {name: bot, email: bot@example.invalid}\n  messageTemplate: |\n    chore: bump {{ len .Changes }} fields\n")
	workdir := filepath.Join(dir, "work")
	before := testgit.Git(t, bare, "rev-parse", "refs/heads/main")

	out, stderr, code := runMain(t, "run", "-c", cfg, "--workdir", workdir, "-o", "json", "--log-level", "debug")
	if code != 0 {
		t.Fatalf("run exit %d\n%s\n%s", code, out, stderr)
	}
	rep := decodeRun(t, out)
	if len(rep.Targets) != 1 {
		t.Fatalf("targets = %d, want 1", len(rep.Targets))
	}
	got := rep.Targets[0]
	after := strings.TrimSpace(testgit.Git(t, bare, "rev-parse", "refs/heads/main"))
	if !got.Pushed || got.Commit != after || after == strings.TrimSpace(before) {
		t.Fatalf("run pushed=%v commit=%s; remote main %s -> %s", got.Pushed, got.Commit, strings.TrimSpace(before), after)
	}
	if len(got.Changes) != 7 {
		t.Errorf("changes = %d, want 7", len(got.Changes))
	}
	msg := testgit.Git(t, bare, "log", "-1", "--format=%an <%ae>%n%B", "refs/heads/main")
	if !strings.Contains(msg, "bot <bot@example.invalid>") || !strings.Contains(msg, "chore: bump 7 fields") {
		t.Errorf("commit author and message:\n%s", msg)
	}
	values := testgit.Git(t, bare, "show", "refs/heads/main:charts/api/values.yaml")
	if !strings.Contains(values, "tag: 2.3.4 # {\"$imagepolicy\": \"apps:api:tag\"}") {
		t.Errorf("pushed values.yaml:\n%s", values)
	}

	// A second run with nothing new: no commit, no push, refs unchanged.
	pushes := srv.Pushes()
	out, stderr, code = runMain(t, "run", "-c", cfg, "--workdir", workdir, "-o", "json")
	if code != 0 {
		t.Fatalf("second run exit %d\n%s\n%s", code, out, stderr)
	}
	if rep := decodeRun(t, out); rep.Targets[0].Pushed || len(rep.Targets[0].Changes) != 0 {
		t.Errorf("second run pushed=%v with %d changes", rep.Targets[0].Pushed, len(rep.Targets[0].Changes))
	}
	if again := strings.TrimSpace(testgit.Git(t, bare, "rev-parse", "refs/heads/main")); again != after {
		t.Errorf("remote main moved on a run with nothing new: %s -> %s", after, again)
	}
	if srv.Pushes() != pushes {
		t.Errorf("pushes %d -> %d on a run with nothing new", pushes, srv.Pushes())
	}

	// The password is nowhere: not in output, logs, the commit, .git/config.
	gitConfig, err := os.ReadFile(filepath.Join(workdir, "default", ".git", "config"))
	if err != nil {
		t.Fatal(err)
	}
	for what, text := range map[string]string{"stdout": out, "stderr": stderr, "commit": msg, ".git/config": string(gitConfig)} {
		if strings.Contains(text, srv.Password) {
			t.Errorf("the password appears in %s", what)
		}
	}
}

// demoConfig writes, in dir, the demo's config for the registry at host
// with targets (YAML) appended, and returns its path.
func demoConfig(t *testing.T, dir, host, targets string) string {
	t.Helper()
	data, err := demoFiles.ReadFile("demo/imagebump.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return writeFile(t, dir, "imagebump.yaml", strings.ReplaceAll(string(data), "REGISTRY", host)+targets)
}

// TestRunPushBranchAndFailingTarget checks the push.branch mode and that a
// failing target does not stop the other one.
func TestRunPushBranchAndFailingTarget(t *testing.T) {
	host := startMemRegistry(t)
	bare := testgit.NewBare(t, demoRepoFiles(t, host))
	dir := t.TempDir()
	cfg := demoConfig(t, dir, host, `
targets:
  - name: broken
    git: {url: "file://`+filepath.Join(dir, "nope.git")+`", branch: main}
  - name: prod
    git: {url: "file://`+bare+`", branch: main, paths: [clusters/prod]}
    push: {branch: imagebump/prod}
    policies: ["apps:web", "apps:worker"]
`)
	main := strings.TrimSpace(testgit.Git(t, bare, "rev-parse", "refs/heads/main"))
	out, stderr, code := runMain(t, "run", "-c", cfg, "-o", "json")
	if code != ExitFailure {
		t.Fatalf("run exit %d, want 1 (one target fails)\n%s\n%s", code, out, stderr)
	}
	rep := decodeRun(t, out)
	if len(rep.Targets) != 2 || rep.Targets[0].Error == "" || !strings.Contains(rep.Targets[0].Error, "broken") {
		t.Fatalf("targets: %+v", rep.Targets)
	}
	prod := rep.Targets[1]
	if prod.Error != "" || !prod.Pushed || prod.PushBranch != "imagebump/prod" {
		t.Fatalf("prod target: %+v", prod)
	}
	if now := strings.TrimSpace(testgit.Git(t, bare, "rev-parse", "refs/heads/main")); now != main {
		t.Errorf("main moved in push.branch mode: %s -> %s", main, now)
	}
	branch := strings.TrimSpace(testgit.Git(t, bare, "rev-parse", "refs/heads/imagebump/prod"))
	if branch != prod.Commit {
		t.Errorf("imagebump/prod = %s, run says %s", branch, prod.Commit)
	}
	// Only the target's paths and policies: web and worker in clusters/prod.
	changed := testgit.Git(t, bare, "diff", "--name-only", "refs/heads/main", "refs/heads/imagebump/prod")
	if strings.TrimSpace(changed) != "clusters/prod/web.yaml" {
		t.Errorf("changed files = %q, want only clusters/prod/web.yaml", changed)
	}
	for _, c := range prod.Changes {
		if c.Policy != "apps:web" && c.Policy != "apps:worker" {
			t.Errorf("change by a policy the target does not apply: %+v", c)
		}
	}

	// plan without --repo clones the target read-only.
	out, stderr, code = runMain(t, "plan", "-c", cfg, "--target", "prod", "--detailed-exitcode")
	if code != ExitChanges {
		t.Fatalf("plan (clone) exit %d, want 2\n%s\n%s", code, out, stderr)
	}
	if !strings.Contains(out, "clusters/prod/web.yaml:13") {
		t.Errorf("plan output:\n%s", out)
	}
	if now := strings.TrimSpace(testgit.Git(t, bare, "rev-parse", "refs/heads/imagebump/prod")); now != branch {
		t.Errorf("plan pushed: imagebump/prod %s -> %s", branch, now)
	}
	_, stderr, code = runMain(t, "plan", "-c", cfg)
	if code != ExitUsage || !strings.Contains(stderr, "--target") {
		t.Errorf("plan without --repo and two targets: exit %d, stderr %q", code, stderr)
	}
}

// TestRunTextNamesTheTargetOnce: a target that failed is named by its
// heading alone, and in the log by its attribute; its error began "target
// NAME: " again, on the next line ("target broken: file://... (branch
// main)", "FAILED: target broken: cloning ...") and in the log
// (target=broken error="target broken: cloning ...").
func TestRunTextNamesTheTargetOnce(t *testing.T) {
	dir := t.TempDir()
	cfg := writeFile(t, dir, "imagebump.yaml", `images: [{name: apps:web, repository: reg.example/acme/web, policy: {semver: ">=1"}}]
targets:
  - name: broken
    git: {url: "file://`+filepath.Join(dir, "nope.git")+`", branch: main}
`)
	out, stderr, code := runMain(t, "run", "-c", cfg, "--workdir", filepath.Join(dir, "work"))
	if n := strings.Count(out+stderr, "target broken"); code != ExitFailure || n != 1 || !strings.Contains(out, "FAILED: cloning") || !strings.Contains(stderr, `error="cloning`) {
		t.Errorf("exit %d, the target named %d times, want exit 1 and once\nstdout:\n%s\nstderr:\n%s", code, n, out, stderr)
	}
}

// TestRunForeignPushBranch: a push branch that ends in a person's commit
// is left as it is; run says which commit, that the edits were not
// pushed, and exits 1.
func TestRunForeignPushBranch(t *testing.T) {
	host := startMemRegistry(t)
	bare := testgit.NewBare(t, demoRepoFiles(t, host))
	human := testgit.CommitAs(t, bare, "imagebump/prod", "Jane", "jane@example.invalid", map[string]string{"notes.txt": "mine\n"}, nil, "human work")
	cfg := demoConfig(t, t.TempDir(), host, `
targets:
  - name: prod
    git: {url: "file://`+bare+`", branch: main, paths: [clusters/prod]}
    push: {branch: imagebump/prod}
`)
	out, stderr, code := runMain(t, "run", "-c", cfg)
	if code != ExitFailure {
		t.Fatalf("run exit %d, want 1\n%s\n%s", code, out, stderr)
	}
	for _, w := range []string{
		"FAILED, the edits above were not pushed (the next run makes them again)",
		`branch "imagebump/prod" ends in commit ` + human[:12] + ` ("human work"), which imagebump did not make (committed by Jane <jane@example.invalid>)`,
	} {
		if !strings.Contains(out, w) {
			t.Errorf("run output lacks %q:\n%s", w, out)
		}
	}
	if now := strings.TrimSpace(testgit.Git(t, bare, "rev-parse", "refs/heads/imagebump/prod")); now != human {
		t.Errorf("imagebump/prod moved from the person's commit %s to %s", human, now)
	}
}

// TestRunConcurrentSameWorkdir starts three runs that share one --workdir
// at once: the working-copy lock makes them take turns, all succeed, and the
// remote gets the bump exactly once.
func TestRunConcurrentSameWorkdir(t *testing.T) {
	host := startMemRegistry(t)
	bare := testgit.NewBare(t, demoRepoFiles(t, host))
	dir := t.TempDir()
	cfg := runConfig(t, dir, host, "  url: file://"+bare+"\n  branch: main\n", "")
	workdir := filepath.Join(dir, "work")
	before := strings.TrimSpace(testgit.Git(t, bare, "rev-parse", "refs/heads/main"))

	type result struct {
		out, stderr string
		code        int
	}
	results := make(chan result, 3)
	for range 3 {
		go func() {
			out, stderr, code := runMain(t, "run", "-c", cfg, "--workdir", workdir, "-o", "json")
			results <- result{out, stderr, code}
		}()
	}
	pushed := 0
	for range 3 {
		r := <-results
		if r.code != 0 {
			t.Errorf("a concurrent run exited %d\n%s\n%s", r.code, r.out, r.stderr)
			continue
		}
		if decodeRun(t, r.out).Targets[0].Pushed {
			pushed++
		}
	}
	if pushed != 1 {
		t.Errorf("%d runs pushed, want exactly 1", pushed)
	}
	commits := strings.Fields(testgit.Git(t, bare, "rev-list", before+"..refs/heads/main"))
	if len(commits) != 1 {
		t.Errorf("remote main gained %d commits, want 1", len(commits))
	}
}

// TestRunTextAfterThePullRequest: a target that failed after its pull
// request was reached (labels refused, say) says that the push branch
// holds the edits; it said they were not pushed, which sent the reader to
// look for a push that had been made by an earlier run.
func TestRunTextAfterThePullRequest(t *testing.T) {
	res := &cycle.TargetResult{Target: "prod", Repository: "https://git.example/fleet.git", Branch: "main", PushBranch: "imagebump/main",
		PullRequest: &pullrequest.Result{Provider: "gitea", Number: 4, URL: "https://git.example/fleet/pulls/4", Outcome: pullrequest.Updated},
		Report:      &cycle.Report{Changes: []setters.Change{{File: "app.yaml", Line: 1, Policy: "apps:app", Old: "1.0.0", New: "1.1.0"}}}}
	rep := report.Run{Version: report.Version, Targets: []report.Target{report.NewTarget(res, "adding the labels newlabel was refused")}}
	var b strings.Builder
	if err := writeRunText(&b, rep, []*cycle.TargetResult{res}); err != nil {
		t.Fatal(err)
	}
	if out := b.String(); !strings.Contains(out, "imagebump/main holds the edits above (pushed before), then FAILED: adding the labels") || strings.Contains(out, "not pushed") {
		t.Errorf("run text:\n%s", out)
	}
}

// TestDescribePRDuplicates: the twins a run closed, or a plan says it
// would close, are named after what happens to the pull request kept; a
// plan said nothing of them.
func TestDescribePRDuplicates(t *testing.T) {
	pr := &pullrequest.Result{Provider: "gitea", Number: 2, URL: "https://git.example/fleet/pulls/2", Outcome: pullrequest.Updated, Duplicates: []int{5, 9}}
	for _, tt := range []struct {
		plan bool
		want string
	}{
		{false, "gitea: updated #2 https://git.example/fleet/pulls/2; closed #5, #9, open from the same branch too (duplicates)"},
		{true, "gitea: would update #2 https://git.example/fleet/pulls/2; would close #5, #9, open from the same branch too (duplicates)"},
	} {
		if got := describePR(pr, tt.plan); got != tt.want {
			t.Errorf("describePR(plan %v) = %q, want %q", tt.plan, got, tt.want)
		}
	}
}
