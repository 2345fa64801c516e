package mdcell

import "testing"

// TestCode: a cell holds its text in one line, its pipes escaped, in a
// fence longer than any run of backticks in it.
func TestCode(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"1.5.0", "`1.5.0`"},
		{"", ""},
		{"   ", ""},
		{"a|b", "`a\\|b`"},
		{"a`b", "``a`b``"},
		{"a``b", "```a``b```"},
		{"`a", "`` `a ``"},
		{"a`", "`` a` ``"},
		{"x\ny", "`x y`"},
		{"x\r\ny", "`x y`"},
	} {
		t.Run(c.in, func(t *testing.T) {
			if got := Code(c.in); got != c.want {
				t.Errorf("Code(%q) = %q, want %q", c.in, got, c.want)
			}
		})
	}
}
