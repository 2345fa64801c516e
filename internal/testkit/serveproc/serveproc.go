// Package serveproc runs `imagebump serve` as a process of its own in
// tests, so that it gets real signals and is reached over loopback HTTP.
// The command must listen on 127.0.0.1:0 and log JSON: Start waits for the
// "serving" record to learn the address. The process's log is kept, shown
// when the test fails, and the process is stopped when the test ends.
package serveproc

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os/exec"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/imagebump/imagebump/serve"
)

// Process is a started serve process.
type Process struct {
	Cmd *exec.Cmd
	// URL is where it serves, such as http://127.0.0.1:41234.
	URL string
	// Kill stops the process when the test ends while it still runs; by
	// default Cmd.Process.Kill. A wrapper (strace) sets its own.
	Kill func()

	client *http.Client
	done   chan struct{} // closed once the process exited
	err    error         // its Wait error, once done

	mu    sync.Mutex
	lines []string // its standard error, a line each
}

// Start starts cmd and returns once it serves; its standard error is
// read here.
func Start(t testing.TB, cmd *exec.Cmd) *Process {
	t.Helper()
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &Process{Cmd: cmd, client: &http.Client{Timeout: 10 * time.Second}, done: make(chan struct{})}
	p.Kill = func() { _ = cmd.Process.Kill() }
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
		for sc.Scan() {
			p.mu.Lock()
			p.lines = append(p.lines, sc.Text())
			p.mu.Unlock()
			var rec struct{ Msg, Address string }
			if json.Unmarshal(sc.Bytes(), &rec) == nil && rec.Msg == "serving" {
				select {
				case addr <- rec.Address:
				default:
				}
			}
		}
		p.err = cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			p.Kill()
			<-p.done
		}
		if t.Failed() {
			for _, l := range p.Lines() {
				t.Logf("serve: %s", l)
			}
		}
	})
	select {
	case a := <-addr:
		p.URL = "http://" + a
	case <-p.done:
		t.Fatalf("serve exited before serving: %v\n%v", p.err, p.Lines())
	case <-time.After(time.Minute):
		t.Fatal("serve did not start serving within a minute")
	}
	return p
}

// Done is closed once the process exited.
func (p *Process) Done() <-chan struct{} { return p.done }

// Err is the process's Wait error, once Done is closed.
func (p *Process) Err() error { return p.err }

// Lines returns the lines of its standard error so far.
func (p *Process) Lines() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.lines...)
}

// Exit waits up to d for the process to exit and returns its exit code.
func (p *Process) Exit(t testing.TB, d time.Duration) int {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(d):
		t.Fatalf("serve did not exit within %s", d)
	}
	var ee *exec.ExitError
	if errors.As(p.err, &ee) {
		return ee.ExitCode()
	}
	if p.err != nil {
		t.Fatal(p.err)
	}
	return 0
}

// Get returns the body of path, which must answer 200.
func (p *Process) Get(t testing.TB, path string) []byte {
	t.Helper()
	resp, err := p.client.Get(p.URL + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s, %v\n%s", path, resp.Status, err, body)
	}
	return body
}

// Status returns /api/v1/status.
func (p *Process) Status(t testing.TB) serve.Status {
	t.Helper()
	var st serve.Status
	if err := json.Unmarshal(p.Get(t, "/api/v1/status"), &st); err != nil {
		t.Fatalf("/api/v1/status: %v", err)
	}
	return st
}

// Metric scrapes /metrics and returns the sum of the counters or gauges
// called name whose labels include labels (name, value pairs); 0 when
// there is none.
func (p *Process) Metric(t testing.TB, name string, labels ...string) float64 {
	t.Helper()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(bytes.NewReader(p.Get(t, "/metrics")))
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	for _, m := range fams[name].GetMetric() {
		match := true
		for i := 0; i+1 < len(labels); i += 2 {
			ok := false
			for _, l := range m.GetLabel() {
				ok = ok || l.GetName() == labels[i] && l.GetValue() == labels[i+1]
			}
			match = match && ok
		}
		if match {
			sum += m.GetCounter().GetValue() + m.GetGauge().GetValue()
		}
	}
	return sum
}
