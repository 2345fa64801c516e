package serve

import (
	"time"

	"github.com/robfig/cron/v3"
)

// Defaults of Options, documented in doc.go and docs/serve.md.
const (
	// DefaultSchedule is the schedule of a target that has none.
	DefaultSchedule = "5m"
	// DefaultMaxJitter caps the window a cycle's start is drawn from.
	DefaultMaxJitter = time.Minute
	// DefaultRetryBackoff is the delay before the first retry of a failed
	// cycle; it doubles with each failure in a row, up to
	// DefaultMaxRetryBackoff.
	DefaultRetryBackoff    = 10 * time.Second
	DefaultMaxRetryBackoff = 10 * time.Minute
)

// Why a cycle runs, as the status reports it.
const (
	ReasonStart    = "start"    // an interval schedule's first cycle
	ReasonSchedule = "schedule" // the schedule's tick
	ReasonRetry    = "retry"    // the previous cycle failed
	ReasonTrigger  = "trigger"  // Server.Trigger (a webhook, an operator)
)

// timing holds the settings every target's timetable shares.
type timing struct {
	maxJitter           time.Duration
	backoff, maxBackoff time.Duration
	// rand returns a number in [0, 1); it is safe for concurrent use.
	rand func() float64
}

// timetable is one target's schedule: the next tick no cycle has served
// yet, that tick's start with its jitter, and the failures in a row. It is
// not safe for concurrent use: the target's worker owns it.
//
// The rules, which doc.go states for users:
//   - A tick's cycle starts at the tick plus a delay drawn uniformly from
//     [0, W), where W is a tenth of the gap from that tick to the one after
//     it, capped at maxJitter. Each process draws its own delays, so targets
//     and replicas that share a schedule spread over W.
//   - An interval schedule (a duration, "@every D") has its first tick when
//     the timetable is made (at start: a first cycle within W); a cron
//     expression or descriptor waits for its next time, so that windows such
//     as "0 9-17 * * 1-5" hold.
//   - A cycle serves every tick up to its end: ticks that passed while it
//     ran are skipped, never made up in a burst.
//   - After a failed cycle that a retry may fix, the retry runs after a
//     backoff (backoff doubled per such failure in a row, capped at
//     maxBackoff, the second half of it drawn at random), unless the next
//     tick comes first. A failure no retry fixes ends the row.
type timetable struct {
	timing
	sched cron.Schedule
	// tick is the schedule's next time that no cycle has served; fire is
	// when its cycle starts (tick plus jitter).
	tick, fire time.Time
	first      bool // tick is the interval schedule's first
	failures   int  // cycles in a row that failed, each retried
}

// newTimetable starts a target's schedule at now. atStart says the process
// (or the target) is new: an interval schedule then ticks at once.
func newTimetable(sched cron.Schedule, tm timing, now time.Time, atStart bool) *timetable {
	t := &timetable{timing: tm, sched: sched}
	if atStart && isInterval(sched) {
		t.first = true
		t.setTick(now)
	} else {
		t.setTick(sched.Next(now))
	}
	return t
}

// isInterval reports whether sched is a constant interval rather than a
// calendar.
func isInterval(sched cron.Schedule) bool {
	_, ok := sched.(cron.ConstantDelaySchedule)
	return ok
}

// never is the tick of a schedule that has no next time: robfig/cron's
// Next returns the zero time when none comes within five years, and a
// zero tick would be a cycle due at once, again and again. config refuses
// such schedules; this keeps one that slips through from a busy loop.
var never = time.Date(9999, 12, 31, 0, 0, 0, 0, time.UTC)

func (t *timetable) setTick(tick time.Time) {
	if tick.IsZero() {
		tick = never
	}
	t.tick = tick
	t.fire = tick.Add(time.Duration(t.rand() * float64(t.window(tick))))
}

// window is the width W of the jitter window of tick's cycle.
func (t *timetable) window(tick time.Time) time.Duration {
	gap := t.sched.Next(tick).Sub(tick)
	return max(0, min(gap/10, t.maxJitter))
}

// next returns when the next scheduled cycle starts and why.
func (t *timetable) next() (time.Time, string) {
	if t.first {
		return t.fire, ReasonStart
	}
	return t.fire, ReasonSchedule
}

// done records a cycle that ended at end and returns when the next one
// starts and why. failed says the cycle failed; retry that running it again
// soon may help (a registry or remote that was down), as opposed to a
// broken file that only a new commit fixes.
func (t *timetable) done(end time.Time, failed, retry bool) (time.Time, string) {
	if !t.tick.After(end) {
		t.first = false
		next := t.sched.Next(t.tick)
		if !next.After(end) {
			next = t.sched.Next(end)
		}
		t.setTick(next)
	}
	if !failed || !retry {
		// A failure no retry fixes (a broken file) is not retried, so it
		// adds nothing to the backoff: a file broken for a day must not
		// put every registry blip after it at the cap.
		t.failures = 0
		return t.next()
	}
	t.failures++
	if at := end.Add(t.retryDelay(t.failures)); at.Before(t.fire) {
		return at, ReasonRetry
	}
	return t.next()
}

// retryDelay is the backoff after n failures in a row: backoff·2^(n-1),
// capped at maxBackoff, of which the second half is drawn at random so that
// targets failing together do not retry together.
func (t *timetable) retryDelay(n int) time.Duration {
	d := t.backoff
	for i := 1; i < n && d < t.maxBackoff; i++ {
		d *= 2
	}
	d = min(d, t.maxBackoff)
	return d/2 + time.Duration(t.rand()*float64(d/2))
}

// reschedule replaces the schedule (a reloaded config changed it); the
// next tick is the new schedule's next time, and the failure count stays.
func (t *timetable) reschedule(sched cron.Schedule, now time.Time) {
	t.sched = sched
	t.first = false
	t.setTick(sched.Next(now))
}
