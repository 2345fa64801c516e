package fakeforge

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// GitHub is an in-memory fake of the GitHub REST API endpoints the github
// adapter uses, for one repository. GitHub itself cannot run in a test, so
// the adapter is tested through go-github against this fake, which follows
// the documentation at
// https://docs.github.com/rest/pulls/pulls and
// https://docs.github.com/rest/issues/labels:
//
//	GET   /repos/{owner}/{repo}/pulls          state (open|closed|all, default open),
//	                                          head (user:ref), base, sort, direction,
//	                                          per_page, page; Link rel="next"
//	POST  /repos/{owner}/{repo}/pulls          {title, head, base, body}: 201; 422
//	                                          "A pull request already exists for
//	                                          owner:head." when one is open
//	PATCH /repos/{owner}/{repo}/pulls/{n}      {title, body, state}: 200
//	POST  /repos/{owner}/{repo}/issues/{n}/labels  ["a"] or {labels: ["a"]}: 200
//	POST  /repos/{owner}/{repo}/issues/{n}/comments {body}: 201 (a pull request is an
//	                                          issue; https://docs.github.com/rest/issues/comments)
//
// A merged pull request is state "closed" with merged_at set, as on GitHub.
// Authentication is "Authorization: Bearer TOKEN" (or "token TOKEN"): 401
// "Bad credentials" for an unknown token, 403 "Resource not accessible by
// personal access token" for a write with a Read token. Another repository
// gets 404 "Not Found".
type GitHub struct {
	*store
	// URL is the API base URL to give the adapter (it ends in a slash).
	URL         string
	owner, repo string
}

// NewGitHub starts a fake GitHub serving repository owner/repo, stopped
// when the test ends.
func NewGitHub(t testing.TB, owner, repo string) *GitHub {
	g := &GitHub{store: newStore(), owner: owner, repo: repo}
	srv := httptest.NewServer(http.HandlerFunc(g.serve))
	t.Cleanup(srv.Close)
	g.URL = srv.URL + "/"
	return g
}

func (g *GitHub) serve(w http.ResponseWriter, r *http.Request) {
	g.mu.Lock()
	defer g.mu.Unlock()
	token := r.Header.Get("Authorization")
	token = strings.TrimPrefix(strings.TrimPrefix(token, "Bearer "), "token ")
	switch status := g.authorize(r, token); status {
	case 0:
	case http.StatusUnauthorized:
		g.error(w, status, "Bad credentials", "https://docs.github.com/rest")
		return
	case http.StatusForbidden:
		g.error(w, status, "Resource not accessible by personal access token", "https://docs.github.com/rest/pulls/pulls")
		return
	default:
		g.error(w, status, http.StatusText(status), "")
		return
	}
	segs := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	if len(segs) < 4 || segs[0] != "repos" {
		g.stray(w, r)
		return
	}
	if segs[1] != g.owner || segs[2] != g.repo {
		g.error(w, http.StatusNotFound, "Not Found", "https://docs.github.com/rest/pulls/pulls")
		return
	}
	switch {
	case len(segs) == 4 && segs[3] == "pulls" && r.Method == http.MethodGet:
		g.list(w, r)
	case len(segs) == 4 && segs[3] == "pulls" && r.Method == http.MethodPost:
		g.create(w, r)
	case len(segs) == 5 && segs[3] == "pulls" && r.Method == http.MethodPatch:
		g.edit(w, r, segs[4])
	case len(segs) == 6 && segs[3] == "issues" && segs[5] == "labels" && r.Method == http.MethodPost:
		g.addLabels(w, r, segs[4])
	case len(segs) == 6 && segs[3] == "issues" && segs[5] == "comments" && r.Method == http.MethodPost:
		g.comment(w, r, segs[4])
	default:
		g.stray(w, r)
	}
}

func (g *GitHub) stray(w http.ResponseWriter, r *http.Request) {
	g.strays = append(g.strays, r.Method+" "+r.URL.Path)
	g.error(w, http.StatusNotFound, "Not Found", "")
}

func (g *GitHub) error(w http.ResponseWriter, status int, msg, doc string) {
	writeJSON(w, status, map[string]any{"message": msg, "documentation_url": doc, "status": strconv.Itoa(status)})
}

func (g *GitHub) list(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	state := q.Get("state")
	if state == "" {
		state = "open"
	}
	var headUser, headRef string
	if h := q.Get("head"); h != "" {
		var ok bool
		headUser, headRef, ok = strings.Cut(h, ":")
		if !ok {
			// GitHub wants user:ref; a bare ref matches nothing.
			headUser, headRef = "", h
		}
	}
	var match []*PR
	for _, p := range g.prs {
		ghState := "open"
		if p.State != "open" {
			ghState = "closed"
		}
		if state != "all" && state != ghState {
			continue
		}
		if q.Has("head") && (p.Head != headRef || g.headUser(p) != headUser) {
			continue
		}
		if q.Has("base") && p.Base != q.Get("base") {
			continue
		}
		match = append(match, p)
	}
	// Sorted by creation; descending is the default for sort=created.
	if q.Get("direction") != "asc" {
		slices.Reverse(match)
	}
	items, pageNo, more := page(q, match)
	if more {
		next := *r.URL
		nq := next.Query()
		nq.Set("page", strconv.Itoa(pageNo+1))
		next.RawQuery = nq.Encode()
		w.Header().Set("Link", fmt.Sprintf(`<http://%s%s>; rel="next"`, r.Host, next.RequestURI()))
	}
	out := make([]map[string]any, 0, len(items))
	for _, p := range items {
		out = append(out, g.json(r, p))
	}
	writeJSON(w, http.StatusOK, out)
}

func (g *GitHub) headUser(p *PR) string {
	if p.FromFork {
		return "forker"
	}
	return g.owner
}

func (g *GitHub) create(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Title, Head, Base, Body string
	}
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
		g.error(w, http.StatusBadRequest, "Problems parsing JSON", "")
		return
	}
	if user, ref, ok := strings.Cut(in.Head, ":"); ok && user == g.owner {
		in.Head = ref
	}
	if in.Title == "" || in.Head == "" || in.Base == "" {
		g.validation(w, "missing_field", "title, head and base are required")
		return
	}
	if g.openFor(in.Head, in.Base) != nil {
		g.validation(w, "custom", fmt.Sprintf("A pull request already exists for %s:%s.", g.owner, in.Head))
		return
	}
	p := &PR{Number: len(g.prs) + 1, Title: in.Title, Body: in.Body, Head: in.Head, Base: in.Base, State: "open", Created: g.now()}
	g.prs = append(g.prs, p)
	writeJSON(w, http.StatusCreated, g.json(r, p))
}

func (g *GitHub) validation(w http.ResponseWriter, code, msg string) {
	writeJSON(w, http.StatusUnprocessableEntity, map[string]any{
		"message":           "Validation Failed",
		"errors":            []map[string]string{{"resource": "PullRequest", "code": code, "message": msg}},
		"documentation_url": "https://docs.github.com/rest/pulls/pulls#create-a-pull-request",
		"status":            "422",
	})
}

func (g *GitHub) edit(w http.ResponseWriter, r *http.Request, num string) {
	p := g.byNumber(num)
	if p == nil {
		g.error(w, http.StatusNotFound, "Not Found", "")
		return
	}
	var in struct {
		Title, Body, State *string
	}
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
		g.error(w, http.StatusBadRequest, "Problems parsing JSON", "")
		return
	}
	if in.Title != nil {
		p.Title = *in.Title
	}
	if in.Body != nil {
		p.Body = *in.Body
	}
	if in.State != nil {
		switch {
		case *in.State == "closed" && p.State == "open":
			now := g.now()
			p.State, p.ClosedAt = "closed", &now
		case *in.State == "open" && p.State == "merged":
			g.validation(w, "custom", "state cannot be changed. The pull request cannot be reopened.")
			return
		case *in.State == "open":
			p.State, p.ClosedAt = "open", nil
		}
	}
	writeJSON(w, http.StatusOK, g.json(r, p))
}

func (g *GitHub) addLabels(w http.ResponseWriter, r *http.Request, num string) {
	p := g.byNumber(num)
	if p == nil {
		g.error(w, http.StatusNotFound, "Not Found", "")
		return
	}
	var raw json.RawMessage
	if err := json.NewDecoder(r.Body).Decode(&raw); err != nil {
		g.error(w, http.StatusBadRequest, "Problems parsing JSON", "")
		return
	}
	var names []string
	if err := json.Unmarshal(raw, &names); err != nil {
		var obj struct{ Labels []string }
		if err := json.Unmarshal(raw, &obj); err != nil {
			g.error(w, http.StatusBadRequest, "Problems parsing JSON", "")
			return
		}
		names = obj.Labels
	}
	for _, n := range names {
		if !slices.ContainsFunc(p.Labels, func(l string) bool { return strings.EqualFold(l, n) }) {
			p.Labels = append(p.Labels, n)
		}
	}
	out := []map[string]any{}
	for _, l := range p.Labels {
		out = append(out, map[string]any{"name": l})
	}
	writeJSON(w, http.StatusOK, out)
}

func (g *GitHub) comment(w http.ResponseWriter, r *http.Request, num string) {
	p := g.byNumber(num)
	if p == nil {
		g.error(w, http.StatusNotFound, "Not Found", "")
		return
	}
	var in struct{ Body *string }
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
		g.error(w, http.StatusBadRequest, "Problems parsing JSON", "")
		return
	}
	if in.Body == nil || *in.Body == "" {
		writeJSON(w, http.StatusUnprocessableEntity, map[string]any{
			"message": "Validation Failed",
			"errors":  []map[string]string{{"resource": "IssueComment", "code": "missing_field", "field": "body"}},
			"status":  "422",
		})
		return
	}
	p.Comments = append(p.Comments, *in.Body)
	id := 5000 + len(p.Comments)
	writeJSON(w, http.StatusCreated, map[string]any{
		"id":         id,
		"body":       *in.Body,
		"html_url":   fmt.Sprintf("http://%s/%s/%s/pull/%d#issuecomment-%d", r.Host, g.owner, g.repo, p.Number, id),
		"created_at": g.now().Format(time.RFC3339),
	})
}

func (g *GitHub) byNumber(num string) *PR {
	n, err := strconv.Atoi(num)
	if err != nil {
		return nil
	}
	return g.get(n)
}

func (g *GitHub) json(r *http.Request, p *PR) map[string]any {
	state := "open"
	if p.State != "open" {
		state = "closed"
	}
	labels := []map[string]any{}
	for _, l := range p.Labels {
		labels = append(labels, map[string]any{"name": l})
	}
	web := (&url.URL{Scheme: "http", Host: r.Host, Path: fmt.Sprintf("/%s/%s/pull/%d", g.owner, g.repo, p.Number)}).String()
	ts := func(t *time.Time) any {
		if t == nil {
			return nil
		}
		return t.Format(time.RFC3339)
	}
	return map[string]any{
		"number":     p.Number,
		"state":      state,
		"title":      p.Title,
		"body":       p.Body,
		"html_url":   web,
		"created_at": p.Created.Format(time.RFC3339),
		"closed_at":  ts(p.ClosedAt),
		"merged_at":  ts(p.MergedAt),
		"merged":     p.MergedAt != nil,
		"labels":     labels,
		"head":       map[string]any{"ref": p.Head, "label": g.headUser(p) + ":" + p.Head, "sha": p.HeadSHA},
		"base":       map[string]any{"ref": p.Base, "label": g.owner + ":" + p.Base},
	}
}
