//go:build !linux && !darwin

package gitwriter

import "io/fs"

// fillStat reports that fi has no Unix stat fields here: the index entry
// gets the modification time and size only.
func fillStat([]byte, fs.FileInfo) bool { return false }
