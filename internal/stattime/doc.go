// Package stattime reads the change and modification times of a stat(2)
// result on Linux and macOS, whose syscall.Stat_t names them apart: what
// git's index and imagebump's marker index compare to tell that a file
// changed.
package stattime
