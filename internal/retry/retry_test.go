package retry

import (
	"context"
	"net/http"
	"testing"
	"time"
)

func TestBackoff(t *testing.T) {
	tests := []struct {
		name    string
		n       int
		base    time.Duration
		limit   time.Duration
		ceiling time.Duration
	}{
		{name: "first retry", n: 1, base: 100 * time.Millisecond, limit: time.Second, ceiling: 100 * time.Millisecond},
		{name: "third retry doubles twice", n: 3, base: 100 * time.Millisecond, limit: time.Second, ceiling: 400 * time.Millisecond},
		{name: "capped", n: 10, base: 100 * time.Millisecond, limit: time.Second, ceiling: time.Second},
		{name: "huge n does not overflow", n: 1000, base: time.Second, limit: 30 * time.Second, ceiling: 30 * time.Second},
		{name: "zero n", n: 0, base: time.Second, limit: time.Second, ceiling: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var sawUpperHalf bool
			for range 200 {
				got := Backoff(tt.n, tt.base, tt.limit)
				if got < 0 || got > tt.ceiling {
					t.Fatalf("Backoff(%d, %v, %v) = %v, want within [0, %v]", tt.n, tt.base, tt.limit, got, tt.ceiling)
				}
				if got >= tt.ceiling/2 {
					sawUpperHalf = true
				}
			}
			if !sawUpperHalf {
				t.Errorf("Backoff(%d, %v, %v) never reached the upper half of [0, %v] in 200 draws", tt.n, tt.base, tt.limit, tt.ceiling)
			}
		})
	}
}

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name   string
		value  string
		want   time.Duration
		wantOK bool
	}{
		{name: "seconds", value: "7", want: 7 * time.Second, wantOK: true},
		{name: "zero", value: "0", want: 0, wantOK: true},
		{name: "spaces", value: " 3 ", want: 3 * time.Second, wantOK: true},
		{name: "http date", value: now.Add(90 * time.Second).Format(http.TimeFormat), want: 90 * time.Second, wantOK: true},
		{name: "date in the past", value: now.Add(-time.Hour).Format(http.TimeFormat), want: 0, wantOK: true},
		{name: "empty", value: "", wantOK: false},
		{name: "negative", value: "-5", wantOK: false},
		{name: "garbage", value: "soon", wantOK: false},
		{name: "fraction", value: "1.5", wantOK: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := ParseRetryAfter(tt.value, now)
			if got != tt.want || ok != tt.wantOK {
				t.Errorf("ParseRetryAfter(%q) = %v, %v; want %v, %v", tt.value, got, ok, tt.want, tt.wantOK)
			}
		})
	}
}

func TestSleepCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		time.Sleep(20 * time.Millisecond)
		cancel()
	}()
	start := time.Now()
	err := Sleep(ctx, time.Minute)
	if err != context.Canceled {
		t.Fatalf("Sleep() = %v, want %v", err, context.Canceled)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("Sleep returned %v after cancel, want promptly", d)
	}
}

func TestSleepElapses(t *testing.T) {
	start := time.Now()
	if err := Sleep(context.Background(), 30*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d < 30*time.Millisecond {
		t.Errorf("Sleep(30ms) returned after %v", d)
	}
}
