package fakecloud

import (
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// GCP fakes Google's credential endpoints on one server: the GCE metadata
// server's token (GET /computeMetadata/v1/instance/service-accounts/
// default/token, with Metadata-Flavor: Google) and project id, and the
// OAuth2 token endpoint a service-account key names as token_uri (POST
// /token with a JWT bearer assertion, whose RS256 signature it checks).
// Both issue AccessTokens.
type GCP struct {
	URL string

	// AccessTokens are the OAuth2 access tokens issued; a Registry front
	// checks them as the password of oauth2accesstoken.
	AccessTokens Tokens

	// FailMetadata makes the metadata server's token endpoint answer 500.
	FailMetadata atomic.Bool

	// Echo makes the token endpoint refuse every request with an error
	// that repeats the form it was sent (assertion, client secret,
	// refresh token), as a careless or hostile endpoint might.
	Echo atomic.Bool

	key *rsa.PrivateKey
}

// ServiceAccountEmail is the client_email of the fake's key file.
const ServiceAccountEmail = "imagebump@test-project.iam.gserviceaccount.com"

// NewGCP starts the fake; it stops when the test ends.
func NewGCP(t testing.TB) *GCP {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	g := &GCP{AccessTokens: Tokens{Prefix: "ya29.fake-"}, key: key}
	srv := httptest.NewServer(g)
	t.Cleanup(srv.Close)
	g.URL = srv.URL
	return g
}

// Env points ADC at nothing but the metadata server of the fake
// (GCE_METADATA_HOST: without it, the library would probe
// 169.254.169.254), with no key file and no gcloud credentials.
func (g *GCP) Env(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("GCE_METADATA_HOST", strings.TrimPrefix(g.URL, "http://"))
	t.Setenv("HOME", dir)
	t.Setenv("CLOUDSDK_CONFIG", filepath.Join(dir, "gcloud"))
	unset(t, "GOOGLE_APPLICATION_CREDENTIALS")
}

// KeyFile writes a service-account key file whose token_uri is the fake's
// and returns its path.
func (g *GCP) KeyFile(t *testing.T) string {
	der, err := x509.MarshalPKCS8PrivateKey(g.key)
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(map[string]string{
		"type":           "service_account",
		"project_id":     "test-project",
		"private_key_id": "key1",
		"private_key":    string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})),
		"client_email":   ServiceAccountEmail,
		"client_id":      "1",
		"token_uri":      g.URL + "/token",
	})
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "key.json")
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func (g *GCP) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/computeMetadata/v1/instance/service-accounts/default/token":
		if r.Header.Get("Metadata-Flavor") != "Google" {
			http.Error(w, "missing Metadata-Flavor", http.StatusForbidden)
			return
		}
		if g.FailMetadata.Load() {
			http.Error(w, "metadata server is failing", http.StatusInternalServerError)
			return
		}
		g.issue(w)
	case "/computeMetadata/v1/project/project-id":
		w.Write([]byte("test-project"))
	case "/token":
		if err := r.ParseForm(); err == nil && g.Echo.Load() {
			writeJSON(w, 400, "", map[string]string{"error": "invalid_grant", "error_description": "refused " + r.PostForm.Encode()})
			return
		}
		if r.PostForm.Get("grant_type") != "urn:ietf:params:oauth:grant-type:jwt-bearer" {
			writeJSON(w, 400, "", map[string]string{"error": "unsupported_grant_type"})
			return
		}
		if msg := g.checkAssertion(r.PostForm.Get("assertion"), "http://"+r.Host+"/token"); msg != "" {
			writeJSON(w, 400, "", map[string]string{"error": "invalid_grant", "error_description": msg})
			return
		}
		g.issue(w)
	default:
		http.Error(w, "not faked", http.StatusNotFound)
	}
}

func (g *GCP) issue(w http.ResponseWriter) {
	tok, exp := g.AccessTokens.Issue()
	writeJSON(w, 200, "", map[string]any{
		"access_token": tok,
		"expires_in":   int(time.Until(exp).Round(time.Second).Seconds()),
		"token_type":   "Bearer",
	})
}

// checkAssertion checks a service account's JWT: RS256 with the key's
// public half, issued by its email for the token endpoint; it returns
// what is wrong, or "".
func (g *GCP) checkAssertion(jwt, aud string) string {
	parts := strings.Split(jwt, ".")
	if len(parts) != 3 {
		return "assertion is not a JWT"
	}
	sig, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil {
		return "bad signature encoding"
	}
	sum := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	if rsa.VerifyPKCS1v15(&g.key.PublicKey, crypto.SHA256, sum[:], sig) != nil {
		return "signature does not verify"
	}
	b, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return "bad claims encoding"
	}
	var c struct {
		Iss   string `json:"iss"`
		Aud   string `json:"aud"`
		Scope string `json:"scope"`
		Exp   int64  `json:"exp"`
	}
	if json.Unmarshal(b, &c) != nil {
		return "bad claims"
	}
	switch {
	case c.Iss != ServiceAccountEmail:
		return "wrong issuer " + c.Iss
	case c.Aud != aud:
		return "wrong audience " + c.Aud
	case !strings.Contains(c.Scope, "https://www.googleapis.com/auth/cloud-platform"):
		return "scope lacks cloud-platform"
	case time.Unix(c.Exp, 0).Before(time.Now()):
		return "assertion expired"
	}
	return ""
}
