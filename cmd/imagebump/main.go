// Command imagebump keeps the container image references in a Git
// repository current with what registries publish, by policy.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/imagebump/imagebump/internal/commands"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := commands.Main(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
