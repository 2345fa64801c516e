package ci

import (
	"testing"
)

// recorder is a testing.TB that records how Missing stops it.
type recorder struct {
	testing.TB
	failed, skipped bool
}

func (r *recorder) Helper()             {}
func (r *recorder) Fatal(...any)        { r.failed = true }
func (r *recorder) Skip(...any)         { r.skipped = true }
func (r *recorder) Name() string        { return "recorder" }
func (r *recorder) Failed() bool        { return r.failed }
func (r *recorder) Skipped() bool       { return r.skipped }
func (r *recorder) Logf(string, ...any) {}

func TestMissing(t *testing.T) {
	for _, tt := range []struct {
		ci         string
		fail, skip bool
	}{
		{"true", true, false},
		{"", false, true},
		{"false", false, true},
	} {
		t.Setenv("CI", tt.ci)
		r := &recorder{TB: t}
		Missing(r, "no widget: install it")
		if r.failed != tt.fail || r.skipped != tt.skip {
			t.Errorf("CI=%q: failed %v, skipped %v; want %v, %v", tt.ci, r.failed, r.skipped, tt.fail, tt.skip)
		}
	}
}
