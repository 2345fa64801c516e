//go:build unix

package main

import (
	"bufio"
	"bytes"
	"errors"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/imagebump/imagebump/internal/testkit/testgit"
)

// TestDemoBrokenPipe runs `imagebump demo` with its stdout a pipe whose
// reader goes away after two lines, as `imagebump demo | head -2` does:
// the next write ended the process with SIGPIPE, and the demo's temporary
// folder stayed behind. It must stop, remove the folder and exit 1, with
// nothing on stderr.
func TestDemoBrokenPipe(t *testing.T) {
	bin := buildBinary(t)
	tmp := t.TempDir()
	cmd := exec.Command(bin, "demo")
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout = w
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	br := bufio.NewReader(r)
	for range 2 {
		if _, err := br.ReadString('\n'); err != nil {
			r.Close()
			t.Fatalf("reading the demo's first lines: %v (stderr: %s)", err, stderr.String())
		}
	}
	// The second line names the folder, made by then.
	if left := leftIn(t, tmp); len(left) != 1 || !strings.HasPrefix(left[0], "imagebump-demo-") {
		t.Errorf("TMPDIR holds %q while the demo runs, want its folder", left)
	}
	r.Close()
	code := waitExit(t, cmd)
	if code != 1 || stderr.Len() != 0 {
		t.Errorf("exit %d, stderr %q; want exit 1 and nothing", code, stderr.String())
	}
	if left := leftIn(t, tmp); len(left) != 0 {
		t.Errorf("the demo left %q in TMPDIR", left)
	}
}

// TestPlanCloneBrokenPipe runs `imagebump plan` on a clone (no --repo)
// with its stderr a pipe whose reader goes away while the clone is under
// way: the log line that says it was cloned ended the process with
// SIGPIPE, and the temporary clone stayed behind. It must stop, remove the
// clone and exit 1.
func TestPlanCloneBrokenPipe(t *testing.T) {
	bin := buildBinary(t)
	registry := closedAddr(t)
	bare := testgit.NewBare(t, map[string]string{"app.yaml": "image: " + registry + "/app:1.0.0 # {\"$imagepolicy\": \"default:app\"}\n"})
	remote, arrived, release := gatedRemote(t, testgit.StartHTTP(t, bare, false).URL)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "imagebump.yaml")
	if err := os.WriteFile(cfg, []byte("registries:\n  - {host: \""+registry+"\", insecure: true}\nimages:\n  - {name: app, repository: "+registry+"/app, policy: {semver: \">=1.0.0\"}}\ngit: {url: \""+remote+"\", branch: main}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	cmd := exec.Command(bin, "plan", "-c", cfg)
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = w
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	select {
	case <-arrived:
	case <-time.After(60 * time.Second):
		r.Close()
		close(release)
		cmd.Process.Kill()
		t.Fatal("plan never asked the remote for its objects")
	}
	if left := leftIn(t, tmp); len(left) != 1 || !strings.HasPrefix(left[0], "imagebump-git-") {
		t.Errorf("TMPDIR holds %q while plan clones, want the clone's folder", left)
	}
	r.Close()
	close(release)
	if code := waitExit(t, cmd); code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
	if left := leftIn(t, tmp); len(left) != 0 {
		t.Errorf("plan left %q in TMPDIR", left)
	}
}

// gatedRemote serves the Git remote at upstream through a proxy that holds
// the fetch of objects (git-upload-pack) until release is closed; arrived
// receives a value when one comes.
func gatedRemote(t *testing.T, upstream string) (remote string, arrived <-chan struct{}, release chan struct{}) {
	t.Helper()
	u, err := url.Parse(upstream)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: u.Scheme, Host: u.Host})
	arr := make(chan struct{}, 10)
	release = make(chan struct{})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/git-upload-pack") {
			select {
			case arr <- struct{}{}:
			default:
			}
			<-release
		}
		proxy.ServeHTTP(w, r)
	})}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { srv.Close() })
	return "http://" + ln.Addr().String() + u.Path, arr, release
}

// closedAddr returns a loopback address nothing listens on.
func closedAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// leftIn returns the names in dir.
func leftIn(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

// waitExit waits up to a minute for cmd to exit and returns its exit code:
// -1 when a signal ended it.
func waitExit(t *testing.T, cmd *exec.Cmd) int {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			if !ee.Exited() {
				t.Logf("ended by %v", ee.ProcessState)
			}
			return ee.ExitCode()
		}
		if err != nil {
			t.Fatal(err)
		}
		return 0
	case <-time.After(time.Minute):
		cmd.Process.Kill()
		t.Fatal("imagebump did not exit within a minute of the reader going away")
		return -1
	}
}
