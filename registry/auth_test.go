package registry

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-containerregistry/pkg/authn"

	"github.com/imagebump/imagebump/internal/secretfile"
)

// basicAuthServer requires basic credentials on every /v2/ request, as a
// distribution registry with htpasswd does, or a fixed bearer token.
type basicAuthServer struct {
	mu         sync.Mutex
	user, pass string
	token      string
}

func (s *basicAuthServer) set(user, pass string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.user, s.pass = user, pass
}

func (s *basicAuthServer) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		user, pass, token := s.user, s.pass, s.token
		s.mu.Unlock()
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			next.ServeHTTP(w, r) // pushes from the test itself
			return
		}
		u, p, ok := r.BasicAuth()
		okBasic := ok && user != "" && u == user && p == pass
		okToken := token != "" && r.Header.Get("Authorization") == "Bearer "+token
		if !okBasic && !okToken {
			w.Header().Set("WWW-Authenticate", `Basic realm="test"`)
			w.WriteHeader(http.StatusUnauthorized)
			fmt.Fprint(w, `{"errors":[{"code":"UNAUTHORIZED","message":"authentication required"}]}`)
			return
		}
		next.ServeHTTP(w, r)
	})
}

func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestSecretFiles(t *testing.T) {
	srv := &basicAuthServer{user: "alice", pass: "s3cret", token: "tok-123"}
	cnt := newCounter()
	host := newRegistry(t, chain(cnt.wrap, srv.wrap))
	push(t, host, "acme/app", "1.0")
	dir := t.TempDir()
	user := writeFile(t, dir, "user", "alice\n")
	pass := writeFile(t, dir, "pass", "s3cret\n")
	crlf := writeFile(t, dir, "pass-crlf", "s3cret\r\n")
	wrong := writeFile(t, dir, "wrong", "WRONG-PASSWORD")
	token := writeFile(t, dir, "token", "tok-123\n")
	empty := writeFile(t, dir, "empty", "\n")
	missing := filepath.Join(dir, "missing")

	tests := []struct {
		name       string
		hc         Host
		wantKind   Kind
		wantText   string // in the error
		wantSuffix string // what to do, at the end of the error
		forbidden  string // never in the error
		noTraffic  bool   // no request may reach the registry
	}{
		{name: "username and password", hc: Host{UsernameFile: user, PasswordFile: pass}},
		{name: "password with CRLF", hc: Host{UsernameFile: user, PasswordFile: crlf}},
		{name: "token", hc: Host{TokenFile: token}},
		{name: "wrong password", hc: Host{UsernameFile: user, PasswordFile: wrong}, wantKind: KindAuth,
			wantText: "authentication failed at " + host + " (HTTP 401)", wantSuffix: "; check registries[].auth for " + host, forbidden: "WRONG-PASSWORD"},
		{name: "missing password file", hc: Host{UsernameFile: user, PasswordFile: missing}, wantKind: KindAuth,
			wantText:   "list tags for " + host + "/acme/app: cannot read the secret file " + missing + ": no such file or directory",
			wantSuffix: "; check registries[].auth.passwordFile for " + host, forbidden: "alice", noTraffic: true},
		{name: "password pasted as its file", hc: Host{UsernameFile: user, PasswordFile: filepath.Join(dir, "Tr0ub4dor3xyzQ")}, wantKind: KindAuth,
			wantText:   "cannot read the secret file " + secretfile.Hidden + ": no such file or directory",
			wantSuffix: "; check registries[].auth.passwordFile for " + host, forbidden: "Tr0ub4dor", noTraffic: true},
		{name: "missing username file", hc: Host{UsernameFile: missing, PasswordFile: pass}, wantKind: KindAuth,
			wantText: "cannot read the secret file " + missing, wantSuffix: "; check registries[].auth.usernameFile for " + host, forbidden: "s3cret", noTraffic: true},
		{name: "missing token file", hc: Host{TokenFile: missing}, wantKind: KindAuth,
			wantText: "cannot read the secret file " + missing + ": no such file or directory", wantSuffix: "; check registries[].auth.tokenFile for " + host, noTraffic: true},
		{name: "unreadable password file", hc: Host{UsernameFile: user, PasswordFile: dir}, wantKind: KindAuth,
			wantText: "cannot read the secret file " + dir + ": not a regular file (a directory)", wantSuffix: "; check registries[].auth.passwordFile for " + host, noTraffic: true},
		{name: "empty password file", hc: Host{UsernameFile: user, PasswordFile: empty}, wantKind: KindAuth,
			wantText: "cannot read the secret file " + empty + ": file is empty", wantSuffix: "; check registries[].auth.passwordFile for " + host, noTraffic: true},
		{name: "missing docker config", hc: Host{DockerConfig: missing}, wantKind: KindAuth,
			wantText: "cannot read the docker config " + missing + ": no such file or directory", wantSuffix: "; check registries[].auth.dockerConfig for " + host, noTraffic: true},
		{name: "anonymous", hc: Host{}, wantKind: KindAuth, wantText: "(HTTP 401)", wantSuffix: "; check registries[].auth for " + host + " (or docker login " + host + ")"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cnt.reset()
			hc := tt.hc
			hc.Host, hc.Insecure = host, true
			c := newClient(t, Options{Hosts: []Host{hc}})
			tags, err := c.Tags(context.Background(), host+"/acme/app")
			if tt.wantKind == KindUnknown {
				if err != nil {
					t.Fatalf("Tags: %v", err)
				}
				if len(tags) != 1 || tags[0] != "1.0" {
					t.Errorf("Tags = %q, want [1.0]", tags)
				}
				return
			}
			if err == nil {
				t.Fatalf("Tags succeeded, want a %v error", tt.wantKind)
			}
			if e := asError(t, err); e.Kind != tt.wantKind {
				t.Errorf("kind %v, want %v: %v", e.Kind, tt.wantKind, err)
			}
			if !strings.Contains(err.Error(), tt.wantText) {
				t.Errorf("error %q does not contain %q", err, tt.wantText)
			}
			if !strings.HasSuffix(err.Error(), tt.wantSuffix) {
				t.Errorf("error %q does not end with %q", err, tt.wantSuffix)
			}
			if tt.forbidden != "" && strings.Contains(err.Error(), tt.forbidden) {
				t.Errorf("error %q reveals %q", err, tt.forbidden)
			}
			if n := cnt.total("/v2/"); tt.noTraffic && n != 0 {
				t.Errorf("%d requests reached the registry, want none", n)
			}
		})
	}
}

func TestSecretFileRotation(t *testing.T) {
	srv := &basicAuthServer{user: "alice", pass: "one"}
	host := newRegistry(t, srv.wrap)
	push(t, host, "acme/app", "1.0")
	dir := t.TempDir()
	user := writeFile(t, dir, "user", "alice")
	pass := writeFile(t, dir, "pass", "one")
	c := newClient(t, Options{Hosts: []Host{{Host: host, Insecure: true, UsernameFile: user, PasswordFile: pass}}})
	if _, err := c.Tags(context.Background(), host+"/acme/app"); err != nil {
		t.Fatalf("Tags before rotation: %v", err)
	}
	srv.set("alice", "two")
	writeFile(t, dir, "pass", "two\n")
	if _, err := c.Tags(context.Background(), host+"/acme/app"); err != nil {
		t.Fatalf("Tags after rotation: %v", err)
	}
}

func dockerConfigJSON(t *testing.T, auths map[string]string) string {
	t.Helper()
	cfg := map[string]any{"auths": map[string]any{}}
	for host, userpass := range auths {
		cfg["auths"].(map[string]any)[host] = map[string]string{"auth": base64.StdEncoding.EncodeToString([]byte(userpass))}
	}
	b, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestDockerConfig(t *testing.T) {
	srv := &basicAuthServer{user: "bob", pass: "hunter2"}
	host := newRegistry(t, srv.wrap)
	push(t, host, "acme/app", "1.0")
	dir := t.TempDir()
	good := writeFile(t, dir, "good.json", dockerConfigJSON(t, map[string]string{host: "bob:hunter2"}))
	repoKey := writeFile(t, dir, "repo.json", dockerConfigJSON(t, map[string]string{host + "/acme/app": "bob:hunter2", host: "bob:wrong"}))
	other := writeFile(t, dir, "other.json", dockerConfigJSON(t, map[string]string{"ghcr.io": "bob:hunter2"}))
	malformed := writeFile(t, dir, "malformed.json", `{"auths": {"SECRET-IN-FILE": `)
	missing := filepath.Join(dir, "missing.json")

	tests := []struct {
		name      string
		path      string
		wantKind  Kind
		wantText  string
		forbidden string
	}{
		{name: "auths for the host", path: good},
		{name: "repository key wins over host key", path: repoKey},
		{name: "no entry for the host is anonymous", path: other, wantKind: KindAuth, wantText: "(HTTP 401)"},
		{name: "malformed", path: malformed, wantKind: KindAuth, wantText: malformed, forbidden: "SECRET-IN-FILE"},
		{name: "missing", path: missing, wantKind: KindAuth, wantText: missing},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newClient(t, Options{Hosts: []Host{{Host: host, Insecure: true, DockerConfig: tt.path}}})
			_, err := c.Tags(context.Background(), host+"/acme/app")
			if tt.wantKind == KindUnknown {
				if err != nil {
					t.Fatalf("Tags: %v", err)
				}
				return
			}
			if KindOf(err) != tt.wantKind {
				t.Fatalf("Tags error %v, want kind %v", err, tt.wantKind)
			}
			if !strings.Contains(err.Error(), tt.wantText) {
				t.Errorf("error %q does not contain %q", err, tt.wantText)
			}
			if tt.forbidden != "" && strings.Contains(err.Error(), tt.forbidden) {
				t.Errorf("error %q reveals %q", err, tt.forbidden)
			}
		})
	}
}

// TestDockerConfigRotation checks that credentials the registry refuses are
// read again: the Docker config is read per session, and a 401 renews it.
func TestDockerConfigRotation(t *testing.T) {
	srv := &basicAuthServer{user: "bob", pass: "one"}
	host := newRegistry(t, srv.wrap)
	push(t, host, "acme/app", "1.0")
	dir := t.TempDir()
	cfg := writeFile(t, dir, "config.json", dockerConfigJSON(t, map[string]string{host: "bob:one"}))
	c := newClient(t, Options{Hosts: []Host{{Host: host, Insecure: true, DockerConfig: cfg}}})
	if _, err := c.Tags(context.Background(), host+"/acme/app"); err != nil {
		t.Fatalf("Tags before rotation: %v", err)
	}
	srv.set("bob", "two")
	writeFile(t, dir, "config.json", dockerConfigJSON(t, map[string]string{host: "bob:two"}))
	if _, err := c.Tags(context.Background(), host+"/acme/app"); err != nil {
		t.Fatalf("Tags after rotation: %v", err)
	}
}

func TestDockerConfigCredentialHelper(t *testing.T) {
	srv := &basicAuthServer{user: "carol", pass: "from-helper"}
	host := newRegistry(t, srv.wrap)
	push(t, host, "acme/app", "1.0")
	bin := t.TempDir()
	// A credential helper speaks JSON on stdout for "get", given the
	// server on stdin.
	script := "#!/bin/sh\nread server\necho '{\"ServerURL\":\"'$server'\",\"Username\":\"carol\",\"Secret\":\"from-helper\"}'\n"
	if err := os.WriteFile(filepath.Join(bin, "docker-credential-imagebumptest"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	cfg := writeFile(t, t.TempDir(), "config.json", fmt.Sprintf(`{"credHelpers": {%q: "imagebumptest"}}`, host))
	c := newClient(t, Options{Hosts: []Host{{Host: host, Insecure: true, DockerConfig: cfg}}})
	if _, err := c.Tags(context.Background(), host+"/acme/app"); err != nil {
		t.Fatalf("Tags with a credential helper: %v", err)
	}
}

// TestDockerConfigMissingHelper checks the error for a config.json copied
// from a workstation whose credsStore or credHelpers names a helper program
// this machine lacks (the image has none): it names the helper and says to
// write the credentials under "auths".
func TestDockerConfigMissingHelper(t *testing.T) {
	host := newRegistry(t, nil)
	push(t, host, "acme/app", "1.0")
	t.Setenv("PATH", t.TempDir())
	tests := []struct {
		name, config, helper string
		viaKeychain          bool
	}{
		{name: "credsStore in dockerConfig", config: `{"auths": {}, "credsStore": "desktop"}`, helper: "docker-credential-desktop"},
		{name: "credHelpers in dockerConfig", config: fmt.Sprintf(`{"credHelpers": {%q: "ecr-login"}}`, host), helper: "docker-credential-ecr-login"},
		{name: "credsStore in the keychain's config", config: `{"credsStore": "osxkeychain"}`, helper: "docker-credential-osxkeychain", viaKeychain: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			cfg := writeFile(t, dir, "config.json", tt.config)
			opts := Options{Hosts: []Host{{Host: host, Insecure: true, DockerConfig: cfg}}}
			if tt.viaKeychain {
				t.Setenv("HOME", t.TempDir())
				t.Setenv("DOCKER_CONFIG", dir)
				opts = Options{Keychain: authn.DefaultKeychain, Hosts: []Host{{Host: host, Insecure: true}}}
			}
			c := newClient(t, opts)
			_, err := c.Tags(context.Background(), host+"/acme/app")
			if KindOf(err) != KindAuth {
				t.Fatalf("Tags error %v, want kind %v", err, KindAuth)
			}
			for _, want := range []string{"names the credential helper " + tt.helper + ", which is not installed here", `under "auths"`, host} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not contain %q", err, want)
				}
			}
		})
	}
}

func TestKeychainForUnconfiguredHosts(t *testing.T) {
	srv := &basicAuthServer{user: "dave", pass: "kc"}
	host := newRegistry(t, srv.wrap)
	push(t, host, "acme/app", "1.0")
	kc := staticKeychain{host: host, cfg: authn.AuthConfig{Username: "dave", Password: "kc"}}
	c := newClient(t, Options{Keychain: kc}, host)
	if _, err := c.Tags(context.Background(), host+"/acme/app"); err != nil {
		t.Fatalf("Tags with credentials from Options.Keychain: %v", err)
	}
}

type staticKeychain struct {
	host string
	cfg  authn.AuthConfig
}

func (k staticKeychain) Resolve(r authn.Resource) (authn.Authenticator, error) {
	if r.RegistryStr() == k.host {
		return authn.FromConfig(k.cfg), nil
	}
	return authn.Anonymous, nil
}

// tokenServer is a registry with a bearer token service on the same host,
// which accepts only the tokens it issued and still considers valid.
type tokenServer struct {
	mu         sync.Mutex
	user, pass string // required at the token endpoint if set
	valid      map[string]bool
	issued     int
}

func (s *tokenServer) revokeAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.valid = map[string]bool{}
}

func (s *tokenServer) issuedCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.issued
}

func (s *tokenServer) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.valid == nil {
			s.valid = map[string]bool{}
		}
		if r.URL.Path == "/token" {
			if s.user != "" {
				if u, p, ok := r.BasicAuth(); !ok || u != s.user || p != s.pass {
					w.WriteHeader(http.StatusUnauthorized)
					return
				}
			}
			s.issued++
			tok := fmt.Sprintf("tok-%d", s.issued)
			s.valid[tok] = true
			fmt.Fprintf(w, `{"token": %q}`, tok)
			return
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			next.ServeHTTP(w, r)
			return
		}
		tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok || !s.valid[tok] {
			w.Header().Set("WWW-Authenticate", fmt.Sprintf(`Bearer realm="http://%s/token",service="test"`, r.Host))
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r)
	})
}

func TestBearerToken(t *testing.T) {
	srv := &tokenServer{user: "erin", pass: "pw"}
	host := newRegistry(t, srv.wrap)
	push(t, host, "acme/app", "1.0")
	dir := t.TempDir()
	user := writeFile(t, dir, "user", "erin")
	pass := writeFile(t, dir, "pass", "pw")
	wrong := writeFile(t, dir, "wrong", "nope")

	c := newClient(t, Options{Hosts: []Host{{Host: host, Insecure: true, UsernameFile: user, PasswordFile: pass}}})
	for range 3 {
		if _, err := c.Tags(context.Background(), host+"/acme/app"); err != nil {
			t.Fatalf("Tags: %v", err)
		}
	}
	if got := srv.issuedCount(); got != 1 {
		t.Errorf("issued %d tokens for 3 listings of one repository, want 1", got)
	}

	srv.revokeAll()
	if _, err := c.Digest(context.Background(), host+"/acme/app", "1.0", ""); err != nil {
		t.Fatalf("Digest after the token was revoked: %v", err)
	}
	if got := srv.issuedCount(); got != 2 {
		t.Errorf("issued %d tokens after a revocation, want 2", got)
	}

	bad := newClient(t, Options{Hosts: []Host{{Host: host, Insecure: true, UsernameFile: user, PasswordFile: wrong}}})
	_, err := bad.Tags(context.Background(), host+"/acme/app")
	if e := asError(t, err); e.Kind != KindAuth || e.Status != http.StatusUnauthorized {
		t.Errorf("Tags with a wrong password: kind %v status %d, want %v 401: %v", e.Kind, e.Status, KindAuth, err)
	}
}
