package redact

import (
	"cmp"
	"encoding/base64"
	"encoding/json"
	"maps"
	"net/url"
	"slices"
	"strings"
	"sync"
)

// Secrets is the set of secret values one component holds (registry
// passwords and tokens, a git token, a forge token), so that any text a
// server sends back can be cleaned of them in one place before it reaches an
// error, a log or a page. It is safe for concurrent use; the zero value is an
// empty set, and a nil *Secrets removes only URL credentials.
//
// Values are registered by name with Set when the component reads them
// (secrets are read at each use, so they may rotate): setting a name again
// replaces its value, so the set grows with the number of credentials, not
// with the number of reads. Each value is also removed in the forms servers
// echo it in: URL-encoded (a query or a form), JSON-escaped and base64.
//
// The registry client registers every credential it reads and every bearer
// token it gets, and cleans error bodies and error text with Text. Git and
// the pull-request providers can adopt it the same way: hold one *Secrets,
// Set the token or password when it is read, and pass every error through
// Error (replacing their own ad-hoc lists of secrets).
type Secrets struct {
	mu       sync.RWMutex
	values   map[string]string
	replacer *strings.Replacer // nil: rebuild from values
}

// Set records value under name, replacing what name held. An empty value
// forgets name.
func (s *Secrets) Set(name, value string) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.values[name] == value {
		return
	}
	if s.values == nil {
		s.values = map[string]string{}
	}
	if value == "" {
		delete(s.values, name)
	} else {
		s.values[name] = value
	}
	s.replacer = nil
}

// Len returns the number of values held.
func (s *Secrets) Len() int {
	if s == nil {
		return 0
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	return len(s.values)
}

// Text returns text with the credentials of every URL in it removed (see
// the package function Text) and every secret held, as well as each of
// extra (secrets known only to the caller, such as the Authorization header
// of the request that failed), replaced by Placeholder.
func (s *Secrets) Text(text string, extra ...string) string {
	return Text(s.Strip(text, extra...))
}

// Strip is Text without the URL rules: it replaces only the secret values.
// Use it on bytes that must keep their format, such as a JSON error body.
func (s *Secrets) Strip(text string, extra ...string) string {
	if text == "" {
		return text
	}
	if r := s.replacerFor(); r != nil {
		text = r.Replace(text)
	}
	if len(extra) > 0 {
		text = newReplacer(extra).Replace(text)
	}
	return text
}

// Error returns err with its text passed through Text; it unwraps to err,
// so errors.Is and errors.As still see the original. A nil err stays nil.
func (s *Secrets) Error(err error) error {
	if err == nil {
		return nil
	}
	return &cleanError{err: err, s: s}
}

type cleanError struct {
	err error
	s   *Secrets
}

func (e *cleanError) Error() string { return e.s.Text(e.err.Error()) }
func (e *cleanError) Unwrap() error { return e.err }

func (s *Secrets) replacerFor() *strings.Replacer {
	if s == nil {
		return nil
	}
	s.mu.RLock()
	r, n := s.replacer, len(s.values)
	s.mu.RUnlock()
	if r != nil || n == 0 {
		return r
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.replacer == nil && len(s.values) > 0 {
		s.replacer = newReplacer(slices.Collect(maps.Values(s.values)))
	}
	return s.replacer
}

// newReplacer replaces every value and its encodings, longest first, so
// that a secret containing another is removed whole.
func newReplacer(values []string) *strings.Replacer {
	var forms []string
	for _, v := range values {
		if v == "" {
			continue
		}
		forms = append(forms, Encodings(v)...)
	}
	slices.SortFunc(forms, func(a, b string) int {
		return cmp.Or(cmp.Compare(len(b), len(a)), strings.Compare(a, b))
	})
	forms = slices.Compact(forms)
	pairs := make([]string, 0, 2*len(forms))
	for _, f := range forms {
		pairs = append(pairs, f, Placeholder)
	}
	return strings.NewReplacer(pairs...)
}

// Encodings returns value and the forms a server may echo it in: URL query
// and path escaping, JSON string escaping (with and without the escaping
// of <, > and & that Go does and most other languages do not), and
// standard and URL base64 (with and without padding). Each is distinct and
// non-empty.
func Encodings(value string) []string {
	if value == "" {
		return nil
	}
	forms := []string{value, url.QueryEscape(value), url.PathEscape(value)}
	for _, html := range []bool{true, false} {
		var b strings.Builder
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(html)
		if err := enc.Encode(value); err == nil {
			q := strings.TrimSuffix(b.String(), "\n")
			forms = append(forms, q[1:len(q)-1])
		}
	}
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding, base64.RawStdEncoding, base64.RawURLEncoding} {
		forms = append(forms, enc.EncodeToString([]byte(value)))
	}
	slices.Sort(forms)
	return slices.Compact(forms)
}

// AuthorizationSecrets returns the secrets an HTTP Authorization header
// value carries: for "Basic X", X and, decoded, "user:password" and the
// password; for "Bearer T" (or any other scheme), T. It returns nothing for
// an empty header.
func AuthorizationSecrets(header string) []string {
	header = strings.TrimSpace(header)
	if header == "" {
		return nil
	}
	scheme, cred, ok := strings.Cut(header, " ")
	cred = strings.TrimSpace(cred)
	if !ok || cred == "" {
		return []string{header}
	}
	out := []string{cred}
	if strings.EqualFold(scheme, "basic") {
		if dec, err := base64.StdEncoding.DecodeString(cred); err == nil && len(dec) > 0 {
			out = append(out, string(dec))
			if _, pass, ok := strings.Cut(string(dec), ":"); ok && pass != "" {
				out = append(out, pass)
			}
		}
	}
	return out
}
