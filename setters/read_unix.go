//go:build unix

package setters

import (
	"bytes"
	"errors"
	"syscall"
)

// readFile reads the file at path into buf. On Unix it uses plain system
// calls: os.Open would register every file with the runtime's poller and
// make it non-blocking, which costs more than reading a small file.
// O_NOFOLLOW makes a file swapped for a symlink after the walk fail instead
// of being followed.
func readFile(path string, buf *bytes.Buffer) error {
	var fd int
	var err error
	for {
		fd, err = syscall.Open(path, syscall.O_RDONLY|syscall.O_CLOEXEC|syscall.O_NOFOLLOW, 0)
		if !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	if err != nil {
		return &pathError{op: "open", err: err}
	}
	defer syscall.Close(fd)
	buf.Reset()
	for {
		buf.Grow(16 << 10)
		b := buf.AvailableBuffer()
		n, err := syscall.Read(fd, b[:cap(b)])
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil {
			return &pathError{op: "read", err: err}
		}
		if n == 0 {
			return nil
		}
		buf.Write(b[:n])
	}
}
