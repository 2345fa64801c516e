package gitwriter

import "syscall"

// statTimes returns st's change and modification times.
func statTimes(st *syscall.Stat_t) (ctime, mtime syscall.Timespec) { return st.Ctim, st.Mtim }
