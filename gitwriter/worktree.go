package gitwriter

import (
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"iter"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/format/index"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// resetStateFile, in .git, records the commit the worktree holds (last
// reset to, moved to, or committed), read whole and checked against its
// name then (or made then), and the checksum of the index written then:
// "COMMIT SUM". While both hold, HEAD points at the tracked branch and the branch
// at that commit, the index is known to equal the commit's tree, and the
// worktree the index (unless someone else changed it: see
// Options.TrustWorktree). The file is removed before any change to the
// worktree and written once it is done, so a crash in between makes the
// next Open reset the worktree whole.
const resetStateFile = "imagebump-reset"

// reset points HEAD at the tracked branch and makes the branch, index and
// worktree hold r.head, as git read-tree --reset -u and git clean -fdx
// do: it deletes everything the commit does not hold (ignored files
// too), keeps each file the old index shows clean with the commit's
// content, and writes the others, read as a checkout reads them (every
// object checked against its name). The index is written whole.
func (r *Repo) reset() error {
	if err := r.repo.Storer.SetReference(plumbing.NewSymbolicReference(plumbing.HEAD, r.branchRef())); err != nil {
		return fmt.Errorf("pointing HEAD at %q: %w", r.branch, err)
	}
	if err := r.resetWorktree(); err != nil {
		r.damaged(err)
		return fmt.Errorf("hard-resetting the worktree to %s, the head of branch %q: %w", shortHash(r.head), r.branch, err)
	}
	r.dirty, r.verified = false, true
	return nil
}

// resetWorktree is reset's work on the worktree and the index.
func (r *Repo) resetWorktree() error {
	ps, _ := r.openPacks() // nil: go-git's store answers
	if ps != nil {
		defer ps.Close()
	}
	files, err := r.diffUncached(ps, plumbing.ZeroHash, r.head)
	if err != nil {
		// Nothing changed: a head refused here leaves the state as it
		// was, for the move to the next head.
		return fmt.Errorf("reading its tree: %w", err)
	}
	// Forget the recorded state before the first change: if the reset
	// fails half-way, the next Open must not trust the index.
	_ = os.Remove(r.statePath())
	// Deletions first, so that no path below is reached through a link
	// or a file the commit does not hold.
	if err := cleanAllBut(r.dir, func(yield func(string) bool) {
		for _, f := range files {
			if !yield(f.path) {
				return
			}
		}
	}); err != nil {
		return fmt.Errorf("deleting what it does not hold: %w", err)
	}
	// The old index, when it can be read, says which files need not be
	// written again.
	var old *index.Index
	oldEntries := map[string]*index.Entry{}
	if idx, err := r.repo.Storer.Index(); err == nil {
		old = idx
		for _, e := range idx.Entries {
			if e.Stage == 0 {
				oldEntries[e.Name] = e
			}
		}
	}
	check := r.fileCheck(old)
	var kept []indexChange
	fc := r.newFileCreator(true, nil, ps)
	for _, f := range files {
		if stat, ok := check.keepFile(oldEntries[f.path], f.to); ok {
			kept = append(kept, indexChange{name: f.path, hash: f.to.Hash, mode: f.to.Mode, stat: stat})
			continue
		}
		if err = fc.add(f.path, f.to); err != nil {
			break
		}
	}
	written, err := fc.wait(err)
	if err != nil {
		return err
	}
	// As in moveTo: the index must not record a file's times before its
	// content is durable (durable.go).
	if len(written) > 0 {
		names := make([]string, len(written))
		for i, c := range written {
			names[i] = c.name
		}
		if err := syncFiles(r.dir, names); err != nil {
			return fmt.Errorf("syncing the files written: %w", err)
		}
	}
	if err := writeIndexFile(r.indexPath(), (&rawIndex{version: 2}).patch(append(written, kept...))); err != nil {
		return err
	}
	r.log.Debug("reset the worktree", "commit", shortHash(r.head), "files", len(files), "written", len(written))
	return r.moveTo(r.head, nil)
}

// fileCheck tells whether the worktree files of r hold what entries of
// an index say. The files named in r.suspect are hashed whatever their
// lstat data (Clean), and whether the file system keeps executable bits
// is asked only when a bit differs (keepsExecBits).
type fileCheck struct {
	r   *Repo
	idx *index.Index // the entries'; nil when none could be read
	// dirs says, of each folder of the worktree looked at, whether it is
	// a real folder: not a symbolic link, which git never checks out above
	// a file (its lstat data would be those of the file the link leads
	// to, wherever that is).
	dirs map[string]bool
}

func (r *Repo) fileCheck(idx *index.Index) *fileCheck {
	return &fileCheck{r: r, idx: idx, dirs: map[string]bool{}}
}

// inRealDirs reports whether every folder above name (slash-separated,
// relative to the worktree) is a real folder.
func (c *fileCheck) inRealDirs(name string) bool {
	dir := path.Dir(name)
	if dir == "." {
		return true
	}
	real, seen := c.dirs[dir] // dir and every folder above it
	if !seen {
		fi, err := os.Lstat(filepath.Join(c.r.dir, filepath.FromSlash(dir)))
		real = err == nil && fi.IsDir() && c.inRealDirs(dir)
		c.dirs[dir] = real
	}
	return real
}

// keepFile reports whether the worktree's file at e's path, as the old
// index records it in e, holds the tree entry want, and returns its stat
// fields for the new index.
func (c *fileCheck) keepFile(e *index.Entry, want object.TreeEntry) ([40]byte, bool) {
	if e == nil || e.Hash != want.Hash || e.Mode != want.Mode {
		return [40]byte{}, false
	}
	full := filepath.Join(c.r.dir, filepath.FromSlash(e.Name))
	fi, err := os.Lstat(full)
	if err != nil || !c.inRealDirs(e.Name) {
		return [40]byte{}, false
	}
	if want.Mode == filemode.Submodule {
		// An empty folder, as a checkout leaves it, with no stat data.
		return [40]byte{}, fi.IsDir()
	}
	if !plainEntry(e) {
		return [40]byte{}, false
	}
	if ok, _, err := c.fileClean(full, fi, e); err != nil || !ok {
		return [40]byte{}, false
	}
	return statFields(fi), true
}

// resetIfNeeded makes the worktree clean at r.head. When the state file
// says which commit it holds, it checks the files (unless
// Options.TrustWorktree) and moves the worktree to r.head by the files
// that differ; otherwise, or when a file differs, it hard-resets.
func (r *Repo) resetIfNeeded() error {
	return r.sync(!r.opts.TrustWorktree)
}

// Clean checks every file of the worktree against the index, deletes
// untracked files, and hard-resets the worktree to the head when a file
// differs, as Open does without Options.TrustWorktree. A caller calls it
// when a file it read was not what the commit holds, and names such
// files in stale: their content is hashed, not judged by lstat data that
// may be the index's though the bytes are not (a file edited within one
// clock tick, or on a file system whose ctime follows its mtime).
func (r *Repo) Clean(stale ...string) error {
	if r.repo == nil {
		return errors.New("cleaning: the working copy is not open")
	}
	if r.verified && !r.dirty && len(stale) == 0 {
		return nil
	}
	r.suspect = map[string]bool{}
	for _, p := range stale {
		if clean, err := checkPath(p); err == nil {
			r.suspect[clean] = true
		}
	}
	err := r.sync(true)
	r.suspect = nil
	if r.editing {
		// Called from an edit, which writes next: until the edit says
		// what it changed, the worktree again holds no known commit.
		_ = os.Remove(r.statePath())
		r.dirty, r.verified = true, false
	}
	return err
}

// sync is resetIfNeeded, checking every file when verify is set.
func (r *Repo) sync(verify bool) error {
	at, why := r.recordedState()
	var refresh []indexChange
	if why.text == "" && verify {
		why, refresh = r.worktreeDiffers()
	}
	if why.text == "" {
		r.at = at
		if len(refresh) > 0 {
			r.refreshIndex(refresh)
		}
		if err := r.checkout(at, r.head); err != nil {
			// A tree refused (errBadTree) may be the old commit's, which
			// an older imagebump accepted: the reset reads the head's
			// alone, and refuses it in turn when it is the head's.
			if r.damaged(err) {
				// A reset would meet the same object: Open clones
				// afresh, and so does the next Open after an Update or
				// a Clean, as Close empties the working copy.
				return fmt.Errorf("moving the worktree: %w", err)
			}
			why = resetReason{text: "moving the worktree failed: " + err.Error()}
		}
	}
	if why.text != "" {
		if !why.byOthers {
			// After an edit that was not committed, a crash, or a move
			// that failed (whose error says why).
			r.log.Debug("hard-resetting the worktree", "reason", why.text)
		} else {
			// Someone else worked in it (git status rewrites the index).
			r.log.Warn("hard-resetting the worktree, which is not as imagebump left it: whatever was changed in it (edits, untracked files, local commits, another branch checked out) is discarded; keep your own clones elsewhere",
				"reason", why.text, "workdir", r.dir)
		}
		return r.reset()
	}
	r.dirty, r.verified = false, verify
	return nil
}

// damaged reports whether err says an object of the working copy does not
// hash to its name, or its deltas form a cycle (errDamaged). Then nothing
// in the working copy can be trusted to put it right, and Close empties
// it for the next Open to clone afresh.
func (r *Repo) damaged(err error) bool {
	if !errors.Is(err, errDamaged) {
		return false
	}
	if r.discard == "" {
		r.discard = "an object in it does not hash to its name"
	}
	return true
}

func (r *Repo) statePath() string { return filepath.Join(r.dir, ".git", resetStateFile) }
func (r *Repo) indexPath() string { return filepath.Join(r.dir, ".git", "index") }

// recordState writes the state file for r.at and the current index.
// Failing to write it only costs the next Open a full reset.
func (r *Repo) recordState() {
	sum, err := indexChecksum(r.indexPath())
	if err != nil {
		_ = os.Remove(r.statePath())
		return
	}
	_ = os.WriteFile(r.statePath(), []byte(r.at.String()+" "+sum+"\n"), 0o644)
}

// resetState is what the state file of a working copy records.
type resetState struct {
	at  plumbing.Hash // the commit the worktree holds
	sum string        // the checksum of the index written then
}

// readStateFile reads the state file of the working copy at dir. ok is false
// when there is none; damaged is set when it cannot be read as one.
func readStateFile(dir string) (st resetState, ok, damaged bool) {
	data, err := os.ReadFile(filepath.Join(dir, ".git", resetStateFile))
	if err != nil {
		return st, false, false
	}
	fields := strings.Fields(string(data))
	if len(fields) != 2 || !plumbing.IsHash(fields[0]) {
		return st, true, true
	}
	st.at, st.sum = plumbing.NewHash(fields[0]), fields[1]
	return st, true, false
}

// indexChecksum returns the trailing SHA-1 of an index file, which covers
// its whole content.
func indexChecksum(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", err
	}
	if fi.Size() < 32 {
		return "", errors.New("index too short")
	}
	sum := make([]byte, 20)
	if _, err := f.ReadAt(sum, fi.Size()-20); err != nil {
		return "", err
	}
	return hex.EncodeToString(sum), nil
}

// resetReason says why the worktree is hard-reset; the zero value, that
// it need not be.
type resetReason struct {
	text     string
	byOthers bool // someone other than imagebump changed the working copy
}

// changedByOthers is the reason of a change someone else made.
func changedByOthers(text string) resetReason { return resetReason{text: text, byOthers: true} }

// recordedState returns the commit the state file says the worktree
// holds, when the index is the one written then, HEAD points at the
// tracked branch and the branch at that commit; otherwise why says what
// differs. Nothing in the worktree is looked at.
func (r *Repo) recordedState() (at plumbing.Hash, why resetReason) {
	st, ok, damaged := readStateFile(r.dir)
	switch {
	case !ok:
		// Removed before the worktree changes, written back once it
		// holds a commit again: an edit not committed, or a crash.
		return plumbing.ZeroHash, resetReason{text: "no recorded reset"}
	case damaged:
		return plumbing.ZeroHash, resetReason{text: "the recorded state is damaged"}
	}
	if got, err := indexChecksum(r.indexPath()); err != nil || got != st.sum {
		return plumbing.ZeroHash, changedByOthers("the index changed")
	}
	ref, err := r.repo.Storer.Reference(plumbing.HEAD)
	if err != nil || ref.Type() != plumbing.SymbolicReference || ref.Target() != r.branchRef() {
		return plumbing.ZeroHash, changedByOthers("HEAD is not the tracked branch")
	}
	if ref, err := r.repo.Storer.Reference(r.branchRef()); err != nil || ref.Hash() != st.at {
		return plumbing.ZeroHash, changedByOthers("the local branch is not at the recorded commit")
	}
	return st.at, resetReason{}
}

// worktreeDiffers checks every tracked file against the index and deletes
// untracked files; it returns what differs, or "". With nothing
// differing, refresh lists the files whose content was hashed and found
// clean, with their lstat data for the index (refreshIndex), as git
// status refreshes it: a copy of the working copy (cp -a), a chown or a
// clone's files written in the index's own clock tick (racy) would
// otherwise be hashed at every check.
func (r *Repo) worktreeDiffers() (why resetReason, refresh []indexChange) {
	idx, err := r.repo.Storer.Index()
	if err != nil {
		return resetReason{text: "the index cannot be read"}, nil
	}
	check := r.fileCheck(idx)
	// A file changed in the last moments may change again within the
	// clock tick its lstat data show, unseen: it is left to be hashed
	// again, as git leaves racily clean entries.
	settled := time.Now().Add(-refreshAfter)
	for _, e := range idx.Entries {
		ok, hashed, fi, err := check.entryClean(e)
		if err != nil || !ok {
			return changedByOthers("tracked file " + e.Name + " differs"), nil
		}
		if !hashed {
			continue
		}
		stat := statFields(fi)
		if changedAt(stat).Before(settled) {
			refresh = append(refresh, indexChange{name: e.Name, hash: e.Hash, mode: e.Mode, stat: stat})
		}
	}
	if err := cleanUntracked(r.dir, idx); err != nil {
		return resetReason{text: "deleting untracked files failed"}, nil
	}
	return resetReason{}, refresh
}

// refreshAfter is how long ago a file must have last changed for a check
// to write its lstat data into the index (refreshIndex).
var refreshAfter = 2 * time.Second

// changedAt is the later of the change and modification times in stat
// fields (statFields), to the second.
func changedAt(stat [40]byte) time.Time {
	return time.Unix(int64(max(binary.BigEndian.Uint32(stat[0:]), binary.BigEndian.Uint32(stat[8:]))), 0)
}

// refreshIndex writes the lstat data of files found clean into the index,
// and records the state for the new index. Failing, the state is not
// recorded (the index may be torn), and the next Open resets the
// worktree.
func (r *Repo) refreshIndex(refresh []indexChange) {
	err := patchIndexFile(r.indexPath(), refresh)
	if errors.Is(err, errIndexFormat) {
		err = r.patchIndexSlowly(refresh)
	}
	if err != nil {
		_ = os.Remove(r.statePath())
		r.log.Debug("could not refresh the index", "error", err)
		return
	}
	r.recordState()
	r.log.Debug("refreshed the index", "files", len(refresh))
}

// entryClean reports whether a worktree file has the content and mode of
// its index entry, and whether its content was hashed to tell
// (fileClean), with the file's lstat data.
func (c *fileCheck) entryClean(e *index.Entry) (clean, hashed bool, fi fs.FileInfo, err error) {
	if !plainEntry(e) {
		return false, false, nil, nil
	}
	if e.Mode == filemode.Submodule {
		return true, false, nil, nil // gitwriter never touches submodules
	}
	full := filepath.Join(c.r.dir, filepath.FromSlash(e.Name))
	if fi, err = os.Lstat(full); err != nil || !c.inRealDirs(e.Name) {
		return false, false, nil, nil
	}
	clean, hashed, err = c.fileClean(full, fi, e)
	return clean, hashed, fi, err
}

// plainEntry reports whether index entry e stands for a file in the
// worktree as git checks one out: not a conflict, not skipped, not only
// intended to be added.
func plainEntry(e *index.Entry) bool {
	return e.Stage == 0 && !e.SkipWorktree && !e.IntentToAdd
}

// fileClean is entryClean for the file at full, whose lstat data is fi.
// As git does, it trusts lstat data that are those the index records
// (statSame), unless the entry is racy (the file was modified no earlier
// than the index was written); otherwise it hashes the content. A file
// whose executable bit differs from the entry's differs, unless the file
// system keeps no such bits (keepsExecBits, asked then), where git's
// core.fileMode=false leaves the bit alone too. The content of a file in
// r.suspect is hashed whatever its lstat data.
func (c *fileCheck) fileClean(full string, fi fs.FileInfo, e *index.Entry) (clean, hashed bool, err error) {
	mode, err := filemode.NewFromOSFileMode(fi.Mode())
	if err != nil || mode != e.Mode && !(regularFile(mode) && regularFile(e.Mode) && !c.r.keepsExecBits()) {
		return false, false, nil
	}
	if !c.r.suspect[e.Name] && statSame(e, fi) && c.idx != nil && !c.idx.ModTime.IsZero() && e.ModifiedAt.Before(c.idx.ModTime) {
		return true, false, nil
	}
	if mode == filemode.Symlink {
		target, err := os.Readlink(full)
		if err != nil {
			return false, true, err
		}
		return plumbing.ComputeHash(plumbing.BlobObject, []byte(target)) == e.Hash, true, nil
	}
	f, err := os.Open(full)
	if err != nil {
		return false, true, err
	}
	defer f.Close()
	h := plumbing.NewHasher(plumbing.BlobObject, fi.Size())
	if _, err := io.Copy(h, f); err != nil {
		return false, true, err
	}
	return h.Sum() == e.Hash, true, nil
}

// cleanUntracked removes from the worktree every entry that is neither a
// file in the index nor a directory holding one.
func cleanUntracked(root string, idx *index.Index) error {
	return cleanAllBut(root, func(yield func(string) bool) {
		for _, e := range idx.Entries {
			if !yield(e.Name) {
				return
			}
		}
	})
}

// cleanAllBut removes from the worktree every entry that is neither one
// of files (slash-separated paths) nor a directory holding one.
func cleanAllBut(root string, files iter.Seq[string]) error {
	tracked := map[string]bool{}
	dirs := map[string]bool{}
	for name := range files {
		tracked[name] = true
		for d := pathDir(name); d != "" && !dirs[d]; d = pathDir(d) {
			dirs[d] = true
		}
	}
	return cleanDir(root, "", tracked, dirs)
}

// pathDir is path.Dir for index paths, with "" for the root.
func pathDir(p string) string {
	i := strings.LastIndexByte(p, '/')
	if i < 0 {
		return ""
	}
	return p[:i]
}

func cleanDir(root, rel string, tracked, dirs map[string]bool) error {
	entries, err := os.ReadDir(filepath.Join(root, filepath.FromSlash(rel)))
	if err != nil {
		return err
	}
	for _, e := range entries {
		name := e.Name()
		if rel == "" && name == ".git" {
			continue
		}
		p := name
		if rel != "" {
			p = rel + "/" + name
		}
		switch {
		case tracked[p]:
			// A tracked file, or a submodule's directory.
		case e.IsDir() && dirs[p]:
			if err := cleanDir(root, p, tracked, dirs); err != nil {
				return err
			}
		default:
			if err := os.RemoveAll(filepath.Join(root, filepath.FromSlash(p))); err != nil {
				return err
			}
		}
	}
	return nil
}
