package serve

import (
	"sync"
	"testing"
	"time"
)

// fakeClock is a Clock whose time moves only when a test says so.
type fakeClock struct {
	mu     sync.Mutex
	now    time.Time
	timers map[*fakeTimer]bool
}

type fakeTimer struct {
	c  *fakeClock
	at time.Time
	ch chan time.Time
}

func newFakeClock(now time.Time) *fakeClock {
	return &fakeClock{now: now, timers: map[*fakeTimer]bool{}}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) NewTimer(d time.Duration) Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &fakeTimer{c: c, at: c.now.Add(d), ch: make(chan time.Time, 1)}
	if d <= 0 {
		t.ch <- c.now
		return t
	}
	c.timers[t] = true
	return t
}

func (t *fakeTimer) C() <-chan time.Time { return t.ch }

func (t *fakeTimer) Stop() bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	active := t.c.timers[t]
	delete(t.c.timers, t)
	return active
}

// Advance moves the time by d and fires the timers due.
func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	for t := range c.timers {
		if !t.at.After(c.now) {
			t.ch <- t.at
			delete(c.timers, t)
		}
	}
}

// AdvanceToNext moves the time to the earliest timer's deadline, fires
// it (and any other due then), and returns the new time.
func (c *fakeClock) AdvanceToNext(t testing.TB) time.Time {
	t.Helper()
	c.mu.Lock()
	var next time.Time
	for tm := range c.timers {
		if next.IsZero() || tm.at.Before(next) {
			next = tm.at
		}
	}
	c.mu.Unlock()
	if next.IsZero() {
		t.Fatal("fake clock: no timer to advance to")
	}
	c.Advance(next.Sub(c.Now()))
	return next
}

// Next returns the earliest timer's deadline, or zero.
func (c *fakeClock) Next() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	var next time.Time
	for tm := range c.timers {
		if next.IsZero() || tm.at.Before(next) {
			next = tm.at
		}
	}
	return next
}

// WaitTimers waits (in real time, up to 10 s) until n timers are pending:
// the goroutines under test have settled.
func (c *fakeClock) WaitTimers(t testing.TB, n int) {
	t.Helper()
	waitFor(t, func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		return len(c.timers) == n
	}, "%d pending timers", n)
}

// waitFor polls cond every millisecond for up to 10 s of real time.
func waitFor(t testing.TB, cond func() bool, what string, args ...any) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for "+what, args...)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestFakeClock checks the fake clock itself: timers fire when the time
// passes their deadline, not before, and stopped timers never fire.
func TestFakeClock(t *testing.T) {
	c := newFakeClock(t0)
	a, b, stopped := c.NewTimer(time.Second), c.NewTimer(time.Minute), c.NewTimer(2*time.Second)
	if !stopped.Stop() || stopped.Stop() {
		t.Error("Stop reports wrongly whether it stopped the timer")
	}
	c.Advance(999 * time.Millisecond)
	select {
	case <-a.C():
		t.Fatal("timer fired early")
	default:
	}
	if got := c.AdvanceToNext(t); !got.Equal(t0.Add(time.Second)) {
		t.Errorf("AdvanceToNext went to %s", got)
	}
	if got := <-a.C(); !got.Equal(t0.Add(time.Second)) {
		t.Errorf("timer delivered %s", got)
	}
	c.Advance(time.Hour)
	<-b.C()
	select {
	case <-stopped.C():
		t.Error("a stopped timer fired")
	default:
	}
	if z := c.NewTimer(0); len(z.C()) != 1 {
		t.Error("a timer of 0 did not fire at once")
	}
}
