package registry

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/remote/transport"

	"github.com/imagebump/imagebump/internal/redact"
	"github.com/imagebump/imagebump/internal/secretfile"
)

func TestErrorText(t *testing.T) {
	tests := []struct {
		name string
		err  *Error
		want string
	}{
		{
			name: "rate limited",
			err:  &Error{Op: OpListTags, Repository: "ghcr.io/acme/app", Host: "ghcr.io", Kind: KindRateLimited, Status: 429, Attempts: 5, Err: errors.New("slow down")},
			want: "list tags for ghcr.io/acme/app: rate-limited by ghcr.io (HTTP 429) after 5 attempts: slow down; set a lower registries[].rateLimit for ghcr.io, or try again later",
		},
		{
			name: "platform missing from an index",
			err:  &Error{Op: OpResolveDigest, Repository: "ghcr.io/acme/app", Tag: "1.2.3", Platform: "linux/arm64", Host: "ghcr.io", Kind: KindNotFound, Err: &notFoundError{msg: "index has no platform linux/arm64"}},
			want: "resolve digest for ghcr.io/acme/app:1.2.3 (platform linux/arm64): index has no platform linux/arm64",
		},
		{
			name: "tag not found",
			err:  &Error{Op: OpResolveDigest, Repository: "ghcr.io/acme/app", Tag: "1.2.3", Host: "ghcr.io", Kind: KindNotFound, Status: 404, Err: errors.New("MANIFEST_UNKNOWN: manifest unknown")},
			want: "resolve digest for ghcr.io/acme/app:1.2.3: not found at ghcr.io (HTTP 404): MANIFEST_UNKNOWN: manifest unknown; the repository or tag does not exist, or the credentials for ghcr.io cannot see it",
		},
		{
			name: "repository not found",
			err:  &Error{Op: OpListTags, Repository: "ghcr.io/acme/app", Host: "ghcr.io", Kind: KindNotFound, Status: 404, Err: errors.New("NAME_UNKNOWN: repository name not known to registry")},
			want: "list tags for ghcr.io/acme/app: not found at ghcr.io (HTTP 404): NAME_UNKNOWN: repository name not known to registry; the repository does not exist, or the credentials for ghcr.io cannot see it",
		},
		{
			name: "401 with keychain credentials",
			err:  &Error{Op: OpListTags, Repository: "r.io/a", Host: "r.io", Kind: KindAuth, Status: 401, Attempts: 1, Err: errors.New("x")},
			want: "list tags for r.io/a: authentication failed at r.io (HTTP 401): x; check registries[].auth for r.io (or docker login r.io)",
		},
		{
			name: "403 with configured credentials",
			err:  &Error{Op: OpListTags, Repository: "r.io/a", Host: "r.io", Kind: KindAuth, Status: 403, Err: errors.New("x"), authKey: "usernameFile"},
			want: "list tags for r.io/a: access denied by r.io (HTTP 403): x; check registries[].auth for r.io",
		},
		{
			name: "missing secret file",
			err:  &Error{Op: OpListTags, Repository: "r.io/a", Host: "r.io", Kind: KindAuth, Err: &credentialError{key: "passwordFile", path: "/run/pw", err: &fs.PathError{Op: "open", Path: "/run/pw", Err: fs.ErrNotExist}}, authKey: "usernameFile"},
			want: "list tags for r.io/a: cannot read the secret file /run/pw: file does not exist; check registries[].auth.passwordFile for r.io",
		},
		{
			name: "empty token file",
			err:  &Error{Op: OpListTags, Repository: "r.io/a", Host: "r.io", Kind: KindAuth, Err: &credentialError{key: "tokenFile", path: "/run/tok", err: secretfile.ErrEmpty}, authKey: "tokenFile"},
			want: "list tags for r.io/a: cannot read the secret file /run/tok: file is empty; check registries[].auth.tokenFile for r.io",
		},
		{
			name: "broken docker config",
			err:  &Error{Op: OpListTags, Repository: "r.io/a", Host: "r.io", Kind: KindAuth, Err: &credentialError{key: "dockerConfig", path: "/c.json", err: errors.New("not a valid docker config.json")}, authKey: "dockerConfig"},
			want: "list tags for r.io/a: cannot read the docker config /c.json: not a valid docker config.json; check registries[].auth.dockerConfig for r.io",
		},
		{
			name: "keychain failure",
			err:  &Error{Op: OpListTags, Repository: "r.io/a", Host: "r.io", Kind: KindAuth, Err: fmt.Errorf("resolving: %w", &credentialError{path: "r.io", err: errors.New("helper exited 1")})},
			want: "list tags for r.io/a: cannot get credentials for r.io from the docker keychain: helper exited 1; check registries[].auth for r.io (or docker login r.io)",
		},
		{
			name: "plain HTTP refused",
			err:  &Error{Op: OpListTags, Repository: "r.io:5000/a", Host: "r.io:5000", Kind: KindTLS, Err: fmt.Errorf("pinging registry: %w", &plainHTTPError{host: "r.io:5000"})},
			want: "list tags for r.io:5000/a: insecure or failed connection to r.io:5000: pinging registry: refusing plain HTTP to r.io:5000: the host is not configured as insecure; add {host: r.io:5000, insecure: true} under registries: to allow plain HTTP",
		},
		{
			name: "HTTPS to a plain HTTP server",
			err:  &Error{Op: OpListTags, Repository: "r.io/a", Host: "r.io", Kind: KindTLS, Err: &url.Error{Op: "Get", URL: "https://r.io/v2/", Err: tls.RecordHeaderError{Msg: "first record does not look like a TLS handshake"}}},
			want: `list tags for r.io/a: insecure or failed connection to r.io: Get "https://r.io/v2/": tls: first record does not look like a TLS handshake; add {host: r.io, insecure: true} under registries: to allow plain HTTP`,
		},
		{
			name: "plain HTTP refused, in Flux's words",
			err:  &Error{Op: OpListTags, Repository: "r.io:5000/a", Host: "r.io:5000", Kind: KindTLS, fluxTerms: true, Err: &plainHTTPError{host: "r.io:5000"}},
			want: "list tags for r.io:5000/a: insecure or failed connection to r.io:5000: refusing plain HTTP to r.io:5000: the host is not configured as insecure; set spec.insecure: true on the ImageRepository objects of r.io:5000 to allow plain HTTP",
		},
		{
			name: "refused credentials, in Flux's words",
			err:  &Error{Op: OpListTags, Repository: "r.io/a", Host: "r.io", Kind: KindAuth, Status: 401, fluxTerms: true, Err: errors.New("UNAUTHORIZED")},
			want: "list tags for r.io/a: authentication failed at r.io (HTTP 401): UNAUTHORIZED; check the secretRef of the ImageRepository objects of r.io and where the secrets mapping (--flux-secrets) puts that Secret",
		},
		{
			name: "a cloud host without credentials, in Flux's words",
			err:  &Error{Op: OpListTags, Repository: "123456789012.dkr.ecr.eu-west-1.amazonaws.com/a", Host: "123456789012.dkr.ecr.eu-west-1.amazonaws.com", Kind: KindAuth, Status: 401, fluxTerms: true, Err: errors.New("UNAUTHORIZED")},
			want: "list tags for 123456789012.dkr.ecr.eu-west-1.amazonaws.com/a: authentication failed at 123456789012.dkr.ecr.eu-west-1.amazonaws.com (HTTP 401): UNAUTHORIZED; 123456789012.dkr.ecr.eu-west-1.amazonaws.com is an AWS ECR registry: set spec.provider: aws on its ImageRepository objects to use this process's aws credentials, or a secretRef",
		},
		{
			name: "a body's closing line break is no escape before the hint",
			err:  &Error{Op: OpListTags, Repository: "r.io/a", Host: "r.io", Kind: KindServer, Status: 503, Err: errors.New("GET https://r.io/v2/a/tags/list: unexpected status code 503 Service Unavailable: down\n")},
			want: "list tags for r.io/a: server error at r.io (HTTP 503): GET https://r.io/v2/a/tags/list: unexpected status code 503 Service Unavailable: down; r.io is failing on its side; try again later",
		},
		{
			name: "unknown certificate authority",
			err:  &Error{Op: OpListTags, Repository: "r.io/a", Host: "r.io", Kind: KindTLS, Err: &url.Error{Op: "Get", URL: "https://r.io/v2/", Err: &tls.CertificateVerificationError{Err: x509.UnknownAuthorityError{}}}},
			want: `list tags for r.io/a: insecure or failed connection to r.io: Get "https://r.io/v2/": tls: failed to verify certificate: x509: certificate signed by unknown authority; set registries[].caFile for r.io`,
		},
		{
			name: "credentials in URLs are redacted",
			err:  &Error{Op: OpListTags, Repository: "r.io/a", Host: "r.io", Kind: KindNetwork, Attempts: 3, Err: errors.New(`Get "https://bob:hunter2@r.io/v2/a/tags/list?n=10&access_token=tok": EOF`)},
			want: `list tags for r.io/a: cannot reach r.io after 3 attempts: Get "https://r.io/v2/a/tags/list?access_token=REDACTED&n=10": EOF; check that r.io is reachable from here (name, port, firewall, HTTPS_PROXY/NO_PROXY)`,
		},
		{
			name: "canceled",
			err:  &Error{Op: OpListTags, Repository: "r.io/a", Host: "r.io", Kind: KindCanceled, Err: context.Canceled},
			want: "list tags for r.io/a: canceled: context canceled",
		},
		{
			name: "long cause is cut",
			err:  &Error{Op: OpListTags, Repository: "r.io/a", Host: "r.io", Kind: KindServer, Status: 502, Err: errors.New(strings.Repeat("x", 2000))},
			want: "list tags for r.io/a: server error at r.io (HTTP 502): " + strings.Repeat("x", maxCauseLen) + "...; r.io is failing on its side; try again later",
		},
		{
			name: "long cause is cut before the hint",
			err:  &Error{Op: OpListTags, Repository: "r.io/a", Host: "r.io", Kind: KindRateLimited, Status: 429, Err: errors.New(strings.Repeat("x", 2000))},
			want: "list tags for r.io/a: rate-limited by r.io (HTTP 429): " + strings.Repeat("x", maxCauseLen) + "...; set a lower registries[].rateLimit for r.io, or try again later",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.err.Error(); got != tt.want {
				t.Errorf("Error()\n got %q\nwant %q", got, tt.want)
			}
		})
	}
}

func TestErrorUnwrapAndKindOf(t *testing.T) {
	cause := errors.New("cause")
	err := fmt.Errorf("outer: %w", &Error{Kind: KindTimeout, Err: cause})
	if !errors.Is(err, cause) {
		t.Error("errors.Is does not reach the cause through *Error")
	}
	if got := KindOf(err); got != KindTimeout {
		t.Errorf("KindOf = %v, want %v", got, KindTimeout)
	}
	if got := KindOf(errors.New("plain")); got != KindUnknown {
		t.Errorf("KindOf(plain error) = %v, want %v", got, KindUnknown)
	}
}

func TestKindString(t *testing.T) {
	want := map[Kind]string{
		KindAuth: "auth", KindNotFound: "not found", KindRateLimited: "rate limited", KindNetwork: "network",
		KindTimeout: "timeout", KindServer: "server", KindBadResponse: "bad response", KindCanceled: "canceled",
		KindTLS: "tls", KindInvalid: "invalid", KindLimit: "limit", KindUnknown: "unknown", Kind(99): "kind(99)",
	}
	for k, w := range want {
		if got := k.String(); got != w {
			t.Errorf("Kind(%d).String() = %q, want %q", int(k), got, w)
		}
	}
}

func statusErr(code int, codes ...transport.ErrorCode) error {
	e := &transport.Error{StatusCode: code}
	for _, c := range codes {
		e.Errors = append(e.Errors, transport.Diagnostic{Code: c})
	}
	return e
}

func TestClassify(t *testing.T) {
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	expired, cancel2 := context.WithTimeout(context.Background(), 0)
	defer cancel2()
	live := context.Background()
	urlErr := func(err error) error { return &url.Error{Op: "Get", URL: "https://r.io/v2/", Err: err} }

	tests := []struct {
		name string
		ctx  context.Context
		err  error
		want verdict
	}{
		{name: "parent canceled", ctx: canceled, err: urlErr(context.Canceled), want: verdict{kind: KindCanceled}},
		{name: "parent deadline", ctx: expired, err: urlErr(context.DeadlineExceeded), want: verdict{kind: KindTimeout}},
		{name: "401", ctx: live, err: statusErr(401), want: verdict{kind: KindAuth, status: 401}},
		{name: "403", ctx: live, err: statusErr(403), want: verdict{kind: KindAuth, status: 403}},
		{name: "404", ctx: live, err: statusErr(404), want: verdict{kind: KindNotFound, status: 404}},
		{name: "NAME_UNKNOWN on 400", ctx: live, err: statusErr(400, transport.NameUnknownErrorCode), want: verdict{kind: KindNotFound, status: 400}},
		{name: "TOOMANYREQUESTS on 503", ctx: live, err: statusErr(503, transport.TooManyRequestsErrorCode), want: verdict{kind: KindRateLimited, status: 503, retry: true}},
		{name: "429", ctx: live, err: statusErr(429), want: verdict{kind: KindRateLimited, status: 429, retry: true}},
		{name: "500", ctx: live, err: statusErr(500), want: verdict{kind: KindServer, status: 500, retry: true}},
		{name: "501", ctx: live, err: statusErr(501), want: verdict{kind: KindServer, status: 501}},
		{name: "418", ctx: live, err: statusErr(418), want: verdict{kind: KindBadResponse, status: 418}},
		{name: "wrapped status", ctx: live, err: fmt.Errorf("pinging: %w", statusErr(502)), want: verdict{kind: KindServer, status: 502, retry: true}},
		{name: "request timeout", ctx: live, err: &timeoutError{err: context.DeadlineExceeded}, want: verdict{kind: KindTimeout, retry: true}},
		// As the transport returns them through http.Client, whose
		// url.Error asks its cause for Timeout directly; beside the
		// refused plain HTTP fallback of a ping, as ggcr joins them.
		{name: "TLS handshake timeout", ctx: live, err: fmt.Errorf("pinging registry: %w", errors.Join(urlErr(&noAnswerError{err: handshakeTimeout{}}), &plainHTTPError{host: "r.io"})), want: verdict{kind: KindTimeout, retry: true}},
		{name: "request timeout through url.Error", ctx: live, err: errors.Join(urlErr(&noAnswerError{err: &timeoutError{err: context.DeadlineExceeded}}), &plainHTTPError{host: "r.io"}), want: verdict{kind: KindTimeout, retry: true}},
		{name: "connection refused", ctx: live, err: urlErr(&net.OpError{Op: "dial", Err: syscall.ECONNREFUSED}), want: verdict{kind: KindNetwork, retry: true}},
		{name: "connection reset", ctx: live, err: urlErr(syscall.ECONNRESET), want: verdict{kind: KindNetwork, retry: true}},
		{name: "EOF", ctx: live, err: urlErr(io.EOF), want: verdict{kind: KindNetwork, retry: true}},
		{name: "unknown host", ctx: live, err: urlErr(&net.DNSError{Err: "no such host", Name: "r.io", IsNotFound: true}), want: verdict{kind: KindNetwork}},
		{name: "DNS timeout", ctx: live, err: urlErr(&net.DNSError{Err: "timeout", Name: "r.io", IsTimeout: true}), want: verdict{kind: KindTimeout, retry: true}},
		{name: "truncated body", ctx: live, err: fmt.Errorf("reading: %w", io.ErrUnexpectedEOF), want: verdict{kind: KindBadResponse, retry: true}},
		{name: "bad JSON", ctx: live, err: &badResponseError{what: "decoding", err: errors.New("x")}, want: verdict{kind: KindBadResponse}},
		{name: "unknown CA", ctx: live, err: urlErr(x509.UnknownAuthorityError{}), want: verdict{kind: KindTLS}},
		{name: "plain HTTP refused", ctx: live, err: &plainHTTPError{host: "r.io"}, want: verdict{kind: KindTLS}},
		{name: "credential file", ctx: live, err: &credentialError{key: "passwordFile", path: "/p"}, want: verdict{kind: KindAuth}},
		{name: "invalid", ctx: live, err: &invalidError{msg: "x"}, want: verdict{kind: KindInvalid}},
		{name: "unknown error", ctx: live, err: errors.New("weird"), want: verdict{kind: KindBadResponse}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := classify(tt.ctx, tt.err); got != tt.want {
				t.Errorf("classify(%v) = %+v, want %+v", tt.err, got, tt.want)
			}
		})
	}
}

// TestNoCredentialsInErrors makes a request fail with credentials in the
// URL and checks that the error text does not carry them.
func TestNoCredentialsInErrors(t *testing.T) {
	host := newRegistry(t, func(http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/v2/" {
				return
			}
			http.Redirect(w, r, "http://user:pa55word@127.0.0.1:1/x?X-Amz-Signature=s3cr3t", http.StatusFound)
		})
	})
	c := newClient(t, Options{MaxRetries: -1}, host)
	_, err := c.Tags(context.Background(), host+"/acme/app")
	if err == nil {
		t.Fatal("Tags succeeded, want an error")
	}
	for _, secret := range []string{"pa55word", "s3cr3t"} {
		if strings.Contains(err.Error(), secret) {
			t.Errorf("error %q contains %q", err, secret)
		}
	}
	if !strings.Contains(err.Error(), "REDACTED") {
		t.Errorf("error %q does not show the redacted URL", err)
	}
}

// TestErrorTextIsInert checks the last line of defence of Error's text:
// secrets the Client holds are removed, control characters a server sent
// are escaped, and the cause is cut short.
func TestErrorTextIsInert(t *testing.T) {
	secrets := &redact.Secrets{}
	secrets.Set("password", "hunter22")
	tests := []struct {
		name  string
		cause string
		want  string
	}{
		{name: "secret", cause: "bad password hunter22", want: "bad password REDACTED"},
		{name: "terminal escape", cause: "\x1b[2J\x1b[31mowned", want: `\x1b[2J\x1b[31mowned`},
		{name: "forged line", cause: "x\nlevel=ERROR msg=forged", want: `x\nlevel=ERROR msg=forged`},
		{name: "invalid UTF-8", cause: "a\xffb", want: `a\xffb`},
		{name: "quotes kept", cause: `Get "https://h.io/": EOF`, want: `Get "https://h.io/": EOF`},
		{name: "long", cause: strings.Repeat("é", 400), want: strings.Repeat("é", 300) + "..."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := &Error{Op: OpListTags, Repository: "r.io/a", Host: "r.io", Kind: KindBadResponse, Err: errors.New(tt.cause), secrets: secrets}
			got := e.Error()
			want := "list tags for r.io/a: bad response from r.io: " + tt.want + "; r.io sent something that is not a registry API answer; check that it is an OCI registry (and any proxy in between)"
			if got != want {
				t.Errorf("Error() =\n%q\nwant\n%q", got, want)
			}
		})
	}
}

func TestKindLimitText(t *testing.T) {
	e := &Error{Op: OpListTags, Repository: "r.io/a", Host: "r.io", Kind: KindLimit, Err: &limitError{setting: "maxPages", msg: "still listing after 3 pages (30 tags) and the registry announces more"}}
	want := "list tags for r.io/a: too much from r.io: still listing after 3 pages (30 tags) and the registry announces more; raise registries[].maxPages for r.io if the repository really is that large or slow; a registry that never stops listing is broken"
	if got := e.Error(); got != want {
		t.Errorf("Error() =\n%q\nwant\n%q", got, want)
	}
}

// handshakeTimeout stands for net/http's TLS handshake timeout error, a
// net.Error whose Timeout is true.
type handshakeTimeout struct{}

func (handshakeTimeout) Error() string   { return "net/http: TLS handshake timeout" }
func (handshakeTimeout) Timeout() bool   { return true }
func (handshakeTimeout) Temporary() bool { return true }
