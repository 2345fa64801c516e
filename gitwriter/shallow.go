package gitwriter

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// Keeping the shallow list to the commits that matter.
//
// A shallow working copy's .git/shallow lists the commits it holds
// without their parents, and every fetch sends the whole list to the
// server. Each fetch of depth 1 adds the new head; the old heads stay
// listed (git drops them only at gc, which imagebump never runs), so a
// working copy that fetched 50 heads a day sent a megabyte of them with
// each fetch after a year, and the server looked each one up.
//
// After a fetch, setShallow keeps the entries that a walk from everything
// git itself walks from reaches before any other entry: the refs, and,
// when someone ran git in the working copy, its reflogs and the commits
// of ORIG_HEAD and the like (go-git writes none of them). An old head
// nothing reaches any more goes, as git's gc drops it; its objects stay
// in the store until a fold or a fresh clone, and nothing walks from it.
// With a linked worktree (git worktree add), whose roots are not read,
// or a walk past maxAncestorWalk commits, the list is kept whole. The
// file is written as git writes it, to shallow.lock and renamed.

// setShallow replaces the store's shallow list with the commits a walk
// from git's roots, and from tips, reaches first on each way: an entry of
// list, or a commit whose parent the store lacks. A commit that is no
// entry may still be such a boundary: go-git's fetch of a head the store
// holds (the remote's branch set back to an old head) moves the ref and
// lists nothing.
func (r *Repo) setShallow(list []plumbing.Hash, tips ...plumbing.Hash) error {
	listed := make(map[plumbing.Hash]bool, len(list))
	var unique []plumbing.Hash
	for _, h := range list {
		if !listed[h] {
			listed[h] = true
			unique = append(unique, h)
		}
	}
	keep := unique
	if roots, ok := r.gitRoots(); ok {
		var reached []plumbing.Hash
		whole := r.walkAncestors(append(tips, roots...), func(h plumbing.Hash, parents func() []plumbing.Hash) bool {
			if listed[h] || r.lacksAny(parents()) {
				reached = append(reached, h) // the walk visits each once
				return true
			}
			return false
		})
		if whole {
			keep = reached
		}
	}
	return writeShallow(filepath.Join(filepath.Dir(r.objects), "shallow"), keep)
}

// lacksAny reports whether the store lacks one of objects.
func (r *Repo) lacksAny(objects []plumbing.Hash) bool {
	for _, h := range objects {
		if r.repo.Storer.HasEncodedObject(h) != nil {
			return true
		}
	}
	return false
}

// gitRoots returns the commits git walks from when it checks or prunes
// the store, other than the index's: the refs, HEAD, the old and new
// values of every reflog entry, and the commits the pseudo-refs git's
// commands leave name. ok is false when they cannot all be read, or when
// the working copy has linked worktrees (each with a HEAD, an index and
// reflogs of its own).
func (r *Repo) gitRoots() (roots []plumbing.Hash, ok bool) {
	gitDir := filepath.Dir(r.objects)
	if entries, err := os.ReadDir(filepath.Join(gitDir, "worktrees")); len(entries) > 0 || err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, false
	}
	refs, err := r.repo.Storer.IterReferences()
	if err != nil {
		return nil, false
	}
	err = refs.ForEach(func(ref *plumbing.Reference) error {
		if ref.Type() == plumbing.HashReference {
			roots = append(roots, ref.Hash())
		}
		return nil
	})
	if err != nil {
		return nil, false
	}
	// Each of these files holds lines that begin with a commit: a reflog
	// entry is "OLD NEW who when\tmessage", FETCH_HEAD "HASH\t...".
	files := []string{"HEAD", "ORIG_HEAD", "FETCH_HEAD", "MERGE_HEAD", "CHERRY_PICK_HEAD", "REVERT_HEAD", "AUTO_MERGE"}
	for i := range files {
		files[i] = filepath.Join(gitDir, files[i])
	}
	err = filepath.WalkDir(filepath.Join(gitDir, "logs"), func(path string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			files = append(files, path)
		}
		return err
	})
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, false
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, false
		}
		for line := range bytes.Lines(data) {
			fields := bytes.Fields(line)
			for _, field := range fields[:min(2, len(fields))] {
				if plumbing.IsHash(string(field)) {
					if h := plumbing.NewHash(string(field)); !h.IsZero() {
						roots = append(roots, h)
					}
				}
			}
		}
	}
	return roots, true
}

// pruneShallow sets the shallow list again after go-git's fetch, which
// adds to it and drops nothing (setShallow).
func (r *Repo) pruneShallow() error {
	list, err := r.repo.Storer.Shallow()
	if err != nil {
		return fmt.Errorf("reading the shallow file: %w", err)
	}
	if len(list) == 0 {
		return nil // a whole history
	}
	return r.setShallow(list)
}

// walkAncestors visits the commits reachable from tips, each once, in
// breadth-first order: stop true ends the walk's way through h. parents
// gives h's parents, reading the commit on the first call only, so that a
// visit which stops without them reads nothing (a bump commit's message
// can list thousands of files). A commit the store lacks has none to
// give, and its way ends there; the one storeLater is still writing has
// its parent, known. It reports false when it stopped after
// maxAncestorWalk commits.
func (r *Repo) walkAncestors(tips []plumbing.Hash, stop func(h plumbing.Hash, parents func() []plumbing.Hash) bool) bool {
	seen := map[plumbing.Hash]bool{}
	queue := tips
	for len(queue) > 0 {
		h := queue[0]
		queue = queue[1:]
		if seen[h] {
			continue
		}
		if len(seen) == maxAncestorWalk {
			return false
		}
		seen[h] = true
		var parents []plumbing.Hash
		read := false
		get := func() []plumbing.Hash {
			if !read {
				read = true
				parents = r.parentsOf(h)
			}
			return parents
		}
		if !stop(h, get) {
			queue = append(queue, get()...)
		}
	}
	return true
}

// parentsOf returns the parents of commit h, or none when the store lacks
// it.
func (r *Repo) parentsOf(h plumbing.Hash) []plumbing.Hash {
	if s := r.store; s != nil && h == s.commit {
		return []plumbing.Hash{s.parent}
	}
	if co, err := object.GetCommit(r.repo.Storer, h); err == nil {
		return co.ParentHashes
	}
	return nil
}

// writeShallow writes list as the shallow file at path, through a lock
// file and a rename as git does; an empty list removes the file, as git
// does (a history whose every root the store holds is not shallow).
func writeShallow(path string, list []plumbing.Hash) error {
	if len(list) == 0 {
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("removing the shallow file: %w", err)
		}
		return nil
	}
	var b bytes.Buffer
	for _, h := range list {
		b.WriteString(h.String())
		b.WriteByte('\n')
	}
	// Synced: an empty shallow file after a power loss would claim the
	// whole history, and a fetch would tell the server so.
	if err := replaceLocked(path, b.Bytes(), true); err != nil {
		return fmt.Errorf("writing the shallow file: %w", err)
	}
	return nil
}
