//go:build !unix

package cycle

import (
	"context"
	"log/slog"
)

// lockWorkdir does nothing where flock(2) does not exist: concurrent runs
// sharing a --workdir are not supported there.
func lockWorkdir(context.Context, string, *slog.Logger) (func(), error) {
	return func() {}, nil
}
