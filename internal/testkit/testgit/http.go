package testgit

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

// HTTPServer is git http-backend serving one bare repository over smart
// HTTP on loopback.
type HTTPServer struct {
	// URL is the repository's URL, http://127.0.0.1:PORT/repo.git (the last
	// element is the bare directory's name).
	URL string
	// Username and Password are the credentials the server requires, when
	// started with auth; empty otherwise. Password is random per server.
	Username, Password string
	// Requests returns how many HTTP requests the server has received.
	Requests func() int

	requests    atomic.Int64
	pushes      atomic.Int64
	failPush    atomic.Bool
	failAll     atomic.Bool
	authFailed  atomic.Int64
	receivePack atomic.Int64
	otherUser   atomic.Pointer[string]
}

// StartHTTP serves bareDir with `git http-backend` through net/http/cgi.
// The repository's parent directory is GIT_PROJECT_ROOT, every repository
// in it is exported, and pushes (receive-pack) are enabled. With withAuth,
// basic auth is checked in Go before the CGI runs; a wrong or missing
// password gets 401. The server stops when the test ends.
func StartHTTP(t testing.TB, bareDir string, withAuth bool) *HTTPServer {
	t.Helper()
	gitBin := RequireProgram(t, "git", "git")
	abs, err := filepath.Abs(bareDir)
	if err != nil {
		t.Fatal(err)
	}
	s := &HTTPServer{}
	s.Requests = func() int { return int(s.requests.Load()) }
	if withAuth {
		s.Username = "testgit-user"
		s.Password = "pw-" + randomHex(t, 12)
	}
	backend := &cgi.Handler{
		Path: gitBin,
		Args: []string{"http-backend"},
		Dir:  filepath.Dir(abs),
		Env: []string{
			"GIT_PROJECT_ROOT=" + filepath.Dir(abs),
			"GIT_HTTP_EXPORT_ALL=1",
			"GIT_CONFIG_NOSYSTEM=1",
			"GIT_CONFIG_GLOBAL=/dev/null",
			"GIT_CONFIG_COUNT=1",
			"GIT_CONFIG_KEY_0=http.receivepack",
			"GIT_CONFIG_VALUE_0=true",
			"HOME=" + t.TempDir(),
		},
		Stderr: testLogWriter{t},
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.requests.Add(1)
		if s.failAll.Load() {
			hangUp(w, r)
			return
		}
		if withAuth {
			user, pass, ok := r.BasicAuth()
			userOK := subtle.ConstantTimeCompare([]byte(user), []byte(s.Username)) == 1
			if other := s.otherUser.Load(); other != nil && user == *other {
				userOK = true
			}
			if !ok || !userOK || subtle.ConstantTimeCompare([]byte(pass), []byte(s.Password)) != 1 {
				s.authFailed.Add(1)
				w.Header().Set("WWW-Authenticate", `Basic realm="testgit"`)
				http.Error(w, "authentication required", http.StatusUnauthorized)
				return
			}
		}
		if r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/git-receive-pack") {
			s.receivePack.Add(1)
			if s.failPush.Load() {
				// Take part of the pack, then drop the connection: the
				// remote goes away in the middle of a push.
				_, _ = io.CopyN(io.Discard, r.Body, 64)
				hangUp(w, r)
				return
			}
			s.pushes.Add(1)
		}
		backend.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	s.URL = srv.URL + "/" + filepath.Base(abs)
	return s
}

// testLogWriter passes a child's standard error to the test log.
type testLogWriter struct{ t testing.TB }

func (w testLogWriter) Write(p []byte) (int, error) {
	w.t.Logf("git http-backend: %s", strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// hangUp closes the client's connection without an HTTP response.
func hangUp(w http.ResponseWriter, r *http.Request) {
	hj, ok := w.(http.Hijacker)
	if !ok {
		panic("testgit: response writer cannot be hijacked")
	}
	conn, _, err := hj.Hijack()
	if err == nil {
		_ = conn.Close()
	}
}

// AllowUser makes the server accept name as well as Username, with the same
// Password, the way forges accept a token as the password of any user name
// (such as "x-access-token").
func (s *HTTPServer) AllowUser(name string) { s.otherUser.Store(&name) }

// FailReceivePack makes every push from now on (on true) fail half-way: the
// server reads the start of the request and then closes the connection,
// before git-receive-pack runs, so the repository is left untouched.
func (s *HTTPServer) FailReceivePack(on bool) { s.failPush.Store(on) }

// FailAll makes every request from now on (on true) fail: the server closes
// the connection without answering, as a remote that went away.
func (s *HTTPServer) FailAll(on bool) { s.failAll.Store(on) }

// Pushes returns how many receive-pack requests were passed to git.
func (s *HTTPServer) Pushes() int { return int(s.pushes.Load()) }

// ReceivePackRequests returns how many receive-pack requests arrived with
// valid credentials, including the ones FailReceivePack made fail.
func (s *HTTPServer) ReceivePackRequests() int { return int(s.receivePack.Load()) }

// AuthFailures returns how many requests were refused for missing or wrong
// credentials.
func (s *HTTPServer) AuthFailures() int { return int(s.authFailed.Load()) }

func randomHex(t testing.TB, n int) string {
	t.Helper()
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}
