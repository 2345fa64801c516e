//go:build linux || darwin

package gitwriter

import (
	"encoding/binary"
	"io/fs"
	"syscall"

	"github.com/imagebump/imagebump/internal/stattime"
)

// fillStat writes the stat fields of an index entry (ctime, mtime, dev,
// ino, uid, gid, size, as git truncates them to 32 bits) from fi, and
// reports whether fi had them.
func fillStat(b []byte, fi fs.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return false
	}
	ctime, mtime := stattime.Of(st)
	binary.BigEndian.PutUint32(b[0:], uint32(ctime.Sec))
	binary.BigEndian.PutUint32(b[4:], uint32(ctime.Nsec))
	binary.BigEndian.PutUint32(b[8:], uint32(mtime.Sec))
	binary.BigEndian.PutUint32(b[12:], uint32(mtime.Nsec))
	binary.BigEndian.PutUint32(b[16:], uint32(st.Dev))
	binary.BigEndian.PutUint32(b[20:], uint32(st.Ino))
	binary.BigEndian.PutUint32(b[28:], st.Uid)
	binary.BigEndian.PutUint32(b[32:], st.Gid)
	binary.BigEndian.PutUint32(b[36:], uint32(st.Size))
	return true
}
