//go:build !unix

package secretfile

import "os"

// openFlags: systems other than unix have no FIFOs a plain open blocks on.
const openFlags = os.O_RDONLY
