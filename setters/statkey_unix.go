//go:build linux || darwin

package setters

import (
	"io/fs"
	"syscall"

	"github.com/imagebump/imagebump/internal/stattime"
)

// keyOfStat returns the stat key of a file from its stat(2) result.
func keyOfStat(st *syscall.Stat_t) statKey {
	ctime, mtime := stattime.Of(st)
	return statKey{
		dev:   uint64(st.Dev), // Dev is not a uint64 on every platform.
		ino:   uint64(st.Ino),
		size:  int64(st.Size),
		mtime: timespecNano(mtime),
		ctime: timespecNano(ctime),
		mode:  uint32(st.Mode),
	}
}

// keyOf returns the stat key of the file fi describes, which came from
// os.Lstat or os.Stat.
func keyOf(fi fs.FileInfo) statKey {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return keyOfStat(st)
	}
	return statKey{size: fi.Size(), mtime: fi.ModTime().UnixNano(), mode: uint32(fi.Mode())}
}

func timespecNano(ts syscall.Timespec) int64 { return int64(ts.Sec)*1e9 + int64(ts.Nsec) }
