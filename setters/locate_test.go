package setters

import (
	"slices"
	"testing"
)

// checkLineIndex holds newLineIndex, which takes the LF-only path where it
// can, to the index that looks at every byte for every kind of break.
func checkLineIndex(t *testing.T, src []byte) {
	t.Helper()
	got, want := newLineIndex(src), indexLines(src, false)
	if !slices.Equal(got.starts, want.starts) || !slices.Equal(got.ends, want.ends) || got.odd != want.odd {
		t.Errorf("newLineIndex(%q) = starts %v ends %v odd %v, want %v %v %v", src, got.starts, got.ends, got.odd, want.starts, want.ends, want.odd)
	}
}

func TestLineIndex(t *testing.T) {
	for _, tc := range []struct {
		name, src string
		fast      bool // the LF-only path applies
	}{
		{"empty", "", true},
		{"no break", "a: b", true},
		{"LF", "a: b\nc: d\n", true},
		{"no final break", "a: b\nc: d", true},
		{"only breaks", "\n\n\n", true},
		{"non-ASCII, LF only", "a: é\nb: ü\n", true},
		{"CRLF", "a: b\r\nc: d\r\n", false},
		{"lone CR", "a: b\rc: d\n", false},
		{"CR at the end", "a: b\r", false},
		{"NEL", "a: b\u0085c: d\n", false},
		{"LINE SEPARATOR", "a: b\u2028c: d\n", false},
		{"PARAGRAPH SEPARATOR", "a: b\u2029c: d\n", false},
		{"0xE2 that is no break", "a: –\n", true},
		{"0xC2 that is no break", "a: ©\n", true},
		{"cut NEL", "a: \xc2", true},
		{"cut separator", "a: \xe2\x80", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := !mayHaveOddBreak([]byte(tc.src)); got != tc.fast {
				t.Errorf("fast path %v, want %v", got, tc.fast)
			}
			checkLineIndex(t, []byte(tc.src))
		})
	}
}

func FuzzLineIndex(f *testing.F) {
	for _, s := range []string{"", "a\nb", "a\r\nb\rc", "x\u0085y\u2028z\u2029", "é–©\n", "\xe2\x80", "\n\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		checkLineIndex(t, src)
	})
}
