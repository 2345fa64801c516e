package registry

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/imagebump/imagebump/internal/testkit/testregistry"
)

// The tests in this file run the real distribution registries through
// internal/testkit/testregistry, which skips them when the binaries are missing
// (and fails them when CI=true).

func TestIntegrationV2Plain(t *testing.T) {
	s := testregistry.Start(t, testregistry.Options{Version: testregistry.V2})
	s.Push(t, "acme/app", "1.0.0", "1.1.0", "latest")
	c := newClient(t, Options{}, s.Host)

	tags, err := c.Tags(context.Background(), s.Repo("acme/app"))
	if err != nil {
		t.Fatalf("Tags: %v", err)
	}
	slices.Sort(tags)
	if diff := cmp.Diff(tags, []string{"1.0.0", "1.1.0", "latest"}); diff != "" {
		t.Errorf("Tags mismatch (-got +want):\n%s", diff)
	}
	got, err := c.Digest(context.Background(), s.Repo("acme/app"), "1.1.0", "")
	if err != nil {
		t.Fatalf("Digest: %v", err)
	}
	if want := s.Digest(t, "acme/app", "1.1.0"); got != want {
		t.Errorf("Digest = %s, want %s", got, want)
	}
	_, err = c.Tags(context.Background(), s.Repo("acme/missing"))
	if e := asError(t, err); e.Kind != KindNotFound {
		t.Errorf("Tags of a missing repository: kind %v, want %v: %v", e.Kind, KindNotFound, err)
	}
	_, err = c.Digest(context.Background(), s.Repo("acme/app"), "9.9.9", "")
	if e := asError(t, err); e.Kind != KindNotFound {
		t.Errorf("Digest of a missing tag: kind %v, want %v: %v", e.Kind, KindNotFound, err)
	}
}

func TestIntegrationInsecure(t *testing.T) {
	s := testregistry.Start(t, testregistry.Options{Version: testregistry.V2})
	s.Push(t, "acme/app", "1.0.0")

	insecure := newClient(t, Options{}, s.Host)
	if _, err := insecure.Tags(context.Background(), s.Repo("acme/app")); err != nil {
		t.Errorf("Tags with Insecure against a plain HTTP registry: %v", err)
	}

	secure := newClient(t, Options{MaxRetries: -1})
	_, err := secure.Tags(context.Background(), s.Repo("acme/app"))
	if err == nil {
		t.Fatal("Tags without Insecure against a plain HTTP registry succeeded")
	}
	if e := asError(t, err); e.Kind != KindTLS {
		t.Errorf("kind %v, want %v: %v", e.Kind, KindTLS, err)
	}
	if want := "; add {host: " + s.Host + ", insecure: true} under registries: to allow plain HTTP"; !strings.HasSuffix(err.Error(), want) {
		t.Errorf("error\n%q\ndoes not end with\n%q", err, want)
	}
}

func writeCredentials(t *testing.T, user, pass string) (userFile, passFile string) {
	t.Helper()
	dir := t.TempDir()
	userFile = filepath.Join(dir, "username")
	passFile = filepath.Join(dir, "password")
	if err := os.WriteFile(userFile, []byte(user+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(passFile, []byte(pass+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return userFile, passFile
}

func TestIntegrationHtpasswd(t *testing.T) {
	s := testregistry.Start(t, testregistry.Options{Version: testregistry.V2, Htpasswd: true})
	s.Push(t, "acme/app", "1.0.0", "2.0.0")

	user, pass := writeCredentials(t, s.Username, s.Password)
	c := newClient(t, Options{Hosts: []Host{{Host: s.Host, Insecure: true, UsernameFile: user, PasswordFile: pass}}})
	tags, err := c.Tags(context.Background(), s.Repo("acme/app"))
	if err != nil {
		t.Fatalf("Tags: %v", err)
	}
	slices.Sort(tags)
	if diff := cmp.Diff(tags, []string{"1.0.0", "2.0.0"}); diff != "" {
		t.Errorf("Tags mismatch (-got +want):\n%s", diff)
	}
	if got, want := mustDigest(t, c, s.Repo("acme/app"), "2.0.0", ""), s.Digest(t, "acme/app", "2.0.0"); got != want {
		t.Errorf("Digest = %s, want %s", got, want)
	}

	user, wrong := writeCredentials(t, s.Username, "wrong-"+s.Password)
	bad := newClient(t, Options{Hosts: []Host{{Host: s.Host, Insecure: true, UsernameFile: user, PasswordFile: wrong}}})
	_, err = bad.Tags(context.Background(), s.Repo("acme/app"))
	if e := asError(t, err); e.Kind != KindAuth || e.Status != http.StatusUnauthorized {
		t.Errorf("wrong password: kind %v status %d, want %v 401: %v", e.Kind, e.Status, KindAuth, err)
	}
	if strings.Contains(err.Error(), s.Password) {
		t.Errorf("error %q contains the password", err)
	}

	anon := newClient(t, Options{}, s.Host)
	_, err = anon.Tags(context.Background(), s.Repo("acme/app"))
	if KindOf(err) != KindAuth {
		t.Errorf("no credentials: error %v, want kind %v", err, KindAuth)
	}
}

func TestIntegrationDockerConfig(t *testing.T) {
	s := testregistry.Start(t, testregistry.Options{Version: testregistry.V2, Htpasswd: true})
	s.Push(t, "acme/app", "1.0.0")
	auth := base64.StdEncoding.EncodeToString([]byte(s.Username + ":" + s.Password))
	cfg := filepath.Join(t.TempDir(), "config.json")
	if err := os.WriteFile(cfg, fmt.Appendf(nil, `{"auths": {%q: {"auth": %q}}}`, s.Host, auth), 0o600); err != nil {
		t.Fatal(err)
	}
	c := newClient(t, Options{Hosts: []Host{{Host: s.Host, Insecure: true, DockerConfig: cfg}}})
	tags, err := c.Tags(context.Background(), s.Repo("acme/app"))
	if err != nil {
		t.Fatalf("Tags: %v", err)
	}
	if diff := cmp.Diff(tags, []string{"1.0.0"}); diff != "" {
		t.Errorf("Tags mismatch (-got +want):\n%s", diff)
	}
}

func TestIntegrationTLS(t *testing.T) {
	s := testregistry.Start(t, testregistry.Options{Version: testregistry.V2, TLS: true})
	s.Push(t, "acme/app", "1.0.0")

	c := newClient(t, Options{Hosts: []Host{{Host: s.Host, CAFile: s.CAFile}}})
	tags, err := c.Tags(context.Background(), s.Repo("acme/app"))
	if err != nil {
		t.Fatalf("Tags with CAFile: %v", err)
	}
	if diff := cmp.Diff(tags, []string{"1.0.0"}); diff != "" {
		t.Errorf("Tags mismatch (-got +want):\n%s", diff)
	}
	if got, want := mustDigest(t, c, s.Repo("acme/app"), "1.0.0", ""), s.Digest(t, "acme/app", "1.0.0"); got != want {
		t.Errorf("Digest = %s, want %s", got, want)
	}

	untrusted := newClient(t, Options{MaxRetries: -1})
	_, err = untrusted.Tags(context.Background(), s.Repo("acme/app"))
	if err == nil {
		t.Fatal("Tags without CAFile succeeded against a registry with a private CA")
	}
	if e := asError(t, err); e.Kind != KindTLS {
		t.Errorf("without CAFile: kind %v, want %v: %v", e.Kind, KindTLS, err)
	}
	if !strings.Contains(err.Error(), "certificate") {
		t.Errorf("error %q does not mention the certificate", err)
	}
	if want := "; set registries[].caFile for " + s.Host; !strings.HasSuffix(err.Error(), want) {
		t.Errorf("error\n%q\ndoes not end with\n%q", err, want)
	}
}

func TestIntegrationToken(t *testing.T) {
	s := testregistry.Start(t, testregistry.Options{Version: testregistry.V2, Token: true})
	s.Push(t, "acme/app", "1.0.0", "1.1.0")
	s.Push(t, "acme/other", "3")

	user, pass := writeCredentials(t, s.Username, s.Password)
	c := newClient(t, Options{Hosts: []Host{{Host: s.Host, Insecure: true, UsernameFile: user, PasswordFile: pass}}})
	for _, r := range c.Scan(context.Background(), []string{s.Repo("acme/app"), s.Repo("acme/other")}, 2) {
		if r.Err != nil {
			t.Fatalf("Scan %s: %v", r.Repository, r.Err)
		}
	}
	tags, err := c.Tags(context.Background(), s.Repo("acme/app"))
	if err != nil {
		t.Fatalf("Tags: %v", err)
	}
	slices.Sort(tags)
	if diff := cmp.Diff(tags, []string{"1.0.0", "1.1.0"}); diff != "" {
		t.Errorf("Tags mismatch (-got +want):\n%s", diff)
	}
	if got, want := mustDigest(t, c, s.Repo("acme/app"), "1.1.0", ""), s.Digest(t, "acme/app", "1.1.0"); got != want {
		t.Errorf("Digest = %s, want %s", got, want)
	}

	user, wrong := writeCredentials(t, s.Username, "nope")
	bad := newClient(t, Options{Hosts: []Host{{Host: s.Host, Insecure: true, UsernameFile: user, PasswordFile: wrong}}})
	_, err = bad.Tags(context.Background(), s.Repo("acme/app"))
	if KindOf(err) != KindAuth {
		t.Errorf("wrong password: error %v, want kind %v", err, KindAuth)
	}
}

// countingTransport counts tag list requests on their way out.
type countingTransport struct {
	inner http.RoundTripper
	pages atomic.Int64
}

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if strings.HasSuffix(r.URL.Path, "/tags/list") {
		c.pages.Add(1)
	}
	return c.inner.RoundTrip(r)
}

func TestIntegrationV3TenThousandTags(t *testing.T) {
	storageInMemory(t)
	s := testregistry.Start(t, testregistry.Options{Version: testregistry.V3})
	want := make([]string, 10000)
	for i := range want {
		want[i] = fmt.Sprintf("1.%d.%d", i/100, i%100)
	}
	start := time.Now()
	s.Push(t, "acme/big", want...)
	t.Logf("pushed %d tags in %v", len(want), time.Since(start))

	ct := &countingTransport{inner: http.DefaultTransport.(*http.Transport).Clone()}
	c := newClient(t, Options{PageSize: 1000, Transport: ct}, s.Host)
	got, err := c.Tags(context.Background(), s.Repo("acme/big"))
	if err != nil {
		t.Fatalf("Tags: %v", err)
	}
	if len(got) != len(want) {
		t.Errorf("listed %d tags, want %d", len(got), len(want))
	}
	slices.Sort(got)
	slices.Sort(want)
	if diff := cmp.Diff(got, want); diff != "" {
		t.Errorf("Tags mismatch (-got +want):\n%s", diff)
	}
	if n := ct.pages.Load(); n < 10 {
		t.Errorf("fetched %d pages of at most 1000 tags, want at least 10", n)
	}
}

func TestIntegrationDigestPlatform(t *testing.T) {
	for _, v := range []testregistry.Version{testregistry.V2, testregistry.V3} {
		t.Run(v.String(), func(t *testing.T) {
			s := testregistry.Start(t, testregistry.Options{Version: v})
			platforms := []string{"linux/amd64", "linux/arm64/v8", "linux/arm/v7"}
			index, digests := s.PushIndex(t, "acme/multi", "1.0", platforms...)
			c := newClient(t, Options{}, s.Host)
			if got := mustDigest(t, c, s.Repo("acme/multi"), "1.0", ""); got != index {
				t.Errorf("Digest without platform = %s, want the index %s", got, index)
			}
			for _, p := range platforms {
				if got := mustDigest(t, c, s.Repo("acme/multi"), "1.0", p); got != digests[p] {
					t.Errorf("Digest %s = %s, want %s", p, got, digests[p])
				}
			}
			_, err := c.Digest(context.Background(), s.Repo("acme/multi"), "1.0", "linux/ppc64le")
			if KindOf(err) != KindNotFound {
				t.Errorf("missing platform: error %v, want kind %v", err, KindNotFound)
			}
		})
	}
}

// storageInMemory points TMPDIR at /dev/shm, when there is one, for the
// rest of the test, so that the registries testregistry starts keep their
// storage (under t.TempDir) in memory. Pushing thousands of tags is bound
// by the registry's file writes: on this project's disks, 10,000 tags take
// about a minute on disk and seconds in memory.
func storageInMemory(tb testing.TB) {
	dir, err := os.MkdirTemp("/dev/shm", "imagebump-probe-")
	if err != nil {
		return
	}
	os.Remove(dir)
	tb.Setenv("TMPDIR", "/dev/shm")
}

func mustDigest(t *testing.T, c *Client, repo, tag, platform string) string {
	t.Helper()
	d, err := c.Digest(context.Background(), repo, tag, platform)
	if err != nil {
		t.Fatalf("Digest(%s, %s, %q): %v", repo, tag, platform, err)
	}
	return d
}
