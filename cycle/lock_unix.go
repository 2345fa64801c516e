//go:build unix

package cycle

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"syscall"
	"time"
)

// lockWorkdir takes an exclusive lock on the file at path (created if
// needed), waiting while another imagebump process holds it, until ctx
// ends. The returned function releases it. The lock is advisory (flock) and
// goes away with the process, so a crashed run never leaves it held.
func lockWorkdir(ctx context.Context, path string, logger *slog.Logger) (func(), error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("locking the working copy (its folder must be writable by this user; see --workdir): %w", err)
	}
	logged := false
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() {
				_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
				f.Close()
			}, nil
		}
		if err != syscall.EWOULDBLOCK {
			f.Close()
			return nil, fmt.Errorf("locking the working copy with %s: %w", path, err)
		}
		if !logged {
			logger.Info("waiting for another imagebump run that uses the same working copy", "lock", path)
			logged = true
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, fmt.Errorf("waiting for another run to release %s: %w", path, ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}
