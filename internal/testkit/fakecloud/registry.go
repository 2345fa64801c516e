package fakecloud

import (
	"context"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	ggcrregistry "github.com/google/go-containerregistry/pkg/registry"
)

// Scheme is how a Registry front demands credentials.
type Scheme int

const (
	// Basic: every /v2/ request carries basic credentials, as ECR's
	// private registries take them.
	Basic Scheme = iota
	// Bearer: the registry sends clients to its /oauth2/token, which
	// takes basic credentials and issues bearer tokens (Artifact
	// Registry, GCR, ACR, ECR Public).
	Bearer
)

// Registry is go-containerregistry's in-memory registry behind a check of
// the credentials a cloud issued. Push writes through an unchecked twin on
// the same storage.
type Registry struct {
	URL  string // the checked front
	Push string // host:port of the unchecked twin

	// Check decides whether basic credentials are good, and says why
	// not ("expired", "unknown").
	Check func(user, pass string) string

	// Exchange, when set, serves POST /oauth2/exchange (ACR).
	Exchange http.HandlerFunc

	// RegistryTokens are the bearer tokens /oauth2/token issues.
	RegistryTokens Tokens

	mu      sync.Mutex
	refused []string // why requests were refused, in order
}

// NewRegistry starts a Registry front; it stops when the test ends.
func NewRegistry(t testing.TB, scheme Scheme, check func(user, pass string) string) *Registry {
	h := ggcrregistry.New(ggcrregistry.Logger(log.New(io.Discard, "", 0)))
	direct := httptest.NewServer(h)
	t.Cleanup(direct.Close)
	r := &Registry{Push: strings.TrimPrefix(direct.URL, "http://"), Check: check, RegistryTokens: Tokens{Prefix: "regtoken-", TTL: time.Minute}}
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		switch {
		case req.URL.Path == "/oauth2/exchange" && r.Exchange != nil:
			r.Exchange(w, req)
		case req.URL.Path == "/oauth2/token" && scheme == Bearer:
			r.token(w, req)
		case strings.HasPrefix(req.URL.Path, "/v2"):
			if why := r.allowed(scheme, req); why != "" {
				r.refuse(w, req, scheme, why)
				return
			}
			h.ServeHTTP(w, req)
		default:
			http.NotFound(w, req)
		}
	}))
	t.Cleanup(front.Close)
	r.URL = front.URL
	return r
}

// Refused returns why requests were refused, in order.
func (r *Registry) Refused() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.refused...)
}

func (r *Registry) allowed(scheme Scheme, req *http.Request) string {
	if scheme == Basic {
		user, pass, ok := req.BasicAuth()
		if !ok {
			return "no basic credentials"
		}
		if why := r.Check(user, pass); why != "ok" {
			return "basic credentials " + why
		}
		return ""
	}
	tok, ok := strings.CutPrefix(req.Header.Get("Authorization"), "Bearer ")
	if !ok {
		return "no bearer token"
	}
	if why := r.RegistryTokens.Check(tok); why != "ok" {
		return "bearer token " + why
	}
	return ""
}

func (r *Registry) refuse(w http.ResponseWriter, req *http.Request, scheme Scheme, why string) {
	r.mu.Lock()
	r.refused = append(r.refused, why)
	r.mu.Unlock()
	if scheme == Basic {
		w.Header().Set("WWW-Authenticate", `Basic realm="`+req.Host+`",service="ecr.amazonaws.com"`)
	} else {
		w.Header().Set("WWW-Authenticate", `Bearer realm="http://`+req.Host+`/oauth2/token",service="`+req.Host+`"`)
	}
	writeJSON(w, http.StatusUnauthorized, "", map[string]any{"errors": []map[string]string{{"code": "UNAUTHORIZED", "message": why}}})
}

// token serves the bearer token endpoint: GET with basic credentials.
func (r *Registry) token(w http.ResponseWriter, req *http.Request) {
	user, pass, ok := req.BasicAuth()
	why := "no basic credentials"
	if ok {
		why = r.Check(user, pass)
	}
	if why != "ok" {
		r.mu.Lock()
		r.refused = append(r.refused, "token endpoint: "+why)
		r.mu.Unlock()
		writeJSON(w, http.StatusUnauthorized, "", map[string]any{"errors": []map[string]string{{"code": "UNAUTHORIZED", "message": why}}})
		return
	}
	tok, exp := r.RegistryTokens.Issue()
	writeJSON(w, 200, "", map[string]any{"token": tok, "access_token": tok, "expires_in": int(time.Until(exp).Seconds())})
}

// Dialer returns a DialContext that connects the given host names (any
// port) to the front, and dials every other address as it is: a test
// client can then use a cloud registry's real name.
func (r *Registry) Dialer(names ...string) func(ctx context.Context, network, addr string) (net.Conn, error) {
	front := strings.TrimPrefix(r.URL, "http://")
	var d net.Dialer
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		host, _, _ := net.SplitHostPort(addr)
		for _, n := range names {
			if strings.EqualFold(host, n) {
				return d.DialContext(ctx, network, front)
			}
		}
		return d.DialContext(ctx, network, addr)
	}
}
