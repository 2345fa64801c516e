package gitwriter

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/format/packfile"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp/capability"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp/sideband"
	"github.com/go-git/go-git/v5/plumbing/storer"
	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-git/go-git/v5/plumbing/transport/client"
)

// Fetching what changed, not the whole tree.
//
// A shallow working copy fetches with depth 1, so that it never grows a
// history. go-git asks for no thin pack (it cannot store one), and a git
// server that cuts the history at the new head (depth 1) while sending no
// thin pack marks nothing the client has as known: it sends the new head's
// whole tree, every blob of it, on every fetch that brings a commit. On a
// 116 MB repository that was 120 MB per fetch, for a one-line change.
//
// With a thin pack, git's upload-pack counts every object of the commits
// the client says it has as the client's, and sends only what changed,
// as deltas against objects the client holds. fetchThin asks for one (for
// http, https and ssh remotes: real git servers), resolves its deltas
// against the working copy's store with go-git's pack parser, and writes
// the result as one pack of whole objects, as a commit's objects are
// written. Then it records the new shallow boundary and moves the
// remote-tracking ref, in that order, so a fetch stopped half-way leaves
// at worst objects no ref names yet.

// fetchThinPacks turns fetchThin on: a variable for BenchmarkFetchChange,
// which compares it with go-git's fetch.
var fetchThinPacks = true

// errThinUnsupported says fetchThin does not apply; fetchBranch does the
// fetch.
var errThinUnsupported = errors.New("thin fetch does not apply")

// thinStoreError is a failure to resolve or store a thin pack (a base it
// names missing or damaged in the store), as opposed to the network's or
// a full disk's: the whole fetch is done again by fetchBranch.
type thinStoreError struct{ err error }

func (e *thinStoreError) Error() string { return "storing the fetched objects: " + e.err.Error() }
func (e *thinStoreError) Unwrap() error { return e.err }

// fetchThin lists the remote's refs and, when branch is no longer at
// have, a commit the store holds whole (the tracking ref's), fetches it
// into its remote-tracking ref as a thin pack against have, in the same
// session. It returns the branch's head. It returns errThinUnsupported
// for a remote served in-process (file://), whose packs are never thin
// and already leave out what have holds, and for a branch it does not
// find.
func (r *Repo) fetchThin(ctx context.Context, branch string, have plumbing.Hash) (plumbing.Hash, error) {
	if !fetchThinPacks || r.kind != kindHTTP && r.kind != kindSSH {
		return plumbing.ZeroHash, errThinUnsupported
	}
	var (
		head  plumbing.Hash
		local error // not the network's: kept out of network's wording
	)
	err := r.network(ctx, "fetching", branch, func(ctx context.Context, o netOpts) error {
		h, err := r.thinSession(ctx, branch, have, o)
		var se *thinStoreError
		if errors.Is(err, errThinUnsupported) || errors.As(err, &se) {
			local = err
			return nil
		}
		head = h
		return err
	})
	switch {
	case err != nil:
		return plumbing.ZeroHash, err
	case local != nil:
		return plumbing.ZeroHash, local
	}
	return head, nil
}

// thinSession runs the upload-pack exchange of fetchThin.
func (r *Repo) thinSession(ctx context.Context, branch string, have plumbing.Hash, o netOpts) (plumbing.Hash, error) {
	ep, err := transport.NewEndpoint(r.url)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	ep.Proxy = o.proxy
	cl, err := client.NewClient(ep)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	sess, err := cl.NewUploadPackSession(ep, o.auth)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	defer sess.Close()
	ar, err := sess.AdvertisedReferencesContext(ctx)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	refs, err := ar.AllReferences()
	if err != nil {
		return plumbing.ZeroHash, err
	}
	ref, ok := refs[plumbing.NewBranchReferenceName(branch)]
	if !ok || ref.Type() != plumbing.HashReference {
		// Gone, or a symbolic ref: fetchBranch says what it finds.
		return plumbing.ZeroHash, errThinUnsupported
	}
	head := ref.Hash()
	if head == have {
		// Where it was: the tracking ref holds it.
		return head, nil
	}

	req := packp.NewUploadPackRequestFromCapabilities(ar.Capabilities)
	// go-git's transports drop thin-pack from what the server advertises,
	// as go-git cannot store such a pack; every git server offers it.
	for _, c := range []capability.Capability{capability.ThinPack, capability.Shallow} {
		if err := req.Capabilities.Set(c); err != nil {
			return plumbing.ZeroHash, err
		}
	}
	if ar.Capabilities.Supports(capability.NoProgress) {
		if err := req.Capabilities.Set(capability.NoProgress); err != nil {
			return plumbing.ZeroHash, err
		}
	}
	req.Wants = []plumbing.Hash{head}
	req.Haves = []plumbing.Hash{have}
	req.Depth = packp.DepthCommits(1)
	shallows, err := r.repo.Storer.Shallow()
	if err != nil {
		return plumbing.ZeroHash, &thinStoreError{err}
	}
	req.Shallows = shallows

	resp, err := sess.UploadPack(ctx, req)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	defer resp.Close()
	var pack io.Reader = resp
	switch {
	case req.Capabilities.Supports(capability.Sideband64k):
		pack = sideband.NewDemuxer(sideband.Sideband64k, resp)
	case req.Capabilities.Supports(capability.Sideband):
		pack = sideband.NewDemuxer(sideband.Sideband, resp)
	}
	// The pack goes to a file first: an error reading it is the
	// network's (reported as such, with no second fetch), and the
	// parser, given a file, reads deltas again from it instead of
	// keeping them all in memory. A file that cannot be written (a full
	// disk) fails the fetch as it is: a whole-tree fetch would fail the
	// same way, after more bytes.
	tmp, err := os.CreateTemp(filepath.Join(r.objects, "pack"), "tmp_thin_")
	if err != nil {
		return plumbing.ZeroHash, err
	}
	defer func() {
		tmp.Close()
		os.Remove(tmp.Name())
	}()
	if _, err := io.Copy(tmp, pack); err != nil {
		return plumbing.ZeroHash, err
	}
	if _, err := tmp.Seek(0, io.SeekStart); err != nil {
		return plumbing.ZeroHash, err
	}
	if err := r.storeThin(tmp); err != nil {
		return plumbing.ZeroHash, err
	}
	// The objects are stored. A failure from here on fails the fetch, with
	// the tracking ref where it was: go-git's fetch, finding the head
	// stored, would move the ref without the new shallow boundary.
	// The server's new boundary (the head, at depth 1) and the old
	// entries still reached from a ref; one it deepened past is no
	// longer a boundary.
	shallows = slices.DeleteFunc(append(shallows, resp.Shallows...), func(h plumbing.Hash) bool {
		return slices.Contains(resp.Unshallows, h)
	})
	if err := r.setShallow(shallows, head); err != nil {
		return plumbing.ZeroHash, err
	}
	if err := r.repo.Storer.SetReference(plumbing.NewHashReference(r.trackingRef(branch), head)); err != nil {
		return plumbing.ZeroHash, fmt.Errorf("updating the remote-tracking ref: %w", err)
	}
	return head, nil
}

// storeThin reads a pack, thin or not, resolving its deltas against the
// working copy's store, and writes its objects whole as one new pack. A
// failure is a *thinStoreError, unless the working copy could not be
// written.
func (r *Repo) storeThin(pack io.Reader) (err error) {
	defer func() {
		// A file that cannot be written (a full disk) fails the fetch
		// as it is; anything else is the pack's, or a base it names.
		if err != nil && !r.unwritable(err) {
			err = &thinStoreError{err}
		}
	}()
	w, err := newPackWriter(filepath.Join(r.objects, "pack"))
	if err != nil {
		return err
	}
	defer w.abort()
	sink := &packSink{EncodedObjectStorer: r.repo.Storer, w: w}
	p, err := packfile.NewParserWithStorage(packfile.NewScanner(pack), sink)
	if err != nil {
		return err
	}
	if _, err := p.Parse(); err != nil {
		if sink.err != nil {
			err = sink.err
		}
		return err
	}
	if w.count == 0 {
		return nil
	}
	if _, err := w.finish(); err != nil {
		return err
	}
	r.storage.Reindex()
	return nil
}

// packSink is the store go-git's pack parser writes to: objects it reads
// go into a packWriter; the objects a thin pack's deltas name as bases are
// read from the working copy's store, which the embedded interface is
// (an interface, so that none of the store's other writers is promoted).
type packSink struct {
	storer.EncodedObjectStorer
	w   *packWriter
	err error
}

// SetEncodedObject implements storer.EncodedObjectStorer.
func (s *packSink) SetEncodedObject(obj plumbing.EncodedObject) (plumbing.Hash, error) {
	h := obj.Hash()
	if s.w.holds(h) {
		return h, nil
	}
	content, err := readAll(obj)
	if err == nil {
		err = s.w.add(obj.Type(), h, content)
	}
	if err != nil {
		s.err = err
		return plumbing.ZeroHash, err
	}
	return h, nil
}

// EncodedObject implements storer.EncodedObjectStorer: the parser reads
// a delta's base again when its cache let it go, from the pack written so
// far when the base came in this pack, else from the working copy's store.
func (s *packSink) EncodedObject(t plumbing.ObjectType, h plumbing.Hash) (plumbing.EncodedObject, error) {
	off, ok := s.w.offsets[h]
	if !ok {
		return s.EncodedObjectStorer.EncodedObject(t, h)
	}
	if err := s.w.bw.Flush(); err != nil {
		return nil, err
	}
	// Its own entries are whole, of the size the parser gave them.
	e, err := readStoredEntryPart(s.w.f, off, true, math.MaxUint64, 0)
	if err != nil {
		return nil, fmt.Errorf("reading object %s back from the pack being written: %w", h, err)
	}
	if t != plumbing.AnyObject && t != e.t {
		return nil, plumbing.ErrObjectNotFound
	}
	obj := &plumbing.MemoryObject{}
	obj.SetType(e.t)
	if _, err := obj.Write(e.data); err != nil {
		return nil, err
	}
	return obj, nil
}

// NewEncodedObject implements storer.EncodedObjectStorer.
func (s *packSink) NewEncodedObject() plumbing.EncodedObject { return &plumbing.MemoryObject{} }
