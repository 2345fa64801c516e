//go:build !linux && !darwin

package setters

import "io/fs"

// keyOf returns a weak stat key: outside Linux and macOS the marker index
// does not read the inode and change time, so it trusts no key and reads
// every file (see statKey.weak).
func keyOf(fs.FileInfo) statKey { return statKey{weak: true} }
