//go:build unix

package commands

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// fifo makes a named pipe in a temporary folder and writes content to it
// once, when a reader opens it, as a shell's -c <(cat FILE) does.
func fifo(t *testing.T, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "config.pipe")
	if err := syscall.Mkfifo(p, 0o600); err != nil {
		t.Fatal(err)
	}
	go func() {
		f, err := os.OpenFile(p, os.O_WRONLY, 0)
		if err != nil {
			return
		}
		f.WriteString(content)
		f.Close()
	}()
	return p
}

// TestConfigFromPipe: a config given as a pipe is read once and checked
// whole. Before, the first of two reads (looking for Flux objects) took
// it all and the second found an empty, valid config.
func TestConfigFromPipe(t *testing.T) {
	tests := []struct {
		name, content string
		wantCode      int
		want          string
	}{
		{"a valid config", "images:\n  - {name: apps:web, repository: ghcr.io/acme/web, policy: {semver: \">=1\"}}\n", 0, "config is valid (1 image policy, 0 registries)"},
		{"an unknown key", "images:\n  - {name: apps:web, repository: ghcr.io/acme/web, policy: {semver: \">=1\"}, bogus: 1}\n", 64, `images[0]: unknown key "bogus"`},
		{"Flux objects", "apiVersion: image.toolkit.fluxcd.io/v1beta2\nkind: ImagePolicy\n", 64, "imagebump reads Flux objects from files or folders only"},
		{"nothing", "", 64, "gave nothing to read"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := fifo(t, tt.content)
			stdout, stderr, code := runMain(t, "validate", "-c", p)
			if code != tt.wantCode || !strings.Contains(stdout+stderr, tt.want) {
				t.Errorf("validate -c PIPE: exit %d, output %q; want exit %d and %q", code, stdout+stderr, tt.wantCode, tt.want)
			}
		})
	}
}

// TestServeSignalWhileLoading: a signal that comes while serve still
// reads its config (here from a pipe that is written late, as from a slow
// mount) is answered once serve runs: a SIGHUP by a reload (its default
// would kill the process, exit 129), a SIGTERM by a stop with exit 0
// (serve runs on a context main's cancel does not reach, and went on).
func TestServeSignalWhileLoading(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGHUP, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "config.pipe")
			if err := syscall.Mkfifo(p, 0o600); err != nil {
				t.Fatal(err)
			}
			const config = "images:\n  - {name: apps:web, repository: ghcr.io/acme/web, policy: {semver: \">=1\"}}\n" +
				"targets:\n  - {name: a, git: {url: \"file:///nonexistent/a.git\", branch: main}, schedule: 1h}\n"
			reads := 1 // the start's
			if sig == syscall.SIGHUP {
				reads = 2 // and, once serve runs, the reload's
			}
			opened := make(chan struct{})
			write, again := make(chan struct{}), make(chan struct{})
			go func() {
				for i := range reads {
					if i == 1 {
						<-again
					}
					f, err := os.OpenFile(p, os.O_WRONLY, 0)
					if err != nil {
						return
					}
					if i == 0 {
						close(opened)
						<-write
					}
					f.WriteString(config)
					f.Close()
				}
			}()
			cmd := exec.Command(os.Args[0], "serve", "--listen", "127.0.0.1:0", "--workdir", t.TempDir(), "-c", p)
			cmd.Env = append(os.Environ(), asBinaryEnv+"=1")
			stderr := &lockedBuffer{}
			cmd.Stderr = stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			exited := make(chan error, 1)
			go func() { exited <- cmd.Wait() }()
			t.Cleanup(func() { _ = cmd.Process.Kill() })
			select {
			case <-opened: // serve reads the config
			case <-time.After(30 * time.Second):
				t.Fatal("serve never opened its config")
			}
			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			select {
			case err := <-exited:
				t.Fatalf("a %v while the config loads ended serve before it ran: %v\n%s", sig, err, stderr.String())
			case <-time.After(300 * time.Millisecond):
			}
			close(write)
			wait := func(what, text string) {
				t.Helper()
				for deadline := time.Now().Add(30 * time.Second); !strings.Contains(stderr.String(), text); time.Sleep(20 * time.Millisecond) {
					if time.Now().After(deadline) {
						t.Fatalf("%s: no %q in the log:\n%s", what, text, stderr.String())
					}
				}
			}
			if sig == syscall.SIGHUP {
				wait("start", `"serving"`)
				close(again)
				wait("the SIGHUP", "config reloaded")
				if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
					t.Fatal(err)
				}
			}
			select {
			case err := <-exited:
				if err != nil {
					t.Errorf("exit: %v, want 0\n%s", err, stderr.String())
				}
			case <-time.After(30 * time.Second):
				t.Fatalf("serve did not stop:\n%s", stderr.String())
			}
		})
	}
}
