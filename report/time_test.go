package report

import (
	"testing"
	"time"
)

// TestTime: times are RFC 3339 in UTC; the zero time and a time past the
// year 9999 (an image a broken build dated 9999-12-31, plus minAge) are
// left out, as RFC 3339 cannot write them (10000-01-01T... was printed).
func TestTime(t *testing.T) {
	for _, tt := range []struct {
		in   time.Time
		want string
	}{
		{time.Time{}, ""},
		{time.Date(2026, 12, 5, 3, 4, 5, 0, time.FixedZone("X", 3600)), "2026-12-05T02:04:05Z"},
		{time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC), "9999-12-31T23:59:59Z"},
		{time.Date(9999, 12, 31, 0, 0, 0, 0, time.UTC).Add(48 * time.Hour), ""},
	} {
		if got := Time(tt.in); got != tt.want {
			t.Errorf("Time(%v) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
