package gitwriter

import (
	"errors"
	"io/fs"
	"path"
	"path/filepath"
	"syscall"

	"github.com/imagebump/imagebump/internal/durable"
)

// A file written in the worktree is made durable before the Git index
// records it. The index holds each file's size and times, and a full check
// of the worktree (after a crash, say) trusts a file whose size and times
// match without reading it; a crash between a rename and the writeback of
// its content could leave a file of the right size without it (XFS, ext4
// with data=writeback). Until the index is written the old entry, with
// the old file's times, makes such a file be read and put right.
//
// A clone's checkout of every file is not synced, as git's is not: the
// 50,000 files of a large fleet would be flushed at once.

// syncFiles is syncWorktree; tests watch it.
var syncFiles = syncWorktree

// syncWorktree makes the files just written in the worktree (paths,
// relative to dir) and their renames durable: one syncfs(2) for the file
// system holding dir, or, where there is none, an fsync(2) per file and
// folder.
func syncWorktree(dir string, paths []string) error {
	err := durable.SyncFS(dir)
	if errors.Is(err, errors.ErrUnsupported) {
		return syncEach(dir, paths)
	}
	return err
}

// syncEach fsyncs each of paths (relative to dir) that exists, and each
// folder above one up to dir, once: a folder made or emptied for a path
// is durable only once the folder holding it is synced.
func syncEach(dir string, paths []string) error {
	dirs := map[string]bool{}
	for _, p := range paths {
		if err := durable.Sync(filepath.Join(dir, filepath.FromSlash(p))); err != nil && !gone(err) {
			return err
		}
		for d := path.Dir(p); !dirs[d]; d = path.Dir(d) {
			dirs[d] = true
			if d == "." || d == "/" {
				break
			}
		}
	}
	for d := range dirs {
		if err := durable.Sync(filepath.Join(dir, filepath.FromSlash(d))); err != nil && !gone(err) {
			return err
		}
	}
	return nil
}

// gone reports whether err says a path is not there: missing, or under
// what is now a file (a folder replaced by a file).
func gone(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR)
}
