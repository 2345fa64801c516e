package registry

import (
	"context"
	"encoding/pem"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/name"
	ggcrregistry "github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

func TestTags(t *testing.T) {
	host := newRegistry(t, nil)
	push(t, host, "acme/app", "1.0.0", "1.1.0", "latest", "v2.0.0-rc.1")
	push(t, host, "acme/one", "only")
	var many []string
	for i := range 25 {
		many = append(many, fmt.Sprintf("t%03d", i))
	}
	push(t, host, "acme/many", many...)

	tests := []struct {
		name     string
		repo     string
		pageSize int
		want     []string
	}{
		{name: "several tags", repo: host + "/acme/app", want: []string{"1.0.0", "1.1.0", "latest", "v2.0.0-rc.1"}},
		{name: "one tag", repo: host + "/acme/one", want: []string{"only"}},
		{name: "pages without Link use last", repo: host + "/acme/many", pageSize: 4, want: many},
		{name: "page size dividing the count exactly", repo: host + "/acme/many", pageSize: 5, want: many},
		{name: "page size larger than the count", repo: host + "/acme/many", pageSize: 100, want: many},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newClient(t, Options{PageSize: tt.pageSize}, host)
			got, err := c.Tags(context.Background(), tt.repo)
			if err != nil {
				t.Fatalf("Tags(%q): %v", tt.repo, err)
			}
			slices.Sort(got)
			if diff := cmp.Diff(got, tt.want); diff != "" {
				t.Errorf("Tags(%q) mismatch (-got +want):\n%s", tt.repo, diff)
			}
		})
	}
}

func TestTagsErrors(t *testing.T) {
	host := newRegistry(t, nil)
	push(t, host, "acme/app", "1.0.0")
	c := newClient(t, Options{}, host)
	tests := []struct {
		name       string
		repo       string
		wantKind   Kind
		wantStatus int
		wantText   string
	}{
		{name: "unknown repository", repo: host + "/acme/missing", wantKind: KindNotFound, wantStatus: http.StatusNotFound, wantText: "list tags for " + host + "/acme/missing: not found at " + host + " (HTTP 404)"},
		{name: "unknown repository says what to check", repo: host + "/acme/missing", wantKind: KindNotFound, wantStatus: http.StatusNotFound, wantText: "; the repository does not exist, or the credentials for " + host + " cannot see it"},
		{name: "tag in repository", repo: host + "/acme/app:1.0.0", wantKind: KindInvalid, wantText: "must not have a tag"},
		{name: "digest in repository", repo: host + "/acme/app@sha256:0000000000000000000000000000000000000000000000000000000000000000", wantKind: KindInvalid, wantText: "must not have a digest"},
		{name: "empty", repo: "", wantKind: KindInvalid, wantText: "repository is empty"},
		{name: "uppercase", repo: host + "/Acme/App", wantKind: KindInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := c.Tags(context.Background(), tt.repo)
			if err == nil {
				t.Fatalf("Tags(%q) succeeded, want a %v error", tt.repo, tt.wantKind)
			}
			e := asError(t, err)
			if e.Kind != tt.wantKind || e.Status != tt.wantStatus {
				t.Errorf("Tags(%q) kind %v, status %d; want %v, %d (%v)", tt.repo, e.Kind, e.Status, tt.wantKind, tt.wantStatus, err)
			}
			if e.Op != OpListTags || e.Repository != tt.repo {
				t.Errorf("Tags(%q) error op %q repository %q", tt.repo, e.Op, e.Repository)
			}
			if !strings.Contains(err.Error(), tt.wantText) {
				t.Errorf("Tags(%q) error %q does not contain %q", tt.repo, err, tt.wantText)
			}
		})
	}
}

func TestDigest(t *testing.T) {
	host := newRegistry(t, nil)
	imageDigest := push(t, host, "acme/app", "1.0.0")
	indexDigest, platformDigests := pushIndex(t, host, "acme/multi", "2.0.0", "linux/amd64", "linux/arm64/v8", "linux/arm/v6", "linux/arm/v7")
	pushImage(t, host, "acme/arm", platformImage(t, platform("linux", "arm64", "")), "1.0")
	armDigest := pushImage(t, host, "acme/arm", platformImage(t, platform("linux", "arm64", "")), "1.0")
	pushImage(t, host, "acme/noplatform", platformImage(t, platform("", "", "")), "1.0")

	tests := []struct {
		name     string
		repo     string
		tag      string
		platform string
		want     string
		wantKind Kind
		wantText string // in the error; "" not checked
	}{
		{name: "image", repo: "acme/app", tag: "1.0.0", want: imageDigest},
		{name: "index without platform", repo: "acme/multi", tag: "2.0.0", want: indexDigest},
		{name: "index amd64", repo: "acme/multi", tag: "2.0.0", platform: "linux/amd64", want: platformDigests["linux/amd64"]},
		{name: "index arm64/v8", repo: "acme/multi", tag: "2.0.0", platform: "linux/arm64/v8", want: platformDigests["linux/arm64/v8"]},
		{name: "index arm64 without variant", repo: "acme/multi", tag: "2.0.0", platform: "linux/arm64", want: platformDigests["linux/arm64/v8"]},
		{name: "index arm v6", repo: "acme/multi", tag: "2.0.0", platform: "linux/arm/v6", want: platformDigests["linux/arm/v6"]},
		{name: "index arm prefers v7", repo: "acme/multi", tag: "2.0.0", platform: "linux/arm", want: platformDigests["linux/arm/v7"]},
		{name: "index arch alias", repo: "acme/multi", tag: "2.0.0", platform: "linux/x86_64", want: platformDigests["linux/amd64"]},
		{name: "index missing platform", repo: "acme/multi", tag: "2.0.0", platform: "linux/s390x", wantKind: KindNotFound},
		{name: "single-platform image matching", repo: "acme/arm", tag: "1.0", platform: "linux/arm64/v8", want: armDigest},
		{name: "single-platform image other platform", repo: "acme/arm", tag: "1.0", platform: "linux/amd64", wantKind: KindNotFound,
			wantText: "(platform linux/amd64): tag is a single-platform image for linux/arm64"},
		{name: "single-platform image naming no platform", repo: "acme/noplatform", tag: "1.0", platform: "linux/amd64", wantKind: KindNotFound,
			wantText: `(platform linux/amd64): tag is a single-platform image whose config names no platform (os "", architecture "")`},
		{name: "missing tag", repo: "acme/app", tag: "9.9.9", wantKind: KindNotFound,
			wantText: "not found at HOST (HTTP 404): GET http://HOST/v2/acme/app/manifests/9.9.9: MANIFEST_UNKNOWN: Unknown manifest; the repository or tag does not exist, or the credentials for HOST cannot see it"},
		{name: "missing repository", repo: "acme/nope", tag: "1.0.0", wantKind: KindNotFound},
		{name: "invalid tag", repo: "acme/app", tag: "no/slash", wantKind: KindInvalid},
		{name: "empty tag", repo: "acme/app", tag: "", wantKind: KindInvalid},
		{name: "invalid platform", repo: "acme/multi", tag: "2.0.0", platform: "linux", wantKind: KindInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newClient(t, Options{}, host)
			got, err := c.Digest(context.Background(), host+"/"+tt.repo, tt.tag, tt.platform)
			if tt.wantKind != KindUnknown {
				if err == nil {
					t.Fatalf("Digest() = %q, want a %v error", got, tt.wantKind)
				}
				e := asError(t, err)
				if e.Kind != tt.wantKind || e.Op != OpResolveDigest {
					t.Errorf("Digest() error kind %v op %q, want %v %q: %v", e.Kind, e.Op, tt.wantKind, OpResolveDigest, err)
				}
				if want := strings.ReplaceAll(tt.wantText, "HOST", host); !strings.Contains(err.Error(), want) {
					t.Errorf("Digest() error\n%q\ndoes not contain\n%q", err, want)
				}
				return
			}
			if err != nil {
				t.Fatalf("Digest(): %v", err)
			}
			if got != tt.want {
				t.Errorf("Digest() = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestDigestMissingPlatformNamesThePlatforms(t *testing.T) {
	host := newRegistry(t, nil)
	pushIndex(t, host, "acme/multi", "1", "linux/amd64", "linux/arm64")
	c := newClient(t, Options{}, host)
	_, err := c.Digest(context.Background(), host+"/acme/multi", "1", "windows/amd64")
	if err == nil {
		t.Fatal("Digest() succeeded for a platform the index lacks")
	}
	want := "resolve digest for " + host + "/acme/multi:1 (platform windows/amd64): index has no platform windows/amd64 (it has linux/amd64, linux/arm64)"
	if got := err.Error(); got != want {
		t.Errorf("error text\n got %q\nwant %q", got, want)
	}
}

func TestPlatformMatches(t *testing.T) {
	tests := []struct {
		want, have string
		match      bool
	}{
		{"linux/amd64", "linux/amd64", true},
		{"linux/amd64", "linux/arm64", false},
		{"linux/amd64", "windows/amd64", false},
		{"linux/arm64", "linux/arm64/v8", true},
		{"linux/arm64/v8", "linux/arm64", true},
		{"linux/arm64/8", "linux/arm64/v8", true},
		{"linux/arm/v7", "linux/arm", true},
		{"linux/arm/v6", "linux/arm", false},
		{"linux/arm/v6", "linux/arm/v7", false},
		{"linux/arm", "linux/arm/v6", true},
		{"linux/aarch64", "linux/arm64", true},
		{"windows/amd64:10.0.17763", "windows/amd64:10.0.17763", true},
		{"windows/amd64:10.0.17763", "windows/amd64:10.0.20348", false},
		{"windows/amd64", "windows/amd64:10.0.20348", true},
	}
	for _, tt := range tests {
		t.Run(tt.want+" vs "+tt.have, func(t *testing.T) {
			want, err := parsePlatform(tt.want)
			if err != nil {
				t.Fatal(err)
			}
			have, err := parsePlatform(tt.have)
			if err != nil {
				t.Fatal(err)
			}
			if got := platformMatches(*want, *have); got != tt.match {
				t.Errorf("platformMatches(%s, %s) = %v, want %v", tt.want, tt.have, got, tt.match)
			}
		})
	}
}

func TestScan(t *testing.T) {
	cnt := newCounter()
	host := newRegistry(t, chain(cnt.wrap, slow(30*time.Millisecond, "/tags/list")))
	var repos []string
	want := map[string][]string{}
	for i := range 12 {
		repo := fmt.Sprintf("acme/app%02d", i)
		tags := []string{fmt.Sprintf("1.%d.0", i), "latest"}
		push(t, host, repo, tags...)
		repos = append(repos, host+"/"+repo)
		want[host+"/"+repo] = tags
	}
	missing := host + "/acme/missing"
	repos = slices.Insert(repos, 5, missing)
	cnt.reset()

	c := newClient(t, Options{}, host) // host concurrency 4 (the default)
	got := c.Scan(context.Background(), repos, 3)

	if len(got) != len(repos) {
		t.Fatalf("Scan returned %d results for %d repositories", len(got), len(repos))
	}
	for i, r := range got {
		if r.Repository != repos[i] {
			t.Errorf("result %d is for %q, want %q (input order)", i, r.Repository, repos[i])
		}
		if r.Repository == missing {
			if KindOf(r.Err) != KindNotFound {
				t.Errorf("result for %s: err %v, want KindNotFound", missing, r.Err)
			}
			continue
		}
		if r.Err != nil {
			t.Errorf("result for %s: %v", r.Repository, r.Err)
			continue
		}
		slices.Sort(r.Tags)
		if diff := cmp.Diff(r.Tags, want[r.Repository]); diff != "" {
			t.Errorf("tags of %s (-got +want):\n%s", r.Repository, diff)
		}
	}
	if m := cnt.maxInflight.Load(); m > 3 || m < 2 {
		t.Errorf("max requests in flight = %d, want 2 or 3 (Scan concurrency 3)", m)
	}
}

func TestHostConcurrencyLimit(t *testing.T) {
	cnt := newCounter()
	host := newRegistry(t, chain(cnt.wrap, slow(30*time.Millisecond, "/tags/list")))
	var repos []string
	for i := range 8 {
		repo := fmt.Sprintf("acme/app%d", i)
		push(t, host, repo, "1")
		repos = append(repos, host+"/"+repo)
	}
	cnt.reset()
	c := newClient(t, Options{Hosts: []Host{{Host: host, Insecure: true, Concurrency: 2}}})
	for _, r := range c.Scan(context.Background(), repos, 8) {
		if r.Err != nil {
			t.Fatalf("Scan %s: %v", r.Repository, r.Err)
		}
	}
	if m := cnt.maxInflight.Load(); m > 2 {
		t.Errorf("max requests in flight = %d, want at most the host's concurrency 2", m)
	}
}

// TestHangingRepositoriesLeaveTheHost: requests that hang (repositories a
// registry never answers for) move to the slow share once slow, so a
// repository the host answers is listed at once, not after the hung
// requests' timeouts and retries, while fewer than twice the host's
// concurrency hang (three, here, beside a concurrency of 2); and the slow
// share is bounded too.
func TestHangingRepositoriesLeaveTheHost(t *testing.T) {
	defer func(was time.Duration) { slowRequestAfter = was }(slowRequestAfter)
	slowRequestAfter = 100 * time.Millisecond
	cnt := newCounter()
	hang := func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if strings.Contains(r.URL.Path, "/hang") {
				<-r.Context().Done()
				return
			}
			next.ServeHTTP(w, r)
		})
	}
	host := newRegistry(t, chain(cnt.wrap, hang))
	push(t, host, "acme/ok", "1.0.0")
	c := newClient(t, Options{Hosts: []Host{{Host: host, Insecure: true, Concurrency: 2, Timeout: time.Minute}}})
	if _, err := c.Tags(context.Background(), host+"/acme/ok"); err != nil { // the ping
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	var hung []string
	for i := range 6 {
		hung = append(hung, fmt.Sprintf("%s/acme/hang%d", host, i))
	}
	wg.Go(func() { c.Scan(ctx, hung, 3) })
	for deadline := time.Now().Add(5 * time.Second); cnt.maxInflight.Load() < 2; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the hung requests did not arrive")
		}
	}
	start := time.Now()
	if _, err := c.Tags(context.Background(), host+"/acme/ok"); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("listing acme/ok took %v while other repositories hang, want it listed once the hung requests are slow", d)
	}
	// Two places and two slow ones: at most four in flight.
	if m := cnt.maxInflight.Load(); m > 4 {
		t.Errorf("max requests in flight = %d, want at most twice the host's concurrency 2", m)
	}
}

func TestRateLimit(t *testing.T) {
	cnt := newCounter()
	host := newRegistry(t, cnt.wrap)
	push(t, host, "acme/app", "1")
	cnt.reset()
	c := newClient(t, Options{Hosts: []Host{{Host: host, Insecure: true, RequestsPerSecond: 20, Burst: 1}}})
	start := time.Now()
	for range 8 {
		if _, err := c.Tags(context.Background(), host+"/acme/app"); err != nil {
			t.Fatal(err)
		}
	}
	elapsed := time.Since(start)
	n := cnt.total("/v2/")
	// With a burst of 1 at 20/s, n requests take at least (n-1)/20 s.
	if min := time.Duration(n-1) * time.Second / 20; elapsed < min*9/10 {
		t.Errorf("%d requests took %v, want at least %v at 20 requests per second", n, elapsed, min)
	}
	if n < 9 {
		t.Errorf("saw %d requests, want at least 9 (ping and 8 listings)", n)
	}
}

func TestSessionReuse(t *testing.T) {
	cnt := newCounter()
	host := newRegistry(t, cnt.wrap)
	push(t, host, "acme/app", "1")
	push(t, host, "acme/other", "1")
	cnt.reset()
	c := newClient(t, Options{}, host)
	for range 3 {
		for _, repo := range []string{"acme/app", "acme/other"} {
			if _, err := c.Tags(context.Background(), host+"/"+repo); err != nil {
				t.Fatal(err)
			}
		}
	}
	if got := cnt.get("GET /v2/"); got != 1 {
		t.Errorf("pinged the registry %d times, want once per host", got)
	}
}

func TestPlainHTTPNeedsInsecure(t *testing.T) {
	host := newRegistry(t, nil)
	push(t, host, "acme/app", "1")
	c := newClient(t, Options{MaxRetries: -1})
	_, err := c.Tags(context.Background(), host+"/acme/app")
	if err == nil {
		t.Fatal("Tags over plain HTTP succeeded for a host not marked insecure")
	}
	if e := asError(t, err); e.Kind != KindTLS {
		t.Errorf("kind %v, want %v: %v", e.Kind, KindTLS, err)
	}
	if want := "; add {host: " + host + ", insecure: true} under registries: to allow plain HTTP"; !strings.HasSuffix(err.Error(), want) {
		t.Errorf("error\n%q\ndoes not end with\n%q", err, want)
	}
}

func TestUserAgent(t *testing.T) {
	var (
		mu  sync.Mutex
		got []string
	)
	host := newRegistry(t, func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodGet || r.Method == http.MethodHead {
				mu.Lock()
				got = append(got, r.UserAgent())
				mu.Unlock()
			}
			next.ServeHTTP(w, r)
		})
	})
	push(t, host, "acme/app", "1")
	mu.Lock()
	got = nil
	mu.Unlock()
	c := newClient(t, Options{UserAgent: "imagebump/1.2.3"}, host)
	if _, err := c.Tags(context.Background(), host+"/acme/app"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Digest(context.Background(), host+"/acme/app", "1", ""); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) == 0 {
		t.Fatal("no request seen")
	}
	for _, ua := range got {
		if ua != "imagebump/1.2.3" {
			t.Errorf("User-Agent %q, want %q", ua, "imagebump/1.2.3")
		}
	}
}

func platform(os, arch, variant string) v1.Platform {
	return v1.Platform{OS: os, Architecture: arch, Variant: variant}
}

func TestUnreachableIsNetwork(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	host := l.Addr().String()
	l.Close()
	for _, insecure := range []bool{false, true} {
		t.Run(fmt.Sprintf("insecure=%v", insecure), func(t *testing.T) {
			c := newClient(t, Options{MaxRetries: 1, Hosts: []Host{{Host: host, Insecure: insecure}}})
			_, err := c.Tags(context.Background(), host+"/acme/app")
			e := asError(t, err)
			if e.Kind != KindNetwork || e.Attempts != 2 {
				t.Errorf("kind %v after %d attempts, want %v after 2: %v", e.Kind, e.Attempts, KindNetwork, err)
			}
		})
	}
}

// TestCAFileUnusable: a caFile missing, or holding no certificate, failed
// the whole client (plan and run exited 64, whatever the markers used);
// it now fails its own host's requests, none sent and none retried,
// saying what to do, and is read again until it can be used.
func TestCAFileUnusable(t *testing.T) {
	var requests atomic.Int32
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		http.Error(w, `{"errors":[{"code":"NAME_UNKNOWN","message":"no such repository"}]}`, http.StatusNotFound)
	}))
	t.Cleanup(srv.Close)
	host := strings.TrimPrefix(srv.URL, "https://")
	other := newRegistry(t, nil)
	push(t, other, "acme/other", "2.0")
	caFile := filepath.Join(t.TempDir(), "ca.pem")
	c := newClient(t, Options{Hosts: []Host{{Host: host, CAFile: caFile}}}, other)

	for _, tt := range []struct{ name, content, want string }{
		{"missing", "", "cannot be read: no such file or directory"},
		{"no certificate", "not a certificate\n", "holds no PEM certificate"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if tt.content != "" {
				if err := os.WriteFile(caFile, []byte(tt.content), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			_, err := c.Tags(context.Background(), host+"/acme/app")
			e := asError(t, err)
			if e.Kind != KindTLS || e.Attempts != 1 {
				t.Errorf("kind %v after %d attempts, want %v after 1: %v", e.Kind, e.Attempts, KindTLS, err)
			}
			for _, want := range []string{"list tags for " + host + "/acme/app: no request sent: the caFile " + caFile + " of " + host, tt.want, "remove caFile"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error lacks %q:\n%v", want, err)
				}
			}
			if n := requests.Load(); n != 0 {
				t.Errorf("%d requests reached the registry", n)
			}
		})
	}
	if tags, err := c.Tags(context.Background(), other+"/acme/other"); err != nil || len(tags) != 1 {
		t.Errorf("another host: %v, %v; want its tag", tags, err)
	}

	// Once the file holds the CA's certificate, the next request uses it:
	// the registry's own answer comes back.
	if err := os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := c.Tags(context.Background(), host+"/acme/app")
	if e := asError(t, err); e.Kind != KindNotFound || requests.Load() == 0 {
		t.Errorf("with the certificate: kind %v after %d requests, want the registry's answer (not found): %v", e.Kind, requests.Load(), err)
	}
}

func TestCAFile(t *testing.T) {
	srv := httptest.NewTLSServer(ggcrregistry.New(ggcrregistry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	host := strings.TrimPrefix(srv.URL, "https://")
	caFile := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	img, err := random.Image(64, 1)
	if err != nil {
		t.Fatal(err)
	}
	ref, err := name.NewTag(host + "/acme/app:1.0")
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(ref, img, remote.WithTransport(srv.Client().Transport)); err != nil {
		t.Fatal(err)
	}

	trusted := newClient(t, Options{Hosts: []Host{{Host: host, CAFile: caFile}}})
	tags, err := trusted.Tags(context.Background(), host+"/acme/app")
	if err != nil {
		t.Fatalf("Tags with CAFile: %v", err)
	}
	if diff := cmp.Diff(tags, []string{"1.0"}); diff != "" {
		t.Errorf("Tags mismatch (-got +want):\n%s", diff)
	}

	untrusted := newClient(t, Options{})
	_, err = untrusted.Tags(context.Background(), host+"/acme/app")
	if e := asError(t, err); e.Kind != KindTLS || e.Attempts != 1 {
		t.Errorf("without CAFile: kind %v after %d attempts, want %v after 1 (not retried): %v", e.Kind, e.Attempts, KindTLS, err)
	}
	if want := "; set registries[].caFile for " + host; !strings.HasSuffix(err.Error(), want) {
		t.Errorf("error\n%q\ndoes not end with\n%q", err, want)
	}
}
