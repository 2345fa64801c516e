// Package retry computes how long to wait before retrying a network request:
// exponential backoff with full jitter, and the server's Retry-After header.
package retry

import (
	"context"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Backoff returns the wait before retry number n (1 for the first retry):
// a uniformly random duration between zero and min(limit, base*2^(n-1)).
// Spreading retries over the whole interval ("full jitter") keeps clients
// that failed together from retrying together.
func Backoff(n int, base, limit time.Duration) time.Duration {
	if n < 1 || base <= 0 || limit <= 0 {
		return 0
	}
	ceiling := base
	for i := 1; i < n && ceiling < limit; i++ {
		ceiling *= 2
	}
	ceiling = min(ceiling, limit)
	return rand.N(ceiling + 1)
}

// ParseRetryAfter reads a Retry-After header value, which is either a number
// of seconds or an HTTP date, and returns the wait it asks for as of now. A
// date in the past gives zero. ok is false when the value is empty or
// malformed.
func ParseRetryAfter(value string, now time.Time) (d time.Duration, ok bool) {
	value = strings.TrimSpace(value)
	if value == "" {
		return 0, false
	}
	if secs, err := strconv.ParseInt(value, 10, 64); err == nil {
		if secs < 0 {
			return 0, false
		}
		// Far beyond any sensible cap, and safe from overflow.
		const maxSecs = int64(365 * 24 * time.Hour / time.Second)
		return time.Duration(min(secs, maxSecs)) * time.Second, true
	}
	when, err := http.ParseTime(value)
	if err != nil {
		return 0, false
	}
	return max(when.Sub(now), 0), true
}

// Sleep waits for d, or until ctx is done, in which case it returns ctx's
// error at once.
func Sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if d <= 0 {
		return nil
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-timer.C:
		return nil
	}
}
