// Package fakeforge fakes the few REST endpoints of GitHub and GitLab that
// the pull request adapters call, in memory, on an httptest server.
//
// GitHub and GitLab cannot run on a test machine, so the github and gitlab
// adapters are tested against these fakes, driven through the real client
// libraries (google/go-github and GitLab's client-go). Each fake implements
// only the documented endpoints the adapters use, with the documented query
// parameters, answers and error statuses; every other request gets 404 and
// is recorded, so a test can tell when an adapter strays.
//
// Tokens decide what a caller may do: a token registered with Write may
// read and write, one with Read may only read (writes get 403), and any
// other token gets 401. The fakes count write calls (POST, PATCH, PUT) so
// tests can assert that nothing was written.
package fakeforge

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Access is what a token may do.
type Access int

// Access levels.
const (
	Read Access = iota + 1
	Write
)

// PR is a pull request (merge request) as a fake stores it.
type PR struct {
	Number      int
	Title, Body string
	Head, Base  string
	// HeadSHA is the commit the head branch points at, as a test sets it
	// (the fakes hold no repository): GitHub's head.sha, GitLab's sha.
	HeadSHA string
	State   string // open, closed or merged
	Labels  []string
	// Comments are the bodies of the comments (GitLab: notes) posted on
	// the pull request, oldest first.
	Comments []string
	Created  time.Time
	MergedAt *time.Time
	ClosedAt *time.Time
	FromFork bool
}

// store is the state and bookkeeping the two fakes share.
type store struct {
	mu      sync.Mutex
	tokens  map[string]Access
	prs     []*PR
	writes  int
	strays  []string
	clock   time.Time
	failAll int // when non-zero, every request gets this status
}

func newStore() *store {
	return &store{tokens: map[string]Access{}, clock: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
}

// now returns a strictly increasing time, so that creation order is clear.
func (s *store) now() time.Time {
	s.clock = s.clock.Add(time.Minute)
	return s.clock
}

// AddToken lets token do what access allows.
func (s *store) AddToken(token string, access Access) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tokens[token] = access
}

// Writes returns how many write calls (POST, PATCH, PUT) reached the fake,
// whether or not they were allowed.
func (s *store) Writes() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.writes
}

// Strays returns the requests no endpoint of the fake serves.
func (s *store) Strays() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.strays...)
}

// FailWith makes every following request answer status (0 stops it).
func (s *store) FailWith(status int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failAll = status
}

// PRs returns a copy of the stored pull requests, oldest first.
func (s *store) PRs() []PR {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]PR, len(s.prs))
	for i, p := range s.prs {
		out[i] = *p
		out[i].Labels = append([]string(nil), p.Labels...)
		out[i].Comments = append([]string(nil), p.Comments...)
	}
	return out
}

// Add stores a pull request as if someone had opened it, and returns its
// number. A test uses it for pull requests from forks or made by hand.
func (s *store) Add(p PR) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	p.Number = len(s.prs) + 1
	if p.State == "" {
		p.State = "open"
	}
	p.Created = s.now()
	s.prs = append(s.prs, &p)
	return p.Number
}

// Merge marks pull request number merged.
func (s *store) Merge(number int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.get(number)
	if p == nil {
		panic(fmt.Sprintf("fakeforge: no pull request #%d", number))
	}
	now := s.now()
	p.State, p.MergedAt, p.ClosedAt = "merged", &now, &now
}

// Close marks pull request number closed without merging.
func (s *store) Close(number int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.get(number)
	if p == nil {
		panic(fmt.Sprintf("fakeforge: no pull request #%d", number))
	}
	now := s.now()
	p.State, p.ClosedAt = "closed", &now
}

// RemoveLabel removes label name (ignoring case) from pull request number,
// as a person would in the web interface.
func (s *store) RemoveLabel(number int, name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.get(number)
	if p == nil {
		panic(fmt.Sprintf("fakeforge: no pull request #%d", number))
	}
	p.Labels = slices.DeleteFunc(p.Labels, func(l string) bool { return strings.EqualFold(l, name) })
}

// get returns pull request number; the caller holds mu.
func (s *store) get(number int) *PR {
	if number < 1 || number > len(s.prs) {
		return nil
	}
	return s.prs[number-1]
}

// openFor returns the open pull request from head into base, if any; the
// caller holds mu.
func (s *store) openFor(head, base string) *PR {
	for _, p := range s.prs {
		if p.State == "open" && !p.FromFork && p.Head == head && p.Base == base {
			return p
		}
	}
	return nil
}

// authorize checks the token for the request and counts writes; the caller
// holds mu. It returns the status to refuse with, or 0.
func (s *store) authorize(r *http.Request, token string) int {
	write := r.Method == http.MethodPost || r.Method == http.MethodPatch || r.Method == http.MethodPut
	if write {
		s.writes++
	}
	if s.failAll != 0 {
		return s.failAll
	}
	access, ok := s.tokens[token]
	switch {
	case token == "" || !ok:
		return http.StatusUnauthorized
	case write && access < Write:
		return http.StatusForbidden
	}
	return 0
}

// page cuts items to the page the query asks for (page, per_page with
// default 20 and at most 100) and says whether another page follows.
func page[T any](q url.Values, items []T) (out []T, pageNo int, more bool) {
	per, _ := strconv.Atoi(q.Get("per_page"))
	if per <= 0 {
		per = 20
	}
	per = min(per, 100)
	pageNo, _ = strconv.Atoi(q.Get("page"))
	pageNo = max(pageNo, 1)
	start := (pageNo - 1) * per
	if start >= len(items) {
		return nil, pageNo, false
	}
	end := min(start+per, len(items))
	return items[start:end], pageNo, end < len(items)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
