package serve

import (
	"testing"
	"time"

	"github.com/imagebump/imagebump/config"
)

// half is a jitter source that always draws the middle of the window.
func half() float64 { return 0.5 }

var testTiming = timing{maxJitter: time.Minute, backoff: 10 * time.Second, maxBackoff: 10 * time.Minute, rand: half}

func mustSchedule(t *testing.T, s string) *timetable {
	t.Helper()
	sched, err := config.ParseSchedule(s)
	if err != nil {
		t.Fatal(err)
	}
	return &timetable{timing: testTiming, sched: sched}
}

var t0 = time.Date(2026, 3, 2, 10, 2, 30, 0, time.UTC)

// TestTimetableFirst checks when a target's first cycle runs: an interval
// at once plus half its window (the window is a tenth of the interval,
// capped at a minute), a calendar schedule at its next time plus half its
// window.
func TestTimetableFirst(t *testing.T) {
	tests := []struct {
		schedule  string
		atStart   bool
		maxJitter time.Duration
		want      time.Time
		why       string
	}{
		{"5m", true, time.Minute, t0.Add(15 * time.Second), ReasonStart},
		{"@every 2s", true, time.Minute, t0.Add(100 * time.Millisecond), ReasonStart},
		{"2h", true, time.Minute, t0.Add(30 * time.Second), ReasonStart},
		{"5m", false, time.Minute, t0.Add(5*time.Minute + 15*time.Second), ReasonSchedule},
		{"5m", true, 0, t0, ReasonStart},
		{"*/5 * * * *", true, time.Minute, time.Date(2026, 3, 2, 10, 5, 15, 0, time.UTC), ReasonSchedule},
		{"@hourly", true, time.Minute, time.Date(2026, 3, 2, 11, 0, 30, 0, time.UTC), ReasonSchedule},
		{"@hourly", true, 4 * time.Minute, time.Date(2026, 3, 2, 11, 2, 0, 0, time.UTC), ReasonSchedule},
		{"CRON_TZ=Europe/Paris 0 12 * * *", true, time.Minute, time.Date(2026, 3, 2, 11, 0, 30, 0, time.UTC), ReasonSchedule},
		{"CRON_TZ=UTC 0 9-17 * * 1-5", true, time.Minute, time.Date(2026, 3, 2, 11, 0, 30, 0, time.UTC), ReasonSchedule},
		{"CRON_TZ=UTC 0 9-17 * * 1-5", false, time.Minute, time.Date(2026, 3, 2, 11, 0, 30, 0, time.UTC), ReasonSchedule},
	}
	for _, tt := range tests {
		t.Run(tt.schedule, func(t *testing.T) {
			sched, err := config.ParseSchedule(tt.schedule)
			if err != nil {
				t.Fatal(err)
			}
			tm := testTiming
			tm.maxJitter = tt.maxJitter
			tab := newTimetable(sched, tm, t0, tt.atStart)
			got, why := tab.next()
			if !got.Equal(tt.want) || why != tt.why {
				t.Errorf("first cycle at %s (%s), want %s (%s)", got, why, tt.want, tt.why)
			}
		})
	}
}

// TestTimetableDone checks the cycle after a finished one: the next tick
// with its jitter, ticks skipped rather than made up after a long cycle,
// and retries with doubling backoff only when they come before the tick.
func TestTimetableDone(t *testing.T) {
	type cycle struct {
		took          time.Duration // from the previous planned start
		failed, retry bool
	}
	tests := []struct {
		name     string
		schedule string
		cycles   []cycle
		// want is each planned start after each cycle, from t0.
		want []time.Duration
		why  []string
	}{
		{
			name: "interval, successes", schedule: "5m",
			cycles: []cycle{{took: 20 * time.Second}, {took: 20 * time.Second}},
			want:   []time.Duration{5*time.Minute + 15*time.Second, 10*time.Minute + 15*time.Second},
			why:    []string{ReasonSchedule, ReasonSchedule},
		},
		{
			name: "interval, a cycle longer than two ticks skips them", schedule: "5m",
			cycles: []cycle{{took: 12 * time.Minute}},
			// Started at 15s, ended at 12m15s: the interval restarts then.
			want: []time.Duration{17*time.Minute + 30*time.Second},
			why:  []string{ReasonSchedule},
		},
		{
			name: "retries double, then the tick comes first", schedule: "5m",
			cycles: []cycle{
				{took: 10 * time.Second, failed: true, retry: true},
				{took: time.Second, failed: true, retry: true},
				{took: time.Second, failed: true, retry: true},
				{took: time.Second, failed: true, retry: true},
				{took: time.Second, failed: true, retry: true},
			},
			// Started at 15s: ends 25s, retry after 7.5s (10s: 5s + half of 5s).
			// Ends 33.5s, retry after 15s (20s). Ends 49.5s, after 30s (40s).
			// Ends 80.5s, after 60s (80s). Ends 141.5s, after 120s: 261.5s
			// is before the tick at 315s. Then 240s would pass it.
			want: []time.Duration{32500 * time.Millisecond, 48500 * time.Millisecond, 79500 * time.Millisecond, 140500 * time.Millisecond, 261500 * time.Millisecond},
			why:  []string{ReasonRetry, ReasonRetry, ReasonRetry, ReasonRetry, ReasonRetry},
		},
		{
			name: "a failure a retry cannot fix waits for the tick", schedule: "5m",
			cycles: []cycle{{took: 10 * time.Second, failed: true}},
			want:   []time.Duration{5*time.Minute + 15*time.Second},
			why:    []string{ReasonSchedule},
		},
		{
			name: "the backoff is capped", schedule: "@daily",
			cycles: func() []cycle {
				c := make([]cycle, 9)
				for i := range c {
					c[i] = cycle{took: time.Second, failed: true, retry: true}
				}
				return c
			}(),
			// @daily: first tick at midnight plus 30 s. Retry delays from
			// 7.5s double to the cap: 10m → 7.5m.
			want: func() []time.Duration {
				first := 13*time.Hour + 57*time.Minute + 30*time.Second + 30*time.Second
				var out []time.Duration
				at := first
				for n := 1; n <= 9; n++ {
					d := 10 * time.Second << (n - 1)
					d = min(d, 10*time.Minute)
					at += time.Second + d*3/4
					out = append(out, at)
				}
				return out
			}(),
			why: []string{ReasonRetry, ReasonRetry, ReasonRetry, ReasonRetry, ReasonRetry, ReasonRetry, ReasonRetry, ReasonRetry, ReasonRetry},
		},
		{
			// A file broken for hours must not put the retry of the
			// next registry blip at the cap.
			name: "a failure no retry fixes resets the backoff", schedule: "1m",
			cycles: []cycle{
				{took: time.Second, failed: true, retry: true},
				{took: time.Second, failed: true},
				{took: time.Second, failed: true},
				{took: time.Second, failed: true, retry: true},
			},
			// Start 3s. Ends 4s, retry 11.5s; ends 12.5s, tick 63s;
			// ends 64s, tick 123s; ends 124s, retry after 7.5s: 131.5s.
			want: []time.Duration{11500 * time.Millisecond, 63 * time.Second, 123 * time.Second, 131500 * time.Millisecond},
			why:  []string{ReasonRetry, ReasonSchedule, ReasonSchedule, ReasonRetry},
		},
		{
			name: "a success after failures resets the backoff", schedule: "1m",
			cycles: []cycle{
				{took: time.Second, failed: true, retry: true},
				{took: time.Second},
				{took: time.Second, failed: true, retry: true},
			},
			// Start 3s (window 6s). Ends 4s, retry 11.5s; ends 12.5s,
			// tick 63s; ends 64s, retry after 7.5s again: 71.5s.
			want: []time.Duration{11500 * time.Millisecond, 63 * time.Second, 71500 * time.Millisecond},
			why:  []string{ReasonRetry, ReasonSchedule, ReasonRetry},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tab := mustSchedule(t, tt.schedule)
			*tab = *newTimetable(tab.sched, testTiming, t0, true)
			at, _ := tab.next()
			for i, c := range tt.cycles {
				next, why := tab.done(at.Add(c.took), c.failed, c.retry)
				if got, want := next.Sub(t0), tt.want[i]; got != want || why != tt.why[i] {
					t.Errorf("after cycle %d: next at t0+%s (%s), want t0+%s (%s)", i+1, got, why, want, tt.why[i])
				}
				at = next
			}
		})
	}
}

// TestTimetableJitterSpreads draws many first cycles of one schedule with
// a real random source: they spread over the whole window and stay in it.
func TestTimetableJitterSpreads(t *testing.T) {
	s, err := New(Options{Config: mustConfig(t, "5m"), Workdir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	sched, _ := config.ParseSchedule("5m")
	window := 30 * time.Second
	var lo, hi time.Duration = window, 0
	for range 1000 {
		at, _ := newTimetable(sched, s.timing, t0, true).next()
		d := at.Sub(t0)
		if d < 0 || d >= window {
			t.Fatalf("first cycle at t0+%s, outside [0, %s)", d, window)
		}
		lo, hi = min(lo, d), max(hi, d)
	}
	if lo > window/20 || hi < window*19/20 {
		t.Errorf("1000 draws span [%s, %s]; want them to cover most of [0, %s)", lo, hi, window)
	}
}

// TestTimetableReschedule checks that a reloaded schedule takes effect
// from now, and that the failure count stays.
func TestTimetableReschedule(t *testing.T) {
	tab := mustSchedule(t, "1h")
	*tab = *newTimetable(tab.sched, testTiming, t0, true)
	tab.done(t0.Add(time.Minute), true, true)
	sched, _ := config.ParseSchedule("10m")
	tab.reschedule(sched, t0.Add(2*time.Minute))
	got, why := tab.next()
	if want := t0.Add(12*time.Minute + 30*time.Second); !got.Equal(want) || why != ReasonSchedule {
		t.Errorf("after reschedule: %s (%s), want %s", got, why, want)
	}
	if tab.failures != 1 {
		t.Errorf("failures = %d after reschedule, want 1", tab.failures)
	}
}

// noTime is a schedule with no next time, as robfig/cron's Next reports
// one (the zero time).
type noTime struct{}

func (noTime) Next(time.Time) time.Time { return time.Time{} }

// TestTimetableNever: a schedule with no next time schedules no cycle;
// its zero time was taken for a cycle due at once, after every cycle.
func TestTimetableNever(t *testing.T) {
	tab := newTimetable(noTime{}, testTiming, t0, true)
	if got, _ := tab.next(); got.Before(t0.AddDate(100, 0, 0)) {
		t.Errorf("first cycle at %s, want none", got)
	}
	if got, _ := tab.done(t0.Add(time.Second), false, false); got.Before(t0.AddDate(100, 0, 0)) {
		t.Errorf("cycle after a cycle at %s, want none", got)
	}
}
