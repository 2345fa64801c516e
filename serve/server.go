package serve

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	mrand "math/rand/v2"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/robfig/cron/v3"

	"github.com/imagebump/imagebump/config"
	"github.com/imagebump/imagebump/cycle"
	"github.com/imagebump/imagebump/internal/stopsignal"
	"github.com/imagebump/imagebump/pullrequest"
)

// More defaults of Options.
const (
	// DefaultGrace is how long a shutdown waits for running cycles.
	DefaultGrace = 30 * time.Second
	// DefaultUnreadyAfter is how long a target may fail before /readyz
	// fails.
	DefaultUnreadyAfter = time.Hour
	// DefaultConcurrency is how many cycles (of different targets) run at
	// once.
	DefaultConcurrency = 4
	// DefaultDebounce is how long a trigger waits for more triggers of the
	// same target before its cycle starts.
	DefaultDebounce = 2 * time.Second
	// MaxConnections bounds the HTTP connections open at once. Clients
	// that open connections and keep them (no credentials are needed for
	// /healthz) could otherwise take every file descriptor, and the cycles
	// could open no file. At the cap, each new connection closes the one
	// idle longest (connLimit); with none idle, it waits for one.
	MaxConnections = 512
	// MaxHealthConnections bounds the connections open at once on the
	// health address (Options.HealthListen), which only the probes use.
	MaxHealthConnections = 32
)

// ErrInterrupted is Run's error when a second stop signal cut the grace
// period short: running cycles were cancelled and not waited for.
var ErrInterrupted = errors.New("stopped at once by a second signal")

// ErrUnknownTarget is Trigger's error for a target this process does not
// run (not in the config, or owned by another replica).
var ErrUnknownTarget = errors.New("no such target")

// Options configure a Server. Durations and counts left zero get the
// documented defaults.
type Options struct {
	// Config is the config to serve; required. Each of its targets that
	// Owns admits gets a worker.
	Config *config.Config
	// Load reads the config again for Reload (SIGHUP). Nil means
	// config.Load(Config.File).
	Load func() (*config.Config, error)
	// Workdir is the folder that keeps one working copy per target between
	// cycles; required.
	Workdir string

	// Listener serves the HTTP endpoints. Nil: Run listens on Listen.
	Listener net.Listener
	// Listen is the HTTP address, such as ":8080", when Listener is nil.
	// Empty: no HTTP server (Handler still serves the endpoints).
	Listen string
	// HealthListener serves /healthz and /readyz again, alone, with
	// connections of its own (at most MaxHealthConnections): clients that
	// hold the main address's connections, such as slow webhook senders,
	// cannot hold the probes there. Nil: Run listens on HealthListen.
	HealthListener net.Listener
	// HealthListen is that address, such as ":9440", when HealthListener
	// is nil. Empty: the probes are served on the main address only.
	HealthListen string

	// Signals delivers the process's signals: SIGTERM or SIGINT stops (a
	// second one at once), SIGHUP reloads the config. Nil: Run stops only
	// when its ctx ends.
	Signals <-chan os.Signal
	// Grace is how long a stop waits for running cycles before it cancels
	// them. Zero: DefaultGrace. Negative: cancel them at once.
	Grace time.Duration

	// UnreadyAfter is how long a target may keep failing before /readyz
	// fails. Zero: DefaultUnreadyAfter. Negative: never.
	UnreadyAfter time.Duration
	// Concurrency bounds the cycles running at once. Zero:
	// DefaultConcurrency. The cycles of failing targets, and a cycle
	// running past DefaultSlowAfter that gives its place to another, run
	// in a share of their own: up to max(1, Concurrency-1) of them beside
	// Concurrency others.
	Concurrency int
	// Debounce is how long a Trigger waits for more triggers of the same
	// target before the cycle starts. Zero: DefaultDebounce. Negative: no
	// wait.
	Debounce time.Duration
	// MaxJitter caps each cycle's random start delay (see doc.go). Zero:
	// DefaultMaxJitter. Negative: no jitter.
	MaxJitter time.Duration
	// RetryBackoff and MaxRetryBackoff shape the retries of failed cycles.
	// Zero: DefaultRetryBackoff and DefaultMaxRetryBackoff.
	RetryBackoff, MaxRetryBackoff time.Duration
	// History is how many cycles the status keeps per target. Zero:
	// DefaultHistory.
	History int

	// Owns says whether this process runs a target. Nil: every target.
	// With Shard, a target must pass both.
	Owns func(config.Target) bool
	// Shard is this replica's share of the targets: it runs those whose
	// name hashes to Shard.Index (ShardOf). Zero: every target. The
	// status and the metrics show it, and webhooks for the targets of
	// other shards are accepted and ignored.
	Shard Shard
	// Clock times schedules, jitter, backoff, debounce and the grace
	// period. Nil: the system clock.
	Clock Clock
	// Rand draws the jitter. Nil: seeded from crypto/rand, so that each
	// process (replica) draws its own.
	Rand mrand.Source
	// RegistryTransport is the base transport of registry requests (a
	// dialer or proxy of the embedding program's). Nil: a clone of
	// http.DefaultTransport, which honours HTTPS_PROXY and NO_PROXY.
	RegistryTransport *http.Transport
	// PullRequests builds a target's forge client. Nil:
	// cycle.NewPullRequestProvider.
	PullRequests func(config.Target) (pullrequest.Provider, error)
	// Logger receives the server's records; nil discards.
	Logger *slog.Logger
}

// Server schedules every owned target's cycles and serves their health,
// metrics and status over HTTP. Build it with New and start it with Run.
type Server struct {
	opts Options
	log  *slog.Logger
	// unready is set while /readyz last answered 503 for a failing
	// target, so that the change is logged once each way.
	unready atomic.Bool
	clock   Clock
	metrics *metrics
	timing  timing
	load    func() (*config.Config, error)
	handler http.Handler
	started time.Time
	// runCycle is cycle.RunTarget; scheduling tests replace it.
	runCycle func(context.Context, cycle.TargetOptions) (*cycle.TargetResult, error)

	slots chan struct{} // one per running cycle, Concurrency in all
	// failSlots are taken, instead of a slot, by a target whose last
	// cycle failed: one fewer than the slots (at least one), so that
	// targets that keep failing or hanging (a git server that never
	// answers holds a slot until the git timeout) never wait for, nor
	// hold, the others' slots. A cycle still running after slowAfter
	// takes one too, when one is free, and gives its slot back: targets
	// that start hanging all at once leave their slots to the others as
	// far as the failing share has room.
	failSlots    chan struct{}
	slowAfter    time.Duration // DefaultSlowAfter; tests shorten it
	stopping     chan struct{} // closed when a stop begins
	reloadMu     sync.Mutex    // held through a Reload
	stopOnce     sync.Once
	cycleCtx     context.Context // every cycle's ctx; cancelled to abandon them
	cancelCycles context.CancelFunc
	workersWG    sync.WaitGroup

	hooks hookStats // per webhook: what came in

	// transport is the registries' base transport, made once and shared
	// by the registry client of every config loaded, so that a reload
	// keeps the connections to the registries instead of opening new
	// ones beside the old (registryOptions).
	transport     *http.Transport
	transportOnce sync.Once

	mu         sync.Mutex
	cfg        *config.Config
	cfgFile    string // cfg.File made absolute, for the status
	loaded     time.Time
	lastReload *ReloadStatus
	workers    map[string]*worker
	leaving    map[string]*worker // removed workers whose last cycle runs
	watch      *watchIndex        // repositories to targets, of cfg; built by watchers
	runCalled  bool               // Run was called
	running    bool               // Run started the workers: install starts new ones
}

// spec is what a target's cycles run with, replaced whole on reload.
type spec struct {
	cfg      *config.Config
	target   config.Target
	reg      cycle.Registry
	gates    *cycle.Gates // per config: verified digests stay cached between cycles
	schedule string       // as written, or DefaultSchedule
	sched    cron.Schedule
}

// SamePort reports whether listening on a and on b would take the same
// port: the same port, not 0 (any free one), on hosts that are the same
// or of which one is every address (empty, 0.0.0.0 or ::). Other overlaps
// (localhost and 127.0.0.1) are left to the listen's own error. serve
// refuses Options.HealthListen on Options.Listen's port.
func SamePort(a, b string) bool {
	ha, pa, errA := net.SplitHostPort(a)
	hb, pb, errB := net.SplitHostPort(b)
	if errA != nil || errB != nil {
		return a == b
	}
	if pa != pb || pa == "0" {
		return false
	}
	every := func(h string) bool { return h == "" || h == "0.0.0.0" || h == "::" }
	return ha == hb || every(ha) || every(hb)
}

// New checks opts, parses every owned target's schedule and builds the
// registry client. It starts nothing: Run does.
func New(opts Options) (*Server, error) {
	if opts.Config == nil {
		return nil, errors.New("serve: Options.Config is required")
	}
	if opts.Workdir == "" {
		return nil, errors.New("serve: Options.Workdir is required")
	}
	if opts.Concurrency < 0 || opts.History < 0 {
		return nil, fmt.Errorf("serve: Options.Concurrency (%d) and Options.History (%d) must not be negative", opts.Concurrency, opts.History)
	}
	if err := opts.Shard.check(); err != nil {
		return nil, fmt.Errorf("serve: Options.Shard: %w", err)
	}
	if opts.HealthListen != "" && SamePort(opts.HealthListen, opts.Listen) {
		return nil, fmt.Errorf("serve: Options.HealthListen %s takes Options.Listen %s's port", opts.HealthListen, opts.Listen)
	}
	s := &Server{
		opts:     opts,
		log:      opts.Logger,
		clock:    opts.Clock,
		metrics:  newMetrics(),
		load:     opts.Load,
		runCycle: cycle.RunTarget,
		stopping: make(chan struct{}),
		workers:  map[string]*worker{},
		leaving:  map[string]*worker{},
	}
	if s.log == nil {
		s.log = logDiscard
	}
	if s.clock == nil {
		s.clock = systemClock{}
	}
	if s.load == nil {
		file := opts.Config.File
		s.load = func() (*config.Config, error) { return config.Load(file) }
	}
	src := opts.Rand
	if src == nil {
		var seed [16]byte
		_, _ = rand.Read(seed[:])
		src = mrand.NewPCG(binary.LittleEndian.Uint64(seed[:8]), binary.LittleEndian.Uint64(seed[8:]))
	}
	var randMu sync.Mutex
	r := mrand.New(src)
	s.timing = timing{
		maxJitter:  orDefault(opts.MaxJitter, DefaultMaxJitter),
		backoff:    orDefault(opts.RetryBackoff, DefaultRetryBackoff),
		maxBackoff: orDefault(opts.MaxRetryBackoff, DefaultMaxRetryBackoff),
		rand: func() float64 {
			randMu.Lock()
			defer randMu.Unlock()
			return r.Float64()
		},
	}
	if s.timing.backoff > s.timing.maxBackoff {
		return nil, fmt.Errorf("serve: retry backoff %v is longer than its maximum %v", s.timing.backoff, s.timing.maxBackoff)
	}
	s.opts.Grace = orDefault(opts.Grace, DefaultGrace)
	s.opts.UnreadyAfter = orDefault(opts.UnreadyAfter, DefaultUnreadyAfter)
	s.opts.Debounce = orDefault(opts.Debounce, DefaultDebounce)
	s.opts.History = orDefault(opts.History, DefaultHistory)
	s.slots = make(chan struct{}, orDefault(opts.Concurrency, DefaultConcurrency))
	s.failSlots = make(chan struct{}, max(1, cap(s.slots)-1))
	s.slowAfter = DefaultSlowAfter
	s.cycleCtx, s.cancelCycles = context.WithCancel(context.Background())

	specs, err := s.prepare(opts.Config)
	if err != nil {
		return nil, err
	}
	s.cfg, s.cfgFile, s.loaded = opts.Config, absPath(opts.Config.File), s.clock.Now()
	s.metrics.reloadTime.Set(float64(s.loaded.UnixNano()) / 1e9)
	s.metrics.shard(opts.Shard)
	s.install(opts.Config, specs)
	s.handler = s.routes()
	return s, nil
}

func orDefault[T int | time.Duration](v, def T) T {
	switch {
	case v == 0:
		return def
	case v < 0:
		return 0
	}
	return v
}

// prepare builds the specs of cfg's owned targets: it parses their
// schedules and builds the registry client. An error refuses the config.
func (s *Server) prepare(cfg *config.Config) (map[string]*spec, error) {
	targets := cfg.Targets()
	if len(targets) == 0 {
		return nil, fmt.Errorf("%s has no git repository: set git.url (or targets:) for serve to keep current", cfg.File)
	}
	reg, err := s.newRegistry(cfg)
	if err != nil {
		return nil, err
	}
	specs := map[string]*spec{}
	var errs []error
	gates := cycle.NewGates(s.clock.Now, s.log.With("component", "gates"))
	for _, t := range targets {
		if !s.owns(t) {
			continue
		}
		sp := &spec{cfg: cfg, target: t, reg: reg, gates: gates, schedule: t.Schedule}
		if sp.schedule == "" {
			sp.schedule = DefaultSchedule
		}
		sched, err := config.ParseSchedule(sp.schedule)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s:%d: target %s: schedule %q: %w", cfg.File, t.Line, t.Name, sp.schedule, err))
			continue
		}
		sp.sched = sched
		specs[t.Name] = sp
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return specs, nil
}

// owns reports whether this process runs t: its shard's and Options.Owns.
func (s *Server) owns(t config.Target) bool {
	return s.opts.Shard.Owns(t.Name) && (s.opts.Owns == nil || s.opts.Owns(t))
}

// install makes the workers match specs, the owned targets of cfg: new
// targets get a worker, removed ones stop after their running cycle, the
// others take their new spec.
func (s *Server) install(cfg *config.Config, specs map[string]*spec) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.clock.Now()
	for name, w := range s.workers {
		if _, ok := specs[name]; !ok {
			delete(s.workers, name)
			if !s.running {
				// Never started (a reload before Run): no cycle of it
				// to wait for, and no loop that would ever end it, so
				// a worker made for the target later must not wait for
				// it (it would wait for ever, and a stop for both).
				s.metrics.forgetTarget(name)
				continue
			}
			s.leaving[name] = w
			w.remove()
		}
	}
	keep := map[string]bool{}
	for name, sp := range specs {
		for _, im := range sp.cfg.Images {
			if sp.target.Selects(im.Name) {
				keep[im.Repository] = true
			}
		}
		if w, ok := s.workers[name]; ok {
			w.update(sp, now)
			continue
		}
		w := newWorker(s, sp, s.leaving[name])
		s.workers[name] = w
		s.metrics.setFailing(name, w.failing())
		if s.running {
			s.startWorker(w)
		}
	}
	s.metrics.keepRepositories(keep)
	s.metrics.targets.Set(float64(len(s.workers)))
	s.metrics.targetsConfigured.Set(float64(len(cfg.Targets())))
}

// startWorker runs w's loop; s.mu is held.
func (s *Server) startWorker(w *worker) {
	s.workersWG.Add(1)
	go func() {
		defer s.workersWG.Done()
		w.loop()
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.leaving[w.name] == w {
			delete(s.leaving, w.name)
		}
		if s.workers[w.name] == nil {
			s.metrics.forgetTarget(w.name)
			if !s.isStopping() {
				// Kept, as the target may come back (a config edited
				// by mistake); a rename clones anew beside it.
				s.log.Info("target removed; its working copy stays: delete it if the target is gone for good",
					"target", w.name, "workdir", cycle.WorkdirFor(s.opts.Workdir, w.name))
			}
		}
	}()
}

// Run starts the workers and the HTTP servers (the endpoints on
// Options.Listen, the probes alone on Options.HealthListen) and blocks
// until a stop:
// SIGTERM or SIGINT on Options.Signals, or the end of ctx. Then it stops
// scheduling, waits up to Options.Grace for running cycles, cancels those
// still running (a push is never left half done: the remote takes all of
// it or nothing), and returns nil. A second SIGTERM or SIGINT during the
// wait cancels the cycles and returns ErrInterrupted at once. SIGHUP calls
// Reload. Run may be called once.
func (s *Server) Run(ctx context.Context) error {
	s.mu.Lock()
	if s.runCalled {
		s.mu.Unlock()
		return errors.New("serve: Run called twice")
	}
	s.runCalled = true
	s.started = s.clock.Now()
	s.mu.Unlock()

	mainLn, err := listenOn(s.opts.Listener, s.opts.Listen)
	if err != nil {
		s.cancelCycles()
		return fmt.Errorf("listening on %s: %w", s.opts.Listen, err)
	}
	healthLn, err := listenOn(s.opts.HealthListener, s.opts.HealthListen)
	if err != nil {
		if mainLn != nil {
			mainLn.Close()
		}
		s.cancelCycles()
		return fmt.Errorf("listening on %s for the health probes: %w", s.opts.HealthListen, err)
	}
	httpErr := make(chan error, 2)
	var servers []*http.Server
	if mainLn != nil {
		servers = append(servers, s.serveHTTP(mainLn, s.handler, MaxConnections, "", httpErr))
	}
	if healthLn != nil {
		servers = append(servers, s.serveHTTP(healthLn, s.probeRoutes(), MaxHealthConnections, " for the health probes", httpErr))
	}

	// running is set where the workers start, under one lock: a Reload
	// before starts its new workers through this loop, one after through
	// install, never both.
	s.mu.Lock()
	s.running = true
	names := make([]string, 0, len(s.workers))
	for name, w := range s.workers {
		names = append(names, name)
		s.startWorker(w)
	}
	s.mu.Unlock()
	slices.Sort(names)
	attrs := []any{"targets", names, "workdir", s.opts.Workdir, "concurrency", cap(s.slots)}
	if sh := s.opts.Shard; sh.Sharded() {
		attrs = append(attrs, "shard", sh.String())
	}
	s.log.Info("scheduling", attrs...)

	err = s.wait(ctx, httpErr)
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, srv := range servers {
		_ = srv.Shutdown(sctx)
	}
	return err
}

// listenOn returns ln, or else a listener on addr, or nil when addr is
// empty too.
func listenOn(ln net.Listener, addr string) (net.Listener, error) {
	if ln != nil || addr == "" {
		return ln, nil
	}
	return net.Listen("tcp", addr)
}

// serveHTTP serves handler on ln, with at most maxConns connections, in a
// goroutine that sends why Serve ended on errc. what ends the log line
// and the error (" for the health probes"), for the second address.
func (s *Server) serveHTTP(ln net.Listener, handler http.Handler, maxConns int, what string, errc chan<- error) *http.Server {
	// A webhook body (at most MaxWebhookBody) that takes longer than
	// ReadTimeout to arrive is a client holding a connection open.
	limited := newConnLimit(ln, maxConns, s.log)
	srv := &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second, IdleTimeout: 2 * time.Minute,
		ConnState: limited.track,
		ErrorLog:  slog.NewLogLogger(s.log.With("component", "http").Handler(), slog.LevelWarn)}
	addr := ln.Addr().String()
	go func() { errc <- fmt.Errorf("on %s%s: %w", addr, what, srv.Serve(limited)) }()
	s.log.Info("serving"+what, "address", addr)
	return srv
}

// wait serves signals until a stop, then stops.
func (s *Server) wait(ctx context.Context, httpErr <-chan error) error {
	for {
		select {
		case sig := <-s.opts.Signals:
			if sig == syscall.SIGHUP {
				_ = s.Reload()
				continue
			}
			s.log.Info("stopping", "signal", sig.String(), "grace", s.opts.Grace)
			return s.stop(sig)
		case <-ctx.Done():
			s.log.Info("stopping", "cause", context.Cause(ctx).Error(), "grace", s.opts.Grace)
			return s.stop(nil)
		case err := <-httpErr:
			// Serve ended without Shutdown: the listener broke.
			s.log.Error("HTTP server failed; stopping", "error", err)
			if e := s.stop(nil); e != nil {
				return e
			}
			return fmt.Errorf("serving HTTP: %w", err)
		}
	}
}

// stop ends scheduling, gives running cycles the grace period, then
// cancels them. A second stop signal returns at once, but for first, the
// signal that asked to stop (nil for another cause), delivered twice.
func (s *Server) stop(first os.Signal) error {
	s.stopOnce.Do(func() { close(s.stopping) })
	done := make(chan struct{})
	go func() {
		s.workersWG.Wait()
		close(done)
	}()
	grace := s.clock.NewTimer(s.opts.Grace)
	defer grace.Stop()
	started := s.clock.Now()
	for {
		select {
		case <-done:
			s.cancelCycles()
			s.log.Info("stopped")
			return nil
		case <-grace.C():
			if s.runningCycles() > 0 {
				s.log.Warn("grace period over: abandoning the running cycles", "grace", s.opts.Grace, "running", s.runningCycles())
			}
			s.cancelCycles()
		case sig := <-s.opts.Signals:
			if sig == syscall.SIGHUP {
				continue
			}
			if stopsignal.Repeated(first, sig, s.clock.Now().Sub(started)) {
				// timeout(1) and a kill of the process group send
				// SIGTERM twice: one request.
				s.log.Debug("the stop signal again, at once: taken for the same request", "signal", sig.String())
				continue
			}
			s.log.Warn("second signal: stopping at once", "signal", sig.String(), "running", s.runningCycles())
			s.cancelCycles()
			return ErrInterrupted
		}
	}
}

// runningCycles counts the cycles in progress.
func (s *Server) runningCycles() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	// A removed target's last cycle counts too, whether or not the
	// target was added back meanwhile: the workers made since for it
	// wait for it, each through the one before (prev).
	running := map[*worker]bool{}
	for _, ws := range []map[string]*worker{s.workers, s.leaving} {
		for _, w := range ws {
			for p := w; p != nil; p = p.prevWorker() {
				if p.isRunning() {
					running[p] = true
				}
			}
		}
	}
	return len(running)
}

// Reload loads the config again (Options.Load) and, when it is good,
// replaces the targets: new ones start, removed ones stop after their
// running cycle, changed ones run their next cycle with the new settings.
// A bad config is refused and the old one kept; the error is logged,
// counted and returned.
func (s *Server) Reload() error {
	// One reload at a time: two interleaved could leave the workers of
	// one config beside the other config in force.
	s.reloadMu.Lock()
	defer s.reloadMu.Unlock()
	cfg, err := s.load()
	var specs map[string]*spec
	if err == nil {
		specs, err = s.prepare(cfg)
	}
	now := s.clock.Now()
	if err != nil {
		s.metrics.reloads.WithLabelValues("failure").Inc()
		s.mu.Lock()
		s.lastReload = &ReloadStatus{Time: now, Result: "failure", Error: err.Error()}
		s.mu.Unlock()
		s.log.Error("config reload refused; the running config stays", "error", err)
		return err
	}
	s.install(cfg, specs)
	s.metrics.reloads.WithLabelValues("success").Inc()
	s.metrics.reloadTime.Set(float64(now.UnixNano()) / 1e9)
	s.mu.Lock()
	s.cfg, s.cfgFile, s.loaded = cfg, absPath(cfg.File), now
	s.lastReload = &ReloadStatus{Time: now, Result: "success"}
	n := len(s.workers)
	s.mu.Unlock()
	s.log.Info("config reloaded", "file", cfg.File, "targets", n)
	return nil
}

// Trigger asks for a cycle of the named target soon: after
// Options.Debounce, during which further triggers of that target join the
// same cycle, or right after its running cycle. reason is kept in the
// cycle's status (such as "webhook registry: ghcr.io/acme/app:1.2.3").
func (s *Server) Trigger(target, reason string) error {
	s.mu.Lock()
	w := s.workers[target]
	s.mu.Unlock()
	if w == nil {
		return fmt.Errorf("triggering %q: %w", target, ErrUnknownTarget)
	}
	w.trigger(reason, s.clock.Now())
	return nil
}

// Watching returns the targets this process runs that apply a policy on
// repository (such as "ghcr.io/acme/app", or "nginx" for Docker Hub's
// library/nginx), sorted: the targets a registry push event of that
// repository should Trigger.
func (s *Server) Watching(repository string) []string {
	want := canonicalRepository(repository)
	s.mu.Lock()
	defer s.mu.Unlock()
	var names []string
	for name, w := range s.workers {
		w.mu.Lock()
		sp := w.sp
		w.mu.Unlock()
		for _, im := range sp.cfg.Images {
			if sp.target.Selects(im.Name) && canonicalRepository(im.Repository) == want {
				names = append(names, name)
				break
			}
		}
	}
	slices.Sort(names)
	return names
}

// canonicalRepository spells a repository as go-containerregistry does
// (index.docker.io/library/nginx for nginx), or returns it as is when it
// does not parse.
func canonicalRepository(s string) string {
	r, err := name.NewRepository(s)
	if err != nil {
		return s
	}
	return r.Name()
}

// Config returns the config in force.
func (s *Server) Config() *config.Config {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cfg
}

// Targets returns the names of the targets this process runs, sorted.
func (s *Server) Targets() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	names := make([]string, 0, len(s.workers))
	for name := range s.workers {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// Status returns the status document of GET /api/v1/status.
func (s *Server) Status() Status {
	now := s.clock.Now()
	s.mu.Lock()
	st := Status{
		Version:  1,
		Started:  s.started,
		Now:      now,
		Stopping: s.isStopping(),
		Config:   ConfigStatus{File: s.cfgFile, Loaded: s.loaded, LastReload: s.lastReload},
		Targets:  make([]TargetStatus, 0, len(s.workers)),
	}
	workers := make([]*worker, 0, len(s.workers)+len(s.leaving))
	for _, w := range s.workers {
		workers = append(workers, w)
	}
	for name, w := range s.leaving {
		if s.workers[name] == nil {
			// Removed, not added back: shown until its last cycle ends.
			workers = append(workers, w)
		}
	}
	cfg := s.cfg
	s.mu.Unlock()
	if sh := s.opts.Shard; sh.Sharded() {
		ss := &ShardStatus{Index: sh.Index, Count: sh.Count}
		for _, t := range cfg.Targets() {
			ss.TargetsConfigured++
			if !sh.Owns(t.Name) {
				ss.Elsewhere = append(ss.Elsewhere, ShardTarget{Name: t.Name, Shard: ShardOf(t.Name, sh.Count)})
			}
		}
		st.Shard = ss
	}
	st.Webhooks = s.hooks.status(cfg.Webhooks)
	for _, w := range workers {
		st.Targets = append(st.Targets, w.status())
	}
	slices.SortFunc(st.Targets, func(a, b TargetStatus) int {
		switch {
		case a.Name < b.Name:
			return -1
		case a.Name > b.Name:
			return 1
		}
		return 0
	})
	st.NotReady = s.notReady(now, st.Stopping, st.Targets)
	st.Ready = len(st.NotReady) == 0
	return st
}

func (s *Server) isStopping() bool {
	select {
	case <-s.stopping:
		return true
	default:
		return false
	}
}

// notReady says why /readyz fails: a stop began, or a target has failed
// for longer than Options.UnreadyAfter.
func (s *Server) notReady(now time.Time, stopping bool, targets []TargetStatus) []string {
	var why []string
	if stopping {
		why = append(why, "stopping")
	}
	if s.opts.UnreadyAfter <= 0 {
		return why
	}
	for _, t := range targets {
		if !t.Removed && t.FailingSince != nil && now.Sub(*t.FailingSince) > s.opts.UnreadyAfter {
			why = append(why, fmt.Sprintf("target %s has failed since %s (%d cycles in a row)", t.Name, t.FailingSince.Format(time.RFC3339), t.ConsecutiveFailures))
		}
	}
	return why
}

// absPath returns p made absolute, for the status (a -c given relative
// means nothing to a reader of the page), or p when it cannot be. It is
// worked out when a config is loaded, not at each status request.
func absPath(p string) string {
	if p == "" {
		return p
	}
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return p
}
