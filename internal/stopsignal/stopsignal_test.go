package stopsignal

import (
	"os"
	"syscall"
	"testing"
	"time"
)

func TestRepeated(t *testing.T) {
	for _, tt := range []struct {
		first, sig os.Signal
		elapsed    time.Duration
		want       bool
	}{
		{syscall.SIGTERM, syscall.SIGTERM, 0, true},
		{syscall.SIGTERM, syscall.SIGTERM, 999 * time.Millisecond, true},
		{syscall.SIGTERM, syscall.SIGTERM, time.Second, false},
		{syscall.SIGTERM, syscall.SIGTERM, time.Minute, false},
		{syscall.SIGTERM, os.Interrupt, 0, false},
		{os.Interrupt, os.Interrupt, 0, false},
		{os.Interrupt, syscall.SIGTERM, 0, false},
		{nil, syscall.SIGTERM, 0, false},
	} {
		if got := Repeated(tt.first, tt.sig, tt.elapsed); got != tt.want {
			t.Errorf("Repeated(%v, %v, %v) = %v, want %v", tt.first, tt.sig, tt.elapsed, got, tt.want)
		}
	}
}
