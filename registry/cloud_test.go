package registry

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/imagebump/imagebump/internal/testkit/fakecloud"
)

const cloudECRHost = "123456789012.dkr.ecr.eu-west-1.amazonaws.com"

// cloudClient returns a Client whose only configured host is hc, reached
// at the fake registry front whatever its name, over plain HTTP; roots,
// when set, are trusted for the cloud's own endpoints.
func cloudClient(t *testing.T, reg *fakecloud.Registry, hc Host, roots *x509.CertPool, logs *bytes.Buffer) *Client {
	t.Helper()
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.DialContext = reg.Dialer(hc.Host)
	if roots != nil {
		tr.TLSClientConfig = &tls.Config{RootCAs: roots}
	}
	hc.Insecure = true
	opts := Options{Hosts: []Host{hc}, Transport: tr, Keychain: noKeychain, Backoff: time.Millisecond, MaxBackoff: 10 * time.Millisecond}
	if logs != nil {
		opts.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	c, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// pushCloud writes an image tagged 1.0.0 to repo through the front's
// unchecked twin.
func pushCloud(t *testing.T, reg *fakecloud.Registry, repo string) {
	t.Helper()
	img, err := random.Image(64, 1)
	if err != nil {
		t.Fatal(err)
	}
	ref, err := name.NewTag(reg.Push+"/"+repo+":1.0.0", name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(ref, img); err != nil {
		t.Fatal(err)
	}
}

// serveLoop runs cycles, as serve does, for d: each lists repository's
// tags in a Cycle of its own. Every cycle must succeed.
func serveLoop(t *testing.T, c *Client, repository string, d time.Duration) int {
	t.Helper()
	n := 0
	for end := time.Now().Add(d); n == 0 || time.Now().Before(end); n++ {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		tags, err := c.Cycle().Tags(ctx, repository)
		cancel()
		if err != nil {
			t.Fatalf("cycle %d: %v", n, err)
		}
		if !slices.Equal(tags, []string{"1.0.0"}) {
			t.Fatalf("cycle %d: tags %q", n, tags)
		}
		time.Sleep(150 * time.Millisecond)
	}
	return n
}

// noneContains fails the test if text holds any of secrets.
func noneContains(t *testing.T, what, text string, secrets []string) {
	t.Helper()
	for _, s := range secrets {
		if strings.Contains(text, s) {
			t.Errorf("%s holds the secret %q", what, s)
		}
	}
}

// TestCloudServeRefresh runs each provider's SDK against its fake for a
// few seconds of cycles, with tokens that live a few seconds and a
// registry that refuses them once expired: every cycle succeeds, new
// tokens are renewed as they expire without a cycle failing or the
// registry refusing a cloud token, and no token reaches the log. When a
// renewal happens (ahead of expiry, by how much) is proven on a fake clock
// in registry/cloudauth: here, on a real clock and a loaded machine, a
// cycle may not come in the renewal window.
func TestCloudServeRefresh(t *testing.T) {
	t.Run("aws", func(t *testing.T) {
		fake := fakecloud.NewAWS(t)
		fake.Env(t)
		t.Setenv("AWS_ACCESS_KEY_ID", "AKIASTATICENV00010")
		t.Setenv("AWS_SECRET_ACCESS_KEY", "static-secret")
		fake.Passwords.TTL = 2 * time.Second
		reg := fakecloud.NewRegistry(t, fakecloud.Basic, func(user, pass string) string {
			if user != "AWS" {
				return "wrong user"
			}
			return fake.Passwords.Check(pass)
		})
		pushCloud(t, reg, "team/app")
		var logs bytes.Buffer
		c := cloudClient(t, reg, Host{Host: cloudECRHost, Provider: ProviderAuto}, nil, &logs)
		serveLoop(t, c, cloudECRHost+"/team/app", 5*time.Second)
		if n := fake.Passwords.Count(); n < 3 {
			t.Errorf("%d ECR tokens in 5s of 2s tokens, want at least 3", n)
		}
		for _, why := range reg.Refused() {
			if strings.Contains(why, "expired") {
				t.Errorf("the registry saw an expired token: %s", why)
			}
		}
		noneContains(t, "the log", logs.String(), fake.Passwords.All())
	})
	t.Run("gcp", func(t *testing.T) {
		fake := fakecloud.NewGCP(t)
		fake.Env(t)
		// golang.org/x/oauth2 renews 10s before expiry: this lives 1s
		// for it, 11s for the registry.
		fake.AccessTokens.TTL = 11 * time.Second
		reg := fakecloud.NewRegistry(t, fakecloud.Bearer, func(user, pass string) string {
			if user != "oauth2accesstoken" {
				return "wrong user"
			}
			return fake.AccessTokens.Check(pass)
		})
		reg.RegistryTokens.TTL = time.Second
		pushCloud(t, reg, "proj/repo/app")
		var logs bytes.Buffer
		host := "europe-west1-docker.pkg.dev"
		c := cloudClient(t, reg, Host{Host: host, Provider: ProviderGCP}, nil, &logs)
		serveLoop(t, c, host+"/proj/repo/app", 4*time.Second)
		if n := fake.AccessTokens.Count(); n < 2 {
			t.Errorf("%d access tokens, want at least 2", n)
		}
		if n := reg.RegistryTokens.Count(); n < 2 {
			t.Errorf("%d registry tokens in 4s of 1s tokens, want at least 2", n)
		}
		for _, why := range reg.Refused() {
			if strings.HasPrefix(why, "token endpoint") {
				t.Errorf("the token endpoint refused the access token: %s", why)
			}
		}
		noneContains(t, "the log", logs.String(), append(fake.AccessTokens.All(), reg.RegistryTokens.All()...))
	})
	t.Run("azure", func(t *testing.T) {
		fake := fakecloud.NewAzure(t)
		fake.WorkloadIdentityEnv(t)
		fake.AccessTokens.TTL = 3 * time.Second
		fake.RefreshTokens.TTL = 3 * time.Second
		reg := fakecloud.NewRegistry(t, fakecloud.Bearer, func(user, pass string) string {
			if user != "00000000-0000-0000-0000-000000000000" {
				return "wrong user"
			}
			return fake.RefreshTokens.Check(pass)
		})
		reg.Exchange = fake.Exchange
		reg.RegistryTokens.TTL = time.Second
		pushCloud(t, reg, "app")
		var logs bytes.Buffer
		host := "imagebump.azurecr.io"
		c := cloudClient(t, reg, Host{Host: host, Provider: ProviderAuto}, fake.Pool(), &logs)
		serveLoop(t, c, host+"/app", 5*time.Second)
		if n := fake.RefreshTokens.Count(); n < 2 {
			t.Errorf("%d ACR refresh tokens in 5s of 3s tokens, want at least 2", n)
		}
		for _, why := range reg.Refused() {
			if strings.HasPrefix(why, "token endpoint") {
				t.Errorf("the token endpoint refused the refresh token: %s", why)
			}
		}
		noneContains(t, "the log", logs.String(), append(fake.AccessTokens.All(), fake.RefreshTokens.All()...))
	})
}

// TestCloudErrors checks what a cycle reports when the cloud gives no
// credentials, and the hint for a cloud host left generic.
func TestCloudErrors(t *testing.T) {
	t.Run("aws without credentials", func(t *testing.T) {
		fake := fakecloud.NewAWS(t)
		fake.Env(t)
		reg := fakecloud.NewRegistry(t, fakecloud.Basic, func(user, pass string) string { return fake.Passwords.Check(pass) })
		c := cloudClient(t, reg, Host{Host: cloudECRHost, Provider: ProviderAWS}, nil, nil)
		_, err := c.Tags(context.Background(), cloudECRHost+"/team/app")
		if KindOf(err) != KindAuth {
			t.Errorf("kind %v, want auth: %v", KindOf(err), err)
		}
		want := "list tags for " + cloudECRHost + "/team/app: aws credentials for " + cloudECRHost + ": no credentials: tried the environment (AWS_ACCESS_KEY_ID)"
		if err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("error %v\nwant it to start %q", err, want)
		}
		if got := reg.Refused(); len(got) != 0 {
			t.Errorf("the registry was asked without credentials: %q", got)
		}
	})
	t.Run("gcp token file bad", func(t *testing.T) {
		fake := fakecloud.NewGCP(t)
		fake.Env(t)
		bad := filepath.Join(t.TempDir(), "key.json")
		if err := os.WriteFile(bad, []byte(`{"type": "service_account", "private_key": "-----BEGIN PRIVATE KEY-----\nsecretkeymaterial\n-----END PRIVATE KEY-----\n"}`), 0o600); err != nil {
			t.Fatal(err)
		}
		t.Setenv("GOOGLE_APPLICATION_CREDENTIALS", bad)
		reg := fakecloud.NewRegistry(t, fakecloud.Bearer, func(user, pass string) string { return fake.AccessTokens.Check(pass) })
		c := cloudClient(t, reg, Host{Host: "gcr.io", Provider: ProviderGCP}, nil, nil)
		_, err := c.Tags(context.Background(), "gcr.io/proj/app")
		if KindOf(err) != KindAuth || err == nil || !strings.Contains(err.Error(), "gcp credentials for gcr.io: ") || strings.Contains(err.Error(), "secretkeymaterial") {
			t.Errorf("error %v (kind %v)", err, KindOf(err))
		}
	})
	t.Run("generic ECR host", func(t *testing.T) {
		fake := fakecloud.NewAWS(t)
		reg := fakecloud.NewRegistry(t, fakecloud.Basic, func(user, pass string) string { return fake.Passwords.Check(pass) })
		c := cloudClient(t, reg, Host{Host: cloudECRHost}, nil, nil)
		_, err := c.Tags(context.Background(), cloudECRHost+"/team/app")
		want := "add {host: " + cloudECRHost + ", provider: aws} under registries: to use this process's aws credentials"
		if KindOf(err) != KindAuth || err == nil || !strings.HasSuffix(err.Error(), want) {
			t.Errorf("error %v\nwant it to end %q", err, want)
		}
	})
}

// TestCloudOptions checks the Host.Provider settings New refuses.
func TestCloudOptions(t *testing.T) {
	for _, tc := range []struct {
		name string
		host Host
		want string
	}{
		{"unknown", Host{Host: "gcr.io", Provider: "google"}, `unknown provider "google": want generic, auto, aws, gcp or azure`},
		{"with a token file", Host{Host: "gcr.io", Provider: ProviderGCP, TokenFile: "/t"}, "provider gcp and tokenFile both give credentials; keep one"},
		{"auto with a docker config", Host{Host: "x.azurecr.io", Provider: ProviderAuto, DockerConfig: "/c"}, "provider auto and dockerConfig both give credentials"},
		{"aws elsewhere", Host{Host: "ghcr.io", Provider: ProviderAWS}, "provider aws needs an ECR host name"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(Options{Hosts: []Host{tc.host}})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("New: %v\nwant %q", err, tc.want)
			}
		})
	}
	// auto on a host of no cloud is generic, with its files.
	c, err := New(Options{Hosts: []Host{{Host: "registry.example.com", Provider: ProviderAuto}, {Host: "ghcr.io", Provider: ProviderGeneric, TokenFile: "/t"}}})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, h := range []string{"registry.example.com", "ghcr.io"} {
		got = append(got, c.hostFor(h).provider)
	}
	if diff := cmp.Diff(got, []string{"", ""}); diff != "" {
		t.Errorf("providers (-got +want):\n%s", diff)
	}
}

// TestCloudRevokedToken checks that a cloud token the registry refuses
// before it expires (revoked, or a clock off) is replaced at once.
func TestCloudRevokedToken(t *testing.T) {
	fake := fakecloud.NewAWS(t)
	fake.Env(t)
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIASTATICENV00011")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "static-secret")
	var revoked sync.Map
	reg := fakecloud.NewRegistry(t, fakecloud.Basic, func(user, pass string) string {
		if _, ok := revoked.Load(pass); ok {
			return "revoked"
		}
		return fake.Passwords.Check(pass)
	})
	pushCloud(t, reg, "team/app")
	c := cloudClient(t, reg, Host{Host: cloudECRHost, Provider: ProviderAWS}, nil, nil)
	serveLoop(t, c, cloudECRHost+"/team/app", 0)
	for _, p := range fake.Passwords.All() {
		revoked.Store(p, true)
	}
	serveLoop(t, c, cloudECRHost+"/team/app", 0)
	if n := fake.Passwords.Count(); n != 2 {
		t.Errorf("%d ECR tokens, want 2 (one revoked, one new)", n)
	}
}
