//go:build unix

package setters

import (
	"bytes"
	"errors"
	"syscall"
)

// otherFlags open a file that is not scanned (run.otherFile) as readFile
// opens one.
const otherFlags = syscall.O_RDONLY | syscall.O_CLOEXEC | syscall.O_NOFOLLOW | syscall.O_NONBLOCK

// readFile reads the regular file at path into buf, unless it is larger
// than limit bytes: then buf is left empty and the error is a
// *TooLargeError saying whether the file holds a marker (it is scanned in
// small pieces for the token, never held whole).
//
// On Unix it uses plain system calls: os.Open would register every file
// with the runtime's poller, which costs more than reading a small file.
// O_NOFOLLOW makes a file swapped for a symlink after the walk fail instead
// of being followed, and O_NONBLOCK keeps a file swapped for a FIFO from
// blocking the open; fstat then refuses anything but a regular file.
func readFile(path string, buf *bytes.Buffer, limit int64) error {
	return readFileKey(path, buf, limit, nil)
}

// readFileKey is readFile that also fills key, when not nil, from the
// fstat(2) of the file read, for the marker index.
func readFileKey(path string, buf *bytes.Buffer, limit int64, key *statKey) error {
	var fd int
	var err error
	for {
		fd, err = syscall.Open(path, syscall.O_RDONLY|syscall.O_CLOEXEC|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
		if !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	if err != nil {
		return &pathError{op: "open", err: err}
	}
	defer syscall.Close(fd)
	var st syscall.Stat_t
	if err := retry(func() error { return syscall.Fstat(fd, &st) }); err != nil {
		return &pathError{op: "stat", err: err}
	}
	if st.Mode&syscall.S_IFMT != syscall.S_IFREG {
		return errNotRegular
	}
	if key != nil {
		*key = keyOfStat(&st)
	}
	buf.Reset()
	read := func(b []byte) (int, error) {
		for {
			n, err := syscall.Read(fd, b)
			if errors.Is(err, syscall.EINTR) {
				continue
			}
			if err != nil {
				return 0, &pathError{op: "read", err: err}
			}
			return n, nil
		}
	}
	if limit > 0 && st.Size > limit {
		marked, err := scanForToken(read)
		if err != nil {
			return err
		}
		return &TooLargeError{Size: st.Size, Limit: limit, Marked: marked}
	}
	for {
		buf.Grow(16 << 10)
		b := buf.AvailableBuffer()
		n, err := read(b[:cap(b)])
		if err != nil {
			return err
		}
		if n == 0 {
			return nil
		}
		buf.Write(b[:n])
		if limit > 0 && int64(buf.Len()) > limit {
			// The file grew after fstat.
			buf.Reset()
			return &TooLargeError{Size: st.Size, Limit: limit, Marked: true}
		}
		if int64(buf.Len()) == st.Size && n < cap(b) {
			// All fstat counted came in a read that did not fill the
			// buffer: the read that would return end of file is one
			// system call per file saved. A file that grows later is
			// read as it was, as if read a moment earlier.
			return nil
		}
	}
}
