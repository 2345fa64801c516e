package commands

import (
	"context"
	"io"
	"os"
	"os/signal"
	"syscall"
	"testing"

	"github.com/imagebump/imagebump/internal/testkit/testgitea"
)

// asBinaryEnv, set to 1, makes the test binary act as the imagebump
// binary: tests that need a real process (real signals) run os.Args[0]
// with it.
const asBinaryEnv = "IMAGEBUMP_TEST_AS_BINARY"

// TestMain stops the shared Gitea server, if a test started one; or, under
// asBinaryEnv, runs the command line as cmd/imagebump's main does.
func TestMain(m *testing.M) {
	if os.Getenv(asBinaryEnv) == "1" {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		code := Main(ctx, os.Args[1:], os.Stdout, os.Stderr)
		stop()
		os.Exit(code)
	}
	// plan and apply keep their marker index in the user's cache folder:
	// tests keep theirs in a folder of their own.
	cache, err := os.MkdirTemp("", "imagebump-test-cache-")
	if err != nil {
		panic(err)
	}
	os.Setenv("XDG_CACHE_HOME", cache)
	code := testgitea.Main(m)
	os.RemoveAll(cache)
	os.Exit(code)
}

// TestOneShotTreeCommands checks which commands run with batchgc's
// collector settings: those that read a tree once and exit, and not run
// or serve.
func TestOneShotTreeCommands(t *testing.T) {
	root := NewCmdRoot(io.Discard, io.Discard)
	want := map[string]bool{"plan": true, "apply": true, "validate": true}
	for _, c := range root.Commands() {
		if got := c.Annotations[oneShotTree] != ""; got != want[c.Name()] {
			t.Errorf("%s: one-shot tree annotation %v, want %v", c.Name(), got, want[c.Name()])
		}
	}
	for name := range want {
		if c, _, err := root.Find([]string{name}); err != nil || c.Name() != name {
			t.Errorf("no %s command", name)
		}
	}
}
