//go:build unix

package cycle

import (
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestLockWorkdirWaitIsBounded: a working copy locked by another process
// is waited for, but not for ever: past maxLockWait the cycle fails with
// an error that says who may hold it and what to do. Once released, the
// lock is taken.
func TestLockWorkdirWaitIsBounded(t *testing.T) {
	old := maxLockWait
	maxLockWait = 300 * time.Millisecond
	t.Cleanup(func() { maxLockWait = old })
	path := filepath.Join(t.TempDir(), "prod.lock")
	// flock locks belong to an open file: a second open in this process
	// contends as another process would.
	unlock, err := lockWorkdir(t.Context(), path, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err = lockWorkdir(t.Context(), path, slog.New(slog.DiscardHandler))
	if err == nil || !strings.Contains(err.Error(), "another imagebump process has held "+path) || !strings.Contains(err.Error(), "give each its own --workdir") {
		t.Fatalf("second lock: %v; want the bounded wait's error", err)
	}
	if d := time.Since(start); d < maxLockWait || d > 10*maxLockWait {
		t.Errorf("waited %v for a lock bounded at %v", d, maxLockWait)
	}
	unlock()
	unlock2, err := lockWorkdir(t.Context(), path, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatalf("lock after release: %v", err)
	}
	unlock2()
}
