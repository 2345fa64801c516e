package typo

import (
	"strings"
	"testing"
)

func TestDistance(t *testing.T) {
	long := strings.Repeat("a", 257)
	for _, tt := range []struct {
		a, b string
		want int
	}{
		{"", "", 0},
		{"semver", "semver", 0},
		{"semvar", "semver", 1},
		{"", "abc", 3},
		{"kitten", "sitting", 3},
		{"branch", "brnach", 2},
		{long, "a", Far},
		{"a", long, Far},
	} {
		if got := Distance(tt.a, tt.b); got != tt.want {
			t.Errorf("Distance(%.10q, %.10q) = %d, want %d", tt.a, tt.b, got, tt.want)
		}
	}
}
