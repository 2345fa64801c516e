//go:build unix

package secretfile

import (
	"errors"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestReadFIFONeverBlocks names a FIFO that no one writes to: opening it
// for reading would block forever, unless opened without blocking.
func TestReadFIFONeverBlocks(t *testing.T) {
	p := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(p, 0o600); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := Read(p)
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, ErrNotRegular) || !strings.Contains(err.Error(), "a FIFO") {
			t.Errorf("Read(FIFO) = %v, want ErrNotRegular naming a FIFO", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Read of a FIFO blocked")
	}
}
