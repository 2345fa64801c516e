// Package hostile is a fake OCI registry that misbehaves on purpose, for
// tests that check imagebump is neither hung nor poisoned by a registry: one
// Mode per misbehaviour, chosen by the first component of the repository
// path, so that one server holds healthy and hostile repositories side by
// side ("HOST/healthy/app", "HOST/endless-link/app"). Refused and Blackhole
// give hosts that refuse connections or accept them and never answer.
//
// It is a test kit: it implements only what a client listing tags and
// resolving digests asks for, and it records what it was asked so that
// tests can check, for example, that a page cap held or that no credential
// reached a token realm.
package hostile

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Mode is how the repositories under one path prefix behave.
type Mode string

// The modes. Each is the first path component of its repositories.
const (
	// Healthy lists Options.Tags and serves an image manifest (with a
	// valid digest) for each.
	Healthy Mode = "healthy"
	// EndlessLink sends, with every page of ten tags, a Link header naming
	// a next page never seen before, holding new tags: it never ends.
	EndlessLink Mode = "endless-link"
	// NoLink sends full pages (as many tags as asked for with n) of new
	// tags and never a Link header, whatever "last" says: it never ends.
	NoLink Mode = "no-link"
	// HangAfterHeaders answers 200 with its headers, then sends nothing
	// until the client gives up.
	HangAfterHeaders Mode = "hang-after-headers"
	// SlowDrip sends a valid tag list one byte per Options.DripInterval.
	SlowDrip Mode = "slow-drip"
	// HugeErrorBody answers 403 with an Options.ErrorBodySize body that
	// echoes the request's Authorization header and the password it
	// carries (the server's own password for a bearer token), again and
	// again.
	HugeErrorBody Mode = "huge-error"
	// InvalidTags lists BadTags() next to ValidTags().
	InvalidTags Mode = "invalid-tags"
	// BadDigest serves manifests whose digests are malformed; the tag
	// says which (see the DigestTag constants).
	BadDigest Mode = "bad-digest"
	// EchoLink lists Options.Tags with a Link header whose next page's
	// path holds the request's Authorization header and the password it
	// carries; that page answers 404.
	EchoLink Mode = "echo-link"
)

// Tags of BadDigest repositories, each a different malformed digest.
const (
	// DigestTagHeader: HEAD sends a Docker-Content-Digest that is a path,
	// not a digest; GET serves a valid image manifest.
	DigestTagHeader = "bad-header"
	// DigestTagIndexHex: an index whose linux/amd64 entry has a digest
	// with characters that are not hex.
	DigestTagIndexHex = "bad-index-hex"
	// DigestTagIndexLength: an index whose linux/amd64 entry has a sha256
	// digest of 200 hex digits.
	DigestTagIndexLength = "bad-index-length"
	// DigestTagIndexAlgorithm: an index whose linux/amd64 entry uses an
	// algorithm no registry may use ("md5").
	DigestTagIndexAlgorithm = "bad-index-algorithm"
	// DigestTagConfig: an image manifest whose config digest is a path.
	DigestTagConfig = "bad-config"
)

// BadTags returns tags a registry may list but imagebump must never write:
// template and variable syntax, path and digest separators, white space,
// control characters and terminal escapes, YAML-special characters, and
// lengths over 128 bytes. All are valid UTF-8, so they survive JSON.
func BadTags() []string {
	return []string{
		"${VAR}", "$(id)", "$HOME",
		"{{ .Values.tag }}", "{{`x`}}",
		"a/b", "../../etc/passwd",
		"a@sha256:0000", "app:1.0",
		"a b", " leading", "trailing ",
		"tab\there", "new\nline", "cr\rforged", "nul\x00byte", "bell\a",
		"\x1b[31mred\x1b[0m", "\x1b]0;title\a",
		"#comment", "*alias", "&anchor", "!tag", "'quoted'", `"dq"`, "a,b", "[x]",
		"-1", ".hidden", "1.0.0+build",
		"café", "\u202eevil",
		strings.Repeat("a", 129),
		strings.Repeat("9", 4096),
		"",
	}
}

// ValidTags returns the valid tags InvalidTags repositories list too.
func ValidTags() []string { return []string{"1.0.0", "1.1.0", "2.0.0"} }

// Auth is how the server wants clients to authenticate.
type Auth int

// The authentication modes.
const (
	// AuthNone: anonymous access.
	AuthNone Auth = iota
	// AuthBasic: HTTP basic with Server.Username and Server.Password.
	AuthBasic
	// AuthBearer: a token realm on the server itself exchanges basic
	// credentials for Server.Token.
	AuthBearer
	// AuthCrossHostRealm: like AuthBearer, but the realm is plain HTTP on
	// another host name ("localhost" and another port, while the registry
	// is 127.0.0.1). A client must not send credentials there; the realm
	// records every request it gets.
	AuthCrossHostRealm
)

// Options configures a Server. The zero value works.
type Options struct {
	// Auth is the authentication mode; zero: AuthNone.
	Auth Auth
	// Tags are what Healthy repositories list; nil: ValidTags().
	Tags []string
	// DripInterval is SlowDrip's pause between bytes; zero: 50ms.
	DripInterval time.Duration
	// ErrorBodySize is HugeErrorBody's body size; zero: 4 MiB.
	ErrorBodySize int
}

// Server is a running hostile registry.
type Server struct {
	// Host is "127.0.0.1:PORT".
	Host string
	// URL is "http://" + Host.
	URL string
	// Username and Password are the credentials AuthBasic, AuthBearer and
	// AuthCrossHostRealm want.
	Username, Password string
	// Token is the bearer token the realm issues.
	Token string
	// Realm is the token realm's URL, with AuthBearer and
	// AuthCrossHostRealm.
	Realm string

	opts Options
	quit chan struct{}

	mu        sync.Mutex
	requests  map[Mode]int
	pages     map[string]int // tag list requests by repository path
	realmReqs []string       // Authorization headers the cross-host realm got
	paths     []string       // every request path, in order
}

// Start starts a server for the test; it stops when the test ends.
func Start(t testing.TB, opts Options) *Server {
	t.Helper()
	if opts.Tags == nil {
		opts.Tags = ValidTags()
	}
	if opts.DripInterval == 0 {
		opts.DripInterval = 50 * time.Millisecond
	}
	if opts.ErrorBodySize == 0 {
		opts.ErrorBodySize = 4 << 20
	}
	s := &Server{
		Username: "hostile-user",
		Password: "pw-" + randomHex(12),
		Token:    "tok-" + randomHex(16),
		opts:     opts,
		quit:     make(chan struct{}),
		requests: map[Mode]int{},
		pages:    map[string]int{},
	}
	srv := httptest.NewServer(http.HandlerFunc(s.serve))
	s.Host = strings.TrimPrefix(srv.URL, "http://")
	s.URL = srv.URL
	switch opts.Auth {
	case AuthBearer:
		s.Realm = s.URL + "/token"
	case AuthCrossHostRealm:
		realm := httptest.NewServer(http.HandlerFunc(s.serveRealm))
		port := realm.Listener.Addr().(*net.TCPAddr).Port
		s.Realm = fmt.Sprintf("http://localhost:%d/token", port)
		t.Cleanup(realm.Close)
	}
	t.Cleanup(func() {
		close(s.quit) // release hanging handlers first: Close waits for them
		srv.CloseClientConnections()
		srv.Close()
	})
	return s
}

// Repo returns the reference of a repository of mode m: HOST/MODE/NAME.
func (s *Server) Repo(m Mode, name string) string {
	return s.Host + "/" + string(m) + "/" + name
}

// Requests returns how many requests the repositories of mode m got.
func (s *Server) Requests(m Mode) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.requests[m]
}

// TagPages returns how many tag list requests repository repo (as Repo
// returns it) got.
func (s *Server) TagPages(repo string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.pages[strings.TrimPrefix(repo, s.Host+"/")]
}

// Paths returns the path of every request the server got, in order.
func (s *Server) Paths() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.paths...)
}

// RealmRequests returns the Authorization header (possibly empty) of each
// request the cross-host realm got.
func (s *Server) RealmRequests() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.realmReqs...)
}

// Secrets returns every credential a client of s holds or is given: the
// password, its basic-auth encoding and the bearer token. A test searches
// captured output for each.
func (s *Server) Secrets() []string {
	basic := base64.StdEncoding.EncodeToString([]byte(s.Username + ":" + s.Password))
	return []string{s.Password, basic, s.Token}
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.paths = append(s.paths, r.URL.Path)
	s.mu.Unlock()
	if r.URL.Path == "/token" && s.opts.Auth == AuthBearer {
		s.serveToken(w, r)
		return
	}
	if !s.authorized(w, r) {
		return
	}
	if r.URL.Path == "/v2/" || r.URL.Path == "/v2" {
		w.Header().Set("Docker-Distribution-API-Version", "registry/2.0")
		fmt.Fprint(w, "{}")
		return
	}
	rest, ok := strings.CutPrefix(r.URL.Path, "/v2/")
	if !ok {
		http.NotFound(w, r)
		return
	}
	mode, _, _ := strings.Cut(rest, "/")
	s.mu.Lock()
	s.requests[Mode(mode)]++
	s.mu.Unlock()
	switch {
	case strings.HasSuffix(rest, "/tags/list"):
		repo := strings.TrimSuffix(rest, "/tags/list")
		s.mu.Lock()
		s.pages[repo]++
		s.mu.Unlock()
		s.tags(w, r, Mode(mode), repo)
	case strings.Contains(rest, "/manifests/"):
		_, tag, _ := strings.Cut(rest, "/manifests/")
		s.manifest(w, r, Mode(mode), tag)
	case strings.Contains(rest, "/blobs/"):
		_, digest, _ := strings.Cut(rest, "/blobs/")
		s.blob(w, r, digest)
	default:
		http.NotFound(w, r)
	}
}

// authorized checks the request's credentials, answering 401 with a
// challenge when they are missing or wrong.
func (s *Server) authorized(w http.ResponseWriter, r *http.Request) bool {
	got := r.Header.Get("Authorization")
	switch s.opts.Auth {
	case AuthNone:
		return true
	case AuthBasic:
		if u, p, ok := r.BasicAuth(); ok && u == s.Username && p == s.Password {
			return true
		}
		w.Header().Set("WWW-Authenticate", `Basic realm="hostile"`)
	default:
		if got == "Bearer "+s.Token {
			return true
		}
		w.Header().Set("WWW-Authenticate", fmt.Sprintf(`Bearer realm=%q,service="hostile"`, s.Realm))
	}
	if s.isHugeError(r) && got != "" {
		// Echo even refused credentials.
		s.hugeError(w, r)
		return false
	}
	w.WriteHeader(http.StatusUnauthorized)
	fmt.Fprint(w, `{"errors":[{"code":"UNAUTHORIZED","message":"authentication required"}]}`)
	return false
}

func (s *Server) isHugeError(r *http.Request) bool {
	return strings.HasPrefix(r.URL.Path, "/v2/"+string(HugeErrorBody)+"/")
}

func (s *Server) serveToken(w http.ResponseWriter, r *http.Request) {
	if u, p, ok := r.BasicAuth(); !ok || u != s.Username || p != s.Password {
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprint(w, `{"errors":[{"code":"UNAUTHORIZED","message":"bad credentials"}]}`)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"token":%q,"expires_in":300}`, s.Token)
}

// serveRealm is the cross-host realm: it records the request, then issues
// the token as a realm would, so that only the client can stop the leak.
func (s *Server) serveRealm(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.realmReqs = append(s.realmReqs, r.Header.Get("Authorization"))
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"token":%q,"expires_in":300}`, s.Token)
}

// pageSize is the n the client asked for, bounded to [1, 1000].
func pageSize(r *http.Request) int {
	n, err := strconv.Atoi(r.URL.Query().Get("n"))
	if err != nil || n < 1 {
		return 100
	}
	return min(n, 1000)
}

func (s *Server) tags(w http.ResponseWriter, r *http.Request, mode Mode, repo string) {
	w.Header().Set("Content-Type", "application/json")
	switch mode {
	case Healthy:
		writeTags(w, repo, s.opts.Tags)
	case InvalidTags:
		writeTags(w, repo, append(ValidTags(), BadTags()...))
	case EndlessLink:
		page, _ := strconv.Atoi(r.URL.Query().Get("page"))
		w.Header().Set("Link", fmt.Sprintf(`</v2/%s/tags/list?n=%d&page=%d>; rel="next"`, repo, pageSize(r), page+1))
		writeTags(w, repo, pageTags("e", page, 10))
	case NoLink:
		// The page after "last": ignoring nothing, never ending.
		page := 0
		if last := r.URL.Query().Get("last"); last != "" {
			if _, rest, ok := strings.Cut(last, "-"); ok {
				p, _, _ := strings.Cut(rest, "-")
				page, _ = strconv.Atoi(p)
				page++
			}
		}
		writeTags(w, repo, pageTags("n", page, pageSize(r)))
	case HangAfterHeaders:
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		s.wait(r)
	case SlowDrip:
		body, _ := json.Marshal(map[string]any{"name": repo, "tags": s.opts.Tags})
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		w.WriteHeader(http.StatusOK)
		for _, b := range body {
			if _, err := w.Write([]byte{b}); err != nil {
				return
			}
			w.(http.Flusher).Flush()
			select {
			case <-time.After(s.opts.DripInterval):
			case <-r.Context().Done():
				return
			case <-s.quit:
				return
			}
		}
	case EchoLink:
		if r.URL.Query().Get("page") != "" {
			w.WriteHeader(http.StatusNotFound)
			fmt.Fprint(w, `{"errors":[{"code":"NAME_UNKNOWN","message":"no such page"}]}`)
			return
		}
		echo := r.Header.Get("Authorization")
		if _, pass, ok := r.BasicAuth(); ok {
			echo += " " + pass
		}
		w.Header().Set("Link", fmt.Sprintf(`</v2/%s/tags/%s/list?page=2>; rel="next"`, repo, url.PathEscape(echo)))
		writeTags(w, repo, s.opts.Tags)
	case HugeErrorBody:
		s.hugeError(w, r)
	default:
		w.WriteHeader(http.StatusNotFound)
		fmt.Fprint(w, `{"errors":[{"code":"NAME_UNKNOWN","message":"repository name not known to registry"}]}`)
	}
}

// wait blocks until the client leaves or the server stops.
func (s *Server) wait(r *http.Request) {
	select {
	case <-r.Context().Done():
	case <-s.quit:
	}
}

// pageTags returns page number page of n made-up tags, such as
// "e-000003-17": valid, unique across pages, in increasing order.
func pageTags(prefix string, page, n int) []string {
	tags := make([]string, n)
	for i := range tags {
		tags[i] = fmt.Sprintf("%s-%06d-%04d", prefix, page, i)
	}
	return tags
}

func writeTags(w http.ResponseWriter, repo string, tags []string) {
	_ = json.NewEncoder(w).Encode(map[string]any{"name": repo, "tags": tags})
}

// hugeError answers 403 with a body that echoes the credentials the
// request carried, as a badly written proxy or registry might.
func (s *Server) hugeError(w http.ResponseWriter, r *http.Request) {
	auth := r.Header.Get("Authorization")
	user, pass, ok := r.BasicAuth()
	if !ok {
		// A bearer token carries no password: echo the one the realm
		// knows, as a server that logs its own config might.
		user, pass = s.Username, s.Password
	}
	line := fmt.Sprintf("denied: you sent Authorization: %s (user %s, password %s)\n", auth, user, pass)
	w.Header().Set("Content-Type", "text/plain")
	w.WriteHeader(http.StatusForbidden)
	for written := 0; written < s.opts.ErrorBodySize; written += len(line) {
		if _, err := fmt.Fprint(w, line); err != nil {
			return
		}
	}
}

// The manifests Healthy and BadDigest serve.
var (
	configBlob   = []byte(`{"architecture":"amd64","os":"linux","rootfs":{"type":"layers","diff_ids":[]}}`)
	configDigest = digestOf(configBlob)
)

const (
	ociManifest = "application/vnd.oci.image.manifest.v1+json"
	ociIndex    = "application/vnd.oci.image.index.v1+json"
)

func imageManifest(config string) []byte {
	return fmt.Appendf(nil, `{"schemaVersion":2,"mediaType":%q,"config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":%q,"size":%d},"layers":[]}`,
		ociManifest, config, len(configBlob))
}

func indexManifest(amd64Digest string) []byte {
	return fmt.Appendf(nil, `{"schemaVersion":2,"mediaType":%q,"manifests":[{"mediaType":%q,"digest":%q,"size":10,"platform":{"architecture":"amd64","os":"linux"}}]}`,
		ociIndex, ociManifest, amd64Digest)
}

func (s *Server) manifest(w http.ResponseWriter, r *http.Request, mode Mode, tag string) {
	var body []byte
	mediaType := ociManifest
	header := ""
	switch {
	case mode == Healthy || mode == InvalidTags:
		body = imageManifest(configDigest)
	case mode == BadDigest && tag == DigestTagHeader:
		body = imageManifest(configDigest)
		header = "sha256:../../../../etc/passwd"
	case mode == BadDigest && tag == DigestTagIndexHex:
		body, mediaType = indexManifest("sha256:"+strings.Repeat("zz", 32)), ociIndex
	case mode == BadDigest && tag == DigestTagIndexLength:
		body, mediaType = indexManifest("sha256:"+strings.Repeat("ab", 100)), ociIndex
	case mode == BadDigest && tag == DigestTagIndexAlgorithm:
		body, mediaType = indexManifest("md5:d41d8cd98f00b204e9800998ecf8427e"), ociIndex
	case mode == BadDigest && tag == DigestTagConfig:
		body = imageManifest("sha256:../../../../../v2/healthy/app/tags/list")
	default:
		w.WriteHeader(http.StatusNotFound)
		fmt.Fprint(w, `{"errors":[{"code":"MANIFEST_UNKNOWN","message":"manifest unknown"}]}`)
		return
	}
	if header == "" {
		header = digestOf(body)
	}
	w.Header().Set("Content-Type", mediaType)
	w.Header().Set("Docker-Content-Digest", header)
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	if r.Method == http.MethodHead {
		return
	}
	_, _ = w.Write(body)
}

func (s *Server) blob(w http.ResponseWriter, _ *http.Request, digest string) {
	if digest != configDigest {
		w.WriteHeader(http.StatusNotFound)
		fmt.Fprint(w, `{"errors":[{"code":"BLOB_UNKNOWN","message":"blob unknown"}]}`)
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	_, _ = w.Write(configBlob)
}

// Digest returns the digest Healthy repositories' tags resolve to, without
// a platform.
func Digest() string { return digestOf(imageManifest(configDigest)) }

func digestOf(b []byte) string {
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// Refused returns "127.0.0.1:PORT" where nothing listens: connections are
// refused at once. Where it can (refusedPort), the port stays bound, not
// listening, until the test ends, so that no other server of a test run
// can take it in the meantime (a closed listener's port was taken once,
// and the "refused" server answered 401).
func Refused(t testing.TB) string {
	t.Helper()
	if addr, ok := refusedPort(t); ok {
		return addr
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("hostile: %v", err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// Blackhole returns "127.0.0.1:PORT" where a listener accepts every
// connection and never reads or writes a byte, like a host behind a
// firewall that drops packets after the handshake, or a hung server. It
// closes when the test ends.
func Blackhole(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("hostile: %v", err)
	}
	var (
		mu    sync.Mutex
		conns []net.Conn
	)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		l.Close()
		<-done
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	return l.Addr().String()
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
