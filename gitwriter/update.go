package gitwriter

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/imagebump/imagebump/internal/printable"
	"github.com/imagebump/imagebump/internal/retry"
)

// DefaultMaxAttempts is how many times Update tries to push when
// Update.MaxAttempts is zero.
const DefaultMaxAttempts = 4

// Backoff between push attempts: full jitter up to base*2^(n-1), capped.
const (
	backoffBase  = 250 * time.Millisecond
	backoffLimit = 5 * time.Second
)

// Signer is an OpenPGP key that signs commits.
type Signer struct {
	// KeyFile holds the armored private key. The first key in it that can
	// sign is used.
	KeyFile string
	// PassphraseFile holds the key's passphrase; needed when the key is
	// encrypted.
	PassphraseFile string
}

// Commit says who makes the commit and how it is signed.
type Commit struct {
	// AuthorName and AuthorEmail are the author, and the committer too.
	AuthorName, AuthorEmail string
	// Signer, when set, signs the commit.
	Signer *Signer
}

// Edit is called on a clean worktree at the base commit; it edits files in
// dir and returns what changed (nil/empty: nothing to do) and the commit
// message for those changes. changed holds slash-separated paths relative
// to dir; a path that no longer exists is a deletion (of a whole folder,
// when the commit holds a folder there), and a file where the commit
// holds a folder replaces the folder. Update may call Edit
// more than once, on a newer base each time, so Edit must derive its
// changes from the files alone. The files Edit writes need not be durable:
// Update syncs them before the Git index records them.
type Edit func(ctx context.Context, dir string) (changed []string, message string, err error)

// Update says how to record edits.
type Update struct {
	// Commit holds the author and the signer; the message comes from Edit.
	Commit Commit
	// PushBranch, when empty, makes Update commit on the tracked branch and
	// push it, fast-forward only: when the remote moved meanwhile, Update
	// fetches, redoes the edit on the new head and tries again. It never
	// force-pushes the tracked branch.
	//
	// When set, PushBranch is imagebump's own branch: Update builds one
	// commit of the edits on the tracked branch's head and force-pushes it
	// there, unless the remote PushBranch already holds a commit with the
	// same tree on the same parent, in which case nothing is pushed.
	PushBranch string
	// MaxAttempts bounds the push attempts. Zero means DefaultMaxAttempts.
	MaxAttempts int
	// Refspec, when set, pushes the new commit with a refspec too, as
	// Flux's git.push.refspec: SRC:DST, where SRC names the new commit
	// (HEAD, or the pushed branch) and DST is any ref, such as
	// refs/for/main for Gerrit or AGit. It is pushed after the branch
	// (PushBranch, or the tracked branch without it), as Flux does: for a
	// change to reach review only, push to a branch of imagebump's own and
	// send that with the refspec (refs/heads/auto:refs/for/main). It is
	// never forced; a remote answering "no new changes" (Gerrit, for the
	// same commit content) counts as pushed.
	Refspec string
	// Options are Git push options sent with every push: KEY=VALUE, or KEY
	// (sent as KEY=), as Flux's git.push.options.
	Options []string
	// Replace, when set, is asked about a remote PushBranch that ends in a
	// commit imagebump did not make, by its full hash: true lets the push
	// replace it, as the caller knows that commit is kept elsewhere (the
	// head of a merged pull request). Without it, or with false, such a
	// branch is left as it is, with a *ForeignCommitError.
	Replace func(ctx context.Context, commit string) (bool, error)
}

// Result is what Update did.
type Result struct {
	// Commit is the SHA of the new commit, or of the existing remote commit
	// when nothing changed.
	Commit string
	// Branch is the branch pushed, or that would have been.
	Branch string
	// Pushed is false when nothing changed: no commit, no push.
	Pushed bool
	// Forced is true when PushBranch was force-pushed over an older commit.
	Forced bool
	// Attempts is how many times Update ran the edit.
	Attempts int
	// Changed lists the files whose content differs from the tracked
	// branch's head, sorted.
	Changed []string
}

// Update runs edit on the working copy, commits what it changed and pushes
// the commit as u says. When edit changes nothing, there is no commit and
// no push, and Result.Pushed is false. When a step after a successful push
// fails (the refspec's push, updating the working copy), the Result comes
// with the error, with Pushed set; on any other error it is nil.
func (r *Repo) Update(ctx context.Context, u Update, edit Edit) (*Result, error) {
	res, err := r.update(ctx, u, edit)
	// A damaged object met on the way (reading the trees a commit is
	// built on, say) would fail every later cycle the same way.
	r.damaged(err)
	return res, err
}

// update is Update's work.
func (r *Repo) update(ctx context.Context, u Update, edit Edit) (*Result, error) {
	if err := r.checkUpdate(u); err != nil {
		return nil, err
	}
	if r.repo == nil {
		return nil, errors.New("updating: the working copy is not open")
	}
	var key *openpgp.Entity
	if u.Commit.Signer != nil {
		k, err := loadSigningKey(*u.Commit.Signer, func(pass string) { r.noteSecret("signing key passphrase", pass) })
		if err != nil {
			return nil, err
		}
		key = k
	}
	maxAttempts := u.MaxAttempts
	if maxAttempts <= 0 {
		maxAttempts = DefaultMaxAttempts
	}
	target := r.branch
	if u.PushBranch != "" {
		target = u.PushBranch
	}
	r.pushOptions = nil
	for _, o := range u.Options {
		if r.pushOptions == nil {
			r.pushOptions = map[string]string{}
		}
		k, v, _ := strings.Cut(o, "=")
		r.pushOptions[k] = v
	}
	log := r.log.With("push_branch", target)
	var lastErr error
	for attempt := 1; attempt <= maxAttempts; attempt++ {
		if attempt > 1 {
			if err := retry.Sleep(ctx, retry.Backoff(attempt-1, backoffBase, backoffLimit)); err != nil {
				return nil, fmt.Errorf("pushing to %s branch %q: %w", r.remote, target, err)
			}
			// pushTracked fetched already to tell a race; pushOwn
			// only looked at the push branch.
			if u.PushBranch != "" {
				if err := r.fetch(ctx); err != nil {
					return nil, err
				}
			}
			r.dirty = true
		}
		if r.dirty {
			if err := r.resetIfNeeded(); err != nil {
				return nil, fmt.Errorf("resetting the working copy to %s: %w", r.head, err)
			}
		}
		res, race, err := r.attempt(ctx, u, key, edit)
		if err == nil {
			res.Attempts = attempt
			if res.Pushed {
				log.Info("pushed", "commit", res.Commit, "forced", res.Forced, "attempts", attempt, "files", len(res.Changed))
			} else {
				log.Debug("nothing to push", "commit", res.Commit, "files", len(res.Changed))
			}
			return res, nil
		}
		if !race {
			if res != nil {
				res.Attempts = attempt
			}
			return res, err
		}
		lastErr = err
		if attempt < maxAttempts {
			// Logged here because it is not returned; the last one is.
			log.Info("the remote moved while pushing; redoing the edit on its new head", "attempt", attempt, "error", err)
		}
	}
	return nil, fmt.Errorf("pushing to %s branch %q: gave up after %d attempts: %w (last: %w)", r.remote, target, maxAttempts, ErrConflict, lastErr)
}

func (r *Repo) checkUpdate(u Update) error {
	if u.Commit.AuthorName == "" || u.Commit.AuthorEmail == "" {
		return errors.New("updating: commit author name and email are required")
	}
	if u.PushBranch != "" {
		if err := validBranch(u.PushBranch); err != nil {
			return fmt.Errorf("push branch: %w", err)
		}
		if u.PushBranch == r.branch {
			return fmt.Errorf("push branch %q is the tracked branch; leave it empty to push to the tracked branch", u.PushBranch)
		}
	}
	return nil
}

// attempt runs the edit once on a clean worktree at r.head, commits and
// pushes. race is true when the push failed because the remote moved, so
// that redoing everything on the new head may succeed.
func (r *Repo) attempt(ctx context.Context, u Update, key *openpgp.Entity, edit Edit) (res *Result, race bool, err error) {
	base := r.head
	r.dirty, r.verified = true, false
	// The new objects' content is kept for the pushes of this attempt only.
	defer func() { r.written, r.writtenSet = nil, nil }()
	// Until the edit says what it changed, the worktree is not known to
	// hold any commit: a crash now makes the next Open reset it whole.
	_ = os.Remove(r.statePath())
	r.editing = true
	changed, message, err := edit(ctx, r.dir)
	r.editing = false
	if err != nil {
		return nil, false, fmt.Errorf("editing the working copy of %s: %w", r.remote, err)
	}
	target := r.branch
	if u.PushBranch != "" {
		target = u.PushBranch
	}
	started := time.Now()
	commit, changed, finish, err := r.commit(base, changed, message, u.Commit, key)
	if err != nil {
		return nil, false, err
	}
	if commit.IsZero() {
		// The files the edit reported hold the base's content.
		r.at = base
		r.recordState()
		r.dirty = false
		return &Result{Commit: base.String(), Branch: target}, false, nil
	}
	r.log.Debug("committed", "commit", shortHash(commit), "files", len(changed), "objects", len(r.written), "duration", time.Since(started).Round(time.Millisecond))
	res = &Result{Commit: commit.String(), Branch: target, Changed: changed}
	if u.PushBranch == "" {
		race, err = r.pushTracked(ctx, base, commit)
		res.Pushed = err == nil
	} else {
		race, err = r.pushOwn(ctx, base, commit, u, res)
	}
	if err == nil && res.Pushed && u.Refspec != "" {
		if err = r.pushRefspec(ctx, commit, u.Refspec, target); err != nil {
			err = fmt.Errorf("the commit %s is on %s branch %q, but %w", shortHash(commit), r.remote, target, err)
		}
	}
	// The index was written while the push ran.
	if ferr := finish(); ferr != nil {
		// The worktree is recorded nowhere and r.dirty stays set, so the
		// next attempt or Open resets it whole; until then it is not
		// moved. A race is not retried: the retry would start with that
		// reset.
		ferr = fmt.Errorf("updating the working copy to the new commit failed (the next cycle resets the working copy): %w", ferr)
		if err != nil {
			ferr = fmt.Errorf("%w; and %w", err, ferr)
		}
		return pushedOnly(res), false, ferr
	}
	if r.at != r.head {
		// The tracked branch stays where the remote has it (a push
		// branch, a refspec, a failed or lost push): the worktree goes
		// there too, by the files that differ.
		if cerr := r.checkout(r.at, r.head); cerr != nil && err == nil {
			err = fmt.Errorf("moving the worktree to %s: %w", shortHash(r.head), cerr)
		}
	}
	if err != nil {
		return pushedOnly(res), race, err
	}
	r.dirty = false
	return res, false, nil
}

// pushedOnly returns res when its commit was pushed, for an error that
// came after the push, and nil otherwise.
func pushedOnly(res *Result) *Result {
	if res != nil && res.Pushed {
		return res
	}
	return nil
}

// checkPath cleans a path the edit reported and refuses one outside the
// worktree, or one git refuses to commit (checkEntryPath: .git in any
// folder and any case).
func checkPath(p string) (string, error) {
	clean := path.Clean(filepath.ToSlash(p))
	if !filepath.IsLocal(filepath.FromSlash(clean)) || clean == "." {
		return "", fmt.Errorf("the edit reported %q, which is not a path inside the worktree", p)
	}
	if err := checkEntryPath(clean); err != nil {
		// .git in any folder and any case: git refuses to commit it, and
		// the next checkout would refuse the commit.
		return "", fmt.Errorf("the edit reported %q, a path git refuses to commit", p)
	}
	return clean, nil
}

// pushTracked pushes commit to the tracked branch, fast-forward only.
func (r *Repo) pushTracked(ctx context.Context, base, commit plumbing.Hash) (race bool, err error) {
	pushErr := r.push(ctx, r.branch, r.branchRef(), commit, nil)
	if pushErr == nil {
		r.head = commit
		return false, nil
	}
	if !r.mayBeRace(ctx, pushErr) {
		return false, pushErr
	}
	// Find out whether the remote moved: a race, worth redoing; or the
	// push landed although its answer was lost. go-git's fetch reads
	// the store: the objects being stored come first. It also points
	// the remote-tracking ref at commit when the push landed, and no ref
	// may name an object a crash could empty: they must be synced too.
	_ = r.waitStored(false)
	if err := r.waitSynced(); err != nil {
		return false, pushErr
	}
	if err := r.fetch(ctx); err != nil {
		r.log.Debug("could not fetch after a failed push", "error", err)
		return false, pushErr
	}
	switch r.head {
	case commit:
		return false, nil
	case base:
		return false, pushErr
	}
	return true, pushErr
}

// pushOwn pushes commit to imagebump's own branch, unless the remote
// branch already holds a commit with the same tree on the same base. The
// branch is forced only over a commit imagebump made, one whose author and
// committer are email (see ownCommit): over anyone else's it is left as
// it is, with a *ForeignCommitError.
func (r *Repo) pushOwn(ctx context.Context, base, commit plumbing.Hash, u Update, res *Result) (race bool, err error) {
	branch, email := u.PushBranch, invalidSignatureChars.Replace(u.Commit.AuthorEmail)
	ref := plumbing.NewBranchReferenceName(branch)
	// The commit is read from the store below, and a fetch may read
	// every commit a local ref names.
	if err := r.waitStored(true); err != nil {
		return false, err
	}
	// The commit lives on the push branch only; attempt moves the tracked
	// branch back.
	if err := r.setRefLater(plumbing.NewHashReference(ref, commit)); err != nil {
		return false, fmt.Errorf("setting local branch %q: %w", branch, err)
	}
	remote, err := r.repo.Remote(remoteName)
	if err != nil {
		return false, err
	}
	existing, err := r.remoteBranch(ctx, remote, branch)
	if err != nil {
		return false, err
	}
	newCommit, err := r.repo.CommitObject(commit)
	if err != nil {
		return false, err
	}
	var lease *git.ForceWithLease
	if !existing.IsZero() {
		old, err := r.repo.CommitObject(existing)
		if err != nil {
			return false, fmt.Errorf("reading the commit of %s branch %q: %w", r.remote, branch, err)
		}
		if old.TreeHash == newCommit.TreeHash && len(old.ParentHashes) == 1 && old.ParentHashes[0] == base {
			res.Commit = existing.String()
			res.Pushed = false
			return false, nil
		}
		if why := ownCommit(old, email); why != "" {
			replace := false
			if u.Replace != nil {
				if replace, err = u.Replace(ctx, existing.String()); err != nil {
					return false, err
				}
			}
			if !replace {
				return false, &ForeignCommitError{Remote: r.remote, Branch: branch, Commit: shortHash(existing), Hash: existing.String(), Why: why, Subject: subject(old.Message)}
			}
			r.log.Info("replacing the push branch: it ends in a commit imagebump did not make, which is kept elsewhere (the head of a merged pull request)", "push_branch", branch, "commit", shortHash(existing), "why", why)
		}
		// Force only over the commit just seen, so that a concurrent
		// writer of the branch is noticed rather than overwritten: the
		// next attempt looks at what it wrote, and forces over it only
		// if it is imagebump's too (another replica's, say).
		if err := r.repo.Storer.SetReference(plumbing.NewHashReference(r.trackingRef(branch), existing)); err != nil {
			return false, err
		}
		lease = &git.ForceWithLease{RefName: ref, Hash: existing}
	}
	pushErr := r.push(ctx, branch, ref, commit, lease)
	if pushErr == nil {
		res.Pushed, res.Forced = true, lease != nil
		return false, nil
	}
	if !r.mayBeRace(ctx, pushErr) {
		return false, pushErr
	}
	now, err := r.lsBranch(ctx, "listing the refs of", remote, branch)
	if err != nil {
		r.log.Debug("could not list the remote after a failed push", "error", err)
		return false, pushErr
	}
	switch now {
	case commit:
		res.Pushed, res.Forced = true, lease != nil
		return false, nil
	case existing:
		return false, pushErr
	}
	return true, pushErr
}

// remoteBranch returns the commit the remote branch points at, fetched
// into the local store when missing, or the zero hash when the branch does
// not exist.
func (r *Repo) remoteBranch(ctx context.Context, remote *git.Remote, branch string) (plumbing.Hash, error) {
	h, err := r.lsBranch(ctx, "listing the refs of", remote, branch)
	if err != nil || h.IsZero() {
		return h, err
	}
	if _, err := r.repo.CommitObject(h); err == nil {
		return h, nil
	}
	return r.fetchBranch(ctx, branch, 1)
}

// lsBranch returns where the remote branch points, or the zero hash.
func (r *Repo) lsBranch(ctx context.Context, op string, remote *git.Remote, branch string) (plumbing.Hash, error) {
	refs, err := r.listRemote(ctx, op, remote, branch)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	h, _ := branchIn(refs, branch)
	return h, nil
}

// refspecRef holds the commit that a refspec push sends, whatever source
// the refspec names.
const refspecRef = plumbing.ReferenceName("refs/imagebump/refspec")

// pushRefspec pushes commit with the user's refspec SRC:DST. SRC must name
// the commit just made (HEAD or the pushed branch); it is sent from a ref of
// imagebump's own, so the local branches need not point there.
func (r *Repo) pushRefspec(ctx context.Context, commit plumbing.Hash, refspec, pushed string) error {
	src, dst, _ := strings.Cut(refspec, ":")
	switch strings.TrimPrefix(src, "refs/heads/") {
	case "HEAD", "@", pushed, r.branch:
	default:
		names := fmt.Sprintf("HEAD or branch %q", pushed)
		if r.branch != pushed {
			names = fmt.Sprintf("HEAD, branch %q or %q", pushed, r.branch)
		}
		return fmt.Errorf("push.refspec %q: the source must name the commit imagebump made (%s)", refspec, names)
	}
	if err := r.waitStored(true); err != nil {
		return err
	}
	if err := r.setRefLater(plumbing.NewHashReference(refspecRef, commit)); err != nil {
		return fmt.Errorf("preparing the refspec push: %w", err)
	}
	spec := config.RefSpec(string(refspecRef) + ":" + dst)
	if err := spec.Validate(); err != nil {
		return fmt.Errorf("push.refspec %q: %w", refspec, err)
	}
	err := r.push(ctx, dst, spec.Dst(refspecRef), commit, nil)
	if err != nil && strings.Contains(err.Error(), "no new changes") {
		// Gerrit refuses a second push of the same change: it has it.
		r.log.Info("the remote already has this change", "refspec", refspec)
		return nil
	}
	if err != nil && notFastForward(err) {
		// go-git says "object not found" when the remote ref's commit is
		// beyond the shallow clone's history, "non-fast-forward update"
		// when it is known and not an ancestor: either way the push would
		// have to be forced.
		return fmt.Errorf("pushing refspec %q: the remote's %s holds a commit the new one does not build on, so the push is not a fast-forward, and imagebump never forces a refspec push (nor does Flux): delete that ref on the remote, or push to a ref a review system creates afresh (refs/for/BRANCH on Gerrit or AGit): %w", refspec, dst, err)
	}
	if err != nil {
		return fmt.Errorf("pushing refspec %q: %w", refspec, err)
	}
	return nil
}

// notFastForward reports whether a push failed because the remote ref
// would have to be forced.
func notFastForward(err error) bool {
	return errors.Is(err, plumbing.ErrObjectNotFound) || strings.Contains(err.Error(), "non-fast-forward update") || strings.Contains(err.Error(), plumbing.ErrObjectNotFound.Error())
}

func shortHash(h plumbing.Hash) string { return h.String()[:12] }

// mayBeRace reports whether a push error may come from the remote having
// moved, which only a look at the remote can tell. Cancellation and
// refused credentials cannot.
func (r *Repo) mayBeRace(ctx context.Context, err error) bool {
	if ctx.Err() != nil {
		return false
	}
	var ae *AuthError
	var hk *HostKeyError
	return !errors.As(err, &ae) && !errors.As(err, &hk)
}

// CheckPushBranch returns a *ForeignCommitError when the remote's branch
// ends in a commit imagebump did not make (see ownCommit; email is
// commit.author's), and nil when it ends in one imagebump made or does not
// exist. A caller about to act on that branch's pull request without
// pushing (closing it as proposing nothing) asks first, as a push does.
func (r *Repo) CheckPushBranch(ctx context.Context, branch, email string) error {
	h, err := r.pushBranchTip(ctx, "checking", branch)
	if err != nil || h.IsZero() {
		return err
	}
	c, err := r.repo.CommitObject(h)
	if err != nil {
		return fmt.Errorf("reading the commit of %s branch %q: %w", r.remote, branch, err)
	}
	if why := ownCommit(c, invalidSignatureChars.Replace(email)); why != "" {
		return &ForeignCommitError{Remote: r.remote, Branch: branch, Commit: shortHash(h), Hash: h.String(), Why: why, Subject: subject(c.Message)}
	}
	return nil
}

// pushBranchTip returns the commit the remote's branch points at, in the
// store, or the zero hash when the branch does not exist; verb says what
// the caller does with it, for the error of a Repo not open.
func (r *Repo) pushBranchTip(ctx context.Context, verb, branch string) (plumbing.Hash, error) {
	if r.repo == nil {
		return plumbing.ZeroHash, errors.New(verb + " the push branch: the working copy is not open")
	}
	remote, err := r.repo.Remote(remoteName)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	return r.remoteBranch(ctx, remote, branch)
}

// BranchFile is a file as a branch holds it.
type BranchFile struct {
	// Present is false when the branch has no such path.
	Present bool
	// Regular is true for a file (executable or not); a symbolic link or a
	// submodule is not one, and has no Data.
	Regular bool
	// Data is the file's content.
	Data []byte
}

// PushBranchFiles returns files (slash-separated, from the root) as the
// remote branch holds them, and whether the branch exists at all. The
// caller compares them with what it would commit, to tell whether
// rebuilding the branch would drop changes it cannot make again now.
func (r *Repo) PushBranchFiles(ctx context.Context, branch string, files []string) (map[string]BranchFile, bool, error) {
	h, err := r.pushBranchTip(ctx, "reading", branch)
	if err != nil || h.IsZero() {
		return nil, false, err
	}
	tree, err := r.commitTree(h)
	if err != nil {
		return nil, false, err
	}
	out := make(map[string]BranchFile, len(files))
	for _, f := range files {
		e, err := r.entryAt(tree, f)
		switch {
		case err != nil:
			return nil, false, err
		case e == nil:
			out[f] = BranchFile{}
		case e.Mode != filemode.Regular && e.Mode != filemode.Executable:
			out[f] = BranchFile{Present: true}
		default:
			data, err := r.blob(f, e.Hash)
			if err != nil {
				return nil, false, err
			}
			out[f] = BranchFile{Present: true, Regular: true, Data: data}
		}
	}
	return out, true, nil
}

// ownCommit says why c is not a commit imagebump makes on its push
// branch, or "" when it is one: a single commit on a base, authored and
// committed by email. A person's commit, a rebase by a person or a forge
// (its committer), a merge of the base into the branch (a forge's "update
// branch") are not, and forcing the branch would drop them.
func ownCommit(c *object.Commit, email string) string {
	switch {
	case len(c.ParentHashes) > 1:
		return "a merge commit, by " + signature(c.Committer)
	case len(c.ParentHashes) == 0:
		return "a commit with no parent, by " + signature(c.Committer)
	case !strings.EqualFold(c.Committer.Email, email):
		return "committed by " + signature(c.Committer)
	case !strings.EqualFold(c.Author.Email, email):
		return "authored by " + signature(c.Author)
	}
	return ""
}

func signature(s object.Signature) string {
	return s.Name + " <" + s.Email + ">"
}

// subject is the first line of a commit message, cut to 72 bytes.
func subject(message string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(message), "\n")
	return printable.Cut(line, 72)
}
