// Package redact removes credentials from URLs and from text that may contain
// URLs, so that errors and logs can name a URL without leaking a secret, and
// (with Secrets) removes known secret values from any text a server sends
// back, such as an error body echoing the Authorization header.
package redact

import (
	"net/url"
	"regexp"
	"strings"

	"github.com/imagebump/imagebump/internal/scpurl"
)

// Placeholder replaces every secret that redact removes.
const Placeholder = "REDACTED"

// keptParams are query parameters known to carry no secret. They stay
// readable because they help to debug pagination and token scopes; every other
// query value (signed storage URLs, access tokens) is replaced.
var keptParams = map[string]bool{
	"n":       true,
	"last":    true,
	"scope":   true,
	"service": true,
	"digest":  true,
	// The forges' listing parameters (GitHub, GitLab, Gitea).
	"page":          true,
	"per_page":      true,
	"limit":         true,
	"state":         true,
	"sort":          true,
	"direction":     true,
	"order_by":      true,
	"head":          true,
	"base":          true,
	"source_branch": true,
	"target_branch": true,
}

// URL returns u as a string without its password and with the value of every
// query parameter that may hold a secret replaced by Placeholder. The user
// name is dropped too: for registries it is often an account or token name.
func URL(u *url.URL) string {
	if u == nil {
		return ""
	}
	r := *u
	r.User = nil
	if r.RawQuery != "" {
		q, err := url.ParseQuery(r.RawQuery)
		if err != nil {
			r.RawQuery = Placeholder
		} else {
			for k, vs := range q {
				if keptParams[k] {
					continue
				}
				for i := range vs {
					vs[i] = Placeholder
				}
			}
			r.RawQuery = q.Encode()
		}
	}
	r.Fragment = ""
	r.RawFragment = ""
	return r.String()
}

// String is URL for a URL in text form. Git's scp-like form
// (user@host:path) keeps its host and path, without the user, as a URL
// keeps them. Any other string that does not parse as a URL is replaced
// whole by Placeholder, since it cannot be cleaned with certainty.
func String(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		if a, ok := scpurl.Parse(s); ok && a.Plain() {
			return a.HostPort() + ":" + a.Path
		}
		return Placeholder
	}
	return URL(u)
}

// urlPattern finds absolute URLs in free text. It stops at white space and at
// the quotes and brackets that usually surround a URL in an error message.
var urlPattern = regexp.MustCompile(`[A-Za-z][A-Za-z0-9+.-]*://[^\s"'<>]+`)

// Text returns s with every absolute URL in it passed through String.
func Text(s string) string {
	if !strings.Contains(s, "://") {
		return s
	}
	return urlPattern.ReplaceAllStringFunc(s, func(m string) string {
		// A URL at the end of a sentence or inside parentheses or brackets
		// keeps its trailing punctuation outside the redacted part.
		trimmed := strings.TrimRight(m, ".,;:)]}")
		return String(trimmed) + m[len(trimmed):]
	})
}
