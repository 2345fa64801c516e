package fakecloud

import (
	"crypto/x509"
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

// Azure fakes Microsoft Entra ID over TLS, as azidentity demands: a
// tenant's OpenID configuration (GET /TENANT/v2.0/.well-known/
// openid-configuration) and its token endpoint (POST /TENANT/oauth2/v2.0/
// token) for the client-credentials grant with a client assertion, which
// workload identity sends: the assertion must be FederatedToken. It issues
// AccessTokens, JWTs carrying the tenant in tid. Exchange is the handler of
// ACR's /oauth2/exchange for a Registry front, which issues RefreshTokens
// for valid AccessTokens.
type Azure struct {
	URL    string
	Server *httptest.Server // its Client trusts the fake's certificate

	Tenant, ClientID, FederatedToken string

	AccessTokens  Tokens
	RefreshTokens Tokens

	// FailExchange makes /oauth2/exchange answer 401.
	FailExchange atomic.Bool

	// Echo makes the token endpoint refuse every request with an error
	// that repeats the client secret and assertion it was sent, as a
	// careless or hostile endpoint might.
	Echo atomic.Bool
}

// NewAzure starts the fake; it stops when the test ends.
func NewAzure(t testing.TB) *Azure {
	a := &Azure{
		Tenant:         "72f988bf-0000-0000-0000-000000000001",
		ClientID:       "11111111-2222-3333-4444-555555555555",
		FederatedToken: "eyJfake-service-account-token",
		AccessTokens:   Tokens{Prefix: "entra-"},
		RefreshTokens:  Tokens{Prefix: "acr-"},
	}
	a.Server = httptest.NewTLSServer(http.HandlerFunc(a.entra))
	t.Cleanup(a.Server.Close)
	a.URL = a.Server.URL
	return a
}

// CertPEM returns the fake's TLS certificate, for a client's roots.
func (a *Azure) CertPEM() []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: a.Server.Certificate().Raw})
}

// Pool returns a certificate pool trusting the fake.
func (a *Azure) Pool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(a.Server.Certificate())
	return p
}

// WorkloadIdentityEnv sets what the AKS workload identity webhook sets,
// pointing the authority at the fake, and clears every other source.
func (a *Azure) WorkloadIdentityEnv(t *testing.T) {
	f := filepath.Join(t.TempDir(), "azure-identity-token")
	if err := os.WriteFile(f, []byte(a.FederatedToken), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"AZURE_CLIENT_SECRET", "AZURE_CLIENT_CERTIFICATE_PATH", "AZURE_USERNAME", "IDENTITY_ENDPOINT", "IDENTITY_HEADER", "MSI_ENDPOINT", "IMDS_ENDPOINT"} {
		unset(t, k)
	}
	t.Setenv("AZURE_AUTHORITY_HOST", a.URL+"/")
	t.Setenv("AZURE_CLIENT_ID", a.ClientID)
	t.Setenv("AZURE_TENANT_ID", a.Tenant)
	t.Setenv("AZURE_FEDERATED_TOKEN_FILE", f)
}

func (a *Azure) entra(w http.ResponseWriter, r *http.Request) {
	base := "https://" + r.Host + "/" + a.Tenant
	switch r.URL.Path {
	case "/" + a.Tenant + "/v2.0/.well-known/openid-configuration":
		writeJSON(w, 200, "", map[string]any{
			"token_endpoint":                base + "/oauth2/v2.0/token",
			"authorization_endpoint":        base + "/oauth2/v2.0/authorize",
			"issuer":                        base + "/v2.0",
			"device_authorization_endpoint": base + "/oauth2/v2.0/devicecode",
		})
	case "/" + a.Tenant + "/oauth2/v2.0/token":
		if err := r.ParseForm(); err != nil {
			writeJSON(w, 400, "", map[string]string{"error": "invalid_request"})
			return
		}
		f := r.PostForm
		if a.Echo.Load() {
			writeJSON(w, 401, "", map[string]string{"error": "invalid_client", "error_description": f.Get("client_secret") + f.Get("client_assertion") + " is refused"})
			return
		}
		switch {
		case f.Get("grant_type") != "client_credentials", f.Get("client_id") != a.ClientID:
			writeJSON(w, 400, "", map[string]string{"error": "invalid_client", "error_description": "unknown client " + f.Get("client_id")})
			return
		case f.Get("client_assertion_type") != "urn:ietf:params:oauth:client-assertion-type:jwt-bearer", f.Get("client_assertion") != a.FederatedToken:
			writeJSON(w, 401, "", map[string]string{"error": "invalid_client", "error_description": "AADSTS700213: no matching federated identity record"})
			return
		case !strings.HasPrefix(f.Get("scope"), "https://containerregistry.azure.net/.default"):
			writeJSON(w, 400, "", map[string]string{"error": "invalid_scope", "error_description": "scope " + f.Get("scope")})
			return
		}
		ttl := a.AccessTokens.TTL
		if ttl == 0 {
			ttl = time.Hour
		}
		exp := time.Now().Add(ttl)
		tok := JWT(map[string]any{"tid": a.Tenant, "aud": "https://containerregistry.azure.net", "exp": exp.Unix(), "n": time.Now().UnixNano()})
		a.AccessTokens.Add(tok, exp)
		writeJSON(w, 200, "", map[string]any{
			"token_type":     "Bearer",
			"expires_in":     int(ttl.Seconds()),
			"ext_expires_in": int(ttl.Seconds()),
			"access_token":   tok,
		})
	default:
		http.Error(w, "not faked", http.StatusNotFound)
	}
}

// Exchange serves ACR's POST /oauth2/exchange: an Entra ID access token of
// the fake's tenant for an ACR refresh token (a JWT with exp) for the
// registry named in service.
func (a *Azure) Exchange(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.ParseForm() != nil {
		writeJSON(w, 400, "", map[string]string{"error": "bad request"})
		return
	}
	f := r.PostForm
	switch {
	case a.FailExchange.Load():
		writeJSON(w, 401, "", map[string]any{"errors": []map[string]string{{"code": "UNAUTHORIZED", "message": "exchange refused"}}})
		return
	case f.Get("grant_type") != "access_token", f.Get("service") != r.Host, f.Get("tenant") != a.Tenant:
		writeJSON(w, 400, "", map[string]string{"error": "bad form: grant_type " + f.Get("grant_type") + ", service " + f.Get("service") + ", tenant " + f.Get("tenant")})
		return
	case !a.AccessTokens.Valid(f.Get("access_token")):
		writeJSON(w, 401, "", map[string]string{"error": "access token " + a.AccessTokens.Check(f.Get("access_token"))})
		return
	}
	ttl := a.RefreshTokens.TTL
	if ttl == 0 {
		ttl = 3 * time.Hour
	}
	exp := time.Now().Add(ttl)
	tok := JWT(map[string]any{"exp": exp.Unix(), "n": time.Now().UnixNano(), "grant_type": "refresh_token"})
	a.RefreshTokens.Add(tok, exp)
	writeJSON(w, 200, "", map[string]string{"refresh_token": tok})
}
