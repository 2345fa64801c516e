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

// GitLab is an in-memory fake of the GitLab REST API endpoints the gitlab
// adapter uses, for one project. GitLab itself cannot run in a test, so the
// adapter is tested through GitLab's client-go against this fake, which
// follows the documentation at
// https://docs.gitlab.com/api/merge_requests/:
//
//	GET  /api/v4/projects/{id}/merge_requests        state (opened|closed|locked|merged|all,
//	                                                default all), source_branch, target_branch,
//	                                                order_by, sort, per_page, page; X-Next-Page
//	POST /api/v4/projects/{id}/merge_requests        {title, description, source_branch,
//	                                                target_branch, labels}: 201; 409 "Another open
//	                                                merge request already exists for this source
//	                                                branch: !N"
//	PUT  /api/v4/projects/{id}/merge_requests/{iid}  {title, description, labels, add_labels,
//	                                                remove_labels, state_event}: 200
//	POST /api/v4/projects/{id}/merge_requests/{iid}/notes  {body}: 201
//	                                                (https://docs.gitlab.com/api/notes/)
//
// {id} is the project's numeric ID or its URL-encoded path (group%2Fproject).
// Labels in a body are a comma-separated string or an array. Authentication
// is the PRIVATE-TOKEN header (or "Authorization: Bearer TOKEN"): 401 "401
// Unauthorized" for an unknown token, 403 insufficient_scope for a write
// with a Read token. Another project gets 404 "404 Project Not Found".
type GitLab struct {
	*store
	// URL is the server's base URL to give the adapter (without /api/v4).
	URL string
	// ProjectID is the project's numeric ID.
	ProjectID int
	path      string
}

// NewGitLab starts a fake GitLab serving the project at path (such as
// "group/sub/project"), stopped when the test ends.
func NewGitLab(t testing.TB, path string) *GitLab {
	g := &GitLab{store: newStore(), path: path, ProjectID: 42}
	srv := httptest.NewServer(http.HandlerFunc(g.serve))
	t.Cleanup(srv.Close)
	g.URL = srv.URL
	return g
}

func (g *GitLab) serve(w http.ResponseWriter, r *http.Request) {
	g.mu.Lock()
	defer g.mu.Unlock()
	token := r.Header.Get("PRIVATE-TOKEN")
	if token == "" {
		token = strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
	}
	switch status := g.authorize(r, token); status {
	case 0:
	case http.StatusUnauthorized:
		writeJSON(w, status, map[string]string{"message": "401 Unauthorized"})
		return
	case http.StatusForbidden:
		writeJSON(w, status, map[string]string{
			"error":             "insufficient_scope",
			"error_description": "The request requires higher privileges than provided by the access token.",
			"scope":             "api",
		})
		return
	default:
		writeJSON(w, status, map[string]string{"message": fmt.Sprintf("%d %s", status, http.StatusText(status))})
		return
	}
	// The project path is one URL-encoded segment: split the escaped path.
	segs := strings.Split(strings.Trim(r.URL.EscapedPath(), "/"), "/")
	if len(segs) < 5 || segs[0] != "api" || segs[1] != "v4" || segs[2] != "projects" || segs[4] != "merge_requests" {
		g.stray(w, r)
		return
	}
	id, err := url.PathUnescape(segs[3])
	if err != nil || (id != g.path && id != strconv.Itoa(g.ProjectID)) {
		writeJSON(w, http.StatusNotFound, map[string]string{"message": "404 Project Not Found"})
		return
	}
	switch {
	case len(segs) == 5 && r.Method == http.MethodGet:
		g.list(w, r)
	case len(segs) == 5 && r.Method == http.MethodPost:
		g.create(w, r)
	case len(segs) == 6 && r.Method == http.MethodPut:
		g.update(w, r, segs[5])
	case len(segs) == 7 && segs[6] == "notes" && r.Method == http.MethodPost:
		g.note(w, r, segs[5])
	default:
		g.stray(w, r)
	}
}

func (g *GitLab) stray(w http.ResponseWriter, r *http.Request) {
	g.strays = append(g.strays, r.Method+" "+r.URL.EscapedPath())
	writeJSON(w, http.StatusNotFound, map[string]string{"error": "404 Not Found"})
}

func (g *GitLab) list(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	state := q.Get("state")
	if state == "" {
		state = "all"
	}
	var match []*PR
	for _, p := range g.prs {
		if state != "all" && state != glState(p) {
			continue
		}
		if q.Has("source_branch") && p.Head != q.Get("source_branch") {
			continue
		}
		if q.Has("target_branch") && p.Base != q.Get("target_branch") {
			continue
		}
		match = append(match, p)
	}
	if q.Get("sort") != "asc" {
		slices.Reverse(match)
	}
	items, pageNo, more := page(q, match)
	w.Header().Set("X-Page", strconv.Itoa(pageNo))
	w.Header().Set("X-Total", strconv.Itoa(len(match)))
	if more {
		w.Header().Set("X-Next-Page", strconv.Itoa(pageNo+1))
	} else {
		w.Header().Set("X-Next-Page", "")
	}
	out := make([]map[string]any, 0, len(items))
	for _, p := range items {
		out = append(out, g.json(r, p))
	}
	writeJSON(w, http.StatusOK, out)
}

func glState(p *PR) string {
	if p.State == "open" {
		return "opened"
	}
	return p.State
}

// glBody is a create or update body. Labels come as "a,b" or ["a","b"].
type glBody struct {
	Title        *string   `json:"title"`
	Description  *string   `json:"description"`
	SourceBranch string    `json:"source_branch"`
	TargetBranch string    `json:"target_branch"`
	Labels       *glLabels `json:"labels"`
	AddLabels    *glLabels `json:"add_labels"`
	RemoveLabels *glLabels `json:"remove_labels"`
	StateEvent   string    `json:"state_event"`
}

type glLabels []string

func (l *glLabels) UnmarshalJSON(data []byte) error {
	var list []string
	if err := json.Unmarshal(data, &list); err == nil {
		*l = list
		return nil
	}
	var s string
	if err := json.Unmarshal(data, &s); err != nil {
		return err
	}
	*l = nil
	for _, part := range strings.Split(s, ",") {
		if part = strings.TrimSpace(part); part != "" {
			*l = append(*l, part)
		}
	}
	return nil
}

func (g *GitLab) create(w http.ResponseWriter, r *http.Request) {
	var in glBody
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid JSON"})
		return
	}
	switch {
	case in.Title == nil || *in.Title == "":
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "title is missing"})
		return
	case in.SourceBranch == "" || in.TargetBranch == "":
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "source_branch, target_branch are missing"})
		return
	}
	if open := g.openFor(in.SourceBranch, in.TargetBranch); open != nil {
		writeJSON(w, http.StatusConflict, map[string][]string{
			"message": {fmt.Sprintf("Another open merge request already exists for this source branch: !%d", open.Number)},
		})
		return
	}
	p := &PR{Number: len(g.prs) + 1, Title: *in.Title, Head: in.SourceBranch, Base: in.TargetBranch, State: "open", Created: g.now()}
	if in.Description != nil {
		p.Body = *in.Description
	}
	if in.Labels != nil {
		p.Labels = addLabels(nil, *in.Labels)
	}
	g.prs = append(g.prs, p)
	writeJSON(w, http.StatusCreated, g.json(r, p))
}

func (g *GitLab) update(w http.ResponseWriter, r *http.Request, iid string) {
	n, _ := strconv.Atoi(iid)
	p := g.get(n)
	if p == nil {
		writeJSON(w, http.StatusNotFound, map[string]string{"message": "404 Not found"})
		return
	}
	var in glBody
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid JSON"})
		return
	}
	if in.Title == nil && in.Description == nil && in.Labels == nil && in.AddLabels == nil && in.RemoveLabels == nil && in.StateEvent == "" {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "at least one parameter must be provided"})
		return
	}
	if in.Title != nil {
		p.Title = *in.Title
	}
	if in.Description != nil {
		p.Body = *in.Description
	}
	if in.Labels != nil {
		p.Labels = addLabels(nil, *in.Labels)
	}
	if in.AddLabels != nil {
		p.Labels = addLabels(p.Labels, *in.AddLabels)
	}
	if in.RemoveLabels != nil {
		p.Labels = slices.DeleteFunc(p.Labels, func(l string) bool { return slices.Contains(*in.RemoveLabels, l) })
	}
	switch {
	case in.StateEvent == "close" && p.State == "open":
		now := g.now()
		p.State, p.ClosedAt = "closed", &now
	case in.StateEvent == "reopen" && p.State == "closed":
		p.State, p.ClosedAt = "open", nil
	}
	writeJSON(w, http.StatusOK, g.json(r, p))
}

func (g *GitLab) note(w http.ResponseWriter, r *http.Request, iid string) {
	n, _ := strconv.Atoi(iid)
	p := g.get(n)
	if p == nil {
		writeJSON(w, http.StatusNotFound, map[string]string{"message": "404 Not found"})
		return
	}
	var in struct{ Body *string }
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid JSON"})
		return
	}
	if in.Body == nil || *in.Body == "" {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "body is missing"})
		return
	}
	p.Comments = append(p.Comments, *in.Body)
	writeJSON(w, http.StatusCreated, map[string]any{
		"id":            7000 + len(p.Comments),
		"body":          *in.Body,
		"noteable_type": "MergeRequest",
		"noteable_iid":  p.Number,
		"system":        false,
		"created_at":    g.now().Format(time.RFC3339),
	})
}

func addLabels(have, add []string) []string {
	for _, a := range add {
		if !slices.Contains(have, a) {
			have = append(have, a)
		}
	}
	return have
}

func (g *GitLab) json(r *http.Request, p *PR) map[string]any {
	source := g.ProjectID
	if p.FromFork {
		source = g.ProjectID + 1000
	}
	ts := func(t *time.Time) any {
		if t == nil {
			return nil
		}
		return t.Format(time.RFC3339)
	}
	labels := append([]string{}, p.Labels...)
	return map[string]any{
		"id":                1000 + p.Number,
		"iid":               p.Number,
		"project_id":        g.ProjectID,
		"source_project_id": source,
		"target_project_id": g.ProjectID,
		"title":             p.Title,
		"description":       p.Body,
		"state":             glState(p),
		"source_branch":     p.Head,
		"sha":               p.HeadSHA,
		"target_branch":     p.Base,
		"labels":            labels,
		"web_url":           fmt.Sprintf("http://%s/%s/-/merge_requests/%d", r.Host, g.path, p.Number),
		"created_at":        p.Created.Format(time.RFC3339),
		"merged_at":         ts(p.MergedAt),
		"closed_at":         ts(p.ClosedAt),
	}
}
