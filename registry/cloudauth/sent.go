package cloudauth

import (
	"bytes"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"os"
	"strings"

	"github.com/imagebump/imagebump/internal/redact"
)

// What the clouds' SDKs send is as secret as what they get back: a client
// secret, a federated service-account token, a refresh token, a signed
// assertion, a session token. An endpoint that refuses one may echo it in
// its error, and the SDKs put that text in theirs. So every credential a
// request carries is added to the Secrets before it is sent, and every
// error is cleaned of them as it is of the tokens fetched.

// sentFields are the form fields of OAuth2 and STS requests that carry a
// credential.
var sentFields = []string{
	"client_secret", "client_assertion", "assertion", "refresh_token",
	"subject_token", "actor_token", "access_token", "password",
	"WebIdentityToken",
}

// sentHeaders are the headers that carry one: Authorization (of any
// scheme), Azure's managed identity header, AWS's session token.
var sentHeaders = []string{"Authorization", "X-Identity-Header", "X-Amz-Security-Token"}

// maxFormBody bounds the request body read for credentials: token
// requests are a few kilobytes.
const maxFormBody = 64 << 10

// recordingTransport adds the credentials of each request to the secrets
// (through remember, which keys them by name so that a rotated one
// replaces the one before; an absent one forgets nothing) and then sends
// it. The AWS SDK takes no RoundTripper of ours (see awsHTTPClient): its
// source registers what it sends itself.
type recordingTransport struct {
	next     http.RoundTripper
	remember func(name, value string)
}

func (t *recordingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	for _, h := range sentHeaders {
		for i, v := range req.Header.Values(h) {
			for j, s := range redact.AuthorizationSecrets(v) {
				t.remember(fmt.Sprintf("sent %s %d %d", h, i, j), s)
			}
		}
	}
	if req.Body == nil || req.Body == http.NoBody {
		return t.next.RoundTrip(req)
	}
	if mt, _, _ := mime.ParseMediaType(req.Header.Get("Content-Type")); mt != "application/x-www-form-urlencoded" {
		return t.next.RoundTrip(req)
	}
	body, err := io.ReadAll(io.LimitReader(req.Body, maxFormBody+1))
	if err != nil {
		req.Body.Close()
		return nil, err
	}
	// The transport must not change the caller's request: send a copy.
	r := req.Clone(req.Context())
	if len(body) > maxFormBody {
		// Not a token request: send it whole, read no further.
		r.Body = struct {
			io.Reader
			io.Closer
		}{io.MultiReader(bytes.NewReader(body), req.Body), req.Body}
		return t.next.RoundTrip(r)
	}
	req.Body.Close()
	if form, err := url.ParseQuery(string(body)); err == nil {
		for _, f := range sentFields {
			t.remember("sent "+f, form.Get(f))
		}
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	r.ContentLength = int64(len(body))
	return t.next.RoundTrip(r)
}

// rememberFileEnv adds the content of the file the variable names (a
// projected service-account token, which the SDK reads and sends) to the
// secrets under the variable's name. A file that cannot be read is the
// SDK's to report.
func rememberFileEnv(remember func(name, value string), variable string) {
	p := os.Getenv(variable)
	if p == "" {
		return
	}
	f, err := os.Open(p)
	if err != nil {
		return
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxFormBody))
	if err != nil {
		return
	}
	remember(variable, strings.TrimSpace(string(b)))
}

// rememberEnv adds the values of secret variables to the secrets.
func rememberEnv(remember func(name, value string), variables ...string) {
	for _, v := range variables {
		remember(v, os.Getenv(v))
	}
}
