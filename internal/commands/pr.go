package commands

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/imagebump/imagebump/config"
	"github.com/imagebump/imagebump/cycle"
	"github.com/imagebump/imagebump/internal/secretfile"
	"github.com/imagebump/imagebump/pullrequest"
	"github.com/imagebump/imagebump/pullrequest/gitea"
	"github.com/imagebump/imagebump/pullrequest/github"
	"github.com/imagebump/imagebump/pullrequest/gitlab"
)

// wantsPullRequest reports whether a target opens pull requests: it has
// push.pullRequest and pushes to its own branch.
func wantsPullRequest(t config.Target) bool {
	return t.Push != nil && t.Push.PullRequest != nil && t.Push.Branch != ""
}

// newPRProvider builds the forge adapter a target's push.pullRequest names.
// The owner and repository come from git.url, the API URL from apiURL or the
// provider's default for that host, the token from pullRequest.tokenFile or
// else git.auth.tokenFile.
func newPRProvider(t config.Target) (pullrequest.Provider, error) {
	pr := t.Push.PullRequest
	_, ownerPath, err := pullrequest.ParseRepoURL(t.Git.URL)
	if err != nil {
		return nil, fmt.Errorf("pull requests for target %s: %w", t.Name, err)
	}
	api := pr.APIURL
	if api == "" {
		if api, err = pullrequest.DefaultAPIURL(pr.Provider, t.Git.URL); err != nil {
			return nil, fmt.Errorf("pull requests for target %s: %w", t.Name, err)
		}
	}
	tokenFile := pr.TokenFile
	if tokenFile == "" && t.Git.Auth != nil {
		tokenFile = t.Git.Auth.TokenFile
	}
	if tokenFile == "" {
		return nil, fmt.Errorf("pull requests for target %s: no token: set push.pullRequest.tokenFile (or git.auth.tokenFile)", t.Name)
	}
	token, err := secretfile.Read(tokenFile)
	switch {
	case errors.Is(err, secretfile.ErrEmpty):
		return nil, fmt.Errorf("pull requests for target %s: the token file %s is empty", t.Name, tokenFile)
	case err != nil:
		// The path is safe to show (the error names it); the content never is.
		return nil, fmt.Errorf("pull requests for target %s: reading the token: %w", t.Name, err)
	}
	switch pr.Provider {
	case "github":
		owner, repo, err := pullrequest.OwnerRepo(ownerPath)
		if err != nil {
			return nil, err
		}
		return github.New(github.Options{APIURL: api, Token: token, Owner: owner, Repo: repo})
	case "gitlab":
		return gitlab.New(gitlab.Options{APIURL: api, Token: token, Project: ownerPath})
	case "gitea":
		owner, repo, err := pullrequest.OwnerRepo(ownerPath)
		if err != nil {
			return nil, err
		}
		return gitea.New(gitea.Options{APIURL: api, Token: token, Owner: owner, Repo: repo})
	}
	return nil, fmt.Errorf("pull requests for target %s: unknown provider %q: want github, gitlab or gitea", t.Name, pr.Provider)
}

// prRequest describes the pull request a report's changes call for.
func prRequest(t config.Target, base string, rep *cycle.Report, cfgFile, repository string) (pullrequest.Request, error) {
	pr := t.Push.PullRequest
	tmpl := pr.Title
	if tmpl == "" {
		tmpl = cycle.DefaultTitleTemplate
	}
	title, err := cycle.RenderTemplate("push.pullRequest.title in "+cfgFile, tmpl, cycle.NewMessageData(rep, repository, t.Name))
	if err != nil {
		return pullrequest.Request{}, err
	}
	req := pullrequest.Request{Head: t.Push.Branch, Base: base, Title: strings.TrimSpace(title), Labels: pr.Labels}
	for _, c := range rep.Changes {
		req.Changes = append(req.Changes, pullrequest.Change{File: c.File, Line: c.Line, Policy: c.Policy, Old: c.Old, New: c.New})
	}
	return req, nil
}

// staleReason is the comment on a pull request imagebump closes because its
// branch no longer proposes anything.
const staleReason = "imagebump closes this pull request: the base branch already has these bumps, or their tags are gone, so its branch proposes nothing any more. A later bump opens a new pull request."

// pullRequestFor opens or updates (write) or previews (plan) the target's
// pull request for rep. When rep has no changes and every policy resolved,
// the branch proposes nothing: an open pull request is closed (or, for
// plan, would be). When a policy failed, nothing is decided: an empty
// change list may only mean its registry was down.
func pullRequestFor(ctx context.Context, t config.Target, base string, rep *cycle.Report, cfgFile, repository string, write bool) (*pullrequest.Result, error) {
	if len(rep.Changes) == 0 && rep.Failed() {
		return nil, nil
	}
	p, err := newPRProvider(t)
	if err != nil {
		return nil, err
	}
	if len(rep.Changes) == 0 {
		var res *pullrequest.Result
		if write {
			res, err = pullrequest.Close(ctx, p, t.Push.Branch, base, staleReason)
		} else {
			res, err = pullrequest.PlanClose(ctx, p, t.Push.Branch, base)
		}
		if err != nil || res.Outcome == pullrequest.None {
			return nil, err
		}
		return res, nil
	}
	req, err := prRequest(t, base, rep, cfgFile, repository)
	if err != nil {
		return nil, err
	}
	if write {
		return pullrequest.Ensure(ctx, p, req)
	}
	return pullrequest.Plan(ctx, p, req)
}
