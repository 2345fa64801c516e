package gitwriter

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"sync"

	"github.com/go-git/go-git/v5/plumbing/transport/client"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"

	"github.com/imagebump/imagebump/internal/redact"
)

// Over HTTP(S), go-git follows a redirect of an operation's first request
// (info/refs), as git does by default (http.followRedirects=initial), and
// sends the operation's later requests to where it led; the credentials go
// along only when it stays on the same origin (scheme, host and port). git
// says "warning: redirecting to"; go-git says nothing, so a remote that
// moved (a renamed project, a forge behind a new host name) failed with
// nothing but "credentials refused". A hook on go-git's HTTP client notes
// the redirect for the operation that followed it (through its context),
// and network logs it and names it in the error.

// init installs the HTTP client before any goroutine can read go-git's
// transport table, which has no lock. It is go-git's default client (the
// default transport) with the redirect hook; go-git's own checks of each
// hop (scheme, count, credentials) run before it.
func init() {
	c := githttp.NewClient(&http.Client{Transport: http.DefaultTransport, CheckRedirect: noteRedirect})
	client.InstallProtocol("http", c)
	client.InstallProtocol("https", c)
}

// redirectKey keys the *redirects of one network operation in its context.
type redirectKey struct{}

// noteRedirect records a hop go-git is about to follow in the redirects
// of the request's context, if any.
func noteRedirect(req *http.Request, via []*http.Request) error {
	if rd, ok := req.Context().Value(redirectKey{}).(*redirects); ok && len(via) > 0 {
		rd.note(via[0].URL, req.URL)
	}
	return nil
}

// redirects records where one network operation's first request was
// redirected to.
type redirects struct {
	mu       sync.Mutex
	from, to *url.URL
}

func withRedirects(ctx context.Context) (context.Context, *redirects) {
	rd := &redirects{}
	return context.WithValue(ctx, redirectKey{}, rd), rd
}

func (rd *redirects) note(from, to *url.URL) {
	rd.mu.Lock()
	defer rd.mu.Unlock()
	if rd.from == nil {
		rd.from = from
	}
	rd.to = to
}

// target returns the repository URL the operation was redirected to
// (without the info/refs request and its query, credentials redacted),
// whether that is another origin (its credentials were not sent there),
// and false when there was no redirect.
func (rd *redirects) target() (to string, otherOrigin, ok bool) {
	rd.mu.Lock()
	defer rd.mu.Unlock()
	if rd.to == nil {
		return "", false, false
	}
	u := *rd.to
	u.Path = strings.TrimSuffix(u.Path, "/info/refs")
	u.RawPath, u.RawQuery, u.Fragment = "", "", ""
	return redact.URL(&u), !sameOrigin(rd.from, rd.to), true
}

// sameOrigin reports whether go-git sends a remote's credentials from a
// to b: the same host and port, and the same scheme or http upgraded to
// https on the default ports.
func sameOrigin(a, b *url.URL) bool {
	port := func(u *url.URL) string {
		if p := u.Port(); p != "" {
			return p
		}
		if strings.EqualFold(u.Scheme, "http") {
			return "80"
		}
		return "443"
	}
	if !strings.EqualFold(a.Hostname(), b.Hostname()) {
		return false
	}
	if strings.EqualFold(a.Scheme, b.Scheme) {
		return port(a) == port(b)
	}
	return strings.EqualFold(a.Scheme, "http") && strings.EqualFold(b.Scheme, "https") && port(a) == "80" && port(b) == "443"
}

// redirectedError marks a refusal that came after a redirect, for netError
// to name it; its message is the refusal's own.
type redirectedError struct {
	to          string
	otherOrigin bool
	err         error
}

func (e *redirectedError) Error() string { return e.err.Error() }
func (e *redirectedError) Unwrap() error { return e.err }
