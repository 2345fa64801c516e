package serve

import (
	"slices"
	"sync"
	"time"

	"github.com/imagebump/imagebump/config"
	"github.com/imagebump/imagebump/cycle"
	"github.com/imagebump/imagebump/internal/redact"
)

// maxTriggers caps the trigger reasons one cycle keeps.
const maxTriggers = 10

// worker runs one target's cycles, one at a time, on the target's
// timetable. Each target has its own worker (a goroutine), so a slow or
// failing target never holds up another; they share only the Concurrency
// slots, and the failing targets' share beside them.
type worker struct {
	s    *Server
	name string
	// prev, when set, is a removed worker of the same name whose last
	// cycle still runs: this one waits for it, so that two cycles of one
	// target never overlap, and takes its history, so that the status
	// goes on where it left off. Set when w is made; cleared, under mu,
	// once its history is taken.
	prev *worker

	wake chan struct{} // cap 1: the spec changed or a trigger came
	quit chan struct{} // closed when the target is removed
	done chan struct{} // closed when loop returns

	mu       sync.Mutex
	sp       *spec
	tt       *timetable // nil until loop starts
	pending  []string   // trigger reasons not yet served
	pendingN int        // triggers received for the pending cycle, repeats and those past maxTriggers included
	trigAt   time.Time  // when the pending triggers' cycle may start
	next     time.Time  // when the next cycle starts, and why
	nextWhy  string
	runSince time.Time // zero unless a cycle runs
	removed  bool
	last     *lastCycle // the last cycle that ran to its end, for the next

	// What the status keeps.
	cycles       []CycleStatus // latest first
	total        int
	lastSuccess  time.Time
	failingSince time.Time
	failures     int
	policies     []PolicyStatus
	unreferenced []string
	markers      int
	branch       string
}

// lastCycle is a target's last finished cycle and the config it ran with:
// the next cycle of the same config skips the forge when nothing moved.
type lastCycle struct {
	cfg *config.Config
	res *cycle.TargetResult
}

func newWorker(s *Server, sp *spec, prev *worker) *worker {
	w := &worker{
		s:    s,
		name: sp.target.Name,
		prev: prev,
		sp:   sp,
		wake: make(chan struct{}, 1),
		quit: make(chan struct{}),
		done: make(chan struct{}),
	}
	if prev != nil {
		w.inherit(prev)
	}
	return w
}

// failing reports whether w's last finished cycle failed (from its
// inherited history, for a target added back).
func (w *worker) failing() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return !w.failingSince.IsZero()
}

// prevWorker returns the removed worker w waits for, or nil.
func (w *worker) prevWorker() *worker {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.prev
}

// dropPrev forgets the removed worker w waited for, once its history is
// taken, so that a target removed and added back many times holds no
// chain of them.
func (w *worker) dropPrev() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.prev = nil
}

// inherit takes prev's history: its cycles and what they found. It is
// taken when w is made, and again once prev's last cycle has ended.
func (w *worker) inherit(prev *worker) {
	prev.mu.Lock()
	cycles, total, lastSuccess, failingSince, failures := slices.Clone(prev.cycles), prev.total, prev.lastSuccess, prev.failingSince, prev.failures
	policies, unreferenced, markers, branch := prev.policies, prev.unreferenced, prev.markers, prev.branch
	prev.mu.Unlock()
	w.mu.Lock()
	w.cycles, w.total, w.lastSuccess, w.failingSince, w.failures = cycles, total, lastSuccess, failingSince, failures
	w.policies, w.unreferenced, w.markers, w.branch = policies, unreferenced, markers, branch
	w.mu.Unlock()
}

func (w *worker) poke() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// update gives the worker a reloaded spec; a changed schedule takes effect
// from now on. A retry of a failed cycle that is due before the new
// schedule's next time stays: an operator who mends a failing target and
// changes its schedule in one edit would otherwise wait a whole interval.
func (w *worker) update(sp *spec, now time.Time) {
	w.mu.Lock()
	old := w.sp
	w.sp = sp
	if w.tt != nil && old.schedule != sp.schedule {
		retryAt, retrying := w.next, w.nextWhy == ReasonRetry
		w.tt.reschedule(sp.sched, now)
		w.next, w.nextWhy = w.tt.next()
		if retrying && retryAt.Before(w.next) {
			w.next, w.nextWhy = retryAt, ReasonRetry
		}
	}
	w.mu.Unlock()
	w.poke()
}

// remove stops the worker's schedule; a running cycle finishes first.
func (w *worker) remove() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.removed {
		w.removed = true
		close(w.quit)
	}
}

// trigger asks for a cycle after the debounce.
func (w *worker) trigger(reason string, now time.Time) {
	w.mu.Lock()
	if len(w.pending) == 0 {
		w.trigAt = now.Add(w.s.opts.Debounce)
	}
	w.pendingN++
	if !slices.Contains(w.pending, reason) && len(w.pending) < maxTriggers {
		w.pending = append(w.pending, reason)
	}
	w.mu.Unlock()
	w.poke()
}

func (w *worker) isRunning() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return !w.runSince.IsZero()
}

// plan returns when the next cycle starts and why; w.mu is held.
func (w *worker) plan() (time.Time, string) {
	at, why := w.next, w.nextWhy
	if len(w.pending) > 0 && w.trigAt.Before(at) {
		at, why = w.trigAt, ReasonTrigger
	}
	return at, why
}

// loop waits for each cycle's time, takes a slot, runs the cycle and
// plans the next, until the target is removed or the server stops.
func (w *worker) loop() {
	defer close(w.done)
	s := w.s
	if prev := w.prev; prev != nil {
		select {
		case <-prev.done:
			w.inherit(prev)
			w.dropPrev()
		case <-w.quit:
			// A worker made later for this target waits for this one's
			// done: it must not close before prev's cycle has ended.
			<-prev.done
			w.inherit(prev)
			w.dropPrev()
			return
		case <-s.stopping:
			return
		}
	}
	w.mu.Lock()
	w.tt = newTimetable(w.sp.sched, s.timing, s.clock.Now(), true)
	w.next, w.nextWhy = w.tt.next()
	w.mu.Unlock()
	for {
		w.mu.Lock()
		at, why := w.plan()
		w.mu.Unlock()
		timer := s.clock.NewTimer(at.Sub(s.clock.Now()))
		select {
		case <-timer.C():
		case <-w.wake:
			timer.Stop()
			continue
		case <-w.quit:
			timer.Stop()
			return
		case <-s.stopping:
			timer.Stop()
			return
		}
		w.mu.Lock()
		failing := !w.failingSince.IsZero()
		w.mu.Unlock()
		if !w.takeSlot(failing) {
			return
		}
		moved := func() bool { return false }
		if !failing {
			moved = w.slowWatch()
		}
		w.run(why)
		if failing || moved() {
			<-s.failSlots
			continue
		}
		<-s.slots
	}
}

// DefaultSlowAfter is how long a cycle runs before it counts as slow: a
// cycle with nothing new takes milliseconds, a bump seconds, the first
// clone of a 50,000-file repository half a minute.
const DefaultSlowAfter = 10 * time.Second

// slowWatch moves a cycle that started with a slot of its own, and still
// runs after slowAfter, to the failing targets' share: it takes a free
// failing slot (never waiting for one) and gives its slot back. So
// targets whose cycles start hanging all at once (a registry host or git
// server that stops answering) cannot hold every slot until their
// timeouts; at most all slots but one are held by the slow and failing
// together, beside the slots of the others. The returned function, called
// once, after the cycle, reports whether the cycle moved (and so holds a
// failing slot and no slot).
func (w *worker) slowWatch() (moved func() bool) {
	s := w.s
	done := make(chan struct{})
	result := make(chan bool, 1)
	go func() {
		t := time.NewTimer(s.slowAfter)
		defer t.Stop()
		select {
		case <-t.C:
			select {
			case s.failSlots <- struct{}{}:
				<-s.slots
				s.log.Debug("cycle is slow; its slot goes to the other targets", "target", w.name, "after", s.slowAfter)
				result <- true
				return
			default:
			}
		case <-done:
		}
		result <- false
	}()
	return func() bool {
		close(done)
		return <-result
	}
}

// takeSlot waits for a slot to run a cycle in: one of the failing
// targets' when failing, else one of the others', and reports false when
// the target was removed or the server stops first (holding nothing then).
func (w *worker) takeSlot(failing bool) bool {
	s := w.s
	pool := s.slots
	if failing {
		pool = s.failSlots
	}
	select {
	case pool <- struct{}{}:
	case <-w.quit:
		return false
	case <-s.stopping:
		return false
	}
	select {
	case <-s.stopping:
		// The stop and the slot came together: the stop wins.
		<-pool
		return false
	default:
	}
	return true
}

// run runs one cycle and records it.
func (w *worker) run(why string) {
	s := w.s
	w.mu.Lock()
	sp := w.sp
	triggers, triggersN := w.pending, w.pendingN
	w.pending, w.pendingN = nil, 0
	if why != ReasonTrigger && len(triggers) > 0 {
		// A trigger that came while this cycle waited is served by it.
		why = ReasonTrigger
	}
	started := s.clock.Now()
	w.runSince = started
	w.mu.Unlock()

	log := s.log.With("target", w.name)
	log.Debug("cycle starting", "reason", why, "triggers", triggers)
	s.metrics.running.Inc()
	w.mu.Lock()
	previous := w.last
	if previous != nil && previous.cfg != sp.cfg {
		previous = nil // a reload may change what the forge is sent
	}
	w.mu.Unlock()
	var prev *cycle.TargetResult
	if previous != nil {
		prev = previous.res
	}
	res, err := s.runCycle(s.cycleCtx, cycle.TargetOptions{
		Config:       sp.cfg,
		Target:       sp.target,
		Registry:     sp.reg,
		Workdir:      s.opts.Workdir,
		PullRequests: s.opts.PullRequests,
		Gates:        sp.gates,
		Now:          s.clock.Now,
		Previous:     prev,
		Logger:       s.log,
	})
	s.metrics.running.Dec()
	end := s.clock.Now()
	// A cycle that failed because the stop cancelled it was abandoned; one
	// that finished just before the cancel is what it is.
	o := classify(res, err, err != nil && s.cycleCtx.Err() != nil)
	s.metrics.cycle(w.name, o, res, end)
	c := cycleStatus(started, why, triggers, o, res, err)
	c.TriggersTotal = triggersN

	w.mu.Lock()
	if err == nil && res != nil {
		w.last = &lastCycle{cfg: sp.cfg, res: res}
	} else {
		w.last = nil
	}
	w.runSince = time.Time{}
	w.total++
	w.cycles = append([]CycleStatus{c}, w.cycles[:min(len(w.cycles), s.opts.History-1)]...)
	switch {
	case o.result == ResultSuccess:
		w.lastSuccess, w.failingSince, w.failures = end, time.Time{}, 0
	case o.failed():
		if w.failingSince.IsZero() {
			w.failingSince = end
		}
		w.failures++
	}
	s.metrics.setFailing(w.name, !w.failingSince.IsZero())
	if res != nil {
		if res.Branch != "" {
			w.branch = res.Branch
		}
		if rep := res.Report; rep != nil {
			w.policies = policyStatuses(rep, started)
			w.unreferenced = slices.Clone(rep.Unreferenced)
			w.markers = len(rep.Markers)
		}
	}
	if o.result != ResultAbandoned {
		w.next, w.nextWhy = w.tt.done(end, o.failed(), o.retry)
	}
	next := w.next
	w.mu.Unlock()

	attrs := []any{"reason", why, "result", o.result, "duration", c.DurationSeconds, "changes", c.ChangesTotal, "pushed", c.Pushed,
		"files_read", c.FilesRead, "files_from_index", c.FilesFromIndex}
	if c.Commit != "" {
		attrs = append(attrs, "commit", c.Commit)
	}
	if c.PullRequest != nil {
		attrs = append(attrs, "pull_request", c.PullRequest.URL, "pull_request_outcome", c.PullRequest.Outcome)
	}
	if c.ProblemsTotal > 0 {
		attrs = append(attrs, "problems", c.ProblemsTotal)
	}
	switch o.result {
	case ResultError:
		log.Error("cycle failed", append(attrs, "error", c.Error, "next", next)...)
	case ResultPartial:
		log.Warn("cycle done with problems", append(attrs, "first_problem", c.Problems[0], "next", next)...)
	case ResultAbandoned:
		log.Warn("cycle abandoned at shutdown", attrs...)
	default:
		log.Info("cycle done", append(attrs, "next", next)...)
	}
}

// status returns the target's status.
func (w *worker) status() TargetStatus {
	w.mu.Lock()
	defer w.mu.Unlock()
	t := w.sp.target
	st := TargetStatus{
		Name:                w.name,
		Repository:          redact.String(t.Git.URL),
		Branch:              t.Git.Branch,
		Schedule:            w.sp.schedule,
		ConsecutiveFailures: w.failures,
		CyclesRun:           w.total,
		Markers:             w.markers,
		Unreferenced:        w.unreferenced,
		Policies:            w.policies,
		Cycles:              w.cycles,
	}
	if w.branch != "" {
		st.Branch = w.branch
	}
	if t.Push != nil {
		st.PushBranch = t.Push.Branch
	}
	if st.Policies == nil {
		st.Policies = []PolicyStatus{}
	}
	if st.Cycles == nil {
		st.Cycles = []CycleStatus{}
	}
	if !w.runSince.IsZero() {
		st.RunningSince = timePtr(w.runSince)
	} else if w.tt != nil {
		at, why := w.plan()
		st.NextRun, st.NextReason = timePtr(at), why
	} else {
		// A removed worker's last cycle still runs: prev's, or, when the
		// target was removed and added back again meanwhile, that of a
		// worker further back (w.mu, then prev.mu: a worker never takes
		// the lock of one made after it; each prev is read under its
		// worker's mu, as dropPrev clears it).
		for p := w.prev; p != nil; {
			p.mu.Lock()
			since, next := p.runSince, p.prev
			p.mu.Unlock()
			if !since.IsZero() {
				st.RunningSince = timePtr(since)
				break
			}
			p = next
		}
	}
	if w.removed {
		st.Removed, st.NextRun, st.NextReason = true, nil, ""
	}
	if !w.lastSuccess.IsZero() {
		st.LastSuccess = timePtr(w.lastSuccess)
	}
	if !w.failingSince.IsZero() {
		st.FailingSince = timePtr(w.failingSince)
	}
	return st
}

func timePtr(t time.Time) *time.Time { return &t }
