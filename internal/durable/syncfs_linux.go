package durable

import (
	"os"

	"golang.org/x/sys/unix"
)

// SyncFS writes out everything cached for the file system holding dir
// and reports the write-back errors it met (Linux 5.8 and later). On a
// kernel without syncfs(2) the error matches errors.ErrUnsupported; the
// caller then syncs file by file.
func SyncFS(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := unix.Syncfs(int(f.Fd())); err != nil {
		return &os.PathError{Op: "syncfs", Path: dir, Err: err}
	}
	return nil
}
