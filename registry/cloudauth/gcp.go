package cloudauth

import (
	"context"
	"net/http"
	"os"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"golang.org/x/oauth2"
	"golang.org/x/oauth2/google"

	"github.com/imagebump/imagebump/internal/cloudhost"
)

// gcpScope is the OAuth2 scope Artifact Registry and Container Registry
// accept.
const gcpScope = "https://www.googleapis.com/auth/cloud-platform"

// gcpSource gets OAuth2 access tokens from Google's Application Default
// Credentials and hands them to the registry as the password of the user
// oauth2accesstoken.
//
// Why not go-containerregistry's pkg/v1/google keychain: it looks the
// credentials up once per process, turns every failure into anonymous
// access (so a missing credential shows up as a 401 that names nothing),
// and falls back to running the gcloud command. The ADC lookup it wraps
// (golang.org/x/oauth2/google) is what this uses, directly.
type gcpSource struct {
	host      string
	timeout   time.Duration // of each request
	transport http.RoundTripper
	ts        oauth2.TokenSource // found on first use, then kept: it caches the token

	// finding is closed when a lookup of the credentials, started by a
	// fetch and run on its own (the library takes no deadline for it),
	// has set found or findErr. A fetch that gives up waiting leaves it
	// running, for the next fetch to wait on.
	finding chan struct{}
	found   *google.Credentials
	findErr error
}

// caches implements cachingSource: the token source renews its token ten
// seconds before it expires (the library's own margin), and answers from
// memory until then.
func (s *gcpSource) caches() bool { return s.ts != nil }

func (s *gcpSource) fetch(ctx context.Context) (*token, error) {
	if s.ts == nil {
		if err := s.find(ctx); err != nil {
			return nil, err
		}
	}
	tok, err := tokenWithContext(ctx, s.ts)
	if err != nil {
		e := gcpCredentialsError(s.host, err)
		e.Step = "getting an access token from " + gcpSourceName()
		return nil, e
	}
	t := &token{
		cfg:     authn.AuthConfig{Username: "oauth2accesstoken", Password: tok.AccessToken},
		expiry:  tok.Expiry,
		secrets: []string{tok.AccessToken, tok.RefreshToken},
	}
	return t, nil
}

// find looks Application Default Credentials up and keeps their token
// source, giving up when ctx ends. The lookup may ask the metadata server
// (for the project), and takes no deadline: it runs on, and the next
// fetch waits for it rather than starting another. Calls are serialised,
// as fetches are.
func (s *gcpSource) find(ctx context.Context) error {
	if s.finding == nil {
		done := make(chan struct{})
		s.finding = done
		// The token source keeps this context for every later refresh:
		// give it one that outlives the request, carrying our client.
		bg := context.WithValue(context.WithoutCancel(ctx), oauth2.HTTPClient, &http.Client{Transport: s.transport, Timeout: s.timeout})
		go func() {
			s.found, s.findErr = google.FindDefaultCredentialsWithParams(bg, google.CredentialsParams{Scopes: []string{gcpScope}})
			close(done)
		}()
	}
	select {
	case <-s.finding:
	case <-ctx.Done():
		return ctx.Err()
	}
	s.finding = nil // a failed lookup is tried again by the next fetch
	if s.findErr != nil {
		return gcpCredentialsError(s.host, s.findErr)
	}
	s.ts = s.found.TokenSource
	return nil
}

// tokenWithContext calls ts.Token, which takes no context, and gives up
// when ctx ends (the call itself goes on, bounded by the HTTP client's
// timeout, and its token is kept by ts for the next call).
func tokenWithContext(ctx context.Context, ts oauth2.TokenSource) (*oauth2.Token, error) {
	type result struct {
		tok *oauth2.Token
		err error
	}
	ch := make(chan result, 1)
	go func() {
		tok, err := ts.Token()
		ch <- result{tok, err}
	}()
	select {
	case r := <-ch:
		return r.tok, r.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// gcpSourceName names the ADC source in use, as far as the environment
// tells.
func gcpSourceName() string {
	if f := os.Getenv("GOOGLE_APPLICATION_CREDENTIALS"); f != "" {
		return "the credentials file " + f + " (GOOGLE_APPLICATION_CREDENTIALS)"
	}
	return "Application Default Credentials (gcloud's application_default_credentials.json, or the metadata server)"
}

func gcpCredentialsError(host string, err error) *Error {
	e := &Error{Provider: cloudhost.GCP, Host: host, Err: err}
	if f := os.Getenv("GOOGLE_APPLICATION_CREDENTIALS"); f != "" {
		e.Step = "no credentials from " + gcpSourceName()
		e.Hint = "check that the file is readable and holds a service account key or a workload identity federation config"
		return e
	}
	e.Step = "no credentials: tried GOOGLE_APPLICATION_CREDENTIALS, gcloud's application_default_credentials.json and the GCE/GKE metadata server (workload identity)"
	e.Hint = "on GKE enable workload identity for the pod's service account, on GCE give the VM a service account; elsewhere set GOOGLE_APPLICATION_CREDENTIALS to a service account key file or a workload identity federation config"
	return e
}
