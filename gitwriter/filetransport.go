package gitwriter

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/go-git/go-billy/v5"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/format/packfile"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp/capability"
	"github.com/go-git/go-git/v5/plumbing/storer"
	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-git/go-git/v5/plumbing/transport/client"
	"github.com/go-git/go-git/v5/storage"
	"github.com/go-git/go-git/v5/storage/filesystem"
	"github.com/go-git/go-git/v5/utils/ioutil"
)

// go-git's own file:// transport runs git-upload-pack and git-receive-pack,
// so a container image would need git (and perl) for file:// remotes only.
// go-git's in-process server (plumbing/transport/server) cannot stand in
// for it: it refuses shallow requests, opens a non-bare repository's
// worktree as if it were its .git, and updates refs without comparing
// their old value, so a concurrent writer would be overwritten. The
// transport below serves file:// remotes in process with go-git's object
// store, packfile encoder and ref storage, and adds what gitwriter needs:
// depth-limited fetches with shallow updates, and ref updates that fail
// when the ref moved since it was advertised.
//
// It is installed for the whole process, because go-git picks transports
// by URL scheme from one global table; gitwriter is the only user of
// go-git in imagebump. Server-side hooks of a file:// remote do not run.

// init installs the in-process transport before any goroutine can read
// go-git's transport table, which has no lock.
func init() {
	client.InstallProtocol("file", fileTransport{})
}

// fileTransport serves file:// remotes from the local file system.
type fileTransport struct{}

var _ transport.Transport = fileTransport{}

// NewUploadPackSession implements transport.Transport (fetch, clone, ls-remote).
func (fileTransport) NewUploadPackSession(ep *transport.Endpoint, _ transport.AuthMethod) (transport.UploadPackSession, error) {
	repo, err := openLocal(ep)
	if err != nil {
		return nil, err
	}
	return &uploadSession{localSession{repo: repo}}, nil
}

// NewReceivePackSession implements transport.Transport (push).
func (fileTransport) NewReceivePackSession(ep *transport.Endpoint, _ transport.AuthMethod) (transport.ReceivePackSession, error) {
	repo, err := openLocal(ep)
	if err != nil {
		return nil, err
	}
	return &receiveSession{localSession: localSession{repo: repo}}, nil
}

// openLocal opens the repository at the endpoint's path, bare or not.
func openLocal(ep *transport.Endpoint) (*git.Repository, error) {
	path := filepath.FromSlash(ep.Path)
	repo, err := git.PlainOpenWithOptions(path, &git.PlainOpenOptions{EnableDotGitCommonDir: true})
	if err != nil {
		if errors.Is(err, git.ErrRepositoryNotExists) {
			return nil, transport.ErrRepositoryNotFound
		}
		return nil, fmt.Errorf("opening the repository at %s: %w", path, err)
	}
	// Reopen the same folders with the ref locks of other writers hidden.
	sto, ok := repo.Storer.(*filesystem.Storage)
	if !ok {
		return repo, nil
	}
	var wt billy.Filesystem
	if w, err := repo.Worktree(); err == nil {
		wt = w.Filesystem
	}
	return git.Open(filesystem.NewStorage(hideRefLocks{sto.Filesystem()}, cache.NewObjectLRUDefault()), wt)
}

// hideRefLocks hides the lock files of refs being written (<ref>.lock)
// from go-git's listing of refs, as git's own listing does: go-git reads
// every file under refs/ as a ref, and fails on a lock git has just
// created ("ref file is empty") or lists it as a ref named ….lock.
type hideRefLocks struct{ billy.Filesystem }

// ReadDir implements billy.Dir.
func (fs hideRefLocks) ReadDir(path string) ([]os.FileInfo, error) {
	list, err := fs.Filesystem.ReadDir(path)
	return slices.DeleteFunc(list, func(fi os.FileInfo) bool {
		return !fi.IsDir() && strings.HasSuffix(fi.Name(), ".lock")
	}), err
}

// Capabilities implements billy.Capable with the wrapped file system's.
func (fs hideRefLocks) Capabilities() billy.Capability { return billy.Capabilities(fs.Filesystem) }

// localSession is what both sessions share: the opened repository and the
// capabilities agreed on.
type localSession struct {
	repo *git.Repository
	caps *capability.List
}

// Close implements transport.Session.
func (s *localSession) Close() error { return nil }

// advertise lists the repository's refs with caps, as git does: every
// hash ref, and HEAD as a symbolic ref when it is one.
func (s *localSession) advertise(caps ...capability.Capability) (*packp.AdvRefs, error) {
	ar := packp.NewAdvRefs()
	for _, c := range caps {
		if err := ar.Capabilities.Set(c); err != nil {
			return nil, err
		}
	}
	if err := ar.Capabilities.Set(capability.Agent, capability.DefaultAgent()); err != nil {
		return nil, err
	}
	s.caps = ar.Capabilities
	refs, err := s.repo.Storer.IterReferences()
	if err != nil {
		return nil, fmt.Errorf("listing refs: %w", err)
	}
	err = refs.ForEach(func(ref *plumbing.Reference) error {
		if ref.Type() == plumbing.HashReference {
			ar.References[ref.Name().String()] = ref.Hash()
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("listing refs: %w", err)
	}
	head, err := s.repo.Storer.Reference(plumbing.HEAD)
	switch {
	case errors.Is(err, plumbing.ErrReferenceNotFound):
		return ar, nil
	case err != nil:
		return nil, fmt.Errorf("reading HEAD: %w", err)
	}
	if head.Type() == plumbing.SymbolicReference {
		if err := ar.AddReference(head); err != nil {
			return nil, err
		}
		head, err = storer.ResolveReference(s.repo.Storer, head.Target())
		if errors.Is(err, plumbing.ErrReferenceNotFound) {
			return ar, nil // HEAD names an unborn branch
		}
		if err != nil {
			return nil, fmt.Errorf("resolving HEAD: %w", err)
		}
	}
	h := head.Hash()
	ar.Head = &h
	return ar, nil
}

// checkCaps refuses capabilities that were not advertised.
func (s *localSession) checkCaps(requested *capability.List) error {
	for _, c := range requested.All() {
		if !s.caps.Supports(c) {
			return fmt.Errorf("unsupported capability %s", c)
		}
	}
	return nil
}

// uploadSession serves a fetch: the refs, then a pack of what the client
// lacks, limited to the requested depth.
type uploadSession struct {
	localSession
}

var _ transport.UploadPackSession = (*uploadSession)(nil)

// AdvertisedReferences implements transport.Session.
func (s *uploadSession) AdvertisedReferences() (*packp.AdvRefs, error) {
	return s.AdvertisedReferencesContext(context.Background())
}

// AdvertisedReferencesContext implements transport.Session. A repository
// without refs is transport.ErrEmptyRemoteRepository, as go-git's other
// transports say.
func (s *uploadSession) AdvertisedReferencesContext(context.Context) (*packp.AdvRefs, error) {
	ar, err := s.advertise(capability.OFSDelta, capability.Shallow)
	if err != nil {
		return nil, err
	}
	if len(ar.References) == 0 && ar.Head == nil {
		return nil, transport.ErrEmptyRemoteRepository
	}
	return ar, nil
}

// UploadPack implements transport.UploadPackSession.
func (s *uploadSession) UploadPack(ctx context.Context, req *packp.UploadPackRequest) (*packp.UploadPackResponse, error) {
	if req.IsEmpty() {
		return nil, transport.ErrEmptyUploadPackRequest
	}
	if err := req.Validate(); err != nil {
		return nil, err
	}
	if s.caps == nil {
		if _, err := s.AdvertisedReferencesContext(ctx); err != nil {
			return nil, err
		}
	}
	if err := s.checkCaps(req.Capabilities); err != nil {
		return nil, err
	}
	depth := 0
	switch d := req.Depth.(type) {
	case nil:
	case packp.DepthCommits:
		depth = int(d)
	default:
		return nil, fmt.Errorf("depth %T is not supported by the in-process file transport", req.Depth)
	}
	p := packer{sto: s.repo.Storer, have: map[plumbing.Hash]bool{}, send: map[plumbing.Hash]bool{}}
	if err := p.markHaves(req.Haves, req.Shallows); err != nil {
		return nil, err
	}
	shallows, err := p.collect(req.Wants, depth)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}

	pr, pw := io.Pipe()
	go func() {
		// The goroutine ends when the pack is written or the reader is
		// closed: the client closes it when done or when ctx ends. Both
		// ends are on one machine: deltas would save no transfer, and
		// searching for them cost most of a 50,000-file clone.
		_, err := packfile.NewEncoder(pw, s.repo.Storer, false).Encode(p.order, 0)
		pw.CloseWithError(err)
	}()
	resp := packp.NewUploadPackResponseWithPackfile(req, ioutil.NewContextReadCloser(ctx, pr))
	resp.ShallowUpdate.Shallows = shallows
	return resp, nil
}

// packer works out which objects a fetch sends.
type packer struct {
	sto   storer.EncodedObjectStorer
	have  map[plumbing.Hash]bool // objects the client has
	send  map[plumbing.Hash]bool
	order []plumbing.Hash
}

// markHaves records what the client holds: the commits it named, their
// trees, and their ancestors down to its shallow boundary (the parents of
// a shallow commit are not in the client). Haves the remote does not know
// are the client's own and are skipped.
func (p *packer) markHaves(haves, clientShallows []plumbing.Hash) error {
	boundary := map[plumbing.Hash]bool{}
	for _, h := range clientShallows {
		boundary[h] = true
	}
	stack := append([]plumbing.Hash(nil), haves...)
	for len(stack) > 0 {
		h := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if p.have[h] {
			continue
		}
		c, err := object.GetCommit(p.sto, h)
		if errors.Is(err, plumbing.ErrObjectNotFound) {
			continue
		}
		if err != nil {
			return fmt.Errorf("reading commit %s: %w", h, err)
		}
		p.have[h] = true
		if err := p.walkTree(c.TreeHash, p.isHave, p.markHave); err != nil {
			return err
		}
		if !boundary[h] {
			stack = append(stack, c.ParentHashes...)
		}
	}
	return nil
}

// collect marks the objects reachable from wants that the client lacks,
// walking at most depth commits from each want (0: no limit), and returns
// the commits at the depth limit: the client's new shallow boundary.
func (p *packer) collect(wants []plumbing.Hash, depth int) ([]plumbing.Hash, error) {
	type item struct {
		h     plumbing.Hash
		depth int
	}
	var shallows []plumbing.Hash
	queue := make([]item, 0, len(wants))
	for _, w := range wants {
		queue = append(queue, item{w, 1})
	}
	seen := map[plumbing.Hash]bool{}
	for len(queue) > 0 {
		it := queue[0]
		queue = queue[1:]
		if seen[it.h] || p.have[it.h] {
			continue
		}
		seen[it.h] = true
		obj, err := p.sto.EncodedObject(plumbing.AnyObject, it.h)
		if err != nil {
			return nil, fmt.Errorf("want %s: %w", it.h, err)
		}
		switch obj.Type() {
		case plumbing.TagObject:
			t, err := object.DecodeTag(p.sto, obj)
			if err != nil {
				return nil, fmt.Errorf("reading tag %s: %w", it.h, err)
			}
			p.add(it.h)
			queue = append(queue, item{t.Target, it.depth})
		case plumbing.CommitObject:
			c, err := object.DecodeCommit(p.sto, obj)
			if err != nil {
				return nil, fmt.Errorf("reading commit %s: %w", it.h, err)
			}
			p.add(it.h)
			if err := p.walkTree(c.TreeHash, p.isKnown, p.add); err != nil {
				return nil, err
			}
			if depth > 0 && it.depth >= depth {
				// git marks every commit at the depth limit shallow,
				// a root commit too.
				shallows = append(shallows, it.h)
				continue
			}
			for _, parent := range c.ParentHashes {
				queue = append(queue, item{parent, it.depth + 1})
			}
		case plumbing.TreeObject:
			if err := p.walkTree(it.h, p.isKnown, p.add); err != nil {
				return nil, err
			}
		default:
			p.add(it.h)
		}
	}
	return shallows, nil
}

// add queues one object for the pack.
func (p *packer) add(h plumbing.Hash) {
	if !p.send[h] {
		p.send[h] = true
		p.order = append(p.order, h)
	}
}

// walkTree marks a tree and everything in it, skipping what known holds
// (with its content) and submodule commits, which live in another
// repository.
func (p *packer) walkTree(root plumbing.Hash, known func(plumbing.Hash) bool, mark func(plumbing.Hash)) error {
	stack := []plumbing.Hash{root}
	for len(stack) > 0 {
		h := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if known(h) {
			continue
		}
		t, err := object.GetTree(p.sto, h)
		if err != nil {
			return fmt.Errorf("reading tree %s: %w", h, err)
		}
		mark(h)
		for _, e := range t.Entries {
			switch {
			case e.Mode == filemode.Submodule:
			case e.Mode == filemode.Dir:
				stack = append(stack, e.Hash)
			case !known(e.Hash):
				mark(e.Hash)
			}
		}
	}
	return nil
}

// markHave and isHave record and look up what the client holds.
func (p *packer) markHave(h plumbing.Hash)     { p.have[h] = true }
func (p *packer) isHave(h plumbing.Hash) bool  { return p.have[h] }
func (p *packer) isKnown(h plumbing.Hash) bool { return p.have[h] || p.send[h] }

// receiveSession serves a push: the refs, then a pack and ref updates,
// each applied only if the ref still holds the value the client saw.
type receiveSession struct {
	localSession
}

var _ transport.ReceivePackSession = (*receiveSession)(nil)

// AdvertisedReferences implements transport.Session.
func (s *receiveSession) AdvertisedReferences() (*packp.AdvRefs, error) {
	return s.AdvertisedReferencesContext(context.Background())
}

// AdvertisedReferencesContext implements transport.Session; an empty
// repository can be pushed to.
func (s *receiveSession) AdvertisedReferencesContext(context.Context) (*packp.AdvRefs, error) {
	return s.advertise(capability.OFSDelta, capability.ReportStatus)
}

// ReceivePack implements transport.ReceivePackSession.
func (s *receiveSession) ReceivePack(ctx context.Context, req *packp.ReferenceUpdateRequest) (*packp.ReportStatus, error) {
	if s.caps == nil {
		if _, err := s.AdvertisedReferencesContext(ctx); err != nil {
			return nil, err
		}
	}
	if err := s.checkCaps(req.Capabilities); err != nil {
		return nil, err
	}
	rs := packp.NewReportStatus()
	rs.UnpackStatus = "ok"
	if req.Packfile != nil {
		r := ioutil.NewContextReadCloser(ctx, req.Packfile)
		packs := s.packFiles()
		err := packfile.UpdateObjectStorage(s.repo.Storer, r)
		_ = r.Close()
		if err != nil {
			rs.UnpackStatus = err.Error()
			return rs, fmt.Errorf("unpacking the pushed objects: %w", err)
		}
		for p := range s.packFiles() {
			if !packs[p] {
				shareFile(p, 0o444)
			}
		}
	}
	checkedOut := s.checkedOutBranches()
	var first error
	for _, cmd := range req.Commands {
		err := s.update(cmd, checkedOut)
		status := "ok"
		if err != nil {
			status = err.Error()
			if first == nil {
				first = fmt.Errorf("remote rejected %s: %w", cmd.Name, err)
			}
		}
		rs.CommandStatuses = append(rs.CommandStatuses, &packp.CommandStatus{ReferenceName: cmd.Name, Status: status})
	}
	return rs, first
}

// errCheckedOut refuses, as git's receive.denyCurrentBranch does by
// default, to move a branch a worktree of the remote has checked out.
var errCheckedOut = errors.New("refusing to update the checked out branch of a non-bare repository (or of one of its worktrees)")

// checkedOutBranches returns the branches a worktree of the repository
// has checked out, as git's receive.denyCurrentBranch counts them: the
// opened worktree's; the main worktree's, unless the repository is bare
// (also when the remote is named by its .git folder or by a linked
// worktree); and each linked worktree's (.git/worktrees/NAME) that
// `git worktree add` made. A branch a worktree is rebasing or bisecting
// counts too, though its HEAD is detached.
func (s *receiveSession) checkedOutBranches() map[plumbing.ReferenceName]bool {
	out := map[plumbing.ReferenceName]bool{}
	if _, err := s.repo.Worktree(); err == nil {
		if head, err := s.repo.Storer.Reference(plumbing.HEAD); err == nil && head.Type() == plumbing.SymbolicReference {
			out[head.Target()] = true
		}
	}
	sto, ok := s.repo.Storer.(interface{ Filesystem() billy.Filesystem })
	if !ok {
		return out
	}
	dot := sto.Filesystem().Root()
	common := dot
	if b, err := os.ReadFile(filepath.Join(dot, "commondir")); err == nil {
		if c := strings.TrimSpace(string(b)); filepath.IsAbs(c) {
			common = c
		} else {
			common = filepath.Join(dot, c)
		}
	}
	var gitDirs []string
	if cfg, err := s.repo.Config(); err == nil && !cfg.Core.IsBare {
		gitDirs = append(gitDirs, common)
	}
	list, _ := os.ReadDir(filepath.Join(common, "worktrees"))
	for _, e := range list {
		if e.IsDir() {
			gitDirs = append(gitDirs, filepath.Join(common, "worktrees", e.Name()))
		}
	}
	for _, dir := range gitDirs {
		read := func(name string) string {
			b, err := os.ReadFile(filepath.Join(dir, name))
			if err != nil || len(b) > 1024 {
				return ""
			}
			return strings.TrimSpace(string(b))
		}
		if target, ok := strings.CutPrefix(read("HEAD"), "ref: "); ok {
			out[plumbing.ReferenceName(target)] = true
		}
		for _, f := range []string{"rebase-merge/head-name", "rebase-apply/head-name"} {
			if name := read(f); strings.HasPrefix(name, "refs/heads/") {
				out[plumbing.ReferenceName(name)] = true
			}
		}
		// BISECT_START holds the branch bisecting started from, short.
		if name := read("BISECT_START"); name != "" && !plumbing.IsHash(name) {
			out[plumbing.NewBranchReferenceName(name)] = true
		}
	}
	return out
}

// update applies one ref command if the ref still holds cmd.Old. It
// takes the ref's lock as git does, by creating <ref>.lock exclusively,
// so that git and other imagebump processes writing the same repository
// wait their turn; and it writes the new value into the lock file and
// renames it over the ref, so that a reader (git, or a fetch) sees the
// old value or the new one, never an empty or partial file. go-git's own
// ref writer truncates the ref in place under a lock git does not know.
//
// As git does, it refuses a name that clashes with an existing ref
// (refs/heads/a against refs/heads/a/b), and it moves no symbolic ref.
// Deletes are refused: imagebump never sends one, and go-git's removal
// ignores git's packed-refs lock.
func (s *receiveSession) update(cmd *packp.Command, checkedOut map[plumbing.ReferenceName]bool) error {
	if checkedOut[cmd.Name] {
		return errCheckedOut
	}
	if !cmd.Name.IsSafe() || !strings.HasPrefix(cmd.Name.String(), "refs/") {
		return fmt.Errorf("%q is not a ref under refs/", cmd.Name)
	}
	if err := cmd.Name.Validate(); err != nil {
		return fmt.Errorf("%q: %w", cmd.Name, err)
	}
	if cmd.Action() == packp.Delete {
		return errors.New("deleting a ref is not supported by imagebump's file:// transport")
	}
	if !s.hasObject(cmd.New) {
		return fmt.Errorf("missing object %s", cmd.New)
	}
	fs, ok := s.repo.Storer.(interface{ Filesystem() billy.Filesystem })
	if !ok {
		return fmt.Errorf("the repository is not stored in files")
	}
	if err := s.nameFree(cmd.Name); err != nil {
		return err
	}
	lock, err := lockRef(fs.Filesystem(), cmd.Name)
	if err != nil {
		return err
	}
	defer lock.release()
	var cur plumbing.Hash
	switch ref, err := s.repo.Storer.Reference(cmd.Name); {
	case errors.Is(err, plumbing.ErrReferenceNotFound):
	case err != nil:
		return err
	case ref.Type() != plumbing.HashReference:
		return fmt.Errorf("%s is a symbolic ref to %s, which imagebump does not move", cmd.Name, ref.Target())
	default:
		cur = ref.Hash()
	}
	if cur != cmd.Old {
		return storage.ErrReferenceHasChanged
	}
	if err := lock.commit(cmd.New); err != nil {
		return err
	}
	p := filepath.Join(fs.Filesystem().Root(), filepath.FromSlash(cmd.Name.String()))
	shareFile(p, 0o666)
	return nil
}

// go-git writes a pushed pack at mode 0600 (and its index at 0644),
// whatever the umask and core.sharedRepository say, so the repository's
// other users (a git daemon, a web viewer, Flux reading it by path) could
// not read the commit.
// Git gives an object file read, and a ref read and write, to whoever its
// folder gives them to: the usual umask gives 0444 and 0644, a folder
// shared with its group (core.sharedRepository=group, 2775) 0444 and 0664.
// imagebump does the same, from the folder's own permissions.

// packFiles returns the paths of the repository's pack files.
func (s *receiveSession) packFiles() map[string]bool {
	out := map[string]bool{}
	sto, ok := s.repo.Storer.(interface{ Filesystem() billy.Filesystem })
	if !ok {
		return out
	}
	dir := filepath.Join(sto.Filesystem().Root(), "objects", "pack")
	list, _ := os.ReadDir(dir)
	for _, e := range list {
		if strings.HasPrefix(e.Name(), "pack-") {
			out[filepath.Join(dir, e.Name())] = true
		}
	}
	return out
}

// shareFile sets the file at p to the bits of base its folder grants:
// read where the folder may be read, write where it may be written. A
// failure (another user's file) leaves it as it is.
func shareFile(p string, base os.FileMode) {
	d, err := os.Stat(filepath.Dir(p))
	if err != nil {
		return
	}
	dir := d.Mode().Perm()
	want := base & (dir&0o444 | dir&0o222)
	if f, err := os.Stat(p); err == nil && f.Mode().Perm() != want {
		_ = os.Chmod(p, want)
	}
}

// nameFree refuses name when a ref exists at one of its parent paths or
// under it, loose or packed: git cannot hold both.
func (s *receiveSession) nameFree(name plumbing.ReferenceName) error {
	refs, err := s.repo.Storer.IterReferences()
	if err != nil {
		return fmt.Errorf("listing refs: %w", err)
	}
	n := name.String()
	return refs.ForEach(func(ref *plumbing.Reference) error {
		other := ref.Name().String()
		if strings.HasPrefix(n, other+"/") || strings.HasPrefix(other, n+"/") {
			return fmt.Errorf("%s exists; cannot create %s", other, n)
		}
		return nil
	})
}

// refLock is a ref's lock file, <ref>.lock, as git takes it.
type refLock struct {
	fs        billy.Filesystem
	ref, path string
	f         billy.File
	made      []string // the folders lockRef created, deepest first
	locked    bool     // the lock file was created
	done      bool     // and renamed over the ref
}

// lockRef creates name's lock file, failing when it exists: another
// writer holds the ref, or one died holding it. The folders it creates
// for it go again unless the ref is written.
func lockRef(fs billy.Filesystem, name plumbing.ReferenceName) (*refLock, error) {
	l := &refLock{fs: fs, ref: name.String(), path: name.String() + ".lock"}
	for dir := path.Dir(l.ref); dir != "refs" && dir != "."; dir = path.Dir(dir) {
		if _, err := fs.Stat(dir); err == nil {
			break
		}
		l.made = append(l.made, dir)
	}
	if err := fs.MkdirAll(path.Dir(l.ref), 0o777); err != nil {
		l.release()
		return nil, fmt.Errorf("locking %s: %w", name, err)
	}
	// A folder made for the ref (refs/heads/imagebump/) gets its parent's
	// permissions, as git gives it: in a repository shared with its group
	// the group may then update and delete the branch.
	for i := len(l.made) - 1; i >= 0; i-- {
		dir := filepath.Join(fs.Root(), filepath.FromSlash(l.made[i]))
		if parent, err := os.Stat(filepath.Dir(dir)); err == nil {
			_ = os.Chmod(dir, parent.Mode()&(os.ModePerm|os.ModeSetgid))
		}
	}
	f, err := fs.OpenFile(l.path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o666)
	if err != nil {
		l.release()
		if errors.Is(err, os.ErrExist) {
			return nil, fmt.Errorf("%s is locked: %s exists; another git process is writing it, or one died; if none is running, remove that file", name, fs.Join(fs.Root(), l.path))
		}
		return nil, fmt.Errorf("locking %s: %w", name, err)
	}
	l.f, l.locked = f, true
	return l, nil
}

// commit writes h into the lock file and renames it over the ref. The
// write is not synced: go-git does not sync the pack the push brought
// either, and git, by default, syncs no ref.
func (l *refLock) commit(h plumbing.Hash) error {
	if _, err := l.f.Write([]byte(h.String() + "\n")); err != nil {
		return fmt.Errorf("writing %s: %w", l.path, err)
	}
	if err := l.f.Close(); err != nil {
		return fmt.Errorf("writing %s: %w", l.path, err)
	}
	l.f = nil
	// Empty folders where the ref goes (nameFree found no ref under
	// it), as a ref once under them leaves: git removes them too.
	if fi, err := l.fs.Stat(l.ref); err == nil && fi.IsDir() {
		removeEmptyDirs(l.fs, l.ref)
	}
	if err := l.fs.Rename(l.path, l.ref); err != nil {
		return fmt.Errorf("updating %s: %w", l.ref, err)
	}
	l.done = true
	return nil
}

// release removes the lock file and the folders made for it, unless
// commit renamed it.
func (l *refLock) release() {
	if l.f != nil {
		_ = l.f.Close()
	}
	if l.done {
		return
	}
	if l.locked {
		_ = l.fs.Remove(l.path)
	}
	for _, dir := range l.made {
		_ = l.fs.Remove(dir) // only when empty
	}
}

// removeEmptyDirs removes dir and the folders under it, when no file is
// in any of them.
func removeEmptyDirs(fs billy.Filesystem, dir string) {
	list, err := fs.ReadDir(dir)
	if err != nil {
		return
	}
	for _, fi := range list {
		if fi.IsDir() {
			removeEmptyDirs(fs, fs.Join(dir, fi.Name()))
		}
	}
	_ = fs.Remove(dir)
}

func (s *receiveSession) hasObject(h plumbing.Hash) bool {
	return s.repo.Storer.HasEncodedObject(h) == nil
}
