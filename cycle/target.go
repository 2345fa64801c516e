package cycle

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/imagebump/imagebump/config"
	"github.com/imagebump/imagebump/flux"
	"github.com/imagebump/imagebump/gitwriter"
	"github.com/imagebump/imagebump/internal/fluxmsg"
	"github.com/imagebump/imagebump/internal/redact"
	"github.com/imagebump/imagebump/pullrequest"
	"github.com/imagebump/imagebump/setters"
)

// TargetOptions configure one target's cycle.
type TargetOptions struct {
	// Config holds the image policies; required.
	Config *config.Config
	// Target is the repository, branch, paths and policies; required.
	Target config.Target
	// Registry answers tag and digest queries; required.
	Registry Registry
	// Workdir is the parent folder of the working copies kept between
	// cycles (one per target, see WorkdirFor). Empty means a temporary
	// clone, removed when the cycle ends.
	Workdir string
	// PullRequests builds the target's forge client. Nil means
	// NewPullRequestProvider.
	PullRequests func(config.Target) (pullrequest.Provider, error)
	// Gates checks signatures and minimum ages; keep one per config so
	// verified digests stay cached between cycles. Nil means a new one per
	// cycle.
	Gates *Gates
	// Now is the clock of holds and minimum ages; nil means time.Now.
	Now func() time.Time
	// Previous is this target's last cycle that did not fail as a whole
	// (its policies or files may have), when the caller keeps one (serve
	// does). Its policies are asked for at once, while
	// the working copy is fetched; the marker index it saved is taken
	// from memory while the file on disk is still that one
	// (setters.ReloadIndex); and when the tracked branch has not moved and
	// the cycle proposes exactly what Previous did, the forge is not asked
	// again: a cycle with nothing new costs the tag listings and one fetch.
	Previous *TargetResult
	// Logger receives progress; nil discards. RunTarget adds the target's
	// name to it.
	Logger *slog.Logger
	// NoCache makes the cycle read every marked file, without the marker
	// index kept in the working copy (see IndexFile), and check every file
	// of a reused working copy.
	NoCache bool
}

// IndexFile returns where the marker index of a working copy is kept:
// inside its .git folder, so it is never committed and goes away with a
// new clone.
func IndexFile(workingCopy string) string {
	return filepath.Join(workingCopy, ".git", "imagebump", "markers")
}

// TargetResult is what one target's cycle did. Fields are zero for the
// steps the cycle did not reach.
type TargetResult struct {
	// Target is the target's name.
	Target string
	// Repository is the Git URL, with credentials removed.
	Repository string
	// Branch is the tracked branch (the remote's default when git.branch
	// is empty and the clone got that far).
	Branch string
	// PushBranch is imagebump's own branch, or "" when commits go to Branch.
	PushBranch string
	// Commit is the SHA of the commit pushed or, when nothing was
	// committed, of the remote head the working copy holds (which may
	// already hold the edits); "" when the target failed before either
	// was settled (a push that did not succeed, say).
	Commit string
	// Pushed is true when a commit was pushed.
	Pushed bool
	// Forced is true when PushBranch was force-pushed over an older commit.
	Forced bool
	// Attempts is how many times the edit ran (more than one after a push
	// race).
	Attempts int
	// Held is true when push.branch (and its pull request, if any) was left
	// as it is because a policy failed: push.branch is rebuilt from scratch each
	// cycle, so rebuilt now it would lose that policy's bumps, and the pull
	// request would flip with each registry blip.
	Held bool
	// Report is the scan of the last attempt, or nil when the cycle failed
	// before it.
	Report *Report
	// RedoneReads counts the YAML files read by the attempts done again (a
	// push race; files someone else wrote in the working copy), which
	// Report does not count: with Report.FilesRead, every file the cycle
	// read.
	RedoneReads int
	// PullRequest is what happened to the target's pull request, when it
	// has push.pullRequest and there was something to decide.
	PullRequest *pullrequest.Result
	// Started and Duration time the cycle.
	Started  time.Time
	Duration time.Duration
	// Head is the tracked branch's head the cycle started from.
	Head string
	// proposal fingerprints what the cycle proposed to the forge (head,
	// changes, notes), and prDone says the forge step succeeded for it.
	proposal string
	prDone   bool
	// index is the marker index saved in the working copy, which the next
	// cycle given this one as Previous takes instead of reading it again
	// (setters.ReloadIndex).
	index *setters.Index
}

// Failed reports whether the cycle's scan reported a failed policy or a
// problem; the error of RunTarget says whether the target itself failed.
func (r *TargetResult) Failed() bool {
	return r.Report != nil && r.Report.Failed()
}

// TargetError is why a target's cycle failed, and which target it was.
// Where the target is named already (a row of serve's status, a log
// line's target attribute), Err alone says why.
type TargetError struct {
	Target string
	Err    error
}

// Error names the target, then why: "target prod: cloning ...".
func (e *TargetError) Error() string { return "target " + e.Target + ": " + e.Err.Error() }

// Unwrap returns why the cycle failed.
func (e *TargetError) Unwrap() error { return e.Err }

// RunTarget runs one full cycle of a target: it opens (clones, or fetches
// and resets) the working copy, selects the latest image of every policy
// that the target's markers use, rewrites the markers, renders the commit
// message, commits, pushes to the tracked branch or to push.branch, and
// opens, updates or closes the pull request. A cycle with nothing new makes
// no commit, no push and no write call to the forge.
//
// The result is never nil; it holds what was done up to a failure. The
// error says why the target failed (clone, push, pull request); failed
// policies and file problems are in the result's Report instead, and the
// rest of the cycle goes on without them.
func RunTarget(ctx context.Context, opts TargetOptions) (*TargetResult, error) {
	t := opts.Target
	res := &TargetResult{Target: t.Name, Started: time.Now()}
	defer func() { res.Duration = time.Since(res.Started) }()
	if opts.Config == nil || opts.Registry == nil || t.Git == nil {
		return res, errors.New("cycle: Config, Registry and Target.Git are required")
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	logger = logger.With("target", t.Name)
	res.Repository, res.Branch = redact.String(t.Git.URL), t.Git.Branch
	if t.Push != nil {
		res.PushBranch = t.Push.Branch
	}
	fail := func(err error) (*TargetResult, error) {
		return res, &TargetError{Target: t.Name, Err: err}
	}
	if opts.PullRequests == nil {
		// Before the push: pull requests that cannot be opened would
		// fail the target only after its branch was pushed.
		if err := CheckPullRequest(t); err != nil {
			return fail(err)
		}
	}
	if err := checkEnvRefs(t); err != nil {
		return fail(err)
	}

	workdir := WorkdirFor(opts.Workdir, t.Name)
	if workdir != "" {
		if err := os.MkdirAll(opts.Workdir, 0o755); err != nil {
			return fail(fmt.Errorf("creating the working copy folder (it must be one this user can create and write; see --workdir): %w", err))
		}
		// Two processes sharing a working copy would reset it under each
		// other: the second waits for the first.
		unlock, err := lockWorkdir(ctx, workdir+".lock", logger)
		if err != nil {
			return fail(err)
		}
		defer unlock()
	}
	reg := perCycle(opts.Registry)
	sopts := setters.Options{Paths: t.Git.Paths, MaxFileSize: opts.Config.FileSizeLimit()}
	var kept *setters.Index // the marker index kept in the working copy
	var keptWhy string      // why it cannot be used, if so
	var pf *prefetch
	if workdir != "" && !opts.NoCache {
		// The registries are asked while the working copy is fetched, for
		// the policies the last commit's markers name: as the caller's
		// last cycle found them, known at once, or else as the kept index
		// has them, once it is read.
		picks := previousPicks(opts.Previous)
		if picks != nil {
			pf = startPrefetch(ctx, opts, reg, func(name string) bool { return picks[name] != nil }, picks, logger)
		}
		var last *setters.Index
		if opts.Previous != nil {
			last = opts.Previous.index
		}
		kept, keptWhy = setters.ReloadIndex(last, IndexFile(workdir), setters.ByBlob, sopts)
		if picks == nil && kept.Built() {
			refs := kept.References()
			pf = startPrefetch(ctx, opts, reg, func(name string) bool { return refs[name] > 0 }, nil, logger)
		}
		defer pf.stop()
	}
	gopts := GitOptions(t, workdir, logger)
	// With the marker index, every file the cycle reads is checked against
	// its blob hash, so a reused working copy need not be looked at whole.
	gopts.TrustWorktree = !opts.NoCache
	repo, err := gitwriter.Open(ctx, gopts)
	if err != nil {
		return fail(err)
	}
	defer repo.Close()
	res.Branch, res.Head = repo.Branch(), repo.Head()
	if res.PushBranch == res.Branch && !WantsPullRequest(t) {
		// push.branch naming the tracked branch (written out, or the
		// remote's default when git.branch is not): a direct push, as
		// without it; gitwriter refused it.
		res.PushBranch = ""
	}

	idx, err := openIndex(repo, t, sopts, kept, keptWhy, opts.NoCache, logger)
	if err != nil {
		return fail(err)
	}
	commit, tmpl := commitSettings(t)
	var prov pullrequest.Provider
	if WantsPullRequest(t) {
		// Before the push: a token that cannot be read would fail the
		// target only after its branch was pushed.
		if prov, err = providerFor(opts); err != nil {
			return fail(err)
		}
	}
	var selection []PolicyResult
	var warned map[string]bool // the tag warnings the last cycle logged
	if opts.Previous != nil {
		warned = WarnedBy(opts.Previous.Report)
	}
	var work *setters.Index // the index of the last edit
	edit := func(ctx context.Context, dir string) ([]string, string, error) {
		var rep *Report
		for try := 0; ; try++ {
			var err error
			if work, err = idx.forHead(repo, logger); err != nil {
				return nil, "", err
			}
			rep, err = Run(ctx, Options{
				Config:    opts.Config,
				Registry:  reg,
				Root:      dir,
				Paths:     t.Git.Paths,
				Policies:  t.Selects,
				Write:     true,
				Selection: selection,
				Gates:     opts.Gates,
				Now:       opts.Now,
				Logger:    logger,
				Index:     work,
				prefetch:  pf,
				Warned:    warned,
				// gitwriter syncs the files the edit wrote while the
				// push runs, before its Git index records them.
				workingCopy: true,
			})
			if err != nil {
				return nil, "", err
			}
			if len(rep.Stale) == 0 || try > 0 {
				break
			}
			res.RedoneReads += rep.FilesRead
			// Someone else wrote in the working copy: check it whole,
			// reset it, and do the edit again.
			logger.Warn("files in the working copy are not what the commit holds; resetting it", "files", rep.Stale)
			if err := repo.Clean(rep.Stale...); err != nil {
				return nil, "", err
			}
			selection = rep.Policies
		}
		// A file of the working copy that could not be written (a full
		// disk, a folder not this user's) fails the target: its bump is
		// pending, not a problem of the file's.
		if unwritten := rep.Unwritten(); len(unwritten) > 0 {
			p := unwritten[0]
			var we *setters.WriteError
			errors.As(p.Err, &we)
			return nil, "", fmt.Errorf("the working copy in %s could not be written (%s: %v); the bumps are made on the next cycle that can write it (a full disk, or a folder this user may not write: see --workdir)", dir, p.File, we.Err)
		}
		// A retry after a push race redoes the edit on the new head with
		// the same picks: the registries are not asked again.
		if res.Report != nil {
			res.RedoneReads += res.Report.FilesRead
		}
		selection, res.Report = rep.Policies, rep
		res.Held = false
		if len(rep.Changes) == 0 {
			return nil, "", nil
		}
		if res.PushBranch != "" && rep.FailedPolicies() > 0 {
			// Rebuilding the branch (imagebump's own, with a pull
			// request or not) would drop the bumps it holds for the
			// failed policies, which cannot be made again now; unless it
			// holds none: the files of their markers are on it as they
			// are here (a repository gone, say, keeps no target frozen).
			keeps, err := branchKeepsFailed(ctx, repo, res.PushBranch, rep)
			if err != nil {
				return nil, "", err
			}
			if !keeps {
				// Nothing is committed: the files go back as the commit
				// has them, and the index of this edit is dropped.
				res.Held = true
				work = nil
				if err := repo.Restore(rep.FilesChanged); err != nil {
					return nil, "", err
				}
				return nil, "", nil
			}
			logger.Info("a policy failed, but the push branch holds none of its bumps: the others go ahead", "failed", rep.FailedPolicies())
		}
		msg, err := commitMessage(opts.Config.File, t, tmpl, NewMessageData(rep, res.Repository, t.Name), dir)
		if err != nil {
			return nil, "", err
		}
		if prov != nil {
			// A title template that fails on these changes fails the
			// cycle before its commit is pushed, as the message does.
			if _, err := pullRequestTitle(t, rep, opts.Config.File, res.Repository); err != nil {
				return nil, "", err
			}
		}
		return rep.FilesChanged, msg, nil
	}
	update := gitwriter.Update{Commit: commit, PushBranch: res.PushBranch}
	if t.Push != nil {
		update.Refspec, update.Options = t.Push.Refspec, t.Push.Options
	}
	if prov != nil {
		// A branch left ending in a commit of a merged pull request (a
		// forge's "update branch", then the merge) holds nothing the base
		// lacks: the next bump may replace it.
		update.Replace = func(ctx context.Context, commit string) (bool, error) {
			return pullrequest.MergedHead(ctx, prov, t.Push.Branch, repo.Branch(), commit)
		}
	}
	up, err := repo.Update(ctx, update, edit)
	if err != nil {
		if up != nil {
			// Pushed, then a later step failed: the report says both.
			res.took(up)
		}
		return fail(err)
	}
	if idx.save(repo, work, up, logger) {
		res.index = work
	}
	res.took(up)
	if up.Branch != "" && res.PushBranch == "" {
		res.Branch = up.Branch
	}
	if WantsPullRequest(t) && res.Report != nil && !res.Held {
		res.proposal = proposal(res)
		if p := opts.Previous; p != nil && p.prDone && !res.Pushed && p.proposal == res.proposal {
			// The forge already has what this cycle would send.
			logger.Debug("pull request unchanged since the last cycle; the forge is not asked")
			if p.PullRequest != nil {
				again := *p.PullRequest
				again.Outcome, again.Labels, again.Duplicates = pullrequest.Unchanged, nil, nil
				if p.PullRequest.Outcome == pullrequest.Closed {
					again = pullrequest.Result{}
				}
				if again.Outcome != "" {
					res.PullRequest = &again
				}
			}
			res.prDone = true
			return res, nil
		}
		// An open pull request closed as proposing nothing would drop a
		// person's commit on its branch, as a push would: it is closed
		// only over imagebump's own. With none open, a branch a person
		// left (merged with a forge's "update branch") is no matter.
		ready := func() error { return repo.CheckPushBranch(ctx, t.Push.Branch, commit.AuthorEmail) }
		pr, err := pullRequestFor(ctx, prov, opts, res.Branch, res.Report, res.Repository, true, ready)
		if err != nil {
			// Opened or closed, then a label or a comment was refused.
			res.PullRequest = pr
			return fail(err)
		}
		res.PullRequest, res.prDone = pr, true
	}
	return res, nil
}

// took records what Update did.
func (r *TargetResult) took(up *gitwriter.Result) {
	r.Commit, r.Pushed, r.Forced, r.Attempts = up.Commit, up.Pushed, up.Forced, up.Attempts
}

// proposal fingerprints what a cycle asks of the forge: the base it starts
// from, the changes (without lines) and the notes.
func proposal(res *TargetResult) string {
	var b strings.Builder
	b.WriteString(res.Head)
	for _, c := range res.Report.Changes {
		fmt.Fprintf(&b, "\x00%s\x00%s\x00%s\x00%s", c.File, c.Policy, c.Old, c.New)
	}
	for _, n := range heldNotes(res.Report) {
		b.WriteString("\x01" + n)
	}
	if res.Report.Failed() {
		b.WriteString("\x02failed")
	}
	return b.String()
}

// commitSettings returns a target's commit author, signer and message
// template, with the defaults filled in.
func commitSettings(t config.Target) (gitwriter.Commit, string) {
	commit := gitwriter.Commit{AuthorName: config.DefaultAuthorName, AuthorEmail: config.DefaultAuthorEmail}
	tmpl := DefaultMessageTemplate
	if c := t.Commit; c != nil {
		if c.Author.Name != "" {
			commit.AuthorName = c.Author.Name
		}
		if c.Author.Email != "" {
			commit.AuthorEmail = c.Author.Email
		}
		if c.MessageTemplate != "" {
			tmpl = c.MessageTemplate
		}
		if c.SigningKeyFile != "" {
			commit.Signer = &gitwriter.Signer{KeyFile: c.SigningKeyFile, PassphraseFile: c.SigningPassphraseFile}
		}
	}
	return commit, tmpl
}

// commitMessage renders the commit message of a cycle's changes: the
// target's template over imagebump's data, or, for a target whose
// commit.fluxMessage holds a template written for Flux, that template over
// Flux's data, committed exactly as rendered (Flux does not trim it). dir is
// the working copy after the edits; Flux's data names the Kubernetes
// objects each change is in, read from there.
func commitMessage(cfgFile string, t config.Target, tmpl string, data MessageData, dir string) (string, error) {
	if t.Commit == nil || t.Commit.FluxMessage == nil {
		return RenderTemplate("commit.messageTemplate in "+cfgFile, tmpl, data)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return "", fmt.Errorf("reading the working copy for the Flux message template: %w", err)
	}
	defer root.Close()
	msg, err := fluxmsg.Render(flux.MessageInput(t, data, root.FS()))
	if err != nil {
		return "", fmt.Errorf("commit.fluxMessage.template in %s: %w", cfgFile, err)
	}
	return msg, nil
}

// staleReason is the comment on a pull request imagebump closes because its
// branch no longer proposes anything.
const staleReason = "imagebump closes this pull request: the base branch already has these bumps, or their tags are gone, so its branch proposes nothing any more. A later bump opens a new pull request."

// pullRequestFor opens or updates (write) or previews (plan) the target's
// pull request for rep. When rep has no changes and every policy resolved,
// the branch proposes nothing: an open pull request is closed (or, for
// plan, would be). When a policy failed, nothing is decided: an empty
// change list may only mean its registry was down. Nor when a hold keeps
// a marker from moving: its bump is only put off, and the same pull
// request (with its review) carries it again once the hold ends, where
// closing it would open another then. ready, when not nil, is asked
// before a close, or a preview of one (pullrequest.Close's).
func pullRequestFor(ctx context.Context, p pullrequest.Provider, opts TargetOptions, base string, rep *Report, repository string, write bool, ready func() error) (*pullrequest.Result, error) {
	if !rep.decidesPullRequest() {
		return nil, nil
	}
	t := opts.Target
	if len(rep.Changes) == 0 {
		var res *pullrequest.Result
		var err error
		if write {
			res, err = pullrequest.Close(ctx, p, t.Push.Branch, base, staleReason, ready)
		} else {
			res, err = pullrequest.PlanClose(ctx, p, t.Push.Branch, base, ready)
		}
		if res == nil || res.Outcome == pullrequest.None {
			return nil, err
		}
		return res, err
	}
	req, err := pullRequestRequest(t, base, rep, opts.Config.File, repository)
	if err != nil {
		return nil, err
	}
	if write {
		return pullrequest.Ensure(ctx, p, req)
	}
	return pullrequest.Plan(ctx, p, req)
}

// decidesPullRequest reports whether a report decides anything about the
// pull request: not when it has no changes while a policy failed (its
// registry may only be down) or a hold keeps a marker from moving.
func (r *Report) decidesPullRequest() bool {
	return len(r.Changes) > 0 || !r.Failed() && !r.HoldsMarked()
}

// providerFor builds the target's pull-request provider, with the
// caller's constructor when it gives one.
func providerFor(opts TargetOptions) (pullrequest.Provider, error) {
	if opts.PullRequests != nil {
		return opts.PullRequests(opts.Target)
	}
	return NewPullRequestProvider(opts.Target)
}

// branchKeepsFailed reports whether rebuilding the push branch from the
// working copy keeps every marked value of the policies that failed as
// the branch has it: the branch holds no bump of theirs, which could not
// be made again now. A branch that does not exist holds none. Only those
// markers are compared, so a file shared with a policy that moved does
// not count as a difference.
func branchKeepsFailed(ctx context.Context, repo *gitwriter.Repo, branch string, rep *Report) (bool, error) {
	failed := map[string]bool{}
	for _, p := range rep.Policies {
		if p.Err != nil {
			failed[p.Name] = true
		}
	}
	// The failed policies' markers are as the commit has them: an edit
	// leaves them.
	here := map[string][]string{}
	var files []string
	for _, m := range rep.Markers {
		if failed[m.Policy] {
			if _, ok := here[m.File]; !ok {
				files = append(files, m.File)
			}
			here[m.File] = append(here[m.File], markerKey(m))
		}
	}
	on, exists, err := repo.PushBranchFiles(ctx, branch, files)
	if err != nil || !exists {
		return err == nil, err
	}
	for _, f := range files {
		bf := on[f]
		switch {
		case !bf.Present:
			// Not on the branch (git.branch got it since): nothing of
			// it to drop.
			continue
		case !bf.Regular:
			return false, nil
		}
		var there []string
		for _, m := range setters.Markers(f, bf.Data) {
			if failed[m.Policy] {
				there = append(there, markerKey(m))
			}
		}
		slices.Sort(there)
		slices.Sort(here[f])
		if !slices.Equal(there, here[f]) {
			return false, nil
		}
	}
	return true, nil
}

// markerKey is what branchKeepsFailed compares of a marker: its policy,
// field and value, not its line.
func markerKey(m setters.Marker) string {
	return m.Policy + "\x00" + string(m.Field) + "\x00" + m.Value
}

// HoldsMarked reports whether a hold keeps a marker from moving: a held
// policy whose pick would give some marker naming it another value.
func (r *Report) HoldsMarked() bool {
	held := map[string]setters.Image{}
	for _, p := range r.Policies {
		if p.Held != nil && p.Err == nil {
			held[p.Name] = setters.Image{Repository: p.Repository, Tag: p.Selection.Latest, Digest: p.Digest}
		}
	}
	if len(held) == 0 {
		return false
	}
	for _, m := range r.Markers {
		img, ok := held[m.Policy]
		if !ok {
			continue
		}
		if v, err := setters.ValueFor(img, m.Policy, m.Field); err == nil && v != m.Value {
			return true
		}
	}
	return false
}

// pullRequestRequest describes the pull request a report's changes call
// for.
func pullRequestRequest(t config.Target, base string, rep *Report, cfgFile, repository string) (pullrequest.Request, error) {
	title, err := pullRequestTitle(t, rep, cfgFile, repository)
	if err != nil {
		return pullrequest.Request{}, err
	}
	req := pullrequest.Request{Head: t.Push.Branch, Base: base, Title: title, Labels: t.Push.PullRequest.Labels}
	for _, c := range rep.Changes {
		req.Changes = append(req.Changes, pullrequest.Change{File: c.File, Line: c.Line, Policy: c.Policy, Old: c.Old, New: c.New})
	}
	req.Notes = heldNotes(rep)
	return req, nil
}

// pullRequestTitle renders the target's pull request title for rep's
// changes.
func pullRequestTitle(t config.Target, rep *Report, cfgFile, repository string) (string, error) {
	tmpl := t.Push.PullRequest.Title
	if tmpl == "" {
		tmpl = DefaultTitleTemplate
	}
	title, err := RenderTemplate("push.pullRequest.title in "+cfgFile, tmpl, NewMessageData(rep, repository, t.Name))
	return strings.TrimSpace(title), err
}

// targetIndex is a target's marker index across the attempts of one
// cycle: base describes a commit (its Head), and each attempt works on a
// copy brought to the head the worktree then holds.
type targetIndex struct {
	base  *setters.Index // nil without an index
	file  string         // where it is kept; "" for a temporary clone
	paths []string
	// changes are the files that differ between base's head and
	// changesTo, the head when the index was opened.
	changes   []gitwriter.FileChange
	changesTo string
}

// openIndex loads the target's marker index from its working copy, or
// starts an empty one. An index that cannot follow the worktree to its
// head by a tree diff is rebuilt, by a full scan that needs a worktree
// holding nothing but the commit: the worktree is checked whole first.
func openIndex(repo *gitwriter.Repo, t config.Target, sopts setters.Options, kept *setters.Index, keptWhy string, noCache bool, logger *slog.Logger) (*targetIndex, error) {
	ti := &targetIndex{paths: t.Git.Paths}
	if noCache {
		return ti, nil
	}
	if kept != nil && repo.Cloned() && kept.Built() {
		// The last cycle's index is of a working copy that is gone (of
		// another URL, perhaps), and a shallow clone may not hold the
		// commit it was built for.
		kept, keptWhy = setters.NewIndex(setters.ByBlob, sopts), "the working copy was cloned afresh"
	}
	if kept != nil {
		ti.file = IndexFile(repo.Dir())
		ti.base = kept
		if keptWhy != "" {
			logger.Info("building the marker index from a full scan", "reason", keptWhy)
		}
	} else {
		ti.base = setters.NewIndex(setters.ByBlob, sopts)
	}
	if ti.base.Built() {
		changes, err := repo.Changes(ti.base.Head())
		if err != nil {
			logger.Info("building the marker index from a full scan", "reason", err.Error())
			ti.base.Reset()
		} else {
			// forHead starts from these when the head has not moved since.
			ti.changes, ti.changesTo = changes, repo.Head()
		}
	}
	if !ti.base.Built() {
		if err := repo.Clean(); err != nil {
			return nil, err
		}
	}
	return ti, nil
}

// forHead returns a copy of the index brought to the commit the worktree
// holds now, or nil without an index.
func (ti *targetIndex) forHead(repo *gitwriter.Repo, logger *slog.Logger) (*setters.Index, error) {
	if ti.base == nil {
		return nil, nil
	}
	work := ti.base.Clone()
	head := repo.Head()
	if !work.Built() {
		work.SetHead(head)
		return work, nil
	}
	changes, err := ti.changes, error(nil)
	if work.Head() != ti.base.Head() || head != ti.changesTo {
		changes, err = repo.Changes(work.Head())
	}
	if err != nil {
		// A commit that vanished since the index was opened costs a full
		// scan, which takes the worktree's bytes for the commit's: the
		// worktree is checked whole first.
		logger.Info("building the marker index from a full scan", "reason", err.Error())
		if err := repo.Clean(); err != nil {
			return nil, err
		}
		work.Reset()
		work.SetHead(head)
		return work, nil
	}
	work.Update(head, fileChanges(changes), ti.paths)
	if work.ScansAll(repo.Dir(), ti.paths) {
		// The changes made the index unusable (a symbolic link came into
		// scope, or above a path in scope): the scan reads every file
		// without checking it against its blob, so the worktree is
		// checked whole first, as openIndex does for an index that was
		// unusable from the start.
		if err := repo.Clean(); err != nil {
			return nil, err
		}
	}
	return work, nil
}

// save keeps the index of the last edit, brought to the commit the
// worktree holds after the update: the edit's index describes its own
// commit when it made one, which the worktree holds when it was pushed to
// the tracked branch, and the base otherwise. It reports whether the file
// now holds work.
func (ti *targetIndex) save(repo *gitwriter.Repo, work *setters.Index, up *gitwriter.Result, logger *slog.Logger) (saved bool) {
	if work == nil || ti.file == "" {
		return false
	}
	if len(up.Changed) > 0 {
		work.SetHead(up.Commit)
	}
	if work.Head() != repo.Head() {
		changes, err := repo.Changes(work.Head())
		if err != nil {
			logger.Warn("the marker index cannot follow the working copy; the next cycle rebuilds it", "error", err)
			work.Reset()
		} else {
			work.Update(repo.Head(), fileChanges(changes), ti.paths)
		}
	}
	if err := work.Save(ti.file); err != nil {
		logger.Warn("could not save the marker index; the next cycle reads the files changed since the index saved before, or every file if there is none: check that the working copy's .git folder is writable and its disk not full", "file", ti.file, "error", err)
		return false
	}
	return true
}

func fileChanges(in []gitwriter.FileChange) []setters.FileChange {
	out := make([]setters.FileChange, len(in))
	for i, c := range in {
		out[i] = setters.FileChange{Path: c.Path, Old: c.Old, New: c.New, Symlink: c.Symlink}
	}
	return out
}

// heldNotes lists, for a pull request's body, what a gate, a hold or a
// failure kept from it: the better tags held back, the policies held
// still, and those that failed (when the branch held none of their bumps,
// the others go ahead without them).
func heldNotes(rep *Report) []string {
	var notes []string
	for _, p := range rep.Policies {
		if p.Err != nil {
			notes = append(notes, p.Name+": could not be checked this time (the run's log says why), so its markers are left as they are")
		}
		for _, h := range p.HeldBack {
			notes = append(notes, fmt.Sprintf("%s %s: %s (%s)", p.Name, h.Tag, h.Gate, h.Detail))
		}
		if p.Held != nil {
			notes = append(notes, fmt.Sprintf("%s: held at its current tag (%s)", p.Name, p.Held.Reason))
		}
	}
	return notes
}
