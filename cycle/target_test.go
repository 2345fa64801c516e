package cycle

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/imagebump/imagebump/config"
	"github.com/imagebump/imagebump/gitwriter"
	"github.com/imagebump/imagebump/internal/testkit/testgit"
	"github.com/imagebump/imagebump/pullrequest"
)

const targetConfig = `
images:
  - {name: apps:web, repository: reg.example/web, policy: {semver: ">=1.0.0"}}
  - {name: apps:api, repository: reg.example/api, policy: {semver: ">=1.0.0"}}
  - {name: apps:unused, repository: reg.example/unused, policy: {semver: ">=1.0.0"}}
git:
  url: URL
  branch: main
commit:
  author: {name: bot, email: bot@example.invalid}
`

var targetFiles = map[string]string{
	"web.yaml": "image: reg.example/web:1.0.0 # {\"$imagepolicy\": \"apps:web\"}\n",
	"api.yaml": "tag: 1.0.0 # {\"$imagepolicy\": \"apps:api:tag\"}\n",
}

func targetSetup(t *testing.T, extra string) (*config.Config, string) {
	t.Helper()
	bare := testgit.NewBare(t, targetFiles)
	text := strings.Replace(targetConfig, "URL", "file://"+bare, 1) + extra
	cfg, err := config.Parse([]byte(text), "imagebump.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return cfg, bare
}

// TestRunTargetCommitsThenNothing runs two cycles of one target through
// the library, without the command line: the first commits and pushes the
// bumps, the second finds nothing new and pushes nothing. Only the
// registries of policies that a marker names are asked.
func TestRunTargetCommitsThenNothing(t *testing.T) {
	cfg, bare := targetSetup(t, "")
	reg := &fakeRegistry{tags: map[string][]string{
		"reg.example/web": {"1.0.0", "1.2.0"},
		"reg.example/api": {"1.0.0", "1.1.0"},
	}}
	opts := TargetOptions{Config: cfg, Target: cfg.Targets()[0], Registry: reg, Workdir: t.TempDir()}
	res, err := RunTarget(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Pushed || len(res.Report.Changes) != 2 {
		t.Fatalf("first cycle pushed=%v changes=%d, want a push of 2 changes", res.Pushed, len(res.Report.Changes))
	}
	if head := strings.TrimSpace(testgit.Git(t, bare, "rev-parse", "refs/heads/main")); head != res.Commit {
		t.Errorf("remote main is %s, the cycle reported %s", head, res.Commit)
	}
	if got, _ := testgit.ReadFile(t, bare, "main", "web.yaml"); !strings.Contains(got, "web:1.2.0 ") {
		t.Errorf("pushed web.yaml = %q", got)
	}
	if slices.Contains(reg.scanned, "reg.example/unused") {
		t.Errorf("the registry of a policy no marker names was asked: %v", reg.scanned)
	}
	if got := res.Report.Unreferenced; !slices.Equal(got, []string{"apps:unused"}) {
		t.Errorf("Unreferenced = %v, want [apps:unused]", got)
	}

	res, err = RunTarget(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	if res.Pushed || len(res.Report.Changes) != 0 || res.Attempts != 1 {
		t.Errorf("second cycle pushed=%v changes=%d attempts=%d, want nothing", res.Pushed, len(res.Report.Changes), res.Attempts)
	}
}

// TestRunTargetPushedThenFailed: the bump reaches the push branch, then
// the refspec's push fails (its destination holds a commit the new one
// does not build on). The result says the commit was pushed, beside the
// error, so that the report reads "pushed, then FAILED", not "not pushed".
func TestRunTargetPushedThenFailed(t *testing.T) {
	cfg, bare := targetSetup(t, "push: {branch: auto, refspec: \"refs/heads/auto:refs/for/main\"}\n")
	elsewhere := testgit.Commit(t, bare, "other", map[string]string{"other.yaml": "a: 1\n"}, nil, "elsewhere")
	testgit.Git(t, bare, "update-ref", "refs/for/main", elsewhere)
	reg := &fakeRegistry{tags: map[string][]string{
		"reg.example/web": {"1.0.0", "1.2.0"},
		"reg.example/api": {"1.0.0", "1.1.0"},
	}}
	res, err := RunTarget(context.Background(), TargetOptions{Config: cfg, Target: cfg.Targets()[0], Registry: reg, Workdir: t.TempDir()})
	if err == nil || !strings.Contains(err.Error(), "refs/for/main") {
		t.Fatalf("RunTarget error = %v, want the refspec's push refused", err)
	}
	auto := testgit.Refs(t, bare)["refs/heads/auto"]
	if res == nil || !res.Pushed || res.Commit != auto || auto == "" {
		t.Errorf("RunTarget = %+v; want the push to auto (%s) reported with the error", res, auto)
	}
	if got := testgit.Refs(t, bare)["refs/for/main"]; got != elsewhere {
		t.Errorf("refs/for/main = %s, want it left at %s", got, elsewhere)
	}
}

// TestRunTargetPullRequestCheckedFirst: pull requests that cannot be
// opened where git.url points (a URL with no owner) fail the target
// before anything is fetched or pushed, not after its branch was pushed.
func TestRunTargetPullRequestCheckedFirst(t *testing.T) {
	text := strings.Replace(targetConfig, "URL", "http://127.0.0.1:1/fleet.git", 1) +
		"push: {branch: auto, pullRequest: {provider: gitea, tokenFile: /nonexistent}}\n"
	cfg, err := config.Parse([]byte(text), "imagebump.yaml")
	if err != nil {
		t.Fatal(err)
	}
	reg := &fakeRegistry{}
	_, err = RunTarget(context.Background(), TargetOptions{Config: cfg, Target: cfg.Targets()[0], Registry: reg, Workdir: t.TempDir()})
	if err == nil || !strings.Contains(err.Error(), "target default: push.pullRequest: git URL http://127.0.0.1:1/fleet.git: the path needs an owner and a repository") {
		t.Fatalf("RunTarget error = %v, want the pull request settings refused before the clone", err)
	}
}

// TestRunTargetEnvRefUnset: a credential named env:VARIABLE that is not
// set fails the target before the clone, naming the config key.
func TestRunTargetEnvRefUnset(t *testing.T) {
	text := strings.Replace(targetConfig, "URL", "http://127.0.0.1:1/acme/fleet.git", 1)
	text = strings.Replace(text, "  branch: main\n", "  branch: main\n  auth: {tokenFile: \"env:IMAGEBUMP_TEST_UNSET_TOKEN\"}\n", 1)
	cfg, err := config.Parse([]byte(text), "imagebump.yaml")
	if err != nil {
		t.Fatal(err)
	}
	_, err = RunTarget(context.Background(), TargetOptions{Config: cfg, Target: cfg.Targets()[0], Registry: &fakeRegistry{}, Workdir: t.TempDir()})
	want := "git.auth.tokenFile is env:IMAGEBUMP_TEST_UNSET_TOKEN, and IMAGEBUMP_TEST_UNSET_TOKEN is not set in imagebump's environment"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("RunTarget error = %v, want %q", err, want)
	}
}

// TestRunTargetNoMarkers checks that a target whose files hold no marker
// asks no registry at all.
func TestRunTargetNoMarkers(t *testing.T) {
	bare := testgit.NewBare(t, map[string]string{"app.yaml": "image: reg.example/web:1.0.0\n"})
	cfg, err := config.Parse([]byte(strings.Replace(targetConfig, "URL", "file://"+bare, 1)), "imagebump.yaml")
	if err != nil {
		t.Fatal(err)
	}
	reg := &fakeRegistry{}
	res, err := RunTarget(context.Background(), TargetOptions{Config: cfg, Target: cfg.Targets()[0], Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	if len(reg.scanned) != 0 {
		t.Errorf("registries asked with no marker in the tree: %v", reg.scanned)
	}
	if len(res.Report.Markers) != 0 || res.Pushed || len(res.Report.Unreferenced) != 3 {
		t.Errorf("markers=%d pushed=%v unreferenced=%v", len(res.Report.Markers), res.Pushed, res.Report.Unreferenced)
	}
}

// recordingForge is a pull request provider in memory that records its
// write calls.
type recordingForge struct {
	mu        sync.Mutex
	prs       []pullrequest.PR
	writes    []string
	lists     int
	labelsErr error // what AddLabels returns
}

func (f *recordingForge) Name() string { return "gitea" }

func (f *recordingForge) List(context.Context, string, string) ([]pullrequest.PR, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lists++
	return slices.Clone(f.prs), nil
}

func (f *recordingForge) Create(_ context.Context, head, base, title, body string) (*pullrequest.PR, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.writes = append(f.writes, "create")
	pr := pullrequest.PR{Number: len(f.prs) + 1, Head: head, Base: base, Title: title, Body: body, State: pullrequest.StateOpen, URL: "https://forge.invalid/pr"}
	f.prs = append([]pullrequest.PR{pr}, f.prs...)
	return &pr, nil
}

func (f *recordingForge) Update(_ context.Context, n int, title, body string) (*pullrequest.PR, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.writes = append(f.writes, "update")
	for i := range f.prs {
		if f.prs[i].Number == n {
			f.prs[i].Title, f.prs[i].Body = title, body
			pr := f.prs[i]
			return &pr, nil
		}
	}
	return nil, nil
}

func (f *recordingForge) AddLabels(context.Context, int, []string) error { return f.labelsErr }
func (f *recordingForge) Comment(context.Context, int, string) error     { return nil }
func (f *recordingForge) Close(context.Context, int) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.writes = append(f.writes, "close")
	return nil
}

// pullRequestTarget returns the config of a target that opens pull
// requests from imagebump/main, the target, and the bare repository it
// clones. A file:// remote has no forge, so the config names an https
// one; the cycle clones the local bare repository instead and the forge
// is faked.
func pullRequestTarget(t *testing.T) (*config.Config, config.Target, string) {
	t.Helper()
	return pullRequestTargetWith(t, "")
}

// pullRequestTargetWith is pullRequestTarget with more keys of
// push.pullRequest, such as "title: x, labels: [deps]".
func pullRequestTargetWith(t *testing.T, keys string) (*config.Config, config.Target, string) {
	t.Helper()
	if keys != "" {
		keys = ", " + keys
	}
	bare := testgit.NewBare(t, targetFiles)
	text := strings.Replace(targetConfig, "URL", "https://forge.invalid/acme/fleet.git", 1) +
		"push:\n  branch: imagebump/main\n  pullRequest: {provider: gitea, tokenFile: /nonexistent" + keys + "}\n"
	cfg, err := config.Parse([]byte(text), "imagebump.yaml")
	if err != nil {
		t.Fatal(err)
	}
	target := cfg.Targets()[0]
	g := *target.Git
	g.URL = "file://" + bare
	target.Git = &g
	return cfg, target, bare
}

// TestRunTargetPushBranchHeldWhileAPolicyFails: push.branch without a
// pull request is rebuilt on git.branch at each bump too, so a policy that
// fails holds it as it holds a pull request's branch: rebuilt, it dropped
// the failing policy's bump (and a registry's blip made the branch flip
// back and forth).
func TestRunTargetPushBranchHeldWhileAPolicyFails(t *testing.T) {
	cfg, bare := targetSetup(t, "push:\n  branch: imagebump/main\n")
	reg := &fakeRegistry{tags: map[string][]string{
		"reg.example/web": {"1.2.0"},
		"reg.example/api": {"1.1.0"},
	}}
	opts := TargetOptions{Config: cfg, Target: cfg.Targets()[0], Registry: reg, Workdir: t.TempDir()}
	res, err := RunTarget(context.Background(), opts)
	if err != nil || !res.Pushed {
		t.Fatalf("first cycle: pushed=%v, %v", res.Pushed, err)
	}
	branch := strings.TrimSpace(testgit.Git(t, bare, "rev-parse", "refs/heads/imagebump/main"))

	// api's registry fails, and web has a new tag.
	reg.fail = map[string]error{"reg.example/api": context.DeadlineExceeded}
	reg.tags["reg.example/web"] = []string{"1.2.0", "1.3.0"}
	res, err = RunTarget(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Held || res.Pushed {
		t.Errorf("cycle with a failing policy whose bump the branch holds: held=%v pushed=%v; want held", res.Held, res.Pushed)
	}
	if now := strings.TrimSpace(testgit.Git(t, bare, "rev-parse", "refs/heads/imagebump/main")); now != branch {
		t.Errorf("push.branch moved while a policy failed: %s -> %s; api.yaml there: %s", branch, now,
			testgit.Git(t, bare, "show", "refs/heads/imagebump/main:api.yaml"))
	}

	reg.fail = nil
	res, err = RunTarget(context.Background(), opts)
	if err != nil || !res.Pushed {
		t.Fatalf("cycle once api resolves: pushed=%v, %v", res.Pushed, err)
	}
	for file, want := range map[string]string{"web.yaml": "reg.example/web:1.3.0", "api.yaml": "tag: 1.1.0"} {
		if got := testgit.Git(t, bare, "show", "refs/heads/imagebump/main:"+file); !strings.Contains(got, want) {
			t.Errorf("%s on the branch: %q, want %s", file, got, want)
		}
	}
}

// TestRunTargetPushBranchIsTracked: push.branch naming the tracked branch,
// without a pull request, is a direct push (config.md gives git.branch as
// its default); gitwriter refused it, failing every cycle.
func TestRunTargetPushBranchIsTracked(t *testing.T) {
	cfg, bare := targetSetup(t, "push:\n  branch: main\n")
	reg := &fakeRegistry{tags: map[string][]string{"reg.example/web": {"1.2.0"}, "reg.example/api": {"1.1.0"}}}
	res, err := RunTarget(context.Background(), TargetOptions{Config: cfg, Target: cfg.Targets()[0], Registry: reg, Workdir: t.TempDir()})
	if err != nil || !res.Pushed || res.PushBranch != "" {
		t.Fatalf("pushed=%v push branch %q, %v; want a direct push", res.Pushed, res.PushBranch, err)
	}
	if got := testgit.Git(t, bare, "show", "refs/heads/main:web.yaml"); !strings.Contains(got, "reg.example/web:1.2.0") {
		t.Errorf("web.yaml on main: %q", got)
	}
}

// TestRunTargetPullRequestHeldWhileAPolicyFails checks the push.branch
// mode with a pull request: the first cycle opens it, a cycle with a failing
// registry holds the branch and the pull request as they are, and a cycle
// with nothing new makes no write call.
func TestRunTargetPullRequestHeldWhileAPolicyFails(t *testing.T) {
	cfg, target, bare := pullRequestTarget(t)
	forge := &recordingForge{}
	reg := &fakeRegistry{tags: map[string][]string{
		"reg.example/web": {"1.2.0"},
		"reg.example/api": {"1.1.0"},
	}}
	opts := TargetOptions{Config: cfg, Target: target, Registry: reg, Workdir: t.TempDir(),
		PullRequests: func(config.Target) (pullrequest.Provider, error) { return forge, nil }}
	res, err := RunTarget(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	if res.PullRequest == nil || res.PullRequest.Outcome != pullrequest.Opened || !res.Pushed {
		t.Fatalf("first cycle: pushed=%v pull request %+v", res.Pushed, res.PullRequest)
	}
	branch := strings.TrimSpace(testgit.Git(t, bare, "rev-parse", "refs/heads/imagebump/main"))

	reg.fail = map[string]error{"reg.example/api": context.DeadlineExceeded}
	res, err = RunTarget(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Held || res.Pushed || res.PullRequest != nil {
		t.Errorf("cycle with a failing policy: held=%v pushed=%v pull request %+v", res.Held, res.Pushed, res.PullRequest)
	}
	// A plan on its own clone says so, where it said the pull request
	// would be updated.
	plan, err := Plan(context.Background(), PlanOptions{Config: cfg, Target: &target, Registry: reg, PullRequests: opts.PullRequests})
	if err != nil || !plan.Held || plan.PullRequest != nil {
		t.Errorf("plan with a failing policy: held=%v pull request %+v, %v; want held, as the run", plan.Held, plan.PullRequest, err)
	}
	if now := strings.TrimSpace(testgit.Git(t, bare, "rev-parse", "refs/heads/imagebump/main")); now != branch {
		t.Errorf("push.branch moved while a policy failed: %s -> %s", branch, now)
	}

	reg.fail = nil
	writes := len(forge.writes)
	res, err = RunTarget(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	if res.Pushed || res.PullRequest == nil || res.PullRequest.Outcome != pullrequest.Unchanged || len(forge.writes) != writes {
		t.Errorf("cycle with nothing new: pushed=%v pull request %+v, forge writes %v", res.Pushed, res.PullRequest, forge.writes[writes:])
	}

	// Given the last cycle, as serve gives it, a cycle with nothing new
	// does not ask the forge at all; once main moves, it does again.
	lists := forge.lists
	opts.Previous = res
	res, err = RunTarget(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	if forge.lists != lists || res.PullRequest == nil || res.PullRequest.Outcome != pullrequest.Unchanged {
		t.Errorf("with the previous cycle: %d forge reads, pull request %+v; want none and unchanged", forge.lists-lists, res.PullRequest)
	}
	testgit.Commit(t, bare, "main", map[string]string{"other.yaml": "a: 1\n"}, nil, "unrelated change")
	opts.Previous = res
	if _, err := RunTarget(context.Background(), opts); err != nil {
		t.Fatal(err)
	}
	if forge.lists == lists {
		t.Error("main moved, but the forge was not asked")
	}
}

// TestRunTargetPullRequestKeptWhileHeld: when every bump a pull request
// proposes belongs to held policies, the cycle has no changes, yet the
// pull request is not closed as proposing nothing: its bumps are only
// put off. After the release, the same pull request carries them again. A hold
// that keeps no marker from moving does not keep a pull request that
// proposes nothing open.
func TestRunTargetPullRequestKeptWhileHeld(t *testing.T) {
	bare := testgit.NewBare(t, targetFiles)
	base := strings.Replace(targetConfig, "URL", "https://forge.invalid/acme/fleet.git", 1) +
		"push:\n  branch: imagebump/main\n  pullRequest: {provider: gitea, tokenFile: /nonexistent}\n"
	forge := &recordingForge{}
	reg := &fakeRegistry{tags: map[string][]string{
		"reg.example/web": {"1.2.0"},
		"reg.example/api": {"1.1.0"},
	}}
	workdir := t.TempDir()
	cycle := func(text string) *TargetResult {
		t.Helper()
		cfg, err := config.Parse([]byte(text), "imagebump.yaml")
		if err != nil {
			t.Fatal(err)
		}
		target := cfg.Targets()[0]
		g := *target.Git
		g.URL = "file://" + bare // the forge is faked; the remote is local
		target.Git = &g
		res, err := RunTarget(context.Background(), TargetOptions{Config: cfg, Target: target, Registry: reg, Workdir: workdir,
			PullRequests: func(config.Target) (pullrequest.Provider, error) { return forge, nil }})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	if res := cycle(base); res.PullRequest == nil || res.PullRequest.Outcome != pullrequest.Opened {
		t.Fatalf("first cycle: pull request %+v", res.PullRequest)
	}
	held := base
	for _, name := range []string{"web", "api"} {
		was := fmt.Sprintf(`{name: apps:%s, repository: reg.example/%s, policy: {semver: ">=1.0.0"}}`, name, name)
		if !strings.Contains(held, was) {
			t.Fatalf("the test's config has no policy apps:%s", name)
		}
		held = strings.Replace(held, was, strings.TrimSuffix(was, "}")+", hold: {reason: freeze}}", 1)
	}
	writes := len(forge.writes)
	if res := cycle(held); len(res.Report.Changes) != 0 || res.PullRequest != nil || slices.Contains(forge.writes[writes:], "close") {
		t.Errorf("cycle while held: %d changes, pull request %+v, forge writes %v; want none and the pull request left open",
			len(res.Report.Changes), res.PullRequest, forge.writes[writes:])
	}
	if res := cycle(base); res.PullRequest == nil || res.PullRequest.Outcome == pullrequest.Skipped || res.PullRequest.Number != 1 {
		t.Errorf("cycle after the release: pull request %+v; want the same one, carrying the bumps", res.PullRequest)
	}

	// The bumps land on main by hand, and a policy with nothing pending is
	// held: that hold keeps no marker from moving, so the pull request,
	// which proposes nothing any more, is closed.
	testgit.Commit(t, bare, "main", map[string]string{
		"web.yaml": strings.Replace(targetFiles["web.yaml"], "1.0.0", "1.2.0", 1),
		"api.yaml": strings.Replace(targetFiles["api.yaml"], "1.0.0", "1.1.0", 1),
	}, nil, "bumped by hand")
	apiHeld := strings.Replace(base, `{name: apps:api, repository: reg.example/api, policy: {semver: ">=1.0.0"}}`,
		`{name: apps:api, repository: reg.example/api, policy: {semver: ">=1.0.0"}, hold: {reason: freeze}}`, 1)
	writes = len(forge.writes)
	if res := cycle(apiHeld); res.PullRequest == nil || res.PullRequest.Outcome != pullrequest.Closed || !slices.Contains(forge.writes[writes:], "close") {
		t.Errorf("cycle with nothing to propose and an idle hold: pull request %+v, forge writes %v; want it closed", res.PullRequest, forge.writes[writes:])
	}
}

// TestRunTargetStaleCloseKeepsForeignBranch: when git.branch got the bumps
// another way, the pull request proposes nothing and is closed; but not
// when a person pushed to its branch: that target fails, naming the
// commit, and the pull request stays open.
func TestRunTargetStaleCloseKeepsForeignBranch(t *testing.T) {
	cfg, target, bare := pullRequestTarget(t)
	forge := &recordingForge{}
	reg := &fakeRegistry{tags: map[string][]string{"reg.example/web": {"1.2.0"}, "reg.example/api": {"1.1.0"}}}
	opts := TargetOptions{Config: cfg, Target: target, Registry: reg, Workdir: t.TempDir(),
		PullRequests: func(config.Target) (pullrequest.Provider, error) { return forge, nil }}
	if res, err := RunTarget(context.Background(), opts); err != nil || res.PullRequest == nil || res.PullRequest.Outcome != pullrequest.Opened {
		t.Fatalf("first cycle: %+v, %v", res, err)
	}
	testgit.Commit(t, bare, "main", map[string]string{
		"web.yaml": strings.Replace(targetFiles["web.yaml"], "1.0.0", "1.2.0", 1),
		"api.yaml": strings.Replace(targetFiles["api.yaml"], "1.0.0", "1.1.0", 1),
	}, nil, "bumped by hand")
	fix := testgit.CommitAs(t, bare, "imagebump/main", "Jane", "jane@example.invalid", map[string]string{"notes.txt": "review\n"}, nil, "review: a note")
	writes := len(forge.writes)
	_, err := RunTarget(context.Background(), opts)
	var fe *gitwriter.ForeignCommitError
	if !errors.As(err, &fe) || fe.Commit != fix[:12] {
		t.Fatalf("cycle with nothing to propose and a person's commit on the branch: %v; want a *ForeignCommitError for %s", err, fix)
	}
	if slices.Contains(forge.writes[writes:], "close") {
		t.Errorf("the pull request was closed over a person's commit: forge writes %v", forge.writes[writes:])
	}
	// A plan on its own clone says the run stops there, where it said the
	// pull request would be closed.
	if plan, err := Plan(context.Background(), PlanOptions{Config: cfg, Target: &target, Registry: reg, PullRequests: opts.PullRequests}); err != nil || !plan.Refused() || plan.PullRequest != nil {
		t.Errorf("plan with nothing to propose over a person's commit: refused=%v %v, pull request %+v, %v; want refused", plan.Refused(), plan.PullRequestErr, plan.PullRequest, err)
	}

	// Once the pull request is merged (the person's commit with it), no
	// open one would be closed: the cycle has nothing to do and succeeds,
	// where it failed on the branch left behind.
	forge.prs[0].State = pullrequest.StateMerged
	writes = len(forge.writes)
	res, err := RunTarget(context.Background(), opts)
	if err != nil || res.PullRequest != nil || len(forge.writes) != writes {
		t.Errorf("cycle after the merge: %v, pull request %+v, forge writes %v; want no error and nothing written", err, res.PullRequest, forge.writes[writes:])
	}
	if got := testgit.Refs(t, bare)["refs/heads/imagebump/main"]; got != fix {
		t.Errorf("imagebump/main = %s, want it left at %s", got, fix)
	}

	// A new bump: the branch is replaced only when its tip is the merged
	// pull request's head, as the forge reports it.
	reg.tags["reg.example/web"] = []string{"1.2.0", "1.3.0"}
	planOpts := PlanOptions{Config: cfg, Target: &target, Registry: reg, PullRequests: opts.PullRequests}
	// A plan on its own clone says that a run would stop there, where it
	// previewed a pull request the run never reaches.
	if plan, err := Plan(context.Background(), planOpts); err != nil || !plan.Refused() || !errors.As(plan.PullRequestErr, &fe) || plan.PullRequest != nil {
		t.Errorf("plan over a person's commit: refused=%v %v, pull request %+v, %v; want refused with a *ForeignCommitError", plan.Refused(), plan.PullRequestErr, plan.PullRequest, err)
	}
	if _, err := RunTarget(context.Background(), opts); !errors.As(err, &fe) {
		t.Fatalf("new bump, the merged pull request's head unknown: %v; want a *ForeignCommitError", err)
	}
	forge.prs[0].HeadCommit = fix
	if plan, err := Plan(context.Background(), planOpts); err != nil || plan.Refused() || plan.PullRequest == nil || plan.PullRequest.Outcome != pullrequest.Opened {
		t.Errorf("plan over the merged pull request's head: refused=%v %v, pull request %+v, %v; want a pull request opened", plan.Refused(), plan.PullRequestErr, plan.PullRequest, err)
	}
	res, err = RunTarget(context.Background(), opts)
	if err != nil || !res.Pushed || !res.Forced || res.PullRequest == nil || res.PullRequest.Outcome != pullrequest.Opened {
		t.Fatalf("new bump over the merged pull request's head: %+v, %v; want the branch replaced and a pull request opened", res, err)
	}
	if got := testgit.Refs(t, bare)["refs/heads/imagebump/main"]; got != res.Commit {
		t.Errorf("imagebump/main = %s, want the new commit %s", got, res.Commit)
	}
}

// TestRunTargetPullRequestFailsBeforePush: what would fail the pull
// request once the branch is pushed fails the cycle before it pushes: a
// title template that fails on the changes, a token that cannot be read.
func TestRunTargetPullRequestFailsBeforePush(t *testing.T) {
	reg := &fakeRegistry{tags: map[string][]string{"reg.example/web": {"1.2.0"}, "reg.example/api": {"1.0.0"}}}
	for _, c := range []struct {
		name, keys string
		provider   func(config.Target) (pullrequest.Provider, error)
		want       string
	}{{
		name: "title template",
		keys: "title: '{{ (index .Updated 1).Policy }}'", // one policy moves
		want: "push.pullRequest.title in imagebump.yaml",
	}, {
		name: "token",
		provider: func(config.Target) (pullrequest.Provider, error) {
			return nil, errors.New("push.pullRequest: reading the token: no such file")
		},
		want: "reading the token",
	}} {
		t.Run(c.name, func(t *testing.T) {
			cfg, target, bare := pullRequestTargetWith(t, c.keys)
			forge := &recordingForge{}
			prov := c.provider
			if prov == nil {
				prov = func(config.Target) (pullrequest.Provider, error) { return forge, nil }
			}
			_, err := RunTarget(context.Background(), TargetOptions{Config: cfg, Target: target, Registry: reg, Workdir: t.TempDir(), PullRequests: prov})
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("RunTarget error = %v, want one saying %q", err, c.want)
			}
			if got, ok := testgit.Refs(t, bare)["refs/heads/imagebump/main"]; ok {
				t.Errorf("imagebump/main was pushed (%s) before the cycle failed", got)
			}
			if forge.lists != 0 || len(forge.writes) != 0 {
				t.Errorf("the forge was asked: %d lists, writes %v", forge.lists, forge.writes)
			}
		})
	}
}

// TestRunTargetPullRequestLabelsRefused: a pull request opened whose
// labels the forge refused is reported with the error, which says it was
// opened.
func TestRunTargetPullRequestLabelsRefused(t *testing.T) {
	cfg, target, _ := pullRequestTargetWith(t, "labels: [deps]")
	forge := &recordingForge{labelsErr: errors.New("gitea: adding labels: HTTP 403")}
	reg := &fakeRegistry{tags: map[string][]string{"reg.example/web": {"1.2.0"}, "reg.example/api": {"1.1.0"}}}
	res, err := RunTarget(context.Background(), TargetOptions{Config: cfg, Target: target, Registry: reg, Workdir: t.TempDir(),
		PullRequests: func(config.Target) (pullrequest.Provider, error) { return forge, nil }})
	if err == nil || !strings.Contains(err.Error(), "opened pull request #1, but adding the labels deps was refused") || !strings.Contains(err.Error(), "HTTP 403") {
		t.Fatalf("RunTarget error = %v, want it to say #1 was opened and the labels refused", err)
	}
	if res.PullRequest == nil || res.PullRequest.Outcome != pullrequest.Opened || res.PullRequest.Number != 1 || len(res.PullRequest.Labels) != 0 || !res.Pushed {
		t.Errorf("result: pushed=%v pull request %+v; want #1 opened, without labels", res.Pushed, res.PullRequest)
	}
}

// TestRunTargetFailingPolicyInASharedFile: a failing policy holds the
// push branch only when the branch holds a bump of it. Its markers alone
// are compared, so a file it shares with a policy that moves again does
// not hold the branch; a bump of its own on the branch does.
func TestRunTargetFailingPolicyInASharedFile(t *testing.T) {
	cfg, target, bare := pullRequestTarget(t)
	testgit.Commit(t, bare, "main", map[string]string{
		"both.yaml": "web: reg.example/web:1.0.0 # {\"$imagepolicy\": \"apps:web\"}\napi: 1.0.0 # {\"$imagepolicy\": \"apps:api:tag\"}\n",
	}, nil, "a file with both")
	forge := &recordingForge{}
	reg := &fakeRegistry{tags: map[string][]string{"reg.example/web": {"1.2.0"}, "reg.example/api": {"1.0.0"}}}
	opts := TargetOptions{Config: cfg, Target: target, Registry: reg, Workdir: t.TempDir(),
		PullRequests: func(config.Target) (pullrequest.Provider, error) { return forge, nil }}
	cycle := func(what string) *TargetResult {
		t.Helper()
		res, err := RunTarget(context.Background(), opts)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		return res
	}
	if res := cycle("web moves"); !res.Pushed || res.PullRequest == nil || res.PullRequest.Outcome != pullrequest.Opened {
		t.Fatalf("web moves: pushed=%v pull request %+v", res.Pushed, res.PullRequest)
	}

	// api fails, web moves again: both.yaml differs from the branch's,
	// but not in api's marker.
	reg.fail = map[string]error{"reg.example/api": context.DeadlineExceeded}
	reg.tags["reg.example/web"] = []string{"1.2.0", "1.3.0"}
	if res := cycle("api fails, web moves"); res.Held || !res.Pushed || res.PullRequest == nil || res.PullRequest.Outcome != pullrequest.Updated {
		t.Errorf("api fails with no bump on the branch: held=%v pushed=%v pull request %+v; want web's bump pushed, the pull request updated", res.Held, res.Pushed, res.PullRequest)
	}

	// api resolves and moves: its bump is on the branch.
	reg.fail = nil
	reg.tags["reg.example/api"] = []string{"1.0.0", "1.1.0"}
	cycle("api moves")
	branch := testgit.Refs(t, bare)["refs/heads/imagebump/main"]
	reg.fail = map[string]error{"reg.example/api": context.DeadlineExceeded}
	reg.tags["reg.example/web"] = []string{"1.2.0", "1.3.0", "1.4.0"}
	if res := cycle("api fails again, web moves"); !res.Held || res.Pushed {
		t.Errorf("api fails with its bump on the branch: held=%v pushed=%v; want held", res.Held, res.Pushed)
	}
	if now := testgit.Refs(t, bare)["refs/heads/imagebump/main"]; now != branch {
		t.Errorf("the branch moved while it held the failed policy's bump: %s -> %s", branch, now)
	}
}

// TestRunTargetWorkingCopyNotWritten: a file of the working copy that
// cannot be written fails the target, naming the working copy, where it
// was a problem of the file's beside "No changes"; the next cycle that
// can write it makes the bump. (Tests run as root here, whom permissions
// do not stop: a hard link, which imagebump will not split, stands in.)
func TestRunTargetWorkingCopyNotWritten(t *testing.T) {
	cfg, bare := targetSetup(t, "")
	reg := &fakeRegistry{tags: map[string][]string{"reg.example/web": {"1.0.0"}, "reg.example/api": {"1.0.0"}}}
	opts := TargetOptions{Config: cfg, Target: cfg.Targets()[0], Registry: reg, Workdir: t.TempDir()}
	if _, err := RunTarget(context.Background(), opts); err != nil {
		t.Fatal(err)
	}
	wc := WorkdirFor(opts.Workdir, opts.Target.Name)
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Link(filepath.Join(wc, "web.yaml"), link); err != nil {
		t.Fatal(err)
	}
	reg.tags["reg.example/web"] = []string{"1.0.0", "1.2.0"}
	before := testgit.Refs(t, bare)["refs/heads/main"]
	res, err := RunTarget(context.Background(), opts)
	if err == nil || !strings.Contains(err.Error(), "the working copy in "+wc+" could not be written (web.yaml:") || res.Pushed {
		t.Fatalf("RunTarget = %+v, %v; want the working copy named, nothing pushed", res, err)
	}
	if now := testgit.Refs(t, bare)["refs/heads/main"]; now != before {
		t.Errorf("main moved: %s -> %s", before, now)
	}
	if err := os.Remove(link); err != nil {
		t.Fatal(err)
	}
	if res, err := RunTarget(context.Background(), opts); err != nil || !res.Pushed {
		t.Errorf("once it can be written: %+v, %v; want the bump pushed", res, err)
	}
}
