package cycle

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/imagebump/imagebump/config"
	"github.com/imagebump/imagebump/gitwriter"
	"github.com/imagebump/imagebump/internal/redact"
	"github.com/imagebump/imagebump/pullrequest"
	"github.com/imagebump/imagebump/setters"
)

// PlanOptions configure Plan.
type PlanOptions struct {
	// Config holds the image policies; required.
	Config *config.Config
	// Target scopes the plan to its paths and policies, and is the
	// repository cloned without Repo and whose pull request is previewed.
	// Nil means every policy over the whole of Repo.
	Target *config.Target
	// Registry answers tag and digest queries; required.
	Registry Registry
	// Repo is a local checkout. Empty means a read-only clone of Target's
	// repository in a temporary folder, removed when Plan returns.
	Repo string
	// Write applies the edits to Repo (imagebump apply); no Git operation
	// and no pull request preview then.
	Write bool
	// OnEdit, when set, receives each changed file's bytes before and after.
	OnEdit func(file string, before, after []byte)
	// PullRequests builds the target's forge client for the preview. Nil
	// means NewPullRequestProvider.
	PullRequests func(config.Target) (pullrequest.Provider, error)
	// Gates checks signatures and minimum ages; nil means a new one.
	Gates *Gates
	// Now is the clock of holds and minimum ages; nil means time.Now.
	Now func() time.Time
	// Logger receives progress; nil discards.
	Logger *slog.Logger
	// IndexFile, when set with Repo, is where the marker index of Repo is
	// kept between runs (a setters.ByStat index: files whose stat data did
	// not change are served from it). It is a cache: a missing or
	// unusable one is rebuilt, and failing to save it is only logged.
	IndexFile string // other index files in its folder unused for indexMaxAge are removed
}

// PlanResult is what Plan found.
type PlanResult struct {
	// Report is the scan: policies, changes, problems.
	Report *Report
	// PullRequest is what a run would do to the target's pull request,
	// when the target has push.pullRequest.
	PullRequest *pullrequest.Result
	// PullRequestErr says why the pull request could not be checked, or
	// why a run would leave it (a push branch ending in a commit
	// imagebump did not make); it does not fail the plan.
	PullRequestErr error
	// Held is set when a run would leave push.branch and its pull request
	// as they are, as a policy failed and the branch holds its bumps (a
	// plan on its own clone only: plan --repo cannot see the branch).
	Held bool
}

// Refused reports whether a run would fail before the pull request, as
// the push branch ends in a commit imagebump did not make: PullRequestErr
// is then the *gitwriter.ForeignCommitError naming it.
func (r *PlanResult) Refused() bool {
	var fe *gitwriter.ForeignCommitError
	return errors.As(r.PullRequestErr, &fe)
}

// ErrNeedTarget is returned by Plan when Repo is empty and no target names
// a repository to clone.
var ErrNeedTarget = errors.New("plan without a local checkout needs a target to clone")

// indexMaxAge is how long an index file of plan or apply --repo is kept
// unused before a later run removes it.
const indexMaxAge = 30 * 24 * time.Hour

// Plan computes (or, with Write, makes) the edits a cycle would make, on a
// local checkout or a read-only clone, and previews the pull request
// read-only. Its error is for what stops the whole plan (a failed clone, a
// bad checkout, a cancelled ctx).
func Plan(ctx context.Context, opts PlanOptions) (*PlanResult, error) {
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	t := opts.Target
	root, base := opts.Repo, ""
	var clone *gitwriter.Repo
	if root == "" {
		if t == nil || t.Git == nil || opts.Write {
			return nil, ErrNeedTarget
		}
		var err error
		if clone, err = gitwriter.Open(ctx, GitOptions(*t, "", logger)); err != nil {
			return nil, err
		}
		defer clone.Close()
		root, base = clone.Dir(), clone.Branch()
	}
	var paths []string
	var selects func(string) bool
	if t != nil {
		if t.Git != nil {
			paths = t.Git.Paths
		}
		selects = t.Selects
	}
	var idx *setters.Index
	if opts.IndexFile != "" && opts.Repo != "" {
		var why string
		idx, why = setters.LoadIndex(opts.IndexFile, setters.ByStat, setters.Options{Paths: paths, MaxFileSize: opts.Config.FileSizeLimit()})
		if why != "" {
			logger.Debug("building the marker index", "reason", why, "file", opts.IndexFile)
		}
	}
	rep, err := Run(ctx, Options{
		Config:   opts.Config,
		Registry: perCycle(opts.Registry),
		Root:     root,
		Paths:    paths,
		Policies: selects,
		Write:    opts.Write,
		OnEdit:   opts.OnEdit,
		Gates:    opts.Gates,
		Now:      opts.Now,
		Logger:   logger,
		Index:    idx,
	})
	if err != nil {
		return nil, err
	}
	if idx != nil {
		if err := idx.Save(opts.IndexFile); err != nil {
			fix := "make the folder of the file named writable (or free space on its disk), or pass --no-cache"
			if fi, serr := os.Lstat(opts.IndexFile); serr == nil && fi.IsDir() {
				fix = "a folder stands where the index file goes: remove it, or pass --no-cache"
			}
			logger.Warn("could not save the marker index; the next run reads the files changed since the index was last saved, or every file if none was: "+fix, "file", opts.IndexFile, "error", err)
		}
		setters.PruneIndexes(filepath.Dir(opts.IndexFile), indexMaxAge)
	}
	res := &PlanResult{Report: rep}
	if opts.Write || t == nil || !WantsPullRequest(*t) || !rep.decidesPullRequest() {
		return res, nil
	}
	if base == "" {
		base = t.Git.Branch
	}
	if base == "" {
		res.PullRequestErr = errors.New("git.branch is not set and plan --repo does not know the remote's default branch")
		return res, nil
	}
	topts := TargetOptions{Config: opts.Config, Target: *t, PullRequests: opts.PullRequests}
	p, err := providerFor(topts)
	if err != nil {
		res.PullRequestErr = err
		return res, nil
	}
	var ready func() error
	if clone != nil {
		// A run acts on the push branch before its pull request; plan
		// --repo cannot see the branch, a plan on its own clone can.
		held, err := pushBranchVerdict(ctx, clone, p, *t, base, rep)
		if err != nil || held {
			res.Held, res.PullRequestErr = held, err
			return res, nil
		}
		// A run closes a pull request only over imagebump's own commit,
		// as it pushes only over one.
		ready = func() error { return checkPushBranch(ctx, clone, *t) }
	}
	res.PullRequest, res.PullRequestErr = pullRequestFor(ctx, p, topts, base, rep, redact.String(t.Git.URL), false, ready)
	return res, nil
}

// checkPushBranch is gitwriter's CheckPushBranch with t's commit author:
// a *gitwriter.ForeignCommitError when t's push branch ends in a commit
// imagebump did not make.
func checkPushBranch(ctx context.Context, repo *gitwriter.Repo, t config.Target) error {
	commit, _ := commitSettings(t)
	return repo.CheckPushBranch(ctx, t.Push.Branch, commit.AuthorEmail)
}

// pushBranchVerdict says, from the push branch as the remote has it, what
// a run would make of it before the pull request: held, when a policy
// failed and the branch holds its bumps (a run leaves it as it is); or
// refused, with the *gitwriter.ForeignCommitError a run fails with, when
// the branch ends in a commit imagebump did not make and that is no merged
// pull request's head (which a run replaces).
func pushBranchVerdict(ctx context.Context, repo *gitwriter.Repo, p pullrequest.Provider, t config.Target, base string, rep *Report) (held bool, err error) {
	if len(rep.Changes) == 0 {
		return false, nil
	}
	if rep.FailedPolicies() > 0 {
		keeps, err := branchKeepsFailed(ctx, repo, t.Push.Branch, rep)
		if err != nil || !keeps {
			return err == nil, err
		}
	}
	err = checkPushBranch(ctx, repo, t)
	var fe *gitwriter.ForeignCommitError
	if errors.As(err, &fe) {
		merged, merr := pullrequest.MergedHead(ctx, p, t.Push.Branch, base, fe.Hash)
		switch {
		case merr != nil:
			// A run fails on this too, not on the commit.
			return false, fmt.Errorf("checking whether the push branch's last commit is a merged pull request's head: %w", merr)
		case merged:
			return false, nil
		}
	}
	return false, err
}

// Validate finds the markers under root (the target's paths, when t is not
// nil) and checks each against the config, offline: no registry is asked
// and nothing is written. Unknown policies, malformed markers and unreadable
// files are in the result's Problems.
func Validate(ctx context.Context, cfg *config.Config, t *config.Target, root string, logger *slog.Logger) (*setters.Result, error) {
	var paths []string
	if t != nil && t.Git != nil {
		paths = t.Git.Paths
	}
	res, err := setters.Apply(ctx, setters.Options{Root: root, Paths: paths, MaxFileSize: cfg.FileSizeLimit(), Known: cfg.Has, NearMisses: true, Logger: logger})
	if err != nil {
		return nil, err
	}
	hintUnknown(cfg, res.Problems)
	return res, nil
}
