// Package gitea opens and updates pull requests on Gitea and Forgejo, as a
// pullrequest.Provider built on Gitea's Go SDK.
package gitea

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	sdk "code.gitea.io/sdk/gitea"

	"github.com/imagebump/imagebump/internal/redact"
	"github.com/imagebump/imagebump/pullrequest"
)

// DefaultTimeout bounds each API call when Options.HTTPClient is nil.
const DefaultTimeout = 30 * time.Second

// LabelColor is the color of the labels AddLabels creates when the
// repository lacks them (GitHub and GitLab create missing labels too).
const LabelColor = "#ededed"

// Listing limits: Gitea's list endpoint cannot filter by head branch, so
// List pages through the repository's pull requests, at most maxPages of
// pageSize (Gitea's default MAX_RESPONSE_ITEMS is 50) for open ones and as
// many for closed ones.
const (
	pageSize = 50
	maxPages = 20
)

// What a token needs, as Gitea and Forgejo name the scopes, per kind of
// call.
const (
	needsRead   = "the read:repository scope"
	needsWrite  = "the write:repository scope, and write access to the repository"
	needsLabels = "the write:issue scope (read:issue to look labels up)"
	// needsComment: comments on pull requests go through the issues API.
	needsComment = "the write:issue scope"
)

// Options configure a Provider.
type Options struct {
	// APIURL is the Gitea or Forgejo base URL, such as
	// https://codeberg.org; the SDK adds /api/v1. Required.
	APIURL string
	// Token is an access token. Required.
	Token string
	// Owner and Repo name the repository.
	Owner, Repo string
	// HTTPClient sends the requests. Nil means a client with
	// DefaultTimeout. Its Transport must not add credentials of its own.
	HTTPClient *http.Client
}

// Provider is the Gitea and Forgejo pullrequest.Provider for one
// repository.
type Provider struct {
	api         string
	token       string
	owner, repo string
	http        *http.Client
}

var (
	_ pullrequest.Provider     = (*Provider)(nil)
	_ pullrequest.HeadRecorder = (*Provider)(nil)
)

// New returns a Provider for the repository opts names. It makes no
// request. The SDK's server version checks are turned off: Forgejo reports
// versions the SDK does not understand, and a Gitea built from source
// reports "development".
func New(opts Options) (*Provider, error) {
	switch {
	case opts.Owner == "" || opts.Repo == "":
		return nil, errors.New("gitea: owner and repository are required")
	case opts.Token == "":
		return nil, fmt.Errorf("gitea: a token is required for %s/%s", opts.Owner, opts.Repo)
	case opts.APIURL == "":
		return nil, fmt.Errorf("gitea: the server URL is required for %s/%s", opts.Owner, opts.Repo)
	}
	u, err := url.Parse(opts.APIURL)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return nil, fmt.Errorf("gitea: API URL %s is not an http:// or https:// URL", redact.String(opts.APIURL))
	}
	if u.User != nil {
		return nil, fmt.Errorf("gitea: API URL %s holds credentials; pass the token in Token", redact.String(opts.APIURL))
	}
	// The SDK adds /api/v1 itself; accept the API URL too.
	u.Path = strings.TrimSuffix(strings.TrimSuffix(u.Path, "/"), "/api/v1")
	hc := opts.HTTPClient
	if hc == nil {
		hc = &http.Client{Timeout: DefaultTimeout}
	}
	return &Provider{api: u.String(), token: opts.Token, owner: opts.Owner, repo: opts.Repo, http: hc}, nil
}

// client returns an SDK client bound to ctx. The SDK keeps the context in
// the client, so each call gets its own; making one sends no request.
func (p *Provider) client(ctx context.Context) (*sdk.Client, error) {
	c, err := sdk.NewClient(p.api,
		sdk.SetHTTPClient(p.http),
		sdk.SetToken(p.token),
		sdk.SetContext(ctx),
		sdk.SetUserAgent("imagebump"),
		sdk.SetGiteaVersion(""),
	)
	if err != nil {
		return nil, fmt.Errorf("gitea: making the API client: %w", err)
	}
	return c, nil
}

// Name returns "gitea".
func (p *Provider) Name() string { return "gitea" }

// List returns the pull requests from head into base within the repository
// (not from forks): every open one and the closed or merged ones up to the
// most recent that imagebump did not close as stale, newest first.
func (p *Provider) List(ctx context.Context, head, base string) ([]pullrequest.PR, error) {
	c, err := p.client(ctx)
	if err != nil {
		return nil, err
	}
	open, err := p.list(c, sdk.StateOpen, head, base, false)
	if err != nil {
		return nil, err
	}
	closed, err := p.list(c, sdk.StateClosed, head, base, true)
	if err != nil {
		return nil, err
	}
	return append(open, closed...), nil
}

// list pages through the pull requests in state, newest first, and keeps
// those from head into base; with firstOnly it stops at the first that
// imagebump did not close as stale.
func (p *Provider) list(c *sdk.Client, state sdk.StateType, head, base string, firstOnly bool) ([]pullrequest.PR, error) {
	var out []pullrequest.PR
	for page := 1; page <= maxPages; page++ {
		// No sort: Gitea's default is newest first.
		prs, resp, err := c.ListRepoPullRequests(p.owner, p.repo, sdk.ListPullRequestsOptions{
			ListOptions: sdk.ListOptions{Page: page, PageSize: pageSize},
			State:       state,
		})
		if err != nil {
			return nil, p.fail("listing pull requests", needsRead, resp, err)
		}
		for _, pr := range prs {
			if !ours(pr, head, base) {
				continue
			}
			out = append(out, p.convert(pr))
			if firstOnly && !pullrequest.ClosedAsStale(pr.Body) {
				// One closed as stale (proposing nothing, or an open
				// twin) was not turned down: the one that counts is
				// further back.
				return out, nil
			}
		}
		if len(prs) < pageSize {
			break
		}
	}
	return out, nil
}

// ours reports whether pr goes from head into base within one repository.
func ours(pr *sdk.PullRequest, head, base string) bool {
	if pr.Head == nil || pr.Base == nil || headBranch(pr.Head) != head || pr.Base.Ref != base {
		return false
	}
	return pr.Head.RepoID == 0 || pr.Base.RepoID == 0 || pr.Head.RepoID == pr.Base.RepoID
}

// headBranch is the branch a pull request comes from. Once that branch
// is deleted, Gitea gives the pull request's own ref (refs/pull/N/head)
// as its ref, and the branch's name in its label alone: a closed pull
// request was missed after its branch was deleted, so its bumps were
// proposed again.
func headBranch(h *sdk.PRBranchInfo) string {
	if strings.HasPrefix(h.Ref, "refs/pull/") && h.Name != "" {
		return h.Name
	}
	return h.Ref
}

// Create opens a pull request from head into base.
func (p *Provider) Create(ctx context.Context, head, base, title, body string) (*pullrequest.PR, error) {
	c, err := p.client(ctx)
	if err != nil {
		return nil, err
	}
	pr, resp, err := c.CreatePullRequest(p.owner, p.repo, sdk.CreatePullRequestOption{
		Head:  head,
		Base:  base,
		Title: title,
		Body:  body,
	})
	if err != nil {
		return nil, p.fail("creating a pull request", needsWrite, resp, err)
	}
	out := p.convert(pr)
	return &out, nil
}

// Update sets the title and body of pull request number.
func (p *Provider) Update(ctx context.Context, number int, title, body string) (*pullrequest.PR, error) {
	c, err := p.client(ctx)
	if err != nil {
		return nil, err
	}
	pr, resp, err := c.EditPullRequest(p.owner, p.repo, int64(number), sdk.EditPullRequestOption{
		Title: title,
		Body:  &body,
	})
	if err != nil {
		return nil, p.fail(fmt.Sprintf("updating pull request #%d", number), needsWrite, resp, err)
	}
	out := p.convert(pr)
	return &out, nil
}

// AddLabels adds labels to pull request number. Gitea adds labels by ID, so
// the names are looked up among the repository's labels, then the owner
// organization's; labels found in neither are created in the repository
// with LabelColor.
func (p *Provider) AddLabels(ctx context.Context, number int, labels []string) error {
	c, err := p.client(ctx)
	if err != nil {
		return err
	}
	op := fmt.Sprintf("adding labels to pull request #%d", number)
	ids := map[string]int64{} // lower-case name to ID
	known := func(ls []*sdk.Label) {
		for _, l := range ls {
			if _, ok := ids[strings.ToLower(l.Name)]; !ok {
				ids[strings.ToLower(l.Name)] = l.ID
			}
		}
	}
	lacking := func() []string {
		var out []string
		for _, l := range labels {
			if _, ok := ids[strings.ToLower(l)]; !ok {
				out = append(out, l)
			}
		}
		return out
	}
	for page := 1; page <= maxPages && len(lacking()) > 0; page++ {
		ls, resp, err := c.ListRepoLabels(p.owner, p.repo, sdk.ListLabelsOptions{ListOptions: sdk.ListOptions{Page: page, PageSize: pageSize}})
		if err != nil {
			return p.fail(op, needsLabels, resp, err)
		}
		known(ls)
		if len(ls) < pageSize {
			break
		}
	}
	for page := 1; page <= maxPages && len(lacking()) > 0; page++ {
		ls, resp, err := c.ListOrgLabels(p.owner, sdk.ListOrgLabelsOptions{ListOptions: sdk.ListOptions{Page: page, PageSize: pageSize}})
		if resp != nil && resp.StatusCode == http.StatusNotFound {
			break // the owner is a user, not an organization
		}
		if err != nil {
			return p.fail(op, needsLabels, resp, err)
		}
		known(ls)
		if len(ls) < pageSize {
			break
		}
	}
	for _, name := range lacking() {
		l, resp, err := c.CreateLabel(p.owner, p.repo, sdk.CreateLabelOption{Name: name, Color: LabelColor})
		if err != nil {
			return p.fail(fmt.Sprintf("creating label %q", name), needsLabels, resp, err)
		}
		ids[strings.ToLower(name)] = l.ID
	}
	opt := sdk.IssueLabelsOption{}
	for _, l := range labels {
		opt.Labels = append(opt.Labels, ids[strings.ToLower(l)])
	}
	if _, resp, err := c.AddIssueLabels(p.owner, p.repo, int64(number), opt); err != nil {
		return p.fail(op, needsLabels, resp, err)
	}
	return nil
}

// Comment posts body as a comment on pull request number, through the
// issues API as Gitea requires.
func (p *Provider) Comment(ctx context.Context, number int, body string) error {
	c, err := p.client(ctx)
	if err != nil {
		return err
	}
	if _, resp, err := c.CreateIssueComment(p.owner, p.repo, int64(number), sdk.CreateIssueCommentOption{Body: body}); err != nil {
		return p.fail(fmt.Sprintf("commenting on pull request #%d", number), needsComment, resp, err)
	}
	return nil
}

// Close closes pull request number without merging it.
func (p *Provider) Close(ctx context.Context, number int) error {
	c, err := p.client(ctx)
	if err != nil {
		return err
	}
	closed := sdk.StateClosed
	if _, resp, err := c.EditPullRequest(p.owner, p.repo, int64(number), sdk.EditPullRequestOption{State: &closed}); err != nil {
		return p.fail(fmt.Sprintf("closing pull request #%d", number), needsWrite, resp, err)
	}
	return nil
}

// RecordedHead implements pullrequest.HeadRecorder: the commit
// refs/pull/NUMBER/head points at, which Gitea and Forgejo move with the
// branch while the pull request is open and leave at the merge, where the
// head.sha of their API is the branch's current tip while it exists.
func (p *Provider) RecordedHead(ctx context.Context, number int) (string, error) {
	c, err := p.client(ctx)
	if err != nil {
		return "", err
	}
	ref, resp, err := c.GetRepoRef(p.owner, p.repo, fmt.Sprintf("refs/pull/%d/head", number))
	if err != nil {
		return "", p.fail(fmt.Sprintf("reading the recorded head of pull request #%d", number), needsRead, resp, err)
	}
	if ref == nil || ref.Object == nil {
		return "", nil
	}
	return ref.Object.SHA, nil
}

// convert reads the forge's pull request; its address, which is shown, is
// cleaned of the token as the forge's errors are.
func (p *Provider) convert(pr *sdk.PullRequest) pullrequest.PR {
	out := pullrequest.PR{
		Number: int(pr.Index),
		URL:    pullrequest.Scrub(pr.HTMLURL, p.token),
		Title:  pr.Title,
		Body:   pr.Body,
		State:  pullrequest.StateOpen,
	}
	if pr.Head != nil {
		out.Head, out.HeadCommit = headBranch(pr.Head), pr.Head.Sha
	}
	if pr.Base != nil {
		out.Base = pr.Base.Ref
	}
	switch {
	case pr.HasMerged:
		out.State = pullrequest.StateMerged
	case pr.State == sdk.StateClosed:
		out.State = pullrequest.StateClosed
	}
	for _, l := range pr.Labels {
		out.Labels = append(out.Labels, l.Name)
	}
	return out
}

// fail turns an SDK error into a *pullrequest.Error. The SDK's error text
// is the server's message (or, for a body that is not JSON, the request
// path and the body), never a header.
func (p *Provider) fail(op, needs string, resp *sdk.Response, err error) error {
	e := &pullrequest.Error{
		Provider:   "gitea",
		Repository: p.owner + "/" + p.repo,
		Op:         op,
		Needs:      needs,
		API:        p.api,
		Err:        pullrequest.ScrubError(err, p.token),
	}
	if resp != nil && resp.Response != nil {
		e.Status = resp.StatusCode
		msg := pullrequest.Scrub(err.Error(), p.token)
		if first, _, dump := strings.Cut(msg, "\nRequest: '"); dump {
			// The SDK's dump of a request whose answer was no JSON:
			// the path, the method and the whole body (an HTML page,
			// most often). Its first line says enough.
			msg = first + " (the answer was not the API's JSON)"
		}
		e.Message = msg
	}
	switch e.Status {
	case http.StatusConflict:
		// "pull request already exists for these targets"
		e.Exists = true
	case http.StatusTooManyRequests:
		e.RateLimited = true
	}
	return e
}
