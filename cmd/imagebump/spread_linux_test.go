//go:build linux

package main

import (
	"os"

	"golang.org/x/sys/unix"
)

// topDirFlag is FS_TOPDIR_FL of linux/fs.h, set by chattr +T.
const topDirFlag = 0x00020000

// spreadSubfolders asks the file system to place dir's subfolders as it
// places top-level ones: on ext4, each in a block group of its own, rather
// than next to the last one made (see fixture.freshCopy). A file system
// without the flag refuses or ignores it; the copies are then only placed
// as usual.
func spreadSubfolders(dir string) {
	f, err := os.Open(dir)
	if err != nil {
		return
	}
	defer f.Close()
	flags, err := unix.IoctlGetUint32(int(f.Fd()), unix.FS_IOC_GETFLAGS)
	if err != nil {
		return
	}
	_ = unix.IoctlSetPointerInt(int(f.Fd()), unix.FS_IOC_SETFLAGS, int(flags|topDirFlag))
}
