package commands

import (
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/imagebump/imagebump/internal/testkit/testgitea"
	"github.com/imagebump/imagebump/report"
)

// TestRunPullRequestGitea runs imagebump run against a real Gitea: the
// first run pushes imagebump's branch and opens a pull request, a second run
// with nothing new leaves it alone, plan previews it read-only, and after a
// merge a new bump opens a new one.
func TestRunPullRequestGitea(t *testing.T) {
	gt := testgitea.Start(t)
	host := startMemRegistry(t)
	owner, repo, cloneURL := gt.CreateRepo(t, "fleet-run", demoRepoFiles(t, host))
	dir := t.TempDir()
	writeFile(t, dir, "token", gt.Token+"\n")
	cfg := runConfig(t, dir, host, "  url: "+cloneURL+"\n  branch: main\n  auth: {tokenFile: token}\n",
		"push:\n  branch: imagebump/main\n  pullRequest:\n    provider: gitea\n    apiURL: "+gt.URL+"\n    labels: [dependencies]\n")

	out, stderr, code := runMain(t, "run", "-c", cfg, "-o", "json")
	if code != 0 {
		t.Fatalf("run exit %d\n%s\n%s", code, out, stderr)
	}
	rep := decodeRun(t, out)
	pr := rep.Targets[0].PullRequest
	if pr == nil || pr.Outcome != "opened" || pr.Number == 0 || pr.URL == "" {
		t.Fatalf("first run pull request = %+v", pr)
	}
	prs := gt.PullRequests(t, owner, repo)
	if len(prs) != 1 || prs[0].Head.Ref != "imagebump/main" || prs[0].Base.Ref != "main" || prs[0].State != "open" {
		t.Fatalf("pull requests on Gitea: %+v", prs)
	}
	if !strings.Contains(prs[0].Body, "charts/api/values.yaml") || !strings.Contains(prs[0].Body, "2.3.4") {
		t.Errorf("pull request body lacks the bumps:\n%s", prs[0].Body)
	}
	if prs[0].Title != "Bump 5 images" {
		t.Errorf("title = %q", prs[0].Title)
	}
	if len(prs[0].Labels) != 1 || prs[0].Labels[0].Name != "dependencies" {
		t.Errorf("labels = %+v", prs[0].Labels)
	}

	// Nothing new: no push, the same PR, untouched.
	out, stderr, code = runMain(t, "run", "-c", cfg, "-o", "json")
	if code != 0 {
		t.Fatalf("second run exit %d\n%s\n%s", code, out, stderr)
	}
	rep = decodeRun(t, out)
	if got := rep.Targets[0]; got.Pushed || got.PullRequest == nil || got.PullRequest.Outcome != "unchanged" || got.PullRequest.Number != pr.Number {
		t.Errorf("second run: pushed=%v pull request %+v", got.Pushed, got.PullRequest)
	}
	if n := len(gt.PullRequests(t, owner, repo)); n != 1 {
		t.Errorf("%d pull requests after the second run, want 1", n)
	}

	// plan says what a run would do, without writing.
	out, stderr, code = runMain(t, "plan", "-c", cfg)
	if code != 0 {
		t.Fatalf("plan exit %d\n%s\n%s", code, out, stderr)
	}
	if !strings.Contains(out, "Pull request: gitea: up to date: #") {
		t.Errorf("plan does not preview the pull request:\n%s", out)
	}

	// Someone makes the same bumps on main by hand: the branch proposes
	// nothing any more, so the next run closes the pull request with a
	// comment, and plan had said it would.
	bumped := demoRepoFiles(t, host)
	for _, c := range rep.Targets[0].Changes {
		// Values are plain or (the kustomization's newTag) double-quoted.
		f := bumped[c.File]
		if strings.Contains(f, c.From+" ") {
			f = strings.Replace(f, c.From+" ", c.To+" ", 1)
		} else {
			f = strings.Replace(f, `"`+c.From+`"`, `"`+c.To+`"`, 1)
		}
		bumped[c.File] = f
	}
	gt.PushBranch(t, owner, repo, "main", "main", bumped)
	out, stderr, code = runMain(t, "plan", "-c", cfg)
	if code != 0 || !strings.Contains(out, "would close #") {
		t.Errorf("plan after the bumps landed on main: exit %d\n%s\n%s", code, out, stderr)
	}
	out, stderr, code = runMain(t, "run", "-c", cfg, "-o", "json")
	if code != 0 {
		t.Fatalf("run after the bumps landed on main: exit %d\n%s\n%s", code, out, stderr)
	}
	if got := decodeRun(t, out).Targets[0]; got.PullRequest == nil || got.PullRequest.Outcome != "closed" || got.PullRequest.Number != pr.Number {
		t.Errorf("stale pull request: %+v", got.PullRequest)
	}
	if prs := gt.PullRequests(t, owner, repo); len(prs) != 1 || prs[0].State != "closed" || prs[0].Merged {
		t.Errorf("pull requests after the close: %+v", prs)
	}
	out, _, code = runMain(t, "run", "-c", cfg, "-o", "json")
	if got := decodeRun(t, out).Targets[0]; code != 0 || got.PullRequest != nil {
		t.Errorf("run after the close: exit %d, pull request %+v; want nothing", code, got.PullRequest)
	}
}

// TestRunPullRequestGiteaMerged checks that once the pull request is merged
// the next run has nothing to propose and opens nothing.
func TestRunPullRequestGiteaMerged(t *testing.T) {
	gt := testgitea.Start(t)
	host := startMemRegistry(t)
	owner, repo, cloneURL := gt.CreateRepo(t, "fleet-merged", demoRepoFiles(t, host))
	dir := t.TempDir()
	writeFile(t, dir, "token", gt.Token+"\n")
	cfg := runConfig(t, dir, host, "  url: "+cloneURL+"\n  branch: main\n  auth: {tokenFile: token}\n",
		"push:\n  branch: imagebump/main\n  pullRequest:\n    provider: gitea\n    apiURL: "+gt.URL+"\n")
	out, stderr, code := runMain(t, "run", "-c", cfg, "-o", "json")
	if code != 0 {
		t.Fatalf("run exit %d\n%s\n%s", code, out, stderr)
	}
	pr := decodeRun(t, out).Targets[0].PullRequest
	if pr == nil || pr.Outcome != "opened" {
		t.Fatalf("pull request = %+v", pr)
	}

	// Merged: main carries the bumps, so the next run has nothing to propose.
	gt.MergePR(t, owner, repo, pr.Number)
	out, _, code = runMain(t, "run", "-c", cfg, "-o", "json")
	if code != 0 {
		t.Fatalf("run after merge exit %d\n%s", code, out)
	}
	if got := decodeRun(t, out).Targets[0]; got.PullRequest != nil || len(got.Changes) != 0 {
		t.Errorf("after merge: changes %d, pull request %+v; want none", len(got.Changes), got.PullRequest)
	}

	// The token is nowhere in what run printed or in the PR.
	for _, p := range gt.PullRequests(t, owner, repo) {
		if strings.Contains(p.Body, gt.Token) || strings.Contains(p.Title, gt.Token) {
			t.Error("the token appears in a pull request")
		}
	}
	if strings.Contains(out+stderr, gt.Token) {
		t.Error("the token appears in run's output")
	}
}

// TestRunPullRequestGiteaUpdatedThenMerged: a person presses Gitea's
// "update branch" on imagebump's pull request (a merge commit of theirs
// on imagebump's branch), then merges it, leaving the branch. A run with
// nothing new succeeds (it failed on that commit, with no pull request
// to close), and the next bump replaces the branch, whose tip is the
// merged pull request's head, and opens a new pull request.
func TestRunPullRequestGiteaUpdatedThenMerged(t *testing.T) {
	gt := testgitea.Start(t)
	host := startMemRegistry(t)
	files := demoRepoFiles(t, host)
	owner, repo, cloneURL := gt.CreateRepo(t, "fleet-updated", files)
	dir := t.TempDir()
	writeFile(t, dir, "token", gt.Token+"\n")
	cfg := runConfig(t, dir, host, "  url: "+cloneURL+"\n  branch: main\n  auth: {tokenFile: token}\n",
		"push:\n  branch: imagebump/main\n  pullRequest:\n    provider: gitea\n    apiURL: "+gt.URL+"\n")
	out, stderr, code := runMain(t, "run", "-c", cfg, "-o", "json")
	pr := decodeRun(t, out).Targets[0].PullRequest
	if code != 0 || pr == nil || pr.Outcome != "opened" {
		t.Fatalf("first run: exit %d, pull request %+v\n%s", code, pr, stderr)
	}

	// main moves; the person updates the branch from it, then merges.
	files["NOTES.md"] = "release notes\n"
	gt.PushBranch(t, owner, repo, "main", "main", map[string]string{"NOTES.md": files["NOTES.md"]})
	gt.API(t, http.MethodPost, fmt.Sprintf("/repos/%s/%s/pulls/%d/update?style=merge", owner, repo, pr.Number), nil, http.StatusOK, nil)
	var branch struct {
		Commit struct {
			Message   string `json:"message"`
			Committer struct {
				Email string `json:"email"`
			} `json:"committer"`
		} `json:"commit"`
	}
	gt.API(t, http.MethodGet, "/repos/"+owner+"/"+repo+"/branches/imagebump%2Fmain", nil, http.StatusOK, &branch)
	if !strings.HasPrefix(branch.Commit.Message, "Merge") || branch.Commit.Committer.Email == "imagebump@localhost" {
		t.Fatalf("after update branch, the tip is %+v; want a person's merge commit", branch.Commit)
	}
	gt.MergePR(t, owner, repo, pr.Number)

	out, stderr, code = runMain(t, "run", "-c", cfg, "-o", "json")
	if got := decodeRun(t, out).Targets[0]; code != 0 || got.Error != "" || got.PullRequest != nil || len(got.Changes) != 0 {
		t.Fatalf("run after the merge: exit %d, %+v; want nothing to do\n%s", code, got, stderr)
	}

	// A new tag: the branch left by the merged pull request is replaced.
	img, err := remote.Image(mustTag(t, host+"/acme/api:2.3.4"))
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(mustTag(t, host+"/acme/api:2.3.9"), img); err != nil {
		t.Fatal(err)
	}
	out, stderr, code = runMain(t, "run", "-c", cfg, "-o", "json")
	got := decodeRun(t, out).Targets[0]
	if code != 0 || !got.Pushed || got.PullRequest == nil || got.PullRequest.Outcome != "opened" || got.PullRequest.Number == pr.Number {
		t.Fatalf("run with a new tag: exit %d, pushed=%v, pull request %+v; want a new one opened\n%s", code, got.Pushed, got.PullRequest, stderr)
	}
	prs := gt.PullRequests(t, owner, repo)
	if len(prs) != 2 || prs[0].State != "open" || !strings.Contains(prs[0].Body, "2.3.9") || !prs[1].Merged {
		t.Errorf("pull requests: %+v; want the new one open with 2.3.9, the first merged", prs)
	}

	// That one merged too, a person pushes to the branch left behind: a
	// commit after the merge is kept, as any other person's.
	second := got.PullRequest.Number
	gt.MergePR(t, owner, repo, second)
	gt.PushBranch(t, owner, repo, "imagebump/main", "imagebump/main", map[string]string{"NOTES.md": "after the merge\n"})
	gt.API(t, http.MethodGet, "/repos/"+owner+"/"+repo+"/branches/imagebump%2Fmain", nil, http.StatusOK, &branch)
	if branch.Commit.Message == "" || strings.HasPrefix(branch.Commit.Message, "Bump") {
		t.Fatalf("the person's commit is not the branch's tip: %+v", branch.Commit)
	}
	if err := remote.Write(mustTag(t, host+"/acme/api:2.3.10"), img); err != nil {
		t.Fatal(err)
	}
	out, stderr, code = runMain(t, "run", "-c", cfg, "-o", "json")
	if got := decodeRun(t, out).Targets[0]; code != ExitFailure || got.Pushed || !strings.Contains(got.Error, "which imagebump did not make") {
		t.Errorf("run over a commit pushed after the merge: exit %d, pushed=%v, error %q; want it refused\n%s", code, got.Pushed, got.Error, stderr)
	}
	var after struct {
		Commit struct {
			Message string `json:"message"`
		} `json:"commit"`
	}
	gt.API(t, http.MethodGet, "/repos/"+owner+"/"+repo+"/branches/imagebump%2Fmain", nil, http.StatusOK, &after)
	if after.Commit.Message != branch.Commit.Message {
		t.Errorf("the branch's tip is now %q, want the person's commit %q kept", after.Commit.Message, branch.Commit.Message)
	}
}

func mustTag(t *testing.T, s string) name.Tag {
	t.Helper()
	tag, err := name.NewTag(s, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	return tag
}

// TestRunPullRequestWhileAPolicyFails: a failing policy holds imagebump's
// branch only when the branch holds bumps of it, which rebuilding would
// drop. With none there (its repository gone from the start), the others
// go ahead: pushed, a pull request opened that notes the failed policy,
// and the run still exits 1. Once the branch holds its bump, a failure
// leaves the branch and the pull request as they are.
func TestRunPullRequestWhileAPolicyFails(t *testing.T) {
	gt := testgitea.Start(t)
	host := startMemRegistry(t)
	owner, repo, cloneURL := gt.CreateRepo(t, "fleet-held", demoRepoFiles(t, host))
	dir := t.TempDir()
	writeFile(t, dir, "token", gt.Token+"\n")
	cfg := runConfig(t, dir, host, "  url: "+cloneURL+"\n  branch: main\n  auth: {tokenFile: token}\n",
		"push:\n  branch: imagebump/main\n  pullRequest:\n    provider: gitea\n    apiURL: "+gt.URL+"\n")
	data, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	good := string(data)
	// apps:api's markers stay, its repository is gone: the policy fails.
	broken := strings.Replace(good, host+"/acme/api\n", host+"/acme/gone\n", 1)
	run := func(config string) (report.Target, int) {
		t.Helper()
		if err := os.WriteFile(cfg, []byte(config), 0o644); err != nil {
			t.Fatal(err)
		}
		out, stderr, code := runMain(t, "run", "-c", cfg, "-o", "json")
		if code != 0 && code != ExitFailure {
			t.Fatalf("run exit %d\n%s\n%s", code, out, stderr)
		}
		return decodeRun(t, out).Targets[0], code
	}

	got, code := run(broken)
	if code != ExitFailure || got.Held || !got.Pushed || got.PullRequest == nil || got.PullRequest.Outcome != "opened" {
		t.Fatalf("no branch yet, apps:api failing: exit %d held=%v pushed=%v pull request=%+v; want exit 1 and the others pushed and proposed", code, got.Held, got.Pushed, got.PullRequest)
	}
	prs := gt.PullRequests(t, owner, repo)
	if len(prs) != 1 || strings.Contains(prs[0].Body, "charts/api/values.yaml") || !strings.Contains(prs[0].Body, "apps:api: could not be checked this time") {
		t.Fatalf("pull request: %+v; want one without apps:api's bump, noting it", prs)
	}
	number := prs[0].Number

	// Fixed: the same pull request carries its bump too.
	if got, code = run(good); code != 0 || got.PullRequest == nil || got.PullRequest.Outcome != "updated" || got.PullRequest.Number != number {
		t.Fatalf("apps:api fixed: exit %d, pull request %+v; want #%d updated", code, got.PullRequest, number)
	}
	branch := gt.PullRequests(t, owner, repo)[0].Body

	// Failing again: the branch holds its bump, so it is held.
	got, code = run(broken)
	if code != ExitFailure || !got.Held || got.Pushed || got.PullRequest != nil {
		t.Errorf("the branch holds apps:api's bump, which fails: exit %d held=%v pushed=%v pull request=%+v; want exit 1, held, nothing pushed", code, got.Held, got.Pushed, got.PullRequest)
	}
	if prs := gt.PullRequests(t, owner, repo); len(prs) != 1 || prs[0].Body != branch || !strings.Contains(prs[0].Body, "charts/api/values.yaml") {
		t.Errorf("the pull request changed while held: %+v", prs)
	}
}
