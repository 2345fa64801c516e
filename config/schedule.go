package config

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
)

// MinInterval is the shortest schedule interval accepted: a registry polled
// more often than once a second is a mistake, not a schedule.
const MinInterval = time.Second

// ParseSchedule parses a schedule as `serve` runs it: robfig/cron v3's
// standard syntax (a 5-field cron expression, optionally after
// "CRON_TZ=Area/City ", or a descriptor such as @hourly or @every 10m), or a
// bare Go duration ("5m") as a shorthand for "@every 5m". validate accepts
// exactly what this accepts, so a config that passes validate runs.
func ParseSchedule(s string) (cron.Schedule, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, errors.New("empty schedule")
	}
	if !strings.ContainsAny(s, " @=") {
		// One word without a descriptor or a time zone: a duration.
		d, err := time.ParseDuration(s)
		if err != nil {
			return nil, errors.New("not a duration (5m, 1h30m), a descriptor (@hourly, @every 10m) or a 5-field cron expression such as \"*/5 * * * *\"")
		}
		if d < MinInterval {
			return nil, fmt.Errorf("interval %s is shorter than %s", d, MinInterval)
		}
		return cron.Every(d), nil
	}
	if i := strings.Index(s, "@every "); i >= 0 {
		// robfig/cron silently raises an interval under a second to one.
		if d, err := time.ParseDuration(strings.TrimSpace(s[i+len("@every "):])); err == nil && d < MinInterval {
			return nil, fmt.Errorf("interval %s is shorter than %s", d, MinInterval)
		}
	}
	sched, err := cron.ParseStandard(s)
	if err != nil {
		return nil, scheduleError(s, err)
	}
	// robfig/cron's Next gives the zero time when no minute in the five
	// years ahead matches: a schedule that never fires, which serve would
	// take for a cycle due at once, again and again.
	if sched.Next(time.Now()).IsZero() {
		return nil, errors.New("no time ever matches this cron expression: the day of the month is one the months named never have (31 in April, June, September or November; 30 or 31 in February); pick a day those months have, or use @monthly")
	}
	return sched, nil
}

// scheduleError rewords robfig/cron's parse errors with the hint a user
// needs; the library's own text stays at the end.
func scheduleError(s string, err error) error {
	fields := strings.Fields(s)
	if tz, ok := strings.CutPrefix(fields[0], "CRON_TZ="); ok || strings.HasPrefix(fields[0], "TZ=") {
		if !ok {
			tz = strings.TrimPrefix(fields[0], "TZ=")
		}
		if _, lerr := time.LoadLocation(tz); lerr != nil {
			return fmt.Errorf("unknown time zone %q: use an IANA name such as Europe/Berlin or UTC that this machine's zone database (/usr/share/zoneinfo) holds: %w", tz, err)
		}
		fields = fields[1:]
	}
	switch {
	case len(fields) > 0 && strings.HasPrefix(fields[0], "@every"):
		return fmt.Errorf("@every needs a duration such as 10m: %w", err)
	case len(fields) > 0 && strings.HasPrefix(fields[0], "@"):
		return fmt.Errorf("unknown descriptor %q (use @yearly, @monthly, @weekly, @daily, @hourly or @every DURATION): %w", fields[0], err)
	case len(fields) != 5:
		return fmt.Errorf("a cron expression has 5 fields (minute hour day-of-month month day-of-week), got %d: %w", len(fields), err)
	}
	return fmt.Errorf("invalid cron expression: %w", err)
}
