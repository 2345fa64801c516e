// Package gittop finds the top of the Git working tree a folder is in, as
// git itself does: the nearest folder, from it upwards, that holds .git (a
// folder, or a file naming one elsewhere). GIT_DIR and GIT_WORK_TREE are
// not read.
package gittop

import (
	"os"
	"path/filepath"
)

// Find returns the top of the Git working tree dir is in, and whether
// there is one. dir should be absolute; it is taken as given, symbolic
// links and all.
func Find(dir string) (string, bool) {
	for {
		if _, err := os.Lstat(filepath.Join(dir, ".git")); err == nil {
			return dir, true
		}
		up := filepath.Dir(dir)
		if up == dir {
			return "", false
		}
		dir = up
	}
}
