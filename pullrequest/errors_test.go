package pullrequest

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"testing"
)

func TestErrorMessages(t *testing.T) {
	base := Error{Provider: "github", Repository: "acme/fleet", Op: "creating a pull request", Needs: "pull_requests: write (fine-grained) or the repo scope (classic)"}
	with := func(f func(*Error)) *Error {
		e := base
		f(&e)
		return &e
	}
	for _, c := range []struct {
		name string
		err  *Error
		want string
	}{
		{"403", with(func(e *Error) { e.Status = 403 }),
			"github: creating a pull request in acme/fleet: the token is not allowed to (HTTP 403): it needs pull_requests: write (fine-grained) or the repo scope (classic)"},
		{"403 with the forge's message", with(func(e *Error) { e.Status = 403; e.Message = "Resource not accessible by personal access token" }),
			"github: creating a pull request in acme/fleet: the token is not allowed to (HTTP 403): it needs pull_requests: write (fine-grained) or the repo scope (classic); github said: Resource not accessible by personal access token"},
		{"401", with(func(e *Error) { e.Status = 401; e.Message = "Bad credentials" }),
			"github: creating a pull request in acme/fleet: the token is invalid or expired (HTTP 401); github said: Bad credentials"},
		{"404", with(func(e *Error) { e.Status = 404 }),
			"github: creating a pull request in acme/fleet: not found, or the token has no access to acme/fleet (HTTP 404): it needs pull_requests: write (fine-grained) or the repo scope (classic)"},
		{"409", with(func(e *Error) { e.Status = 409; e.Exists = true; e.Message = "already there" }),
			"github: creating a pull request in acme/fleet: an open pull request from this branch already exists (HTTP 409)"},
		{"rate limited", with(func(e *Error) { e.Status = 403; e.RateLimited = true; e.Message = "API rate limit exceeded" }),
			"github: creating a pull request in acme/fleet: rate limited by the forge (HTTP 403); retry later; github said: API rate limit exceeded"},
		{"rate limited before sending", with(func(e *Error) { e.RateLimited = true }),
			"github: creating a pull request in acme/fleet: rate limited by the forge; retry later"},
		{"500", with(func(e *Error) { e.Status = 500; e.Message = "see https://user:pw@example.com/x?token=abc" }),
			"github: creating a pull request in acme/fleet: the forge failed on its side (HTTP 500); the next cycle (or run) tries again; github said: see https://example.com/x?token=REDACTED"},
		{"502 with a dump of the request", with(func(e *Error) {
			e.Provider, e.Status = "gitea", 502
			e.Message = "unknown API error: 502\nRequest: '/api/v1/repos/acme/fleet/pulls/4' with 'PATCH' method and '<html>" + strings.Repeat("x", 5000) + "' body"
		}), "gitea: creating a pull request in acme/fleet: the forge failed on its side (HTTP 502); the next cycle (or run) tries again; gitea said: unknown API error: 502"},
		{"a long first line is cut", with(func(e *Error) { e.Status = 503; e.Message = strings.Repeat("y", 300) }),
			"github: creating a pull request in acme/fleet: the forge failed on its side (HTTP 503); the next cycle (or run) tries again; github said: " + strings.Repeat("y", 200) + "..."},
		{"a 4xx message is kept whole", with(func(e *Error) { e.Status = 422; e.Message = "Validation Failed\nfield: title" }),
			"github: creating a pull request in acme/fleet: HTTP 422; github said: Validation Failed\nfield: title"},
		{"a page that is no API", with(func(e *Error) {
			e.Status, e.Message, e.Err = 200, "invalid character '<' looking for beginning of value", errors.New("invalid character '<' looking for beginning of value")
		}), "github: creating a pull request in acme/fleet: the answer (HTTP 200) is not this forge's API: invalid character '<' looking for beginning of value; check push.pullRequest.apiURL, and that provider (github, gitlab or gitea) is this forge's"},
		{"another forge's API", with(func(e *Error) { e.Provider, e.Status = "gitlab", 405 }),
			"gitlab: creating a pull request in acme/fleet: the server does not take this request (HTTP 405); check that push.pullRequest.provider (github, gitlab or gitea) is this forge's, and apiURL"},
		{"network", with(func(e *Error) {
			e.Err = &url.Error{Op: "Post", URL: "https://u:secret@api.example.com/repos?access_token=abc", Err: context.DeadlineExceeded}
		}), `github: creating a pull request in acme/fleet: Post "https://api.example.com/repos?access_token=REDACTED": context deadline exceeded`},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := c.err.Error(); got != c.want {
				t.Errorf("got  %s\nwant %s", got, c.want)
			}
		})
	}
}

func TestErrorIsAndUnwrap(t *testing.T) {
	inner := errors.New("client error")
	e := &Error{Provider: "gitea", Status: 409, Exists: true, Err: inner}
	wrapped := fmt.Errorf("run: %w", e)
	if !errors.Is(wrapped, ErrAlreadyExists) || !errors.Is(wrapped, inner) {
		t.Error("a 409 Error should be ErrAlreadyExists and unwrap to the client's error")
	}
	if errors.Is(&Error{Status: 403, Err: inner}, ErrAlreadyExists) {
		t.Error("a 403 Error is not ErrAlreadyExists")
	}
}

func TestScrub(t *testing.T) {
	const token = "glpat-s3cr3t"
	err := ScrubError(fmt.Errorf("server echoed %s back: %w", token, context.Canceled), token, "")
	if got, want := err.Error(), "server echoed REDACTED back: context canceled"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if !errors.Is(err, context.Canceled) {
		t.Error("ScrubError hides the wrapped error")
	}
	if ScrubError(nil, token) != nil {
		t.Error("ScrubError(nil) is not nil")
	}
	if got := Scrub("a "+token+" b "+token, token); got != "a REDACTED b REDACTED" {
		t.Errorf("Scrub = %q", got)
	}
}
