package serve

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/imagebump/imagebump/config"
	"github.com/imagebump/imagebump/cycle"
	"github.com/imagebump/imagebump/internal/stopsignal"
)

// mustConfig parses a config with one target per schedule, named a, b,
// c..., and one image policy. An empty schedule leaves the key out.
func mustConfig(t testing.TB, schedules ...string) *config.Config {
	t.Helper()
	var b strings.Builder
	b.WriteString("images:\n  - {name: app, repository: reg.example/app, policy: {semver: \">=1.0.0\"}}\ntargets:\n")
	for i, s := range schedules {
		fmt.Fprintf(&b, "  - name: %c\n    git: {url: \"file:///nonexistent/%c.git\", branch: main}\n", 'a'+i, 'a'+i)
		if s != "" {
			fmt.Fprintf(&b, "    schedule: %q\n", s)
		}
	}
	cfg, err := config.Parse([]byte(b.String()), "/etc/imagebump/imagebump.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// fakeCall is one cycle the fake runner ran.
type fakeCall struct {
	target string
	at     time.Time
}

// fakeRunner stands in for cycle.RunTarget in the scheduling tests: it
// records each call on the fake clock, returns what results says, can hold
// a target's cycle until released, and fails the test if two cycles of one
// target overlap.
type fakeRunner struct {
	t     *testing.T
	clock *fakeClock

	mu      sync.Mutex
	calls   []fakeCall
	running map[string]bool
	// results gives the n-th (from 1) cycle's result of a target: nil
	// error for success, errPartial for a failed policy.
	results func(target string, n int) error
	// hold, when a target has one, blocks its cycles until it is closed
	// or, if honourCtx, the ctx ends.
	hold      map[string]chan struct{}
	honourCtx bool
	started   chan string // receives the target of each cycle that starts
}

var errPartial = errors.New("a policy failed")

func newFakeRunner(t *testing.T, clock *fakeClock) *fakeRunner {
	return &fakeRunner{t: t, clock: clock, running: map[string]bool{}, hold: map[string]chan struct{}{}, honourCtx: true, started: make(chan string, 100)}
}

func (f *fakeRunner) run(ctx context.Context, opts cycle.TargetOptions) (*cycle.TargetResult, error) {
	name := opts.Target.Name
	f.mu.Lock()
	if f.running[name] {
		f.t.Errorf("two cycles of target %s overlap", name)
	}
	f.running[name] = true
	f.calls = append(f.calls, fakeCall{name, f.clock.Now()})
	n := 0
	for _, c := range f.calls {
		if c.target == name {
			n++
		}
	}
	hold := f.hold[name]
	f.mu.Unlock()
	f.started <- name
	defer func() {
		f.mu.Lock()
		f.running[name] = false
		f.mu.Unlock()
	}()
	res := &cycle.TargetResult{Target: name, Report: &cycle.Report{}, Duration: time.Millisecond}
	if hold != nil {
		done := ctx.Done()
		if !f.honourCtx {
			done = nil
		}
		select {
		case <-hold:
		case <-done:
			return res, ctx.Err()
		}
	}
	var err error
	if f.results != nil {
		err = f.results(name, n)
	}
	if errors.Is(err, errPartial) {
		res.Report.Policies = []cycle.PolicyResult{{Name: "default:app", Repository: "reg.example/app", Err: err}}
		return res, nil
	}
	return res, err
}

func (f *fakeRunner) isRunning(target string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.running[target]
}

// callsOf returns the times of a target's cycles, as offsets from t0.
func (f *fakeRunner) callsOf(target string) []time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []time.Duration
	for _, c := range f.calls {
		if c.target == target {
			out = append(out, c.at.Sub(t0))
		}
	}
	return out
}

// startFake builds a Server on a fake clock and runner and runs it; stop
// sends a signal, wait returns Run's error.
type fakeServer struct {
	*Server
	clock   *fakeClock
	runner  *fakeRunner
	signals chan os.Signal
	errc    chan error
}

func startFake(t *testing.T, opts Options) *fakeServer {
	t.Helper()
	f := newFake(t, opts)
	f.start()
	return f
}

// newFake builds the fake server without running it, for a test that
// holds a target's first cycle.
func newFake(t *testing.T, opts Options) *fakeServer {
	t.Helper()
	clock := newFakeClock(t0)
	runner := newFakeRunner(t, clock)
	signals := make(chan os.Signal, 4)
	opts.Clock, opts.Signals = clock, signals
	if opts.Workdir == "" {
		opts.Workdir = t.TempDir()
	}
	if opts.RetryBackoff == 0 {
		opts.RetryBackoff = 10 * time.Second
	}
	s, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	s.timing.rand = half
	s.runCycle = runner.run
	f := &fakeServer{Server: s, clock: clock, runner: runner, signals: signals, errc: make(chan error, 1)}
	t.Cleanup(func() {
		runner.mu.Lock()
		for name, ch := range runner.hold {
			select {
			case <-ch:
			default:
				close(ch)
			}
			delete(runner.hold, name)
		}
		runner.mu.Unlock()
		select {
		case f.signals <- syscall.SIGTERM:
		default:
		}
		select {
		case <-f.errc:
		case <-time.After(10 * time.Second):
			t.Error("Run did not return after SIGTERM")
		}
	})
	return f
}

func (f *fakeServer) start() {
	go func() { f.errc <- f.Run(context.Background()) }()
}

// wait returns Run's error once Run returns, within d, and puts it back
// for the fake's cleanup, which waits for Run's end too.
func (f *fakeServer) wait(t *testing.T, d time.Duration) error {
	t.Helper()
	select {
	case err := <-f.errc:
		f.errc <- err
		return err
	case <-time.After(d):
		t.Fatalf("Run did not return within %v", d)
		return nil
	}
}

// drainStarted forgets the cycles that started so far.
func (f *fakeServer) drainStarted() {
	for {
		select {
		case <-f.runner.started:
		default:
			return
		}
	}
}

// holdTarget makes the target's next cycles block until the returned
// function is called.
func (f *fakeServer) holdTarget(target string) func() {
	ch := make(chan struct{})
	f.runner.mu.Lock()
	f.runner.hold[target] = ch
	f.runner.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			f.runner.mu.Lock()
			delete(f.runner.hold, target)
			f.runner.mu.Unlock()
			close(ch)
		})
	}
}

func (f *fakeServer) target(t *testing.T, name string) TargetStatus {
	t.Helper()
	for _, ts := range f.Status().Targets {
		if ts.Name == name {
			return ts
		}
	}
	t.Fatalf("no target %s in the status", name)
	return TargetStatus{}
}

func reasons(ts TargetStatus) []string {
	var out []string
	for i := len(ts.Cycles) - 1; i >= 0; i-- {
		out = append(out, ts.Cycles[i].Reason+":"+ts.Cycles[i].Result)
	}
	return out
}

// TestServeScheduleRetryThenTick runs one target on the fake clock: a first
// cycle at start plus jitter, a failure retried after the backoff, then
// the schedule's ticks.
func TestServeScheduleRetryThenTick(t *testing.T) {
	f := newFake(t, Options{Config: mustConfig(t, "1m")})
	f.runner.results = func(_ string, n int) error {
		if n == 1 {
			return errors.New("push refused")
		}
		return nil
	}
	f.start()
	for range 3 {
		f.clock.WaitTimers(t, 1)
		f.clock.AdvanceToNext(t)
	}
	f.clock.WaitTimers(t, 1)
	// Start at 3s (a tenth of 1m is 6s, half of it drawn); the failure
	// ends at 3s on the fake clock and is retried 7.5s later; then the
	// tick at 1m plus 3s.
	want := []time.Duration{3 * time.Second, 10500 * time.Millisecond, 63 * time.Second}
	if diff := cmp.Diff(f.runner.callsOf("a"), want); diff != "" {
		t.Errorf("cycle times (-got +want):\n%s", diff)
	}
	ts := f.target(t, "a")
	if diff := cmp.Diff(reasons(ts), []string{"start:error", "retry:success", "schedule:success"}); diff != "" {
		t.Errorf("cycles (-got +want):\n%s", diff)
	}
	if ts.CyclesRun != 3 || ts.ConsecutiveFailures != 0 || ts.FailingSince != nil || ts.LastSuccess == nil {
		t.Errorf("status: %+v", ts)
	}
	if ts.NextRun == nil || !ts.NextRun.Equal(t0.Add(123*time.Second)) || ts.NextReason != ReasonSchedule {
		t.Errorf("next run %v (%s), want t0+2m3s (schedule)", ts.NextRun, ts.NextReason)
	}
	if ts.Schedule != "1m" {
		t.Errorf("schedule %q", ts.Schedule)
	}
}

// TestStatusConfigFileAbsolute: the status names the config file by its
// absolute path, whatever -c said.
func TestStatusConfigFileAbsolute(t *testing.T) {
	cfg := mustConfig(t, "1h")
	cfg.File = "imagebump.yaml" // as -c gives it, relative
	f := startFake(t, Options{Config: cfg})
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	if got, want := f.Status().Config.File, filepath.Join(wd, "imagebump.yaml"); got != want {
		t.Errorf("status config.file = %q, want %q", got, want)
	}
}

// TestServeDefaultSchedule checks that a target without a schedule runs
// every DefaultSchedule.
func TestServeDefaultSchedule(t *testing.T) {
	f := startFake(t, Options{Config: mustConfig(t, ""), MaxJitter: -1})
	f.clock.WaitTimers(t, 1) // without jitter, the first cycle ran at once
	f.clock.AdvanceToNext(t)
	f.clock.WaitTimers(t, 1)
	if diff := cmp.Diff(f.runner.callsOf("a"), []time.Duration{0, 5 * time.Minute}); diff != "" {
		t.Errorf("cycle times (-got +want):\n%s", diff)
	}
	if got := f.target(t, "a").Schedule; got != DefaultSchedule {
		t.Errorf("schedule %q, want %q", got, DefaultSchedule)
	}
}

// TestServeSlowTargetDoesNotDelayOthers holds one target's cycle for
// three ticks: the other target runs on each of them, and the slow one
// never overlaps itself nor makes up the ticks it missed.
func TestServeSlowTargetDoesNotDelayOthers(t *testing.T) {
	f := newFake(t, Options{Config: mustConfig(t, "1m", "1m"), MaxJitter: -1})
	release := f.holdTarget("a")
	f.start()
	// Without jitter both start at once; a is held. The clock moves only
	// once a's cycle runs: a worker between its timer and its slot would
	// start at the moved time.
	waitFor(t, func() bool { return f.runner.isRunning("a") }, "a's first cycle")
	for range 2 {
		f.clock.WaitTimers(t, 1) // b waits
		f.clock.AdvanceToNext(t)
	}
	f.clock.WaitTimers(t, 1)
	if diff := cmp.Diff(f.runner.callsOf("b"), []time.Duration{0, time.Minute, 2 * time.Minute}); diff != "" {
		t.Errorf("target b's cycles (-got +want):\n%s", diff)
	}
	if a := f.target(t, "a"); a.RunningSince == nil || !a.RunningSince.Equal(t0) {
		t.Errorf("target a should be running since t0: %+v", a)
	}
	release()
	f.clock.WaitTimers(t, 2)
	f.clock.AdvanceToNext(t)
	f.clock.WaitTimers(t, 2)
	// a ended at 2m: its ticks at 1m and 2m were served by that cycle,
	// and the next is at 3m.
	if diff := cmp.Diff(f.runner.callsOf("a"), []time.Duration{0, 3 * time.Minute}); diff != "" {
		t.Errorf("target a's cycles (-got +want):\n%s", diff)
	}
}

// TestServeConcurrencyLimit holds three targets with two slots: two run,
// the third starts when one ends.
func TestServeConcurrencyLimit(t *testing.T) {
	f := newFake(t, Options{Config: mustConfig(t, "1h", "1h", "1h"), MaxJitter: -1, Concurrency: 2})
	releases := map[string]func(){"a": f.holdTarget("a"), "b": f.holdTarget("b"), "c": f.holdTarget("c")}
	f.start()
	// Without jitter all three are due at once.
	first := []string{<-f.runner.started, <-f.runner.started}
	select {
	case name := <-f.runner.started:
		t.Fatalf("a third cycle (%s) started with two slots", name)
	case <-time.After(100 * time.Millisecond):
	}
	releases[first[0]]()
	third := <-f.runner.started
	if slices.Contains(first, third) {
		t.Errorf("cycles started: %v then %s", first, third)
	}
	for _, r := range releases {
		r()
	}
	f.clock.WaitTimers(t, 3)
}

// TestServeFailingTargetsLeaveASlot: targets whose cycles fail and then
// hang (a git server that stops answering) run in the failing targets'
// share of slots (one fewer than --concurrency, at least one) and never in
// the others', so a healthy target still runs on time; with --concurrency
// 1 too, where a hanging target held the one slot until its timeout.
func TestServeFailingTargetsLeaveASlot(t *testing.T) {
	for _, concurrency := range []int{1, 2} {
		t.Run(fmt.Sprintf("concurrency %d", concurrency), func(t *testing.T) {
			f := newFake(t, Options{Config: mustConfig(t, "1m", "1m", "1m"), MaxJitter: -1, Concurrency: concurrency})
			f.runner.results = func(target string, _ int) error {
				if target == "c" {
					return nil
				}
				return errors.New("git server down")
			}
			f.start()
			for range 3 {
				<-f.runner.started
			}
			f.clock.WaitTimers(t, 3)
			// a and b now fail by hanging, from their retry on.
			defer f.holdTarget("a")()
			defer f.holdTarget("b")()
			f.clock.Advance(10 * time.Second) // the retry backoff
			first := <-f.runner.started
			if first == "c" {
				t.Fatalf("c ran at its retry time; want a or b")
			}
			select {
			case name := <-f.runner.started:
				t.Fatalf("%s started while %s hangs: failing targets took every slot", name, first)
			case <-time.After(100 * time.Millisecond):
			}
			f.clock.Advance(50 * time.Second) // c's schedule
			select {
			case name := <-f.runner.started:
				if name != "c" {
					t.Fatalf("%s started at c's time; want c", name)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("c did not run while the failing targets hang")
			}
		})
	}
}

// TestServeSlowTargetsLeaveASlot: targets whose cycles start hanging while
// they are not failing yet (a git server that stops answering, after a
// restart too) give their slots back once slow, as far as the failing
// share allows, so a healthy target still runs. Without it, two hanging
// cycles held both slots of Concurrency 2 until their timeouts.
func TestServeSlowTargetsLeaveASlot(t *testing.T) {
	for _, concurrency := range []int{2, 4} {
		t.Run(fmt.Sprintf("concurrency %d", concurrency), func(t *testing.T) {
			// concurrency targets hang from their first cycle on; one more,
			// the last, is healthy.
			intervals := make([]string, concurrency+1)
			for i := range intervals {
				intervals[i] = "1m"
			}
			f := newFake(t, Options{Config: mustConfig(t, intervals...), MaxJitter: -1, Concurrency: concurrency})
			f.slowAfter = 50 * time.Millisecond
			var hanging []string
			for i := range concurrency {
				name := string(rune('a' + i))
				hanging = append(hanging, name)
				defer f.holdTarget(name)()
			}
			healthy := string(rune('a' + concurrency))
			waitStart := func(want map[string]bool) {
				t.Helper()
				deadline := time.After(5 * time.Second)
				for len(want) > 0 {
					select {
					case name := <-f.runner.started:
						delete(want, name)
					case <-deadline:
						t.Fatalf("%v did not start while %v hang in %d slots", slices.Collect(maps.Keys(want)), hanging, concurrency)
					}
				}
			}
			f.start()
			all := map[string]bool{healthy: true}
			for _, name := range hanging {
				all[name] = true
			}
			waitStart(all)
			f.clock.WaitTimers(t, 1) // the healthy target's next cycle
			f.clock.Advance(time.Minute)
			waitStart(map[string]bool{healthy: true})
		})
	}
}

// TestServeTriggerDebounced checks that triggers within the debounce join
// one cycle, that a trigger during a cycle gets one more right after it,
// and that an unknown target is refused.
func TestServeTriggerDebounced(t *testing.T) {
	f := startFake(t, Options{Config: mustConfig(t, "1h"), MaxJitter: -1})
	f.clock.WaitTimers(t, 1) // the first cycle ran at start
	f.drainStarted()
	for _, r := range []string{"hook 1", "hook 2", "hook 1"} {
		if err := f.Trigger("a", r); err != nil {
			t.Fatal(err)
		}
		f.clock.Advance(500 * time.Millisecond)
	}
	waitFor(t, func() bool { return f.clock.Next().Equal(t0.Add(DefaultDebounce)) }, "the trigger's timer")
	release := f.holdTarget("a")
	at := f.clock.AdvanceToNext(t)
	<-f.runner.started
	if err := f.Trigger("a", "hook 3"); err != nil { // during the cycle
		t.Fatal(err)
	}
	release()
	f.clock.WaitTimers(t, 1)
	f.clock.AdvanceToNext(t)
	f.clock.WaitTimers(t, 1)
	want := []time.Duration{0, DefaultDebounce, at.Sub(t0) + DefaultDebounce}
	if diff := cmp.Diff(f.runner.callsOf("a"), want); diff != "" {
		t.Errorf("cycle times (-got +want):\n%s", diff)
	}
	ts := f.target(t, "a")
	if diff := cmp.Diff(reasons(ts), []string{"start:success", "trigger:success", "trigger:success"}); diff != "" {
		t.Errorf("cycles (-got +want):\n%s", diff)
	}
	if diff := cmp.Diff(ts.Cycles[1].Triggers, []string{"hook 1", "hook 2"}); diff != "" {
		t.Errorf("first triggered cycle's triggers (-got +want):\n%s", diff)
	}
	if ts.Cycles[1].TriggersTotal != 3 || ts.Cycles[0].TriggersTotal != 1 {
		t.Errorf("triggers served: %d and %d, want 3 (hook 1 twice) and 1", ts.Cycles[1].TriggersTotal, ts.Cycles[0].TriggersTotal)
	}
	if err := f.Trigger("nope", "x"); !errors.Is(err, ErrUnknownTarget) {
		t.Errorf("Trigger of an unknown target: %v", err)
	}
}

// TestServeReload checks SIGHUP: a bad config is refused and counted and
// the old targets keep running; a good one removes a target after its
// running cycle, starts a new one at once, and reschedules a changed one.
func TestServeReload(t *testing.T) {
	next := mustConfig(t, "1h", "1h")
	var loadErr error
	f := startFake(t, Options{
		Config: mustConfig(t, "1h", "1h"), MaxJitter: -1,
		Load: func() (*config.Config, error) { return next, loadErr },
	})
	f.clock.WaitTimers(t, 2) // both ran their first cycle
	f.drainStarted()

	loadErr = errors.New("imagebump.yaml:3: unknown key")
	f.signals <- syscall.SIGHUP
	waitFor(t, func() bool { return f.Status().Config.LastReload != nil }, "the reload")
	st := f.Status()
	if r := st.Config.LastReload; r.Result != "failure" || !strings.Contains(r.Error, "unknown key") {
		t.Errorf("last reload: %+v", r)
	}
	if got := f.Targets(); !slices.Equal(got, []string{"a", "b"}) {
		t.Errorf("targets after a bad reload: %v", got)
	}

	// The new config: a removed, b on a new schedule, c added (and a
	// second bad schedule would refuse all of it).
	bad := mustConfig(t, "1h", "1h")
	bad.TargetList[1].Schedule = "every tuesday"
	next, loadErr = bad, nil
	if err := f.Reload(); err == nil || !strings.Contains(err.Error(), "target b: schedule") {
		t.Errorf("reload with a bad schedule: %v", err)
	}
	good := mustConfig(t, "1h", "10m", "1h")
	good.TargetList = good.TargetList[1:]
	next = good
	release := f.holdTarget("a")
	if err := f.Trigger("a", "test"); err != nil {
		t.Fatal(err)
	}
	f.clock.Advance(DefaultDebounce)
	<-f.runner.started // a's cycle runs
	if err := f.Reload(); err != nil {
		t.Fatal(err)
	}
	if got := f.Targets(); !slices.Equal(got, []string{"b", "c"}) {
		t.Errorf("targets after reload: %v", got)
	}
	if got := <-f.runner.started; got != "c" { // a new interval target runs at once
		t.Errorf("first cycle after reload: %s, want c", got)
	}
	f.clock.WaitTimers(t, 2) // b and c wait; a's cycle still runs
	release()
	waitFor(t, func() bool { return len(f.runner.callsOf("a")) == 2 && !f.runner.isRunning("a") }, "a's last cycle")
	at := f.clock.AdvanceToNext(t) // b, 10m after the reload
	if got := <-f.runner.started; got != "b" || at.Sub(t0) != DefaultDebounce+10*time.Minute {
		t.Errorf("cycle %s at t0+%s, want b at t0+%s", got, at.Sub(t0), DefaultDebounce+10*time.Minute)
	}
	f.clock.WaitTimers(t, 2)
	if n := len(f.runner.callsOf("a")); n != 2 {
		t.Errorf("removed target a ran %d cycles, want 2 (the first and the one running at reload)", n)
	}
	if r := f.Status().Config.LastReload; r.Result != "success" {
		t.Errorf("last reload: %+v", r)
	}
	fails, oks := counterValue(t, f.Server, "imagebump_config_reloads_total", "result", "failure"), counterValue(t, f.Server, "imagebump_config_reloads_total", "result", "success")
	if fails != 2 || oks != 1 {
		t.Errorf("reloads: %v failed, %v succeeded; want 2 and 1", fails, oks)
	}
}

// TestServeStopGraceThenAbandon stops while a cycle runs: Run waits for the
// grace period on the clock, then cancels the cycle and returns nil.
func TestServeStopGraceThenAbandon(t *testing.T) {
	f := newFake(t, Options{Config: mustConfig(t, "1h"), MaxJitter: -1, Grace: time.Minute})
	f.holdTarget("a")
	f.start()
	<-f.runner.started
	f.signals <- syscall.SIGTERM
	f.clock.WaitTimers(t, 1) // the grace timer
	if got := f.Status(); !got.Stopping || got.Ready {
		t.Errorf("while stopping: stopping=%v ready=%v", got.Stopping, got.Ready)
	}
	select {
	case err := <-f.errc:
		t.Fatalf("Run returned before the grace period: %v", err)
	case <-time.After(50 * time.Millisecond):
	}
	f.clock.Advance(time.Minute)
	select {
	case err := <-f.errc:
		if err != nil {
			t.Errorf("Run: %v, want nil", err)
		}
		f.errc <- nil
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after the grace period")
	}
	if got := reasons(f.target(t, "a")); !slices.Equal(got, []string{"start:abandoned"}) {
		t.Errorf("cycles: %v", got)
	}
}

// TestServeStopWithinGrace lets the running cycle finish within the grace
// period: it completes (not abandoned) and Run returns nil.
func TestServeStopWithinGrace(t *testing.T) {
	f := newFake(t, Options{Config: mustConfig(t, "1h"), MaxJitter: -1})
	release := f.holdTarget("a")
	f.start()
	<-f.runner.started
	f.signals <- syscall.SIGINT
	f.clock.WaitTimers(t, 1)
	release()
	if err := <-f.errc; err != nil {
		t.Errorf("Run: %v", err)
	}
	f.errc <- nil
	if got := reasons(f.target(t, "a")); !slices.Equal(got, []string{"start:success"}) {
		t.Errorf("cycles: %v", got)
	}
}

// TestServeSecondSignal stops at once on a second signal, even while a
// cycle ignores its ctx.
func TestServeSecondSignal(t *testing.T) {
	f := newFake(t, Options{Config: mustConfig(t, "1h"), MaxJitter: -1})
	f.runner.honourCtx = false
	f.holdTarget("a")
	f.start()
	<-f.runner.started
	f.signals <- syscall.SIGTERM
	f.clock.WaitTimers(t, 1)
	f.clock.Advance(stopsignal.Window)
	f.signals <- syscall.SIGTERM
	select {
	case err := <-f.errc:
		if !errors.Is(err, ErrInterrupted) {
			t.Errorf("Run: %v, want ErrInterrupted", err)
		}
		f.errc <- nil
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return on the second signal")
	}
}

// TestServeSignalSentTwice: timeout(1), and a kill of the process group,
// send SIGTERM twice at once; serve took the second for a second request
// and stopped at once, abandoning the running cycle. It is one request:
// the cycle gets its grace period, and Run returns cleanly.
func TestServeSignalSentTwice(t *testing.T) {
	f := newFake(t, Options{Config: mustConfig(t, "1h"), MaxJitter: -1})
	release := f.holdTarget("a")
	f.start()
	<-f.runner.started
	f.signals <- syscall.SIGTERM
	f.clock.WaitTimers(t, 1)
	f.signals <- syscall.SIGTERM
	select {
	case err := <-f.errc:
		t.Fatalf("Run returned %v on the same SIGTERM sent twice, with a cycle running in its grace period", err)
	case <-time.After(200 * time.Millisecond):
	}
	release()
	if err := f.wait(t, 10*time.Second); err != nil {
		t.Errorf("Run: %v, want a clean stop", err)
	}
}

// TestServeReadyz fails /readyz once a target has failed for longer than
// UnreadyAfter, and passes again after a success; /healthz stays 200.
func TestServeReadyz(t *testing.T) {
	// The runner's results are set before the workers start (they read it).
	logs := &lockedBuffer{}
	f := newFake(t, Options{Config: mustConfig(t, "1m", "1m"), MaxJitter: -1, UnreadyAfter: 10 * time.Minute, RetryBackoff: time.Hour, MaxRetryBackoff: time.Hour,
		Logger: slog.New(slog.NewTextHandler(logs, nil))})
	failing := true
	var mu sync.Mutex
	f.runner.results = func(target string, _ int) error {
		mu.Lock()
		defer mu.Unlock()
		if target == "b" && failing {
			return errPartial
		}
		return nil
	}
	failingGauge := func(target string) (float64, bool) {
		return metricValue(scrape(t, f.Handler()), "imagebump_target_failing", "target", target)
	}
	for _, target := range []string{"a", "b"} {
		if v, found := failingGauge(target); !found || v != 0 {
			t.Errorf("imagebump_target_failing{target=%q} before any cycle = %v (found %v), want 0", target, v, found)
		}
	}
	f.start()
	get := func(path string) (int, string) {
		rec := httptest.NewRecorder()
		f.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		return rec.Code, rec.Body.String()
	}
	step := func() {
		f.clock.WaitTimers(t, 2)
		f.clock.AdvanceToNext(t)
		f.clock.WaitTimers(t, 2)
	}
	f.clock.WaitTimers(t, 2) // the first cycles
	if code, body := get("/readyz"); code != http.StatusOK {
		t.Errorf("/readyz after one failure: %d %s", code, body)
	}
	for range 11 {
		step()
	}
	code, body := get("/readyz")
	if code != http.StatusServiceUnavailable || !strings.Contains(body, "target b has failed since") {
		t.Errorf("/readyz after 11 minutes of failures: %d %q", code, body)
	}
	get("/readyz") // a probe's next look: logged once
	if n := strings.Count(logs.String(), `msg="not ready: /readyz answers 503`); n != 1 || !strings.Contains(logs.String(), `why="target b has failed since`) {
		t.Errorf("the change to not ready logged %d times, want once, with why:\n%s", n, logs)
	}
	if code, _ := get("/healthz"); code != http.StatusOK {
		t.Errorf("/healthz: %d", code)
	}
	if b := f.target(t, "b"); b.ConsecutiveFailures != 12 || b.FailingSince == nil || !b.FailingSince.Equal(t0) {
		t.Errorf("target b: failures %d since %v", b.ConsecutiveFailures, b.FailingSince)
	}
	if a, _ := failingGauge("a"); a != 0 {
		t.Errorf("imagebump_target_failing{target=\"a\"} = %v, want 0", a)
	}
	if b, _ := failingGauge("b"); b != 1 {
		t.Errorf("imagebump_target_failing{target=\"b\"} while failing = %v, want 1", b)
	}
	mu.Lock()
	failing = false
	mu.Unlock()
	step()
	if code, body := get("/readyz"); code != http.StatusOK {
		t.Errorf("/readyz after a success: %d %s", code, body)
	}
	get("/readyz")
	if n := strings.Count(logs.String(), `msg="ready again`); n != 1 {
		t.Errorf("the change back to ready logged %d times, want once:\n%s", n, logs)
	}
	if b, _ := failingGauge("b"); b != 0 {
		t.Errorf("imagebump_target_failing{target=\"b\"} after a success = %v, want 0", b)
	}
}

// TestServeOwns runs only the targets Owns admits.
func TestServeOwns(t *testing.T) {
	f := startFake(t, Options{Config: mustConfig(t, "1h", "1h", "1h"), MaxJitter: -1,
		Owns: func(t config.Target) bool { return t.Name != "b" }})
	if got := f.Targets(); !slices.Equal(got, []string{"a", "c"}) {
		t.Errorf("targets: %v", got)
	}
	if err := f.Trigger("b", "x"); !errors.Is(err, ErrUnknownTarget) {
		t.Errorf("Trigger of a target owned elsewhere: %v", err)
	}
}

// TestServeWatching maps a repository, however it is spelled, to the owned
// targets that apply a policy on it.
func TestServeWatching(t *testing.T) {
	cfg, err := config.Parse([]byte(`
images:
  - {name: apps:web, repository: ghcr.io/acme/web, policy: {semver: ">=1.0.0"}}
  - {name: infra:nginx, repository: nginx, policy: {semver: ">=1.0.0"}}
targets:
  - {name: a, git: {url: "file:///nonexistent/a.git"}, policies: ["apps:*"]}
  - {name: b, git: {url: "file:///nonexistent/b.git"}}
  - {name: c, git: {url: "file:///nonexistent/c.git"}, policies: ["infra:*"]}
`), "imagebump.yaml")
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(Options{Config: cfg, Workdir: t.TempDir(), Owns: func(t config.Target) bool { return t.Name != "c" }})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		repository string
		want       []string
	}{
		{"ghcr.io/acme/web", []string{"a", "b"}},
		{"docker.io/library/nginx", []string{"b"}},
		{"index.docker.io/library/nginx", []string{"b"}},
		{"ghcr.io/acme/other", nil},
		{"not a repository", nil},
	}
	for _, tt := range tests {
		t.Run(tt.repository, func(t *testing.T) {
			if diff := cmp.Diff(s.Watching(tt.repository), tt.want); diff != "" {
				t.Errorf("Watching (-got +want):\n%s", diff)
			}
		})
	}
}

// countingListener counts the connections it accepted, and those of
// them still open.
type countingListener struct {
	net.Listener
	accepted atomic.Int64
	open     atomic.Int64
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	l.accepted.Add(1)
	l.open.Add(1)
	return &countedConn{Conn: c, l: l}, nil
}

type countedConn struct {
	net.Conn
	l    *countingListener
	once sync.Once
}

func (c *countedConn) Close() error {
	c.once.Do(func() { c.l.open.Add(-1) })
	return c.Conn.Close()
}

// TestServeBoundsConnections: clients that open connections and keep
// them hold at most MaxConnections open at the server, so they cannot take
// every file descriptor the cycles need; and at the cap, a new client is
// still answered at once, in the place of the connection idle longest
// (keep-alives left idle would otherwise hold /healthz for minutes).
func TestServeBoundsConnections(t *testing.T) {
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln := &countingListener{Listener: inner}
	startFake(t, Options{Config: mustConfig(t, "1h"), MaxJitter: -1, Listener: ln})
	addr := inner.Addr().String()
	// Keep-alives: each asks once, then stays idle.
	dialMany(t, addr, MaxConnections, func(c net.Conn) error {
		_, err := getOn(c, "/healthz")
		return err
	})
	// More connections that never send a request.
	dialMany(t, addr, 100, nil)
	waitFor(t, func() bool { return ln.accepted.Load() >= MaxConnections+100 }, "the connections accepted, idle ones closed to make room")
	if n := ln.open.Load(); n > MaxConnections {
		t.Errorf("%d connections open at the server, want at most %d", n, MaxConnections)
	}
	// A probe at the cap is answered at once.
	client := &http.Client{Timeout: 5 * time.Second}
	start := time.Now()
	resp, err := client.Get("http://" + addr + "/healthz")
	if err != nil {
		t.Fatalf("/healthz at the cap: %v", err)
	}
	resp.Body.Close()
	if d := time.Since(start); resp.StatusCode != http.StatusOK || d > 2*time.Second {
		t.Errorf("/healthz at the cap: %d after %v", resp.StatusCode, d)
	}
	if n := ln.open.Load(); n > MaxConnections {
		t.Errorf("%d connections open at the server, want at most %d", n, MaxConnections)
	}
}

// TestServeReaddedTargetKeepsHistory removes a target while its cycle
// runs and adds it back: the status shows that cycle running, then its
// result, with the cycles before it, as if the target had never left.
func TestServeReaddedTargetKeepsHistory(t *testing.T) {
	// Removed and added back once, and twice: the second worker, removed
	// while it waits for the first, must not end before the first does,
	// or the third would start beside the first's cycle (the fake runner
	// fails the test on two cycles of one target at once).
	for _, rounds := range []int{1, 2} {
		t.Run(fmt.Sprintf("%d rounds", rounds), func(t *testing.T) {
			var next *config.Config
			f := startFake(t, Options{
				Config: mustConfig(t, "1h", "1h"), MaxJitter: -1,
				Load: func() (*config.Config, error) { return next, nil },
			})
			f.clock.WaitTimers(t, 2) // a and b ran their first cycle
			f.drainStarted()
			release := f.holdTarget("a")
			if err := f.Trigger("a", "test"); err != nil {
				t.Fatal(err)
			}
			f.clock.Advance(DefaultDebounce)
			<-f.runner.started // a's second cycle runs
			without := mustConfig(t, "1h", "1h")
			without.TargetList = without.TargetList[1:]
			for range rounds {
				next = without
				if err := f.Reload(); err != nil {
					t.Fatal(err)
				}
				next = mustConfig(t, "1h", "1h")
				if err := f.Reload(); err != nil {
					t.Fatal(err)
				}
			}
			a := f.target(t, "a")
			if a.RunningSince == nil || a.CyclesRun != 1 || a.LastSuccess == nil {
				t.Errorf("a, added back while its cycle runs: running %v, %d cycles, last success %v; want running, 1 cycle, a success", a.RunningSince, a.CyclesRun, a.LastSuccess)
			}
			select {
			case got := <-f.runner.started:
				t.Fatalf("a cycle of %s started while a's held cycle runs", got)
			case <-time.After(200 * time.Millisecond):
			}
			release()
			// The old cycle's result joins the history; then a, added back,
			// runs its own first cycle, as any added target does.
			waitFor(t, func() bool { return f.target(t, "a").CyclesRun == 3 }, "a's cycles in the status")
			if diff := cmp.Diff(reasons(f.target(t, "a")), []string{"start:success", "trigger:success", "start:success"}); diff != "" {
				t.Errorf("a's cycles (-got +want):\n%s", diff)
			}
		})
	}
}

// TestServeConcurrentReloads: Reload called from two goroutines at once
// (a program that embeds the library may) leaves the workers and the
// config in force from the same config, one reload after the other.
func TestServeConcurrentReloads(t *testing.T) {
	one, three := mustConfig(t, "1h"), mustConfig(t, "1h", "1h", "1h")
	var mu sync.Mutex
	n := 0
	f := startFake(t, Options{Config: one, MaxJitter: -1, Load: func() (*config.Config, error) {
		mu.Lock()
		defer mu.Unlock()
		n++
		if n%2 == 0 {
			return three, nil
		}
		return one, nil
	}})
	go func() {
		for range f.runner.started {
		}
	}()
	for round := range 100 {
		var wg sync.WaitGroup
		for range 2 {
			wg.Go(func() { _ = f.Reload() })
		}
		wg.Wait()
		if got, want := len(f.Targets()), len(f.Config().Targets()); got != want {
			t.Fatalf("round %d: %d workers for a config in force of %d targets", round, got, want)
		}
	}
}

// TestServeReloadsBeforeRun: reloads before Run starts the workers (a
// reload racing serve's start) make and drop workers that never run. One
// made for a target that was removed and added back waited for the
// dropped one's end, which never came: once a later reload removed it
// too, it waited for ever, and a stop waited for it (CI saw
// TestServeConcurrentReloads's Run not return after SIGTERM).
func TestServeReloadsBeforeRun(t *testing.T) {
	one, three := mustConfig(t, "1h"), mustConfig(t, "1h", "1h", "1h")
	var next *config.Config
	f := newFake(t, Options{Config: one, MaxJitter: -1, Load: func() (*config.Config, error) { return next, nil }})
	go func() {
		for range f.runner.started {
		}
	}()
	for _, cfg := range []*config.Config{three, one, three} {
		next = cfg
		if err := f.Reload(); err != nil {
			t.Fatal(err)
		}
	}
	f.start()
	f.clock.WaitTimers(t, 3)
	next = one
	if err := f.Reload(); err != nil {
		t.Fatal(err)
	}
	f.signals <- syscall.SIGTERM
	if err := f.wait(t, 5*time.Second); err != nil {
		t.Fatalf("Run: %v", err)
	}
}

// TestServeRescheduleKeepsRetry: a failing target waiting for its retry,
// whose schedule a reload changes, keeps the retry when it comes before
// the new schedule's next time.
func TestServeRescheduleKeepsRetry(t *testing.T) {
	var next *config.Config
	f := newFake(t, Options{Config: mustConfig(t, "1h"), MaxJitter: -1,
		Load: func() (*config.Config, error) { return next, nil }})
	f.runner.results = func(string, int) error { return fmt.Errorf("clone failed") }
	f.start()
	f.clock.WaitTimers(t, 1)
	<-f.runner.started
	f.clock.WaitTimers(t, 1) // the retry's timer
	before := f.target(t, "a")
	if before.NextReason != ReasonRetry || before.NextRun.Sub(f.clock.Now()) >= time.Hour {
		t.Fatalf("after a failure: next %v (%s), want a retry within the hour", before.NextRun, before.NextReason)
	}
	next = mustConfig(t, "2h")
	if err := f.Reload(); err != nil {
		t.Fatal(err)
	}
	after := f.target(t, "a")
	if after.NextReason != ReasonRetry || !after.NextRun.Equal(*before.NextRun) {
		t.Errorf("after a reload to 2h: next %v (%s), want the retry at %v kept", after.NextRun, after.NextReason, before.NextRun)
	}
}

// TestServeRemovedTargetShownUntilItsCycleEnds: a target a reload removes
// while its cycle runs stays in the status, marked removed and with no
// next run, and counts among the running cycles (which a stop's warning
// names) until that cycle ends; then it is gone.
func TestServeRemovedTargetShownUntilItsCycleEnds(t *testing.T) {
	// Removed once; and removed, added back and removed again, where the
	// removed worker is the second, waiting for the first's cycle.
	for _, readds := range []int{0, 1} {
		t.Run(fmt.Sprintf("%d re-adds", readds), func(t *testing.T) {
			removedWhileRunning(t, readds)
		})
	}
}

func removedWhileRunning(t *testing.T, readds int) {
	var next *config.Config
	var logs lockedBuffer
	f := newFake(t, Options{Config: mustConfig(t, "1h", "1h"), MaxJitter: -1,
		Logger: slog.New(slog.NewTextHandler(&logs, nil)),
		Load:   func() (*config.Config, error) { return next, nil }})
	release := f.holdTarget("a")
	f.start()
	f.clock.WaitTimers(t, 1) // b waits for its next cycle; a's runs, held
	without := mustConfig(t, "1h", "1h")
	without.TargetList = without.TargetList[1:]
	for range readds {
		next = without
		if err := f.Reload(); err != nil {
			t.Fatal(err)
		}
		next = mustConfig(t, "1h", "1h")
		if err := f.Reload(); err != nil {
			t.Fatal(err)
		}
	}
	next = without
	if err := f.Reload(); err != nil {
		t.Fatal(err)
	}
	st := f.Status()
	var names []string
	for _, ts := range st.Targets {
		names = append(names, ts.Name)
		if ts.Name == "a" && (!ts.Removed || ts.RunningSince == nil || ts.NextRun != nil) {
			t.Errorf("a, removed while its cycle runs: removed %v, running since %v, next run %v; want removed, running, no next run", ts.Removed, ts.RunningSince, ts.NextRun)
		}
	}
	if !slices.Equal(names, []string{"a", "b"}) {
		t.Errorf("targets in the status %q, want a (removed, running) and b", names)
	}
	if n := f.runningCycles(); n != 1 {
		t.Errorf("%d running cycles, want a's", n)
	}
	release()
	waitFor(t, func() bool { return len(f.Status().Targets) == 1 }, "a gone from the status once its cycle ended")
	// Its working copy stays, and the log says where.
	if want := "target=a workdir=" + cycle.WorkdirFor(f.opts.Workdir, "a"); !strings.Contains(logs.String(), want) {
		t.Errorf("no log record of a's working copy (%s):\n%s", want, logs.String())
	}
}
