package main

import (
	"bytes"
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/imagebump/imagebump/internal/commands"
	"github.com/imagebump/imagebump/internal/stopsignal"
)

// buildBinary builds imagebump into a temporary folder.
func buildBinary(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "imagebump")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// hangingRegistry accepts TCP connections and never answers; accepted
// receives a value for each connection.
func hangingRegistry(t *testing.T) (string, <-chan struct{}) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	accepted := make(chan struct{}, 100)
	go func() {
		var conns []net.Conn
		defer func() {
			for _, c := range conns {
				c.Close()
			}
		}()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c)
			select {
			case accepted <- struct{}{}:
			default:
			}
		}
	}()
	return ln.Addr().String(), accepted
}

// TestSignals checks what a user sees when stopping imagebump: the first
// SIGTERM ends the command with "interrupted by SIGTERM" (never "context
// canceled"), and a second signal exits at once with code 1.
func TestSignals(t *testing.T) {
	bin := buildBinary(t)
	host, accepted := hangingRegistry(t)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "imagebump.yaml")
	if err := os.WriteFile(cfg, []byte("registries:\n  - {host: \""+host+"\", insecure: true}\nimages:\n  - {name: app, repository: "+host+"/app, policy: {semver: \">=1.0.0\"}}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	repo := filepath.Join(dir, "repo")
	if err := os.MkdirAll(repo, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(repo, "app.yaml"), []byte("image: "+host+"/app:1.0.0 # {\"$imagepolicy\": \"default:app\"}\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	start := func() (*exec.Cmd, *bytes.Buffer) {
		cmd := exec.Command(bin, "plan", "-c", cfg, "--repo", repo)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// Signal only once it waits on the registry: its handlers are set
		// up by then, however slowly a loaded machine starts it.
		select {
		case <-accepted:
		case <-time.After(60 * time.Second):
			cmd.Process.Kill()
			t.Fatal("imagebump never reached the registry")
		}
		return cmd, &stderr
	}
	exitCode := func(cmd *exec.Cmd) int {
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case err := <-done:
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				return ee.ExitCode()
			}
			if err != nil {
				t.Fatal(err)
			}
			return 0
		case <-time.After(20 * time.Second):
			cmd.Process.Kill()
			t.Fatal("imagebump did not stop within 20s of the signal")
			return -1
		}
	}

	t.Run("one SIGTERM", func(t *testing.T) {
		cmd, stderr := start()
		if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		code := exitCode(cmd)
		out := stderr.String()
		if code != 1 || !strings.Contains(out, "interrupted by SIGTERM") || strings.Contains(out, "context canceled") {
			t.Errorf("exit %d, stderr:\n%s", code, out)
		}
	})
	t.Run("two signals", func(t *testing.T) {
		// A child that ignores its cancelled context: only the second
		// signal can end it.
		cmd, stderr := startStubborn(t)
		_ = cmd.Process.Signal(syscall.SIGINT)
		time.Sleep(200 * time.Millisecond)
		_ = cmd.Process.Signal(syscall.SIGTERM)
		if code := exitCode(cmd); code != 1 || !strings.Contains(stderr.String(), "second signal") {
			t.Errorf("exit %d, stderr:\n%s", code, stderr.String())
		}
	})
	t.Run("one SIGTERM sent twice", func(t *testing.T) {
		// timeout(1) sends SIGTERM to the process and to its group: the
		// second is the same request, which the child (ignoring its
		// context) outlives; a SIGTERM later is a second request.
		cmd, stderr := startStubborn(t)
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Process.Signal(syscall.SIGTERM)
		time.Sleep(stopsignal.Window + 200*time.Millisecond)
		if strings.Contains(stderr.String(), "second signal") {
			t.Errorf("the same SIGTERM, sent twice at once, was taken for a second signal:\n%s", stderr.String())
		}
		_ = cmd.Process.Signal(syscall.SIGTERM)
		if code := exitCode(cmd); code != 1 || !strings.Contains(stderr.String(), "second signal") {
			t.Errorf("exit %d after a SIGTERM %s later, stderr:\n%s", code, stopsignal.Window, stderr.String())
		}
	})
}

// lockedStderr is a child's stderr that the test may read while the
// child writes it.
type lockedStderr struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *lockedStderr) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *lockedStderr) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// startStubborn starts the test binary as a stubborn child (below) and
// returns once it is ready, with its stderr.
func startStubborn(t *testing.T) (*exec.Cmd, *lockedStderr) {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(self, "-test.run=^$")
	cmd.Env = append(os.Environ(), stubbornChildEnv+"=1")
	stderr := &lockedStderr{}
	cmd.Stderr = stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ready := make([]byte, 6)
	if _, err := stdout.Read(ready); err != nil {
		t.Fatal(err)
	}
	return cmd, stderr
}

// stubbornChildEnv makes the test binary a process that sets up
// SignalContext, says "ready\n" and then ignores its context.
const stubbornChildEnv = "IMAGEBUMP_TEST_STUBBORN_CHILD"

func stubbornChild() {
	ctx, stop := commands.SignalContext(context.Background(), os.Stderr)
	defer stop()
	os.Stdout.WriteString("ready\n")
	<-ctx.Done()
	time.Sleep(time.Minute)
	os.Exit(3)
}
