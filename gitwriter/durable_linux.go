//go:build linux

package gitwriter

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// syncWorktree makes the files just written in the worktree (paths,
// relative to dir) and their renames durable: one syncfs(2) for the file
// system holding dir, or, on a kernel without it, an fsync(2) per file
// and folder.
func syncWorktree(dir string, paths []string) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer f.Close()
	err = unix.Syncfs(int(f.Fd()))
	if errors.Is(err, unix.ENOSYS) {
		return syncEach(dir, paths)
	}
	if err != nil {
		return &os.PathError{Op: "syncfs", Path: dir, Err: err}
	}
	return nil
}
