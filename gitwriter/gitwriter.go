package gitwriter

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/go-git/go-billy/v5"
	"github.com/go-git/go-billy/v5/osfs"
	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-git/go-git/v5/storage/filesystem"
	"github.com/go-git/go-git/v5/storage/memory"

	"github.com/imagebump/imagebump/internal/redact"
)

// Defaults for Options.
const (
	DefaultDepth   = 1
	DefaultTimeout = 2 * time.Minute
	// DefaultCloneTimeout bounds a clone when Options.Timeout is not set:
	// a first clone of a large repository over a slow link takes
	// minutes, and one cut off starts again from nothing each time. The
	// remote's refs, which it lists first, still come within
	// DefaultTimeout.
	DefaultCloneTimeout = 30 * time.Minute
)

// remoteName is the name of the one remote a working copy has.
const remoteName = "origin"

// maxPacks is how many pack files a reused working copy may collect (one
// per fetch that brought something) before Open clones it afresh: go-git
// never repacks, and a bot running every few minutes for months would
// otherwise slow down on them.
const maxPacks = 64

// cloneObjectsFile, in .git, records how many objects the packs a working
// copy was cloned with hold. Its history grows with every commit fetched
// or made (a policy move in a 50,000-file tree adds about 92 objects, 110
// kB once folded), and nothing prunes it: Open clones afresh once the
// packs hold more than twice as many plus grownExtra (storeGrown).
// Objects, not bytes: a fold stores them without deltas, and so grows
// the bytes of a store whose history has not grown. A variable for tests.
const cloneObjectsFile = "imagebump-clone-objects"

var grownExtra int64 = 50000

// Options says which repository and branch to keep a working copy of, and
// where.
type Options struct {
	// URL is the remote: https://, http://, ssh://, scp-like
	// user@host:path, or file://. It must not hold a password; the user
	// name of an http(s) URL is dropped (use Auth). The URL is stored in
	// the working copy's .git/config without credentials.
	URL string
	// Branch is the tracked branch. Empty means the remote's default
	// branch (its HEAD), looked up at each Open.
	Branch string
	// Auth holds the credentials, as files.
	Auth Auth
	// Workdir is where the working copy lives. Open reuses it when it holds
	// a clone of URL, clones into it when it is missing or empty, re-clones
	// when its clone is damaged or of another URL, and refuses a non-empty
	// directory that holds no Git repository. Empty means a new temporary
	// directory, removed by Close.
	Workdir string
	// Depth is the clone and fetch depth. Zero means DefaultDepth (shallow,
	// single branch); a negative depth fetches the whole history.
	Depth int
	// Timeout bounds each network operation (clone, fetch, listing the
	// remote's refs, push). Zero means DefaultTimeout, and
	// DefaultCloneTimeout for a clone once the remote has listed its
	// refs.
	Timeout time.Duration
	// Logger receives progress at info and debug level; nil discards it.
	Logger *slog.Logger
	// TrustWorktree makes Open trust a reused working copy's files: it
	// checks HEAD, the branch and the index file against the state the
	// last run recorded, and moves the worktree to the fetched head by the
	// files a tree diff names, but does not look at every file (Git's
	// status would stat each one) nor delete untracked files. Set it when
	// imagebump alone writes the working copy and every file read is
	// checked against its blob hash, as the marker index does; Clean
	// checks everything on demand. Commits never take a file the edit did
	// not report, trusted or not.
	TrustWorktree bool
}

// Repo is a working copy of one branch of a remote repository. It is not
// safe for concurrent use; two Repos in two working directories may race
// against one remote.
type Repo struct {
	opts   Options
	kind   kind
	url    string // the URL without credentials, as stored in .git/config
	remote string // the URL for errors and logs
	branch string
	// listed are the remote's refs as the default branch was looked up
	// in them, at the start of this Open: the fetch takes the branch's
	// head from them instead of asking again.
	listed  []*plumbing.Reference
	dir     string
	tempDir bool
	log     *slog.Logger

	sshUser string
	sshHost string
	sshPort int

	repo    *git.Repository
	storage *filesystem.Storage // repo's object store, nil when closed
	head    plumbing.Hash       // the tracked branch's remote head as last fetched
	at      plumbing.Hash       // the commit the worktree and index hold
	dirty   bool                // the worktree may differ from head
	cloned  bool                // Open cloned the working copy afresh
	// discard says why Close must empty the working copy, so that the
	// next Open clones afresh: what a commit wrote could not be made
	// durable, or an object read does not hash to its name. Empty: keep.
	discard string
	// foldsNames is whether the worktree's file system takes two names
	// for one, once probed (namesFold).
	foldsNames *bool
	// execBits is whether it keeps files' executable bits, once probed
	// (keepsExecBits).
	execBits *bool
	// suspect names the files Clean was told hold what the commit does
	// not, while it runs.
	suspect map[string]bool
	// verified is set while every file of the worktree is known to be as
	// the index says: after a clone, a reset or a check of every file.
	verified bool
	// editing is set while an Update's edit runs: the files it writes are
	// in no commit yet.
	editing bool
	// written are the objects the last commit wrote, which its push sends.
	written    []newObject
	writtenSet map[plumbing.Hash]bool
	objects    string    // where they are stored: the objects folder
	store      *storeJob // storeLater's work on them, until finish reports it
	// laterRefs are the local refs a push names the commit with, set by
	// finish once the commit's objects are durable (setRefLater).
	laterRefs []*plumbing.Reference
	// synced is moveToLater's sync of what the last commit wrote, until
	// finish reports it (waitSynced).
	synced *syncJob
	// lastDiff is the last tree diff diffCommits made: the checkout that
	// moves a reused worktree and the marker index that follows it ask
	// for the same one, 0.25 s after 1,000 commits of 10 files.
	lastDiff *commitDiff
	// trees holds the tree of each commit read so far (treeOf): Open
	// checks the head commit whole, and reading a bump commit whose
	// message lists thousands of files again cost a cycle with nothing
	// new milliseconds.
	trees map[plumbing.Hash]plumbing.Hash

	secrets redact.Secrets // secrets read so far, scrubbed from error text

	pushOptions map[string]string // Update.Options, sent with every push

	beforePush func() // a test hook, run just before each push
	// beforeFoldStep is a test hook, run before a fold places its pack
	// ("place") and before it deletes what it folded ("delete"); an error
	// stops the fold there.
	beforeFoldStep func(step string) error
}

// Open prepares a working copy of opts.Branch at the remote's head: it
// clones, or reuses opts.Workdir by fetching and hard-resetting to the
// remote head and deleting untracked files. It re-clones when the working
// copy is damaged or is a clone of another URL.
func Open(ctx context.Context, opts Options) (*Repo, error) {
	r, err := newRepo(opts)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("opening %s: %w", r.remote, err)
	}
	if r.dir == "" {
		dir, err := os.MkdirTemp("", "imagebump-git-")
		if err != nil {
			return nil, fmt.Errorf("creating a temporary working directory: %w", err)
		}
		r.dir, r.tempDir = dir, true
	}
	if err := r.open(ctx); err != nil {
		// No Close follows: the pack files the store keeps open close
		// here.
		r.closeStorage()
		if r.tempDir {
			_ = os.RemoveAll(r.dir)
		}
		return nil, err
	}
	return r, nil
}

// newRepo checks opts and fills in the defaults.
func newRepo(opts Options) (*Repo, error) {
	if opts.Depth == 0 {
		opts.Depth = DefaultDepth
	}
	if opts.Depth < 0 {
		opts.Depth = 0 // go-git's "no limit"
	}
	r := &Repo{opts: opts, log: opts.Logger}
	if r.log == nil {
		r.log = slog.New(slog.DiscardHandler)
	}
	if err := r.parseURL(opts.URL); err != nil {
		return nil, err
	}
	if err := opts.Auth.validate(r.kind); err != nil {
		return nil, fmt.Errorf("git auth for %s: %w", r.remote, err)
	}
	if opts.Branch != "" {
		if err := validBranch(opts.Branch); err != nil {
			return nil, err
		}
	}
	r.branch = opts.Branch
	if opts.Workdir != "" {
		dir, err := filepath.Abs(opts.Workdir)
		if err != nil {
			return nil, fmt.Errorf("resolving workdir: %w", err)
		}
		r.dir = dir
	}
	r.log = r.log.With("remote", r.remote)
	return r, nil
}

// validBranch checks a branch name as Git would.
func validBranch(name string) error {
	if strings.HasPrefix(name, "refs/") {
		return fmt.Errorf("branch %q: give the branch name without refs/heads/", name)
	}
	if err := plumbing.NewBranchReferenceName(name).Validate(); err != nil {
		return fmt.Errorf("branch %q is not a valid branch name: %w", name, err)
	}
	return nil
}

// parseURL sets the transport kind, the URL to store and the URL to show.
func (r *Repo) parseURL(raw string) error {
	if raw == "" {
		return errors.New("git URL is empty")
	}
	ep, err := transport.NewEndpoint(raw)
	if err != nil {
		// The parse error quotes the URL, which may hold a secret.
		return errors.New("git URL is not valid: " + redact.String(raw))
	}
	if ep.Password != "" || strings.Contains(ep.User, ":") {
		return errors.New("git URL " + redact.String(raw) + " holds a password; give credentials as files in the auth settings")
	}
	switch ep.Protocol {
	case "http", "https":
		u, err := url.Parse(raw)
		if err != nil {
			return errors.New("git URL is not valid: " + redact.String(raw))
		}
		u.User = nil
		r.kind, r.url, r.remote = kindHTTP, u.String(), redact.URL(u)
	case "ssh":
		r.kind, r.url = kindSSH, raw
		r.sshUser, r.sshHost, r.sshPort = ep.User, ep.Host, ep.Port
		if r.sshUser == "" {
			r.sshUser = "git"
		}
		if r.sshPort == 0 {
			r.sshPort = 22
		}
		if u, err := url.Parse(raw); err == nil && u.Scheme == "ssh" {
			r.remote = redact.URL(u)
		} else {
			// scp-like user@host:path; the user name is not a secret
			// but is left out, as for other URLs.
			r.remote = ep.Host + ":" + ep.Path // an absolute path keeps its "/"
		}
	case "file":
		r.kind, r.url, r.remote = kindFile, raw, raw
	default:
		return fmt.Errorf("git URL %s: protocol %q is not supported; use https, ssh or file", redact.String(raw), ep.Protocol)
	}
	return nil
}

// objectCacheSize bounds the decoded objects the object store keeps (go-
// git's default is 96 MiB). A clone's checkout reads every blob once, so
// a large cache only holds memory; the delta bases that reading packs
// needs most fit in this.
const objectCacheSize = 16 * cache.MiByte

// openStorage returns the object store and worktree of the working copy.
// The store keeps its pack files open between reads (go-git's default
// opens and closes the pack for every object it reads, which cost most of
// the time of a tree diff); Close closes them.
func (r *Repo) openStorage() (*filesystem.Storage, billy.Filesystem) {
	r.closeStorage()
	wt := osfs.New(r.dir)
	dot, _ := wt.Chroot(".git")
	r.storage = filesystem.NewStorageWithOptions(dot, cache.NewObjectLRU(objectCacheSize), filesystem.Options{KeepDescriptors: true})
	r.objects = filepath.Join(r.dir, filepath.FromSlash(objectsDir))
	return r.storage, wt
}

// closeStorage closes the pack files the object store keeps open.
func (r *Repo) closeStorage() {
	if r.storage != nil {
		_ = r.storage.Close()
		r.storage = nil
	}
	r.lastDiff = nil
}

// Dir returns the root of the worktree.
func (r *Repo) Dir() string { return r.dir }

// Head returns the SHA of the tracked branch's remote head as last fetched
// (or as last pushed by Update).
func (r *Repo) Head() string { return r.head.String() }

// Branch returns the tracked branch, resolved from the remote's HEAD when
// Options.Branch was empty.
func (r *Repo) Branch() string { return r.branch }

// Close removes the working directory when Open created it as a temporary
// one; a Workdir given in Options stays for the next Open, its object
// store folded into a pack first when it has grown large (housekeep.go).
// A Workdir where a commit's files and objects could not be synced to
// disk is emptied instead, for the next Open to clone afresh.
func (r *Repo) Close() error {
	if r.discard != "" && !r.tempDir && r.dir != "" {
		r.closeStorage()
		r.log.Warn("emptying the working copy: "+r.discard+"; the next cycle clones afresh", "workdir", r.dir)
		return emptyDir(r.dir)
	}
	if !r.tempDir && r.storage != nil && r.store == nil {
		r.housekeep()
	}
	r.closeStorage()
	if !r.tempDir {
		return nil
	}
	if err := os.RemoveAll(r.dir); err != nil {
		return fmt.Errorf("removing temporary working directory: %w", err)
	}
	return nil
}

// noteSecret remembers a secret just read, under a name for what it is (a
// rotated secret replaces the old), so that error text can be scrubbed of
// it, in the forms a server may echo it in, should a transport ever do so.
func (r *Repo) noteSecret(name, s string) {
	r.secrets.Set(name, s)
}

// Cloned reports whether Open cloned the working copy afresh (a first
// cycle, a working copy of another URL, grown or damaged), rather than
// reusing it.
func (r *Repo) Cloned() bool { return r.cloned }

// timeout is the bound of a network operation op: Options.Timeout, or
// when it is not set DefaultCloneTimeout for a clone and DefaultTimeout
// for the rest.
func (r *Repo) timeout(op string) time.Duration {
	switch {
	case r.opts.Timeout > 0:
		return r.opts.Timeout
	case op == opClone:
		return DefaultCloneTimeout
	}
	return DefaultTimeout
}

// cloneRefsTimeout bounds the listing of the remote's refs before a clone
// when Options.Timeout is not set: DefaultTimeout, a variable for tests.
var cloneRefsTimeout = DefaultTimeout

// opClone is network's op for a clone.
const opClone = "cloning"

// netOpts are what one network operation passes to go-git.
type netOpts struct {
	auth  transport.AuthMethod
	proxy transport.ProxyOptions
}

// network runs one network operation with its own timeout and fresh
// credentials, and turns its error into one that names the remote and
// branch.
func (r *Repo) network(ctx context.Context, op, branch string, f func(ctx context.Context, o netOpts) error) error {
	return r.networkWithin(ctx, op, branch, r.timeout(op), f)
}

// networkWithin is network with the bound limit.
func (r *Repo) networkWithin(ctx context.Context, op, branch string, limit time.Duration, f func(ctx context.Context, o netOpts) error) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("%s %s: %w", op, r.remote, err)
	}
	auth, err := r.authMethod()
	if err != nil {
		return fmt.Errorf("%s %s: %w", op, r.remote, err)
	}
	tctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	tctx, moved := withRedirects(tctx)
	o := netOpts{auth: auth}
	if r.kind == kindSSH {
		var done func()
		o.proxy, done = sshProxy(tctx)
		defer done()
	}
	err = f(tctx, o)
	to, otherOrigin, redirected := moved.target()
	if redirected {
		r.log.Warn("the Git remote redirects to another URL, which go-git followed; set git.url to it", "op", op, "to", to)
	}
	if err == nil || errors.Is(err, git.NoErrAlreadyUpToDate) {
		return err
	}
	if redirected && isAuthError(err) {
		err = &redirectedError{to: to, otherOrigin: otherOrigin, err: err}
	}
	if hk := hostKeyError(auth, err); hk != nil {
		// Report the refused host key alone, whatever the SSH package
		// wrapped around it.
		err = hk
	}
	switch {
	case ctx.Err() != nil && !errors.Is(err, ctx.Err()):
		err = cancelledError(ctx, err)
	case tctx.Err() != nil && !errors.Is(err, tctx.Err()):
		// The connection was closed at the deadline; say so.
		err = fmt.Errorf("%w (%v)", tctx.Err(), err)
	}
	return r.netError(ctx, op, branch, limit, err)
}

// cancelledError is err, the error of a network operation that ctx's
// cancellation stopped, made to wrap ctx.Err(). An err that holds ctx's
// cause (net/http returns the cause, not context.Canceled) says so
// already, and keeps its text: "context canceled (... the cause)" would
// say it twice once the cause is read in its place, as commands does for
// a signal.
func cancelledError(ctx context.Context, err error) error {
	if cause := context.Cause(ctx); cause != ctx.Err() && errors.Is(err, cause) {
		return &causedError{ctxErr: ctx.Err(), err: err}
	}
	return fmt.Errorf("%w (%v)", ctx.Err(), err)
}

// causedError is an error that holds its context's cause, with the
// context's error beside it for errors.Is.
type causedError struct {
	ctxErr, err error
}

// Error returns the text of the error alone.
func (e *causedError) Error() string { return e.err.Error() }

// Unwrap returns the context's error and the error.
func (e *causedError) Unwrap() []error { return []error{e.ctxErr, e.err} }

// open resolves the branch and prepares the working copy.
func (r *Repo) open(ctx context.Context) error {
	if r.branch == "" {
		b, err := r.defaultBranch(ctx)
		if err != nil {
			return err
		}
		r.branch = b
		r.log.Debug("resolved the remote's default branch", "branch", b)
	}
	r.log = r.log.With("branch", r.branch)

	state, err := inspectDir(r.dir)
	if err != nil {
		return err
	}
	switch state {
	case dirForeign:
		return fmt.Errorf("workdir %s is not empty and holds no git repository; refusing to delete its files: "+
			"point the workdir at an empty or new folder, or, if imagebump made this one (an older imagebump stopped while it emptied it can leave it so), delete it", r.dir)
	case dirRepo:
		reason, routine, err := r.reuse(ctx)
		if err == nil {
			return nil
		}
		if reason == "" {
			return err
		}
		if routine {
			r.log.Info("re-cloning the working copy", "reason", reason, "workdir", r.dir)
		} else {
			// Damage: a disk, a killed process or a hand in .git; worth
			// a look when it comes back.
			r.log.Warn("re-cloning the working copy, which cannot be used as it is", "reason", reason, "workdir", r.dir)
		}
		r.closeStorage()
		r.repo = nil
		// A git command someone runs there may be writing objects: the
		// folder is emptied only once what it writes has settled.
		if err := r.waitYoungTemps(ctx); err != nil {
			return fmt.Errorf("re-cloning the working copy (%s): %w", reason, err)
		}
		r.discard = "" // what it was set for goes with the files
		if err := emptyDir(r.dir); err != nil {
			return err
		}
	}
	return r.clone(ctx)
}

// defaultBranch asks the remote which branch its HEAD points at.
func (r *Repo) defaultBranch(ctx context.Context) (string, error) {
	refs, err := r.listRemote(ctx, "listing the refs of", git.NewRemote(memory.NewStorage(), &config.RemoteConfig{Name: remoteName, URLs: []string{r.url}}), "HEAD")
	if err != nil {
		return "", err
	}
	for _, ref := range refs {
		if ref.Name() == plumbing.HEAD && ref.Type() == plumbing.SymbolicReference && ref.Target().IsBranch() {
			r.listed = refs
			return ref.Target().Short(), nil
		}
	}
	return "", fmt.Errorf("finding the default branch of %s: the remote's HEAD points at no branch: %w", r.remote, ErrBranchNotFound)
}

// branchIn returns where refs say branch points.
func branchIn(refs []*plumbing.Reference, branch string) (plumbing.Hash, bool) {
	want := plumbing.NewBranchReferenceName(branch)
	for _, ref := range refs {
		if ref.Name() == want && ref.Type() == plumbing.HashReference {
			return ref.Hash(), true
		}
	}
	return plumbing.ZeroHash, false
}

// listRemote returns the remote's refs (git ls-remote); op names the
// operation in errors.
func (r *Repo) listRemote(ctx context.Context, op string, remote *git.Remote, branch string) ([]*plumbing.Reference, error) {
	return r.listRemoteWithin(ctx, op, remote, branch, r.timeout(op))
}

// listRemoteWithin is listRemote bounded by limit.
func (r *Repo) listRemoteWithin(ctx context.Context, op string, remote *git.Remote, branch string, limit time.Duration) ([]*plumbing.Reference, error) {
	var refs []*plumbing.Reference
	err := r.networkWithin(ctx, op, branch, limit, func(ctx context.Context, o netOpts) error {
		var err error
		refs, err = remote.ListContext(ctx, &git.ListOptions{Auth: o.auth, ProxyOptions: o.proxy})
		return err
	})
	return refs, err
}

// dirState is what a workdir holds.
type dirState int

const (
	dirEmpty   dirState = iota // missing or empty
	dirRepo                    // has a .git entry
	dirForeign                 // other files and no .git
)

func inspectDir(dir string) (dirState, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return 0, fmt.Errorf("creating workdir: %w", err)
		}
		return dirEmpty, nil
	}
	if err != nil {
		return 0, fmt.Errorf("reading workdir: %w", err)
	}
	if len(entries) == 0 {
		return dirEmpty, nil
	}
	for _, e := range entries {
		if e.Name() == ".git" {
			return dirRepo, nil
		}
	}
	return dirForeign, nil
}

// emptyDir removes everything in dir but dir itself, which may be a mount
// point.
func emptyDir(dir string) error { return emptyDirBut(dir, "") }

// removeAll is os.RemoveAll; tests stop it part way.
var removeAll = os.RemoveAll

// emptyDirBut deletes everything in dir but the entry named keep, .git
// last, its record of the worktree's commit first: a process stopped
// half way leaves a folder that still holds a git repository, which the
// next Open checks whole and resets or clones afresh, not a folder of
// files it must refuse to delete (dirForeign).
func emptyDirBut(dir, keep string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("emptying workdir: %w", err)
	}
	gitDir := false
	if keep != ".git" {
		// Without the record of the commit the worktree holds, a
		// worktree half emptied is checked whole and reset, not
		// trusted.
		_ = os.Remove(filepath.Join(dir, ".git", resetStateFile))
	}
	for _, e := range entries {
		switch e.Name() {
		case keep:
			continue
		case ".git":
			gitDir = true
			continue
		}
		if err := removeAll(filepath.Join(dir, e.Name())); err != nil {
			return fmt.Errorf("emptying workdir: %w", err)
		}
	}
	if gitDir {
		if err := removeAll(filepath.Join(dir, ".git")); err != nil {
			return fmt.Errorf("emptying workdir: %w", err)
		}
	}
	return nil
}

func (r *Repo) branchRef() plumbing.ReferenceName { return plumbing.NewBranchReferenceName(r.branch) }

func (r *Repo) trackingRef(branch string) plumbing.ReferenceName {
	return plumbing.NewRemoteReferenceName(remoteName, branch)
}

// packedObjects returns how many objects the pack files hold, as their
// headers say; a file that cannot be read counts none.
func packedObjects(files []string) int64 {
	var n int64
	var h [12]byte
	for _, name := range files {
		f, err := os.Open(name)
		if err != nil {
			continue
		}
		if _, err := io.ReadFull(f, h[:]); err == nil && string(h[:4]) == "PACK" {
			n += int64(binary.BigEndian.Uint32(h[8:]))
		}
		f.Close()
	}
	return n
}

// recordCloneObjects writes how many objects the packs a clone brought
// hold into cloneObjectsFile. Without it, the next Open records what it
// finds.
func (r *Repo) recordCloneObjects() {
	packs, _ := filepath.Glob(filepath.Join(r.dir, ".git", "objects", "pack", "*.pack"))
	r.writeCloneObjects(packedObjects(packs))
}

// writeCloneObjects writes n into cloneObjectsFile.
func (r *Repo) writeCloneObjects(n int64) {
	_ = os.WriteFile(filepath.Join(r.dir, ".git", cloneObjectsFile), []byte(strconv.FormatInt(n, 10)+"\n"), 0o644)
}

// storeGrown returns why the working copy, whose pack files are packs,
// should be cloned afresh for the history it has collected, or "". A
// working copy without a readable cloneObjectsFile (one cloned before it
// existed) is measured from now on. Loose objects are not counted: a fold
// packs them once there are about looseLimit.
func (r *Repo) storeGrown(packs []string) string {
	now := packedObjects(packs)
	b, err := os.ReadFile(filepath.Join(r.dir, ".git", cloneObjectsFile))
	cloned, perr := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil || perr != nil || cloned < 0 {
		r.writeCloneObjects(now)
		return ""
	}
	if now <= 2*cloned+grownExtra {
		return ""
	}
	return fmt.Sprintf("its packs hold %d objects, more than twice the %d it was cloned with plus %d: the history it has collected, which nothing prunes", now, cloned, grownExtra)
}

// clone clones the tracked branch into the (empty) working directory.
func (r *Repo) clone(ctx context.Context) error {
	start := time.Now()
	if r.opts.Timeout <= 0 && r.listed == nil {
		// A clone gets DefaultCloneTimeout to bring a large repository
		// over a slow link, but a server that answers nothing must not
		// hold it (and serve's slot) that long: the refs a clone asks
		// for first come within DefaultTimeout, as any operation's.
		remote := git.NewRemote(memory.NewStorage(), &config.RemoteConfig{Name: remoteName, URLs: []string{r.url}})
		if _, err := r.listRemoteWithin(ctx, opClone, remote, r.branch, cloneRefsTimeout); err != nil {
			return err
		}
	}
	err := r.network(ctx, opClone, r.branch, func(ctx context.Context, o netOpts) error {
		sto, wt := r.openStorage()
		repo, err := git.CloneContext(ctx, sto, wt, &git.CloneOptions{
			URL:           r.url,
			Auth:          o.auth,
			ProxyOptions:  o.proxy,
			RemoteName:    remoteName,
			ReferenceName: r.branchRef(),
			SingleBranch:  true,
			Depth:         r.opts.Depth,
			Tags:          git.NoTags,
			// The worktree is written below: go-git's checkout of 50,000
			// files took most of a minute and 170 MB.
			NoCheckout: true,
		})
		r.repo = repo
		return err
	})
	if err != nil {
		r.closeStorage()
		r.repo = nil
		// A failed clone may leave a partial .git; the next Open would
		// find it damaged and clone again, but leave nothing behind.
		_ = emptyDir(r.dir)
		return err
	}
	ref, err := r.repo.Reference(r.trackingRef(r.branch), true)
	if err != nil {
		return fmt.Errorf("reading the cloned head of %s branch %q: %w", r.remote, r.branch, err)
	}
	r.head = ref.Hash()
	fetched := time.Since(start)
	if err := r.checkoutAll(r.head); err != nil {
		if errors.Is(err, errBadTree) {
			// The clone is sound, its head is not: keep its objects, so
			// that the next Open fetches what the remote has since
			// rather than cloning again each cycle until the commit is
			// fixed. With an empty index and no state file, that Open
			// writes the whole worktree.
			r.recordCloneObjects()
			if emptyDirBut(r.dir, ".git") != nil || writeIndexFile(r.indexPath(), (&rawIndex{version: 2}).patch(nil)) != nil {
				_ = emptyDir(r.dir)
			}
		} else {
			_ = emptyDir(r.dir)
		}
		if r.unwritable(err) {
			return fmt.Errorf("checking out the clone of %s: %s: %w", r.remote, r.unwritableHint(err), err)
		}
		return fmt.Errorf("checking out the clone of %s: %w", r.remote, err)
	}
	r.dirty, r.verified, r.cloned = false, true, true
	r.recordCloneObjects()
	r.markNamesChecked()
	r.log.Info("cloned", "fetch", fetched.Round(time.Millisecond), "head", r.head.String(), "depth", r.opts.Depth, "duration", time.Since(start).Round(time.Millisecond))
	return nil
}

// reuse fetches into an existing working copy and resets it to the remote
// head. When it fails because the working copy cannot be used, reason
// says why and the caller clones afresh; network and auth failures return
// an empty reason, since a new clone would fail the same way, and so does
// a lock a running git command holds there (leftover.go), since a clone
// would pull the folder from under it.
func (r *Repo) reuse(ctx context.Context) (reason string, routine bool, err error) {
	start := time.Now()
	if err := r.removeLeftLocks(ctx); err != nil {
		return "", false, err
	}
	repo, reason, routine := r.openExisting()
	if reason != "" {
		return reason, routine, errors.New(reason)
	}
	r.repo = repo
	if err := r.fetch(ctx); err != nil {
		if isLocalDamage(err) {
			return "fetching failed on the local object store: " + err.Error(), false, err
		}
		return "", false, err
	}
	if err := r.resetIfNeeded(); err != nil {
		switch {
		case errors.Is(err, errBadTree):
			// A clone would refuse the same commit.
			return "", false, err
		case r.unwritable(err):
			// Nothing is damaged, and a clone would fail the same way:
			// the next Open resets the worktree (its state file is gone).
			return "", false, fmt.Errorf("moving the worktree to %s: %s: %w", shortHash(r.head), r.unwritableHint(err), err)
		case errors.As(err, new(*lockHeldError)):
			// A git command took the index's lock since
			// removeLeftLocks looked: emptying the folder under it
			// for a clone would pull its files away too. The next
			// Open looks again.
			return "", false, fmt.Errorf("moving the worktree to %s: %w", shortHash(r.head), err)
		}
		return "resetting the worktree failed: " + err.Error(), false, err
	}
	if err := r.checkNamesOnce(); err != nil {
		if errors.Is(err, errBadTree) {
			return "", false, err
		}
		return "checking the worktree's names failed: " + err.Error(), false, err
	}
	r.log.Debug("reused the working copy", "head", r.head.String(), "duration", time.Since(start).Round(time.Millisecond))
	return "", false, nil
}

// openExisting opens the working copy and checks that it is a usable
// clone of the configured URL. It returns why not, or "", and whether the
// new clone is routine (housekeeping, or a config naming another URL)
// rather than a repair of a damaged working copy.
func (r *Repo) openExisting() (*git.Repository, string, bool) {
	// What a killed cycle left (leftover.go): locks are dealt with by
	// reuse, which can wait; the parts of packs go here.
	packs := r.removeLeftParts(filepath.Join(r.dir, ".git", "objects", "pack"))
	if len(packs) > maxPacks {
		return nil, fmt.Sprintf("it has collected %d pack files", len(packs)), true
	}
	if reason := r.storeGrown(packs); reason != "" {
		return nil, reason, true
	}
	if _, err := os.Stat(filepath.Join(r.dir, ".git", "config")); err != nil {
		return nil, "opening it failed: " + err.Error(), false
	}
	sto, wt := r.openStorage()
	repo, err := git.Open(sto, wt)
	if err != nil {
		r.closeStorage()
		return nil, "opening it failed: " + err.Error(), false
	}
	cfg, err := repo.Config()
	if err != nil {
		return nil, "reading its config failed: " + err.Error(), false
	}
	rc, ok := cfg.Remotes[remoteName]
	if !ok || len(rc.URLs) == 0 {
		return nil, "it has no remote " + remoteName, false
	}
	if rc.URLs[0] != r.url {
		return nil, "it is a clone of another URL", true
	}
	if _, err := repo.Worktree(); err != nil {
		return nil, "it has no worktree: " + err.Error(), false
	}
	head, err := repo.Head()
	if err != nil {
		return nil, "its HEAD cannot be resolved: " + err.Error(), false
	}
	// A bump commit's message can list thousands of files: it is read
	// whole and checked against its name only when the state file does
	// not record it (one recorded was checked whole when it was, or made
	// here); the tree itself is read below. readStateFile gives the zero
	// state for a file missing or damaged.
	st, _, _ := readStateFile(r.dir)
	tree, err := commitTree(repo, r.objects, head.Hash(), st.at == head.Hash())
	if err != nil {
		return nil, "its HEAD commit cannot be read: " + err.Error(), false
	}
	r.trees = map[plumbing.Hash]plumbing.Hash{head.Hash(): tree}
	if _, err := treeObject(repo, r.objects, tree); err != nil {
		return nil, "its HEAD tree cannot be read: " + err.Error(), false
	}
	if err := checkIndex(r.dir, st.sum); errors.Is(err, errIndexFormat) {
		// A format the fast reader does not patch: go-git's reader
		// checks it, and the next commit resets the worktree whole.
		if _, err := repo.Storer.Index(); err != nil {
			return nil, "its index cannot be read: " + err.Error(), false
		}
	} else if err != nil {
		return nil, "its index cannot be read: " + err.Error(), false
	}
	return repo, "", false
}

// isLocalDamage reports whether a fetch error comes from the local object
// store rather than from the network or the remote.
func isLocalDamage(err error) bool {
	return errors.Is(err, plumbing.ErrObjectNotFound) || errors.Is(err, plumbing.ErrInvalidType)
}

// deepens reports whether a fetch may deepen a shallow working copy (a
// depth other than 1): go-git's fetch then asks for the head even when it
// has it, and so does fetch.
func (r *Repo) deepens() bool {
	if r.opts.Depth == 1 {
		return false
	}
	shallow, _ := r.repo.Storer.Shallow()
	return len(shallow) > 0
}

// fetch updates the remote-tracking ref of the tracked branch and r.head.
func (r *Repo) fetch(ctx context.Context) error {
	// go-git's fetch reads every object the remote's refs name to see
	// whether it has it, and a bump commit with a long message is slow
	// to read: when the remote's branch is where it was fetched last and
	// the commit is in the store, that one request is all a fetch does.
	h, fetched, err := r.fetchKnown(ctx)
	if err != nil {
		return err
	}
	if !fetched {
		if h, err = r.fetchBranch(ctx, r.branch, r.opts.Depth); err != nil {
			return err
		}
	}
	if h != r.head {
		r.log.Debug("fetched", "head", h.String())
	}
	r.head = h
	return nil
}

// fetchKnown is the fetch of a working copy that holds the commit its
// tracking ref names: one request when the remote's branch has not moved,
// a thin fetch (shallow copies, http and ssh: in the same session) when
// it has. It reports fetched false when fetchBranch is to do the fetch.
func (r *Repo) fetchKnown(ctx context.Context) (h plumbing.Hash, fetched bool, err error) {
	tracked, err := r.repo.Reference(r.trackingRef(r.branch), true)
	if err != nil || r.deepens() || !hasObject(r.repo, r.objects, tracked.Hash()) {
		return plumbing.ZeroHash, false, nil
	}
	listed := r.listed
	r.listed = nil // for this fetch only: a later one (after a push race) asks again
	if h, ok := branchIn(listed, r.branch); ok && h == tracked.Hash() {
		// Listed a moment ago, to find the default branch: where it was.
		r.head = h
		return h, true, nil
	}
	if r.opts.Depth == 1 {
		h, err = r.fetchThin(ctx, r.branch, tracked.Hash())
		var se *thinStoreError
		switch {
		case err == nil:
			if h == tracked.Hash() {
				r.head = h // nothing fetched, nothing to log
			}
			return h, true, nil
		case errors.As(err, &se):
			r.log.Warn("the fetched objects could not be stored as they came; fetching the whole tree", "err", err)
			return plumbing.ZeroHash, false, nil
		case !errors.Is(err, errThinUnsupported):
			return plumbing.ZeroHash, false, err
		}
	}
	// A remote served in-process, a deeper history, or a branch the thin
	// fetch did not find: list it, and let fetchBranch say what it finds.
	remote, err := r.repo.Remote(remoteName)
	if err != nil {
		return plumbing.ZeroHash, false, err
	}
	h, err = r.lsBranch(ctx, "fetching", remote, r.branch)
	if err != nil || h != tracked.Hash() {
		return plumbing.ZeroHash, false, err
	}
	r.head = h
	return h, true, nil
}

// fetchBranch fetches the remote's branch into its remote-tracking ref,
// depth commits deep (0: all), and returns where the ref points.
func (r *Repo) fetchBranch(ctx context.Context, branch string, depth int) (plumbing.Hash, error) {
	spec := config.RefSpec(fmt.Sprintf("+%s:%s", plumbing.NewBranchReferenceName(branch), r.trackingRef(branch)))
	err := r.network(ctx, "fetching", branch, func(ctx context.Context, o netOpts) error {
		return r.repo.FetchContext(ctx, &git.FetchOptions{
			RemoteName:   remoteName,
			RefSpecs:     []config.RefSpec{spec},
			Depth:        depth,
			Auth:         o.auth,
			ProxyOptions: o.proxy,
			Tags:         git.NoTags,
			Force:        true,
		})
	})
	switch {
	case err == nil && depth > 0:
		// go-git added the new boundary to the shallow list and kept
		// every old one; a list left long is only a cost.
		if err := r.pruneShallow(); err != nil {
			r.log.Warn("could not prune the shallow list after the fetch; it is tried again after the next one", "err", err)
		}
	case err != nil && !errors.Is(err, git.NoErrAlreadyUpToDate):
		return plumbing.ZeroHash, err
	}
	ref, err := r.repo.Reference(r.trackingRef(branch), true)
	if err != nil {
		return plumbing.ZeroHash, fmt.Errorf("reading the fetched head of %s branch %q: %w", r.remote, branch, err)
	}
	return ref.Hash(), nil
}
