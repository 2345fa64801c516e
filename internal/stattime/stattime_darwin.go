package stattime

import "syscall"

// Of returns st's change and modification times.
func Of(st *syscall.Stat_t) (ctime, mtime syscall.Timespec) { return st.Ctimespec, st.Mtimespec }
