// Package github opens and updates pull requests on GitHub and GitHub
// Enterprise Server, as a pullrequest.Provider built on google/go-github.
package github

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	gh "github.com/google/go-github/v93/github"

	"github.com/imagebump/imagebump/internal/redact"
	"github.com/imagebump/imagebump/pullrequest"
)

// DefaultAPIURL is GitHub's public API.
const DefaultAPIURL = "https://api.github.com/"

// DefaultTimeout bounds each API call when Options.HTTPClient is nil.
const DefaultTimeout = 30 * time.Second

// maxPages bounds how many pages of 100 pull requests List reads.
const maxPages = 3

// What a token needs, as GitHub names it, per kind of call.
const (
	needsRead   = "pull_requests: read (fine-grained) or the repo scope (classic)"
	needsWrite  = "pull_requests: write (fine-grained) or the repo scope (classic)"
	needsLabels = "issues: write or pull_requests: write (fine-grained) or the repo scope (classic)"
	// needsComment is what commenting on a pull request needs: it goes
	// through the issues API, like labels.
	needsComment = needsLabels
	// needsActions is what GitHub's refusal of a workflow's pull request
	// needs: a setting, not a scope.
	needsActions = `the repository's setting Settings > Actions > General > Workflow permissions > "Allow GitHub Actions to create and approve pull requests" (or the organization's), as well as pull-requests: write`
)

// Options configure a Provider.
type Options struct {
	// APIURL is the API base URL. Empty means DefaultAPIURL; GitHub
	// Enterprise Server is https://HOST/api/v3/.
	APIURL string
	// Token is a personal access token (fine-grained or classic), a GitHub
	// App installation token, or GITHUB_TOKEN. Required.
	Token string
	// Owner and Repo name the repository (acme and fleet for acme/fleet).
	Owner, Repo string
	// HTTPClient sends the requests. Nil means a client with
	// DefaultTimeout. Its Transport must not add credentials of its own.
	HTTPClient *http.Client
}

// Provider is the GitHub pullrequest.Provider for one repository.
type Provider struct {
	client      *gh.Client
	api         string // named in a 404's error; "" for GitHub's own
	owner, repo string
	token       string
}

var _ pullrequest.Provider = (*Provider)(nil)

// New returns a Provider for the repository opts names.
func New(opts Options) (*Provider, error) {
	switch {
	case opts.Owner == "" || opts.Repo == "":
		return nil, errors.New("github: owner and repository are required")
	case opts.Token == "":
		return nil, fmt.Errorf("github: a token is required for %s/%s", opts.Owner, opts.Repo)
	}
	api := opts.APIURL
	if api == "" {
		api = DefaultAPIURL
	}
	u, err := url.Parse(api)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return nil, fmt.Errorf("github: API URL %s is not an http:// or https:// URL", redact.String(api))
	}
	if u.User != nil {
		return nil, fmt.Errorf("github: API URL %s holds credentials; pass the token in Token", redact.String(api))
	}
	if !strings.HasSuffix(u.Path, "/") {
		u.Path += "/"
	}
	base := u.String()
	hc := opts.HTTPClient
	if hc == nil {
		hc = &http.Client{Timeout: DefaultTimeout}
	}
	c, err := gh.NewClient(
		gh.WithHTTPClient(hc),
		gh.WithURLs(&base, &base),
		gh.WithAuthToken(opts.Token),
		gh.WithUserAgent("imagebump"),
	)
	if err != nil {
		return nil, fmt.Errorf("github: making the API client: %w", err)
	}
	// A 404 names the API only when it is not GitHub's own, which answers
	// 404 for a private repository the token cannot see.
	named := base
	if base == DefaultAPIURL {
		named = ""
	}
	return &Provider{client: c, api: named, owner: opts.Owner, repo: opts.Repo, token: opts.Token}, nil
}

// Name returns "github".
func (p *Provider) Name() string { return "github" }

// List returns the pull requests from head (a branch of this repository)
// into base, newest first, reading at most 300.
func (p *Provider) List(ctx context.Context, head, base string) ([]pullrequest.PR, error) {
	opts := &gh.PullRequestListOptions{
		State:       "all",
		Head:        p.owner + ":" + head,
		Base:        base,
		Sort:        "created",
		Direction:   "desc",
		ListOptions: gh.ListOptions{PerPage: 100},
	}
	var out []pullrequest.PR
	for range maxPages {
		prs, resp, err := p.client.PullRequests.List(ctx, p.owner, p.repo, opts)
		if err != nil {
			return nil, p.fail("listing pull requests", needsRead, resp, err)
		}
		for _, pr := range prs {
			// The head filter already names this owner; a fork of the same
			// owner's account cannot exist, so every result is ours.
			if pr.GetHead().GetRef() == head && pr.GetBase().GetRef() == base {
				out = append(out, p.convert(pr))
			}
		}
		if resp.NextPage == 0 {
			break
		}
		opts.Page = resp.NextPage
	}
	return out, nil
}

// Create opens a pull request from head into base.
func (p *Provider) Create(ctx context.Context, head, base, title, body string) (*pullrequest.PR, error) {
	pr, resp, err := p.client.PullRequests.Create(ctx, p.owner, p.repo, gh.CreatePullRequest{
		Title: &title,
		Head:  head,
		Base:  base,
		Body:  &body,
	})
	if err != nil {
		return nil, p.fail("creating a pull request", needsWrite, resp, err)
	}
	c := p.convert(pr)
	return &c, nil
}

// Update sets the title and body of pull request number.
func (p *Provider) Update(ctx context.Context, number int, title, body string) (*pullrequest.PR, error) {
	pr, resp, err := p.client.PullRequests.Edit(ctx, p.owner, p.repo, number, &gh.PullRequest{Title: &title, Body: &body})
	if err != nil {
		return nil, p.fail(fmt.Sprintf("updating pull request #%d", number), needsWrite, resp, err)
	}
	c := p.convert(pr)
	return &c, nil
}

// AddLabels adds labels to pull request number through the issues API, as
// GitHub requires. GitHub creates labels the repository lacks.
func (p *Provider) AddLabels(ctx context.Context, number int, labels []string) error {
	_, resp, err := p.client.Issues.AddLabelsToIssue(ctx, p.owner, p.repo, number, labels)
	if err != nil {
		return p.fail(fmt.Sprintf("adding labels to pull request #%d", number), needsLabels, resp, err)
	}
	return nil
}

// Comment posts body as a comment on pull request number, through the
// issues API (POST /repos/{owner}/{repo}/issues/{number}/comments).
func (p *Provider) Comment(ctx context.Context, number int, body string) error {
	_, resp, err := p.client.Issues.CreateComment(ctx, p.owner, p.repo, number, gh.IssueCommentRequest{Body: body})
	if err != nil {
		return p.fail(fmt.Sprintf("commenting on pull request #%d", number), needsComment, resp, err)
	}
	return nil
}

// Close closes pull request number without merging it (PATCH
// /repos/{owner}/{repo}/pulls/{number} with state closed).
func (p *Provider) Close(ctx context.Context, number int) error {
	_, resp, err := p.client.PullRequests.Edit(ctx, p.owner, p.repo, number, &gh.PullRequest{State: gh.Ptr("closed")})
	if err != nil {
		return p.fail(fmt.Sprintf("closing pull request #%d", number), needsWrite, resp, err)
	}
	return nil
}

// convert reads the forge's pull request; its address, which is shown, is
// cleaned of the token as the forge's errors are.
func (p *Provider) convert(pr *gh.PullRequest) pullrequest.PR {
	out := pullrequest.PR{
		Number: pr.GetNumber(),
		URL:    pullrequest.Scrub(pr.GetHTMLURL(), p.token),
		Title:  pr.GetTitle(),
		Body:   pr.GetBody(),
		Head:   pr.GetHead().GetRef(),
		Base:   pr.GetBase().GetRef(),
		State:  pullrequest.StateOpen,
		// Frozen at the merge for a merged one.
		HeadCommit: pr.GetHead().GetSHA(),
	}
	switch {
	case pr.MergedAt != nil || pr.GetMerged():
		out.State = pullrequest.StateMerged
	case pr.GetState() == "closed":
		out.State = pullrequest.StateClosed
	}
	for _, l := range pr.Labels {
		out.Labels = append(out.Labels, l.GetName())
	}
	return out
}

// fail turns a go-github error into a *pullrequest.Error.
func (p *Provider) fail(op, needs string, resp *gh.Response, err error) error {
	e := &pullrequest.Error{
		Provider:   "github",
		Repository: p.owner + "/" + p.repo,
		Op:         op,
		Needs:      needs,
		API:        p.api,
		Err:        pullrequest.ScrubError(err, p.token),
	}
	if resp != nil && resp.Response != nil {
		e.Status = resp.StatusCode
	}
	var rate *gh.RateLimitError
	var abuse *gh.AbuseRateLimitError
	var er *gh.ErrorResponse
	switch {
	case errors.As(err, &rate):
		e.RateLimited = true
		e.Message = rate.Message
	case errors.As(err, &abuse):
		e.RateLimited = true
		e.Message = abuse.Message
	case errors.As(err, &er):
		msgs := []string{er.Message}
		for _, d := range er.Errors {
			if d.Message != "" {
				msgs = append(msgs, d.Message)
			}
		}
		e.Message = strings.Join(msgs, ": ")
		// A workflow's GITHUB_TOKEN with pull-requests: write is still
		// refused while the repository's (or organization's) Actions
		// settings do not let workflows open pull requests.
		if e.Status == http.StatusForbidden && strings.Contains(strings.ToLower(e.Message), "not permitted to create") {
			e.Needs = needsActions
		}
		// GitHub answers a duplicate with 422 Validation Failed and, in
		// the errors list, "A pull request already exists for owner:branch."
		if e.Status == http.StatusUnprocessableEntity && strings.Contains(e.Message, "already exists") {
			e.Exists = true
		}
	}
	e.Message = pullrequest.Scrub(e.Message, p.token)
	return e
}
