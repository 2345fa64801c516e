package registry

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestNewValidates(t *testing.T) {
	dir := t.TempDir()
	notPEM := filepath.Join(dir, "not.pem")
	if err := os.WriteFile(notPEM, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		opts    Options
		wantErr []string // each must appear in the error; none: valid
	}{
		{name: "zero value", opts: Options{}},
		{name: "full host", opts: Options{Hosts: []Host{{Host: "ghcr.io", UsernameFile: "/u", PasswordFile: "/p", RequestsPerSecond: 5, Burst: 10, Concurrency: 8}}}},
		{name: "host with port", opts: Options{Hosts: []Host{{Host: "localhost:5000", Insecure: true}}}},
		{name: "duplicate host", opts: Options{Hosts: []Host{{Host: "ghcr.io"}, {Host: "GHCR.io"}}}, wantErr: []string{`host "GHCR.io" is configured twice`}},
		{name: "docker hub aliases are one host", opts: Options{Hosts: []Host{{Host: "docker.io"}, {Host: "registry-1.docker.io"}}}, wantErr: []string{"configured twice"}},
		{name: "empty host", opts: Options{Hosts: []Host{{}}}, wantErr: []string{"host is empty"}},
		{name: "scheme in host", opts: Options{Hosts: []Host{{Host: "https://ghcr.io"}}}, wantErr: []string{"must not have a scheme"}},
		{name: "path in host", opts: Options{Hosts: []Host{{Host: "ghcr.io/acme"}}}, wantErr: []string{"without a path"}},
		{name: "username without password", opts: Options{Hosts: []Host{{Host: "a.io", UsernameFile: "/u"}}}, wantErr: []string{"usernameFile is set without passwordFile"}},
		{name: "password without username", opts: Options{Hosts: []Host{{Host: "a.io", PasswordFile: "/p"}}}, wantErr: []string{"passwordFile is set without usernameFile"}},
		{name: "two auth methods", opts: Options{Hosts: []Host{{Host: "a.io", TokenFile: "/t", DockerConfig: "/c"}}}, wantErr: []string{"only one of"}},
		{name: "negative rate", opts: Options{Hosts: []Host{{Host: "a.io", RequestsPerSecond: -1}}}, wantErr: []string{"requestsPerSecond -1 is negative"}},
		{name: "burst without rate", opts: Options{Hosts: []Host{{Host: "a.io", Burst: 3}}}, wantErr: []string{"burst is set without requestsPerSecond"}},
		{name: "negative concurrency", opts: Options{Hosts: []Host{{Host: "a.io", Concurrency: -2}}}, wantErr: []string{"concurrency -2 is negative"}},
		// A CA file that cannot be used fails its host's requests only
		// (TestCAFileUnusable), not the client.
		{name: "missing CA file", opts: Options{Hosts: []Host{{Host: "a.io", CAFile: filepath.Join(dir, "missing.pem")}}}},
		{name: "CA file without PEM", opts: Options{Hosts: []Host{{Host: "a.io", CAFile: notPEM}}}},
		{name: "CA file with a custom transport", opts: Options{Transport: roundTripFunc(nil), Hosts: []Host{{Host: "a.io", CAFile: notPEM}}}, wantErr: []string{"needs Options.Transport to be an *http.Transport"}},
		{name: "negative durations", opts: Options{Timeout: -1, Backoff: -1, MaxBackoff: -1}, wantErr: []string{"timeout -1ns is negative", "backoff -1ns is negative", "max backoff -1ns is negative"}},
		{name: "backoff above cap", opts: Options{Backoff: time.Minute, MaxBackoff: time.Second}, wantErr: []string{"backoff 1m0s is greater than max backoff 1s"}},
		{name: "negative page size", opts: Options{PageSize: -1}, wantErr: []string{"page size -1 is negative"}},
		{name: "per-host limits", opts: Options{Hosts: []Host{{Host: "a.io", Timeout: time.Second, MaxRetries: NoRetries, MaxPages: 10, MaxTags: 100, RepositoryTimeout: time.Minute}}}},
		{name: "negative host limits", opts: Options{Hosts: []Host{{Host: "a.io", Timeout: -1, MaxPages: -1, MaxTags: -2, RepositoryTimeout: -3}}}, wantErr: []string{"timeout -1ns is negative", "maxPages -1 is negative", "maxTags -2 is negative", "repositoryTimeout -3ns is negative"}},
		{name: "negative client limits", opts: Options{MaxPages: -1, MaxTags: -1, RepositoryTimeout: -1}, wantErr: []string{"maxPages -1 is negative", "maxTags -1 is negative", "repositoryTimeout -1ns is negative"}},
		{name: "all problems at once", opts: Options{PageSize: -1, Hosts: []Host{{Host: "a.io", UsernameFile: "/u"}, {}}}, wantErr: []string{"page size", "hosts[0] (a.io): usernameFile", "hosts[1]: host is empty"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New(tt.opts)
			if len(tt.wantErr) == 0 {
				if err != nil {
					t.Fatalf("New: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("New succeeded, want an error containing %q", tt.wantErr)
			}
			for _, want := range tt.wantErr {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("New error %q does not contain %q", err, want)
				}
			}
		})
	}
}

func TestNewDefaults(t *testing.T) {
	c, err := New(Options{MaxRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	got := []any{c.timeout, c.maxRetries, c.backoff, c.maxBackoff, c.pageSize, c.userAgent}
	want := []any{DefaultTimeout, 0, DefaultBackoff, DefaultMaxBackoff, DefaultPageSize, DefaultUserAgent}
	for i := range got {
		if got[i] != want[i] {
			t.Errorf("default %d = %v, want %v", i, got[i], want[i])
		}
	}
	if tr, ok := c.base.(*http.Transport); !ok || tr.Proxy == nil {
		t.Errorf("default transport is %T without a Proxy function, want a clone of http.DefaultTransport honouring HTTPS_PROXY", c.base)
	}
	if cap(c.hostFor("ghcr.io").rt.sem) != DefaultConcurrency {
		t.Errorf("default host concurrency %d, want %d", cap(c.hostFor("ghcr.io").rt.sem), DefaultConcurrency)
	}
	d, err := New(Options{})
	if err != nil {
		t.Fatal(err)
	}
	if d.maxRetries != DefaultMaxRetries {
		t.Errorf("MaxRetries 0 gives %d retries, want %d", d.maxRetries, DefaultMaxRetries)
	}
}

func TestDockerHubAliases(t *testing.T) {
	c, err := New(Options{Hosts: []Host{{Host: "docker.io", Concurrency: 7}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range []string{"docker.io", "index.docker.io", "registry-1.docker.io"} {
		if got := cap(c.hostFor(h).rt.sem); got != 7 {
			t.Errorf("host %s has concurrency %d, want the docker.io setting 7", h, got)
		}
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestHostSettings checks how a host's settings fall back: Host, then
// Options, then the package defaults.
func TestHostSettings(t *testing.T) {
	c, err := New(Options{Timeout: 7 * time.Second, MaxRetries: 2, MaxTags: 99, Hosts: []Host{
		{Host: "a.io", Timeout: time.Second, MaxRetries: 9, MaxPages: 3, MaxTags: 4, RepositoryTimeout: time.Minute},
		{Host: "b.io", MaxRetries: NoRetries},
	}})
	if err != nil {
		t.Fatal(err)
	}
	type settings struct {
		Timeout, RepoTimeout       time.Duration
		Retries, MaxPages, MaxTags int
	}
	of := func(name string) settings {
		h := c.hostFor(name)
		if h.rt.timeout != h.timeout {
			t.Errorf("%s: transport timeout %v, host timeout %v", name, h.rt.timeout, h.timeout)
		}
		return settings{h.timeout, h.repoTimeout, h.maxRetries, h.maxPages, h.maxTags}
	}
	tests := []struct {
		host string
		want settings
	}{
		{"a.io", settings{time.Second, time.Minute, 9, 3, 4}},
		{"b.io", settings{7 * time.Second, DefaultRepositoryTimeout, 0, DefaultMaxPages, 99}},
		{"unconfigured.io", settings{7 * time.Second, DefaultRepositoryTimeout, 2, DefaultMaxPages, 99}},
	}
	for _, tt := range tests {
		if got := of(tt.host); got != tt.want {
			t.Errorf("%s: settings %+v, want %+v", tt.host, got, tt.want)
		}
	}
}
