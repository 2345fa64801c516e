//go:build unix

package setters

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"strconv"
	"sync"
	"syscall"
)

// writeTemp writes data to a new temporary file in dir, named after base,
// with the given mode and, where it differs from the process's, the given
// owner; syncs it if fsync is set, and returns its path. As readFile does,
// it uses plain system calls, which cost less than an os.File for a small
// file.
func writeTemp(dir, base string, mode fs.FileMode, own owner, data []byte, fsync bool) (_ string, err error) {
	perm := unixMode(mode)
	var (
		fd   int
		name string // kept apart from the result, which an error return empties
	)
	for try := 0; ; try++ {
		name = dir + "." + base + ".imagebump-" + strconv.FormatUint(uint64(rand.Uint32()), 10)
		fd, err = syscall.Open(name, syscall.O_CREAT|syscall.O_EXCL|syscall.O_WRONLY|syscall.O_CLOEXEC, perm)
		if err == nil {
			break
		}
		if !errors.Is(err, syscall.EEXIST) && !errors.Is(err, syscall.EINTR) || try == 1000 {
			return "", &pathError{op: "creating a temporary file", err: err}
		}
	}
	defer func() {
		if err != nil {
			if fd >= 0 {
				syscall.Close(fd)
			}
			syscall.Unlink(name)
		}
	}()
	for len(data) > 0 {
		var n int
		n, err = syscall.Write(fd, data)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err == nil && n == 0 {
			err = io.ErrShortWrite
		}
		if err != nil {
			return "", &pathError{op: "writing a temporary file", err: err}
		}
		data = data[n:]
	}
	// The replacement keeps the original's owner and group. Only root may
	// give a file away; anyone else whose new file would not match is
	// refused rather than change who owns the file.
	if euid, egid := processIDs(); own.uid >= 0 && (own.uid != euid || own.gid != egid) {
		if err = retry(func() error { return syscall.Fchown(fd, own.uid, own.gid) }); err != nil {
			return "", &pathError{op: fmt.Sprintf("keeping the owner %d:%d (imagebump runs as %d:%d, and the new file it renames into place must keep them; run it as the file's owner, or give the file to a group its user is in: chgrp)", own.uid, own.gid, euid, egid), err: err}
		}
	}
	// chown(2) clears set-id bits, so the mode comes after it.
	// open(2) applies the umask, and not every system keeps set-id and
	// sticky bits there, so one fchmod(2) sets the mode exactly: after the
	// write, which would clear set-id bits. Reading the umask to skip it
	// would race with any other code that changes the umask.
	if err = retry(func() error { return syscall.Fchmod(fd, perm) }); err != nil {
		return "", &pathError{op: "setting the mode of a temporary file", err: err}
	}
	if fsync {
		if err = retry(func() error { return syscall.Fsync(fd) }); err != nil {
			return "", &pathError{op: "syncing a temporary file", err: err}
		}
	}
	// close(2) must not be retried: the descriptor is gone either way.
	err = syscall.Close(fd)
	fd = -1
	if err != nil {
		return "", &pathError{op: "closing a temporary file", err: err}
	}
	return name, nil
}

// processIDs returns the effective user and group IDs of the process,
// which never change while it runs: asked once, not twice per file written.
var processIDs = sync.OnceValues(func() (int, int) { return syscall.Geteuid(), syscall.Getegid() })

// retry calls f again as long as it is interrupted.
func retry(f func() error) error {
	for {
		if err := f(); !errors.Is(err, syscall.EINTR) {
			return err
		}
	}
}

// unixMode converts the permission, set-id and sticky bits of m to a Unix
// mode.
func unixMode(m fs.FileMode) uint32 {
	u := uint32(m.Perm())
	if m&fs.ModeSetuid != 0 {
		u |= syscall.S_ISUID
	}
	if m&fs.ModeSetgid != 0 {
		u |= syscall.S_ISGID
	}
	if m&fs.ModeSticky != 0 {
		u |= syscall.S_ISVTX
	}
	return u
}

// ownerOf returns the owner, group and link count of the file fi describes.
func ownerOf(fi fs.FileInfo) owner {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return owner{uid: int(st.Uid), gid: int(st.Gid), links: uint64(st.Nlink)}
	}
	return owner{uid: -1, gid: -1, links: 1}
}

// devOf returns the device of the file system fi lives on.
func devOf(fi fs.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Dev) // Dev is not a uint64 on every platform.
	}
	return 0
}
