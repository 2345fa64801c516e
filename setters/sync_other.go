//go:build !linux

package setters

// syncEachFile says whether stage syncs each temporary file: without
// syncfs(2), it does.
const syncEachFile = true

// syncStaged has nothing to do: stage synced each file.
func syncStaged([]*staged) error { return nil }

// syncRenamed makes the renames durable by syncing each folder written to.
func syncRenamed(files []*staged) error { return syncDirs(files) }
