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
	// Go's default GC target (GOGC=100) is kept. A target of 400 once cut
	// plan's time by a quarter, when a run held every parse tree; now
	// that files are streamed, what the larger heap costs in page faults
	// (twice as many) outweighs the collections it saves: a cold apply on
	// 10,000 files took 745 ms with 400 and 695 ms with 100, and its peak
	// RSS fell from 88 to 64 MB (docs/benchmarks.md).
	//
	// A soft memory limit makes the collector run sooner once the heap
	// nears it, which keeps a first run on a large repository from
	// growing the heap far past what is live; it is not a cap on what is
	// live. GOMEMLIMIT overrides it. plan, apply and validate collect
	// only as the heap nears it (internal/batchgc, docs/cli.md).
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(128 << 20)
	}
	ctx, stop := commands.SignalContext(context.Background(), os.Stderr)
	code := commands.Main(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
