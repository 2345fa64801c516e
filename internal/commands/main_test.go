package commands

import (
	"context"
	"io"
	"os"
	"os/signal"
	"path/filepath"
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
// collector settings, and that Main restores them: plan, apply and
// validate, which read a tree once and exit, and not run, serve or the
// others.
func TestOneShotTreeCommands(t *testing.T) {
	root := NewCmdRoot(io.Discard, io.Discard)
	want := map[string]bool{"plan": true, "apply": true, "validate": true}
	for _, c := range root.Commands() {
		if got := c.Annotations[oneShotTree] != ""; got != want[c.Name()] {
			t.Errorf("%s: one-shot tree annotation %v, want %v", c.Name(), got, want[c.Name()])
		}
	}

	// Through Main: which commands enable it, and that it is undone.
	var enabled, restored int
	defer func(f func() func()) { enableBatchGC = f }(enableBatchGC)
	enableBatchGC = func() func() {
		enabled++
		return func() { restored++ }
	}
	dir := t.TempDir()
	cfg := filepath.Join(dir, "imagebump.yaml")
	if err := os.WriteFile(cfg, []byte("images:\n  app:\n    image: registry.example.com/app\n    semver: \">=1.0.0\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want int
	}{
		{[]string{"validate", "--repo", dir, "-c", cfg}, 1},
		{[]string{"version"}, 0},
		{[]string{"validate", "--repo", filepath.Join(dir, "missing"), "-c", cfg}, 1},
	} {
		enabled, restored = 0, 0
		_, stderr, _ := runMain(t, tc.args...)
		if enabled != tc.want || restored != tc.want {
			t.Errorf("%v: enabled %d and restored %d times, want %d (stderr: %s)", tc.args, enabled, restored, tc.want, stderr)
		}
	}
}
