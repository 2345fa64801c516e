package gitwriter

import (
	"os"
	"path"
	"path/filepath"
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

// syncEach fsyncs each of paths (relative to dir) that exists, and each
// folder above one up to dir, once: a folder made or emptied for a path
// is durable only once the folder holding it is synced.
func syncEach(dir string, paths []string) error {
	dirs := map[string]bool{}
	for _, p := range paths {
		if err := syncPath(filepath.Join(dir, filepath.FromSlash(p))); err != nil && !os.IsNotExist(err) {
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
		if err := syncPath(filepath.Join(dir, filepath.FromSlash(d))); err != nil && !os.IsNotExist(err) {
			return err
		}
	}
	return nil
}

// syncPath fsyncs the regular file or folder at p; a link is made
// durable by its folder's sync.
func syncPath(p string) error {
	fi, err := os.Lstat(p)
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() && !fi.IsDir() {
		return nil
	}
	f, err := os.Open(p)
	if err != nil {
		return err
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
