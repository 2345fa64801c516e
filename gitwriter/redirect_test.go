package gitwriter

import (
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
)

// TestRedirectedRemote serves a repository through a front that answers
// the old path of a moved repository with a redirect, as forges do for a
// renamed project: on its own origin (credentials follow, the clone works,
// and the move is logged), and to another origin (git http-backend on its
// own port: credentials do not follow, and the refusal says why).
func TestRedirectedRemote(t *testing.T) {
	_, backend, auth := httpRemote(t)
	bu, err := url.Parse(backend.URL)
	if err != nil {
		t.Fatal(err)
	}
	newPath := bu.Path // /repo.git, say
	proxy := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: bu.Scheme, Host: bu.Host})
	var front *httptest.Server
	var crossOrigin atomic.Bool
	front = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if rest, ok := strings.CutPrefix(r.URL.Path, "/old.git"); ok {
			to := front.URL
			if crossOrigin.Load() {
				to = "http://" + bu.Host
			}
			u := to + newPath + rest
			if r.URL.RawQuery != "" {
				u += "?" + r.URL.RawQuery
			}
			http.Redirect(w, r, u, http.StatusMovedPermanently)
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(front.Close)

	t.Run("same origin", func(t *testing.T) {
		var logs logBuffer
		r := mustOpen(t, Options{URL: front.URL + "/old.git", Branch: "main", Auth: auth, Workdir: t.TempDir(), Logger: slog.New(slog.NewTextHandler(&logs, nil))})
		if r.Head() == "" {
			t.Fatal("no head after the clone")
		}
		want := "to=" + front.URL + newPath
		if got := logs.String(); !strings.Contains(got, "the Git remote redirects to another URL") || !strings.Contains(got, want) {
			t.Errorf("log does not warn of the redirect to %s:\n%s", front.URL+newPath, got)
		}
	})

	t.Run("other origin", func(t *testing.T) {
		crossOrigin.Store(true)
		t.Cleanup(func() { crossOrigin.Store(false) })
		var logs logBuffer
		_, err := Open(t.Context(), Options{URL: front.URL + "/old.git", Branch: "main", Auth: auth, Workdir: t.TempDir(), Logger: slog.New(slog.NewTextHandler(&logs, nil))})
		var ae *AuthError
		if !errors.As(err, &ae) {
			t.Fatalf("Open = %v, want an AuthError", err)
		}
		target := "http://" + bu.Host + newPath
		if ae.RedirectedTo != target || !ae.OtherOrigin {
			t.Errorf("AuthError redirect = %q (other origin %v), want %q (true)", ae.RedirectedTo, ae.OtherOrigin, target)
		}
		msg := err.Error()
		for _, want := range []string{"credentials not sent", "redirected to " + target, "set git.url"} {
			if !strings.Contains(msg, want) {
				t.Errorf("error lacks %q:\n%s", want, msg)
			}
		}
		if strings.Contains(msg, backend.Password) || strings.Contains(logs.String(), backend.Password) {
			t.Error("the password leaked into the error or the log")
		}
	})
}
