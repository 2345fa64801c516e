package gitwriter

import "syscall"

// statTimes returns st's change and modification times (macOS names them
// apart from Linux).
func statTimes(st *syscall.Stat_t) (ctime, mtime syscall.Timespec) {
	return st.Ctimespec, st.Mtimespec
}
