package gitea_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/imagebump/imagebump/internal/testkit/testgitea"
	"github.com/imagebump/imagebump/pullrequest"
	"github.com/imagebump/imagebump/pullrequest/gitea"
)

// These tests run against a real Gitea (internal/testkit/testgitea), started once
// for the package.

func TestMain(m *testing.M) { os.Exit(testgitea.Main(m)) }

var repos atomic.Int64

// newRepo makes a repository with the branch imagebump/main ahead of main,
// and a Provider for it with token.
func newRepo(t *testing.T, s *testgitea.Server, token string) (owner, repo string, p *gitea.Provider) {
	t.Helper()
	owner, repo, _ = s.CreateRepo(t, fmt.Sprintf("adapter-%d", repos.Add(1)), map[string]string{"app.yaml": "image: a:1\n"})
	s.PushBranch(t, owner, repo, "main", "imagebump/main", map[string]string{"app.yaml": "image: a:2\n"})
	p, err := gitea.New(gitea.Options{APIURL: s.URL, Token: token, Owner: owner, Repo: repo})
	if err != nil {
		t.Fatal(err)
	}
	return owner, repo, p
}

func TestNewRefuses(t *testing.T) {
	for _, c := range []struct {
		name string
		opts gitea.Options
		want string
	}{
		{"no owner", gitea.Options{APIURL: "https://codeberg.org", Token: "t", Repo: "fleet"}, "owner and repository are required"},
		{"no token", gitea.Options{APIURL: "https://codeberg.org", Owner: "acme", Repo: "fleet"}, "a token is required for acme/fleet"},
		{"no URL", gitea.Options{Token: "t", Owner: "acme", Repo: "fleet"}, "the server URL is required"},
		{"not a URL", gitea.Options{APIURL: "codeberg.org", Token: "t", Owner: "acme", Repo: "fleet"}, "not an http:// or https:// URL"},
		{"credentials in the URL", gitea.Options{APIURL: "https://x:hunter2@codeberg.org", Token: "t", Owner: "acme", Repo: "fleet"}, "holds credentials"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := gitea.New(c.opts)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want an error saying %q", err, c.want)
			}
			if strings.Contains(err.Error(), "hunter2") {
				t.Errorf("the error holds the password: %v", err)
			}
		})
	}
}

// TestList checks that List keeps only the pull requests from head into
// base, open and closed, newest first, and maps the states.
func TestList(t *testing.T) {
	s := testgitea.Start(t)
	owner, repo, p := newRepo(t, s, s.Token)
	ctx := context.Background()
	open := func(head, base, title string) int {
		t.Helper()
		var pr struct {
			Number int `json:"number"`
		}
		s.API(t, http.MethodPost, "/repos/"+owner+"/"+repo+"/pulls", map[string]string{"head": head, "base": base, "title": title}, http.StatusCreated, &pr)
		return pr.Number
	}
	first := open("imagebump/main", "main", "first")
	s.MergePR(t, owner, repo, first)
	s.PushBranch(t, owner, repo, "main", "imagebump/main", map[string]string{"app.yaml": "image: a:3\n"})
	second := open("imagebump/main", "main", "second")
	s.ClosePR(t, owner, repo, second)
	s.PushBranch(t, owner, repo, "main", "feature", map[string]string{"other.yaml": "x: 1\n"})
	open("feature", "main", "other head")
	s.PushBranch(t, owner, repo, "main", "release", map[string]string{"rel.yaml": "x: 1\n"})
	open("imagebump/main", "release", "other base")
	third := open("imagebump/main", "main", "third")

	prs, err := p.List(ctx, "imagebump/main", "main")
	if err != nil {
		t.Fatal(err)
	}
	type short struct {
		Number int
		State  pullrequest.State
		Title  string
	}
	var got []short
	for _, pr := range prs {
		got = append(got, short{pr.Number, pr.State, pr.Title})
		if pr.Head != "imagebump/main" || pr.Base != "main" || !strings.HasSuffix(pr.URL, fmt.Sprintf("/%s/%s/pulls/%d", owner, repo, pr.Number)) {
			t.Errorf("pull request %+v: wrong head, base or URL", pr)
		}
	}
	// List reads the open ones and the closed ones up to the most recent:
	// the merged #first is older than the closed #second, so not needed.
	want := []short{{third, pullrequest.StateOpen, "third"}, {second, pullrequest.StateClosed, "second"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("List (-want +got):\n%s", diff)
	}

	s.ClosePR(t, owner, repo, third)
	s.PushBranch(t, owner, repo, "main", "imagebump/main", map[string]string{"app.yaml": "image: a:4\n"})
	fourth := open("imagebump/main", "main", "fourth")
	var branch struct {
		Commit struct {
			ID string `json:"id"`
		} `json:"commit"`
	}
	s.API(t, http.MethodGet, "/repos/"+owner+"/"+repo+"/branches/imagebump%2Fmain", nil, http.StatusOK, &branch)
	s.MergePR(t, owner, repo, fourth)
	prs, err = p.List(ctx, "imagebump/main", "main")
	if err != nil {
		t.Fatal(err)
	}
	if len(prs) != 1 || prs[0].Number != fourth || prs[0].State != pullrequest.StateMerged {
		t.Errorf("after merging #%d: got %+v, want only it, merged", fourth, prs)
	}
	// The merged one's head is the commit merged, which the branch holds.
	if len(prs) == 1 && (branch.Commit.ID == "" || prs[0].HeadCommit != branch.Commit.ID) {
		t.Errorf("merged #%d: head commit %q, want the branch's %q", fourth, prs[0].HeadCommit, branch.Commit.ID)
	}
	// A push to the branch after the merge does not move the recorded
	// head.
	s.PushBranch(t, owner, repo, "imagebump/main", "imagebump/main", map[string]string{"app.yaml": "image: a:5\n"})
	if got, err := p.RecordedHead(ctx, fourth); err != nil || got != branch.Commit.ID {
		t.Errorf("RecordedHead(#%d) after a push = %q, %v; want the merged head %q", fourth, got, err, branch.Commit.ID)
	}
}

// TestAddLabels checks that labels are found by name whatever their case,
// created when missing, and added next to the ones the pull request has.
func TestAddLabels(t *testing.T) {
	s := testgitea.Start(t)
	owner, repo, p := newRepo(t, s, s.Token)
	ctx := context.Background()
	var existing struct {
		ID int64 `json:"id"`
	}
	s.API(t, http.MethodPost, "/repos/"+owner+"/"+repo+"/labels", map[string]string{"name": "Dependencies", "color": "#00aabb"}, http.StatusCreated, &existing)
	pr, err := p.Create(ctx, "imagebump/main", "main", "Bump", "body")
	if err != nil {
		t.Fatal(err)
	}
	if err := p.AddLabels(ctx, pr.Number, []string{"dependencies", "imagebump"}); err != nil {
		t.Fatal(err)
	}
	if err := p.AddLabels(ctx, pr.Number, []string{"later"}); err != nil {
		t.Fatal(err)
	}
	var labels []struct {
		ID    int64  `json:"id"`
		Name  string `json:"name"`
		Color string `json:"color"`
	}
	s.API(t, http.MethodGet, "/repos/"+owner+"/"+repo+"/labels", nil, http.StatusOK, &labels)
	var names []string
	for _, l := range labels {
		names = append(names, l.Name+" "+l.Color)
	}
	slices.Sort(names)
	if diff := cmp.Diff([]string{"Dependencies 00aabb", "imagebump ededed", "later ededed"}, names); diff != "" {
		t.Errorf("repository labels (-want +got):\n%s", diff)
	}
	prs, err := p.List(ctx, "imagebump/main", "main")
	if err != nil {
		t.Fatal(err)
	}
	got := slices.Clone(prs[0].Labels)
	slices.Sort(got)
	if diff := cmp.Diff([]string{"Dependencies", "imagebump", "later"}, got); diff != "" {
		t.Errorf("pull request labels (-want +got):\n%s", diff)
	}
}

// TestErrors checks what real Gitea answers become.
func TestErrors(t *testing.T) {
	s := testgitea.Start(t)
	owner, repo, full := newRepo(t, s, s.Token)
	ctx := context.Background()
	pr, err := full.Create(ctx, "imagebump/main", "main", "Bump", "body")
	if err != nil {
		t.Fatal(err)
	}
	t.Run("409 on a duplicate", func(t *testing.T) {
		_, err := full.Create(ctx, "imagebump/main", "main", "Bump", "body")
		var pe *pullrequest.Error
		if !errors.Is(err, pullrequest.ErrAlreadyExists) || !errors.As(err, &pe) || pe.Status != http.StatusConflict {
			t.Errorf("got %v, want a 409 that Is ErrAlreadyExists", err)
		}
	})
	t.Run("404 for an unknown repository", func(t *testing.T) {
		p, err := gitea.New(gitea.Options{APIURL: s.URL, Token: s.Token, Owner: owner, Repo: "missing"})
		if err != nil {
			t.Fatal(err)
		}
		_, err = p.List(ctx, "imagebump/main", "main")
		want := fmt.Sprintf("gitea: listing pull requests in %s/missing: not found, or the token has no access to %[1]s/missing (HTTP 404): it needs the read:repository scope", owner)
		if err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("got  %v\nwant %s...", err, want)
		}
	})
	t.Run("403 on labels names the scope", func(t *testing.T) {
		tok := s.CreateToken(t, "write:repository", "read:issue")
		p, err := gitea.New(gitea.Options{APIURL: s.URL, Token: tok, Owner: owner, Repo: repo})
		if err != nil {
			t.Fatal(err)
		}
		err = p.AddLabels(ctx, pr.Number, []string{"dependencies"})
		if err == nil || !strings.Contains(err.Error(), "the token is not allowed to (HTTP 403): it needs the write:issue scope") {
			t.Errorf("got %v", err)
		}
		if err != nil && strings.Contains(err.Error(), tok) {
			t.Errorf("the error holds the token: %v", err)
		}
	})
	t.Run("API URL forms", func(t *testing.T) {
		for _, u := range []string{s.URL + "/", s.URL + "/api/v1", s.URL + "/api/v1/"} {
			p, err := gitea.New(gitea.Options{APIURL: u, Token: s.Token, Owner: owner, Repo: "missing"})
			if err != nil {
				t.Fatal(err)
			}
			_, err = p.List(ctx, "a", "b")
			var pe *pullrequest.Error
			if !errors.As(err, &pe) || pe.Status != http.StatusNotFound {
				t.Errorf("APIURL %s: got %v, want the API's 404", u, err)
			}
		}
	})
	t.Run("an API URL under the web pages", func(t *testing.T) {
		// Gitea answers the unknown path with its HTML 404 page, which
		// the SDK dumped with the request into the message, over lines.
		p, err := gitea.New(gitea.Options{APIURL: s.URL + "/some/where", Token: s.Token, Owner: owner, Repo: repo})
		if err != nil {
			t.Fatal(err)
		}
		_, err = p.List(ctx, "imagebump/main", "main")
		if err == nil || strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), "check push.pullRequest.apiURL") {
			t.Errorf("got %q, want one line naming apiURL", err)
		}
	})
	t.Run("unreachable server", func(t *testing.T) {
		p, err := gitea.New(gitea.Options{APIURL: "http://127.0.0.1:1", Token: s.Token, Owner: owner, Repo: "x"})
		if err != nil {
			t.Fatal(err)
		}
		_, err = p.List(ctx, "a", "b")
		var pe *pullrequest.Error
		if !errors.As(err, &pe) || pe.Status != 0 || !strings.Contains(err.Error(), "connection refused") || strings.Contains(err.Error(), s.Token) {
			t.Errorf("got %v", err)
		}
	})
}

// TestCommentClose comments on and closes a pull request on the real Gitea,
// and checks the comment scope in a 403.
func TestCommentClose(t *testing.T) {
	s := testgitea.Start(t)
	owner, repo, p := newRepo(t, s, s.Token)
	ctx := context.Background()
	pr, err := p.Create(ctx, "imagebump/main", "main", "Bump", "body")
	if err != nil {
		t.Fatal(err)
	}
	tok := s.CreateToken(t, "write:repository", "read:issue")
	noIssues, err := gitea.New(gitea.Options{APIURL: s.URL, Token: tok, Owner: owner, Repo: repo})
	if err != nil {
		t.Fatal(err)
	}
	err = noIssues.Comment(ctx, pr.Number, "stale")
	want := fmt.Sprintf("gitea: commenting on pull request #%d in %s/%s: the token is not allowed to (HTTP 403): it needs the write:issue scope", pr.Number, owner, repo)
	if err == nil || !strings.HasPrefix(err.Error(), want) || strings.Contains(err.Error(), tok) {
		t.Errorf("got  %v\nwant %s...", err, want)
	}

	if err := p.Comment(ctx, pr.Number, "stale: main has it"); err != nil {
		t.Fatal(err)
	}
	if err := p.Close(ctx, pr.Number); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"stale: main has it"}, s.Comments(t, owner, repo, pr.Number)); diff != "" {
		t.Errorf("comments (-want +got):\n%s", diff)
	}
	got := s.PullRequests(t, owner, repo)
	if len(got) != 1 || got[0].State != "closed" || got[0].Merged || got[0].Title != "Bump" || got[0].Body != "body" {
		t.Errorf("after Close: got %+v, want #%d closed, not merged, title and body kept", got, pr.Number)
	}
}

// TestLongTitle: a title longer than Gitea keeps is sent cut to what it
// keeps, so the next run finds the pull request unchanged. Cut to 255
// characters, Gitea cut it again to 255 bytes, and every run updated it.
func TestLongTitle(t *testing.T) {
	s := testgitea.Start(t)
	_, _, p := newRepo(t, s, s.Token)
	ctx := context.Background()
	for _, title := range []string{strings.Repeat("x", 300), strings.Repeat("é", 300)} {
		req := pullrequest.Request{Head: "imagebump/main", Base: "main", Title: title,
			Changes: []pullrequest.Change{{File: "app.yaml", Line: 1, Policy: "apps:a", Old: "1", New: "2"}}}
		if _, err := pullrequest.Ensure(ctx, p, req); err != nil {
			t.Fatal(err)
		}
		again, err := pullrequest.Ensure(ctx, p, req)
		if err != nil {
			t.Fatal(err)
		}
		if again.Outcome != pullrequest.Unchanged {
			t.Errorf("title of %d bytes: the next run %s the pull request, want it unchanged", len(title), again.Outcome)
		}
	}
}

// TestOverlappingRuns: two runs that open the pull request at the same
// moment leave one open, and once a person closes it, its bumps count as
// turned down. Gitea's check for an open pull request from the
// branch races: two overlapping runs opened two (seen by hand, twice).
func TestOverlappingRuns(t *testing.T) {
	s := testgitea.Start(t)
	ctx := context.Background()
	for round := range 4 {
		owner, repo, p := newRepo(t, s, s.Token)
		req := pullrequest.Request{Head: "imagebump/main", Base: "main", Title: "Bump a",
			Changes: []pullrequest.Change{{File: "app.yaml", Line: 1, Policy: "apps:a", Old: "1", New: "2"}}}
		var wg sync.WaitGroup
		results := make([]*pullrequest.Result, 2)
		errs := make([]error, 2)
		for i := range 2 {
			wg.Go(func() { results[i], errs[i] = pullrequest.Ensure(ctx, p, req) })
		}
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Fatalf("round %d, run %d: %v", round, i, err)
			}
		}
		var open []struct {
			Number int `json:"number"`
		}
		s.API(t, http.MethodGet, "/repos/"+owner+"/"+repo+"/pulls?state=open", nil, http.StatusOK, &open)
		if len(open) != 1 || results[0].Number != open[0].Number || results[1].Number != open[0].Number {
			t.Errorf("round %d: open %v, runs reported #%d and #%d; want one open, both reporting it", round, open, results[0].Number, results[1].Number)
			continue
		}
		// A person closes the one kept: its bumps are turned down, though
		// the twin closed as stale is newer (Gitea's list of closed ones
		// stopped at the most recent).
		s.ClosePR(t, owner, repo, open[0].Number)
		if res, err := pullrequest.Plan(ctx, p, req); err != nil || res.Outcome != pullrequest.Skipped {
			t.Errorf("round %d: after #%d was closed, Plan = %+v, %v; want skipped", round, open[0].Number, res, err)
		}
	}
}

// TestClosedWithBranchDeleted: a pull request closed without merging, its
// branch then deleted (Gitea's "delete branch" button), is still listed as
// the branch's: Gitea gives it the ref refs/pull/N/head then, with the
// branch's name in the label. It was missed, and plan said a new pull
// request would open for the bumps that were turned down.
func TestClosedWithBranchDeleted(t *testing.T) {
	s := testgitea.Start(t)
	owner, repo, p := newRepo(t, s, s.Token)
	ctx := context.Background()
	req := pullrequest.Request{Head: "imagebump/main", Base: "main", Title: "Bump a",
		Changes: []pullrequest.Change{{File: "app.yaml", Line: 1, Policy: "apps:a", Old: "1", New: "2"}}}
	opened, err := pullrequest.Ensure(ctx, p, req)
	if err != nil {
		t.Fatal(err)
	}
	s.ClosePR(t, owner, repo, opened.Number)
	s.API(t, http.MethodDelete, "/repos/"+owner+"/"+repo+"/branches/imagebump%2Fmain", nil, http.StatusNoContent, nil)
	prs, err := p.List(ctx, "imagebump/main", "main")
	if err != nil {
		t.Fatal(err)
	}
	if len(prs) != 1 || prs[0].Number != opened.Number || prs[0].State != pullrequest.StateClosed || prs[0].Head != "imagebump/main" {
		t.Fatalf("List = %+v, want #%d closed, from imagebump/main", prs, opened.Number)
	}
	if res, err := pullrequest.Plan(ctx, p, req); err != nil || res.Outcome != pullrequest.Skipped {
		t.Errorf("Plan = %+v, %v; want skipped, as the bumps were turned down", res, err)
	}
}
