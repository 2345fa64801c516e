package setters

import "syscall"

// statTimes returns a stat(2) result's modification and change times.
func statTimes(st *syscall.Stat_t) (mtime, ctime syscall.Timespec) {
	return st.Mtimespec, st.Ctimespec
}
