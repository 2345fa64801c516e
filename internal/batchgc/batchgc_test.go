package batchgc

import (
	"runtime"
	"runtime/debug"
	"testing"
	"time"
)

// gcPercent reads the current proportional target.
func gcPercent() int {
	p := debug.SetGCPercent(0)
	debug.SetGCPercent(p)
	return p
}

func TestEnable(t *testing.T) {
	t.Setenv("GOGC", "") // Enable reads "" as unset
	defer debug.SetGCPercent(debug.SetGCPercent(Percent))
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(-1))

	t.Run("no limit", func(t *testing.T) {
		debug.SetGCPercent(Percent)
		debug.SetMemoryLimit(1<<63 - 1)
		Enable()
		if p := gcPercent(); p != Percent {
			t.Errorf("without a memory limit the target is %d, want %d", p, Percent)
		}
	})

	t.Run("GOGC set", func(t *testing.T) {
		t.Setenv("GOGC", "150")
		debug.SetGCPercent(150)
		debug.SetMemoryLimit(64 << 20)
		Enable()
		if p := gcPercent(); p != 150 {
			t.Errorf("with GOGC set the target is %d, want 150", p)
		}
	})

	t.Run("off until half the limit is live", func(t *testing.T) {
		debug.SetGCPercent(Percent)
		debug.SetMemoryLimit(64 << 20)
		Enable()
		if p := gcPercent(); p != -1 {
			t.Fatalf("after Enable the target is %d, want -1 (off)", p)
		}
		// Collections with little live keep it off.
		for range 3 {
			runtime.GC()
		}
		time.Sleep(50 * time.Millisecond)
		if p := gcPercent(); p != -1 {
			t.Fatalf("with little live the target is %d, want -1 (off)", p)
		}
		// More than half the limit live turns it back on.
		live := make([][]byte, 40)
		for i := range live {
			live[i] = make([]byte, 1<<20)
		}
		deadline := time.Now().Add(5 * time.Second)
		for gcPercent() != Percent && time.Now().Before(deadline) {
			runtime.GC()
			time.Sleep(10 * time.Millisecond)
		}
		runtime.KeepAlive(live)
		if p := gcPercent(); p != Percent {
			t.Errorf("with 40 MB live under a 64 MB limit the target is %d, want %d", p, Percent)
		}
	})
}
