package gitwriter

import (
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/format/index"
)

// resetStateFile, in .git, records the commit the worktree was last reset
// to and the checksum of the index written then. While both still hold,
// the index is known to equal that commit's tree, and a reused working
// copy at the same head needs only a check of the worktree files, not a
// full hard reset, which costs go-git a diff of the whole tree, index and
// worktree.
const resetStateFile = "imagebump-reset"

// reset points HEAD at the tracked branch, hard-resets the branch, index
// and worktree to r.head, and deletes every file the index does not know
// (ignored ones too, as git clean -fdx does).
func (r *Repo) reset() error {
	if err := r.repo.Storer.SetReference(plumbing.NewSymbolicReference(plumbing.HEAD, r.branchRef())); err != nil {
		return fmt.Errorf("pointing HEAD at %q: %w", r.branch, err)
	}
	wt, err := r.repo.Worktree()
	if err != nil {
		return err
	}
	// Forget the recorded state first: if the reset fails half-way, the
	// next Open must not trust the index.
	_ = os.Remove(r.statePath())
	if err := wt.Reset(&git.ResetOptions{Commit: r.head, Mode: git.HardReset}); err != nil {
		return fmt.Errorf("hard-resetting to %s: %w", r.head, err)
	}
	idx, err := r.repo.Storer.Index()
	if err != nil {
		return fmt.Errorf("reading the index: %w", err)
	}
	if err := cleanUntracked(r.dir, idx); err != nil {
		return fmt.Errorf("deleting untracked files: %w", err)
	}
	r.dirty = false
	r.recordReset()
	return nil
}

// resetIfNeeded makes the worktree clean at r.head: cheaply when it
// already is (see resetStateFile), with a hard reset otherwise.
func (r *Repo) resetIfNeeded() error {
	clean, why := r.cleanAtHead()
	if clean {
		r.dirty = false
		return nil
	}
	r.log.Debug("hard-resetting the worktree", "reason", why)
	return r.reset()
}

func (r *Repo) statePath() string { return filepath.Join(r.dir, ".git", resetStateFile) }
func (r *Repo) indexPath() string { return filepath.Join(r.dir, ".git", "index") }

// recordReset writes the reset state for r.head and the current index.
// Failing to write it only costs the next Open a full reset.
func (r *Repo) recordReset() {
	sum, err := indexChecksum(r.indexPath())
	if err != nil {
		_ = os.Remove(r.statePath())
		return
	}
	_ = os.WriteFile(r.statePath(), []byte(r.head.String()+" "+sum+"\n"), 0o644)
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

// cleanAtHead reports whether the working copy is clean at r.head without
// a hard reset, deleting untracked files on the way. It is true only when
// HEAD is the tracked branch at r.head, the index is the one the last
// reset wrote for r.head, and every tracked file has the content and mode
// the index says. Otherwise why says what differs.
func (r *Repo) cleanAtHead() (clean bool, why string) {
	state, err := os.ReadFile(r.statePath())
	if err != nil {
		return false, "no recorded reset"
	}
	head, sum, _ := strings.Cut(strings.TrimSpace(string(state)), " ")
	if head != r.head.String() {
		return false, "the head moved"
	}
	if got, err := indexChecksum(r.indexPath()); err != nil || got != sum {
		return false, "the index changed"
	}
	ref, err := r.repo.Storer.Reference(plumbing.HEAD)
	if err != nil || ref.Type() != plumbing.SymbolicReference || ref.Target() != r.branchRef() {
		return false, "HEAD is not the tracked branch"
	}
	if ref, err := r.repo.Storer.Reference(r.branchRef()); err != nil || ref.Hash() != r.head {
		return false, "the local branch is not at the head"
	}
	idx, err := r.repo.Storer.Index()
	if err != nil {
		return false, "the index cannot be read"
	}
	for _, e := range idx.Entries {
		if ok, err := entryClean(r.dir, idx, e); err != nil || !ok {
			return false, "tracked file " + e.Name + " differs"
		}
	}
	if err := cleanUntracked(r.dir, idx); err != nil {
		return false, "deleting untracked files failed"
	}
	return true, ""
}

// entryClean reports whether a worktree file has the content and mode of
// its index entry. As Git does, it trusts a matching size and mtime, except
// for files modified no earlier than the index was written ("racy" ones),
// whose content is hashed.
func entryClean(root string, idx *index.Index, e *index.Entry) (bool, error) {
	if e.Stage != 0 || e.SkipWorktree || e.IntentToAdd {
		return false, nil
	}
	if e.Mode == filemode.Submodule {
		return true, nil // gitwriter never touches submodules
	}
	full := filepath.Join(root, filepath.FromSlash(e.Name))
	fi, err := os.Lstat(full)
	if err != nil {
		return false, nil
	}
	mode, err := filemode.NewFromOSFileMode(fi.Mode())
	if err != nil || mode != e.Mode {
		return false, nil
	}
	if int64(e.Size) == fi.Size() && e.ModifiedAt.Equal(fi.ModTime()) &&
		!idx.ModTime.IsZero() && e.ModifiedAt.Before(idx.ModTime) {
		return true, nil
	}
	if mode == filemode.Symlink {
		target, err := os.Readlink(full)
		if err != nil {
			return false, err
		}
		return plumbing.ComputeHash(plumbing.BlobObject, []byte(target)) == e.Hash, nil
	}
	f, err := os.Open(full)
	if err != nil {
		return false, err
	}
	defer f.Close()
	h := plumbing.NewHasher(plumbing.BlobObject, fi.Size())
	if _, err := io.Copy(h, f); err != nil {
		return false, err
	}
	return h.Sum() == e.Hash, nil
}

// cleanUntracked removes from the worktree every entry that is neither a
// file in the index nor a directory holding one.
func cleanUntracked(root string, idx *index.Index) error {
	tracked := make(map[string]bool, len(idx.Entries))
	dirs := map[string]bool{}
	for _, e := range idx.Entries {
		tracked[e.Name] = true
		for d := pathDir(e.Name); d != ""; d = pathDir(d) {
			if dirs[d] {
				break
			}
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
