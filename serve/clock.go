package serve

import "time"

// Clock is the time source of schedules, jitter, backoff, trigger debounce
// and the shutdown grace period. Tests inject a fake one so that they never
// sleep for minutes; nil in Options means the system clock.
type Clock interface {
	// Now returns the current time.
	Now() time.Time
	// NewTimer returns a timer that delivers the time on its channel once d
	// has passed; d <= 0 fires at once.
	NewTimer(d time.Duration) Timer
}

// Timer is what Clock.NewTimer returns: a one-shot timer.
type Timer interface {
	// C delivers the time when the timer fires.
	C() <-chan time.Time
	// Stop prevents the timer from firing; it reports whether it stopped
	// it.
	Stop() bool
}

// systemClock is the Clock of the time package.
type systemClock struct{}

func (systemClock) Now() time.Time { return time.Now() }

func (systemClock) NewTimer(d time.Duration) Timer { return systemTimer{time.NewTimer(d)} }

type systemTimer struct{ t *time.Timer }

func (t systemTimer) C() <-chan time.Time { return t.t.C }
func (t systemTimer) Stop() bool          { return t.t.Stop() }

var (
	_ Clock = systemClock{}
	_ Timer = systemTimer{}
)
