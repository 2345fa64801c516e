package testregistry

import (
	"fmt"
	"net/http"
	"testing"
	"time"
)

func TestZZCompare(t *testing.T) {
	tags := make([]string, 2000)
	for i := range tags {
		tags[i] = fmt.Sprintf("1.%d.%d", i/100, i%100)
	}
	for _, v := range versions {
		s := Start(t, Options{Version: v})
		for round := 0; round < 2; round++ {
			for _, idle := range []int{2, 16} {
				s.Transport.(*http.Transport).MaxIdleConnsPerHost = idle
				start := time.Now()
				s.Push(t, fmt.Sprintf("r%d-%d", round, idle), tags...)
				t.Logf("%s idle=%d: %v", v, idle, time.Since(start))
			}
		}
	}
}
