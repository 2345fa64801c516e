package config

import (
	"strings"
	"testing"
	"time"
)

func TestParseSchedule(t *testing.T) {
	from := time.Date(2026, 3, 4, 10, 2, 30, 0, time.UTC) // a Wednesday
	for _, tt := range []struct {
		schedule string
		next     time.Time // the first run after from; zero when wantErr is set
		wantErr  string
	}{
		{"*/5 * * * *", time.Date(2026, 3, 4, 10, 5, 0, 0, time.UTC), ""},
		{"0 0 * * *", time.Date(2026, 3, 5, 0, 0, 0, 0, time.UTC), ""},
		{"0 9-17 * * 1-5", time.Date(2026, 3, 4, 11, 0, 0, 0, time.UTC), ""},
		{"0 9-17/2 * * MON-FRI", time.Date(2026, 3, 4, 11, 0, 0, 0, time.UTC), ""},
		{"30 2 1,15 jan,jul *", time.Date(2026, 7, 1, 2, 30, 0, 0, time.UTC), ""},
		{"0 0 29 2 *", time.Date(2028, 2, 29, 0, 0, 0, 0, time.UTC), ""}, // rare, but it fires
		{"0 0 31 1-12 *", time.Date(2026, 3, 31, 0, 0, 0, 0, time.UTC), ""},
		{"  0 0 * * *  ", time.Date(2026, 3, 5, 0, 0, 0, 0, time.UTC), ""},
		{"@hourly", time.Date(2026, 3, 4, 11, 0, 0, 0, time.UTC), ""},
		{"@daily", time.Date(2026, 3, 5, 0, 0, 0, 0, time.UTC), ""},
		{"@every 10m", from.Add(10 * time.Minute), ""},
		{"@every 1h30m", from.Add(90 * time.Minute), ""},
		{"5m", from.Add(5 * time.Minute), ""},
		{"90s", from.Add(90 * time.Second), ""},
		{"CRON_TZ=Europe/Berlin 0 6 * * *", time.Date(2026, 3, 5, 5, 0, 0, 0, time.UTC), ""},
		{"TZ=UTC @daily", time.Date(2026, 3, 5, 0, 0, 0, 0, time.UTC), ""},

		{"", time.Time{}, "empty schedule"},
		{"60 * * * *", time.Time{}, "invalid cron expression"},
		{"* 24 * * *", time.Time{}, "invalid cron expression"},
		{"* * * foo *", time.Time{}, "invalid cron expression"},
		{"5-1 * * * *", time.Time{}, "invalid cron expression"},
		{"* * * *", time.Time{}, "has 5 fields"},
		{"0 * * * * *", time.Time{}, "has 5 fields"},
		{"@reboot", time.Time{}, `unknown descriptor "@reboot"`},
		{"@every ten", time.Time{}, "@every needs a duration"},
		{"@every 100ms", time.Time{}, "shorter than 1s"},
		{"0s", time.Time{}, "shorter than 1s"},
		{"-5m", time.Time{}, "shorter than 1s"},
		{"5 minutes", time.Time{}, "has 5 fields"},
		{"soon", time.Time{}, "not a duration"},
		{"CRON_TZ=Nowhere/Land 0 6 * * *", time.Time{}, `unknown time zone "Nowhere/Land"`},
		{"TZ=Nowhere/Land @daily", time.Time{}, `unknown time zone "Nowhere/Land"`},
		// Parsed by robfig/cron, but no time matches: serve ran them in a
		// busy loop, as cycles due at once.
		{"0 0 31 2 *", time.Time{}, "no time ever matches"},
		{"0 0 31 4,6,9,11 *", time.Time{}, "no time ever matches"},
		{"CRON_TZ=Europe/Berlin 0 6 30 feb *", time.Time{}, "no time ever matches"},
	} {
		t.Run(tt.schedule, func(t *testing.T) {
			sched, err := ParseSchedule(tt.schedule)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("ParseSchedule(%q) = %v, want an error containing %q", tt.schedule, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseSchedule(%q): %v", tt.schedule, err)
			}
			if got := sched.Next(from).UTC(); !got.Equal(tt.next) {
				t.Errorf("ParseSchedule(%q).Next(%s) = %s, want %s", tt.schedule, from, got, tt.next)
			}
		})
	}
}
