//go:build linux

package setters

import (
	"errors"

	"github.com/imagebump/imagebump/internal/durable"
)

// syncEachFile says whether stage syncs each temporary file. On Linux it
// does not: syncStaged syncs them all with one syncfs(2) per file system.
const syncEachFile = false

// syncStaged makes the staged files durable before any is renamed: one
// syncfs(2) per file system they live on, or, on a kernel without it, one
// fsync(2) per file.
func syncStaged(files []*staged) error {
	err := syncFilesystems(files)
	if errors.Is(err, errors.ErrUnsupported) {
		return syncEach(files)
	}
	return err
}

// syncRenamed makes the renames durable, as syncStaged does the contents.
func syncRenamed(files []*staged) error {
	err := syncFilesystems(files)
	if errors.Is(err, errors.ErrUnsupported) {
		return syncDirs(files)
	}
	return err
}

// syncFilesystems calls syncfs(2) once for each file system the files live
// on.
func syncFilesystems(files []*staged) error {
	for _, dir := range fsDirs(files) {
		if err := syncfs(dir); err != nil {
			return err
		}
	}
	return nil
}

// syncfs syncs the file system holding dir (durable.SyncFS).
func syncfs(dir string) error {
	if err := durable.SyncFS(dir); err != nil {
		return &pathError{op: "syncing the file system", err: err}
	}
	return nil
}
