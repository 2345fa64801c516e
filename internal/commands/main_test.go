package commands

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/imagebump/imagebump/internal/printable"
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

// TestErrorLines: an error that joins several (a config with three
// mistakes) is written a line each, "error: " and the mistake's
// file:line first; anything else is one line, a newline or an escape in
// it made inert (a git server's answer cannot forge a line); a flood of
// errors, or of long ones, is cut with a count.
func TestErrorLines(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "imagebump.yaml")
	body := "images:\n" +
		"  - {name: a, repository: BAD/x, policy: {semver: \">=1\"}}\n" +
		"  - {name: \"b\\e[31m\", repository: BAD/y, policy: {semver: \">=1\"}}\n"
	if err := os.WriteFile(cfg, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	_, stderr, code := runMain(t, "validate", "-c", cfg)
	if code != ExitUsage {
		t.Fatalf("exit %d, want %d\n%s", code, ExitUsage, stderr)
	}
	lines := strings.Split(strings.TrimSuffix(stderr, "\n"), "\n")
	// Three: the second policy's name is bad too.
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "error: "+cfg+":2:") || !strings.HasPrefix(lines[1], "error: "+cfg+":3:") || !strings.HasPrefix(lines[2], "error: "+cfg+":3:") {
		t.Errorf("stderr = %q, want one line per mistake, each with its file:line", stderr)
	}
	if strings.Contains(stderr, "\x1b") {
		t.Errorf("stderr carries an escape from the config: %q", stderr)
	}

	for _, tt := range []struct {
		name  string
		err   error
		lines []string // each line written, without "error: "
	}{
		{
			name:  "a newline and an escape inside one error (a git server's answer)",
			err:   failure(fmt.Errorf("cloning: repository not found: %s", "Not found\nerror: imagebump.yaml:1: forged\x1b[31m")),
			lines: []string{`cloning: repository not found: Not found\nerror: imagebump.yaml:1: forged\x1b[31m`},
		},
		{
			name:  "joined, behind a wrapper that adds nothing",
			err:   usageError(errors.Join(errors.New("a.yaml:1: one"), errors.New("a.yaml:2: two\nthree"))),
			lines: []string{"a.yaml:1: one", `a.yaml:2: two\nthree`},
		},
		{
			name:  "joined, behind a wrapper that puts a prefix before it",
			err:   failure(fmt.Errorf("invalid registry options: %w", errors.Join(errors.New("a: one"), errors.New("b: two\nthree")))),
			lines: []string{"invalid registry options", "a: one", `b: two\nthree`},
		},
		{
			name:  "a prefix before an error that is no list",
			err:   fmt.Errorf("target x: %w", errors.New("one\ntwo")),
			lines: []string{`target x: one\ntwo`},
		},
		{
			name:  "two %w, more than their texts",
			err:   fmt.Errorf("%w, then %w", errors.New("one"), errors.New("two")),
			lines: []string{"one, then two"},
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var b strings.Builder
			writeError(t.Context(), &b, tt.err)
			var want strings.Builder
			for _, l := range tt.lines {
				want.WriteString("error: " + l + "\n")
			}
			if b.String() != want.String() {
				t.Errorf("wrote %q, want %q", b.String(), want.String())
			}
		})
	}

	// A flood: many errors, or few long ones, are cut with a count.
	many := make([]error, maxErrorLines+5)
	long := make([]error, 100)
	for i := range many {
		many[i] = errors.New("x")
	}
	for i := range long {
		long[i] = errors.New(strings.Repeat("\x01", 1000))
	}
	for _, errs := range [][]error{many, long} {
		var b strings.Builder
		writeError(t.Context(), &b, errors.Join(errs...))
		lines := strings.Count(b.String(), "\n")
		if lines > maxErrorLines+1 || b.Len() > maxErrorBytes+2*printable.MessageMaxLen+100 || !strings.Contains(b.String(), fmt.Sprintf("more errors)\n")) {
			t.Errorf("%d errors of %d bytes: wrote %d lines, %d bytes, ending %q", len(errs), len(errs[0].Error()), lines, b.Len(), b.String()[max(0, b.Len()-40):])
		}
	}
}
