package pullrequest

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"
)

// State is the state of a pull request.
type State string

// The states a Provider reports. A forge's other states map to one of these:
// GitLab's "locked" (a merge in progress) is StateOpen.
const (
	StateOpen   State = "open"
	StateClosed State = "closed"
	StateMerged State = "merged"
)

// PR is a pull request (a merge request on GitLab) as a Provider reports it.
type PR struct {
	// Number is the pull request's number in its repository (GitLab's iid).
	Number int
	// URL is the pull request's web page.
	URL string
	// State is open, closed (without merging) or merged.
	State State
	// Title and Body are the pull request's title and Markdown description.
	Title, Body string
	// Head is the branch the changes come from; Base the branch they go to.
	Head, Base string
	// HeadCommit is the full hash of the commit Head pointed at: for a
	// merged pull request, the commit that was merged. Empty when the forge
	// did not say.
	HeadCommit string
	// Labels are the names of the labels the pull request has.
	Labels []string
}

// Provider is the small adapter each forge implements (github, gitlab, gitea
// subpackages). Its methods return *Error for a failed API call, and an
// error that Is ErrAlreadyExists when Create is refused because an open pull
// request from head into base already exists.
type Provider interface {
	// Name returns the provider's name: "github", "gitlab" or "gitea".
	Name() string
	// List returns the pull requests from head into base in the repository,
	// open and closed or merged, most recent first, with enough history to
	// find the open ones and the last closed or merged one. Pull requests
	// from forks are left out.
	List(ctx context.Context, head, base string) ([]PR, error)
	// Create opens a pull request from head into base.
	Create(ctx context.Context, head, base, title, body string) (*PR, error)
	// Update sets the title and body of pull request number.
	Update(ctx context.Context, number int, title, body string) (*PR, error)
	// AddLabels adds labels to pull request number, keeping the ones it has.
	AddLabels(ctx context.Context, number int, labels []string) error
	// Comment posts body as a comment on pull request number.
	Comment(ctx context.Context, number int, body string) error
	// Close closes pull request number without merging it.
	Close(ctx context.Context, number int) error
}

// Change is one bump that the branch makes.
type Change struct {
	// File is the changed file, slash-separated and relative to the
	// repository root.
	File string
	// Line is the 1-based line of the changed value. It is not part of the
	// content: see ContentKey.
	Line int
	// Policy is the name of the image policy that owns the value.
	Policy string
	// Old and New are the value before and after the bump.
	Old, New string
}

// Request is what a pull request should propose.
type Request struct {
	// Head is the branch imagebump pushes to (push.branch); Base is the
	// branch the pull request targets (git.branch).
	Head, Base string
	// Title is the pull request's title, already rendered by the caller. It
	// is cut to MaxTitleLength bytes, its line breaks made spaces.
	Title string
	// Changes are the bumps the branch makes; at least one.
	Changes []Change
	// Labels are added to the pull request when Ensure opens it, and the
	// ones it lacks when Ensure updates it; a pull request left unchanged
	// gets none, so a label someone removed stays removed until the bumps
	// change. Labels are compared without regard to case, as GitHub does.
	Labels []string
	// Notes are listed in the body under the changes: what the pull
	// request leaves out, and why (tags a gate held back, policies held or
	// failed). They change the body, not the content key.
	Notes []string
}

// MaxTitleLength is the longest title Ensure sends, in bytes of UTF-8.
// Gitea and Forgejo keep 255 bytes of a title and cut the rest with their
// own "…", and a title the forge shortened would never compare equal
// again: every run would update the pull request. GitHub (256 characters)
// and GitLab (255) take as much.
const MaxTitleLength = 255

// Outcome says what Ensure or Close did, or what Plan or PlanClose expects
// it would do.
type Outcome string

// The outcomes of Ensure and Plan, then of Close and PlanClose.
const (
	// Opened: a new pull request was opened.
	Opened Outcome = "opened"
	// Updated: the open pull request's title or body was changed.
	Updated Outcome = "updated"
	// Unchanged: the open pull request already says this; nothing was
	// written, not even labels it lacks.
	Unchanged Outcome = "unchanged"
	// Skipped: no pull request is open and the last closed or merged one
	// already carried this exact content, so none is opened or reopened.
	Skipped Outcome = "skipped"

	// Closed: the open pull request proposed bumps the branch no longer
	// makes, and was closed (Close) or would be (PlanClose).
	Closed Outcome = "closed"
	// None: no pull request is open from the branch, so Close wrote
	// nothing.
	None Outcome = "none"
)

// Result is what Ensure or Close did, or what Plan or PlanClose expects it
// would do.
type Result struct {
	// Number and URL identify the pull request: the one opened, updated or
	// left unchanged, the closed or merged one that made Ensure skip, or
	// the one Close closed. Plan leaves them empty for Opened, and Close
	// for None.
	Number int    `json:"number,omitempty"`
	URL    string `json:"url,omitempty"`
	// Outcome is what happened (or would happen) to the pull request.
	Outcome Outcome `json:"outcome"`
	// Provider is the Provider's Name.
	Provider string `json:"provider"`
	// Labels are the labels added (Plan: that would be added).
	Labels []string `json:"labels,omitempty"`
	// Duplicates are the other open pull requests from the same branch
	// (the twins of runs that overlapped, or opened by hand), which Ensure
	// closed, keeping the oldest (Plan: would close).
	Duplicates []int `json:"duplicates,omitempty"`
}

// ErrAlreadyExists is what a Provider's Create returns (wrapped, usually in
// an *Error) when the forge refuses a pull request because an open one from
// the same head into the same base already exists: Gitea and GitLab answer
// 409, GitHub 422 "A pull request already exists".
var ErrAlreadyExists = errors.New("an open pull request from this branch already exists")

// Ensure keeps one pull request open from req.Head into req.Base that
// proposes req.Changes, following the lifecycle in the package
// documentation. A run whose pull request is already current makes no call
// that writes. A result that comes with an error is a pull request opened
// or updated whose labels the forge refused.
func Ensure(ctx context.Context, p Provider, req Request) (*Result, error) {
	var twins twinLog
	res, err := ensure(ctx, p, req, &twins)
	if res != nil {
		slices.Sort(twins.closed)
		res.Duplicates = twins.closed
	}
	if err == nil && len(twins.unsaid) > 0 {
		err = errors.Join(twins.unsaid...)
	}
	return res, err
}

// twinLog is what closeTwins did during one Ensure: the twins it closed,
// and the refusals of the comments it could not leave on them.
type twinLog struct {
	closed []int
	unsaid []error
}

// ensure is Ensure; the twins it closes go to twins.
func ensure(ctx context.Context, p Provider, req Request, twins *twinLog) (*Result, error) {
	req, err := req.normalize()
	if err != nil {
		return nil, err
	}
	prs, err := p.List(ctx, req.Head, req.Base)
	if err != nil {
		return nil, err
	}
	if prs, err = closeTwins(ctx, p, prs, twins); err != nil {
		return nil, err
	}
	d := decide(prs, req)
	if d.outcome == Opened {
		pr, err := p.Create(ctx, req.Head, req.Base, req.Title, d.body)
		switch {
		case err == nil:
			left, err := twinOfOlder(ctx, p, req, pr, prs, twins)
			if err != nil {
				return nil, err
			}
			if left == nil {
				return finish(ctx, p, pr, Opened, d.labels)
			}
			d = decide(left, req)
		case errors.Is(err, ErrAlreadyExists):
			// Another run opened one between our list and our create.
			// Take it over as the open pull request; if it still cannot
			// be seen, report the refusal rather than guess.
			prs, lerr := p.List(ctx, req.Head, req.Base)
			if lerr != nil {
				return nil, lerr
			}
			d = decide(prs, req)
			if d.open == nil {
				return nil, err
			}
		default:
			return nil, err
		}
	}
	switch d.outcome {
	case Skipped:
		return d.result(p.Name()), nil
	case Updated:
		pr, err := p.Update(ctx, d.open.Number, req.Title, d.body)
		if err != nil {
			return nil, err
		}
		if pr.URL == "" {
			pr.URL = d.open.URL
		}
		return finish(ctx, p, pr, Updated, d.labels)
	default:
		// d.labels is empty: an unchanged pull request gets no write.
		return finish(ctx, p, d.open, Unchanged, d.labels)
	}
}

// twinOfOlder looks again, once pr is opened, for an older open pull
// request from the same branch: another run may have opened one at the
// same moment, where the forge's check for an open one races (Gitea's).
// Then pr, the newer, is closed (closeTwins), and the pull requests are
// returned; nil means pr stands. before is the listing pr was opened on:
// one it showed closed or merged and the new one open is a listing that
// lags, not a twin. A list that fails leaves pr standing.
func twinOfOlder(ctx context.Context, p Provider, req Request, pr *PR, before []PR, twins *twinLog) ([]PR, error) {
	after, err := p.List(ctx, req.Head, req.Base)
	if err != nil {
		return nil, nil
	}
	shut := func(n int) bool {
		return slices.ContainsFunc(before, func(o PR) bool { return o.Number == n && o.State != StateOpen })
	}
	if !slices.ContainsFunc(after, func(o PR) bool { return o.State == StateOpen && o.Number < pr.Number && !shut(o.Number) }) {
		return nil, nil
	}
	after = slices.DeleteFunc(after, func(o PR) bool { return shut(o.Number) })
	if !slices.ContainsFunc(after, func(o PR) bool { return o.Number == pr.Number }) {
		after = append(after, *pr)
	}
	return closeTwins(ctx, p, after, twins)
}

// closeTwins closes the open pull requests in prs but the oldest, and
// returns prs with them closed. prs are those from one head into one base,
// of which a forge keeps one open: more are the twins of runs that
// overlapped where the forge's check races (Gitea's), or opened by hand.
// As Close does: each twin gets the stale marker, so that its bumps do not
// count as turned down, is closed, then gets a comment naming the one
// kept; each goes to twins.closed, and a refused comment, which leaves it
// closed, to twins.unsaid.
func closeTwins(ctx context.Context, p Provider, prs []PR, twins *twinLog) ([]PR, error) {
	oldest := oldestOpen(prs)
	out := slices.Clone(prs)
	for i := range out {
		pr := &out[i]
		if pr.State != StateOpen || pr.Number == oldest {
			continue
		}
		msg := fmt.Sprintf("Closed as a duplicate of #%d, open from the same branch, which imagebump keeps current.", oldest)
		refused, err := closeStale(ctx, p, *pr, msg)
		if err != nil {
			return nil, err
		}
		pr.State, pr.Body = StateClosed, markStale(pr.Body)
		twins.closed = append(twins.closed, pr.Number)
		if refused != nil {
			twins.unsaid = append(twins.unsaid, fmt.Errorf("closed #%d as a duplicate of #%d, but commenting on it was refused: %w", pr.Number, oldest, refused))
		}
	}
	return out, nil
}

// oldestOpen returns the number of the oldest open pull request in prs,
// the one kept of twins, or 0 when none is open.
func oldestOpen(prs []PR) int {
	oldest := 0
	for _, pr := range prs {
		if pr.State == StateOpen && (oldest == 0 || pr.Number < oldest) {
			oldest = pr.Number
		}
	}
	return oldest
}

// finish adds labels to pr and builds the result. Labels refused leave
// the pull request opened or updated all the same: the result comes with
// an error saying so, and without the labels.
func finish(ctx context.Context, p Provider, pr *PR, o Outcome, labels []string) (*Result, error) {
	res := &Result{Number: pr.Number, URL: pr.URL, Outcome: o, Provider: p.Name(), Labels: labels}
	if len(labels) > 0 {
		if err := p.AddLabels(ctx, pr.Number, labels); err != nil {
			res.Labels = nil
			return res, fmt.Errorf("%s pull request #%d, but adding the labels %s was refused; add them by hand (the next pull request opened gets them): %w",
				o, pr.Number, strings.Join(labels, ", "), err)
		}
	}
	return res, nil
}

// HeadRecorder is implemented by a Provider whose List may report a merged
// pull request's HeadCommit as its branch's current tip rather than the
// commit that was merged (Forgejo, and Gitea's API in places, read the
// branch when it still exists). RecordedHead returns the head the forge
// recorded for the pull request (Gitea's refs/pull/N/head), which stops
// moving once it is merged.
type HeadRecorder interface {
	RecordedHead(ctx context.Context, number int) (string, error)
}

// MergedHead reports whether commit, a full hash, is the head of one of
// the pull requests from head into base that was merged: what the branch
// still holds after its pull request was merged (a commit a forge's
// "update branch" made, say) is in the base, so replacing the branch
// drops nothing. A commit pushed to the branch after the merge is not
// such a head. It trusts the forge's record of the merged head: GitHub's
// and GitLab's freeze at the merge; for a HeadRecorder, its RecordedHead
// must agree.
func MergedHead(ctx context.Context, p Provider, head, base, commit string) (bool, error) {
	if commit == "" {
		return false, nil
	}
	prs, err := p.List(ctx, head, base)
	if err != nil {
		return false, err
	}
	for _, pr := range prs {
		if pr.State != StateMerged || !strings.EqualFold(pr.HeadCommit, commit) {
			continue
		}
		rec, ok := p.(HeadRecorder)
		if !ok {
			return true, nil
		}
		recorded, err := rec.RecordedHead(ctx, pr.Number)
		if err != nil {
			return false, err
		}
		if strings.EqualFold(recorded, commit) {
			return true, nil
		}
	}
	return false, nil
}

// Plan returns what Ensure would do for req, calling only p.List.
func Plan(ctx context.Context, p Provider, req Request) (*Result, error) {
	req, err := req.normalize()
	if err != nil {
		return nil, err
	}
	prs, err := p.List(ctx, req.Head, req.Base)
	if err != nil {
		return nil, err
	}
	return decide(prs, req).result(p.Name()), nil
}

// decision is what Ensure should do, given the pull requests listed.
type decision struct {
	outcome Outcome
	// open is the open pull request to keep current; nil for Opened and
	// Skipped.
	open *PR
	// last is the closed or merged pull request that makes Skipped.
	last *PR
	// body is the body the pull request should have.
	body string
	// labels are the request's labels the pull request lacks.
	labels []string
	// twins are the open pull requests but open, in the order of their
	// numbers, which Ensure closes first (closeTwins).
	twins []int
}

func (d decision) result(provider string) *Result {
	r := &Result{Outcome: d.outcome, Provider: provider, Labels: d.labels, Duplicates: d.twins}
	pr := d.open
	if d.outcome == Skipped {
		pr = d.last
	}
	if pr != nil {
		r.Number, r.URL = pr.Number, pr.URL
	}
	return r
}

func decide(prs []PR, req Request) decision {
	d := decision{body: req.Body()}
	// Most recent first by number, whatever order the forge listed them in:
	// numbers grow with creation on every forge.
	sorted := slices.Clone(prs)
	slices.SortStableFunc(sorted, func(a, b PR) int { return cmp.Compare(b.Number, a.Number) })
	for i := range sorted {
		pr := &sorted[i]
		if pr.State == StateOpen {
			// The oldest, when twins are open: the one Ensure keeps
			// (closeTwins); the others are listed newest first.
			if d.open != nil {
				d.twins = append(d.twins, d.open.Number)
			}
			d.open = pr
		}
		// One closed as stale was not turned down: the last one that
		// counts is the most recent merged, or closed otherwise.
		if pr.State != StateOpen && d.last == nil && !ClosedAsStale(pr.Body) {
			d.last = pr
		}
	}
	slices.Sort(d.twins)
	switch {
	case d.open != nil:
		d.outcome = Unchanged
		if !sameText(d.open.Title, req.Title) || !sameText(d.open.Body, d.body) {
			d.outcome = Updated
			// Labels go along with a write only, and only those added
			// to the config since the body was written: a label someone
			// removed on purpose stays removed. A body from before the
			// labels were recorded is taken to have had them all.
			recorded, ok := LabelsOf(d.open.Body)
			if !ok {
				recorded = req.Labels
			}
			d.labels = missing(missing(req.Labels, recorded), d.open.Labels)
		}
	case d.last != nil && ContentKeyOf(d.last.Body) == ContentKey(req.Changes):
		d.outcome = Skipped
	default:
		d.outcome = Opened
		d.labels = req.Labels
	}
	return d
}

// sameText reports whether a text the forge returned says the same as the
// one imagebump would send. Forges may turn line endings into CRLF and drop
// trailing white space, which is no difference.
func sameText(got, want string) bool {
	norm := func(s string) string {
		return strings.TrimSpace(strings.ReplaceAll(s, "\r\n", "\n"))
	}
	return norm(got) == norm(want)
}

// missing returns the labels of want that are not in have, ignoring case.
func missing(want, have []string) []string {
	var out []string
	for _, w := range want {
		if !slices.ContainsFunc(have, func(h string) bool { return strings.EqualFold(h, w) }) {
			out = append(out, w)
		}
	}
	return out
}

// normalize checks req and returns it with a title cut to MaxTitleLength,
// and labels trimmed, without empty ones or duplicates.
func (req Request) normalize() (Request, error) {
	switch {
	case checkBranches(req.Head, req.Base) != nil:
		return req, checkBranches(req.Head, req.Base)
	case strings.TrimSpace(req.Title) == "":
		return req, errors.New("pull request: the title is empty")
	case len(req.Changes) == 0:
		return req, errors.New("pull request: no changes to propose")
	}
	req.Title = strings.TrimSpace(strings.NewReplacer("\r\n", " ", "\r", " ", "\n", " ").Replace(strings.ToValidUTF8(req.Title, "\uFFFD")))
	if len(req.Title) > MaxTitleLength {
		cut := MaxTitleLength - len("…")
		for cut > 0 && !utf8.RuneStart(req.Title[cut]) {
			cut--
		}
		req.Title = strings.TrimSpace(req.Title[:cut]) + "…"
	}
	req.Labels = cleanLabels(req.Labels)
	return req, nil
}

// cleanLabels returns labels trimmed, without empty ones or duplicates
// (compared without regard to case).
func cleanLabels(labels []string) []string {
	var out []string
	for _, l := range labels {
		l = strings.TrimSpace(l)
		if l != "" && len(missing([]string{l}, out)) == 1 {
			out = append(out, l)
		}
	}
	return out
}

// Body returns the body Ensure writes for req: BodyWithNotes of its
// changes and notes, and a hidden record of its labels, from which an
// update tells the labels added to the config since (LabelsOf).
func (req Request) Body() string {
	return body(req.Changes, req.Notes, cleanLabels(req.Labels))
}

// checkBranches checks the head and base branches of a pull request.
func checkBranches(head, base string) error {
	switch {
	case head == "" || base == "":
		return errors.New("pull request: head and base branches are required")
	case head == base:
		return fmt.Errorf("pull request: head and base are both %q; a pull request needs two branches", head)
	}
	return nil
}
