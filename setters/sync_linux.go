//go:build linux

package setters

import (
	"errors"
	"syscall"
)

// syncEachFile says whether stage syncs each temporary file. On Linux it
// does not: syncStaged syncs them all with one syncfs(2) per file system.
const syncEachFile = false

// syncStaged makes the staged files durable before any is renamed: one
// syncfs(2) per file system they live on, or, on a kernel without it, one
// fsync(2) per file.
func syncStaged(files []*staged) error {
	err := syncFilesystems(files)
	if errors.Is(err, syscall.ENOSYS) {
		return syncEach(files)
	}
	return err
}

// syncRenamed makes the renames durable, as syncStaged does the contents.
func syncRenamed(files []*staged) error {
	err := syncFilesystems(files)
	if errors.Is(err, syscall.ENOSYS) {
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

// syncfs writes out everything cached for the file system holding dir and
// reports the write-back errors it met (Linux 5.8 and later).
func syncfs(dir string) error {
	var fd int
	err := retry(func() (err error) {
		fd, err = syscall.Open(dir, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
		return err
	})
	if err != nil {
		return &pathError{op: "opening a folder to sync its file system", err: err}
	}
	defer syscall.Close(fd)
	if _, _, errno := syscall.Syscall(sysSyncfs, uintptr(fd), 0, 0); errno != 0 {
		return &pathError{op: "syncing the file system", err: errno}
	}
	return nil
}
