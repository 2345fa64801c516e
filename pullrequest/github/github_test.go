package github_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/imagebump/imagebump/pullrequest"
	"github.com/imagebump/imagebump/pullrequest/github"
	"github.com/imagebump/imagebump/pullrequest/internal/fakeforge"
)

// These tests drive the adapter through go-github against
// fakeforge.GitHub, an in-memory fake of the documented GitHub REST
// endpoints it uses (GitHub itself cannot run here), or against a recording
// handler where the exact request matters.

const token = "ghp_testToken0123456789abcdefghijklmnop"

func newFake(t *testing.T) (*fakeforge.GitHub, *github.Provider) {
	fake := fakeforge.NewGitHub(t, "acme", "fleet")
	fake.AddToken(token, fakeforge.Write)
	p, err := github.New(github.Options{APIURL: fake.URL, Token: token, Owner: "acme", Repo: "fleet"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if s := fake.Strays(); len(s) > 0 {
			t.Errorf("calls to endpoints the fake does not serve: %v", s)
		}
	})
	return fake, p
}

func TestNewRefuses(t *testing.T) {
	for _, c := range []struct {
		name string
		opts github.Options
		want string
	}{
		{"no owner", github.Options{Token: token, Repo: "fleet"}, "owner and repository are required"},
		{"no token", github.Options{Owner: "acme", Repo: "fleet"}, "a token is required for acme/fleet"},
		{"not a URL", github.Options{APIURL: "api.github.com", Token: token, Owner: "acme", Repo: "fleet"}, "not an http:// or https:// URL"},
		{"credentials in the URL", github.Options{APIURL: "https://x:hunter2@ghe.example.com/api/v3/", Token: token, Owner: "acme", Repo: "fleet"}, "holds credentials"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := github.New(c.opts)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want an error saying %q", err, c.want)
			}
			if strings.Contains(err.Error(), "hunter2") || strings.Contains(err.Error(), token) {
				t.Errorf("the error holds a secret: %v", err)
			}
		})
	}
}

// recorder answers every request with status and body and records what it
// was asked.
type recorder struct {
	mu       sync.Mutex
	requests []*http.Request
	status   int
	header   http.Header
	body     string
}

func (r *recorder) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	r.mu.Lock()
	r.requests = append(r.requests, req.Clone(context.Background()))
	r.mu.Unlock()
	for k, v := range r.header {
		w.Header()[k] = v
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(r.status)
	fmt.Fprint(w, r.body)
}

// TestListRequest checks the request List sends to a GitHub Enterprise
// Server API URL given without a trailing slash.
func TestListRequest(t *testing.T) {
	rec := &recorder{status: 200, body: "[]"}
	srv := httptest.NewServer(rec)
	defer srv.Close()
	p, err := github.New(github.Options{APIURL: srv.URL + "/api/v3", Token: token, Owner: "acme", Repo: "fleet"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.List(context.Background(), "imagebump/main", "main"); err != nil {
		t.Fatal(err)
	}
	if len(rec.requests) != 1 {
		t.Fatalf("got %d requests, want 1", len(rec.requests))
	}
	r := rec.requests[0]
	got := map[string]string{
		"method": r.Method,
		"path":   r.URL.Path,
		"state":  r.URL.Query().Get("state"),
		"head":   r.URL.Query().Get("head"),
		"base":   r.URL.Query().Get("base"),
		"per":    r.URL.Query().Get("per_page"),
		"auth":   r.Header.Get("Authorization"),
		"agent":  r.Header.Get("User-Agent"),
	}
	want := map[string]string{
		"method": "GET",
		"path":   "/api/v3/repos/acme/fleet/pulls",
		"state":  "all",
		"head":   "acme:imagebump/main",
		"base":   "main",
		"per":    "100",
		"auth":   "Bearer " + token,
		"agent":  "imagebump",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("request (-want +got):\n%s", diff)
	}
}

// TestURLScrubbed: the address the forge gives a pull request is shown
// (run, plan, serve's page), so a forge that puts the token in it, as a
// careless or hostile one may, gets it shown redacted.
func TestURLScrubbed(t *testing.T) {
	rec := &recorder{status: 200, body: `[{"number": 1, "state": "open", "html_url": "https://forge.invalid/` + token + `/acme/fleet/pull/1", "head": {"ref": "imagebump/main"}, "base": {"ref": "main"}}]`}
	srv := httptest.NewServer(rec)
	defer srv.Close()
	p, err := github.New(github.Options{APIURL: srv.URL, Token: token, Owner: "acme", Repo: "fleet"})
	if err != nil {
		t.Fatal(err)
	}
	prs, err := p.List(context.Background(), "imagebump/main", "main")
	if err != nil {
		t.Fatal(err)
	}
	if len(prs) != 1 || prs[0].URL != "https://forge.invalid/REDACTED/acme/fleet/pull/1" {
		t.Errorf("pull requests %+v: want one, its URL with the token redacted", prs)
	}
}

// TestList checks states, the head and base filter, forks, and paging.
func TestList(t *testing.T) {
	const mergedHead = "5d0b2f5c1e9a4c7b8d3e6f0a1b2c3d4e5f6a7b8c" // a merged one's head commit is read
	fake, p := newFake(t)
	for i := range 150 {
		n := fake.Add(fakeforge.PR{Title: fmt.Sprint("old ", i), Head: "imagebump/main", Base: "main"})
		fake.Close(n)
	}
	merged := fake.Add(fakeforge.PR{Title: "merged", Head: "imagebump/main", Base: "main", HeadSHA: mergedHead})
	fake.Merge(merged)
	fake.Add(fakeforge.PR{Title: "other branch", Head: "feature", Base: "main"})
	fake.Add(fakeforge.PR{Title: "other base", Head: "imagebump/main", Base: "release"})
	fake.Add(fakeforge.PR{Title: "from a fork", Head: "imagebump/main", Base: "main", FromFork: true})
	open := fake.Add(fakeforge.PR{Title: "open", Head: "imagebump/main", Base: "main", Labels: []string{"deps"}})

	prs, err := p.List(context.Background(), "imagebump/main", "main")
	if err != nil {
		t.Fatal(err)
	}
	if len(prs) != 152 {
		t.Fatalf("got %d pull requests, want 152 (150 closed, merged, open)", len(prs))
	}
	type short struct {
		Number     int
		State      pullrequest.State
		Title      string
		Labels     []string
		HeadCommit string
	}
	var got []short
	for _, pr := range prs[:3] {
		got = append(got, short{pr.Number, pr.State, pr.Title, pr.Labels, pr.HeadCommit})
		if pr.Head != "imagebump/main" || pr.Base != "main" || !strings.HasSuffix(pr.URL, fmt.Sprintf("/acme/fleet/pull/%d", pr.Number)) {
			t.Errorf("pull request %+v: wrong head, base or URL", pr)
		}
	}
	want := []short{
		{open, pullrequest.StateOpen, "open", []string{"deps"}, ""},
		{merged, pullrequest.StateMerged, "merged", nil, mergedHead},
		{merged - 1, pullrequest.StateClosed, "old 149", nil, ""},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("newest pull requests (-want +got):\n%s", diff)
	}
}

func TestCreateUpdateLabel(t *testing.T) {
	fake, p := newFake(t)
	ctx := context.Background()
	pr, err := p.Create(ctx, "imagebump/main", "main", "Bump", "body")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Update(ctx, pr.Number, "Bump 2", "body 2"); err != nil {
		t.Fatal(err)
	}
	if err := p.AddLabels(ctx, pr.Number, []string{"deps", "imagebump"}); err != nil {
		t.Fatal(err)
	}
	if err := p.AddLabels(ctx, pr.Number, []string{"more"}); err != nil {
		t.Fatal(err)
	}
	got := fake.PRs()
	want := []fakeforge.PR{{Number: 1, Title: "Bump 2", Body: "body 2", Head: "imagebump/main", Base: "main", State: "open", Labels: []string{"deps", "imagebump", "more"}}}
	if diff := cmp.Diff(want, got, cmpIgnoreTimes); diff != "" {
		t.Errorf("stored (-want +got):\n%s", diff)
	}
	_, err = p.Create(ctx, "imagebump/main", "main", "Bump", "body")
	if !errors.Is(err, pullrequest.ErrAlreadyExists) {
		t.Errorf("a second Create: got %v, want ErrAlreadyExists", err)
	}
	if fake.Writes() != 5 {
		t.Errorf("got %d writes, want 5", fake.Writes())
	}
}

var cmpIgnoreTimes = cmp.FilterPath(func(p cmp.Path) bool {
	switch p.Last().String() {
	case ".Created", ".MergedAt", ".ClosedAt":
		return true
	}
	return false
}, cmp.Ignore())

func TestErrors(t *testing.T) {
	ctx := context.Background()
	t.Run("403 on create names what the token lacks", func(t *testing.T) {
		fake, _ := newFake(t)
		fake.AddToken("ghp_readonly", fakeforge.Read)
		p, err := github.New(github.Options{APIURL: fake.URL, Token: "ghp_readonly", Owner: "acme", Repo: "fleet"})
		if err != nil {
			t.Fatal(err)
		}
		_, err = p.Create(ctx, "imagebump/main", "main", "Bump", "body")
		want := "github: creating a pull request in acme/fleet: the token is not allowed to (HTTP 403): it needs pull_requests: write (fine-grained) or the repo scope (classic)"
		if err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("got  %v\nwant %s...", err, want)
		}
	})
	t.Run("404 for another repository", func(t *testing.T) {
		fake, _ := newFake(t)
		p, err := github.New(github.Options{APIURL: fake.URL, Token: token, Owner: "acme", Repo: "other"})
		if err != nil {
			t.Fatal(err)
		}
		_, err = p.List(ctx, "imagebump/main", "main")
		var pe *pullrequest.Error
		if !errors.As(err, &pe) || pe.Status != 404 || !strings.Contains(err.Error(), "not found, or the token has no access to acme/other (HTTP 404): it needs pull_requests: read") {
			t.Errorf("got %v", err)
		}
		// A wrong API URL answers 404 too: the error names the one used.
		if want := "; or " + strings.TrimSuffix(fake.URL, "/") + "/ is not the forge's API: check push.pullRequest.apiURL"; err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("got %v, want it to say %q", err, want)
		}
	})
	t.Run("server error", func(t *testing.T) {
		fake, p := newFake(t)
		fake.FailWith(http.StatusBadGateway)
		_, err := p.Update(ctx, 1, "t", "b")
		if err == nil || !strings.HasPrefix(err.Error(), "github: updating pull request #1 in acme/fleet: the forge failed on its side (HTTP 502); the next cycle (or run) tries again") {
			t.Errorf("got %v", err)
		}
	})
	for _, c := range []struct {
		name   string
		status int
		header http.Header
		body   string
		check  func(*pullrequest.Error) bool
	}{
		{"rate limit", 403, http.Header{"X-Ratelimit-Remaining": {"0"}, "X-Ratelimit-Limit": {"5000"}, "X-Ratelimit-Reset": {"1999999999"}},
			`{"message":"API rate limit exceeded for user ID 1."}`,
			func(e *pullrequest.Error) bool { return e.RateLimited && strings.Contains(e.Error(), "rate limited") }},
		{"secondary rate limit", 403, http.Header{"Retry-After": {"60"}},
			`{"message":"You have exceeded a secondary rate limit.","documentation_url":"https://docs.github.com/rest/overview/rate-limits-for-the-rest-api#about-secondary-rate-limits"}`,
			func(e *pullrequest.Error) bool { return e.RateLimited }},
		// GitHub's answer to a workflow's token when the Actions settings
		// do not let workflows open pull requests.
		{"actions not permitted names the setting", 403, nil,
			`{"message":"GitHub Actions is not permitted to create or approve pull requests.","documentation_url":"https://docs.github.com/rest/pulls/pulls#create-a-pull-request"}`,
			func(e *pullrequest.Error) bool {
				return !e.RateLimited && strings.Contains(e.Error(), `it needs the repository's setting Settings > Actions > General > Workflow permissions > "Allow GitHub Actions to create and approve pull requests"`)
			}},
		{"no commits is not a duplicate", 422, nil,
			`{"message":"Validation Failed","errors":[{"resource":"PullRequest","code":"custom","message":"No commits between main and imagebump/main"}]}`,
			func(e *pullrequest.Error) bool {
				return !e.Exists && strings.Contains(e.Error(), "HTTP 422; github said: Validation Failed: No commits between main and imagebump/main")
			}},
		{"token echoed back is scrubbed", 400, nil,
			`{"message":"bad token ` + token + `"}`,
			func(e *pullrequest.Error) bool {
				return !strings.Contains(e.Error(), token) && strings.Contains(e.Error(), "REDACTED")
			}},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv := httptest.NewServer(&recorder{status: c.status, header: c.header, body: c.body})
			defer srv.Close()
			p, err := github.New(github.Options{APIURL: srv.URL, Token: token, Owner: "acme", Repo: "fleet"})
			if err != nil {
				t.Fatal(err)
			}
			_, err = p.Create(ctx, "imagebump/main", "main", "Bump", "body")
			var pe *pullrequest.Error
			if !errors.As(err, &pe) || !c.check(pe) {
				t.Errorf("got %v (%+v)", err, pe)
			}
			if err != nil && strings.Contains(fmt.Sprintf("%v %+v", err, pe), token) {
				t.Errorf("the error holds the token: %v", err)
			}
		})
	}
	t.Run("cancelled context", func(t *testing.T) {
		fake, p := newFake(t)
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		if _, err := p.List(cctx, "a", "b"); !errors.Is(err, context.Canceled) {
			t.Errorf("got %v, want context.Canceled", err)
		}
		if fake.Writes() != 0 {
			t.Error("a request reached the fake")
		}
	})
}

// TestCommentClose checks the exact requests Comment and Close send, as
// GitHub documents them: a comment through the issues API, and a PATCH of
// the pull request's state. Then it runs both on the fake.
func TestCommentClose(t *testing.T) {
	rec := &bodyRecorder{}
	srv := httptest.NewServer(rec)
	defer srv.Close()
	p, err := github.New(github.Options{APIURL: srv.URL, Token: token, Owner: "acme", Repo: "fleet"})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := p.Comment(ctx, 7, "stale: main has it"); err != nil {
		t.Fatal(err)
	}
	if err := p.Close(ctx, 7); err != nil {
		t.Fatal(err)
	}
	want := []string{
		`POST /repos/acme/fleet/issues/7/comments {"body":"stale: main has it"}`,
		`PATCH /repos/acme/fleet/pulls/7 {"state":"closed"}`,
	}
	if diff := cmp.Diff(want, rec.got()); diff != "" {
		t.Errorf("requests (-want +got):\n%s", diff)
	}

	fake, p := newFake(t)
	pr, err := p.Create(ctx, "imagebump/main", "main", "Bump", "body")
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Comment(ctx, pr.Number, "stale"); err != nil {
		t.Fatal(err)
	}
	if err := p.Close(ctx, pr.Number); err != nil {
		t.Fatal(err)
	}
	got := fake.PRs()
	wantPRs := []fakeforge.PR{{Number: 1, Title: "Bump", Body: "body", Head: "imagebump/main", Base: "main", State: "closed", Comments: []string{"stale"}}}
	if diff := cmp.Diff(wantPRs, got, cmpIgnoreTimes); diff != "" {
		t.Errorf("stored (-want +got):\n%s", diff)
	}
	prs, err := p.List(ctx, "imagebump/main", "main")
	if err != nil {
		t.Fatal(err)
	}
	if len(prs) != 1 || prs[0].State != pullrequest.StateClosed {
		t.Errorf("List after Close: got %+v, want #1 closed", prs)
	}
}

// bodyRecorder answers 200 {} to every request and records its method,
// path and compacted JSON body.
type bodyRecorder struct {
	mu   sync.Mutex
	reqs []string
}

func (b *bodyRecorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var buf bytes.Buffer
	data, _ := io.ReadAll(r.Body)
	if err := json.Compact(&buf, data); err != nil {
		buf.Write(data)
	}
	b.mu.Lock()
	b.reqs = append(b.reqs, r.Method+" "+r.URL.EscapedPath()+" "+buf.String())
	b.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprint(w, "{}")
}

func (b *bodyRecorder) got() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.reqs...)
}
