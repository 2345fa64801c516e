package gitwriter

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/format/objfile"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/storage/filesystem"

	"github.com/imagebump/imagebump/internal/oneline"
)

// Commits are built from the edits as Git's plumbing builds them
// (hash-object, mktree, commit-tree): the changed files become blobs, the
// trees along their paths are rebuilt from the base commit's trees, every
// other subtree is kept by its hash, and the commit points at the new root
// tree. The work grows with the edits, not with the tree: go-git's
// worktree, by contrast, staged each file by rewriting the whole index
// and built the commit's trees from every index entry (4,158 files in a
// 50,000-file tree took minutes). The objects written are remembered, so
// that a push sends exactly them (see push.go).
//
// The worktree follows the commits the same way: moving it from one
// commit to another writes the files a tree diff names (unchanged
// subtrees are skipped by hash) and patches the index for them.

// FileChange is a file that differs between two commits.
type FileChange struct {
	// Path is relative to the worktree, with forward slashes.
	Path string
	// Old and New are the blob hashes (hex) before and after; Old is empty
	// for an added file, New for a deleted one.
	Old, New string
	// Symlink is set when the entry is a symbolic link before or after.
	Symlink bool
}

// Changes lists the files that differ between commit from and the head
// the worktree holds (Head), by a diff of their trees that skips subtrees
// whose hashes are equal. It fails when from is not in the local object
// store (a commit from before a re-clone, say); the caller then looks at
// every file instead.
func (r *Repo) Changes(from string) ([]FileChange, error) {
	if r.repo == nil {
		return nil, errors.New("listing changes: the working copy is not open")
	}
	fromHash := plumbing.NewHash(from)
	if from == "" || fromHash.String() != from {
		return nil, fmt.Errorf("listing changes: %q is not a commit hash", from)
	}
	if fromHash == r.head {
		return nil, nil
	}
	changes, err := r.diffCommits(nil, fromHash, r.head)
	if err != nil {
		r.damaged(err)
		return nil, fmt.Errorf("listing the changes from %s to %s: %w", shortHash(fromHash), shortHash(r.head), err)
	}
	out := make([]FileChange, 0, len(changes))
	for _, c := range changes {
		fc := FileChange{Path: c.path}
		if !c.from.Hash.IsZero() {
			fc.Old = c.from.Hash.String()
		}
		if !c.to.Hash.IsZero() {
			fc.New = c.to.Hash.String()
		}
		fc.Symlink = c.from.Mode == filemode.Symlink || c.to.Mode == filemode.Symlink
		out = append(out, fc)
	}
	return out, nil
}

// treeChange is one file that differs between two trees; a zero hash
// stands for a missing side.
type treeChange struct {
	path     string
	from, to object.TreeEntry
}

// commitDiff is the result of one diffCommits.
type commitDiff struct {
	from, to plumbing.Hash
	changes  []treeChange
}

// diffCommits lists the files that differ between two commits' trees,
// reading them through ps (see diffUncached). The list is shared with
// later calls for the same two commits: callers must not change it.
func (r *Repo) diffCommits(ps *packSet, from, to plumbing.Hash) ([]treeChange, error) {
	if d := r.lastDiff; d != nil && d.from == from && d.to == to {
		return d.changes, nil
	}
	changes, err := r.diffUncached(ps, from, to)
	if err != nil {
		return nil, err
	}
	r.lastDiff = &commitDiff{from: from, to: to, changes: changes}
	return changes, nil
}

// diffUncached is diffCommits without the cache, from the empty tree
// when from is zero. It reads the trees through ps, or a packSet of its
// own when ps is nil, or through go-git's store alone when the pack
// folder is one go-git must answer for (openPacks); see
// treeDiffer.read. Every tree read is checked against its name.
func (r *Repo) diffUncached(ps *packSet, from, to plumbing.Hash) ([]treeChange, error) {
	if ps == nil {
		var err error
		if ps, err = r.openPacks(); err != nil {
			r.log.Debug("reading the trees through go-git's store", "from", shortHash(from), "to", shortHash(to), "reason", err.Error())
			ps = nil
		} else {
			defer ps.Close()
		}
	}
	return r.diffTreesPacked(ps, from, to)
}

// commitTree reads the tree of commit h.
func (r *Repo) commitTree(h plumbing.Hash) (*object.Tree, error) {
	th, err := r.treeOf(h)
	if err != nil {
		return nil, fmt.Errorf("reading commit %s: %w", shortHash(h), err)
	}
	t, err := treeObject(r.repo, r.objects, th)
	if err != nil {
		return nil, fmt.Errorf("reading the tree of commit %s: %w", shortHash(h), err)
	}
	return t, nil
}

// treeOf returns the tree of commit h, read whole and checked against its
// name (checkCommit) once per Open: a bump commit's message can list
// thousands of files.
func (r *Repo) treeOf(h plumbing.Hash) (plumbing.Hash, error) {
	if t, ok := r.trees[h]; ok {
		return t, nil
	}
	t, err := checkCommit(r.repo, r.objects, h)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	if r.trees == nil {
		r.trees = map[plumbing.Hash]plumbing.Hash{}
	}
	r.trees[h] = t
	return t, nil
}

// readTreeLine reads the first line of commit h's content, "tree HEX",
// and returns the tree hash.
func readTreeLine(br *bufio.Reader, h plumbing.Hash) (plumbing.Hash, error) {
	line, err := br.ReadSlice('\n')
	if err != nil {
		return plumbing.ZeroHash, fmt.Errorf("reading commit %s: %w", shortHash(h), err)
	}
	hex, ok := bytes.CutPrefix(bytes.TrimSuffix(line, []byte("\n")), []byte("tree "))
	if !ok || !plumbing.IsHash(string(hex)) {
		return plumbing.ZeroHash, fmt.Errorf("commit %s does not start with a tree line: %w", shortHash(h), plumbing.ErrInvalidType)
	}
	return plumbing.NewHash(string(hex)), nil
}

// checkCommit reads commit h whole and returns its tree hash: a loose
// commit is streamed, and a packed one read (packedObject), and either is
// checked against its hash, which go-git's reader does not do; one stored
// as a delta is decoded by go-git, and checked too (storedObject).
func checkCommit(repo *git.Repository, objects string, h plumbing.Hash) (plumbing.Hash, error) {
	return commitTree(repo, objects, h, false)
}

// commitTree is checkCommit, but for a commit checked whole before (known:
// see resetStateFile) it reads the first line alone, unchecked: a bump
// commit's message can list thousands of files. A known commit whose first
// line cannot be read from a pack that way (one stored as a delta) is
// read whole.
func commitTree(repo *git.Repository, objects string, h plumbing.Hash, known bool) (plumbing.Hash, error) {
	lo, err := looseReader(repo, h)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	if lo == nil {
		if known {
			// "tree HEX\n" is 46 bytes.
			if t, content, err := packedPart(objects, h, 64); err == nil && t == plumbing.CommitObject {
				if tree, err := readTreeLine(bufio.NewReader(bytes.NewReader(content)), h); err == nil {
					return tree, nil
				}
			}
		}
		content, err := packedCommit(objects, h)
		if err == nil {
			return readTreeLine(bufio.NewReader(bytes.NewReader(content)), h)
		}
		if !errors.Is(err, errNotWhole) {
			return plumbing.ZeroHash, err
		}
		_, content, err = storedObject(repo, plumbing.CommitObject, h)
		if err != nil {
			return plumbing.ZeroHash, err
		}
		return readTreeLine(bufio.NewReader(bytes.NewReader(content)), h)
	}
	defer lo.Close()
	br := bufio.NewReader(lo)
	tree, err := readTreeLine(br, h)
	if err != nil || known {
		return tree, err
	}
	if _, err := io.Copy(io.Discard, br); err != nil {
		return plumbing.ZeroHash, fmt.Errorf("reading commit %s: %w", shortHash(h), err)
	}
	if got := lo.Hash(); got != h {
		return plumbing.ZeroHash, fmt.Errorf("commit %s is damaged: its content hashes to %s: %w", shortHash(h), shortHash(got), errDamaged)
	}
	return tree, nil
}

// fileEdit is the new state of one path: a blob with a mode, or gone.
// buildTree settles the mode of a file the base holds (keptMode).
type fileEdit struct {
	hash    plumbing.Hash
	mode    filemode.FileMode
	remove  bool
	content []byte      // the blob's, stored once the path is known to change
	fi      fs.FileInfo // the worktree file's lstat data, for the index
}

// readEdits reads the paths an edit reported from the worktree and
// returns their new state, keyed by the cleaned path. Whether each
// differs from the base tree is for buildTree to find, which reads the
// base's trees along the paths once.
func (r *Repo) readEdits(changed []string) (map[string]*fileEdit, error) {
	edits := map[string]*fileEdit{}
	folders := map[string]bool{} // folders known to be no symbolic link
	for _, p := range changed {
		clean, err := checkPath(p)
		if err != nil {
			return nil, err
		}
		if _, seen := edits[clean]; seen {
			continue
		}
		// A path through a symbolic link would make the commit replace
		// the link by a folder; git add refuses it too.
		if d := r.linkAbove(clean, folders); d != "" {
			return nil, fmt.Errorf("the edit reported %q, which is beyond the symbolic link %q: report the path the link points at", p, d)
		}
		full := filepath.Join(r.dir, filepath.FromSlash(clean))
		fi, err := os.Lstat(full)
		if gone(err) {
			// Gone, or under what is now a file.
			edits[clean] = &fileEdit{remove: true}
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("reading changed file: %w", err)
		}
		if fi.IsDir() {
			return nil, fmt.Errorf("the edit reported %q, which is a directory", p)
		}
		mode, err := filemode.NewFromOSFileMode(fi.Mode())
		if err != nil {
			return nil, fmt.Errorf("changed file %q: %w", p, err)
		}
		var content []byte
		if fi.Mode()&fs.ModeSymlink != 0 {
			if err := checkLinkPath(clean); err != nil {
				return nil, fmt.Errorf("the edit reported %q, a symbolic link git refuses to commit: %w", p, err)
			}
			target, err := os.Readlink(full)
			if err != nil {
				return nil, fmt.Errorf("reading changed symlink: %w", err)
			}
			content = []byte(target)
		} else if content, err = os.ReadFile(full); err != nil {
			return nil, fmt.Errorf("reading changed file: %w", err)
		}
		edits[clean] = &fileEdit{hash: plumbing.ComputeHash(plumbing.BlobObject, content), mode: mode, content: content, fi: fi}
	}
	return edits, nil
}

// writeObject makes an object in memory, for storeLater to store and the
// next push to send, and returns its hash.
func (r *Repo) writeObject(t plumbing.ObjectType, content []byte) (plumbing.Hash, error) {
	h := plumbing.ComputeHash(t, content)
	// Two files with the same content are one blob, sent once: a pack
	// that counts an object twice is refused.
	if !r.writtenSet[h] {
		r.writtenSet[h] = true
		r.written = append(r.written, newObject{typ: t, hash: h, content: content})
	}
	return h, nil
}

// packFrom is how many objects a commit must make for storeLater to store
// them as one pack instead of a loose file each: git's receive.unpackLimit
// (a push of fewer objects is unpacked into loose ones). A first run that
// bumps 4,158 files makes 8,041 objects; loose, they were 8,041 files to
// write, sync and later fold.
const packFrom = 100

// storeJob is the storing of a commit's objects in the background.
type storeJob struct {
	commit, parent plumbing.Hash // the commit and its parent
	// files are the loose objects' files, relative to the worktree, for
	// the sync that moveToLater runs; a pack is synced before it is
	// renamed into place.
	files []string
	// unlisted is set while the objects go, or have gone, into a pack
	// that go-git's store does not list until it reindexes.
	unlisted bool
	done     chan struct{} // closed when every object is stored or one failed
	err      error         // why one could not be, read once done is closed
	// reported is set once err has been returned to Update's caller by a
	// push that needed the objects, so that finish does not say it again.
	reported bool
}

// storeLater writes the objects of commit, whose parent is base, into the
// object store in the background, while the push sends them from memory:
// as loose objects, or as one pack from packFrom objects on. The commit
// is the last loose object made, and a pack appears whole, so a reader
// that finds the commit finds every other object stored too. Whatever
// reads them from the store calls waitStored first; isAncestor knows
// commit's parent without reading it. The commit's finish, which Update
// always calls, waits for them and forgets the job.
func (r *Repo) storeLater(commit, base plumbing.Hash) {
	objs := r.written
	if len(objs) >= packFrom {
		// A loose object already stored is skipped as it is written; a
		// pack would hold every object again.
		objs = r.notStored(objs)
	}
	job := &storeJob{commit: commit, parent: base, done: make(chan struct{}), unlisted: len(objs) >= packFrom}
	r.store = job
	if job.unlisted {
		dir := filepath.Join(r.objects, "pack")
		go func() {
			defer close(job.done)
			if err := storePack(dir, objs); err != nil {
				job.err = fmt.Errorf("storing the commit's %d objects in the working copy: %w", len(objs), err)
			}
		}()
		return
	}
	// The goroutine's own writer: nothing it uses is shared.
	l := looseWriter{dir: r.objects}
	for _, o := range objs {
		hex := o.hash.String()
		job.files = append(job.files, objectsDir+"/"+hex[:2]+"/"+hex[2:])
	}
	go func() {
		defer close(job.done)
		for _, o := range objs {
			if err := l.write(o.typ, o.hash, o.content); err != nil {
				job.err = fmt.Errorf("storing object %s in the working copy: %w", o.hash, err)
				return
			}
		}
	}()
}

// notStored returns objs without the ones the store holds already, loose
// or listed by a pack. A push branch's bumps, made again on the same base
// at each cycle, are the objects the last cycle stored, but for the
// commit: each cycle stored them all again, as a new pack (300 files
// bumped: 600 objects, 292 kB), until a fold.
func (r *Repo) notStored(objs []newObject) []newObject {
	ps, err := r.openPacks()
	if err != nil {
		return objs
	}
	defer ps.Close()
	var out []newObject
	for _, o := range objs {
		hex := o.hash.String()
		// An empty loose file is what a power loss can leave: the loose
		// writer writes it again, and so does this.
		if fi, err := os.Lstat(filepath.Join(r.objects, hex[:2], hex[2:])); err == nil && fi.Size() > 0 || ps.lists(o.hash) {
			continue
		}
		out = append(out, o)
	}
	return out
}

// storePack writes objs as one new pack, with its index, into the pack
// folder dir, durably.
func storePack(dir string, objs []newObject) error {
	w, err := newPackWriter(dir)
	if err != nil {
		return err
	}
	defer w.abort()
	for _, o := range objs {
		if err := w.add(o.typ, o.hash, o.content); err != nil {
			return err
		}
	}
	_, err = w.finish()
	return err
}

// waitStored waits for the objects storeLater writes and returns why they
// could not all be written, until finish has reported it. A caller that
// returns the error passes report, and finish then leaves it out.
func (r *Repo) waitStored(report bool) error {
	if r.store == nil {
		return nil
	}
	err := r.stored(r.store)
	if err != nil && report {
		r.store.reported = true
	}
	return err
}

// setRefLater sets ref, a local ref that names the commit being made, at
// once when its objects are durable, and otherwise from finish, after the
// one sync that makes them so: a ref set before could name an object a
// power loss empties. A ref finish never sets (the sync failed) is set
// by the next fetch.
func (r *Repo) setRefLater(ref *plumbing.Reference) error {
	if r.store != nil {
		r.laterRefs = append(r.laterRefs, ref)
		return nil
	}
	return r.repo.Storer.SetReference(ref)
}

// stored waits for job and, once it has written a pack, makes go-git's
// store list that pack (once).
func (r *Repo) stored(job *storeJob) error {
	<-job.done
	if job.unlisted && job.err == nil {
		r.storage.Reindex()
		job.unlisted = false
	}
	return job.err
}

// treeChanges is what buildTree changed, as paths under the root.
type treeChanges struct {
	// paths are the edits' paths whose entry changed; the blobs of those
	// are for the caller to store.
	paths []string
	// gone are the files no edit named that went with a change: the files
	// of a folder removed or replaced by a file, and a file replaced by a
	// folder. The Git index has an entry for each file, none for folders.
	gone []string
}

// keptMode is the mode a file of mode was, now mode now in the worktree,
// takes in a commit: an edit changes a file's content, not whether it is
// executable, so a regular file keeps the base's bit. The worktree's may
// differ without anyone changing it: a file system that keeps no
// executable bits (CIFS, Azure Files, FAT) shows every file as one or
// the other, as git's core.fileMode=false allows for. A file that became
// a link, or a link that became a file, takes the worktree's.
func keptMode(was, now filemode.FileMode) filemode.FileMode {
	if regularFile(was) && regularFile(now) {
		return was
	}
	return now
}

// regularFile reports whether m is a file's mode, executable or not.
func regularFile(m filemode.FileMode) bool {
	return m == filemode.Regular || m == filemode.Executable || m == filemode.Deprecated
}

// buildTree returns the hash of tree (nil: an empty one) with edits
// applied, keyed by paths relative to it; empty is set when nothing is
// left in it. Only the subtrees that edits reach are read, and only those
// that change are written. What changed is added to changes, under prefix
// ("" or a folder path ending in "/"). An edit that leaves its path as the
// tree has it changes nothing, and neither does removing a path the tree
// lacks; removing a folder's path removes the folder, as git add -A does.
func (r *Repo) buildTree(tree *object.Tree, edits map[string]*fileEdit, prefix string, changes *treeChanges) (h plumbing.Hash, empty bool, err error) {
	var entries []object.TreeEntry
	if tree != nil {
		entries = slices.Clone(tree.Entries)
	}
	at := func(name string) int {
		return slices.IndexFunc(entries, func(e object.TreeEntry) bool { return e.Name == name })
	}
	touched := false
	sub := map[string]map[string]*fileEdit{}
	for p, e := range edits {
		name, rest, nested := strings.Cut(p, "/")
		if nested {
			if sub[name] == nil {
				sub[name] = map[string]*fileEdit{}
			}
			sub[name][rest] = e
			continue
		}
		i := at(name)
		if i >= 0 && entries[i].Mode == filemode.Dir {
			// A folder removed, or replaced by a file (an edit is never
			// a folder): its files go.
			if err := r.filesUnder(entries[i].Hash, prefix+name+"/", &changes.gone); err != nil {
				return plumbing.ZeroHash, false, err
			}
			entries = slices.Delete(entries, i, i+1)
			touched = true
			if e.remove {
				continue
			}
			i = -1
		}
		if i >= 0 && !e.remove {
			e.mode = keptMode(entries[i].Mode, e.mode)
		}
		switch {
		case e.remove && i < 0:
			continue
		case e.remove:
			entries = slices.Delete(entries, i, i+1)
		case i >= 0 && entries[i].Hash == e.hash && entries[i].Mode == e.mode:
			continue
		case i >= 0:
			entries[i] = object.TreeEntry{Name: name, Mode: e.mode, Hash: e.hash}
		default:
			entries = append(entries, object.TreeEntry{Name: name, Mode: e.mode, Hash: e.hash})
		}
		touched = true
		changes.paths = append(changes.paths, prefix+name)
	}
	for _, name := range slices.Sorted(mapsKeys(sub)) {
		var subtree *object.Tree
		i := at(name)
		if i >= 0 && entries[i].Mode == filemode.Dir {
			if subtree, err = treeObject(r.repo, r.objects, entries[i].Hash); err != nil {
				return plumbing.ZeroHash, false, fmt.Errorf("reading tree %s: %w", name, err)
			}
		}
		sh, subEmpty, err := r.buildTree(subtree, sub[name], prefix+name+"/", changes)
		if err != nil {
			return plumbing.ZeroHash, false, err
		}
		switch {
		case subtree != nil && !subEmpty && sh == subtree.Hash:
			continue
		case subtree == nil && subEmpty:
			continue
		case subEmpty && i >= 0:
			entries = slices.Delete(entries, i, i+1)
		case i >= 0:
			if subtree == nil {
				// A file replaced by a folder.
				changes.gone = append(changes.gone, prefix+name)
			}
			entries[i] = object.TreeEntry{Name: name, Mode: filemode.Dir, Hash: sh}
		default:
			entries = append(entries, object.TreeEntry{Name: name, Mode: filemode.Dir, Hash: sh})
		}
		touched = true
	}
	if len(entries) == 0 {
		return plumbing.ZeroHash, true, nil
	}
	if !touched && tree != nil {
		return tree.Hash, false, nil
	}
	sort.Sort(object.TreeEntrySorter(entries))
	if r.namesFold() {
		if a, b := foldedPair(entries, func(e object.TreeEntry) string { return e.Name }); a != "" {
			// The edit reached a file by another spelling of its path (a
			// config's paths in another case, say): committed, both
			// names would be in the tree.
			return plumbing.ZeroHash, false, fmt.Errorf("the edit reported a path the commit holds under another spelling: %q and %q would both be in the tree, "+
				"and the working copy's file system takes them for one file; check the case of the paths in the config", prefix+a, prefix+b)
		}
	}
	obj := r.repo.Storer.NewEncodedObject()
	if err := (&object.Tree{Entries: entries}).Encode(obj); err != nil {
		return plumbing.ZeroHash, false, err
	}
	content, err := readAll(obj)
	if err != nil {
		return plumbing.ZeroHash, false, err
	}
	h, err = r.writeObject(plumbing.TreeObject, content)
	return h, false, err
}

// filesUnder appends the path of every entry of tree h but its folders,
// under prefix, reading only trees.
func (r *Repo) filesUnder(h plumbing.Hash, prefix string, out *[]string) error {
	t, err := treeObject(r.repo, r.objects, h)
	if err != nil {
		return fmt.Errorf("reading tree %s: %w", strings.TrimSuffix(prefix, "/"), err)
	}
	for _, e := range t.Entries {
		if e.Mode == filemode.Dir {
			if err := r.filesUnder(e.Hash, prefix+e.Name+"/", out); err != nil {
				return err
			}
			continue
		}
		*out = append(*out, prefix+e.Name)
	}
	return nil
}

func mapsKeys[M ~map[string]V, V any](m M) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

func readAll(obj plumbing.EncodedObject) ([]byte, error) {
	rd, err := obj.Reader()
	if err != nil {
		return nil, err
	}
	defer rd.Close()
	return io.ReadAll(rd)
}

// invalidSignatureChars are dropped from a commit's author and committer,
// as go-git and git drop them.
var invalidSignatureChars = strings.NewReplacer("<", "", ">", "", "\n", "")

// commit makes the commit of the changed paths on base, with author and
// committer from c, signed with key when set: the blobs, the trees along
// the changed paths, the commit. It moves the tracked branch's local ref
// and the index to the new commit, which the worktree then holds; the
// index is written in the background (see moveToLater), and finish must
// be called before the index or the worktree is used again. changed
// lists the paths that differ from base; when none do, there is no commit,
// the hash is zero and finish is nil.
func (r *Repo) commit(base plumbing.Hash, paths []string, message string, c Commit, key *openpgp.Entity) (commit plumbing.Hash, changed []string, finish func() error, err error) {
	r.written, r.writtenSet = nil, map[plumbing.Hash]bool{}
	if len(paths) == 0 {
		return plumbing.ZeroHash, nil, nil, nil
	}
	baseTree, err := r.commitTree(base)
	if err != nil {
		return plumbing.ZeroHash, nil, nil, err
	}
	edits, err := r.readEdits(paths)
	if err != nil {
		return plumbing.ZeroHash, nil, nil, err
	}
	var tc treeChanges
	tree, _, err := r.buildTree(baseTree, edits, "", &tc)
	if err != nil {
		return plumbing.ZeroHash, nil, nil, fmt.Errorf("building the commit's trees: %w", err)
	}
	changed = tc.paths
	if len(changed)+len(tc.gone) == 0 {
		return plumbing.ZeroHash, nil, nil, nil
	}
	if strings.TrimSpace(message) == "" {
		return plumbing.ZeroHash, nil, nil, errors.New("the edit changed files but gave no commit message")
	}
	slices.Sort(changed)
	for _, p := range changed {
		if e := edits[p]; !e.remove {
			if _, err := r.writeObject(plumbing.BlobObject, e.content); err != nil {
				return plumbing.ZeroHash, nil, nil, fmt.Errorf("storing %s: %w", p, err)
			}
		}
	}
	if tree.IsZero() {
		// Every file deleted: the commit holds the empty tree.
		if tree, err = r.writeObject(plumbing.TreeObject, nil); err != nil {
			return plumbing.ZeroHash, nil, nil, err
		}
	}
	if !strings.HasSuffix(message, "\n") {
		message += "\n"
	}
	sig := object.Signature{Name: invalidSignatureChars.Replace(c.AuthorName), Email: invalidSignatureChars.Replace(c.AuthorEmail), When: time.Now()}
	co := &object.Commit{Author: sig, Committer: sig, Message: message, TreeHash: tree, ParentHashes: []plumbing.Hash{base}}
	if key != nil {
		unsigned := r.repo.Storer.NewEncodedObject()
		if err := co.EncodeWithoutSignature(unsigned); err != nil {
			return plumbing.ZeroHash, nil, nil, err
		}
		rd, err := unsigned.Reader()
		if err != nil {
			return plumbing.ZeroHash, nil, nil, err
		}
		var b bytes.Buffer
		err = openpgp.ArmoredDetachSign(&b, key, rd, nil)
		rd.Close()
		if err != nil {
			return plumbing.ZeroHash, nil, nil, fmt.Errorf("signing the commit: %w", err)
		}
		co.PGPSignature = b.String()
	}
	obj := r.repo.Storer.NewEncodedObject()
	if err := co.Encode(obj); err != nil {
		return plumbing.ZeroHash, nil, nil, err
	}
	content, err := readAll(obj)
	if err != nil {
		return plumbing.ZeroHash, nil, nil, err
	}
	if commit, err = r.writeObject(plumbing.CommitObject, content); err != nil {
		return plumbing.ZeroHash, nil, nil, fmt.Errorf("committing: %w", err)
	}
	if r.trees == nil {
		r.trees = map[plumbing.Hash]plumbing.Hash{}
	}
	r.trees[commit] = tree // made here: treeOf need not read it again
	var ic []indexChange
	for _, p := range changed {
		e := edits[p]
		ic = append(ic, indexChange{name: p, remove: e.remove, hash: e.hash, mode: e.mode, stat: statFields(e.fi)})
	}
	for _, p := range tc.gone {
		ic = append(ic, indexChange{name: p, remove: true})
	}
	changed = append(changed, tc.gone...)
	slices.Sort(changed)
	r.storeLater(commit, base)
	return commit, changed, r.moveToLater(commit, ic), nil
}

// checkout moves the worktree, the index and the tracked branch's local
// ref from commit from, which they hold, to commit to, writing only the
// files that differ.
func (r *Repo) checkout(from, to plumbing.Hash) error {
	if from == to {
		return nil
	}
	// One packSet for the diff and the blobs: each reads every pack's
	// index whole.
	ps, _ := r.openPacks() // nil: go-git's store answers
	if ps != nil {
		defer ps.Close()
	}
	changes, err := r.diffCommits(ps, from, to)
	if err != nil {
		return err
	}
	// The worktree changes from here on, and holds to only once moveTo
	// has recorded it: a crash or an error before then must leave no
	// state file, so that the next Open resets the worktree whole.
	_ = os.Remove(r.statePath())
	// Deletions first: a file may give way to a folder of the same name.
	var ic []indexChange
	for _, c := range changes {
		if c.to.Hash.IsZero() {
			full := filepath.Join(r.dir, filepath.FromSlash(c.path))
			if err := os.RemoveAll(full); err != nil {
				return fmt.Errorf("removing %s: %w", c.path, err)
			}
			r.pruneDirs(path.Dir(c.path))
			ic = append(ic, indexChange{name: c.path, remove: true})
		}
	}
	// Then the files: created on checkoutWriters goroutines, each in
	// place of what is there (a folder, say, or a link).
	fc := r.newFileCreator(true, ic, ps)
	for _, c := range changes {
		if !c.to.Hash.IsZero() {
			if err = fc.add(c.path, c.to); err != nil {
				break
			}
		}
	}
	if ic, err = fc.wait(err); err != nil {
		return err
	}
	r.log.Debug("moved the worktree", "from", shortHash(from), "to", shortHash(to), "files", len(changes))
	return r.moveTo(to, ic)
}

// checkoutWriters is how many goroutines create files in a checkout.
// Creating a file is mostly kernel work (on ext4, more so after many
// deletions), which several goroutines overlap; reading the blobs stays
// on one, as go-git's object store is not safe for concurrent use.
const checkoutWriters = 4

// pendingFile is a tree entry to create in the worktree, its content
// read; at is the place of its index entry.
type pendingFile struct {
	name    string
	e       object.TreeEntry
	content []byte
	at      int
}

// fileCreator creates worktree files on checkoutWriters goroutines while
// the caller reads their blobs (add), and collects their index entries
// with the files' lstat data.
type fileCreator struct {
	r     *Repo
	ps    *packSet // the packs blobs are read from, or nil
	files chan pendingFile
	wg    sync.WaitGroup

	mu      sync.Mutex
	changes []indexChange // the index entries so far
	err     error         // the first error creating a file
}

// newFileCreator starts the writers, its index entries starting with
// changes, the blobs read through ps (nil: go-git's store). Each file is
// created where nothing is, in a folder that exists, or, with replace,
// in place of whatever is at its path, making its folder.
func (r *Repo) newFileCreator(replace bool, changes []indexChange, ps *packSet) *fileCreator {
	fc := &fileCreator{r: r, ps: ps, files: make(chan pendingFile, 64), changes: changes}
	for range checkoutWriters {
		fc.wg.Go(func() {
			for f := range fc.files {
				var fi fs.FileInfo
				var err error
				if replace {
					fi, err = r.replace(f.name, f.e, f.content)
				} else {
					fi, err = r.create(f.name, f.e, f.content)
				}
				fc.mu.Lock()
				if err != nil && fc.err == nil {
					fc.err = err
				}
				fc.changes[f.at].stat = statFields(fi)
				fc.mu.Unlock()
			}
		})
	}
	return fc
}

// add reads the content of tree entry e, at path p, and queues the file.
// It returns the read's error, or the first error creating a file: the
// caller stops there, and wait returns it too.
func (fc *fileCreator) add(p string, e object.TreeEntry) error {
	if err := checkEntryPath(p); err != nil {
		return err
	}
	content, err := fc.r.entryContent(fc.ps, p, e)
	if err != nil {
		return err
	}
	fc.mu.Lock()
	if err := fc.err; err != nil {
		fc.mu.Unlock()
		return err
	}
	fc.changes = append(fc.changes, indexChange{name: p, hash: e.Hash, mode: e.Mode})
	at := len(fc.changes) - 1
	fc.mu.Unlock()
	fc.files <- pendingFile{name: p, e: e, content: content, at: at}
	return nil
}

// wait waits for the files queued and returns the index entries and the
// first error: err, the caller's own (a read that stopped its adds), or
// else the first error creating a file.
func (fc *fileCreator) wait(err error) ([]indexChange, error) {
	close(fc.files)
	fc.wg.Wait()
	if err == nil {
		err = fc.err
	}
	return fc.changes, err
}

// checkoutAll writes every file of commit into an empty worktree, writes
// a new index for them, and points HEAD and the tracked branch at commit.
func (r *Repo) checkoutAll(commit plumbing.Hash) error {
	// Every file of the commit, as a diff from the empty tree.
	ps, _ := r.openPacks() // nil: go-git's store answers
	if ps != nil {
		defer ps.Close()
	}
	files, err := r.diffUncached(ps, plumbing.ZeroHash, commit)
	if err != nil {
		return fmt.Errorf("reading the tree of %s: %w", shortHash(commit), err)
	}
	fc := r.newFileCreator(false, nil, ps)
	made := map[string]bool{".": true}
	for _, f := range files {
		if dir := path.Dir(f.path); !made[dir] {
			if err = os.MkdirAll(filepath.Join(r.dir, filepath.FromSlash(dir)), 0o755); err != nil {
				err = fmt.Errorf("writing %s: %w", f.path, err)
				break
			}
			made[dir] = true
		}
		if err = fc.add(f.path, f.to); err != nil {
			break
		}
	}
	ic, err := fc.wait(err)
	if err != nil {
		return err
	}
	if err := writeIndexFile(r.indexPath(), (&rawIndex{version: 2}).patch(ic)); err != nil {
		return err
	}
	r.log.Debug("checked out", "commit", shortHash(commit), "files", len(ic))
	return r.moveTo(commit, nil)
}

// blob reads the content of a blob through go-git's store, checked
// against its name (storedObject).
func (r *Repo) blob(p string, h plumbing.Hash) ([]byte, error) {
	_, content, err := storedObject(r.repo, plumbing.BlobObject, h)
	if err != nil {
		return nil, fmt.Errorf("reading the blob of %s: %w", p, err)
	}
	return content, nil
}

// entryContent reads the content of tree entry e, at path p: its blob,
// or nothing for a submodule. The blob is read through ps when it is not
// nil and a pack lists it, and through go-git's store otherwise, which
// also answers when ps fails (see diffUncached), but for a blob that
// does not hash to its name.
func (r *Repo) entryContent(ps *packSet, p string, e object.TreeEntry) ([]byte, error) {
	if e.Mode == filemode.Submodule {
		return nil, nil
	}
	if ps != nil {
		t, content, err := ps.object(e.Hash)
		switch {
		case err == nil && t == plumbing.BlobObject:
			return content, nil
		case errors.Is(err, errDamaged):
			return nil, fmt.Errorf("reading the blob of %s: %w", p, err)
		case err != nil && !errors.Is(err, errNotPacked):
			r.log.Debug("reading a blob through go-git's store", "path", p, "reason", err.Error())
		}
	}
	return r.blob(p, e.Hash)
}

// writeFile writes one tree entry into the worktree, in place of what is
// there, and returns its lstat data.
func (r *Repo) writeFile(p string, e object.TreeEntry) (fs.FileInfo, error) {
	if err := checkEntryPath(p); err != nil {
		return nil, err
	}
	content, err := r.entryContent(nil, p, e)
	if err != nil {
		return nil, err
	}
	return r.replace(p, e, content)
}

// replace creates one tree entry with its content in the worktree in
// place of what is there, making its folder, and returns its lstat data.
// A file is never written over in place: a new file has new times,
// which the Git index's old entry then does not match until the index
// records it (see durable.go).
func (r *Repo) replace(p string, e object.TreeEntry, content []byte) (fs.FileInfo, error) {
	full := filepath.Join(r.dir, filepath.FromSlash(p))
	if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
		return nil, fmt.Errorf("writing %s: %w", p, err)
	}
	if err := os.RemoveAll(full); err != nil {
		return nil, fmt.Errorf("writing %s: %w", p, err)
	}
	return r.create(p, e, content)
}

// create creates one tree entry with its content in the worktree, where
// nothing is, in a folder that exists, and returns its lstat data (nil
// for a submodule).
func (r *Repo) create(p string, e object.TreeEntry, content []byte) (fs.FileInfo, error) {
	full := filepath.Join(r.dir, filepath.FromSlash(p))
	var err error
	switch e.Mode {
	case filemode.Submodule:
		// gitwriter never fetches submodules: an empty folder, as git
		// leaves one.
		if err := os.Mkdir(full, 0o755); err != nil {
			return nil, fmt.Errorf("writing %s: %w", p, err)
		}
		return nil, nil
	case filemode.Symlink:
		err = os.Symlink(string(content), full)
	case filemode.Executable:
		err = os.WriteFile(full, content, 0o777)
	default:
		err = os.WriteFile(full, content, 0o666)
	}
	if err != nil {
		return nil, fmt.Errorf("writing %s: %w", p, err)
	}
	fi, err := os.Lstat(full)
	if err != nil {
		return nil, fmt.Errorf("writing %s: %w", p, err)
	}
	return fi, nil
}

// pruneDirs removes dir and its parents while they are empty.
func (r *Repo) pruneDirs(dir string) {
	for dir != "." && dir != "/" && dir != "" {
		if err := os.Remove(filepath.Join(r.dir, filepath.FromSlash(dir))); err != nil {
			return
		}
		dir = path.Dir(dir)
	}
}

// moveTo records that the worktree holds commit: it patches the index
// with changes, points HEAD at the tracked branch and the branch at
// commit, and writes the state file.
func (r *Repo) moveTo(commit plumbing.Hash, changes []indexChange) error {
	return r.moveToLater(commit, changes)()
}

// moveToLater is moveTo with the index patched in the background: on
// 50,000 files, reading, merging and writing the index takes tens of
// milliseconds that a commit's push can hide, and so does making the files
// written durable first (see durable.go). finish waits for the index
// and for the objects of the commit being stored (storeLater), then
// moves HEAD and the branch and writes the state file; nothing may read
// or write the index, or move the worktree, before it has returned.
// Until then no state file is there, so a working copy left by a crash
// is reset whole by the next Open; and no ref names a commit whose
// objects may not be stored yet.
//
// Only the index file is touched in the background, never go-git's
// store, which is not safe for concurrent use.
func (r *Repo) moveToLater(commit plumbing.Hash, changes []indexChange) (finish func() error) {
	_ = os.Remove(r.statePath())
	path := r.indexPath()
	store := r.store
	done := make(chan error, 1)
	synced := &syncJob{done: make(chan struct{})}
	r.synced = synced
	go func() {
		if store != nil {
			// One sync covers the objects too: the refs that finish
			// moves must not name an object a crash could empty.
			<-store.done
		}
		names := make([]string, 0, len(changes))
		for _, c := range changes {
			names = append(names, c.name)
		}
		if store != nil {
			names = append(names, store.files...)
		}
		if len(names) > 0 {
			synced.err = syncFiles(r.dir, names)
		}
		close(synced.done)
		if synced.err != nil {
			done <- &syncError{synced.err}
			return
		}
		done <- patchIndexFile(path, changes)
	}()
	return func() error {
		err := <-done
		r.synced = nil
		if errors.Is(err, errIndexFormat) {
			err = r.patchIndexSlowly(changes)
		}
		later := r.laterRefs
		r.laterRefs = nil
		if errors.As(err, new(*syncError)) {
			// The objects and files written may be lost, yet the
			// remote's next head names them: Close drops the working
			// copy, and the next Open clones afresh.
			r.discard = "the files and objects a commit wrote could not be synced to disk"
		}
		if store != nil {
			if r.stored(store) != nil {
				if r.head == store.commit {
					// The commit is not in the local store: the next
					// reset starts from the head fetched before it, and
					// a fetch brings it once a push shows the remote
					// moved.
					r.head = store.parent
				}
				if store.reported {
					err = oneline.Join(errObjectsNotStored, err)
				} else {
					err = oneline.Join(store.err, err)
				}
			}
		}
		// Reported: a later move does not fail for it.
		r.store = nil
		if err != nil {
			return err
		}
		for _, ref := range later {
			if err := r.repo.Storer.SetReference(ref); err != nil {
				return fmt.Errorf("setting %s: %w", ref.Name(), err)
			}
		}
		if err := r.repo.Storer.SetReference(plumbing.NewSymbolicReference(plumbing.HEAD, r.branchRef())); err != nil {
			return fmt.Errorf("pointing HEAD at %q: %w", r.branch, err)
		}
		if err := r.repo.Storer.SetReference(plumbing.NewHashReference(r.branchRef(), commit)); err != nil {
			return fmt.Errorf("setting branch %q: %w", r.branch, err)
		}
		r.at = commit
		r.recordState()
		return nil
	}
}

// syncJob is moveToLater's sync of the files and objects a commit
// wrote: err is set before done is closed.
type syncJob struct {
	done chan struct{}
	err  error
}

// waitSynced waits for the sync of what the last commit wrote, if one
// is under way, and returns its error: before something sets a ref to
// the commit outside finish (a fetch after a push whose answer was lost).
func (r *Repo) waitSynced() error {
	if r.synced == nil {
		return nil
	}
	<-r.synced.done
	return r.synced.err
}

// syncError is a failure to make the files and objects a commit wrote
// durable.
type syncError struct{ err error }

func (e *syncError) Error() string { return "syncing the files written: " + e.err.Error() }
func (e *syncError) Unwrap() error { return e.err }

// errObjectsNotStored is finish's error for objects a push has already
// reported not stored.
var errObjectsNotStored = errors.New("the commit's objects are not stored in the working copy (see above)")

// patchIndexFile applies changes to the index file at path; it returns
// errIndexFormat, having changed nothing, for an index it does not patch.
func patchIndexFile(path string, changes []indexChange) error {
	raw, err := readRawIndex(path)
	if errors.Is(err, errIndexFormat) {
		return err
	}
	if err != nil {
		return fmt.Errorf("reading the index: %w", err)
	}
	return writeIndexFile(path, raw.patch(changes))
}

// patchIndexSlowly applies changes through go-git's index reader and
// writer, for an index format readRawIndex does not patch.
func (r *Repo) patchIndexSlowly(changes []indexChange) error {
	idx, err := r.repo.Storer.Index()
	if err != nil {
		return fmt.Errorf("reading the index: %w", err)
	}
	for _, c := range changes {
		_, _ = idx.Remove(c.name)
		if c.remove {
			continue
		}
		e := idx.Add(c.name)
		e.Hash, e.Mode = c.hash, c.mode
		setEntryStat(e, c.stat)
	}
	idx.Cache = nil
	if err := r.repo.Storer.SetIndex(idx); err != nil {
		return fmt.Errorf("writing the index: %w", err)
	}
	return nil
}

// Restore puts the given files (slash-separated, relative to the
// worktree) back as the head commit has them, removing those it does not
// have: for an Edit that wrote files it then decides not to report.
func (r *Repo) Restore(paths []string) error {
	if len(paths) == 0 {
		return nil
	}
	tree, err := r.commitTree(r.head)
	if err != nil {
		return err
	}
	var ic []indexChange
	for _, p := range paths {
		clean, err := checkPath(p)
		if err != nil {
			return err
		}
		if d := r.linkAbove(clean, nil); d != "" {
			return fmt.Errorf("restoring %s: it is beyond the symbolic link %q, which the edit left: report the path the link points at", clean, d)
		}
		e, err := r.entryAt(tree, clean)
		if err != nil {
			r.damaged(err)
			return fmt.Errorf("restoring %s: %w", clean, err)
		}
		if e == nil || e.Mode == filemode.Dir {
			if err := os.RemoveAll(filepath.Join(r.dir, filepath.FromSlash(clean))); err != nil {
				return fmt.Errorf("restoring %s: %w", clean, err)
			}
			ic = append(ic, indexChange{name: clean, remove: true})
			continue
		}
		fi, err := r.writeFile(clean, *e)
		if err != nil {
			return err
		}
		ic = append(ic, indexChange{name: clean, hash: e.Hash, mode: e.Mode, stat: statFields(fi)})
	}
	err = r.moveTo(r.head, ic)
	if r.editing {
		// Called from an edit, whose other files are in no commit: the
		// worktree again holds no known commit, as Clean leaves it.
		_ = os.Remove(r.statePath())
	}
	return err
}

// linkAbove returns a folder of path p (slash-separated, relative to the
// worktree) that is a symbolic link, or "". known, when not nil, holds
// the folders already found to be none, and gets those found now.
func (r *Repo) linkAbove(p string, known map[string]bool) string {
	for d := path.Dir(p); d != "." && !known[d]; d = path.Dir(d) {
		fi, err := os.Lstat(filepath.Join(r.dir, filepath.FromSlash(d)))
		if err == nil && fi.Mode()&fs.ModeSymlink != 0 {
			return d
		}
		if known != nil {
			known[d] = true
		}
	}
	return ""
}

// entryAt returns the entry at path p of tree t, its folders read
// through treeObject (checked against their names, as go-git's
// Tree.FindEntry does not), or nil when t holds no such path.
func (r *Repo) entryAt(t *object.Tree, p string) (*object.TreeEntry, error) {
	names := strings.Split(p, "/")
	for i, name := range names {
		k := slices.IndexFunc(t.Entries, func(e object.TreeEntry) bool { return e.Name == name })
		switch {
		case k < 0:
			return nil, nil
		case i == len(names)-1:
			return &t.Entries[k], nil
		case t.Entries[k].Mode != filemode.Dir:
			return nil, nil
		}
		sub, err := treeObject(r.repo, r.objects, t.Entries[k].Hash)
		if err != nil {
			return nil, fmt.Errorf("reading the tree of %s: %w", strings.Join(names[:i+1], "/"), err)
		}
		t = sub
	}
	return nil, nil
}

// looseReader opens commit h's loose object file, past its header, or
// returns nil when h is not a loose object of a repository on disk.
func looseReader(repo *git.Repository, h plumbing.Hash) (*looseObject, error) {
	sto, ok := repo.Storer.(*filesystem.Storage)
	if !ok {
		return nil, nil
	}
	hex := h.String()
	fs := sto.Filesystem()
	f, err := fs.Open(fs.Join("objects", hex[:2], hex[2:]))
	if err != nil {
		return nil, nil
	}
	zr, err := objfile.NewReader(f)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("reading commit %s: %w", shortHash(h), err)
	}
	t, _, err := zr.Header()
	if err == nil && t != plumbing.CommitObject {
		err = fmt.Errorf("object %s is a %s, not a commit: %w", shortHash(h), t, plumbing.ErrInvalidType)
	}
	if err != nil {
		zr.Close()
		f.Close()
		return nil, err
	}
	return &looseObject{zr, f}, nil
}

// looseObject reads a loose object's content and closes its file too.
type looseObject struct {
	*objfile.Reader
	file io.Closer
}

func (o *looseObject) Close() error {
	return errors.Join(o.Reader.Close(), o.file.Close())
}
