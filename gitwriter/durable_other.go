//go:build !linux

package gitwriter

// syncWorktree makes the files just written in the worktree (paths,
// relative to dir) and their renames durable: an fsync per file and
// folder, as there is no syncfs(2).
func syncWorktree(dir string, paths []string) error { return syncEach(dir, paths) }
