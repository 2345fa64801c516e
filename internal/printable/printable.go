// Package printable makes untrusted text inert before it reaches a terminal
// or a line-oriented log: tags and error bodies come from registries, file
// names, policy names and values from the repository, and any of them could
// carry a terminal escape sequence, a carriage return that hides a line, or
// a newline that forges one.
package printable

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// MaxLen is the length, in bytes of input, past which String truncates.
const MaxLen = 512

// String returns s with every control character (C0, DEL, C1, and the
// Unicode bidirectional overrides and isolates that reorder what a terminal
// shows) written as a Go-style escape (\n, \x1b, \u202e), invalid UTF-8
// written as \xNN. A backslash is left as it is, so plain Windows paths read
// as they are (an escape in the output may thus also be literal input: what
// matters is that nothing in it acts on the terminal). A string longer than MaxLen bytes is cut there and marked with how much was
// left out. Printable text comes back unchanged.
func String(s string) string { return escape(s, MaxLen) }

// Cut returns s cut to at most n bytes, at a character's boundary, with
// "..." marking a cut; s comes back as it is when it fits. It escapes
// nothing: see String for text that may hold control characters.
func Cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "") + "..."
}

// escape is String with its own limit.
func escape(s string, limit int) string {
	if clean(s) && len(s) <= limit {
		return s
	}
	var b strings.Builder
	rest := ""
	if len(s) > limit {
		cut := limit
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s, rest = s[:cut], s[cut:]
	}
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case unsafe(r):
			if r < 0x100 {
				fmt.Fprintf(&b, `\x%02x`, r)
			} else {
				fmt.Fprintf(&b, `\u%04x`, r)
			}
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	if rest != "" {
		fmt.Fprintf(&b, "…(%d more bytes)", len(rest))
	}
	return b.String()
}

// MessageMaxLen is the length, in bytes of input, past which Message
// cuts: an error's whole chain (a cloud SDK lists every credential source
// it tried) fits, a server's error page does not.
const MessageMaxLen = 2048

// Message is String for an error message, whose end often says what to
// do: a message longer than MessageMaxLen bytes keeps about its first and
// its last MessageMaxLen/2 bytes, with how much was left out between them.
// It is cut between words where one ends near there, and not at all when
// the cut would save less than a quarter of MessageMaxLen: a few bytes
// saved are not worth a sentence broken.
func Message(s string) string {
	const max = MessageMaxLen
	if len(s) <= max+max/4 {
		return escape(s, max+max/4)
	}
	head, tail := max/2, len(s)-max/2
	// A word's end within a tenth of the cut: the head ends before a
	// space, the tail starts after one.
	const near = max / 10
	if i := strings.LastIndexByte(s[head-near:head], ' '); i >= 0 {
		head = head - near + i
	}
	if i := strings.IndexByte(s[tail:tail+near], ' '); i >= 0 {
		tail += i + 1
	}
	for head > 0 && !utf8.RuneStart(s[head]) {
		head--
	}
	for tail < len(s) && !utf8.RuneStart(s[tail]) {
		tail++
	}
	return escape(s[:head], max) + fmt.Sprintf(" …(%d bytes)… ", tail-head) + escape(s[tail:], max)
}

// clean reports whether s is valid UTF-8 without any character String
// escapes.
func clean(s string) bool {
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c < 0x20 || c == 0x7f {
				return false
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 || unsafe(r) {
			return false
		}
		i += size
	}
	return true
}

// unsafe reports whether r changes what a terminal shows rather than being
// shown: controls, and the bidirectional formatting characters.
func unsafe(r rune) bool {
	switch {
	case r < 0x20, r == 0x7f, r >= 0x80 && r <= 0x9f:
		return true
	case r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069, r == 0x200e, r == 0x200f, r == 0x061c:
		return true
	}
	return false
}
