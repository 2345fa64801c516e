//go:build unix

package cycle

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"syscall"
	"time"
)

// maxLockWait bounds the wait for another process's lock on a working
// copy: past it the cycle fails, so that a stuck process elsewhere does
// not hold this one's cycle (and, in serve, its slot) for ever.
var maxLockWait = 5 * time.Minute

var errLockWait = errors.New("lock wait exceeded")

// lockWorkdir takes an exclusive lock on the file at path (created if
// needed), waiting while another imagebump process holds it, until ctx
// ends. The returned function releases it. The lock is advisory (flock) and
// goes away with the process, so a crashed run never leaves it held.
func lockWorkdir(ctx context.Context, path string, logger *slog.Logger) (func(), error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		if errors.Is(err, fs.ErrPermission) || errors.Is(err, syscall.EROFS) {
			return nil, fmt.Errorf("locking the working copy (its folder must be writable by this user; see --workdir): %w", err)
		}
		return nil, fmt.Errorf("locking the working copy: %w", err)
	}
	ctx, cancel := context.WithTimeoutCause(ctx, maxLockWait, errLockWait)
	defer cancel()
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
			if context.Cause(ctx) == errLockWait {
				return nil, fmt.Errorf("another imagebump process has held %s for %v (a run --workdir on the same folder, or a second serve): stop it, or give each its own --workdir", path, maxLockWait)
			}
			return nil, fmt.Errorf("waiting for another run to release %s: %w", path, ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}
