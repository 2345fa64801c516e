package pullrequest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
)

// scripted is a Provider over a fixed list of pull requests that records
// the calls made to it. createErr, when set, is what Create returns;
// commentErr, closeErr and labelsErr what Comment, Close and AddLabels
// return.
type scripted struct {
	prs                             []PR
	createErr                       error
	commentErr, closeErr, labelsErr error
	calls                           []string
}

func (s *scripted) Name() string { return "scripted" }

func (s *scripted) List(_ context.Context, head, base string) ([]PR, error) {
	s.calls = append(s.calls, "list")
	return append([]PR(nil), s.prs...), nil
}

func (s *scripted) Create(_ context.Context, head, base, title, body string) (*PR, error) {
	s.calls = append(s.calls, "create "+title)
	if s.createErr != nil {
		return nil, s.createErr
	}
	n := 100 + len(s.prs)
	return &PR{Number: n, URL: fmt.Sprintf("https://forge/pr/%d", n), State: StateOpen, Title: title, Body: body}, nil
}

func (s *scripted) Update(_ context.Context, number int, title, body string) (*PR, error) {
	s.calls = append(s.calls, fmt.Sprintf("update #%d %s", number, title))
	return &PR{Number: number, URL: fmt.Sprintf("https://forge/pr/%d", number), State: StateOpen, Title: title, Body: body}, nil
}

func (s *scripted) AddLabels(_ context.Context, number int, labels []string) error {
	s.calls = append(s.calls, fmt.Sprintf("labels #%d %s", number, strings.Join(labels, ",")))
	return s.labelsErr
}

func (s *scripted) Comment(_ context.Context, number int, body string) error {
	s.calls = append(s.calls, fmt.Sprintf("comment #%d %s", number, body))
	return s.commentErr
}

func (s *scripted) Close(_ context.Context, number int) error {
	s.calls = append(s.calls, fmt.Sprintf("close #%d", number))
	return s.closeErr
}

var (
	changeA = []Change{{File: "a.yaml", Line: 1, Policy: "apps:a", Old: "1.0.0", New: "1.1.0"}}
	changeB = []Change{{File: "a.yaml", Line: 1, Policy: "apps:a", Old: "1.0.0", New: "1.2.0"}}
)

func request(changes []Change, title string, labels ...string) Request {
	return Request{Head: "imagebump/main", Base: "main", Title: title, Changes: changes, Labels: labels}
}

// removed returns p without the label l, as after a person removed it.
func removed(p PR, l string) PR {
	p.Labels = slices.DeleteFunc(slices.Clone(p.Labels), func(x string) bool { return x == l })
	return p
}

func pr(n int, state State, title string, changes []Change, labels ...string) PR {
	return PR{Number: n, URL: fmt.Sprintf("https://forge/pr/%d", n), State: state, Title: title, Body: Request{Changes: changes, Labels: labels}.Body(), Head: "imagebump/main", Base: "main", Labels: labels}
}

// TestEnsureDecisions covers the lifecycle rules on a provider whose pull
// requests are given, checking the calls made and the result.
func TestEnsureDecisions(t *testing.T) {
	for _, c := range []struct {
		name      string
		prs       []PR
		req       Request
		want      Result
		wantCalls []string
	}{{
		name:      "nothing yet opens",
		req:       request(changeA, "Bump a", "deps"),
		want:      Result{Number: 100, URL: "https://forge/pr/100", Outcome: Opened, Labels: []string{"deps"}},
		wantCalls: []string{"list", "create Bump a", "list", "labels #100 deps"},
	}, {
		name:      "open and current is unchanged",
		prs:       []PR{pr(3, StateOpen, "Bump a", changeA, "deps")},
		req:       request(changeA, "Bump a", "deps"),
		want:      Result{Number: 3, URL: "https://forge/pr/3", Outcome: Unchanged},
		wantCalls: []string{"list"},
	}, {
		name:      "open with another title is updated",
		prs:       []PR{pr(3, StateOpen, "Bump a to 1.1.0", changeA)},
		req:       request(changeA, "Bump a"),
		want:      Result{Number: 3, URL: "https://forge/pr/3", Outcome: Updated},
		wantCalls: []string{"list", "update #3 Bump a"},
	}, {
		name:      "open with other changes is updated",
		prs:       []PR{pr(3, StateOpen, "Bump a", changeA)},
		req:       request(changeB, "Bump a"),
		want:      Result{Number: 3, URL: "https://forge/pr/3", Outcome: Updated},
		wantCalls: []string{"list", "update #3 Bump a"},
	}, {
		name: "open with CRLF and trailing space is unchanged",
		prs: []PR{func() PR {
			p := pr(3, StateOpen, "Bump a ", changeA)
			p.Body = strings.ReplaceAll(p.Body, "\n", "\r\n") + "  "
			return p
		}()},
		req:       request(changeA, "Bump a"),
		want:      Result{Number: 3, URL: "https://forge/pr/3", Outcome: Unchanged},
		wantCalls: []string{"list"},
	}, {
		name:      "an unchanged one lacking a label someone removed gets no write",
		prs:       []PR{removed(pr(3, StateOpen, "Bump a", changeA, "deps", "imagebump"), "imagebump")},
		req:       request(changeA, "Bump a", "deps", "imagebump"),
		want:      Result{Number: 3, URL: "https://forge/pr/3", Outcome: Unchanged},
		wantCalls: []string{"list"},
	}, {
		name:      "an updated one does not get back a label someone removed",
		prs:       []PR{removed(pr(3, StateOpen, "Bump a", changeA, "deps", "imagebump"), "imagebump")},
		req:       request(changeB, "Bump a", "deps", "imagebump"),
		want:      Result{Number: 3, URL: "https://forge/pr/3", Outcome: Updated},
		wantCalls: []string{"list", "update #3 Bump a"},
	}, {
		name:      "labels added to the config since are added, ignoring case",
		prs:       []PR{pr(3, StateOpen, "Bump a", changeA, "Deps")},
		req:       request(changeA, "Bump a", "deps", "imagebump", " ", "ImageBump"),
		want:      Result{Number: 3, URL: "https://forge/pr/3", Outcome: Updated, Labels: []string{"imagebump"}},
		wantCalls: []string{"list", "update #3 Bump a", "labels #3 imagebump"},
	}, {
		name: "a body from before labels were recorded is taken to have had them all",
		prs: []PR{func() PR {
			p := pr(3, StateOpen, "Bump a", changeA, "deps")
			p.Body = Body(changeA)
			return p
		}()},
		req:       request(changeB, "Bump a", "deps", "imagebump"),
		want:      Result{Number: 3, URL: "https://forge/pr/3", Outcome: Updated},
		wantCalls: []string{"list", "update #3 Bump a"},
	}, {
		name:      "an updated one with every label gets no label call",
		prs:       []PR{pr(3, StateOpen, "Bump a", changeA, "deps")},
		req:       request(changeB, "Bump a", "DEPS"),
		want:      Result{Number: 3, URL: "https://forge/pr/3", Outcome: Updated},
		wantCalls: []string{"list", "update #3 Bump a"},
	}, {
		name: "one closed as stale with the same content does not skip",
		prs: []PR{func() PR {
			p := pr(3, StateClosed, "Bump a", changeA)
			p.Body = markStale(p.Body)
			return p
		}()},
		req:       request(changeA, "Bump a"),
		want:      Result{Number: 101, URL: "https://forge/pr/101", Outcome: Opened},
		wantCalls: []string{"list", "create Bump a", "list"},
	}, {
		name: "a hand-closed one behind one closed as stale still skips",
		prs: []PR{pr(2, StateClosed, "Bump a", changeA), func() PR {
			p := pr(5, StateClosed, "Bump a", changeA)
			p.Body = markStale(p.Body)
			return p
		}()},
		req:       request(changeA, "Bump a"),
		want:      Result{Number: 2, URL: "https://forge/pr/2", Outcome: Skipped},
		wantCalls: []string{"list"},
	}, {
		name: "the marker's text inside the body is no stale mark",
		prs: []PR{func() PR {
			p := pr(3, StateClosed, "Bump a", changeA)
			p.Body = "value " + staleMarker + " quoted\n" + p.Body
			return p
		}()},
		req:       request(changeA, "Bump a"),
		want:      Result{Number: 3, URL: "https://forge/pr/3", Outcome: Skipped},
		wantCalls: []string{"list"},
	}, {
		// Two open from one branch: twins of runs that overlapped, where
		// the forge's check races (Gitea's). The newer is closed as a
		// stale duplicate; the older is kept current.
		name: "of open twins, the oldest is kept current and the newer closed",
		prs:  []PR{pr(2, StateOpen, "old", changeA), pr(5, StateOpen, "Bump a", changeA)},
		req:  request(changeA, "Bump a"),
		want: Result{Number: 2, URL: "https://forge/pr/2", Outcome: Updated, Duplicates: []int{5}},
		wantCalls: []string{"list", "update #5 Bump a", "close #5",
			"comment #5 Closed as a duplicate of #2, open from the same branch, which imagebump keeps current.",
			"update #2 Bump a"},
	}, {
		name: "of three open twins, both newer are closed, and named in the order of their numbers",
		prs:  []PR{pr(9, StateOpen, "Bump a", changeA), pr(2, StateOpen, "Bump a", changeA), pr(5, StateOpen, "Bump a", changeA)},
		req:  request(changeA, "Bump a"),
		want: Result{Number: 2, URL: "https://forge/pr/2", Outcome: Unchanged, Duplicates: []int{5, 9}},
		wantCalls: []string{"list",
			"update #9 Bump a", "close #9", "comment #9 Closed as a duplicate of #2, open from the same branch, which imagebump keeps current.",
			"update #5 Bump a", "close #5", "comment #5 Closed as a duplicate of #2, open from the same branch, which imagebump keeps current."},
	}, {
		name:      "an open one wins over a newer closed one with the same content",
		prs:       []PR{pr(7, StateClosed, "Bump a", changeB), pr(4, StateOpen, "Bump a", changeA)},
		req:       request(changeB, "Bump a"),
		want:      Result{Number: 4, URL: "https://forge/pr/4", Outcome: Updated},
		wantCalls: []string{"list", "update #4 Bump a"},
	}, {
		name:      "closed with the same content is skipped",
		prs:       []PR{pr(3, StateClosed, "Bump a", changeA)},
		req:       request(changeA, "A new title", "deps"),
		want:      Result{Number: 3, URL: "https://forge/pr/3", Outcome: Skipped},
		wantCalls: []string{"list"},
	}, {
		name:      "merged with the same content is skipped",
		prs:       []PR{pr(3, StateMerged, "Bump a", changeA)},
		req:       request(changeA, "Bump a"),
		want:      Result{Number: 3, URL: "https://forge/pr/3", Outcome: Skipped},
		wantCalls: []string{"list"},
	}, {
		name:      "only the most recent closed one counts",
		prs:       []PR{pr(2, StateClosed, "Bump a", changeA), pr(6, StateMerged, "Bump a", changeB)},
		req:       request(changeA, "Bump a"),
		want:      Result{Number: 100 + 2, URL: "https://forge/pr/102", Outcome: Opened},
		wantCalls: []string{"list", "create Bump a", "list"},
	}, {
		name: "a closed one without a marker does not block",
		prs: []PR{func() PR {
			p := pr(3, StateClosed, "Bump a", changeA)
			p.Body = "written by hand"
			return p
		}()},
		req:       request(changeA, "Bump a"),
		want:      Result{Number: 101, URL: "https://forge/pr/101", Outcome: Opened},
		wantCalls: []string{"list", "create Bump a", "list"},
	}} {
		t.Run(c.name, func(t *testing.T) {
			// Plan, before Ensure, names the twins Ensure closes.
			before, err := Plan(context.Background(), &scripted{prs: slices.Clone(c.prs)}, c.req)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(before.Duplicates, c.want.Duplicates) {
				t.Errorf("Plan's duplicates = %v, want %v", before.Duplicates, c.want.Duplicates)
			}
			p := &scripted{prs: c.prs}
			got, err := Ensure(context.Background(), p, c.req)
			if err != nil {
				t.Fatal(err)
			}
			c.want.Provider = "scripted"
			if diff := cmp.Diff(&c.want, got); diff != "" {
				t.Errorf("Ensure (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(c.wantCalls, p.calls); diff != "" {
				t.Errorf("calls (-want +got):\n%s", diff)
			}

			// Plan decides the same, with the list call only.
			p.calls = nil
			plan, err := Plan(context.Background(), p, c.req)
			if err != nil {
				t.Fatal(err)
			}
			if plan.Outcome != got.Outcome || (got.Outcome != Opened && plan.Number != got.Number) {
				t.Errorf("Plan = %+v, but Ensure did %+v", plan, got)
			}
			if diff := cmp.Diff([]string{"list"}, p.calls); diff != "" {
				t.Errorf("Plan calls (-want +got):\n%s", diff)
			}
		})
	}
}

// TestCloseDecisions covers Close and PlanClose on a provider whose pull
// requests are given, checking the calls made and the result.
func TestCloseDecisions(t *testing.T) {
	for _, c := range []struct {
		name      string
		prs       []PR
		reason    string
		want      Result
		wantCalls []string
		planCalls []string
	}{{
		name:      "nothing at all",
		reason:    "stale",
		want:      Result{Outcome: None},
		wantCalls: []string{"list"},
	}, {
		name:      "only closed and merged ones",
		prs:       []PR{pr(2, StateMerged, "Bump a", changeA), pr(4, StateClosed, "Bump a", changeB)},
		reason:    "stale",
		want:      Result{Outcome: None},
		wantCalls: []string{"list"},
	}, {
		name:      "the open one is marked, closed, then commented on",
		prs:       []PR{pr(2, StateMerged, "Bump a", changeA), pr(4, StateOpen, "Bump a", changeB)},
		reason:    "  main has these bumps already\n",
		want:      Result{Number: 4, URL: "https://forge/pr/4", Outcome: Closed},
		wantCalls: []string{"list", "update #4 Bump a", "close #4", "comment #4 main has these bumps already"},
	}, {
		name:      "a blank reason posts no comment",
		prs:       []PR{pr(4, StateOpen, "Bump a", changeB)},
		reason:    " \n",
		want:      Result{Number: 4, URL: "https://forge/pr/4", Outcome: Closed},
		wantCalls: []string{"list", "update #4 Bump a", "close #4"},
	}, {
		name:      "a body marked stale already is not written again",
		prs:       []PR{{Number: 4, URL: "https://forge/pr/4", State: StateOpen, Title: "Bump a", Body: markStale(Body(changeA))}},
		reason:    "stale",
		want:      Result{Number: 4, URL: "https://forge/pr/4", Outcome: Closed},
		wantCalls: []string{"list", "close #4", "comment #4 stale"},
	}, {
		name:      "every open one is closed, the most recent named",
		prs:       []PR{pr(3, StateOpen, "old", changeA), pr(5, StateClosed, "Bump a", changeA), pr(7, StateOpen, "Bump a", changeB)},
		reason:    "stale",
		want:      Result{Number: 7, URL: "https://forge/pr/7", Outcome: Closed},
		wantCalls: []string{"list", "update #7 Bump a", "close #7", "comment #7 stale", "update #3 old", "close #3", "comment #3 stale"},
	}} {
		t.Run(c.name, func(t *testing.T) {
			p := &scripted{prs: c.prs}
			got, err := Close(context.Background(), p, "imagebump/main", "main", c.reason, nil)
			if err != nil {
				t.Fatal(err)
			}
			c.want.Provider = "scripted"
			if diff := cmp.Diff(&c.want, got); diff != "" {
				t.Errorf("Close (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(c.wantCalls, p.calls); diff != "" {
				t.Errorf("calls (-want +got):\n%s", diff)
			}

			// PlanClose says the same, with the list call only.
			p.calls = nil
			plan, err := PlanClose(context.Background(), p, "imagebump/main", "main", nil)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(&c.want, plan); diff != "" {
				t.Errorf("PlanClose (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff([]string{"list"}, p.calls); diff != "" {
				t.Errorf("PlanClose calls (-want +got):\n%s", diff)
			}
		})
	}
}

func TestCloseErrors(t *testing.T) {
	forbidden := &Error{Provider: "scripted", Status: 403}
	t.Run("a refused comment leaves the pull request closed, and says so", func(t *testing.T) {
		p := &scripted{prs: []PR{pr(4, StateOpen, "Bump a", changeA)}, commentErr: forbidden}
		res, err := Close(context.Background(), p, "imagebump/main", "main", "stale", nil)
		var pe *Error
		if !errors.As(err, &pe) || pe.Status != 403 || !strings.Contains(err.Error(), "closed pull request #4, but the comment saying why was refused") {
			t.Errorf("got %v, want the 403, saying #4 was closed", err)
		}
		if res == nil || res.Outcome != Closed || res.Number != 4 {
			t.Errorf("result %+v, want #4 closed", res)
		}
		if diff := cmp.Diff([]string{"list", "update #4 Bump a", "close #4", "comment #4 stale"}, p.calls); diff != "" {
			t.Errorf("calls (-want +got):\n%s", diff)
		}
	})
	t.Run("two refused comments, on one line", func(t *testing.T) {
		p := &scripted{prs: []PR{pr(4, StateOpen, "Bump a", changeA), pr(5, StateOpen, "Bump a", changeA)}, commentErr: forbidden}
		_, err := Close(context.Background(), p, "imagebump/main", "main", "stale", nil)
		if err == nil || strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), "#4") || !strings.Contains(err.Error(), "#5") || !errors.Is(err, forbidden) {
			t.Errorf("got %q, want both on one line, matching the 403", err)
		}
	})
	t.Run("a refused close posts no comment", func(t *testing.T) {
		p := &scripted{prs: []PR{pr(4, StateOpen, "Bump a", changeA)}, closeErr: forbidden}
		if _, err := Close(context.Background(), p, "imagebump/main", "main", "stale", nil); !errors.Is(err, forbidden) {
			t.Errorf("got %v, want the 403", err)
		}
		if diff := cmp.Diff([]string{"list", "update #4 Bump a", "close #4"}, p.calls); diff != "" {
			t.Errorf("calls (-want +got):\n%s", diff)
		}
	})
	t.Run("ready's error stops Close before it writes, and only when one is open", func(t *testing.T) {
		notReady := errors.New("a person's commit is on the branch")
		p := &scripted{prs: []PR{pr(4, StateOpen, "Bump a", changeA)}}
		if _, err := Close(context.Background(), p, "imagebump/main", "main", "stale", func() error { return notReady }); !errors.Is(err, notReady) {
			t.Errorf("got %v, want ready's error", err)
		}
		if diff := cmp.Diff([]string{"list"}, p.calls); diff != "" {
			t.Errorf("calls (-want +got):\n%s", diff)
		}
		p = &scripted{prs: []PR{pr(4, StateMerged, "Bump a", changeA)}}
		res, err := Close(context.Background(), p, "imagebump/main", "main", "stale", func() error { return notReady })
		if err != nil || res.Outcome != None {
			t.Errorf("with none open: %+v, %v; want None, and ready not called", res, err)
		}
	})
	for _, c := range []struct {
		name, head, base, want string
	}{
		{"no head", "", "main", "head and base branches are required"},
		{"same branches", "main", "main", `head and base are both "main"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := &scripted{}
			_, err := Close(context.Background(), p, c.head, c.base, "stale", nil)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("Close: got %v, want an error saying %q", err, c.want)
			}
			if _, err := PlanClose(context.Background(), p, c.head, c.base, nil); err == nil {
				t.Error("PlanClose accepted the branches")
			}
			if len(p.calls) != 0 {
				t.Errorf("the provider was called: %v", p.calls)
			}
		})
	}
}

func TestEnsureRace(t *testing.T) {
	exists := &Error{Provider: "scripted", Repository: "acme/fleet", Op: "creating a pull request", Status: 409, Exists: true}
	t.Run("another run opened it", func(t *testing.T) {
		// The first list sees nothing; create is refused; the second list
		// sees the one another run opened.
		p := &raceProvider{scripted: scripted{createErr: exists}, later: []PR{pr(9, StateOpen, "Bump a", changeA)}}
		got, err := Ensure(context.Background(), p, request(changeB, "Bump a"))
		if err != nil {
			t.Fatal(err)
		}
		want := &Result{Number: 9, URL: "https://forge/pr/9", Outcome: Updated, Provider: "scripted"}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("Ensure (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff([]string{"list", "create Bump a", "list", "update #9 Bump a"}, p.calls); diff != "" {
			t.Errorf("calls (-want +got):\n%s", diff)
		}
	})
	t.Run("still nothing to see", func(t *testing.T) {
		p := &scripted{createErr: exists}
		_, err := Ensure(context.Background(), p, request(changeA, "Bump a"))
		if !errors.Is(err, ErrAlreadyExists) {
			t.Errorf("got %v, want the refusal, which Is ErrAlreadyExists", err)
		}
	})
	t.Run("other create errors are returned", func(t *testing.T) {
		p := &scripted{createErr: &Error{Provider: "scripted", Status: 403}}
		_, err := Ensure(context.Background(), p, request(changeA, "Bump a"))
		var pe *Error
		if !errors.As(err, &pe) || pe.Status != 403 {
			t.Errorf("got %v, want the 403", err)
		}
		if diff := cmp.Diff([]string{"list", "create Bump a"}, p.calls); diff != "" {
			t.Errorf("calls (-want +got):\n%s", diff)
		}
	})
}

// raceProvider is scripted whose List shows later from the second call on.
type raceProvider struct {
	scripted
	later []PR
	lists int
}

func (r *raceProvider) List(ctx context.Context, head, base string) ([]PR, error) {
	r.lists++
	if r.lists > 1 {
		r.prs = r.later
	}
	return r.scripted.List(ctx, head, base)
}

func TestRequestValidation(t *testing.T) {
	for _, c := range []struct {
		name string
		req  Request
		want string
	}{
		{"no head", Request{Base: "main", Title: "t", Changes: changeA}, "head and base branches are required"},
		{"same branches", Request{Head: "main", Base: "main", Title: "t", Changes: changeA}, `head and base are both "main"`},
		{"no title", Request{Head: "h", Base: "main", Title: " \n", Changes: changeA}, "the title is empty"},
		{"no changes", Request{Head: "h", Base: "main", Title: "t"}, "no changes to propose"},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := &scripted{}
			_, err := Ensure(context.Background(), p, c.req)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("Ensure: got %v, want an error saying %q", err, c.want)
			}
			if _, err := Plan(context.Background(), p, c.req); err == nil {
				t.Error("Plan accepted the request")
			}
			if len(p.calls) != 0 {
				t.Errorf("the provider was called: %v", p.calls)
			}
		})
	}
}

// TestLongTitle: a title over 255 bytes is cut to 255 at most, at a
// character's start, ending in "…", as Gitea keeps 255 bytes of a title
// (a title cut to 255 characters was cut again by Gitea, and every run
// then updated the pull request); line breaks become spaces.
func TestLongTitle(t *testing.T) {
	for _, tt := range []struct{ name, title string }{
		{"two-byte characters", strings.Repeat("é", 300)},
		{"ASCII", strings.Repeat("x", 300)},
		{"a character across the cut", strings.Repeat("x", 251) + "€€€"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := &scripted{}
			if _, err := Ensure(context.Background(), p, request(changeA, tt.title)); err != nil {
				t.Fatal(err)
			}
			title := strings.TrimPrefix(p.calls[1], "create ")
			if n := len(title); n > MaxTitleLength || n < MaxTitleLength-3 || !strings.HasSuffix(title, "…") || !utf8.ValidString(title) {
				t.Errorf("title sent has %d bytes (%q...), want at most %d, valid UTF-8, ending in …", n, title[:10], MaxTitleLength)
			}
		})
	}
	p := &scripted{}
	if _, err := Ensure(context.Background(), p, request(changeA, "Bump\r\nimages\rnow\nplease")); err != nil {
		t.Fatal(err)
	}
	if title := strings.TrimPrefix(p.calls[1], "create "); title != "Bump images now please" {
		t.Errorf("title sent is %q, want its line breaks as spaces", title)
	}
	long := strings.Repeat("é", 300)
	p = &scripted{}
	if _, err := Ensure(context.Background(), p, request(changeA, long)); err != nil {
		t.Fatal(err)
	}
	title := strings.TrimPrefix(p.calls[1], "create ")
	// The cut title is what later runs compare, so nothing changes.
	p = &scripted{prs: []PR{pr(1, StateOpen, title, changeA)}}
	got, err := Ensure(context.Background(), p, request(changeA, long))
	if err != nil {
		t.Fatal(err)
	}
	if got.Outcome != Unchanged {
		t.Errorf("a long title that was cut: got %s, want unchanged", got.Outcome)
	}
}

// recorder is a scripted provider that also records heads, as Gitea does.
type recorder struct {
	*scripted
	heads map[int]string
}

func (r *recorder) RecordedHead(_ context.Context, number int) (string, error) {
	r.calls = append(r.calls, fmt.Sprintf("recorded head #%d", number))
	return r.heads[number], nil
}

func TestMergedHead(t *testing.T) {
	const tip = "5d0b2f5c1e9a4c7b8d3e6f0a1b2c3d4e5f6a7b8c"
	const other = "0000000000000000000000000000000000000000"
	withHead := func(n int, state State, head string) PR {
		p := pr(n, state, "Bump a", changeA)
		p.HeadCommit = head
		return p
	}
	for _, c := range []struct {
		name string
		prs  []PR
		want bool
	}{
		{"merged with that head", []PR{withHead(3, StateOpen, "abc"), withHead(2, StateMerged, tip)}, true},
		{"hashes compare without case", []PR{withHead(2, StateMerged, strings.ToUpper(tip))}, true},
		{"closed, not merged", []PR{withHead(2, StateClosed, tip)}, false},
		{"open with that head", []PR{withHead(2, StateOpen, tip)}, false},
		{"merged with another head", []PR{withHead(2, StateMerged, other)}, false},
		{"the forge said no head", []PR{withHead(2, StateMerged, "")}, false},
		{"none", nil, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := MergedHead(context.Background(), &scripted{prs: c.prs}, "imagebump/main", "main", tip)
			if err != nil || got != c.want {
				t.Errorf("MergedHead = %v, %v; want %v", got, err, c.want)
			}
		})
	}
	if got, _ := MergedHead(context.Background(), &scripted{prs: []PR{withHead(2, StateMerged, "")}}, "imagebump/main", "main", ""); got {
		t.Error("an empty commit matched an empty head")
	}

	// A forge that lists a merged pull request's head as its branch's
	// tip (Forgejo) must also have recorded it as the merged head: a
	// commit pushed after the merge is not one.
	live := []PR{withHead(2, StateMerged, tip)}
	for _, c := range []struct {
		name     string
		recorded string
		want     bool
	}{
		{"recorded at the merge", tip, true},
		{"pushed after the merge", other, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := &recorder{scripted: &scripted{prs: live}, heads: map[int]string{2: c.recorded}}
			got, err := MergedHead(context.Background(), r, "imagebump/main", "main", tip)
			if err != nil || got != c.want {
				t.Errorf("MergedHead = %v, %v; want %v", got, err, c.want)
			}
			if diff := cmp.Diff([]string{"list", "recorded head #2"}, r.calls); diff != "" {
				t.Errorf("calls (-want +got):\n%s", diff)
			}
		})
	}
}

// racing is scripted, but for a twin that another run opens while this
// one creates: the lists after the create show it, older.
type racing struct {
	scripted
	twin    PR
	created *PR
}

func (r *racing) List(ctx context.Context, head, base string) ([]PR, error) {
	prs, _ := r.scripted.List(ctx, head, base)
	if r.created != nil {
		prs = append(prs, r.twin, *r.created)
	}
	return prs, nil
}

func (r *racing) Create(ctx context.Context, head, base, title, body string) (*PR, error) {
	pr, err := r.scripted.Create(ctx, head, base, title, body)
	if err == nil {
		c := *pr
		c.Head, c.Base = head, base
		r.created = &c
	}
	return pr, err
}

// TestEnsureRacingTwin: two runs that overlap can each open a pull request
// where the forge's check for an open one races (two were seen open on
// Gitea). The run whose pull request is the newer closes it as a stale
// duplicate, naming the older, and reports the older as its own.
func TestEnsureRacingTwin(t *testing.T) {
	p := &racing{twin: pr(99, StateOpen, "Bump a", changeA, "deps")}
	got, err := Ensure(context.Background(), p, request(changeA, "Bump a", "deps"))
	if err != nil {
		t.Fatal(err)
	}
	if want := (Result{Number: 99, URL: "https://forge/pr/99", Outcome: Unchanged, Provider: "scripted", Labels: nil}); got.Number != want.Number || got.Outcome != want.Outcome {
		t.Errorf("Ensure = %+v, want the twin #99 unchanged", got)
	}
	wantCalls := []string{"list", "create Bump a", "list", "update #100 Bump a", "close #100",
		"comment #100 Closed as a duplicate of #99, open from the same branch, which imagebump keeps current."}
	if diff := cmp.Diff(wantCalls, p.calls); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
}

// TestEnsureLaggingListIsNoTwin: a listing that lags (one the first list
// showed closed is open in the second, GitHub's or GitLab's search index)
// is no twin: the pull request just opened stands, and the closed one is
// not written to (its body would have taken the new content key, and the
// next run skipped these bumps as turned down).
func TestEnsureLaggingListIsNoTwin(t *testing.T) {
	closed := pr(5, StateClosed, "Bump a", changeB)
	p := &racing{scripted: scripted{prs: []PR{closed}}, twin: pr(5, StateOpen, "Bump a", changeB)}
	got, err := Ensure(context.Background(), p, request(changeA, "Bump a"))
	if err != nil {
		t.Fatal(err)
	}
	if got.Outcome != Opened || got.Number != 101 {
		t.Errorf("Ensure = %+v, want #101 opened", got)
	}
	if want := []string{"list", "create Bump a", "list"}; !slices.Equal(p.calls, want) {
		t.Errorf("calls %v, want %v", p.calls, want)
	}
}

// TestEnsureTwinCommentRefused: a twin closed whose comment is refused
// stays closed; the run says so, after keeping the older one current.
func TestEnsureTwinCommentRefused(t *testing.T) {
	p := &scripted{prs: []PR{pr(2, StateOpen, "Bump a", changeA), pr(5, StateOpen, "Bump a", changeA)}, commentErr: errors.New("403")}
	got, err := Ensure(context.Background(), p, request(changeA, "Bump a"))
	if got == nil || got.Number != 2 || got.Outcome != Unchanged || err == nil || !strings.Contains(err.Error(), "closed #5 as a duplicate of #2, but commenting on it was refused") {
		t.Errorf("Ensure = %+v, %v; want #2 unchanged, and the refusal", got, err)
	}
	if !slices.Contains(p.calls, "close #5") {
		t.Errorf("calls %v, want #5 closed", p.calls)
	}
}
