package pullrequest

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/imagebump/imagebump/internal/printable"
	"github.com/imagebump/imagebump/internal/redact"
)

// Error is a failed call to a forge's API. Its message names the provider,
// the repository and the operation, and for a 401, 403 or 404 answer says
// what the token lacks, for example:
//
//	github: creating a pull request in acme/fleet: the token is not allowed to (HTTP 403): it needs pull_requests: write (fine-grained) or the repo scope (classic)
//
// It never holds a token: adapters remove it from the forge's message, and
// URLs in the underlying error are redacted when printed.
type Error struct {
	// Provider is "github", "gitlab" or "gitea".
	Provider string
	// Repository is the owner/repo (GitLab: the project path) the call was
	// for.
	Repository string
	// Op says what was being done, as "creating a pull request".
	Op string
	// Status is the HTTP status the forge answered, or 0 when no answer
	// came (a network error, a cancelled context).
	Status int
	// Message is the forge's own explanation, if any, without credentials.
	Message string
	// Needs is what the token must be allowed for Op, as the forge names it
	// ("pull_requests: write (fine-grained) or the repo scope (classic)").
	Needs string
	// RateLimited is set when the forge refused because of its rate limit,
	// not because of the token's permissions.
	RateLimited bool
	// Exists is set when the forge refused to create a pull request because
	// an open one from the same branch exists; the Error then Is
	// ErrAlreadyExists.
	Exists bool
	// API is the API base URL the call went to, without credentials; a 404
	// names it, as a wrong one answers so too.
	API string
	// Err is the client library's error.
	Err error
}

func (e *Error) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %s in %s: ", e.Provider, e.Op, e.Repository)
	status := ""
	if e.Status != 0 {
		status = fmt.Sprintf(" (HTTP %d)", e.Status)
	}
	switch {
	case e.Exists:
		b.WriteString(ErrAlreadyExists.Error() + status)
	case e.RateLimited:
		b.WriteString("rate limited by the forge" + status + "; retry later")
	case e.Status == http.StatusUnauthorized:
		b.WriteString("the token is invalid or expired" + status)
	case e.Status == http.StatusForbidden:
		b.WriteString("the token is not allowed to" + status)
		if e.Needs != "" {
			b.WriteString(": it needs " + e.Needs)
		}
	case e.Status == http.StatusNotFound:
		b.WriteString("not found, or the token has no access to " + e.Repository + status)
		if e.Needs != "" {
			b.WriteString(": it needs " + e.Needs)
		}
		if e.API != "" {
			b.WriteString("; or " + redact.String(e.API) + " is not the forge's API: check push.pullRequest.apiURL")
		}
	case e.Status >= 500:
		fmt.Fprintf(&b, "the forge failed on its side (HTTP %d); the next cycle (or run) tries again", e.Status)
	case e.Status >= 200 && e.Status < 300:
		// A success that the client could not read: a login page, a
		// proxy's, another forge's API.
		fmt.Fprintf(&b, "the answer (HTTP %d) is not this forge's API", e.Status)
		if e.Err != nil {
			b.WriteString(": " + redact.Text(e.Err.Error()))
		}
		b.WriteString("; check push.pullRequest.apiURL, and that provider (github, gitlab or gitea) is this forge's")
	case e.Status == http.StatusMethodNotAllowed:
		fmt.Fprintf(&b, "the server does not take this request (HTTP %d); check that push.pullRequest.provider (github, gitlab or gitea) is this forge's, and apiURL", e.Status)
	case e.Status != 0:
		fmt.Fprintf(&b, "HTTP %d", e.Status)
	case e.Err != nil:
		b.WriteString(redact.Text(e.Err.Error()))
	default:
		b.WriteString("failed")
	}
	if e.Message != "" && e.Status != 0 && !e.Exists && (e.Status < 200 || e.Status >= 300) {
		msg := redact.Text(e.Message)
		if e.Status >= 500 {
			// A proxy's error page, or a dump of the request: its first
			// line, shortened, says enough.
			msg, _, _ = strings.Cut(strings.TrimSpace(msg), "\n")
			msg = printable.Cut(msg, maxServerMessage)
		}
		fmt.Fprintf(&b, "; %s said: %s", e.Provider, msg)
	}
	return b.String()
}

// maxServerMessage bounds how much of a failing forge's answer an Error
// repeats.
const maxServerMessage = 200

// Unwrap returns the client library's error.
func (e *Error) Unwrap() error { return e.Err }

// Is reports whether target is ErrAlreadyExists and the forge refused
// because an open pull request exists.
func (e *Error) Is(target error) bool {
	return e.Exists && target == ErrAlreadyExists
}

// ScrubError returns err with its text cleaned by Scrub; it unwraps to err,
// so errors.Is and errors.As still see the client library's error. Adapters
// put it in Error.Err.
func ScrubError(err error, secrets ...string) error {
	if err == nil {
		return nil
	}
	return &scrubbed{err: err, secrets: secrets}
}

type scrubbed struct {
	err     error
	secrets []string
}

func (s *scrubbed) Error() string { return Scrub(s.err.Error(), s.secrets...) }
func (s *scrubbed) Unwrap() error { return s.err }

// Scrub returns s with every occurrence of each secret replaced by
// "REDACTED", for adapters to clean a forge's message before it goes into an
// Error. Empty secrets are ignored.
func Scrub(s string, secrets ...string) string {
	// One place removes secrets for registries, Git and forges alike,
	// in the forms servers echo them in (URL-encoded, JSON, base64).
	var set redact.Secrets
	for i, sec := range secrets {
		set.Set(strconv.Itoa(i), sec)
	}
	return set.Text(s)
}
