package testregistry

import (
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
)

var versions = []Version{V2, V3}

// get sends GET url with the server's transport and an optional
// Authorization header and returns the response with its body read.
func get(t *testing.T, s *Server, rawURL, authorization string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, rawURL, nil)
	if err != nil {
		t.Fatal(err)
	}
	if authorization != "" {
		req.Header.Set("Authorization", authorization)
	}
	resp, err := (&http.Client{Transport: s.Transport}).Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", rawURL, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: reading body: %v", rawURL, err)
	}
	return resp, body
}

func basic(user, pass string) string {
	req, _ := http.NewRequest(http.MethodGet, "http://x/", nil)
	req.SetBasicAuth(user, pass)
	return req.Header.Get("Authorization")
}

// bearer fetches a token for scope from s's realm with its credentials.
func bearer(t *testing.T, s *Server, scope string) string {
	t.Helper()
	q := url.Values{"service": {tokenService}}
	if scope != "" {
		q.Set("scope", scope)
	}
	resp, body := get(t, s, s.Realm+"?"+q.Encode(), basic(s.Username, s.Password))
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("token server answered %s: %s", resp.Status, body)
	}
	var tok struct {
		Token string `json:"token"`
	}
	if err := json.Unmarshal(body, &tok); err != nil || tok.Token == "" {
		t.Fatalf("token server answered %q (%v)", body, err)
	}
	return "Bearer " + tok.Token
}

// authorization returns an Authorization header value that s accepts for
// scope ("" with no auth).
func authorization(t *testing.T, s *Server, scope string) string {
	t.Helper()
	switch {
	case s.Realm != "":
		return bearer(t, s, scope)
	case s.Username != "":
		return basic(s.Username, s.Password)
	}
	return ""
}

// listTags GETs a tag list page of repo on s, following nothing.
func listTags(t *testing.T, s *Server, path, auth string) (tags []string, link string) {
	t.Helper()
	resp, body := get(t, s, s.URL+path, auth)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s: %s", path, resp.Status, body)
	}
	var list struct {
		Tags []string `json:"tags"`
	}
	if err := json.Unmarshal(body, &list); err != nil {
		t.Fatalf("GET %s: decoding %q: %v", path, body, err)
	}
	return list.Tags, resp.Header.Get("Link")
}

func TestStartAnswersV2(t *testing.T) {
	type auth int
	const (
		none auth = iota
		htpasswd
		token
	)
	authNames := map[auth]string{none: "none", htpasswd: "htpasswd", token: "token"}
	for _, v := range versions {
		for _, a := range []auth{none, htpasswd, token} {
			for _, useTLS := range []bool{false, true} {
				opts := Options{Version: v, Htpasswd: a == htpasswd, Token: a == token, TLS: useTLS}
				t.Run(fmt.Sprintf("%s/auth=%s/tls=%t", v, authNames[a], useTLS), func(t *testing.T) {
					t.Parallel()
					s := Start(t, opts)

					wantScheme := "http://"
					if useTLS {
						wantScheme = "https://"
					}
					if !strings.HasPrefix(s.URL, wantScheme) {
						t.Errorf("URL = %q, want prefix %q", s.URL, wantScheme)
					}
					wantHost := `^127\.0\.0\.1:\d+$`
					if a == token {
						wantHost = `^localhost:\d+$`
					}
					if !regexp.MustCompile(wantHost).MatchString(s.Host) {
						t.Errorf("Host = %q, want match %s", s.Host, wantHost)
					}

					resp, _ := get(t, s, s.URL+"/v2/", "")
					wantStatus := http.StatusOK
					if a != none {
						wantStatus = http.StatusUnauthorized
					}
					if got := resp.StatusCode; got != wantStatus {
						t.Fatalf("GET /v2/ without credentials: status %d, want %d", got, wantStatus)
					}
					if a == none {
						return
					}
					challenge := resp.Header.Get("WWW-Authenticate")
					wantChallenge := `Basic realm=`
					if a == token {
						wantChallenge = fmt.Sprintf(`Bearer realm=%q,service=%q`, s.Realm, tokenService)
					}
					if !strings.HasPrefix(challenge, wantChallenge) {
						t.Errorf("WWW-Authenticate = %q, want prefix %q", challenge, wantChallenge)
					}
					resp, body := get(t, s, s.URL+"/v2/", authorization(t, s, ""))
					if got := resp.StatusCode; got != http.StatusOK {
						t.Errorf("GET /v2/ with credentials: status %d, want 200: %s", got, body)
					}
				})
			}
		}
	}
}

func TestPushAndList(t *testing.T) {
	for _, opts := range []Options{
		{Version: V2, Htpasswd: true},
		{Version: V3, Htpasswd: true},
		{Version: V2, InMemory: true},
		{Version: V3, InMemory: true},
	} {
		t.Run(fmt.Sprintf("%s/htpasswd=%t/inmemory=%t", opts.Version, opts.Htpasswd, opts.InMemory), func(t *testing.T) {
			t.Parallel()
			s := Start(t, opts)
			s.Push(t, "team/app", "1.0.0", "1.1.0", "latest")
			s.Push(t, "team/other", "v2")

			got, link := listTags(t, s, "/v2/team/app/tags/list", authorization(t, s, ""))
			slices.Sort(got)
			if diff := cmp.Diff(got, []string{"1.0.0", "1.1.0", "latest"}); diff != "" {
				t.Errorf("tags of team/app (-got +want):\n%s", diff)
			}
			if link != "" {
				t.Errorf("Link = %q on an unpaginated list, want none", link)
			}

			first := s.Digest(t, "team/app", "1.0.0")
			for _, tag := range []string{"1.1.0", "latest"} {
				if got := s.Digest(t, "team/app", tag); got != first {
					t.Errorf("digest of %s = %s, want %s (one image, many tags)", tag, got, first)
				}
			}
			if other := s.Digest(t, "team/other", "v2"); other == first {
				t.Errorf("second Push reused digest %s, want a new image", other)
			}
		})
	}
}

func TestTagPagination(t *testing.T) {
	tags := make([]string, 250)
	for i := range tags {
		tags[i] = fmt.Sprintf("1.0.%03d", i)
	}
	tests := []struct {
		version   Version
		wantPages []int
	}{
		{version: V2, wantPages: []int{250}},          // 2.8.2 ignores ?n=
		{version: V3, wantPages: []int{100, 100, 50}}, // v3 pages and links
	}
	for _, tt := range tests {
		t.Run(tt.version.String(), func(t *testing.T) {
			t.Parallel()
			s := Start(t, Options{Version: tt.version})
			s.Push(t, "paged", tags...)

			var got []string
			var pages []int
			next := "/v2/paged/tags/list?n=100"
			for next != "" {
				if len(pages) > 10 {
					t.Fatalf("more than 10 pages; stopped at %s", next)
				}
				page, link := listTags(t, s, next, "")
				got = append(got, page...)
				pages = append(pages, len(page))
				next = ""
				if link != "" {
					m := regexp.MustCompile(`^<([^>]+)>;\s*rel="next"$`).FindStringSubmatch(link)
					if m == nil {
						t.Fatalf("Link header %q is not <URL>; rel=\"next\"", link)
					}
					next = m[1]
				}
			}
			if diff := cmp.Diff(pages, tt.wantPages); diff != "" {
				t.Errorf("page sizes (-got +want):\n%s", diff)
			}
			slices.Sort(got)
			if diff := cmp.Diff(got, tags); diff != "" {
				t.Errorf("tags across pages (-got +want):\n%s", diff)
			}
		})
	}
}

func TestV3CapsPages(t *testing.T) {
	s := Start(t, Options{Version: V3, InMemory: true})
	tags := make([]string, v3MaxTags+1)
	for i := range tags {
		tags[i] = fmt.Sprintf("t%04d", i)
	}
	s.Push(t, "big", tags...)

	page, link := listTags(t, s, "/v2/big/tags/list?n=5000", "")
	if got, want := len(page), v3MaxTags; got != want {
		t.Errorf("?n=5000 on %d tags returned %d, want the cap %d", len(tags), got, want)
	}
	if link == "" {
		t.Errorf("?n=5000 on %d tags: no Link header", len(tags))
	}
}

func TestHtpasswd(t *testing.T) {
	for _, v := range versions {
		t.Run(v.String(), func(t *testing.T) {
			t.Parallel()
			s := Start(t, Options{Version: v, Htpasswd: true})
			if s.Username == "" || s.Password == "" {
				t.Fatalf("Username %q, Password empty=%t: want both set", s.Username, s.Password == "")
			}
			tests := []struct {
				name string
				auth string
				want int
			}{
				{name: "no credentials", auth: "", want: http.StatusUnauthorized},
				{name: "wrong password", auth: basic(s.Username, s.Password+"x"), want: http.StatusUnauthorized},
				{name: "wrong user", auth: basic("x"+s.Username, s.Password), want: http.StatusUnauthorized},
				{name: "right credentials", auth: basic(s.Username, s.Password), want: http.StatusOK},
			}
			for _, tt := range tests {
				t.Run(tt.name, func(t *testing.T) {
					resp, _ := get(t, s, s.URL+"/v2/", tt.auth)
					if got := resp.StatusCode; got != tt.want {
						t.Errorf("GET /v2/: status %d, want %d", got, tt.want)
					}
				})
			}
		})
	}
}

func TestTLS(t *testing.T) {
	for _, v := range versions {
		t.Run(v.String(), func(t *testing.T) {
			t.Parallel()
			s := Start(t, Options{Version: v, TLS: true})
			if s.CAFile == "" || s.CertPool == nil {
				t.Fatalf("CAFile %q, CertPool %v: want both set with TLS", s.CAFile, s.CertPool)
			}

			_, err := (&http.Client{}).Get(s.URL + "/v2/")
			var unknownCA x509.UnknownAuthorityError
			if !errors.As(err, &unknownCA) {
				t.Errorf("GET /v2/ without the CA: error %v, want an unknown authority error", err)
			}

			resp, _ := get(t, s, s.URL+"/v2/", "")
			if resp.StatusCode != http.StatusOK {
				t.Errorf("GET /v2/ with the CA: status %d, want 200", resp.StatusCode)
			}
			if resp.TLS == nil {
				t.Errorf("GET /v2/ with the CA: no TLS connection state")
			}
		})
	}
}

func TestToken(t *testing.T) {
	for _, v := range versions {
		for _, useTLS := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/tls=%t", v, useTLS), func(t *testing.T) {
				t.Parallel()
				s := Start(t, Options{Version: v, Token: true, TLS: useTLS})
				s.Push(t, "team/app", "1.0.0", "2.0.0")

				repo, err := name.NewRepository(s.Repo("team/app"))
				if err != nil {
					t.Fatal(err)
				}
				got, err := remote.List(repo, s.RemoteOptions(t.Context())...)
				if err != nil {
					t.Fatalf("remote.List with the right password: %v", err)
				}
				slices.Sort(got)
				if diff := cmp.Diff(got, []string{"1.0.0", "2.0.0"}); diff != "" {
					t.Errorf("remote.List (-got +want):\n%s", diff)
				}

				_, err = remote.List(repo,
					remote.WithContext(t.Context()),
					remote.WithTransport(s.Transport),
					remote.WithAuth(&authn.Basic{Username: s.Username, Password: "wrong"}))
				var terr *transport.Error
				if !errors.As(err, &terr) || terr.StatusCode != http.StatusUnauthorized {
					t.Errorf("remote.List with a wrong password: error %v, want a 401 transport error", err)
				}

				// A token signed by a key the registry does not trust is refused.
				otherCA, err := newCA()
				if err != nil {
					t.Fatal(err)
				}
				forger, err := otherCA.issueSigner()
				if err != nil {
					t.Fatal(err)
				}
				forged := &tokenServer{
					username: s.Username,
					password: s.Password,
					signer:   forger,
					chain:    []string{base64.StdEncoding.EncodeToString(forger.cert.Raw)},
				}
				now := time.Now()
				jwt, err := forged.sign(claims{
					Issuer:     tokenIssuer,
					Subject:    s.Username,
					Audience:   tokenService,
					Expiration: now.Add(time.Minute).Unix(),
					NotBefore:  now.Add(-time.Minute).Unix(),
					IssuedAt:   now.Unix(),
					Access:     parseScopes([]string{"repository:team/app:pull"}),
				})
				if err != nil {
					t.Fatal(err)
				}
				resp, _ := get(t, s, s.URL+"/v2/team/app/tags/list", "Bearer "+jwt)
				if resp.StatusCode != http.StatusUnauthorized {
					t.Errorf("GET tags with a token from an untrusted signer: status %d, want 401", resp.StatusCode)
				}

				// A token for one repository does not open another.
				resp, _ = get(t, s, s.URL+"/v2/team/app/tags/list", bearer(t, s, "repository:team/other:pull"))
				if resp.StatusCode != http.StatusUnauthorized {
					t.Errorf("GET tags of team/app with a token for team/other: status %d, want 401", resp.StatusCode)
				}
			})
		}
	}
}

func TestPushIndex(t *testing.T) {
	for _, v := range versions {
		t.Run(v.String(), func(t *testing.T) {
			t.Parallel()
			s := Start(t, Options{Version: v})
			platforms := []string{"linux/amd64", "linux/arm64/v8"}
			indexDigest, platformDigests := s.PushIndex(t, "multi", "1.0.0", platforms...)

			if got := s.Digest(t, "multi", "1.0.0"); got != indexDigest {
				t.Errorf("digest of multi:1.0.0 = %s, want the index digest %s", got, indexDigest)
			}
			ref, err := name.NewTag(s.Repo("multi:1.0.0"))
			if err != nil {
				t.Fatal(err)
			}
			idx, err := remote.Index(ref, s.RemoteOptions(t.Context())...)
			if err != nil {
				t.Fatalf("remote.Index: %v", err)
			}
			im, err := idx.IndexManifest()
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]string{}
			for _, m := range im.Manifests {
				if m.Platform == nil {
					t.Fatalf("manifest %s has no platform", m.Digest)
				}
				got[m.Platform.String()] = m.Digest.String()
				img, err := idx.Image(m.Digest)
				if err != nil {
					t.Fatalf("reading image %s: %v", m.Digest, err)
				}
				cf, err := img.ConfigFile()
				if err != nil {
					t.Fatalf("reading config of %s: %v", m.Digest, err)
				}
				if cf.Platform().String() != m.Platform.String() {
					t.Errorf("config of %s names platform %s, want %s", m.Digest, cf.Platform(), m.Platform)
				}
			}
			if diff := cmp.Diff(got, platformDigests); diff != "" {
				t.Errorf("platform digests in the pushed index (-got +want):\n%s", diff)
			}
		})
	}
}

func TestBinaryMissing(t *testing.T) {
	tests := []struct {
		version  Version
		env      string
		wantHint string
	}{
		{version: V2, env: envV2, wantHint: "apt-get install docker-registry"},
		{version: V3, env: envV3, wantHint: "go install github.com/distribution/distribution/v3/cmd/registry@v3.1.2"},
	}
	for _, tt := range tests {
		t.Run(tt.version.String(), func(t *testing.T) {
			t.Setenv(tt.env, "/nonexistent/registry")
			_, err := binary(tt.version)
			var missing *missingError
			if !errors.As(err, &missing) {
				t.Fatalf("binary(%s) with %s pointing nowhere: error %v, want a missingError", tt.version, tt.env, err)
			}
			if !strings.Contains(err.Error(), tt.wantHint) {
				t.Errorf("error %q does not say %q", err, tt.wantHint)
			}
		})
	}
}

func TestParseScopes(t *testing.T) {
	tests := []struct {
		name   string
		params []string
		want   []access
	}{
		{name: "none", params: nil, want: []access{}},
		{
			name:   "repository push and pull",
			params: []string{"repository:team/app:push,pull"},
			want:   []access{{Type: "repository", Name: "team/app", Actions: []string{"push", "pull"}}},
		},
		{
			name:   "two scopes in one parameter",
			params: []string{"repository:a:pull registry:catalog:*"},
			want: []access{
				{Type: "repository", Name: "a", Actions: []string{"pull"}},
				{Type: "registry", Name: "catalog", Actions: []string{"*"}},
			},
		},
		{name: "malformed", params: []string{"repository", "repository:a"}, want: []access{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := parseScopes(tt.params)
			if diff := cmp.Diff(got, tt.want); diff != "" {
				t.Errorf("parseScopes(%q) (-got +want):\n%s", tt.params, diff)
			}
		})
	}
}

// BenchmarkPush10000Tags measures Push with 10,000 tags, the size the
// registry client's pagination tests need. Run it with -benchtime=1x.
func BenchmarkPush10000Tags(b *testing.B) {
	tags := make([]string, 10000)
	for i := range tags {
		tags[i] = fmt.Sprintf("1.%d.%d", i/100, i%100)
	}
	for _, opts := range []Options{{Version: V2}, {Version: V3}, {Version: V2, InMemory: true}, {Version: V3, InMemory: true}} {
		b.Run(fmt.Sprintf("%s/inmemory=%t", opts.Version, opts.InMemory), func(b *testing.B) {
			s := Start(b, opts)
			for i := 0; b.Loop(); i++ {
				s.Push(b, fmt.Sprintf("bench%d", i), tags...)
			}
			b.StopTimer()
			repo, err := name.NewRepository(s.Repo("bench0"))
			if err != nil {
				b.Fatal(err)
			}
			got, err := remote.List(repo, s.RemoteOptions(b.Context())...)
			if err != nil {
				b.Fatal(err)
			}
			if len(got) != len(tags) {
				b.Errorf("bench0 has %d tags, want %d", len(got), len(tags))
			}
		})
	}
}

// stopTB is a testing.TB whose Fatal, Fatalf, Skip and Skipf record the call and end the
// goroutine, as the real ones do, without failing or skipping the test.
type stopTB struct {
	testing.TB
	fatal, skip string
}

func (s *stopTB) Helper() {}

func (s *stopTB) Fatalf(format string, args ...any) {
	s.fatal = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

func (s *stopTB) Skipf(format string, args ...any) {
	s.skip = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

func (s *stopTB) Fatal(args ...any) {
	s.fatal = fmt.Sprint(args...)
	runtime.Goexit()
}

func (s *stopTB) Skip(args ...any) {
	s.skip = fmt.Sprint(args...)
	runtime.Goexit()
}

// runStopTB runs f with a stopTB wrapping t in its own goroutine, as the
// testing package runs a test, and returns what f reported.
func runStopTB(t *testing.T, f func(testing.TB)) *stopTB {
	tb := &stopTB{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		f(tb)
	}()
	<-done
	return tb
}

func TestStartMissingBinary(t *testing.T) {
	tests := []struct {
		ci        string
		wantFatal bool
	}{
		{ci: "true", wantFatal: true},
		{ci: "", wantFatal: false},
		{ci: "false", wantFatal: false},
	}
	for _, tt := range tests {
		t.Run("CI="+tt.ci, func(t *testing.T) {
			t.Setenv("CI", tt.ci)
			t.Setenv(envV3, "/nonexistent/registry")
			got := runStopTB(t, func(tb testing.TB) { Start(tb, Options{Version: V3}) })
			msg := got.skip
			if tt.wantFatal {
				msg = got.fatal
			}
			if (got.fatal != "") != tt.wantFatal || (got.skip != "") == tt.wantFatal {
				t.Fatalf("fatal %q, skip %q; want fatal=%t", got.fatal, got.skip, tt.wantFatal)
			}
			if !strings.Contains(msg, "go install github.com/distribution/distribution/v3/cmd/registry@v3.1.2") {
				t.Errorf("message %q does not say how to install the registry", msg)
			}
		})
	}
}

func TestRunReportsFailures(t *testing.T) {
	bin, err := binary(V2)
	if err != nil {
		requireTool(t, err)
	}

	t.Run("port taken", func(t *testing.T) {
		// Hold the port with a server that never says the registry is up.
		taken := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusServiceUnavailable)
		}))
		defer taken.Close()
		dir := t.TempDir()
		s := &Server{Version: V2, URL: taken.URL, Transport: http.DefaultTransport, LogFile: filepath.Join(dir, "registry.log")}
		cfg := config{version: V2, addr: taken.Listener.Addr().String(), root: filepath.Join(dir, "storage")}
		err := s.run(t, bin, dir, cfg)
		var bind *bindError
		if !errors.As(err, &bind) {
			t.Fatalf("run on a taken port: error %v, want a bindError", err)
		}
	})

	t.Run("bad TLS key", func(t *testing.T) {
		dir := t.TempDir()
		port, err := freePort()
		if err != nil {
			t.Fatal(err)
		}
		addr := "127.0.0.1:" + strconv.Itoa(port)
		s := &Server{Version: V2, URL: "https://" + addr, Transport: http.DefaultTransport, LogFile: filepath.Join(dir, "registry.log")}
		missing := filepath.Join(dir, "missing.crt")
		cfg := config{version: V2, addr: addr, root: filepath.Join(dir, "storage"), certFile: missing, keyFile: missing}
		err = s.run(t, bin, dir, cfg)
		if err == nil {
			t.Fatal("run with a missing certificate: no error")
		}
		for _, want := range []string{"exited before answering GET /v2/", "log tail:", "missing.crt"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error %q does not contain %q", err, want)
			}
		}
	})
}
