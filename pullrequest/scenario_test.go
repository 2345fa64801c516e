package pullrequest_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log"
	"log/slog"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/imagebump/imagebump/internal/testkit/testgitea"
	"github.com/imagebump/imagebump/pullrequest"
	"github.com/imagebump/imagebump/pullrequest/gitea"
	"github.com/imagebump/imagebump/pullrequest/github"
	"github.com/imagebump/imagebump/pullrequest/gitlab"
	"github.com/imagebump/imagebump/pullrequest/internal/fakeforge"
)

func TestMain(m *testing.M) { os.Exit(testgitea.Main(m)) }

// forge is one provider under test, with what the scenarios need to drive
// it and to look at it independently of the adapter.
type forge struct {
	// p has a token allowed everything; readOnly one allowed to read only;
	// badToken one the forge does not know.
	p, readOnly, badToken pullrequest.Provider
	// tokens are every token the forge was given, to search for leaks.
	tokens []string
	// writes counts the write calls (POST, PATCH, PUT) that reached the
	// forge.
	writes func() int
	// push makes the head branch carry changes (a real commit on Gitea).
	push func(t *testing.T, changes []pullrequest.Change)
	// vanish makes base carry changes, as when someone makes the bumps by
	// hand, so that the head branch no longer proposes anything.
	vanish func(t *testing.T, changes []pullrequest.Change)
	// merge and close act on a pull request as a person would.
	merge, close func(t *testing.T, number int)
	// removeLabel removes a label from a pull request as a person would.
	removeLabel func(t *testing.T, number int, name string)
	// comments lists the comments on a pull request, read without the
	// adapter, oldest first.
	comments func(t *testing.T, number int) []string
	// prs lists every pull request of the repository, read without the
	// adapter, newest first.
	prs func(t *testing.T) []pullrequest.PR
	// denied is what the 403 error must say the token needs;
	// deniedComment the same for posting a comment.
	denied, deniedComment string
}

const (
	head = "imagebump/main"
	base = "main"
)

var (
	bumpA = pullrequest.Request{
		Head: head, Base: base,
		Title: "Bump apps:app to 1.5.0",
		Changes: []pullrequest.Change{
			{File: "apps/app.yaml", Line: 3, Policy: "apps:app", Old: "ghcr.io/acme/app:1.4.2", New: "ghcr.io/acme/app:1.5.0"},
		},
		Labels: []string{"dependencies", "imagebump"},
	}
	bumpB = pullrequest.Request{
		Head: head, Base: base,
		Title: "Bump 2 images",
		Changes: []pullrequest.Change{
			{File: "apps/app.yaml", Line: 3, Policy: "apps:app", Old: "ghcr.io/acme/app:1.4.2", New: "ghcr.io/acme/app:1.6.0"},
			{File: "apps/web.yaml", Line: 7, Policy: "apps:web", Old: "2.0.0", New: "2.1.0"},
		},
		Labels: []string{"dependencies", "imagebump"},
	}
)

// files is the content of the files changes touch, before (old) or after
// (new) the bump.
func files(changes []pullrequest.Change, new bool) map[string]string {
	out := map[string]string{}
	for _, c := range changes {
		v := c.Old
		if new {
			v = c.New
		}
		out[c.File] += fmt.Sprintf("image: %s # {\"$imagepolicy\": %q}\n", v, c.Policy)
	}
	return out
}

// allFiles is the content of main before any bump: every file of both
// requests at its old value.
func allFiles() map[string]string {
	return files(append(slices.Clone(bumpA.Changes), bumpB.Changes[1]), false)
}

var giteaRepos atomic.Int64

// forges builds each provider for one scenario, on a fresh repository.
var forges = []struct {
	name string
	new  func(t *testing.T) *forge
}{
	{"github", newGitHubForge},
	{"gitlab", newGitLabForge},
	{"gitea", newGiteaForge},
}

// newGitHubForge is GitHub, which cannot run here: the github adapter
// drives go-github against fakeforge.GitHub, an in-memory fake of the
// documented REST endpoints it uses.
func newGitHubForge(t *testing.T) *forge {
	fake := fakeforge.NewGitHub(t, "acme", "fleet")
	fake.AddToken("ghp_fullAccessToken0000000000000000000", fakeforge.Write)
	fake.AddToken("ghp_readOnlyToken00000000000000000000", fakeforge.Read)
	mk := func(token string) pullrequest.Provider {
		p, err := github.New(github.Options{APIURL: fake.URL, Token: token, Owner: "acme", Repo: "fleet"})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	t.Cleanup(func() {
		if s := fake.Strays(); len(s) > 0 {
			t.Errorf("the adapter called endpoints the fake does not serve: %v", s)
		}
	})
	return &forge{
		p:             mk("ghp_fullAccessToken0000000000000000000"),
		readOnly:      mk("ghp_readOnlyToken00000000000000000000"),
		badToken:      mk("ghp_revokedToken000000000000000000000"),
		tokens:        []string{"ghp_fullAccessToken0000000000000000000", "ghp_readOnlyToken00000000000000000000", "ghp_revokedToken000000000000000000000"},
		writes:        fake.Writes,
		push:          func(*testing.T, []pullrequest.Change) {}, // the fake keeps no branches
		vanish:        func(*testing.T, []pullrequest.Change) {},
		merge:         func(_ *testing.T, n int) { fake.Merge(n) },
		close:         func(_ *testing.T, n int) { fake.Close(n) },
		removeLabel:   func(_ *testing.T, n int, name string) { fake.RemoveLabel(n, name) },
		comments:      func(_ *testing.T, n int) []string { return fakeComments(fake.PRs(), n) },
		prs:           func(*testing.T) []pullrequest.PR { return fakePRs(fake.PRs()) },
		denied:        "it needs pull_requests: write (fine-grained) or the repo scope (classic)",
		deniedComment: "it needs issues: write or pull_requests: write (fine-grained) or the repo scope (classic)",
	}
}

// newGitLabForge is GitLab, which cannot run here: the gitlab adapter
// drives GitLab's client-go against fakeforge.GitLab, an in-memory fake of
// the documented merge request endpoints it uses.
func newGitLabForge(t *testing.T) *forge {
	fake := fakeforge.NewGitLab(t, "acme/platform/fleet")
	fake.AddToken("glpat-fullAccessToken00000", fakeforge.Write)
	fake.AddToken("glpat-readOnlyToken0000000", fakeforge.Read)
	mk := func(token string) pullrequest.Provider {
		p, err := gitlab.New(gitlab.Options{APIURL: fake.URL, Token: token, Project: "acme/platform/fleet"})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	t.Cleanup(func() {
		if s := fake.Strays(); len(s) > 0 {
			t.Errorf("the adapter called endpoints the fake does not serve: %v", s)
		}
	})
	return &forge{
		p:             mk("glpat-fullAccessToken00000"),
		readOnly:      mk("glpat-readOnlyToken0000000"),
		badToken:      mk("glpat-revokedToken00000000"),
		tokens:        []string{"glpat-fullAccessToken00000", "glpat-readOnlyToken0000000", "glpat-revokedToken00000000"},
		writes:        fake.Writes,
		push:          func(*testing.T, []pullrequest.Change) {},
		vanish:        func(*testing.T, []pullrequest.Change) {},
		merge:         func(_ *testing.T, n int) { fake.Merge(n) },
		close:         func(_ *testing.T, n int) { fake.Close(n) },
		removeLabel:   func(_ *testing.T, n int, name string) { fake.RemoveLabel(n, name) },
		comments:      func(_ *testing.T, n int) []string { return fakeComments(fake.PRs(), n) },
		prs:           func(*testing.T) []pullrequest.PR { return fakePRs(fake.PRs()) },
		denied:        "it needs the api scope and at least the Developer role in the project",
		deniedComment: "it needs the api scope and at least the Developer role in the project",
	}
}

func fakeComments(stored []fakeforge.PR, number int) []string {
	for _, p := range stored {
		if p.Number == number {
			return p.Comments
		}
	}
	return nil
}

func fakePRs(stored []fakeforge.PR) []pullrequest.PR {
	var out []pullrequest.PR
	for _, p := range slices.Backward(stored) {
		out = append(out, pullrequest.PR{Number: p.Number, State: pullrequest.State(p.State), Title: p.Title, Body: p.Body, Head: p.Head, Base: p.Base, Labels: p.Labels})
	}
	return out
}

// newGiteaForge is a real Gitea, with a new repository per scenario. Write
// calls are counted on the adapter's HTTP client.
func newGiteaForge(t *testing.T) *forge {
	s := testgitea.Start(t)
	name := fmt.Sprintf("fleet-%d", giteaRepos.Add(1))
	owner, repo, _ := s.CreateRepo(t, name, allFiles())
	counter := &writeCounter{next: http.DefaultTransport}
	hc := &http.Client{Transport: counter}
	readOnly := s.CreateToken(t, "read:repository", "read:issue")
	mk := func(token string) pullrequest.Provider {
		p, err := gitea.New(gitea.Options{APIURL: s.URL, Token: token, Owner: owner, Repo: repo, HTTPClient: hc})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	const revoked = "0123456789abcdef0123456789abcdef01234567"
	return &forge{
		p:        mk(s.Token),
		readOnly: mk(readOnly),
		badToken: mk(revoked),
		tokens:   []string{s.Token, readOnly, revoked},
		writes:   counter.count,
		push: func(t *testing.T, changes []pullrequest.Change) {
			s.PushBranch(t, owner, repo, base, head, files(changes, true))
		},
		vanish: func(t *testing.T, changes []pullrequest.Change) {
			s.PushBranch(t, owner, repo, base, base, files(changes, true))
		},
		merge:       func(t *testing.T, n int) { s.MergePR(t, owner, repo, n) },
		close:       func(t *testing.T, n int) { s.ClosePR(t, owner, repo, n) },
		removeLabel: func(t *testing.T, n int, name string) { s.RemoveLabel(t, owner, repo, n, name) },
		comments:    func(t *testing.T, n int) []string { return s.Comments(t, owner, repo, n) },
		prs: func(t *testing.T) []pullrequest.PR {
			var out []pullrequest.PR
			for _, p := range s.PullRequests(t, owner, repo) {
				st := pullrequest.State(p.State)
				if p.Merged {
					st = pullrequest.StateMerged
				}
				var labels []string
				for _, l := range p.Labels {
					labels = append(labels, l.Name)
				}
				out = append(out, pullrequest.PR{Number: p.Number, State: st, Title: p.Title, Body: p.Body, Head: p.Head.Ref, Base: p.Base.Ref, Labels: labels})
			}
			return out
		},
		denied:        "it needs the write:repository scope",
		deniedComment: "it needs the write:issue scope",
	}
}

// writeCounter counts the requests that write.
type writeCounter struct {
	next http.RoundTripper
	mu   sync.Mutex
	n    int
}

func (c *writeCounter) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		c.mu.Lock()
		c.n++
		c.mu.Unlock()
	}
	return c.next.RoundTrip(r)
}

func (c *writeCounter) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

// ensure runs Ensure and fails the test on an error or a leaked token.
func (f *forge) ensure(t *testing.T, req pullrequest.Request) *pullrequest.Result {
	t.Helper()
	res, err := pullrequest.Ensure(context.Background(), f.p, req)
	if err != nil {
		t.Fatalf("Ensure: %v", err)
	}
	return res
}

// plan runs Plan and checks that it wrote nothing.
func (f *forge) plan(t *testing.T, req pullrequest.Request) *pullrequest.Result {
	t.Helper()
	before := f.writes()
	res, err := pullrequest.Plan(context.Background(), f.p, req)
	if err != nil {
		t.Fatalf("Plan: %v", err)
	}
	if n := f.writes() - before; n != 0 {
		t.Errorf("Plan made %d write calls, want 0", n)
	}
	return res
}

// noLeak fails when a token of the forge appears in s.
func (f *forge) noLeak(t *testing.T, what, s string) {
	t.Helper()
	for _, tok := range f.tokens {
		if strings.Contains(s, tok) {
			t.Errorf("%s holds a token: %s", what, s)
		}
	}
}

// summary is what the scenarios compare of a pull request.
type summary struct {
	Number int
	State  pullrequest.State
	Title  string
	Key    string
	Labels []string
}

func (f *forge) summaries(t *testing.T) []summary {
	t.Helper()
	var out []summary
	for _, p := range f.prs(t) {
		if p.Head != head || p.Base != base {
			t.Errorf("pull request #%d goes from %s into %s, want %s into %s", p.Number, p.Head, p.Base, head, base)
		}
		f.noLeak(t, "a pull request body", p.Body)
		labels := slices.Clone(p.Labels)
		slices.Sort(labels)
		out = append(out, summary{p.Number, p.State, p.Title, pullrequest.ContentKeyOf(p.Body), labels})
	}
	return out
}

// closeReason is the comment Close posts in the scenarios.
const closeReason = "imagebump closes this pull request: main already has these bumps, so the branch proposes nothing."

var (
	keyA   = pullrequest.ContentKey(bumpA.Changes)
	keyB   = pullrequest.ContentKey(bumpB.Changes)
	labels = []string{"dependencies", "imagebump"}
)

// staleList is a Provider whose first List answers nothing, as when
// another imagebump opens the pull request between our list and create.
type staleList struct {
	pullrequest.Provider
	stale atomic.Bool
}

func (s *staleList) List(ctx context.Context, head, base string) ([]pullrequest.PR, error) {
	if s.stale.CompareAndSwap(false, true) {
		return nil, nil
	}
	return s.Provider.List(ctx, head, base)
}

// TestScenarios runs the same lifecycle scenarios against every provider:
// GitHub and GitLab through their client libraries against in-memory fakes
// of their REST APIs, Gitea for real.
func TestScenarios(t *testing.T) {
	// Client libraries must not log; whatever they would is caught here and
	// searched for tokens.
	var logs syncBuffer
	oldSlog, oldLog := slog.Default(), log.Writer()
	slog.SetDefault(slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})))
	log.SetOutput(&logs)
	t.Cleanup(func() {
		slog.SetDefault(oldSlog)
		log.SetOutput(oldLog)
		if got := logs.String(); got != "" {
			t.Errorf("the libraries logged:\n%s", got)
		}
	})
	scenarios := []struct {
		name string
		run  func(t *testing.T, f *forge)
	}{
		{"open", func(t *testing.T, f *forge) {
			f.push(t, bumpA.Changes)
			res := f.ensure(t, bumpA)
			if res.Outcome != pullrequest.Opened || res.Number == 0 || res.URL == "" {
				t.Errorf("got %+v, want an opened pull request with a number and URL", res)
			}
			if diff := cmp.Diff(labels, res.Labels); diff != "" {
				t.Errorf("labels added (-want +got):\n%s", diff)
			}
			want := []summary{{res.Number, pullrequest.StateOpen, bumpA.Title, keyA, labels}}
			if diff := cmp.Diff(want, f.summaries(t)); diff != "" {
				t.Errorf("pull requests (-want +got):\n%s", diff)
			}
			got := f.prs(t)[0].Body
			if want := bumpA.Body(); strings.TrimSpace(strings.ReplaceAll(got, "\r\n", "\n")) != strings.TrimSpace(want) {
				t.Errorf("body:\n%s\nwant:\n%s", got, want)
			}
		}},
		{"update", func(t *testing.T, f *forge) {
			f.push(t, bumpA.Changes)
			first := f.ensure(t, bumpA)
			f.push(t, bumpB.Changes)
			before := f.writes()
			res := f.ensure(t, bumpB)
			if res.Outcome != pullrequest.Updated || res.Number != first.Number {
				t.Errorf("got %+v, want #%d updated", res, first.Number)
			}
			if n := f.writes() - before; n != 1 {
				t.Errorf("updating made %d write calls, want 1 (labels were there)", n)
			}
			want := []summary{{first.Number, pullrequest.StateOpen, bumpB.Title, keyB, labels}}
			if diff := cmp.Diff(want, f.summaries(t)); diff != "" {
				t.Errorf("pull requests (-want +got):\n%s", diff)
			}
		}},
		{"no duplicate", func(t *testing.T, f *forge) {
			f.push(t, bumpA.Changes)
			first := f.ensure(t, bumpA)
			before := f.writes()
			res := f.ensure(t, bumpA)
			if res.Outcome != pullrequest.Unchanged || res.Number != first.Number {
				t.Errorf("got %+v, want #%d unchanged", res, first.Number)
			}
			if n := f.writes() - before; n != 0 {
				t.Errorf("a second Ensure with the same request made %d write calls, want 0", n)
			}
			if got := len(f.prs(t)); got != 1 {
				t.Errorf("got %d pull requests, want 1", got)
			}
		}},
		{"merged then new bump", func(t *testing.T, f *forge) {
			f.push(t, bumpA.Changes)
			first := f.ensure(t, bumpA)
			f.merge(t, first.Number)
			f.push(t, bumpB.Changes)
			res := f.ensure(t, bumpB)
			if res.Outcome != pullrequest.Opened || res.Number == first.Number {
				t.Errorf("got %+v, want a new pull request (not #%d)", res, first.Number)
			}
			want := []summary{
				{res.Number, pullrequest.StateOpen, bumpB.Title, keyB, labels},
				{first.Number, pullrequest.StateMerged, bumpA.Title, keyA, labels},
			}
			if diff := cmp.Diff(want, f.summaries(t)); diff != "" {
				t.Errorf("pull requests (-want +got):\n%s", diff)
			}
		}},
		{"closed then same bump", func(t *testing.T, f *forge) {
			f.push(t, bumpA.Changes)
			first := f.ensure(t, bumpA)
			f.close(t, first.Number)
			before := f.writes()
			res := f.ensure(t, bumpA)
			if res.Outcome != pullrequest.Skipped || res.Number != first.Number {
				t.Errorf("got %+v, want skipped because of #%d", res, first.Number)
			}
			if n := f.writes() - before; n != 0 {
				t.Errorf("skipping made %d write calls, want 0", n)
			}
			want := []summary{{first.Number, pullrequest.StateClosed, bumpA.Title, keyA, labels}}
			if diff := cmp.Diff(want, f.summaries(t)); diff != "" {
				t.Errorf("pull requests (-want +got):\n%s", diff)
			}
		}},
		{"closed then different bump", func(t *testing.T, f *forge) {
			f.push(t, bumpA.Changes)
			first := f.ensure(t, bumpA)
			f.close(t, first.Number)
			f.push(t, bumpB.Changes)
			res := f.ensure(t, bumpB)
			if res.Outcome != pullrequest.Opened || res.Number == first.Number {
				t.Errorf("got %+v, want a new pull request (not #%d)", res, first.Number)
			}
			want := []summary{
				{res.Number, pullrequest.StateOpen, bumpB.Title, keyB, labels},
				{first.Number, pullrequest.StateClosed, bumpA.Title, keyA, labels},
			}
			if diff := cmp.Diff(want, f.summaries(t)); diff != "" {
				t.Errorf("pull requests (-want +got):\n%s", diff)
			}
		}},
		{"token without permission", func(t *testing.T, f *forge) {
			f.push(t, bumpA.Changes)
			_, err := pullrequest.Ensure(context.Background(), f.readOnly, bumpA)
			checkDenied(t, f, err, f.p.Name()+": creating a ")
			if got := len(f.prs(t)); got != 0 {
				t.Errorf("got %d pull requests, want none", got)
			}
			// The same on the update path.
			f.ensure(t, bumpA)
			f.push(t, bumpB.Changes)
			_, err = pullrequest.Ensure(context.Background(), f.readOnly, bumpB)
			checkDenied(t, f, err, f.p.Name()+": updating ")
		}},
		{"invalid token", func(t *testing.T, f *forge) {
			_, err := pullrequest.Ensure(context.Background(), f.badToken, bumpA)
			var pe *pullrequest.Error
			if !errors.As(err, &pe) || pe.Status != http.StatusUnauthorized {
				t.Fatalf("got %v, want a *pullrequest.Error with HTTP 401", err)
			}
			if !strings.Contains(err.Error(), "the token is invalid or expired (HTTP 401)") {
				t.Errorf("error %q does not say the token is invalid", err)
			}
			f.noLeak(t, "the error", fmt.Sprintf("%v %+v %#v", err, err, pe))
		}},
		{"labels added once", func(t *testing.T, f *forge) {
			f.push(t, bumpA.Changes)
			first := f.ensure(t, bumpA)
			f.push(t, bumpB.Changes)
			req := bumpB
			req.Labels = []string{"Dependencies", "imagebump", "imagebump"} // case and repeats do not matter
			before := f.writes()
			res := f.ensure(t, req)
			if res.Outcome != pullrequest.Updated || len(res.Labels) != 0 {
				t.Errorf("got %+v, want updated with no label added", res)
			}
			if n := f.writes() - before; n != 1 {
				t.Errorf("got %d write calls, want 1: the update, no label call", n)
			}
			want := []summary{{first.Number, pullrequest.StateOpen, bumpB.Title, keyB, labels}}
			if diff := cmp.Diff(want, f.summaries(t)); diff != "" {
				t.Errorf("pull requests (-want +got):\n%s", diff)
			}
		}},
		{"a removed label is not added back", func(t *testing.T, f *forge) {
			f.push(t, bumpA.Changes)
			first := f.ensure(t, bumpA)
			f.removeLabel(t, first.Number, "imagebump")
			before := f.writes()
			want := &pullrequest.Result{Number: first.Number, URL: first.URL, Outcome: pullrequest.Unchanged, Provider: f.p.Name()}
			if diff := cmp.Diff(want, f.plan(t, bumpA)); diff != "" {
				t.Errorf("Plan (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(want, f.ensure(t, bumpA)); diff != "" {
				t.Errorf("Ensure with a label missing (-want +got):\n%s", diff)
			}
			if n := f.writes() - before; n != 0 {
				t.Errorf("an unchanged pull request lacking a label got %d write calls, want 0", n)
			}
			wantPRs := []summary{{first.Number, pullrequest.StateOpen, bumpA.Title, keyA, []string{"dependencies"}}}
			if diff := cmp.Diff(wantPRs, f.summaries(t)); diff != "" {
				t.Errorf("pull requests (-want +got):\n%s", diff)
			}
			// Nor by an update: it was removed on purpose (it might be
			// the label an automerge waits for).
			f.push(t, bumpB.Changes)
			res := f.ensure(t, bumpB)
			if res.Outcome != pullrequest.Updated || len(res.Labels) != 0 {
				t.Errorf("got %+v, want updated with no label added", res)
			}
			wantPRs = []summary{{first.Number, pullrequest.StateOpen, bumpB.Title, keyB, []string{"dependencies"}}}
			if diff := cmp.Diff(wantPRs, f.summaries(t)); diff != "" {
				t.Errorf("pull requests after the update (-want +got):\n%s", diff)
			}
			// A label added to the config since is added, with the
			// update the new record brings.
			more := bumpB
			more.Labels = append(slices.Clone(bumpB.Labels), "security")
			res = f.ensure(t, more)
			if res.Outcome != pullrequest.Updated || !slices.Equal(res.Labels, []string{"security"}) {
				t.Errorf("got %+v, want updated with label security added", res)
			}
			wantPRs = []summary{{first.Number, pullrequest.StateOpen, bumpB.Title, keyB, []string{"dependencies", "security"}}}
			if diff := cmp.Diff(wantPRs, f.summaries(t)); diff != "" {
				t.Errorf("pull requests after the config's new label (-want +got):\n%s", diff)
			}
		}},
		{"close when the bumps vanish", func(t *testing.T, f *forge) {
			f.push(t, bumpA.Changes)
			first := f.ensure(t, bumpA)
			// Someone makes the bump on main by hand: the branch proposes
			// nothing any more, and the caller has no changes.
			f.vanish(t, bumpA.Changes)
			want := &pullrequest.Result{Number: first.Number, URL: first.URL, Outcome: pullrequest.Closed, Provider: f.p.Name()}
			before := f.writes()
			plan, err := pullrequest.PlanClose(context.Background(), f.p, head, base, nil)
			if err != nil {
				t.Fatalf("PlanClose: %v", err)
			}
			if diff := cmp.Diff(want, plan); diff != "" {
				t.Errorf("PlanClose (-want +got):\n%s", diff)
			}
			if n := f.writes() - before; n != 0 {
				t.Errorf("PlanClose made %d write calls, want 0", n)
			}
			res, err := pullrequest.Close(context.Background(), f.p, head, base, closeReason, nil)
			if err != nil {
				t.Fatalf("Close: %v", err)
			}
			if diff := cmp.Diff(want, res); diff != "" {
				t.Errorf("Close (-want +got):\n%s", diff)
			}
			if n := f.writes() - before; n != 3 {
				t.Errorf("Close made %d write calls, want 3 (comment, mark the body stale, close)", n)
			}
			if diff := cmp.Diff([]string{closeReason}, f.comments(t, first.Number)); diff != "" {
				t.Errorf("comments (-want +got):\n%s", diff)
			}
			wantPRs := []summary{{first.Number, pullrequest.StateClosed, bumpA.Title, keyA, labels}}
			if diff := cmp.Diff(wantPRs, f.summaries(t)); diff != "" {
				t.Errorf("pull requests (-want +got):\n%s", diff)
			}
			// Nothing open any more: a second Close, and its plan, only read.
			before = f.writes()
			none := &pullrequest.Result{Outcome: pullrequest.None, Provider: f.p.Name()}
			for _, closeFn := range []func() (*pullrequest.Result, error){
				func() (*pullrequest.Result, error) {
					return pullrequest.Close(context.Background(), f.p, head, base, closeReason, nil)
				},
				func() (*pullrequest.Result, error) {
					return pullrequest.PlanClose(context.Background(), f.p, head, base, nil)
				},
			} {
				got, err := closeFn()
				if err != nil {
					t.Fatalf("a second Close: %v", err)
				}
				if diff := cmp.Diff(none, got); diff != "" {
					t.Errorf("a second Close (-want +got):\n%s", diff)
				}
			}
			if n := f.writes() - before; n != 0 {
				t.Errorf("a second Close made %d write calls, want 0", n)
			}
			if got := len(f.comments(t, first.Number)); got != 1 {
				t.Errorf("got %d comments after a second Close, want 1", got)
			}
		}},
		{"closed by Close then bumps again", func(t *testing.T, f *forge) {
			f.push(t, bumpA.Changes)
			first := f.ensure(t, bumpA)
			if _, err := pullrequest.Close(context.Background(), f.p, head, base, closeReason, nil); err != nil {
				t.Fatalf("Close: %v", err)
			}
			// Closed as stale is not turned down: the same bumps again
			// (git.branch reverted, or the tags back) are proposed anew.
			again := f.ensure(t, bumpA)
			if again.Outcome != pullrequest.Opened || again.Number == first.Number || !slices.Equal(again.Labels, labels) {
				t.Errorf("the same bump after Close: got %+v, want a new pull request (not #%d) with labels", again, first.Number)
			}
			// Other bumps then update that one.
			f.push(t, bumpB.Changes)
			res := f.ensure(t, bumpB)
			if res.Outcome != pullrequest.Updated || res.Number != again.Number {
				t.Errorf("another bump: got %+v, want #%d updated", res, again.Number)
			}
			want := []summary{
				{res.Number, pullrequest.StateOpen, bumpB.Title, keyB, labels},
				{first.Number, pullrequest.StateClosed, bumpA.Title, keyA, labels},
			}
			if diff := cmp.Diff(want, f.summaries(t)); diff != "" {
				t.Errorf("pull requests (-want +got):\n%s", diff)
			}
		}},
		{"close with a token without permission", func(t *testing.T, f *forge) {
			f.push(t, bumpA.Changes)
			first := f.ensure(t, bumpA)
			// Close marks the body first: refused, nothing else is tried.
			_, err := pullrequest.Close(context.Background(), f.readOnly, head, base, closeReason, nil)
			checkDeniedNeeds(t, f, err, f.p.Name()+": updating ", f.denied)
			// A refused comment names what it needs.
			err = f.readOnly.Comment(context.Background(), first.Number, closeReason)
			checkDeniedNeeds(t, f, err, f.p.Name()+": commenting on ", f.deniedComment)
			want := []summary{{first.Number, pullrequest.StateOpen, bumpA.Title, keyA, labels}}
			if diff := cmp.Diff(want, f.summaries(t)); diff != "" {
				t.Errorf("pull requests (-want +got):\n%s", diff)
			}
			if got := f.comments(t, first.Number); len(got) != 0 {
				t.Errorf("comments: got %q, want none", got)
			}
		}},
		{"plan is read-only", func(t *testing.T, f *forge) {
			f.push(t, bumpA.Changes)
			want := &pullrequest.Result{Outcome: pullrequest.Opened, Provider: f.p.Name(), Labels: labels}
			if diff := cmp.Diff(want, f.plan(t, bumpA)); diff != "" {
				t.Errorf("Plan with nothing open (-want +got):\n%s", diff)
			}
			if got := len(f.prs(t)); got != 0 {
				t.Fatalf("Plan opened %d pull requests", got)
			}
			first := f.ensure(t, bumpA)
			for _, c := range []struct {
				req  pullrequest.Request
				want pullrequest.Outcome
			}{{bumpB, pullrequest.Updated}, {bumpA, pullrequest.Unchanged}} {
				want := &pullrequest.Result{Number: first.Number, URL: first.URL, Outcome: c.want, Provider: f.p.Name()}
				if diff := cmp.Diff(want, f.plan(t, c.req)); diff != "" {
					t.Errorf("Plan %s (-want +got):\n%s", c.req.Title, diff)
				}
			}
			f.close(t, first.Number)
			if got := f.plan(t, bumpA); got.Outcome != pullrequest.Skipped || got.Number != first.Number {
				t.Errorf("Plan after closing: got %+v, want skipped because of #%d", got, first.Number)
			}
			if got := f.plan(t, bumpB); got.Outcome != pullrequest.Opened {
				t.Errorf("Plan of another bump after closing: got %+v, want opened", got)
			}
			want2 := []summary{{first.Number, pullrequest.StateClosed, bumpA.Title, keyA, labels}}
			if diff := cmp.Diff(want2, f.summaries(t)); diff != "" {
				t.Errorf("pull requests after the plans (-want +got):\n%s", diff)
			}
		}},
		{"duplicate creation race", func(t *testing.T, f *forge) {
			f.push(t, bumpA.Changes)
			first := f.ensure(t, bumpA)
			f.push(t, bumpB.Changes)
			// This run's list misses the open pull request, so it tries to
			// create one; the forge refuses, and Ensure takes the open one.
			res, err := pullrequest.Ensure(context.Background(), &staleList{Provider: f.p}, bumpB)
			if err != nil {
				t.Fatalf("Ensure: %v", err)
			}
			if res.Outcome != pullrequest.Updated || res.Number != first.Number {
				t.Errorf("got %+v, want #%d updated", res, first.Number)
			}
			want := []summary{{first.Number, pullrequest.StateOpen, bumpB.Title, keyB, labels}}
			if diff := cmp.Diff(want, f.summaries(t)); diff != "" {
				t.Errorf("pull requests (-want +got):\n%s", diff)
			}
		}},
		{"cancelled context", func(t *testing.T, f *forge) {
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			before := f.writes()
			_, err := pullrequest.Ensure(ctx, f.p, bumpA)
			if !errors.Is(err, context.Canceled) {
				t.Errorf("got %v, want an error that is context.Canceled", err)
			}
			if n := f.writes() - before; n != 0 {
				t.Errorf("got %d write calls with a cancelled context", n)
			}
		}},
	}
	for _, fc := range forges {
		t.Run(fc.name, func(t *testing.T) {
			for _, sc := range scenarios {
				t.Run(sc.name, func(t *testing.T) {
					sc.run(t, fc.new(t))
				})
			}
		})
	}
}

// syncBuffer is a bytes.Buffer safe for concurrent writers.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// repoPattern matches the repository each forge's errors must name.
var repoPattern = regexp.MustCompile(` in (acme/fleet|acme/platform/fleet|imagebump/fleet-\d+-\d+): `)

func checkDenied(t *testing.T, f *forge, err error, prefix string) {
	t.Helper()
	checkDeniedNeeds(t, f, err, prefix, f.denied)
}

// checkDeniedNeeds checks that err is a 403 whose message starts with
// prefix, names the repository and says the token needs needs.
func checkDeniedNeeds(t *testing.T, f *forge, err error, prefix, needs string) {
	t.Helper()
	var pe *pullrequest.Error
	if !errors.As(err, &pe) || pe.Status != http.StatusForbidden {
		t.Fatalf("got %v, want a *pullrequest.Error with HTTP 403", err)
	}
	msg := err.Error()
	if !strings.HasPrefix(msg, prefix) || !repoPattern.MatchString(msg) {
		t.Errorf("error %q: want it to start with %q and name the repository", msg, prefix)
	}
	if !strings.Contains(msg, "the token is not allowed to (HTTP 403): "+needs) {
		t.Errorf("error %q does not say that %s", msg, needs)
	}
	f.noLeak(t, "the error", fmt.Sprintf("%v %+v %#v", err, err, pe))
}
