// Package secretfile reads one secret (a password, token or passphrase) from
// a file, the only way imagebump's config references secrets. Files are
// read at each use, so a mounted Kubernetes Secret or a rotated file is
// picked up without a restart.
package secretfile

import (
	"errors"
	"os"
	"strings"
)

// ErrEmpty is returned for a file that holds nothing but a line ending.
var ErrEmpty = errors.New("file is empty")

// Read returns the content of the file at path without one trailing line
// ending ("\n" or "\r\n"), as editors and `echo` leave one. Its errors name
// the path, never the content.
func Read(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	s := strings.TrimSuffix(string(b), "\n")
	s = strings.TrimSuffix(s, "\r")
	if s == "" {
		return "", ErrEmpty
	}
	return s, nil
}
