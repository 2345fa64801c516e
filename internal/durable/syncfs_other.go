//go:build !linux

package durable

import (
	"errors"
	"os"
)

// SyncFS reports errors.ErrUnsupported: there is no syncfs(2) here, and
// the caller syncs file by file.
func SyncFS(dir string) error {
	return &os.PathError{Op: "syncfs", Path: dir, Err: errors.ErrUnsupported}
}
