package registry

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/imagebump/imagebump/internal/redact"
	"github.com/imagebump/imagebump/internal/testkit/hostile"
)

// TestDownHostsFailFast lists, in one Scan, 20 repositories on a host that
// refuses connections, 20 on a host that accepts them and never answers,
// and a few on a healthy host. With the default retries and backoff, the
// whole Scan must end within twice the down hosts' timeout, the healthy
// repositories must all be listed, and every repository of a down host
// must say why.
func TestDownHostsFailFast(t *testing.T) {
	const timeout = 2 * time.Second
	refused := hostile.Refused(t)
	blackhole := hostile.Blackhole(t)
	healthy := hostile.Start(t, hostile.Options{})
	c := newClient(t, Options{
		Backoff:    DefaultBackoff,
		MaxBackoff: DefaultMaxBackoff,
		Hosts: []Host{
			{Host: refused, Insecure: true, Timeout: timeout},
			{Host: blackhole, Insecure: true, Timeout: timeout},
			{Host: healthy.Host, Insecure: true},
		},
	})
	var repos []string
	for i := range 20 {
		repos = append(repos,
			fmt.Sprintf("%s/acme/app%d", refused, i),
			fmt.Sprintf("%s/acme/app%d", blackhole, i),
		)
		if i%5 == 0 {
			repos = append(repos, healthy.Repo(hostile.Healthy, fmt.Sprint("app", i)))
		}
	}
	start := time.Now()
	results := c.Scan(context.Background(), repos, 0)
	took := time.Since(start)
	if took > 2*timeout {
		t.Errorf("Scan took %v, want at most %v (twice the timeout)", took, 2*timeout)
	}
	t.Logf("Scan of %d repositories took %v", len(repos), took)

	first := map[string]string{} // host -> the first error, unsent errors stripped
	for _, r := range results {
		host, _, _ := strings.Cut(r.Repository, "/")
		switch host {
		case healthy.Host:
			if r.Err != nil {
				t.Errorf("healthy %s: %v", r.Repository, r.Err)
			} else if diff := cmp.Diff(r.Tags, hostile.ValidTags()); diff != "" {
				t.Errorf("healthy %s: tags mismatch (-got +want):\n%s", r.Repository, diff)
			}
			continue
		}
		want := KindNetwork
		if host == blackhole {
			want = KindTimeout
		}
		if got := KindOf(r.Err); got != want {
			t.Errorf("%s: kind %v, want %v: %v", r.Repository, got, want, r.Err)
			continue
		}
		text := r.Err.Error()
		if !strings.HasPrefix(text, "list tags for "+r.Repository+": ") {
			t.Errorf("%s: error %q does not name the repository", r.Repository, text)
		}
		var down *hostDownError
		if errors.As(r.Err, &down) {
			if !strings.Contains(text, "not tried: "+host+" stopped answering earlier in this cycle: ") {
				t.Errorf("%s: error %q does not say the host is down", r.Repository, text)
			}
			continue
		}
		if first[host] != "" {
			t.Errorf("%s: a second repository was tried after %s had failed: %v", r.Repository, host, r.Err)
		}
		first[host] = text
	}
	for _, host := range []string{refused, blackhole} {
		if first[host] == "" {
			t.Errorf("no repository of %s reports the failure that put it down", host)
		}
	}
}

// switchable is a TCP host that either refuses service (closing each
// connection at once) or passes connections to a backend.
type switchable struct {
	addr    string
	backend string
	up      atomic.Bool

	mu    sync.Mutex
	conns []net.Conn
}

func newSwitchable(t *testing.T, backend string) *switchable {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &switchable{addr: l.Addr().String(), backend: backend}
	var wg sync.WaitGroup
	t.Cleanup(func() {
		l.Close()
		s.mu.Lock()
		for _, c := range s.conns {
			c.Close() // idle keep-alive connections would hold pipe forever
		}
		s.mu.Unlock()
		wg.Wait()
	})
	wg.Go(func() {
		for {
			conn, err := l.Accept()
			if err != nil {
				return
			}
			if !s.up.Load() {
				conn.Close()
				continue
			}
			wg.Go(func() { s.pipe(conn) })
		}
	})
	return s
}

func (s *switchable) pipe(conn net.Conn) {
	defer conn.Close()
	back, err := net.Dial("tcp", s.backend)
	if err != nil {
		return
	}
	defer back.Close()
	s.mu.Lock()
	s.conns = append(s.conns, conn, back)
	s.mu.Unlock()
	done := make(chan struct{}, 2)
	go func() { io.Copy(back, conn); done <- struct{}{} }()
	go func() { io.Copy(conn, back); done <- struct{}{} }()
	<-done
}

// TestCycleTriesAfresh checks how long a host is held down: for the rest of
// its Cycle, even once it is back, and not in the next Cycle of the same
// Client, as serve runs one Client for days.
func TestCycleTriesAfresh(t *testing.T) {
	backend := hostile.Start(t, hostile.Options{})
	sw := newSwitchable(t, backend.Host)
	c := newClient(t, Options{Hosts: []Host{{Host: sw.addr, Insecure: true, Timeout: time.Second}}})
	repo := func(i int) string { return fmt.Sprintf("%s/%s/app%d", sw.addr, hostile.Healthy, i) }

	first := c.Cycle()
	if _, err := first.Tags(context.Background(), repo(1)); KindOf(err) != KindNetwork {
		t.Fatalf("down host: error %v, want kind %v", err, KindNetwork)
	}
	sw.up.Store(true)
	_, err := first.Tags(context.Background(), repo(2))
	var down *hostDownError
	if !errors.As(err, &down) {
		t.Errorf("same cycle after the host came back: error %v, want the host held down", err)
	}

	second := c.Cycle()
	if tags, err := second.Tags(context.Background(), repo(3)); err != nil || len(tags) == 0 {
		t.Errorf("next cycle: Tags = %q, %v; want the tags", tags, err)
	}
	if _, err := c.Tags(context.Background(), repo(4)); err != nil {
		t.Errorf("Client.Tags after a failed cycle: %v", err)
	}
}

// TestAnsweringHostIsNotHeldDown checks that a host that answered in the
// cycle is not held down by one repository that hangs: its requests get
// their retries, and the other repositories are listed.
func TestAnsweringHostIsNotHeldDown(t *testing.T) {
	s := hostile.Start(t, hostile.Options{})
	c := newClient(t, Options{Hosts: []Host{{Host: s.Host, Insecure: true, Timeout: 200 * time.Millisecond, MaxRetries: 1}}})
	y := c.Cycle()
	if _, err := y.Tags(context.Background(), s.Repo(hostile.Healthy, "a")); err != nil {
		t.Fatal(err)
	}
	_, err := y.Tags(context.Background(), s.Repo(hostile.HangAfterHeaders, "x"))
	if e := asError(t, err); e.Kind != KindTimeout || e.Attempts != 2 {
		t.Errorf("hanging repository: kind %v after %d attempts, want %v after 2: %v", e.Kind, e.Attempts, KindTimeout, err)
	}
	if _, err := y.Tags(context.Background(), s.Repo(hostile.Healthy, "b")); err != nil {
		t.Errorf("healthy repository after a hanging one: %v", err)
	}
}

// TestHostileListings runs each misbehaving tag listing next to healthy
// repositories of the same server, in one Scan, with small caps: each
// hostile repository fails on its own, within its bound and with an error
// that names the cap to raise, and the healthy ones are listed.
func TestHostileListings(t *testing.T) {
	const (
		maxPages    = 15
		maxTags     = 450
		repoTimeout = 1500 * time.Millisecond
	)
	s := hostile.Start(t, hostile.Options{DripInterval: 100 * time.Millisecond})
	c := newClient(t, Options{PageSize: 100, Hosts: []Host{{
		Host: s.Host, Insecure: true,
		Timeout:           time.Second,
		MaxRetries:        2,
		MaxPages:          maxPages,
		MaxTags:           maxTags,
		RepositoryTimeout: repoTimeout,
	}}})
	tests := []struct {
		repo      string
		wantKind  Kind
		wantText  string
		wantPages int // 0: not checked
	}{
		{repo: s.Repo(hostile.EndlessLink, "pages"), wantKind: KindLimit, wantText: "too much from HOST: still listing after 15 pages (150 tags) and the registry announces more; raise registries[].maxPages for HOST", wantPages: maxPages},
		{repo: s.Repo(hostile.NoLink, "pages"), wantKind: KindLimit, wantText: "the registry listed more than 450 tags (or 57600 bytes of tags) after 5 pages; raise registries[].maxTags for HOST", wantPages: 5},
		{repo: s.Repo(hostile.SlowDrip, "drip"), wantKind: KindLimit, wantText: "gave up after the repository timeout of 1.5s; raise registries[].repositoryTimeout for HOST"},
		{repo: s.Repo(hostile.HangAfterHeaders, "hang"), wantKind: KindLimit, wantText: "gave up after the repository timeout of 1.5s; raise registries[].repositoryTimeout for HOST"},
		{repo: s.Repo(hostile.Healthy, "one")},
		{repo: s.Repo(hostile.Healthy, "two")},
	}
	var repos []string
	for _, tt := range tests {
		repos = append(repos, tt.repo)
	}
	start := time.Now()
	results := c.Scan(context.Background(), repos, len(repos))
	// The slow and hanging repositories stop at the repository timeout.
	if took := time.Since(start); took > 2*repoTimeout {
		t.Errorf("Scan took %v, want under %v", took, 2*repoTimeout)
	}
	for i, tt := range tests {
		r := results[i]
		t.Run(strings.TrimPrefix(tt.repo, s.Host+"/"), func(t *testing.T) {
			if tt.wantKind == KindUnknown {
				if r.Err != nil {
					t.Fatalf("healthy repository: %v", r.Err)
				}
				if diff := cmp.Diff(r.Tags, hostile.ValidTags()); diff != "" {
					t.Errorf("tags mismatch (-got +want):\n%s", diff)
				}
				return
			}
			if r.Tags != nil {
				t.Errorf("a failed listing returned %d tags", len(r.Tags))
			}
			e := asError(t, r.Err)
			if e.Kind != tt.wantKind {
				t.Errorf("kind %v, want %v: %v", e.Kind, tt.wantKind, r.Err)
			}
			if want := strings.ReplaceAll(tt.wantText, "HOST", s.Host); !strings.Contains(r.Err.Error(), want) {
				t.Errorf("error\n%q\ndoes not contain\n%q", r.Err, want)
			}
			if got := s.TagPages(tt.repo); tt.wantPages != 0 && got != tt.wantPages {
				t.Errorf("%d pages fetched, want %d", got, tt.wantPages)
			}
		})
	}
}

// TestRepositoryTimeoutIsNotTheCallers checks that the caller's own
// deadline stays a timeout, while the repository's is a limit.
func TestRepositoryTimeoutIsNotTheCallers(t *testing.T) {
	s := hostile.Start(t, hostile.Options{})
	c := newClient(t, Options{Hosts: []Host{{Host: s.Host, Insecure: true, RepositoryTimeout: time.Hour}}})
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_, err := c.Tags(ctx, s.Repo(hostile.HangAfterHeaders, "x"))
	if KindOf(err) != KindTimeout {
		t.Errorf("caller's deadline: error %v, want kind %v", err, KindTimeout)
	}
}

// writeSecret writes a secret file for a test and returns its path.
func writeSecret(t *testing.T, name, value string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(value+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestErrorBodiesAreCleaned has the registry answer with a large body that
// echoes the Authorization header and the password, under basic and bearer
// auth: neither the error text, nor any error in its chain, nor the log may
// hold any credential, and the error stays short.
func TestErrorBodiesAreCleaned(t *testing.T) {
	for _, auth := range []struct {
		name string
		mode hostile.Auth
		size int
	}{
		{"basic", hostile.AuthBasic, 4 << 20},
		{"bearer", hostile.AuthBearer, 4 << 20},
		{"basic, a body ggcr reads whole", hostile.AuthBasic, 8 << 10},
		{"bearer, a body ggcr reads whole", hostile.AuthBearer, 8 << 10},
	} {
		t.Run(auth.name, func(t *testing.T) {
			s := hostile.Start(t, hostile.Options{Auth: auth.mode, ErrorBodySize: auth.size})
			var logs logBuffer
			c := newClient(t, Options{Logger: newLogger(&logs), Hosts: []Host{{
				Host: s.Host, Insecure: true,
				UsernameFile: writeSecret(t, "user", s.Username),
				PasswordFile: writeSecret(t, "pass", s.Password),
			}}})
			if _, err := c.Tags(context.Background(), s.Repo(hostile.Healthy, "app")); err != nil {
				t.Fatalf("healthy repository with credentials: %v", err)
			}
			_, err := c.Tags(context.Background(), s.Repo(hostile.HugeErrorBody, "app"))
			e := asError(t, err)
			if e.Kind != KindAuth || e.Status != 403 {
				t.Errorf("kind %v status %d, want %v 403: %v", e.Kind, e.Status, KindAuth, err)
			}
			text := err.Error()
			if !strings.Contains(text, "you sent Authorization: ") || !strings.Contains(text, "REDACTED") {
				t.Errorf("error %q does not show the cleaned echo", text)
			}
			if len(text) > 1000 {
				t.Errorf("error is %d bytes long", len(text))
			}
			for _, secret := range s.Secrets() {
				if strings.Contains(text, secret) {
					t.Errorf("error %q holds the secret %q", text, secret)
				}
				if strings.Contains(logs.String(), secret) {
					t.Errorf("log holds the secret %q:\n%s", secret, logs.String())
				}
				var wrapped error = e
				for ; wrapped != nil; wrapped = errors.Unwrap(wrapped) {
					if strings.Contains(wrapped.Error(), secret) && wrapped != error(e) {
						t.Errorf("an error in the chain (%T) holds the secret %q", wrapped, secret)
						break
					}
				}
			}
		})
	}
}

// TestLoggedURLsAreCleaned has the registry send a pagination link whose
// path holds the Authorization header and the password it was sent: the
// debug log, which shows every request's URL, must show it redacted.
func TestLoggedURLsAreCleaned(t *testing.T) {
	s := hostile.Start(t, hostile.Options{Auth: hostile.AuthBasic})
	var logs logBuffer
	c := newClient(t, Options{Logger: newLogger(&logs), Hosts: []Host{{
		Host: s.Host, Insecure: true,
		UsernameFile: writeSecret(t, "user", s.Username),
		PasswordFile: writeSecret(t, "pass", s.Password),
	}}})
	_, _ = c.Tags(context.Background(), s.Repo(hostile.EchoLink, "app"))
	if s.Requests(hostile.EchoLink) < 2 {
		t.Fatalf("%d requests to the echoing repository, want the link followed", s.Requests(hostile.EchoLink))
	}
	if !strings.Contains(logs.String(), "REDACTED/list") {
		t.Errorf("log does not show the link's URL redacted:\n%s", logs.String())
	}
	for _, secret := range s.Secrets() {
		for _, form := range redact.Encodings(secret) {
			if strings.Contains(logs.String(), form) {
				t.Errorf("log holds the secret %q as %q:\n%s", secret, form, logs.String())
			}
		}
	}
}

// TestCrossHostPlainRealmRefused points the bearer realm of an insecure
// registry at plain HTTP on another host name: no request may reach it,
// and the error must say what to do. Listing the realm's host as insecure
// is how a user allows it.
func TestCrossHostPlainRealmRefused(t *testing.T) {
	s := hostile.Start(t, hostile.Options{Auth: hostile.AuthCrossHostRealm})
	user, pass := writeSecret(t, "user", s.Username), writeSecret(t, "pass", s.Password)
	c := newClient(t, Options{Hosts: []Host{{Host: s.Host, Insecure: true, UsernameFile: user, PasswordFile: pass}}})
	_, err := c.Tags(context.Background(), s.Repo(hostile.Healthy, "app"))
	e := asError(t, err)
	realmHost := strings.TrimSuffix(strings.TrimPrefix(s.Realm, "http://"), "/token")
	if e.Kind != KindTLS {
		t.Errorf("kind %v, want %v: %v", e.Kind, KindTLS, err)
	}
	want := fmt.Sprintf("refusing to send credentials over plain HTTP to %s, which is not on %s", s.Realm, s.Host)
	if !strings.Contains(err.Error(), want) {
		t.Errorf("error\n%q\ndoes not contain\n%q", err, want)
	}
	if hint := fmt.Sprintf("; serve the token realm over HTTPS, or add {host: %s, insecure: true} under registries: if plain HTTP to it is intended", realmHost); !strings.HasSuffix(err.Error(), hint) {
		t.Errorf("error\n%q\ndoes not end with\n%q", err, hint)
	}
	if got := s.RealmRequests(); len(got) != 0 {
		t.Errorf("the realm got %d requests (Authorization %q), want none", len(got), got)
	}

	allowed := newClient(t, Options{Hosts: []Host{
		{Host: s.Host, Insecure: true, UsernameFile: user, PasswordFile: pass},
		{Host: realmHost, Insecure: true},
	}})
	if _, err := allowed.Tags(context.Background(), s.Repo(hostile.Healthy, "app")); err != nil {
		t.Errorf("with the realm's host insecure too: %v", err)
	}
	if got := s.RealmRequests(); len(got) != 1 || !strings.HasPrefix(got[0], "Basic ") {
		t.Errorf("the allowed realm got %q, want one request with basic credentials", got)
	}
}

// TestHostileDigests resolves digests a registry sends malformed: none is
// returned or put in a URL.
func TestHostileDigests(t *testing.T) {
	s := hostile.Start(t, hostile.Options{})
	c := newClient(t, Options{}, s.Host)
	repo := s.Repo(hostile.BadDigest, "app")

	got, err := c.Digest(context.Background(), repo, hostile.DigestTagHeader, "")
	if err != nil || got == "sha256:../../../../etc/passwd" || !validDigest(got) {
		t.Errorf("Digest with a path in Docker-Content-Digest = %q, %v; want the manifest's own digest", got, err)
	}

	tests := []struct {
		tag      string
		wantText string
	}{
		{hostile.DigestTagIndexHex, `malformed digest "sha256:zzzz`},
		{hostile.DigestTagIndexLength, "a sha256 digest is 64 lowercase hex digits"},
		{hostile.DigestTagIndexAlgorithm, `algorithm "md5" is not sha256 or sha512`},
		{hostile.DigestTagConfig, `malformed digest "sha256:../../../../../v2/healthy/app/tags/list" for the image's config: not algorithm:encoded`},
	}
	for _, tt := range tests {
		t.Run(tt.tag, func(t *testing.T) {
			got, err := c.Digest(context.Background(), repo, tt.tag, "linux/amd64")
			if err == nil {
				t.Fatalf("Digest = %q, want an error", got)
			}
			if e := asError(t, err); e.Kind != KindBadResponse {
				t.Errorf("kind %v, want %v: %v", e.Kind, KindBadResponse, err)
			}
			if !strings.Contains(err.Error(), tt.wantText) {
				t.Errorf("error\n%q\ndoes not contain\n%q", err, tt.wantText)
			}
		})
	}
	for _, p := range s.Paths() {
		if strings.Contains(p, "/blobs/") || strings.Contains(p, "..") || strings.Contains(p, "/healthy/") {
			t.Errorf("the client asked for %s, built from a malformed digest", p)
		}
	}
}

// TestHostileTagsPassThrough checks that the registry package returns the
// tags a registry lists as they are (choosing is package policy's job),
// whatever bytes they hold.
func TestHostileTagsPassThrough(t *testing.T) {
	s := hostile.Start(t, hostile.Options{})
	c := newClient(t, Options{}, s.Host)
	got, err := c.Tags(context.Background(), s.Repo(hostile.InvalidTags, "app"))
	if err != nil {
		t.Fatal(err)
	}
	want := slices.Concat(hostile.ValidTags(), hostile.BadTags())
	if diff := cmp.Diff(got, want); diff != "" {
		t.Errorf("tags mismatch (-got +want):\n%s", diff)
	}
}
