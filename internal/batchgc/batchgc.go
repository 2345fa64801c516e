// Package batchgc tunes the garbage collector for a command that reads a
// tree once and exits (plan, apply, validate).
//
// Such a command allocates far more than it keeps: each file's parse tree
// is garbage once the file is edited. With Go's proportional target
// (GOGC=100) the collector starts at a 4 MB heap and runs about ten times
// in a cold plan of 10,000 files, which cost a sixth of its CPU. Enable
// turns the proportional target off, so that the collector runs only as
// the heap nears the soft memory limit that main sets, and turns it back on
// as soon as a collection finds more than half the limit live: a process
// whose live heap outgrows the limit would otherwise collect without pause.
package batchgc

import (
	"math"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
)

// Percent is the proportional target Enable restores, Go's default.
const Percent = 100

// Enable turns the proportional GC target off until a collection finds
// more than half the soft memory limit live. It does nothing when GOGC is
// set in the environment (the user chose) or no memory limit is set
// (nothing would ever start a collection).
func Enable() {
	if os.Getenv("GOGC") != "" {
		return
	}
	limit := debug.SetMemoryLimit(-1) // a negative value only reads it
	if limit <= 0 || limit == math.MaxInt64 {
		return
	}
	debug.SetGCPercent(-1)
	watch(uint64(limit) / 2)
}

// watch restores the proportional target after the first collection that
// finds more than threshold bytes live. A cleanup on an unreachable object
// runs after each collection that frees it; each one arms the next.
func watch(threshold uint64) {
	sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	var arm func()
	arm = func() {
		runtime.AddCleanup(new([16]byte), func(int) {
			metrics.Read(sample)
			if sample[0].Value.Kind() == metrics.KindUint64 && sample[0].Value.Uint64() > threshold {
				debug.SetGCPercent(Percent)
				return
			}
			arm()
		}, 0)
	}
	arm()
}
