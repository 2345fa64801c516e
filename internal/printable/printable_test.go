package printable

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestString(t *testing.T) {
	for _, tt := range []struct{ name, in, want string }{
		{"plain", "ghcr.io/acme/app:1.2.3", "ghcr.io/acme/app:1.2.3"},
		{"utf8", "café ✓", "café ✓"},
		{"windows path", `C:\fleet\app.yaml`, `C:\fleet\app.yaml`},
		{"newline forges a line", "1.2.3\nFAKE: all good", `1.2.3\nFAKE: all good`},
		{"carriage return hides", "bad\rgood", `bad\rgood`},
		{"tab breaks columns", "a\tb", `a\tb`},
		{"terminal escape", "\x1b[31mred\x1b[0m", `\x1b[31mred\x1b[0m`},
		{"bell and NUL", "\a\x00", `\x07\x00`},
		{"DEL and C1", "\x7f\u009b", `\x7f\x9b`},
		{"bidi override", "abc\u202edcba", `abc\u202edcba`},
		{"invalid UTF-8", "a\xffb", `a\xffb`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := String(tt.in); got != tt.want {
				t.Errorf("String(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestStringTruncates(t *testing.T) {
	long := strings.Repeat("é", MaxLen) // 2 bytes each
	got := String(long)
	if !strings.HasSuffix(got, "…(512 more bytes)") || !utf8.ValidString(got) {
		t.Errorf("String(%d bytes) = …%q", len(long), got[len(got)-40:])
	}
}

// TestMessageKeepsTheEnd: a long error message keeps its start and its
// end (where it says what to do), cut at rune boundaries, escaped.
func TestMessageKeepsTheEnd(t *testing.T) {
	long := "listing tags: " + strings.Repeat("é\x1b", MessageMaxLen) + " on EKS give the service account an IAM role"
	got := Message(long)
	if !strings.HasPrefix(got, "listing tags: é") || !strings.HasSuffix(got, "on EKS give the service account an IAM role") ||
		!strings.Contains(got, " bytes)…") || !utf8.ValidString(got) {
		t.Errorf("Message(%d bytes) = %q", len(long), got)
	}
	if strings.ContainsRune(got, 0x1b) {
		t.Errorf("Message left an escape in: %q", got)
	}
	if short := "a\nb"; Message(short) != String(short) {
		t.Errorf("Message(%q) = %q, want String's %q", short, Message(short), String(short))
	}
	// A little over MaxLen: nothing worth a broken sentence is saved.
	if near := strings.Repeat("word ", MessageMaxLen/5) + "imagebump rebuilds it on every bump"; Message(near) != near {
		t.Errorf("Message(%d bytes) cut: %q", len(near), Message(near))
	}
}

// TestMessageCutsBetweenWords: a long message of words keeps whole words
// on both sides of the cut.
func TestMessageCutsBetweenWords(t *testing.T) {
	var b strings.Builder
	for i := 0; b.Len() < 3*MessageMaxLen; i++ {
		fmt.Fprintf(&b, "word%d ", i)
	}
	long := b.String() + "then do this"
	got := Message(long)
	head, tail, ok := strings.Cut(got, " …(")
	if !ok {
		t.Fatalf("Message(%d bytes) = %q: no cut", len(long), got)
	}
	_, tail, _ = strings.Cut(tail, " bytes)… ")
	if !strings.HasPrefix(long, head+" ") || !strings.HasSuffix(long, " "+tail) || !strings.HasSuffix(got, "then do this") {
		t.Errorf("Message cut inside a word: %q", got)
	}
	if len(got) > MessageMaxLen+MessageMaxLen/5+32 {
		t.Errorf("Message kept %d bytes of %d", len(got), len(long))
	}
}

// FuzzString checks that the output never holds a character a terminal
// acts on, is valid UTF-8, and that clean input is returned as it is.
func FuzzString(f *testing.F) {
	for _, s := range []string{"", "a", "\x1b[2J", "x\ny", "\xff", "\u202e", strings.Repeat("x", 600)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := String(s)
		if !utf8.ValidString(got) {
			t.Fatalf("String(%q) = %q is not valid UTF-8", s, got)
		}
		for _, r := range got {
			if unsafe(r) {
				t.Fatalf("String(%q) = %q holds %U", s, got, r)
			}
		}
		if len(s) <= MaxLen && clean(s) && got != s {
			t.Fatalf("String(%q) = %q changed clean text", s, got)
		}
	})
}

func TestCut(t *testing.T) {
	for _, c := range []struct {
		s    string
		n    int
		want string
	}{
		{"short", 10, "short"},
		{"exactly", 7, "exactly"},
		{"a longer line", 8, "a longer..."},
		{"héllo", 2, "h..."}, // é is two bytes: not split
		{"", 0, ""},
	} {
		if got := Cut(c.s, c.n); got != c.want {
			t.Errorf("Cut(%q, %d) = %q, want %q", c.s, c.n, got, c.want)
		}
	}
}
