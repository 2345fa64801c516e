package serve

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	ggcrregistry "github.com/google/go-containerregistry/pkg/registry"
	dto "github.com/prometheus/client_model/go"

	"github.com/imagebump/imagebump/config"
	"github.com/imagebump/imagebump/internal/testkit/testgit"
	"github.com/imagebump/imagebump/internal/testkit/testregistry"
)

// memRegistry serves go-containerregistry's in-memory registry on
// loopback, as a testregistry.Server so that its Push works.
func memRegistry(t testing.TB) *testregistry.Server {
	t.Helper()
	srv := httptest.NewServer(ggcrregistry.New(ggcrregistry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	host := strings.TrimPrefix(srv.URL, "http://")
	return &testregistry.Server{Host: host, URL: srv.URL, Transport: http.DefaultTransport.(*http.Transport).Clone()}
}

// repoFiles is a cluster repository with one marker per image.
func repoFiles(images map[string]string) map[string]string {
	files := map[string]string{"README.md": "fleet\n"}
	for policy, ref := range images {
		files["deploy/"+strings.ReplaceAll(policy, ":", "-")+".yaml"] = "spec:\n  image: " + ref + " # {\"$imagepolicy\": \"" + policy + "\"}\n"
	}
	return files
}

// gitCreds writes the git server's credentials next to the config and
// returns the git.auth YAML that names them.
func gitCreds(t testing.TB, dir string, srv *testgit.HTTPServer) string {
	t.Helper()
	writeTestFile(t, filepath.Join(dir, "user"), srv.Username+"\n")
	writeTestFile(t, filepath.Join(dir, "pass"), srv.Password+"\n")
	return "{usernameFile: user, passwordFile: pass}"
}

func writeTestFile(t testing.TB, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// running is a Server run in-process on the system clock.
type running struct {
	*Server
	url     string // http://127.0.0.1:PORT
	signals chan os.Signal
	errc    chan error
}

// runServer builds and runs a Server for cfgFile, listening on loopback.
// The test's cleanup stops it.
func runServer(t *testing.T, cfgFile, workdir string, opts Options) *running {
	t.Helper()
	cfg, err := config.Load(cfgFile)
	if err != nil {
		t.Fatal(err)
	}
	ln := opts.Listener
	if ln == nil {
		if ln, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
			t.Fatal(err)
		}
	}
	r := &running{signals: make(chan os.Signal, 4), errc: make(chan error, 1), url: "http://" + ln.Addr().String()}
	opts.Config, opts.Workdir, opts.Listener, opts.Signals = cfg, workdir, ln, r.signals
	if opts.Logger == nil {
		opts.Logger = testLogger(t)
	}
	s, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	r.Server = s
	go func() { r.errc <- s.Run(context.Background()) }()
	t.Cleanup(func() { r.stop(t) })
	return r
}

// stop sends SIGTERM (unless Run already returned) and waits for Run.
func (r *running) stop(t *testing.T) error {
	t.Helper()
	select {
	case err := <-r.errc:
		r.errc <- err
		return err
	default:
	}
	r.signals <- syscall.SIGTERM
	select {
	case err := <-r.errc:
		r.errc <- err
		return err
	case <-time.After(60 * time.Second):
		t.Fatal("Run did not return within 60s of SIGTERM")
		return nil
	}
}

// wait waits for Run to return.
func (r *running) wait(t *testing.T) error {
	t.Helper()
	select {
	case err := <-r.errc:
		r.errc <- err
		return err
	case <-time.After(60 * time.Second):
		t.Fatal("Run did not return within 60s")
		return nil
	}
}

// status GETs /api/v1/status over HTTP.
func (r *running) status(t *testing.T) Status {
	t.Helper()
	resp, err := http.Get(r.url + "/api/v1/status")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var st Status
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		t.Fatal(err)
	}
	return st
}

func (r *running) target(t *testing.T, name string) TargetStatus {
	t.Helper()
	for _, ts := range r.status(t).Targets {
		if ts.Name == name {
			return ts
		}
	}
	t.Fatalf("no target %s", name)
	return TargetStatus{}
}

// waitReal polls cond every 20 ms for up to d of real time.
func waitReal(t *testing.T, d time.Duration, cond func() bool, what string) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", d, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// testLogger sends the server's records to the test log, until the test
// ends.
func testLogger(t *testing.T) *slog.Logger {
	w := &testLogWriter{t: t}
	t.Cleanup(func() {
		w.mu.Lock()
		w.done = true
		w.mu.Unlock()
	})
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

type testLogWriter struct {
	t    *testing.T
	mu   sync.Mutex
	done bool
}

func (w *testLogWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.done {
		w.t.Log(strings.TrimRight(string(p), "\n"))
	}
	return len(p), nil
}

// head returns where main points in the bare repository. --verify makes
// git fail on a ref it cannot read, rather than print the argument back
// as the name of a file (the bare repository holds refs/heads/main).
func head(t *testing.T, bare string) string {
	return strings.TrimSpace(testgit.Git(t, bare, "rev-parse", "--verify", "refs/heads/main"))
}

// TestServeEndToEnd runs serve against CNCF distribution and git
// http-backend: a tag pushed to the registry becomes a commit within one
// interval; a cycle with nothing new costs one tag listing per repository
// and one fetch; /metrics reports it all in the exposition format.
func TestServeEndToEnd(t *testing.T) {
	reg := testregistry.Start(t, testregistry.Options{})
	reg.Push(t, "acme/web", "1.0.0")
	reg.Push(t, "acme/api", "2.0.0")
	bare := testgit.NewBare(t, repoFiles(map[string]string{
		"apps:web": reg.Repo("acme/web") + ":1.0.0",
		"apps:api": reg.Repo("acme/api") + ":2.0.0",
	}))
	gsrv := testgit.StartHTTP(t, bare, true)
	dir := t.TempDir()
	const interval = 2 * time.Second
	cfgFile := filepath.Join(dir, "imagebump.yaml")
	writeTestFile(t, cfgFile, fmt.Sprintf(`registries:
  - {host: %q, insecure: true}
images:
  - {name: apps:web, repository: %s, policy: {semver: ">=1.0.0"}}
  - {name: apps:api, repository: %s, policy: {semver: ">=1.0.0"}}
targets:
  - name: fleet
    git: {url: %q, branch: main, auth: %s}
    schedule: %q
`, reg.Host, reg.Repo("acme/web"), reg.Repo("acme/api"), gsrv.URL, gitCreds(t, dir, gsrv), interval.String()))
	srv := runServer(t, cfgFile, filepath.Join(dir, "work"), Options{})
	window := interval / 10

	// The first cycle, at start within the jitter window: nothing new.
	waitReal(t, 30*time.Second, func() bool { return srv.target(t, "fleet").CyclesRun >= 1 }, "the first cycle")
	first := srv.target(t, "fleet").Cycles[0]
	if first.Result != ResultSuccess || first.Pushed || first.Reason != ReasonStart {
		t.Fatalf("first cycle: %+v", first)
	}
	if d := first.Started.Sub(srv.status(t).Started); d < 0 || d > window+2*time.Second {
		t.Errorf("first cycle started %s after start; want within the jitter window %s (plus slack)", d, window)
	}

	// A cycle with nothing new: one tag listing per repository, one
	// fetch (at most two HTTP requests to the git server), no push.
	idle := func() bool { return srv.target(t, "fleet").RunningSince == nil }
	waitReal(t, 30*time.Second, idle, "an idle moment")
	n0, m0, g0, p0 := srv.target(t, "fleet").CyclesRun, scrape(t, srv.Handler()), gsrv.Requests(), gsrv.Pushes()
	waitReal(t, 30*time.Second, func() bool { return srv.target(t, "fleet").CyclesRun >= n0+2 && idle() }, "two more cycles")
	n1, m1, g1, p1 := srv.target(t, "fleet").CyclesRun, scrape(t, srv.Handler()), gsrv.Requests(), gsrv.Pushes()
	cycles := float64(n1 - n0)
	reqs := func(m map[string]*dto.MetricFamily) float64 {
		v, _ := metricValue(m, "imagebump_registry_requests_total", "host", reg.Host)
		return v
	}
	if got := (reqs(m1) - reqs(m0)) / cycles; got != 2 {
		t.Errorf("registry requests per cycle with nothing new: %v, want 2 (one tag list per repository)", got)
	}
	if got := float64(g1-g0) / cycles; got > 2 || p1 != p0 {
		t.Errorf("git requests per cycle with nothing new: %v (want at most 2: one fetch), pushes %d -> %d", got, p0, p1)
	}
	// And no file read: the marker index serves every one.
	files := func(m map[string]*dto.MetricFamily, source string) float64 {
		v, _ := metricValue(m, "imagebump_files_scanned_total", "target", "fleet", "source", source)
		return v
	}
	if read, served := files(m1, "read")-files(m0, "read"), files(m1, "index")-files(m0, "index"); read != 0 || served == 0 {
		t.Errorf("files per cycle with nothing new: %v read, %v served from the index; want none read", read/cycles, served/cycles)
	}
	if c := srv.target(t, "fleet").Cycles[0]; c.FilesRead != 0 || c.FilesFromIndex == 0 {
		t.Errorf("status of a cycle with nothing new: %d files read, %d from the index", c.FilesRead, c.FilesFromIndex)
	}

	// A new tag becomes a commit on the first cycle that starts after it,
	// within one interval (plus the jitter window) of the push or of the
	// end of a cycle that was running then.
	before := head(t, bare)
	pushed := time.Now()
	reg.Push(t, "acme/web", "1.1.0")
	var ts TargetStatus
	waitReal(t, 30*time.Second, func() bool {
		ts = srv.target(t, "fleet")
		return len(ts.Cycles) > 0 && ts.Cycles[0].Pushed
	}, "the bump's cycle")
	if head(t, bare) == before {
		t.Fatal("the remote did not move")
	}
	var bump, running *CycleStatus
	for i := len(ts.Cycles) - 1; i >= 0; i-- {
		c := &ts.Cycles[i]
		if c.Started.Before(pushed) {
			running = c
			continue
		}
		if bump == nil {
			bump = c
		}
	}
	if bump == nil || !bump.Pushed || bump.Commit != head(t, bare) {
		t.Fatalf("the first cycle after the push did not push the bump: %+v", ts.Cycles)
	}
	from := pushed
	if running != nil {
		if end := running.Started.Add(time.Duration(running.DurationSeconds * float64(time.Second))); end.After(from) {
			from = end
		}
	}
	if late := bump.Started.Sub(from); late > interval+window+1500*time.Millisecond {
		t.Errorf("the bump's cycle started %s after the tag was pushed (or the running cycle ended); want within %s", late, interval+window)
	}
	if got, _ := testgit.ReadFile(t, bare, "main", "deploy/apps-web.yaml"); !strings.Contains(got, reg.Repo("acme/web")+":1.1.0 ") {
		t.Errorf("pushed file: %q", got)
	}
	if bump.ChangesTotal != 1 || bump.Changes[0].Old != reg.Repo("acme/web")+":1.0.0" || bump.Changes[0].Policy != "apps:web" {
		t.Errorf("bump's changes: %+v", bump.Changes)
	}
	web := ts.Policies[0]
	if web.Name != "apps:web" {
		web = ts.Policies[1]
	}
	if web.Latest != "1.1.0" || web.Seen != 2 || web.Candidates != 2 {
		t.Errorf("policy status: %+v", web)
	}

	// /metrics over HTTP, parsed.
	resp, err := http.Get(srv.url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	m := parseMetrics(t, resp.Body)
	resp.Body.Close()
	checks := []struct {
		name   string
		labels []string
		min    float64
		max    float64
	}{
		{"imagebump_cycles_total", []string{"target", "fleet", "result", "success"}, float64(ts.CyclesRun), float64(ts.CyclesRun) + 1},
		{"imagebump_cycles_total", []string{"target", "fleet", "result", "error"}, 0, 0},
		{"imagebump_cycle_duration_seconds", []string{"target", "fleet"}, float64(ts.CyclesRun), float64(ts.CyclesRun) + 1},
		{"imagebump_registry_requests_total", []string{"host", reg.Host, "code", "200"}, 2 * float64(ts.CyclesRun), 1e9},
		{"imagebump_registry_throttled_total", nil, 0, 0},
		{"imagebump_pushes_total", []string{"target", "fleet"}, 1, 1},
		{"imagebump_bumps_total", []string{"policy", "apps:web"}, 1, 1},
		{"imagebump_tags_seen", []string{"repository", reg.Repo("acme/web")}, 2, 2},
		{"imagebump_tags_seen", []string{"repository", reg.Repo("acme/api")}, 1, 1},
		{"imagebump_last_success_timestamp_seconds", []string{"target", "fleet"}, float64(pushed.Unix()), float64(time.Now().Unix() + 1)},
		{"imagebump_targets", nil, 1, 1},
		{"imagebump_config_reloads_total", []string{"result", "failure"}, 0, 0},
		{"go_goroutines", nil, 1, 1e6},
		{"process_resident_memory_bytes", nil, 1, 1e12},
	}
	for _, c := range checks {
		got, found := metricValue(m, c.name, c.labels...)
		if (!found && c.max > 0) || got < c.min || got > c.max {
			t.Errorf("%s%v = %v (found %v), want in [%v, %v]", c.name, c.labels, got, found, c.min, c.max)
		}
	}
	if err := srv.stop(t); err != nil {
		t.Errorf("Run: %v", err)
	}
}

// stallingGit is a proxy in front of a git server that, while stall is
// on, takes each push from its client whole and holds it until release,
// then passes it on; a push whose client goes away first never reaches the
// server (git http-backend spins on a body cut short, so a cut is shown to
// the server as no push at all, which is what a real server makes of a
// pack it did not get whole). started receives one value per push held.
type stallingGit struct {
	url     string
	stall   atomic.Bool
	started chan struct{}
	cut     atomic.Int32 // pushes dropped because their client went away
	mu      sync.Mutex
	gate    chan struct{}
}

func newStallingGit(t *testing.T, backend string) *stallingGit {
	t.Helper()
	u, err := url.Parse(backend)
	if err != nil {
		t.Fatal(err)
	}
	g := &stallingGit{started: make(chan struct{}, 10), gate: make(chan struct{})}
	rp := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: u.Scheme, Host: u.Host})
	rp.ErrorLog = log.New(io.Discard, "", 0)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/git-receive-pack") && g.stall.Load() {
			g.mu.Lock()
			gate := g.gate
			g.mu.Unlock()
			// Reading the whole body lets the HTTP server notice when the
			// client hangs up.
			body, err := io.ReadAll(r.Body)
			if err != nil {
				return
			}
			g.started <- struct{}{}
			select {
			case <-gate:
				r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
			case <-r.Context().Done():
				g.cut.Add(1)
				return
			}
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(g.release)
	g.url = srv.URL + u.Path
	return g
}

// release lets the pushes held so far go on.
func (g *stallingGit) release() {
	g.mu.Lock()
	defer g.mu.Unlock()
	close(g.gate)
	g.gate = make(chan struct{})
}

func (g *stallingGit) waitPush(t *testing.T) {
	t.Helper()
	select {
	case <-g.started:
	case <-time.After(30 * time.Second):
		t.Fatal("no push came within 30s")
	}
}

// TestServeSIGTERMDuringPush stops serve while its push is half sent: after
// the grace period the cycle is abandoned, Run returns nil, and the remote
// is as before (no partial push, its objects intact); the next start
// completes the bump. With a longer grace, the push finishes instead.
func TestServeSIGTERMDuringPush(t *testing.T) {
	reg := memRegistry(t)
	reg.Push(t, "acme/web", "1.0.0", "1.1.0")
	bare := testgit.NewBare(t, repoFiles(map[string]string{"apps:web": reg.Repo("acme/web") + ":1.0.0"}))
	gsrv := testgit.StartHTTP(t, bare, true)
	proxy := newStallingGit(t, gsrv.URL)
	dir := t.TempDir()
	cfgFile := filepath.Join(dir, "imagebump.yaml")
	writeTestFile(t, cfgFile, fmt.Sprintf(`registries: [{host: %q, insecure: true}]
images: [{name: apps:web, repository: %s, policy: {semver: ">=1.0.0"}}]
git: {url: %q, branch: main, auth: %s}
schedule: 1h
`, reg.Host, reg.Repo("acme/web"), proxy.url, gitCreds(t, dir, gsrv)))
	workdir := filepath.Join(dir, "work")
	before := head(t, bare)

	t.Run("abandoned after the grace period", func(t *testing.T) {
		proxy.stall.Store(true)
		srv := runServer(t, cfgFile, workdir, Options{Grace: 300 * time.Millisecond, MaxJitter: -1})
		proxy.waitPush(t)
		stopped := time.Now()
		if err := srv.stop(t); err != nil {
			t.Errorf("Run: %v, want nil", err)
		}
		if d := time.Since(stopped); d > 10*time.Second {
			t.Errorf("stop took %s with a grace of 300ms", d)
		}
		waitReal(t, 10*time.Second, func() bool { return proxy.cut.Load() == 1 }, "the git server to see the push cut off")
		if got := head(t, bare); got != before {
			t.Errorf("remote main moved to %s after an abandoned push", got)
		}
		testgit.Git(t, bare, "fsck", "--strict")
		if c := srv.Status().Targets[0].Cycles; len(c) != 1 || c[0].Result != ResultAbandoned {
			t.Errorf("cycles: %+v", c)
		}
	})

	t.Run("the next start completes the bump", func(t *testing.T) {
		proxy.stall.Store(false)
		srv := runServer(t, cfgFile, workdir, Options{MaxJitter: -1})
		waitReal(t, 30*time.Second, func() bool { return head(t, bare) != before }, "the bump")
		if err := srv.stop(t); err != nil {
			t.Errorf("Run: %v", err)
		}
		testgit.Git(t, bare, "fsck", "--strict")
		if parent := strings.TrimSpace(testgit.Git(t, bare, "rev-parse", "refs/heads/main^")); parent != before {
			t.Errorf("the bump's parent is %s, want the old main %s", parent, before)
		}
		if got, _ := testgit.ReadFile(t, bare, "main", "deploy/apps-web.yaml"); !strings.Contains(got, ":1.1.0 ") {
			t.Errorf("pushed file: %q", got)
		}
	})

	t.Run("a push within the grace period finishes", func(t *testing.T) {
		reg.Push(t, "acme/web", "1.2.0")
		prev := head(t, bare)
		proxy.stall.Store(true)
		srv := runServer(t, cfgFile, workdir, Options{Grace: time.Minute, MaxJitter: -1})
		proxy.waitPush(t)
		srv.signals <- syscall.SIGTERM
		waitReal(t, 10*time.Second, func() bool { return srv.Status().Stopping }, "the stop")
		if got := head(t, bare); got != prev {
			t.Fatalf("remote main moved while the push was held")
		}
		proxy.release()
		if err := srv.wait(t); err != nil {
			t.Errorf("Run: %v", err)
		}
		if got := head(t, bare); got == prev {
			t.Errorf("the push did not finish within the grace period")
		}
		testgit.Git(t, bare, "fsck", "--strict")
		if c := srv.Status().Targets[0].Cycles; len(c) != 1 || c[0].Result != ResultSuccess || !c[0].Pushed {
			t.Errorf("cycles: %+v", c)
		}
	})
}

// TestServeReloadBadConfigKeepsOld sends SIGHUP after the config file was
// broken: the reload is refused and counted, and the old config keeps
// bumping; a good file then replaces the targets.
func TestServeReloadBadConfigKeepsOld(t *testing.T) {
	reg := memRegistry(t)
	reg.Push(t, "acme/web", "1.0.0")
	one := testgit.NewBare(t, repoFiles(map[string]string{"apps:web": reg.Repo("acme/web") + ":1.0.0"}))
	two := testgit.NewBare(t, repoFiles(map[string]string{"apps:web": reg.Repo("acme/web") + ":1.0.0"}))
	dir := t.TempDir()
	cfgFile := filepath.Join(dir, "imagebump.yaml")
	configFor := func(target, bare string) string {
		return fmt.Sprintf(`registries: [{host: %q, insecure: true}]
images: [{name: apps:web, repository: %s, policy: {semver: ">=1.0.0"}}]
targets:
  - {name: %s, git: {url: "file://%s", branch: main}, schedule: 1s}
`, reg.Host, reg.Repo("acme/web"), target, bare)
	}
	writeTestFile(t, cfgFile, configFor("one", one))
	srv := runServer(t, cfgFile, filepath.Join(dir, "work"), Options{})
	waitReal(t, 30*time.Second, func() bool { return srv.target(t, "one").CyclesRun >= 1 }, "the first cycle")

	writeTestFile(t, cfgFile, "images:\n  - {name: apps:web, repository: [\n")
	srv.signals <- syscall.SIGHUP
	waitReal(t, 10*time.Second, func() bool { return srv.status(t).Config.LastReload != nil }, "the reload")
	st := srv.status(t)
	if r := st.Config.LastReload; r.Result != "failure" || !strings.Contains(r.Error, "imagebump.yaml") {
		t.Errorf("last reload: %+v", r)
	}
	if len(st.Targets) != 1 || st.Targets[0].Name != "one" {
		t.Errorf("targets after a refused reload: %+v", st.Targets)
	}
	if got := counterValue(t, srv.Server, "imagebump_config_reloads_total", "result", "failure"); got != 1 {
		t.Errorf("failed reloads counted: %v, want 1", got)
	}

	// The old config still runs: a new tag is bumped.
	before := head(t, one)
	reg.Push(t, "acme/web", "1.1.0")
	waitReal(t, 30*time.Second, func() bool { return head(t, one) != before }, "the bump under the old config")

	// A good file: target one goes (after its running cycle), two comes.
	writeTestFile(t, cfgFile, configFor("two", two))
	srv.signals <- syscall.SIGHUP
	waitReal(t, 10*time.Second, func() bool { return srv.status(t).Config.LastReload.Result == "success" }, "the good reload")
	before = head(t, two)
	waitReal(t, 30*time.Second, func() bool { return head(t, two) != before }, "the new target's bump")
	st = srv.status(t)
	if len(st.Targets) != 1 || st.Targets[0].Name != "two" {
		t.Errorf("targets after the good reload: %+v", st.Targets)
	}
	oneHead := head(t, one)
	time.Sleep(1500 * time.Millisecond) // more than target one's interval
	if head(t, one) != oneHead {
		t.Error("a removed target pushed")
	}
	m := scrape(t, srv.Handler())
	for _, name := range []string{"imagebump_cycles_total", "imagebump_target_failing"} {
		if _, found := metricValue(m, name, "target", "one"); found {
			t.Errorf("the removed target's %s series is still exported", name)
		}
	}
	if _, found := metricValue(m, "imagebump_target_failing", "target", "two"); !found {
		t.Error("the added target has no imagebump_target_failing series")
	}
	if got, _ := metricValue(m, "imagebump_config_reloads_total", "result", "success"); got != 1 {
		t.Errorf("successful reloads: %v, want 1", got)
	}
}

// blackhole accepts TCP connections and never answers; its cleanup closes
// them.
func blackhole(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	return ln.Addr().String()
}

// refusedPort returns a loopback address where nothing listens.
func refusedPort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// TestServeDownRegistryDoesNotDelayOthers runs a target whose registries
// are down (one never answers, one refuses connections) next to a healthy
// one: the healthy target bumps a new tag within its interval while the
// other's cycle is still stuck.
func TestServeDownRegistryDoesNotDelayOthers(t *testing.T) {
	reg := memRegistry(t)
	reg.Push(t, "acme/web", "1.0.0")
	hole, refused := blackhole(t), refusedPort(t)
	up := testgit.NewBare(t, repoFiles(map[string]string{"apps:web": reg.Repo("acme/web") + ":1.0.0"}))
	down := testgit.NewBare(t, repoFiles(map[string]string{
		"down:hole":    hole + "/acme/a:1.0.0",
		"down:refused": refused + "/acme/b:1.0.0",
	}))
	dir := t.TempDir()
	cfgFile := filepath.Join(dir, "imagebump.yaml")
	const interval = 2 * time.Second
	writeTestFile(t, cfgFile, fmt.Sprintf(`registries:
  - {host: %q, insecure: true}
  - {host: %q, insecure: true}
  - {host: %q, insecure: true}
images:
  - {name: apps:web, repository: %s, policy: {semver: ">=1.0.0"}}
  - {name: down:hole, repository: %s/acme/a, policy: {semver: ">=1.0.0"}}
  - {name: down:refused, repository: %s/acme/b, policy: {semver: ">=1.0.0"}}
targets:
  - {name: down, git: {url: "file://%s", branch: main}, schedule: %s, policies: ["down:*"]}
  - {name: up, git: {url: "file://%s", branch: main}, schedule: %s, policies: ["apps:*"]}
`, reg.Host, hole, refused, reg.Repo("acme/web"), hole, refused, down, interval, up, interval))
	srv := runServer(t, cfgFile, filepath.Join(dir, "work"), Options{Grace: 100 * time.Millisecond})
	waitReal(t, 30*time.Second, func() bool {
		return srv.target(t, "up").CyclesRun >= 1 && srv.target(t, "down").RunningSince != nil
	}, "up's first cycle while down's runs")

	before := head(t, up)
	pushed := time.Now()
	reg.Push(t, "acme/web", "1.1.0")
	waitReal(t, 30*time.Second, func() bool { return head(t, up) != before }, "up's bump")
	bumped := time.Since(pushed)
	// One interval and its jitter window, plus a cycle that may have been
	// running at the push, plus slack for a loaded machine.
	var longest time.Duration
	for _, c := range srv.target(t, "up").Cycles {
		longest = max(longest, time.Duration(c.DurationSeconds*float64(time.Second)))
	}
	if limit := interval + interval/10 + 2*longest + time.Second; bumped > limit {
		t.Errorf("up's bump took %s after the push; want within %s", bumped, limit)
	}
	d := srv.target(t, "down")
	if d.RunningSince == nil && d.CyclesRun == 0 {
		t.Errorf("down neither runs nor ran: %+v", d)
	}
	if d.RunningSince != nil && time.Since(*d.RunningSince) < bumped {
		t.Logf("down's cycle restarted during the test (it failed fast)")
	}
	for _, c := range d.Cycles {
		if c.Result == ResultSuccess {
			t.Errorf("down had a successful cycle: %+v", c)
		}
	}
}

// TestServeNamesAFailedTargetOnce: the status of a target whose cycle
// failed, and the "cycle failed" log line with its target attribute, say
// why without naming the target again ("target broken: cloning ...").
func TestServeNamesAFailedTargetOnce(t *testing.T) {
	dir := t.TempDir()
	cfgFile := filepath.Join(dir, "imagebump.yaml")
	writeTestFile(t, cfgFile, fmt.Sprintf(`images: [{name: apps:web, repository: reg.example/acme/web, policy: {semver: ">=1"}}]
targets:
  - {name: broken, git: {url: "file://%s", branch: main}, schedule: 1h}
`, filepath.Join(dir, "nope.git")))
	var logs lockedBuffer
	srv := runServer(t, cfgFile, filepath.Join(dir, "work"), Options{Logger: slog.New(slog.NewTextHandler(&logs, nil)), MaxJitter: -1})
	waitReal(t, 30*time.Second, func() bool { return srv.target(t, "broken").CyclesRun >= 1 }, "broken's first cycle")
	c := srv.target(t, "broken").Cycles[0]
	if c.Result != ResultError || !strings.HasPrefix(c.Error, "cloning") {
		t.Errorf("cycle %s, error %q; want an error that begins with what failed (cloning), not the target's name", c.Result, c.Error)
	}
	if err := srv.stop(t); err != nil {
		t.Fatal(err)
	}
	line := ""
	for l := range strings.Lines(logs.String()) {
		if strings.Contains(l, `msg="cycle failed"`) {
			line = l
		}
	}
	if !strings.Contains(line, "target=broken") || strings.Contains(line, "target broken") {
		t.Errorf("cycle failed log line %q: want the target in its attribute alone", line)
	}
}
