package setters

import (
	"bytes"
	"errors"
	"fmt"
)

// DefaultMaxFileSize is the size above which a file holding a marker is
// reported rather than parsed, when Options.MaxFileSize is zero. yaml.v3
// needs about 85 bytes of memory per byte of input (an 11 MB file took
// 937 MB), so 2 MiB bounds a worker at about 170 MB; marked files are
// manifests and Helm values, far smaller.
const DefaultMaxFileSize = 2 << 20

// TooLargeError reports a file over the size limit. Only a file that holds
// a marker (Marked) becomes a Problem; a large file without one, such as a
// CRD bundle, is skipped quietly, as any unmarked file is.
type TooLargeError struct {
	Size, Limit int64
	Marked      bool
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("the file is %s, over the limit of %s for files with markers; not parsed (raise maxFileSize in imagebump.yaml if it is meant to be edited)", byteSize(e.Size), byteSize(e.Limit))
}

// errNotRegular reports a path that is not (or no longer) a regular file.
var errNotRegular = errors.New("not a regular file; not read")

// scanForToken reads a file through read in pieces and reports whether
// the marker token appears, holding at most one piece at a time.
func scanForToken(read func([]byte) (int, error)) (bool, error) {
	const piece = 64 << 10
	keep := len(token) - 1
	buf := make([]byte, keep+piece)
	have := 0
	for {
		n, err := read(buf[have:])
		if err != nil {
			return false, err
		}
		if n == 0 {
			return false, nil
		}
		have += n
		if bytes.Contains(buf[:have], token) {
			return true, nil
		}
		if have > keep {
			copy(buf, buf[have-keep:have])
			have = keep
		}
	}
}

func byteSize(n int64) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}

// owner is who a file belongs to and how many names it has; uid and gid are
// -1 where the system has no such notion.
type owner struct {
	uid, gid int
	links    uint64
}
