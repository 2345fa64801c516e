package cloudauth_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/authn"

	"github.com/imagebump/imagebump/internal/redact"
	"github.com/imagebump/imagebump/internal/testkit/fakecloud"
	"github.com/imagebump/imagebump/registry/cloudauth"
)

const (
	ecrHost   = "123456789012.dkr.ecr.eu-west-1.amazonaws.com"
	otherHost = "210987654321.dkr.ecr.us-east-2.amazonaws.com"
)

func writeFile(t *testing.T, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func authorize(t *testing.T, a *cloudauth.Authenticator) (*authn.AuthConfig, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return a.AuthorizationContext(ctx)
}

// TestAWS gets an ECR token through the AWS SDK's default chain from each
// credential source, and checks that the fake saw a SigV4 signature by the
// key that source hands out and the registry id the host names.
func TestAWS(t *testing.T) {
	for _, tc := range []struct {
		name      string
		host      string
		env       func(t *testing.T, a *fakecloud.AWS)
		wantKey   string
		wantRegID []string
	}{
		{
			name: "environment keys",
			host: ecrHost,
			env: func(t *testing.T, a *fakecloud.AWS) {
				t.Setenv("AWS_ACCESS_KEY_ID", "AKIASTATICENV00001")
				t.Setenv("AWS_SECRET_ACCESS_KEY", "static-secret")
			},
			wantKey:   "AKIASTATICENV00001",
			wantRegID: []string{"123456789012"},
		},
		{
			name: "IRSA web identity, cross-account registry",
			host: otherHost,
			env: func(t *testing.T, a *fakecloud.AWS) {
				a.WebIdentityToken = "eyJ-irsa-projected-token"
				t.Setenv("AWS_ROLE_ARN", "arn:aws:iam::123456789012:role/imagebump")
				t.Setenv("AWS_WEB_IDENTITY_TOKEN_FILE", writeFile(t, a.WebIdentityToken))
			},
			wantKey:   fakecloud.WebIdentityKeyID,
			wantRegID: []string{"210987654321"},
		},
		{
			name: "EKS Pod Identity",
			host: ecrHost,
			env: func(t *testing.T, a *fakecloud.AWS) {
				a.PodIdentityToken = "pod-identity-token"
				t.Setenv("AWS_CONTAINER_CREDENTIALS_FULL_URI", a.URL+"/pod-identity")
				t.Setenv("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE", writeFile(t, a.PodIdentityToken))
			},
			wantKey:   fakecloud.PodIdentityKeyID,
			wantRegID: []string{"123456789012"},
		},
		{
			name: "ECR Public",
			host: "public.ecr.aws",
			env: func(t *testing.T, a *fakecloud.AWS) {
				t.Setenv("AWS_ACCESS_KEY_ID", "AKIASTATICENV00002")
				t.Setenv("AWS_SECRET_ACCESS_KEY", "static-secret")
			},
			wantKey: "AKIASTATICENV00002",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fake := fakecloud.NewAWS(t)
			fake.Env(t)
			tc.env(t, fake)
			a, err := cloudauth.New(cloudauth.Options{Host: tc.host, Provider: "auto"})
			if err != nil {
				t.Fatal(err)
			}
			if got := a.Provider(); got != "aws" {
				t.Errorf("provider %q, want aws", got)
			}
			for range 3 { // fetched once, then cached
				cfg, err := authorize(t, a)
				if err != nil {
					t.Fatal(err)
				}
				if cfg.Username != "AWS" || !fake.Passwords.Valid(cfg.Password) {
					t.Fatalf("credentials %q/%q are not the fake's", cfg.Username, cfg.Password)
				}
			}
			if diff := cmp.Diff(fake.KeyIDs(), []string{tc.wantKey}); diff != "" {
				t.Errorf("signing keys of ECR calls (-got +want):\n%s", diff)
			}
			if diff := cmp.Diff(fake.RegistryIDs(), tc.wantRegID); diff != "" {
				t.Errorf("registry ids asked for (-got +want):\n%s", diff)
			}
		})
	}
}

// TestAWSErrors checks that a failure names the credential source tried
// and what to do, and holds no secret.
func TestAWSErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  func(t *testing.T, a *fakecloud.AWS)
		want []string
	}{
		{
			name: "no source",
			env:  func(t *testing.T, a *fakecloud.AWS) {},
			want: []string{"aws credentials for " + ecrHost + ": no credentials: tried the environment (AWS_ACCESS_KEY_ID), the shared config", "web identity", "EKS Pod Identity", "EC2 instance role", "IRSA"},
		},
		{
			name: "web identity refused",
			env: func(t *testing.T, a *fakecloud.AWS) {
				a.WebIdentityToken = "the-right-token"
				t.Setenv("AWS_ROLE_ARN", "arn:aws:iam::123456789012:role/imagebump")
				t.Setenv("AWS_WEB_IDENTITY_TOKEN_FILE", writeFile(t, "a-wrong-token"))
			},
			want: []string{"no credentials from web identity (IRSA", "InvalidIdentityToken", "trusts this cluster's OIDC provider"},
		},
		{
			name: "GetAuthorizationToken denied",
			env:  staticKeysECRFails("AccessDeniedException"),
			want: []string{"ecr:GetAuthorizationToken (with credentials from EnvConfigCredentials)", "AccessDeniedException", "the credentials need ecr:GetAuthorizationToken"},
		},
		{
			name: "GetAuthorizationToken with expired keys",
			env:  staticKeysECRFails("ExpiredTokenException"),
			want: []string{"(with credentials from EnvConfigCredentials)", "ExpiredTokenException", "those credentials have expired"},
		},
		{
			name: "GetAuthorizationToken with keys AWS does not know",
			env:  staticKeysECRFails("UnrecognizedClientException"),
			want: []string{"UnrecognizedClientException", "AWS does not accept those credentials", "clock"},
		},
		{
			name: "the ECR API does not answer",
			env: func(t *testing.T, a *fakecloud.AWS) {
				staticKeysECRFails("")(t, a)
				t.Setenv("AWS_ENDPOINT_URL_ECR", "http://127.0.0.1:1") // nothing listens there
			},
			want: []string{"ecr:GetAuthorizationToken (with credentials from EnvConfigCredentials)", "the ECR API did not answer", "interface endpoint for ecr.api"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fake := fakecloud.NewAWS(t)
			fake.Env(t)
			tc.env(t, fake)
			a, err := cloudauth.New(cloudauth.Options{Host: ecrHost, Provider: "aws"})
			if err != nil {
				t.Fatal(err)
			}
			_, err = authorize(t, a)
			var ce *cloudauth.Error
			if !errors.As(err, &ce) {
				t.Fatalf("error %v (%T), want a *cloudauth.Error", err, err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q\nlacks %q", err, w)
				}
			}
			for _, secret := range []string{"static-secret-3", "a-wrong-token", "the-right-token"} {
				if strings.Contains(err.Error(), secret) {
					t.Errorf("error %q holds a secret", err)
				}
			}
		})
	}
}

// staticKeysECRFails sets static keys in the environment and has the
// fake's GetAuthorizationToken answer with the error code ("": none).
func staticKeysECRFails(code string) func(*testing.T, *fakecloud.AWS) {
	return func(t *testing.T, a *fakecloud.AWS) {
		t.Setenv("AWS_ACCESS_KEY_ID", "AKIASTATICENV00003")
		t.Setenv("AWS_SECRET_ACCESS_KEY", "static-secret-3")
		if code != "" {
			a.FailECRWith.Store(&code)
		}
	}
}

// TestNewRefuses checks what New refuses before sending anything.
func TestNewRefuses(t *testing.T) {
	for _, tc := range []struct{ name, host, provider, want string }{
		{"aws on another host", "ghcr.io", "aws", "provider aws needs an ECR host name"},
		{"auto on a generic host", "registry.example.com", "auto", "not an ECR, Artifact Registry"},
		{"unknown provider", "gcr.io", "oracle", `unknown provider "oracle"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := cloudauth.New(cloudauth.Options{Host: tc.host, Provider: tc.provider})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("New: %v, want %q", err, tc.want)
			}
		})
	}
}

// TestGCP gets access tokens from the metadata server (as on GKE with
// workload identity, or GCE) and from a service-account key file, through
// golang.org/x/oauth2/google.
func TestGCP(t *testing.T) {
	t.Run("metadata server", func(t *testing.T) {
		fake := fakecloud.NewGCP(t)
		fake.Env(t)
		a, err := cloudauth.New(cloudauth.Options{Host: "europe-docker.pkg.dev", Provider: "auto"})
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := authorize(t, a)
		if err != nil {
			t.Fatal(err)
		}
		if cfg.Username != "oauth2accesstoken" || !fake.AccessTokens.Valid(cfg.Password) {
			t.Errorf("credentials %q/%q are not the fake's", cfg.Username, cfg.Password)
		}
	})
	t.Run("service account key file", func(t *testing.T) {
		fake := fakecloud.NewGCP(t)
		fake.Env(t)
		fake.FailMetadata.Store(true) // the key file comes first
		t.Setenv("GOOGLE_APPLICATION_CREDENTIALS", fake.KeyFile(t))
		a, err := cloudauth.New(cloudauth.Options{Host: "gcr.io", Provider: "gcp"})
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := authorize(t, a)
		if err != nil {
			t.Fatal(err)
		}
		if cfg.Username != "oauth2accesstoken" || !fake.AccessTokens.Valid(cfg.Password) {
			t.Errorf("credentials %q/%q are not the fake's", cfg.Username, cfg.Password)
		}
	})
	t.Run("key file missing", func(t *testing.T) {
		fake := fakecloud.NewGCP(t)
		fake.Env(t)
		missing := filepath.Join(t.TempDir(), "nope.json")
		t.Setenv("GOOGLE_APPLICATION_CREDENTIALS", missing)
		a, err := cloudauth.New(cloudauth.Options{Host: "us.gcr.io", Provider: "gcp"})
		if err != nil {
			t.Fatal(err)
		}
		_, err = authorize(t, a)
		for _, w := range []string{"gcp credentials for us.gcr.io: no credentials from the credentials file " + missing + " (GOOGLE_APPLICATION_CREDENTIALS)", "service account key"} {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("error %v\nlacks %q", err, w)
			}
		}
	})
	t.Run("metadata server failing", func(t *testing.T) {
		fake := fakecloud.NewGCP(t)
		fake.Env(t)
		fake.FailMetadata.Store(true)
		a, err := cloudauth.New(cloudauth.Options{Host: "gcr.io", Provider: "gcp"})
		if err != nil {
			t.Fatal(err)
		}
		_, err = authorize(t, a)
		for _, w := range []string{"gcp credentials for gcr.io: getting an access token from Application Default Credentials", "metadata server", "workload identity"} {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("error %v\nlacks %q", err, w)
			}
		}
	})
}

// azureSetup starts the fake Entra ID and an ACR front with its
// /oauth2/exchange, and returns the transport that trusts the former and
// reaches the latter as acrHost(reg): provider azure sends its tokens to
// ACR host names only.
func azureSetup(t *testing.T) (*fakecloud.Azure, *fakecloud.Registry, http.RoundTripper) {
	fake := fakecloud.NewAzure(t)
	fake.WorkloadIdentityEnv(t)
	reg := fakecloud.NewRegistry(t, fakecloud.Bearer, func(user, pass string) string {
		if user != "00000000-0000-0000-0000-000000000000" {
			return "wrong user " + user
		}
		return fake.RefreshTokens.Check(pass)
	})
	reg.Exchange = fake.Exchange
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = &tls.Config{RootCAs: fake.Pool()}
	front, local := acrHost(reg), strings.TrimPrefix(reg.URL, "http://")
	var d net.Dialer
	tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		if addr == front {
			addr = local
		}
		return d.DialContext(ctx, network, addr)
	}
	return fake, reg, tr
}

// acrHost is the ACR host name azureSetup's transport reaches reg at.
func acrHost(reg *fakecloud.Registry) string {
	_, port, _ := strings.Cut(strings.TrimPrefix(reg.URL, "http://"), ":")
	return "fleet.azurecr.io:" + port
}

// TestAzure gets an Entra ID token by workload identity through
// azidentity, against the fake authority AZURE_AUTHORITY_HOST names, and
// exchanges it at the registry for an ACR refresh token.
func TestAzure(t *testing.T) {
	fake, reg, tr := azureSetup(t)
	host := acrHost(reg)
	secrets := &redact.Secrets{}
	a, err := cloudauth.New(cloudauth.Options{Host: host, Provider: "azure", Transport: tr, Insecure: true, Secrets: secrets})
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := authorize(t, a)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Username != "00000000-0000-0000-0000-000000000000" || !fake.RefreshTokens.Valid(cfg.Password) {
		t.Errorf("credentials %q/%q are not an ACR refresh token", cfg.Username, cfg.Password)
	}
	// Both the Entra ID token and the refresh token are registered.
	text := strings.Join(append(fake.AccessTokens.All(), fake.RefreshTokens.All()...), " ")
	if got := secrets.Text(text); strings.Contains(got, "entra-") || strings.Contains(got, "eyJ") {
		t.Errorf("secrets left %q", got)
	}
}

// TestAzureErrors checks that each failing step is named, with what to do,
// and that no token leaks even when the registry echoes one.
func TestAzureErrors(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T, fake *fakecloud.Azure)
		want  []string
	}{
		{
			name:  "federated token refused",
			setup: func(t *testing.T, fake *fakecloud.Azure) { fake.FederatedToken = "another-token" },
			want:  []string{"no credentials from workload identity (AZURE_CLIENT_ID, AZURE_TENANT_ID, AZURE_FEDERATED_TOKEN_FILE)", "AADSTS700213", "federated credential"},
		},
		{
			name:  "exchange refused",
			setup: func(t *testing.T, fake *fakecloud.Azure) { fake.FailExchange.Store(true) },
			want:  []string{"exchanging the Entra ID token (workload identity", "/oauth2/exchange: HTTP 401", "AcrPull"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fake, reg, tr := azureSetup(t)
			tc.setup(t, fake)
			host := acrHost(reg)
			a, err := cloudauth.New(cloudauth.Options{Host: host, Provider: "azure", Transport: tr, Insecure: true})
			if err != nil {
				t.Fatal(err)
			}
			_, err = authorize(t, a)
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q\nlacks %q", err, w)
				}
			}
			for _, tok := range fake.AccessTokens.All() {
				if strings.Contains(err.Error(), tok) {
					t.Errorf("error %q holds the Entra ID token", err)
				}
			}
		})
	}
}

// TestEchoedCredentials: a cloud endpoint that refuses what it was sent
// and repeats it in its error, as a careless or hostile one may, gets none
// of it into the error: what each SDK sends (a session token, a projected
// service-account token, a client secret, a refresh token, a signed
// assertion) is a secret as much as what it gets back.
func TestEchoedCredentials(t *testing.T) {
	const secret = "SEKRIT-sent-0123456789"
	for _, tc := range []struct {
		name string
		// setup starts the fake, in its echoing mode, and returns the
		// host, provider and transport to ask it with.
		setup func(t *testing.T) (host, provider string, tr http.RoundTripper)
		// sent are further values the SDK sends that the test cannot
		// know in advance: prefixes that must not appear.
		sent []string
	}{
		{"aws session token", func(t *testing.T) (string, string, http.RoundTripper) {
			fake := fakecloud.NewAWS(t)
			fake.Env(t)
			fake.Echo.Store(true)
			t.Setenv("AWS_ACCESS_KEY_ID", "AKIASTATICENV00009")
			t.Setenv("AWS_SECRET_ACCESS_KEY", "static-secret-9")
			t.Setenv("AWS_SESSION_TOKEN", secret)
			return ecrHost, "aws", nil
		}, nil},
		{"aws web identity token", func(t *testing.T) (string, string, http.RoundTripper) {
			fake := fakecloud.NewAWS(t)
			fake.Env(t)
			fake.Echo.Store(true)
			t.Setenv("AWS_ROLE_ARN", "arn:aws:iam::123456789012:role/imagebump")
			t.Setenv("AWS_WEB_IDENTITY_TOKEN_FILE", writeFile(t, secret+"\n"))
			return ecrHost, "aws", nil
		}, nil},
		{"azure federated token", func(t *testing.T) (string, string, http.RoundTripper) {
			fake, reg, tr := azureSetup(t)
			fake.Echo.Store(true)
			if err := os.WriteFile(os.Getenv("AZURE_FEDERATED_TOKEN_FILE"), []byte(secret), 0o600); err != nil {
				t.Fatal(err)
			}
			return acrHost(reg), "azure", tr
		}, nil},
		{"azure client secret", func(t *testing.T) (string, string, http.RoundTripper) {
			fake, reg, tr := azureSetup(t)
			fake.Echo.Store(true)
			t.Setenv("AZURE_FEDERATED_TOKEN_FILE", "")
			t.Setenv("AZURE_CLIENT_SECRET", secret)
			return acrHost(reg), "azure", tr
		}, nil},
		{"gcp service account assertion", func(t *testing.T) (string, string, http.RoundTripper) {
			fake := fakecloud.NewGCP(t)
			fake.Env(t)
			fake.Echo.Store(true)
			t.Setenv("GOOGLE_APPLICATION_CREDENTIALS", fake.KeyFile(t))
			return "gcr.io", "gcp", nil
		}, []string{"eyJ"}}, // the assertion is a JWT the library signs
		{"gcp user client secret and refresh token", func(t *testing.T) (string, string, http.RoundTripper) {
			fake := fakecloud.NewGCP(t)
			fake.Env(t)
			fake.Echo.Store(true)
			t.Setenv("GOOGLE_APPLICATION_CREDENTIALS", writeFile(t, `{"type": "authorized_user", "client_id": "cid.apps.googleusercontent.com", `+
				`"client_secret": "`+secret+`", "refresh_token": "1//refresh-`+secret+`", "token_uri": "`+fake.URL+`/token"}`))
			return "gcr.io", "gcp", nil
		}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			host, provider, tr := tc.setup(t)
			a, err := cloudauth.New(cloudauth.Options{Host: host, Provider: provider, Transport: tr, Insecure: true})
			if err != nil {
				t.Fatal(err)
			}
			_, err = authorize(t, a)
			if err == nil {
				t.Fatal("no error from an endpoint that refuses everything")
			}
			if !strings.Contains(err.Error(), provider+" credentials for "+host) || !strings.Contains(err.Error(), redact.Placeholder) {
				t.Errorf("error %q: want it to name the host and show the echo redacted", err)
			}
			for _, form := range append(redact.Encodings(secret), tc.sent...) {
				if strings.Contains(err.Error(), form) {
					t.Errorf("error %q holds %q", err, form)
				}
			}
		})
	}
}

// clock is a fake clock for the cache.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// TestRefresh follows one ECR token through its life on a fake clock, with
// the real SDK: cached, renewed before it expires, kept in use (with a
// warning) while a refresh fails, refused with a clear error once expired,
// and renewed again when the cloud recovers.
func TestRefresh(t *testing.T) {
	fake := fakecloud.NewAWS(t)
	fake.Env(t)
	fake.Passwords.TTL = time.Hour
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIASTATICENV00004")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "static-secret")
	clk := &clock{now: time.Now()}
	fake.Passwords.Now = clk.Now
	var logs bytes.Buffer
	a, err := cloudauth.New(cloudauth.Options{
		Host: ecrHost, Provider: "aws", Now: clk.Now,
		Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
	})
	if err != nil {
		t.Fatal(err)
	}
	pw := func() string {
		t.Helper()
		cfg, err := authorize(t, a)
		if err != nil {
			t.Fatalf("at +%v: %v", time.Until(clk.Now()).Round(time.Minute), err)
		}
		return cfg.Password
	}
	first := pw()
	clk.Add(50 * time.Minute)
	if got := pw(); got != first || fake.Passwords.Count() != 1 {
		t.Fatalf("token fetched again %v before expiry", 10*time.Minute)
	}
	clk.Add(6 * time.Minute) // 4 minutes left: inside the refresh margin
	second := pw()
	if second == first || fake.Passwords.Count() != 2 {
		t.Fatalf("token not renewed 4 minutes before expiry (%d fetches)", fake.Passwords.Count())
	}

	// The cloud fails: the cached token, good for 4 more minutes, stays.
	fake.FailECR.Store(true)
	clk.Add(56 * time.Minute)
	if got := pw(); got != second {
		t.Fatal("a failed refresh dropped a token still good")
	}
	if !strings.Contains(logs.String(), "refreshing cloud registry credentials failed") || !strings.Contains(logs.String(), "AccessDeniedException") {
		t.Errorf("no warning of the failed refresh in the log:\n%s", logs.String())
	}
	calls := len(fake.KeyIDs())
	if got := pw(); got != second || len(fake.KeyIDs()) != calls {
		t.Error("a failed refresh is retried at once, at every use")
	}

	// Past expiry: the error says so.
	clk.Add(5 * time.Minute)
	_, err = authorize(t, a)
	for _, w := range []string{"ecr:GetAuthorizationToken", "AccessDeniedException", "the token fetched before expired at"} {
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("error %v\nlacks %q", err, w)
		}
	}

	// Recovery, after the pause.
	fake.FailECR.Store(false)
	clk.Add(cloudauth.DefaultRetryAfter)
	if got := pw(); got == second || !fake.Passwords.Valid(got) {
		t.Error("no new token after the cloud recovered")
	}
	for _, p := range fake.Passwords.All() {
		if strings.Contains(logs.String(), p) {
			t.Error("the log holds a registry password")
		}
	}
}

// TestConcurrentUse checks that callers share one fetch.
func TestConcurrentUse(t *testing.T) {
	fake := fakecloud.NewAWS(t)
	fake.Env(t)
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIASTATICENV00005")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "static-secret")
	a, err := cloudauth.New(cloudauth.Options{Host: ecrHost, Provider: "aws"})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Go(func() {
			if _, err := a.AuthorizationContext(context.Background()); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if n := fake.Passwords.Count(); n != 1 {
		t.Errorf("%d tokens fetched, want 1", n)
	}
}

// TestCanceled checks that a canceled context stops a fetch and is not
// remembered as the cloud's failure.
func TestCanceled(t *testing.T) {
	fake := fakecloud.NewAWS(t)
	fake.Env(t)
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIASTATICENV00006")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "static-secret")
	a, err := cloudauth.New(cloudauth.Options{Host: ecrHost, Provider: "aws"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := a.AuthorizationContext(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("canceled: %v", err)
	}
	if _, err := authorize(t, a); err != nil {
		t.Errorf("after a canceled call: %v", err)
	}
	if got := fake.KeyIDs(); !slices.Equal(got, []string{"AKIASTATICENV00006"}) {
		t.Errorf("ECR calls signed by %q", got)
	}
}

// TestHungEndpoint: a credential endpoint that never answers (here the
// GKE metadata server) fails the fetch after Timeout, naming the cloud
// and what to check, and that failure is remembered from when the fetch
// ended: the next caller gets it at once, even when the fetch took longer
// than RetryAfter.
func TestHungEndpoint(t *testing.T) {
	fake := fakecloud.NewGCP(t) // for its environment: HOME, gcloud's folder
	fake.Env(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			t.Cleanup(func() { c.Close() }) // held open, never answered
		}
	}()
	t.Setenv("GCE_METADATA_HOST", ln.Addr().String())
	const timeout, retryAfter = 300 * time.Millisecond, 250 * time.Millisecond
	a, err := cloudauth.New(cloudauth.Options{Host: "gcr.io", Provider: "gcp", Timeout: timeout, RetryAfter: retryAfter})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err = authorize(t, a)
	took := time.Since(start)
	for _, w := range []string{"gcp credentials for gcr.io: no credentials from Google (its token endpoint, or the GCE/GKE metadata server) within 300ms", "a network policy", "fail at once"} {
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("error %v\nlacks %q", err, w)
		}
	}
	if took < timeout || took > timeout+2*time.Second {
		t.Errorf("the fetch took %v, want about %v", took, timeout)
	}
	start = time.Now()
	_, again := authorize(t, a)
	if again == nil || again.Error() != err.Error() || time.Since(start) > timeout/2 {
		t.Errorf("the next caller waited %v for %v; want the same error at once", time.Since(start), again)
	}
}
