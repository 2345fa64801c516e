// Package durable makes what was written to disk survive a crash: one
// file or folder with fsync(2), or a whole file system at once with
// syncfs(2) where Linux has it. setters and gitwriter both use it.
package durable

import "os"

// Sync fsyncs the regular file or folder at path. Anything else is left
// alone: a symbolic link is made durable by syncing its folder.
func Sync(path string) error {
	fi, err := os.Lstat(path)
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() && !fi.IsDir() {
		return nil
	}
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
