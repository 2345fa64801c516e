// Package batchgc tunes the garbage collector for a command that reads a
// tree once and exits (plan, apply, validate).
//
// Such a command allocates far more than it keeps: each file's parse tree
// is garbage once the file is edited. With Go's proportional target
// (GOGC=100) the collector starts at a 4 MB heap and ran about ten times
// in a cold plan of 10,000 files, a sixth of its CPU. Enable turns the
// proportional target off, so that only the soft memory limit main sets
// (128 MB) starts a collection. That changes nothing once more than half
// the limit is live: Go's heap goal is the lower of the two, and the
// limit's is already the lower one there. What bounds the collector's
// work when the live heap nears the limit is the same with either
// setting: the runtime's cap on the CPU it gives the collector.
package batchgc

import (
	"math"
	"os"
	"runtime/debug"
)

// Enable turns the proportional GC target off under main's soft memory
// limit, and returns the function that puts the target back as it was.
// It does nothing (and its function does nothing) when GOGC or GOMEMLIMIT
// is set in the environment, which keeps the user's choice, or when no
// memory limit is set, since nothing would then start a collection.
func Enable() (restore func()) {
	if os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" {
		return func() {}
	}
	if limit := debug.SetMemoryLimit(-1); limit <= 0 || limit == math.MaxInt64 { // -1 only reads it
		return func() {}
	}
	prev := debug.SetGCPercent(-1)
	return func() { debug.SetGCPercent(prev) }
}
