//go:build linux && !amd64 && !386

package setters

import "syscall"

// sysSyncfs is the number of syncfs(2).
const sysSyncfs = syscall.SYS_SYNCFS
