package config

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// The schedule syntax is robfig/cron v3's standard one (the scheduler of
// `serve` follows it), plus a bare Go duration as a shorthand for @every.
// checkSchedule is a validator only: it accepts what that syntax accepts
// (rejecting a few oddities robfig/cron lets through, such as "*-5"), and
// computes no times.

// descriptors are the schedule shorthands, as robfig/cron names them.
var descriptors = []string{"@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly"}

// cronField describes one field of a 5-field cron expression.
type cronField struct {
	name     string
	min, max int
	names    map[string]int
}

var cronFields = []cronField{
	{name: "minute", min: 0, max: 59},
	{name: "hour", min: 0, max: 23},
	{name: "day of month", min: 1, max: 31},
	{name: "month", min: 1, max: 12, names: map[string]int{
		"jan": 1, "feb": 2, "mar": 3, "apr": 4, "may": 5, "jun": 6,
		"jul": 7, "aug": 8, "sep": 9, "oct": 10, "nov": 11, "dec": 12,
	}},
	{name: "day of week", min: 0, max: 6, names: map[string]int{
		"sun": 0, "mon": 1, "tue": 2, "wed": 3, "thu": 4, "fri": 5, "sat": 6,
	}},
}

// checkSchedule checks a schedule: a Go duration ("5m"), a descriptor
// ("@hourly", "@every 10m") or a 5-field cron expression ("*/5 * * * *"),
// the last two optionally after "CRON_TZ=Area/City " or "TZ=Area/City ".
func checkSchedule(s string) error {
	s = strings.TrimSpace(s)
	if s == "" {
		return errors.New("empty schedule")
	}
	if strings.HasPrefix(s, "CRON_TZ=") || strings.HasPrefix(s, "TZ=") {
		tz, rest, ok := strings.Cut(s, " ")
		if !ok {
			return errors.New("a time zone must be followed by a schedule")
		}
		_, zone, _ := strings.Cut(tz, "=")
		if _, err := time.LoadLocation(zone); err != nil || zone == "" {
			return fmt.Errorf("unknown time zone %q", zone)
		}
		s = strings.TrimSpace(rest)
		if !strings.HasPrefix(s, "@") && len(strings.Fields(s)) != 5 {
			return errors.New("a time zone applies to a cron expression or descriptor")
		}
	}
	if strings.HasPrefix(s, "@") {
		return checkDescriptor(s)
	}
	fields := strings.Fields(s)
	if len(fields) == 1 {
		d, err := time.ParseDuration(s)
		if err != nil {
			return errors.New("not a duration (5m, 1h30m), a descriptor (@hourly, @every 10m) or a 5-field cron expression")
		}
		return checkInterval(d)
	}
	if len(fields) != 5 {
		return fmt.Errorf("a cron expression has 5 fields (minute hour day-of-month month day-of-week), got %d", len(fields))
	}
	for i, f := range fields {
		if err := cronFields[i].check(f); err != nil {
			return fmt.Errorf("%s field %q: %w", cronFields[i].name, f, err)
		}
	}
	return nil
}

func checkDescriptor(s string) error {
	if every, ok := strings.CutPrefix(s, "@every "); ok {
		d, err := time.ParseDuration(strings.TrimSpace(every))
		if err != nil {
			return fmt.Errorf("@every needs a duration such as 10m, got %q", every)
		}
		return checkInterval(d)
	}
	for _, d := range descriptors {
		if s == d {
			return nil
		}
	}
	return fmt.Errorf("unknown descriptor %q: use one of %s or @every DURATION", s, strings.Join(descriptors, ", "))
}

func checkInterval(d time.Duration) error {
	if d < time.Second {
		return fmt.Errorf("interval %s is shorter than 1s", d)
	}
	return nil
}

// check checks one field: a comma-separated list of *, ?, N, N-M, each
// optionally followed by /STEP; N-/STEP (N/STEP) means N to the maximum.
func (f cronField) check(s string) error {
	for _, part := range strings.Split(s, ",") {
		if err := f.checkRange(part); err != nil {
			return err
		}
	}
	return nil
}

func (f cronField) checkRange(s string) error {
	rng, step, hasStep := strings.Cut(s, "/")
	if hasStep {
		n, err := strconv.Atoi(step)
		if err != nil || n < 1 || strings.Contains(step, "/") {
			return fmt.Errorf("step %q is not a positive number", step)
		}
	}
	if rng == "*" || rng == "?" {
		return nil
	}
	lo, hi, isRange := strings.Cut(rng, "-")
	start, err := f.value(lo)
	if err != nil {
		return err
	}
	end := start
	if isRange {
		if end, err = f.value(hi); err != nil {
			return err
		}
		if start > end {
			return fmt.Errorf("range %q runs backwards", rng)
		}
	}
	return nil
}

// value reads a number or, for months and weekdays, a three-letter name.
func (f cronField) value(s string) (int, error) {
	if n, ok := f.names[strings.ToLower(s)]; ok {
		return n, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || strings.HasPrefix(s, "+") || strings.HasPrefix(s, "-") {
		if f.names != nil {
			return 0, fmt.Errorf("%q is not a number or a name (%s)", s, f.nameList())
		}
		return 0, fmt.Errorf("%q is not a number", s)
	}
	if n < f.min || n > f.max {
		return 0, fmt.Errorf("%d is outside %d-%d", n, f.min, f.max)
	}
	return n, nil
}

func (f cronField) nameList() string {
	if f.max == 12 {
		return "jan-dec"
	}
	return "sun-sat"
}
