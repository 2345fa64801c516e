// Package stopsignal tells a second request to stop from the first one
// delivered twice. timeout(1), and a kill of a whole process group, send
// SIGTERM to the process and to its group, so it arrives twice at once;
// taken for a second request, it ended a clean stop with exit 1.
package stopsignal

import (
	"os"
	"syscall"
	"time"
)

// Window is how soon after the first stop signal a SIGTERM is taken for
// the same request sent twice: no person sends SIGTERM twice within a
// second, and systemd and Kubernetes send one, then SIGKILL after their
// grace period. A second SIGINT (Ctrl-C pressed again) is always a second
// request.
const Window = time.Second

// Repeated reports whether sig, received elapsed after first, the signal
// that asked to stop (nil when something else did), repeats that request
// rather than asking again: both are SIGTERM, within Window.
func Repeated(first, sig os.Signal, elapsed time.Duration) bool {
	return first == syscall.SIGTERM && sig == syscall.SIGTERM && elapsed < Window
}
