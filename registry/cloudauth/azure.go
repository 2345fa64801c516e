package cloudauth

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/cloud"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azidentity"
	"github.com/google/go-containerregistry/pkg/authn"

	"github.com/imagebump/imagebump/internal/cloudhost"
)

// acrUser is the user name ACR expects with a refresh token as password,
// as `az acr login --expose-token` documents it.
const acrUser = "00000000-0000-0000-0000-000000000000"

// azureSource gets a Microsoft Entra ID token through azidentity (workload
// identity, a service principal from the environment, or managed
// identity) and exchanges it at the registry's /oauth2/exchange for an
// ACR refresh token, which the registry takes as a password.
//
// Why not azidentity's DefaultAzureCredential: it also runs the az, azd
// and PowerShell commands, and tries sources one after another so that
// its error is a list of every failure. This picks one source from the
// environment, as the DefaultAzureCredential would, and says which.
type azureSource struct {
	host       string
	info       cloudhost.Host
	insecure   bool              // the registry is plain HTTP (tests, mirrors)
	transport  http.RoundTripper // Entra ID
	registryRT http.RoundTripper // the registry's /oauth2/exchange
	cred       azcore.TokenCredential
	kind       string // which source cred is, for errors
	secrets    func(string)
}

// azureKinds names the credential sources, as errors say them.
const (
	azureWorkload = "workload identity (AZURE_CLIENT_ID, AZURE_TENANT_ID, AZURE_FEDERATED_TOKEN_FILE)"
	azureEnv      = "a service principal from the environment (AZURE_CLIENT_ID, AZURE_TENANT_ID with AZURE_CLIENT_SECRET or AZURE_CLIENT_CERTIFICATE_PATH)"
	azureManaged  = "managed identity"
)

func (s *azureSource) credential() error {
	if s.cred != nil {
		return nil
	}
	co := azcore.ClientOptions{Transport: &http.Client{Transport: s.transport}}
	if os.Getenv("AZURE_AUTHORITY_HOST") == "" {
		switch s.info.Cloud {
		case "china":
			co.Cloud = cloud.AzureChina
		case "usgov":
			co.Cloud = cloud.AzureGovernment
		}
	}
	var err error
	switch {
	case os.Getenv("AZURE_FEDERATED_TOKEN_FILE") != "":
		s.kind = azureWorkload
		// The authority is Entra ID's own or the one AZURE_AUTHORITY_HOST
		// names, which the operator chose: no need to ask
		// login.microsoftonline.com about it first.
		s.cred, err = azidentity.NewWorkloadIdentityCredential(&azidentity.WorkloadIdentityCredentialOptions{ClientOptions: co, DisableInstanceDiscovery: true})
	case os.Getenv("AZURE_CLIENT_SECRET") != "" || os.Getenv("AZURE_CLIENT_CERTIFICATE_PATH") != "":
		s.kind = azureEnv
		s.cred, err = azidentity.NewEnvironmentCredential(&azidentity.EnvironmentCredentialOptions{ClientOptions: co, DisableInstanceDiscovery: true})
	default:
		s.kind = azureManaged
		o := &azidentity.ManagedIdentityCredentialOptions{ClientOptions: co}
		if id := os.Getenv("AZURE_CLIENT_ID"); id != "" {
			s.kind = azureManaged + " (user-assigned, AZURE_CLIENT_ID)"
			o.ID = azidentity.ClientID(id)
		}
		s.cred, err = azidentity.NewManagedIdentityCredential(o)
	}
	if err != nil {
		s.cred = nil
		return s.credError(err)
	}
	return nil
}

func (s *azureSource) credError(err error) *Error {
	e := &Error{Provider: cloudhost.Azure, Host: s.host, Step: "no credentials from " + s.kind, Err: err}
	switch s.kind {
	case azureWorkload:
		e.Hint = "check the pod's azure.workload.identity/use label, its service account's client-id annotation, and the federated credential of that identity"
	case azureEnv:
		e.Hint = "check the service principal's variables"
	default:
		e.Hint = "tried " + s.kind + " because no AZURE_FEDERATED_TOKEN_FILE (workload identity) nor AZURE_CLIENT_SECRET or AZURE_CLIENT_CERTIFICATE_PATH (service principal) is set; on AKS enable workload identity for the pod, on a VM assign it a managed identity"
	}
	return e
}

// scope is the Entra ID scope of the token ACR exchanges: ACR's own
// audience, accepted even where a registry refuses ARM tokens; the
// sovereign clouds' ARM audience there.
func (s *azureSource) scope() string {
	switch s.info.Cloud {
	case "china":
		return cloud.AzureChina.Services[cloud.ResourceManager].Audience + "/.default"
	case "usgov":
		return cloud.AzureGovernment.Services[cloud.ResourceManager].Audience + "/.default"
	}
	return "https://containerregistry.azure.net/.default"
}

func (s *azureSource) fetch(ctx context.Context) (*token, error) {
	if err := s.credential(); err != nil {
		return nil, err
	}
	at, err := s.cred.GetToken(ctx, policy.TokenRequestOptions{Scopes: []string{s.scope()}})
	if err != nil {
		return nil, s.credError(err)
	}
	s.secrets(at.Token)
	refresh, err := s.exchange(ctx, at.Token)
	if err != nil {
		return nil, err
	}
	t := &token{
		cfg:     authn.AuthConfig{Username: acrUser, Password: refresh},
		secrets: []string{at.Token, refresh},
		expiry:  jwtExpiry(refresh),
	}
	if t.expiry.IsZero() {
		// ACR's refresh tokens are JWTs that live three hours; one that
		// is not gets the Entra ID token's lifetime.
		t.expiry = at.ExpiresOn
	}
	return t, nil
}

// exchange trades an Entra ID access token for an ACR refresh token.
func (s *azureSource) exchange(ctx context.Context, accessToken string) (string, error) {
	scheme := "https"
	if s.insecure {
		scheme = "http"
	}
	form := url.Values{
		"grant_type":   {"access_token"},
		"service":      {s.host},
		"access_token": {accessToken},
	}
	if tid := jwtClaim(accessToken, "tid"); tid != "" {
		form.Set("tenant", tid)
	} else if tid := os.Getenv("AZURE_TENANT_ID"); tid != "" {
		form.Set("tenant", tid)
	}
	u := scheme + "://" + s.host + "/oauth2/exchange"
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, strings.NewReader(form.Encode()))
	if err != nil {
		return "", s.exchangeError(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := (&http.Client{Transport: s.registryRT}).Do(req)
	if err != nil {
		return "", s.exchangeError(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if err != nil {
		return "", s.exchangeError(fmt.Errorf("reading the answer: %w", err))
	}
	if resp.StatusCode != http.StatusOK {
		return "", s.exchangeError(fmt.Errorf("HTTP %d: %s", resp.StatusCode, body))
	}
	var out struct {
		RefreshToken string `json:"refresh_token"`
	}
	if err := json.Unmarshal(body, &out); err != nil || out.RefreshToken == "" {
		return "", s.exchangeError(errors.New("the answer holds no refresh_token"))
	}
	return out.RefreshToken, nil
}

func (s *azureSource) exchangeError(err error) error {
	return &Error{Provider: cloudhost.Azure, Host: s.host, Step: "exchanging the Entra ID token (" + s.kind + ") for an ACR refresh token at " + s.host + "/oauth2/exchange", Err: err,
		Hint: "give the identity the AcrPull role (or a role with pull) on the registry, and check that the registry allows Entra ID authentication"}
}

// jwtClaim returns a string claim of a JWT's payload, unverified: it is
// used only to fill in a form field or to know when to refresh.
func jwtClaim(tok, claim string) string {
	v, _ := jwtClaims(tok)[claim].(string)
	return v
}

// jwtExpiry returns the exp claim of a JWT, or the zero time.
func jwtExpiry(tok string) time.Time {
	if exp, ok := jwtClaims(tok)["exp"].(float64); ok && exp > 0 {
		return time.Unix(int64(exp), 0)
	}
	return time.Time{}
}

func jwtClaims(tok string) map[string]any {
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		return nil
	}
	b, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(parts[1], "="))
	if err != nil {
		return nil
	}
	var m map[string]any
	if json.Unmarshal(b, &m) != nil {
		return nil
	}
	return m
}
