//go:build !unix

package setters

import (
	"errors"
	"io/fs"
	"math/rand/v2"
	"os"
	"strconv"
)

// writeTemp writes data to a new temporary file in dir, named after base,
// with the given mode, syncs it if fsync is set, and returns its path.
func writeTemp(dir, base string, mode fs.FileMode, _ owner, data []byte, fsync bool) (_ string, err error) {
	var (
		f    *os.File
		name string // kept apart from the result, which an error return empties
	)
	for try := 0; ; try++ {
		name = dir + "." + base + ".imagebump-" + strconv.FormatUint(uint64(rand.Uint32()), 10)
		f, err = os.OpenFile(name, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
		if err == nil {
			break
		}
		if !errors.Is(err, fs.ErrExist) || try == 1000 {
			return "", err
		}
	}
	closed := false
	defer func() {
		if err != nil {
			if !closed {
				f.Close()
			}
			os.Remove(name)
		}
	}()
	if _, err = f.Write(data); err != nil {
		return "", err
	}
	if err = f.Chmod(mode & keptMode); err != nil {
		return "", err
	}
	if fsync {
		if err = f.Sync(); err != nil {
			return "", err
		}
	}
	closed = true
	if err = f.Close(); err != nil {
		return "", err
	}
	return name, nil
}

// devOf returns 0: all files count as one file system where the device is
// not known.
func devOf(fs.FileInfo) uint64 { return 0 }

// ownerOf knows no owners here: files keep whatever the system gives them.
func ownerOf(fs.FileInfo) owner { return owner{uid: -1, gid: -1, links: 1} }
