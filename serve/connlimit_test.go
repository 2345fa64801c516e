package serve

import (
	"bufio"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// limitedServer serves handler on loopback through a connLimit of n
// connections, as Run does, and returns its address.
func limitedServer(t *testing.T, n int, handler http.Handler) string {
	t.Helper()
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln := newConnLimit(inner, n, slog.New(slog.DiscardHandler))
	srv := &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute, ConnState: ln.track}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return inner.Addr().String()
}

// dialMany opens n connections to addr, each then given to use, and closes
// them at the test's end.
func dialMany(t *testing.T, addr string, n int, use func(net.Conn) error) {
	t.Helper()
	var conns []net.Conn
	t.Cleanup(func() {
		for _, c := range conns {
			c.Close()
		}
	})
	for range n {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
		if use != nil {
			if err := use(c); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// getOn sends one GET on c and reads the answer's status line.
func getOn(c net.Conn, path string) (int, error) {
	if _, err := fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: x\r\n\r\n", path); err != nil {
		return 0, err
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return 0, err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, nil
}

// TestConnLimitNeverCutsARequest: at the cap, with every connection's
// request in flight and no one else connecting, no connection is closed:
// a connection is only closed for a new one, and only one without a
// request.
func TestConnLimitNeverCutsARequest(t *testing.T) {
	const n = 4
	addr := limitedServer(t, n, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		time.Sleep(300 * time.Millisecond)
	}))
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for range n {
		wg.Go(func() {
			c, err := net.Dial("tcp", addr)
			if err != nil {
				errs <- err
				return
			}
			defer c.Close()
			if code, err := getOn(c, "/slow"); err != nil || code != http.StatusOK {
				errs <- fmt.Errorf("status %d, %v", code, err)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("a request at the cap: %v", err)
	}
}

// TestConnLimitWaitsThenTakesAnIdleOne: at the cap with every request in
// flight, a new connection waits; once those requests are answered and
// their keep-alives go idle, it is served at once, in place of one of
// them, not after their idle timeout.
func TestConnLimitWaitsThenTakesAnIdleOne(t *testing.T) {
	const n = 4
	addr := limitedServer(t, n, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			time.Sleep(500 * time.Millisecond)
		}
	}))
	var wg sync.WaitGroup
	dialMany(t, addr, n, func(c net.Conn) error {
		wg.Go(func() {
			if code, err := getOn(c, "/slow"); err != nil || code != http.StatusOK {
				t.Errorf("a busy connection's request: status %d, %v", code, err)
			}
		})
		return nil
	})
	time.Sleep(100 * time.Millisecond) // the four requests are in flight
	start := time.Now()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	code, err := getOn(c, "/fast")
	if err != nil || code != http.StatusOK {
		t.Fatalf("the new connection: status %d, %v", code, err)
	}
	if d := time.Since(start); d < 300*time.Millisecond || d > 3*time.Second {
		t.Errorf("the new connection was served after %v, want once the busy ones were answered (about 400ms)", d)
	}
	wg.Wait()
}

// TestHealthListenUnderAFlood: clients that hold every connection of the
// main address in the middle of a request (a slow webhook sender) hold its
// /healthz; the health address still answers the probes at once, and
// serves nothing else.
func TestHealthListenUnderAFlood(t *testing.T) {
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	health, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	startFake(t, Options{Config: mustConfig(t, "1h"), MaxJitter: -1, Listener: inner, HealthListener: health})
	addr := inner.Addr().String()
	dialMany(t, addr, MaxConnections, func(c net.Conn) error {
		// A webhook's headers, and a body that never comes: the request
		// is being read, and the connection is never closed for another.
		_, err := fmt.Fprintf(c, "POST /hook/app HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n")
		return err
	})
	// Longer than a connection without a whole header is kept at the cap.
	client := &http.Client{Timeout: newGrace + time.Second}
	if resp, err := client.Get("http://" + addr + "/healthz"); err == nil {
		resp.Body.Close()
		t.Fatalf("/healthz on the flooded address answered %d: the flood does not hold it, and this test shows nothing", resp.StatusCode)
	}
	for _, tt := range []struct {
		path string
		want int
	}{
		{"/healthz", http.StatusOK},
		{"/readyz", http.StatusOK},
		{"/metrics", http.StatusNotFound},
		{"/api/v1/status", http.StatusNotFound},
		{"/hook/app", http.StatusNotFound},
	} {
		client := &http.Client{Timeout: 5 * time.Second}
		start := time.Now()
		resp, err := client.Get("http://" + health.Addr().String() + tt.path)
		if err != nil {
			t.Fatalf("%s on the health address: %v", tt.path, err)
		}
		resp.Body.Close()
		if d := time.Since(start); resp.StatusCode != tt.want || d > 2*time.Second {
			t.Errorf("%s on the health address: %d after %v, want %d at once", tt.path, resp.StatusCode, d, tt.want)
		}
	}
}

// TestHealthListenTaken: a health address that cannot be listened on
// stops Run with an error naming it, before any cycle, and closes the
// main address.
func TestHealthListenTaken(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	main, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := newFake(t, Options{Config: mustConfig(t, "1h"), MaxJitter: -1, Listener: main, HealthListen: taken.Addr().String()})
	f.start()
	err = f.wait(t, 10*time.Second)
	if want := "listening on " + taken.Addr().String() + " for the health probes"; err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("Run: %v, want an error saying %q", err, want)
	}
	if n := len(f.runner.started); n != 0 {
		t.Errorf("%d cycles started", n)
	}
	waitFor(t, func() bool {
		c, err := net.DialTimeout("tcp", main.Addr().String(), time.Second)
		if err == nil {
			c.Close()
		}
		return err != nil
	}, "the main address closed")
}

// TestSamePort: which health addresses New refuses, as taking the status
// page's port, and which it leaves to the listen itself.
func TestSamePort(t *testing.T) {
	for _, tt := range []struct {
		listen, health string
		same           bool
	}{
		{":9090", ":9090", true},
		{"127.0.0.1:9090", "0.0.0.0:9090", true},
		{"[::]:9090", "127.0.0.1:9090", true},
		{"127.0.0.1:0", "127.0.0.1:0", false},
		{"10.0.0.1:9090", "127.0.0.1:9090", false},
		{":8080", ":9440", false},
	} {
		if got := SamePort(tt.health, tt.listen); got != tt.same {
			t.Errorf("SamePort(%q, %q) = %v, want %v", tt.health, tt.listen, got, tt.same)
		}
		_, err := New(Options{Config: mustConfig(t, ""), Workdir: t.TempDir(), Listen: tt.listen, HealthListen: tt.health})
		if got := err != nil && strings.Contains(err.Error(), "HealthListen"); got != tt.same {
			t.Errorf("New with --listen %s --health-listen %s: %v; want it refused: %v", tt.listen, tt.health, err, tt.same)
		}
	}
}
