package gitlab_test

import (
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
	"github.com/imagebump/imagebump/pullrequest/gitlab"
	"github.com/imagebump/imagebump/pullrequest/internal/fakeforge"
)

// These tests drive the adapter through GitLab's client-go against
// fakeforge.GitLab, an in-memory fake of the documented merge request
// endpoints it uses (GitLab itself cannot run here), or against a recording
// handler where the exact request matters.

const (
	token   = "glpat-testToken0123456789"
	project = "acme/platform/fleet"
)

func newFake(t *testing.T) (*fakeforge.GitLab, *gitlab.Provider) {
	fake := fakeforge.NewGitLab(t, project)
	fake.AddToken(token, fakeforge.Write)
	p, err := gitlab.New(gitlab.Options{APIURL: fake.URL, Token: token, Project: project})
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
		opts gitlab.Options
		want string
	}{
		{"no project", gitlab.Options{Token: token, Project: "/"}, "the project is required"},
		{"no token", gitlab.Options{Project: project}, "a token is required for " + project},
		{"not a URL", gitlab.Options{APIURL: "gitlab.com", Token: token, Project: project}, "not an http:// or https:// URL"},
		{"credentials in the URL", gitlab.Options{APIURL: "https://x:hunter2@gitlab.example.com", Token: token, Project: project}, "holds credentials"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := gitlab.New(c.opts)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want an error saying %q", err, c.want)
			}
			if strings.Contains(err.Error(), "hunter2") || strings.Contains(err.Error(), token) {
				t.Errorf("the error holds a secret: %v", err)
			}
		})
	}
}

type recorder struct {
	mu     sync.Mutex
	paths  []string
	bodies []string
	header []http.Header
	status int
	body   string
}

func (r *recorder) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	data, _ := io.ReadAll(req.Body)
	r.mu.Lock()
	r.paths = append(r.paths, req.Method+" "+req.URL.EscapedPath()+"?"+req.URL.RawQuery)
	r.bodies = append(r.bodies, string(data))
	r.header = append(r.header, req.Header.Clone())
	r.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(r.status)
	fmt.Fprint(w, r.body)
}

// TestRequests checks the exact requests: the project path is one encoded
// segment, the token goes in PRIVATE-TOKEN, the list filters on the
// server, and labels are added with add_labels.
func TestRequests(t *testing.T) {
	rec := &recorder{status: 200, body: `[]`}
	srv := httptest.NewServer(rec)
	defer srv.Close()
	p, err := gitlab.New(gitlab.Options{APIURL: srv.URL + "/", Token: token, Project: project})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := p.List(ctx, "imagebump/main", "main"); err != nil {
		t.Fatal(err)
	}
	rec.body = `{"iid": 3}`
	if err := p.AddLabels(ctx, 3, []string{"deps", "imagebump"}); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"GET /api/v4/projects/acme%2Fplatform%2Ffleet/merge_requests?order_by=created_at&per_page=100&sort=desc&source_branch=imagebump%2Fmain&state=all&target_branch=main",
		"PUT /api/v4/projects/acme%2Fplatform%2Ffleet/merge_requests/3?",
	}
	if diff := cmp.Diff(want, rec.paths); diff != "" {
		t.Errorf("requests (-want +got):\n%s", diff)
	}
	var body map[string]any
	if err := json.Unmarshal([]byte(rec.bodies[1]), &body); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]any{"add_labels": "deps,imagebump"}, body); diff != "" {
		t.Errorf("label body (-want +got):\n%s", diff)
	}
	if got := rec.header[0].Get("PRIVATE-TOKEN"); got != token {
		t.Errorf("PRIVATE-TOKEN = %q", got)
	}
}

// TestURLScrubbed: the address the forge gives a merge request is shown
// (run, plan, serve's page), so a forge that puts the token in it, as a
// careless or hostile one may, gets it shown redacted.
func TestURLScrubbed(t *testing.T) {
	rec := &recorder{status: 200, body: `[{"iid": 4, "state": "opened", "web_url": "https://forge.invalid/` + token + `/-/merge_requests/4", "source_branch": "imagebump/main", "target_branch": "main"}]`}
	srv := httptest.NewServer(rec)
	defer srv.Close()
	p, err := gitlab.New(gitlab.Options{APIURL: srv.URL + "/", Token: token, Project: project})
	if err != nil {
		t.Fatal(err)
	}
	prs, err := p.List(context.Background(), "imagebump/main", "main")
	if err != nil {
		t.Fatal(err)
	}
	if len(prs) != 1 || prs[0].URL != "https://forge.invalid/REDACTED/-/merge_requests/4" {
		t.Errorf("merge requests %+v: want one, its URL with the token redacted", prs)
	}
}

func TestList(t *testing.T) {
	const mergedHead = "5d0b2f5c1e9a4c7b8d3e6f0a1b2c3d4e5f6a7b8c" // a merged one's head commit is read
	fake, p := newFake(t)
	closed := fake.Add(fakeforge.PR{Title: "closed", Head: "imagebump/main", Base: "main"})
	fake.Close(closed)
	merged := fake.Add(fakeforge.PR{Title: "merged", Head: "imagebump/main", Base: "main", HeadSHA: mergedHead})
	fake.Merge(merged)
	fake.Add(fakeforge.PR{Title: "other branch", Head: "feature", Base: "main"})
	fake.Add(fakeforge.PR{Title: "from a fork", Head: "imagebump/main", Base: "main", FromFork: true})
	open := fake.Add(fakeforge.PR{Title: "open", Head: "imagebump/main", Base: "main", Labels: []string{"deps"}})
	prs, err := p.List(context.Background(), "imagebump/main", "main")
	if err != nil {
		t.Fatal(err)
	}
	type short struct {
		Number     int
		State      pullrequest.State
		Title      string
		Labels     []string
		HeadCommit string
	}
	var got []short
	for _, pr := range prs {
		got = append(got, short{pr.Number, pr.State, pr.Title, pr.Labels, pr.HeadCommit})
		if !strings.HasSuffix(pr.URL, fmt.Sprintf("/%s/-/merge_requests/%d", project, pr.Number)) {
			t.Errorf("URL %q", pr.URL)
		}
	}
	want := []short{
		{open, pullrequest.StateOpen, "open", []string{"deps"}, ""},
		{merged, pullrequest.StateMerged, "merged", []string{}, mergedHead},
		{closed, pullrequest.StateClosed, "closed", []string{}, ""},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("List (-want +got):\n%s", diff)
	}
}

func TestNumericProjectID(t *testing.T) {
	fake := fakeforge.NewGitLab(t, project)
	fake.AddToken(token, fakeforge.Write)
	p, err := gitlab.New(gitlab.Options{APIURL: fake.URL, Token: token, Project: fmt.Sprint(fake.ProjectID)})
	if err != nil {
		t.Fatal(err)
	}
	pr, err := p.Create(context.Background(), "imagebump/main", "main", "Bump", "body")
	if err != nil {
		t.Fatal(err)
	}
	if pr.Number != 1 || pr.State != pullrequest.StateOpen || pr.Body != "body" {
		t.Errorf("Create returned %+v", pr)
	}
}

func TestLockedIsOpen(t *testing.T) {
	srv := httptest.NewServer(&recorder{status: 200, body: `[{"iid":4,"state":"locked","source_branch":"b","target_branch":"main","source_project_id":1,"target_project_id":1}]`})
	defer srv.Close()
	p, err := gitlab.New(gitlab.Options{APIURL: srv.URL, Token: token, Project: project})
	if err != nil {
		t.Fatal(err)
	}
	prs, err := p.List(context.Background(), "b", "main")
	if err != nil || len(prs) != 1 || prs[0].State != pullrequest.StateOpen {
		t.Errorf("got %+v, %v; want one open merge request", prs, err)
	}
}

func TestErrors(t *testing.T) {
	ctx := context.Background()
	t.Run("409 on a duplicate", func(t *testing.T) {
		_, p := newFake(t)
		if _, err := p.Create(ctx, "imagebump/main", "main", "Bump", "body"); err != nil {
			t.Fatal(err)
		}
		_, err := p.Create(ctx, "imagebump/main", "main", "Bump", "body")
		if !errors.Is(err, pullrequest.ErrAlreadyExists) {
			t.Errorf("got %v, want ErrAlreadyExists", err)
		}
	})
	t.Run("403 names what the token lacks", func(t *testing.T) {
		fake, _ := newFake(t)
		fake.AddToken("glpat-readonly", fakeforge.Read)
		p, err := gitlab.New(gitlab.Options{APIURL: fake.URL, Token: "glpat-readonly", Project: project})
		if err != nil {
			t.Fatal(err)
		}
		err = p.AddLabels(ctx, 1, []string{"x"})
		want := "gitlab: adding labels to merge request !1 in acme/platform/fleet: the token is not allowed to (HTTP 403): it needs the api scope and at least the Developer role in the project"
		if err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("got  %v\nwant %s...", err, want)
		}
	})
	t.Run("404 for another project", func(t *testing.T) {
		fake, _ := newFake(t)
		p, err := gitlab.New(gitlab.Options{APIURL: fake.URL, Token: token, Project: "acme/other"})
		if err != nil {
			t.Fatal(err)
		}
		_, err = p.List(ctx, "imagebump/main", "main")
		var pe *pullrequest.Error
		if !errors.As(err, &pe) || pe.Status != 404 || !strings.Contains(err.Error(), "not found, or the token has no access to acme/other (HTTP 404): it needs the read_api") {
			t.Errorf("got %v", err)
		}
	})
	t.Run("401", func(t *testing.T) {
		fake, _ := newFake(t)
		p, err := gitlab.New(gitlab.Options{APIURL: fake.URL, Token: "glpat-unknown", Project: project})
		if err != nil {
			t.Fatal(err)
		}
		_, err = p.Update(ctx, 1, "t", "b")
		if err == nil || !strings.Contains(err.Error(), "the token is invalid or expired (HTTP 401)") || strings.Contains(err.Error(), "glpat-unknown") {
			t.Errorf("got %v", err)
		}
	})
	t.Run("cancelled context", func(t *testing.T) {
		fake, p := newFake(t)
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		if _, err := p.Create(cctx, "a", "b", "t", "b"); !errors.Is(err, context.Canceled) {
			t.Errorf("got %v, want context.Canceled", err)
		}
		if fake.Writes() != 0 {
			t.Error("a request reached the fake")
		}
	})
}

// TestCommentClose checks the exact requests Comment and Close send, as
// GitLab documents them: a note on the merge request, and an update with
// state_event close. Then it runs both on the fake.
func TestCommentClose(t *testing.T) {
	rec := &recorder{status: 201, body: `{"id": 1, "iid": 3}`}
	srv := httptest.NewServer(rec)
	defer srv.Close()
	p, err := gitlab.New(gitlab.Options{APIURL: srv.URL, Token: token, Project: project})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := p.Comment(ctx, 3, "stale: main has it"); err != nil {
		t.Fatal(err)
	}
	rec.status = 200
	if err := p.Close(ctx, 3); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"POST /api/v4/projects/acme%2Fplatform%2Ffleet/merge_requests/3/notes?",
		"PUT /api/v4/projects/acme%2Fplatform%2Ffleet/merge_requests/3?",
	}
	if diff := cmp.Diff(want, rec.paths); diff != "" {
		t.Errorf("requests (-want +got):\n%s", diff)
	}
	var bodies []map[string]any
	for _, b := range rec.bodies {
		var m map[string]any
		if err := json.Unmarshal([]byte(b), &m); err != nil {
			t.Fatal(err)
		}
		bodies = append(bodies, m)
	}
	wantBodies := []map[string]any{{"body": "stale: main has it"}, {"state_event": "close"}}
	if diff := cmp.Diff(wantBodies, bodies); diff != "" {
		t.Errorf("bodies (-want +got):\n%s", diff)
	}

	fake, p := newFake(t)
	mr, err := p.Create(ctx, "imagebump/main", "main", "Bump", "body")
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Comment(ctx, mr.Number, "stale"); err != nil {
		t.Fatal(err)
	}
	if err := p.Close(ctx, mr.Number); err != nil {
		t.Fatal(err)
	}
	got := fake.PRs()
	if len(got) != 1 || got[0].State != "closed" || !cmp.Equal(got[0].Comments, []string{"stale"}) {
		t.Errorf("stored: got %+v, want !1 closed with comment stale", got)
	}
	prs, err := p.List(ctx, "imagebump/main", "main")
	if err != nil {
		t.Fatal(err)
	}
	if len(prs) != 1 || prs[0].State != pullrequest.StateClosed {
		t.Errorf("List after Close: got %+v, want !1 closed", prs)
	}
}
