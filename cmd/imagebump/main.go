// Command imagebump keeps the container image references in a Git
// repository current with what registries publish, by policy.
package main

import (
	"context"
	"os"
	"runtime/debug"

	"github.com/imagebump/imagebump/internal/commands"
)

func main() {
	// Most commands keep Go's default GC target (GOGC=100). A target of
	// 400 once cut plan's time by a quarter, when a run held every parse
	// tree; once files were streamed, what the larger heap cost in page
	// faults on the machine of the time outweighed the collections it
	// saved (docs/benchmarks.md, fourth pass). plan, apply and validate
	// turn the target off and collect only near the limit below
	// (internal/batchgc, docs/cli.md; fifth pass).
	//
	// A soft memory limit makes the collector run sooner once the heap
	// nears it, which keeps a first run on a large repository from
	// growing the heap far past what is live; it is not a cap on what is
	// live. GOMEMLIMIT overrides it.
	setMemoryLimit()
	ctx, stop := commands.SignalContext(context.Background(), os.Stderr)
	code := commands.Main(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// softMemoryLimit is the soft memory limit of every command.
const softMemoryLimit = 128 << 20

// setMemoryLimit sets softMemoryLimit unless GOMEMLIMIT is set, and returns
// the limit there was.
func setMemoryLimit() int64 {
	if os.Getenv("GOMEMLIMIT") != "" {
		return debug.SetMemoryLimit(-1) // -1 only reads it
	}
	return debug.SetMemoryLimit(softMemoryLimit)
}
