// Package gitlab opens and updates merge requests on GitLab (gitlab.com or
// self-managed), as a pullrequest.Provider built on GitLab's Go client.
package gitlab

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	gl "gitlab.com/gitlab-org/api/client-go"

	"github.com/imagebump/imagebump/internal/redact"
	"github.com/imagebump/imagebump/pullrequest"
)

// DefaultAPIURL is gitlab.com.
const DefaultAPIURL = "https://gitlab.com"

// DefaultTimeout bounds each API call when Options.HTTPClient is nil.
const DefaultTimeout = 30 * time.Second

// maxPages bounds how many pages of 100 merge requests List reads.
const maxPages = 3

// What a token needs, as GitLab names it, per kind of call.
const (
	needsRead  = "the read_api or api scope and at least the Reporter role in the project"
	needsWrite = "the api scope and at least the Developer role in the project"
)

// Options configure a Provider.
type Options struct {
	// APIURL is the GitLab server, such as https://gitlab.example.com; the
	// client adds /api/v4/. Empty means DefaultAPIURL.
	APIURL string
	// Token is a personal, project or group access token. Required.
	Token string
	// Project is the project's full path ("group/sub/project") or its
	// numeric ID.
	Project string
	// HTTPClient sends the requests. Nil means a client with
	// DefaultTimeout. Its Transport must not add credentials of its own.
	HTTPClient *http.Client
}

// Provider is the GitLab pullrequest.Provider for one project. Its pull
// requests are merge requests; their numbers are the project-scoped iid.
type Provider struct {
	client  *gl.Client
	project string
	token   string
}

var _ pullrequest.Provider = (*Provider)(nil)

// New returns a Provider for the project opts names.
func New(opts Options) (*Provider, error) {
	switch {
	case strings.Trim(opts.Project, "/") == "":
		return nil, errors.New("gitlab: the project is required")
	case opts.Token == "":
		return nil, fmt.Errorf("gitlab: a token is required for %s", opts.Project)
	}
	api := opts.APIURL
	if api == "" {
		api = DefaultAPIURL
	}
	u, err := url.Parse(api)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return nil, fmt.Errorf("gitlab: API URL %s is not an http:// or https:// URL", redact.String(api))
	}
	if u.User != nil {
		return nil, fmt.Errorf("gitlab: API URL %s holds credentials; pass the token in Token", redact.String(api))
	}
	hc := opts.HTTPClient
	if hc == nil {
		hc = &http.Client{Timeout: DefaultTimeout}
	}
	c, err := gl.NewClient(opts.Token,
		gl.WithBaseURL(u.String()),
		gl.WithHTTPClient(hc),
		gl.WithUserAgent("imagebump"),
		// The client warns about unusual base URLs on slog.Default; a
		// library stays silent.
		gl.WithURLWarningLogger(slog.New(slog.DiscardHandler)),
	)
	if err != nil {
		return nil, fmt.Errorf("gitlab: making the API client: %w", err)
	}
	return &Provider{client: c, project: strings.Trim(opts.Project, "/"), token: opts.Token}, nil
}

// Name returns "gitlab".
func (p *Provider) Name() string { return "gitlab" }

// List returns the merge requests from head into base within the project
// (not from forks), newest first, reading at most 300.
func (p *Provider) List(ctx context.Context, head, base string) ([]pullrequest.PR, error) {
	opts := &gl.ListProjectMergeRequestsOptions{
		ListOptions:  gl.ListOptions{PerPage: 100},
		State:        gl.Ptr("all"),
		SourceBranch: gl.Ptr(head),
		TargetBranch: gl.Ptr(base),
		OrderBy:      gl.Ptr("created_at"),
		Sort:         gl.Ptr("desc"),
	}
	var out []pullrequest.PR
	for range maxPages {
		mrs, resp, err := p.client.MergeRequests.ListProjectMergeRequests(p.project, opts, gl.WithContext(ctx))
		if err != nil {
			return nil, p.fail("listing merge requests", needsRead, resp, err)
		}
		for _, mr := range mrs {
			if mr.SourceBranch != head || mr.TargetBranch != base {
				continue
			}
			if mr.SourceProjectID != 0 && mr.TargetProjectID != 0 && mr.SourceProjectID != mr.TargetProjectID {
				continue // from a fork
			}
			out = append(out, p.convert(mr))
		}
		if resp.NextPage == 0 {
			break
		}
		opts.Page = resp.NextPage
	}
	return out, nil
}

// Create opens a merge request from head into base.
func (p *Provider) Create(ctx context.Context, head, base, title, body string) (*pullrequest.PR, error) {
	mr, resp, err := p.client.MergeRequests.CreateMergeRequest(p.project, &gl.CreateMergeRequestOptions{
		Title:        &title,
		Description:  &body,
		SourceBranch: &head,
		TargetBranch: &base,
	}, gl.WithContext(ctx))
	if err != nil {
		return nil, p.fail("creating a merge request", needsWrite, resp, err)
	}
	c := p.convert(&mr.BasicMergeRequest)
	return &c, nil
}

// Update sets the title and description of merge request number (iid).
func (p *Provider) Update(ctx context.Context, number int, title, body string) (*pullrequest.PR, error) {
	mr, resp, err := p.client.MergeRequests.UpdateMergeRequest(p.project, int64(number), &gl.UpdateMergeRequestOptions{
		Title:       &title,
		Description: &body,
	}, gl.WithContext(ctx))
	if err != nil {
		return nil, p.fail(fmt.Sprintf("updating merge request !%d", number), needsWrite, resp, err)
	}
	c := p.convert(&mr.BasicMergeRequest)
	return &c, nil
}

// AddLabels adds labels to merge request number (iid) with the update
// endpoint's add_labels, which keeps the labels it has. GitLab creates
// labels the project lacks.
func (p *Provider) AddLabels(ctx context.Context, number int, labels []string) error {
	add := gl.LabelOptions(labels)
	_, resp, err := p.client.MergeRequests.UpdateMergeRequest(p.project, int64(number), &gl.UpdateMergeRequestOptions{
		AddLabels: &add,
	}, gl.WithContext(ctx))
	if err != nil {
		return p.fail(fmt.Sprintf("adding labels to merge request !%d", number), needsWrite, resp, err)
	}
	return nil
}

// Comment posts body as a note on merge request number (iid).
func (p *Provider) Comment(ctx context.Context, number int, body string) error {
	_, resp, err := p.client.Notes.CreateMergeRequestNote(p.project, int64(number), &gl.CreateMergeRequestNoteOptions{
		Body: &body,
	}, gl.WithContext(ctx))
	if err != nil {
		return p.fail(fmt.Sprintf("commenting on merge request !%d", number), needsWrite, resp, err)
	}
	return nil
}

// Close closes merge request number (iid) without merging it, with the
// update endpoint's state_event close.
func (p *Provider) Close(ctx context.Context, number int) error {
	_, resp, err := p.client.MergeRequests.UpdateMergeRequest(p.project, int64(number), &gl.UpdateMergeRequestOptions{
		StateEvent: gl.Ptr("close"),
	}, gl.WithContext(ctx))
	if err != nil {
		return p.fail(fmt.Sprintf("closing merge request !%d", number), needsWrite, resp, err)
	}
	return nil
}

// convert reads the forge's pull request; its address, which is shown, is
// cleaned of the token as the forge's errors are.
func (p *Provider) convert(mr *gl.BasicMergeRequest) pullrequest.PR {
	out := pullrequest.PR{
		Number: int(mr.IID),
		URL:    pullrequest.Scrub(mr.WebURL, p.token),
		Title:  mr.Title,
		Body:   mr.Description,
		Head:   mr.SourceBranch,
		Base:   mr.TargetBranch,
		Labels: []string(mr.Labels),
		// The diff's head: for a merged one, the commit merged.
		HeadCommit: mr.SHA,
	}
	switch mr.State {
	case "merged":
		out.State = pullrequest.StateMerged
	case "closed":
		out.State = pullrequest.StateClosed
	default: // opened, and locked: a merge in progress
		out.State = pullrequest.StateOpen
	}
	return out
}

// fail turns a GitLab client error into a *pullrequest.Error.
func (p *Provider) fail(op, needs string, resp *gl.Response, err error) error {
	e := &pullrequest.Error{
		Provider:   "gitlab",
		Repository: p.project,
		Op:         op,
		Needs:      needs,
		API:        p.client.BaseURL().String(),
		Err:        pullrequest.ScrubError(err, p.token),
	}
	if resp != nil && resp.Response != nil {
		e.Status = resp.StatusCode
	}
	var er *gl.ErrorResponse
	if errors.As(err, &er) {
		e.Message = er.Message
		if e.Status == 0 && er.Response != nil {
			e.Status = er.Response.StatusCode
		}
	}
	switch e.Status {
	case http.StatusConflict:
		// "Another open merge request already exists for this source
		// branch: !1"
		e.Exists = true
	case http.StatusTooManyRequests:
		e.RateLimited = true
	}
	e.Message = pullrequest.Scrub(e.Message, p.token)
	return e
}
