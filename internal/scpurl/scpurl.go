// Package scpurl reads Git's scp-like remote address, [user@]host:path,
// the one form of remote that is neither a URL nor a local path. The
// config, the pull request's forge, and redaction each ask it what they
// need of an address, so that they tell the three forms apart alike.
package scpurl

import "strings"

// Address is an scp-like remote's parts.
type Address struct {
	// User is the part before '@', or "".
	User string
	// Host is the host name, or an IPv6 address without its brackets.
	Host string
	// Path is everything after the colon, as written: relative to the
	// user's home folder on the server, or absolute when it starts with
	// '/'.
	Path string
}

// Parse returns the parts of s when it is an scp-like address, as Git
// tells one apart: no "://", and a colon before any slash. A host may be
// an IPv6 address in brackets ([::1]:repo.git). A one-letter host is
// Windows' drive (C:\repo, C:/repo), which Git takes for a local path, and
// so is an empty host or path.
func Parse(s string) (Address, bool) {
	if strings.Contains(s, "://") {
		return Address{}, false
	}
	var a Address
	rest := s
	if at := strings.LastIndex(prefixBeforePath(s), "@"); at >= 0 {
		a.User, rest = s[:at], s[at+1:]
	}
	var colon int
	if strings.HasPrefix(rest, "[") {
		end := strings.Index(rest, "]")
		if end < 0 || !strings.HasPrefix(rest[end+1:], ":") {
			return Address{}, false
		}
		a.Host, colon = rest[1:end], end+1
	} else {
		colon = strings.Index(rest, ":")
		if colon < 0 {
			return Address{}, false
		}
		a.Host = rest[:colon]
	}
	a.Path = rest[colon+1:]
	if a.Host == "" || a.Path == "" || strings.ContainsAny(a.Host, `/\`) || strings.Contains(a.User, "/") || (len(a.Host) == 1 && a.User == "") {
		return Address{}, false
	}
	return a, true
}

// prefixBeforePath is s up to its first colon outside brackets: where a
// user's '@' may be. An '@' in the path (host:team@2/repo) is no user's.
func prefixBeforePath(s string) string {
	depth := 0
	for i, r := range s {
		switch r {
		case '[':
			depth++
		case ']':
			depth--
		case ':':
			if depth == 0 {
				return s[:i]
			}
		}
	}
	return s
}

// Plain reports whether a's parts are made of the characters remotes are
// written with, so that it may be taken for an address and shown: a user
// of letters, digits and ._~-, a host name of letters, digits, '.' and '-'
// (or an IPv6 address), and a path without white space, '@', '?' or '#'.
// Anything else is more likely a mistyped URL or a credential
// (user:password@host:path reads as host "user") than a remote.
func (a Address) Plain() bool {
	return all(a.User, func(r rune) bool { return alnum(r) || strings.ContainsRune("._~-", r) }) &&
		(all(a.Host, func(r rune) bool { return alnum(r) || r == '.' || r == '-' }) ||
			strings.Contains(a.Host, ":") && all(a.Host, func(r rune) bool { return isHex(r) || r == ':' || r == '.' })) &&
		!strings.ContainsAny(a.Path, "@?# \t\r\n\f\v")
}

// HostPort is the host as it is written before the path, in brackets
// when it is an IPv6 address.
func (a Address) HostPort() string {
	if strings.Contains(a.Host, ":") {
		return "[" + a.Host + "]"
	}
	return a.Host
}

func all(s string, ok func(rune) bool) bool {
	for _, r := range s {
		if !ok(r) {
			return false
		}
	}
	return true
}

func alnum(r rune) bool {
	return 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9'
}

func isHex(r rune) bool {
	return '0' <= r && r <= '9' || 'a' <= r && r <= 'f' || 'A' <= r && r <= 'F'
}
