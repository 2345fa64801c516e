package batchgc

import (
	"math"
	"runtime/debug"
	"runtime/metrics"
	"testing"
)

// gcPercent reads the current proportional target without changing it.
func gcPercent(t *testing.T) int {
	t.Helper()
	s := []metrics.Sample{{Name: "/gc/gogc:percent"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		t.Fatal("no /gc/gogc:percent metric")
	}
	v := s[0].Value.Uint64()
	if v == math.MaxUint64 { // off
		return -1
	}
	return int(v)
}

func TestEnable(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(-1))
	for _, tc := range []struct {
		name      string
		gogc      string
		memlimit  string
		limit     int64
		want      int // the target between Enable and restore
		startFrom int
	}{
		{name: "main's limit", limit: 128 << 20, startFrom: 100, want: -1},
		{name: "restores what was there", limit: 128 << 20, startFrom: 150, want: -1},
		{name: "no limit", limit: math.MaxInt64, startFrom: 100, want: 100},
		{name: "GOGC set", gogc: "150", limit: 128 << 20, startFrom: 150, want: 150},
		{name: "GOMEMLIMIT set", memlimit: "2GiB", limit: 2 << 30, startFrom: 100, want: 100},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("GOGC", tc.gogc) // "" reads as unset
			t.Setenv("GOMEMLIMIT", tc.memlimit)
			debug.SetGCPercent(tc.startFrom)
			debug.SetMemoryLimit(tc.limit)
			restore := Enable()
			if got := gcPercent(t); got != tc.want {
				t.Errorf("after Enable the target is %d, want %d", got, tc.want)
			}
			restore()
			if got := gcPercent(t); got != tc.startFrom {
				t.Errorf("after restore the target is %d, want %d", got, tc.startFrom)
			}
		})
	}
}
