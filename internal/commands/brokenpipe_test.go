package commands

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/imagebump/imagebump/internal/testkit/testgit"
)

// closedPipe is a stdout or stderr whose reader went away: every write
// fails with EPIPE, as a write to a closed pipe does once SignalContext
// caught SIGPIPE.
type closedPipe struct{ writes atomic.Int64 }

// Write counts the write and fails it.
func (c *closedPipe) Write([]byte) (int, error) {
	c.writes.Add(1)
	return 0, &os.PathError{Op: "write", Path: "/dev/stdout", Err: syscall.EPIPE}
}

// TestClosedStdoutStops: a command whose stdout is closed ends with 1 and
// writes no error, which has no reader (and on a terminal would only
// repeat that head had what it wanted), where version and the demo said
// "error: write /dev/stdout: broken pipe"; the demo stops at once and
// removes its folder.
func TestClosedStdoutStops(t *testing.T) {
	for _, args := range [][]string{{"version"}, {"demo"}} {
		t.Run(args[0], func(t *testing.T) {
			t.Setenv("TMPDIR", t.TempDir())
			var stdout closedPipe
			var stderr bytes.Buffer
			code := Main(context.Background(), args, &stdout, &stderr)
			if code != ExitFailure || stderr.Len() != 0 {
				t.Errorf("exit %d, stderr %q; want 1 and nothing", code, stderr.String())
			}
			// The demo stops at the first step after the write that failed.
			if n := stdout.writes.Load(); n > 3 {
				t.Errorf("%d writes to the closed stdout, want the command to stop after the first", n)
			}
			if left, _ := os.ReadDir(os.TempDir()); len(left) != 0 {
				t.Errorf("%d entries left in TMPDIR, the first %s", len(left), left[0].Name())
			}
		})
	}
}

// TestServeClosedStderrStops: serve, whose logs go to a closed stderr,
// stops as on a signal and exits 1; with SIGPIPE caught (SignalContext)
// it ran on, its logs lost, where Go's default had ended it.
func TestServeClosedStderrStops(t *testing.T) {
	bare := testgit.NewBare(t, map[string]string{"app.yaml": "image: reg.example/acme/app:1.0.0 # {\"$imagepolicy\": \"default:app\"}\n"})
	dir := t.TempDir()
	cfg := writeFile(t, dir, "imagebump.yaml", `images: [{name: app, repository: reg.example/acme/app, policy: {semver: ">=1.0.0"}}]
git: {url: "file://`+bare+`", branch: main}
schedule: 1h
`)
	var stderr closedPipe
	done := make(chan int, 1)
	go func() {
		done <- Main(context.Background(), []string{"serve", "-c", cfg, "--listen", "127.0.0.1:0", "--workdir", filepath.Join(dir, "work"), "--grace", "0"}, &bytes.Buffer{}, &stderr)
	}()
	select {
	case code := <-done:
		if code != ExitFailure {
			t.Errorf("exit %d, want %d", code, ExitFailure)
		}
	case <-time.After(20 * time.Second):
		// Stop it as a signal would, or it serves on in this process.
		_ = syscall.Kill(os.Getpid(), syscall.SIGTERM)
		<-done
		t.Fatalf("serve ran on for 20s with its stderr closed (%d writes)", stderr.writes.Load())
	}
}

// TestIsTerminalLooksThroughOutputWriter: Main's writers keep what
// isTerminal says of the file they wrap (the demo's bold headings, serve's
// text logs on a terminal). /dev/null is a character device, as a
// terminal is.
func TestIsTerminalLooksThroughOutputWriter(t *testing.T) {
	f, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if !isTerminal(&outputWriter{w: f}) {
		t.Error("isTerminal of an outputWriter on a character device is false")
	}
}
