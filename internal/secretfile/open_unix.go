//go:build unix

package secretfile

import (
	"os"
	"syscall"
)

// openFlags opens without blocking: opening a FIFO for reading would
// otherwise wait for a writer, forever. O_NOCTTY keeps a terminal device
// from becoming the controlling terminal. Both only matter until the file
// is found not to be regular and refused.
const openFlags = os.O_RDONLY | syscall.O_NONBLOCK | syscall.O_NOCTTY
