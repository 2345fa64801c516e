package fakecloud

import (
	"encoding/base64"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// AWS fakes the AWS endpoints behind ECR credentials on one server: ECR's
// and ECR Public's GetAuthorizationToken (JSON 1.1 protocol, SigV4 signed),
// STS AssumeRoleWithWebIdentity (query protocol, unsigned) and the EKS Pod
// Identity agent's credentials endpoint (GET /pod-identity, with the
// token file's content as Authorization).
type AWS struct {
	URL string

	// Passwords are the registry passwords GetAuthorizationToken issues
	// (user AWS); a Registry front checks them.
	Passwords Tokens

	// WebIdentityToken and PodIdentityToken are what STS and the Pod
	// Identity agent demand; the temporary keys they hand out are
	// WebIdentityKeyID and PodIdentityKeyID.
	WebIdentityToken, PodIdentityToken string

	// FailECR makes GetAuthorizationToken answer AccessDeniedException;
	// FailECRWith, when set, with that error code (ExpiredTokenException,
	// say).
	FailECR     atomic.Bool
	FailECRWith atomic.Pointer[string]

	// Echo makes GetAuthorizationToken and STS refuse every request with
	// an error that repeats the session token or web identity token they
	// were sent, as a careless or hostile endpoint might.
	Echo atomic.Bool

	mu       sync.Mutex
	keyIDs   []string // access key ids of signed ECR calls, in order
	registry []string // registryIds asked for
}

// The access key ids the fake's STS and Pod Identity agent hand out.
const (
	WebIdentityKeyID = "ASIAWEBIDENTITY0001"
	PodIdentityKeyID = "ASIAPODIDENTITY0001"
)

// NewAWS starts the fake; it stops when the test ends.
func NewAWS(t testing.TB) *AWS {
	a := &AWS{Passwords: Tokens{Prefix: "ecrpw-"}}
	srv := httptest.NewServer(a)
	t.Cleanup(srv.Close)
	a.URL = srv.URL
	return a
}

// Env sets the variables that point the AWS SDK at the fake, with no
// credentials of its own and no EC2 metadata (which would be a request to
// 169.254.169.254), and isolates it from the shared config of whoever
// runs the test.
func (a *AWS) Env(t *testing.T) {
	dir := t.TempDir()
	for k, v := range map[string]string{
		"AWS_ENDPOINT_URL_ECR":        a.URL,
		"AWS_ENDPOINT_URL_ECR_PUBLIC": a.URL,
		"AWS_ENDPOINT_URL_STS":        a.URL,
		"AWS_EC2_METADATA_DISABLED":   "true",
		"AWS_CONFIG_FILE":             dir + "/config",
		"AWS_SHARED_CREDENTIALS_FILE": dir + "/credentials",
		"HOME":                        dir,
		"AWS_MAX_ATTEMPTS":            "1",
	} {
		t.Setenv(k, v)
	}
	for _, k := range []string{"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE", "AWS_DEFAULT_PROFILE",
		"AWS_ROLE_ARN", "AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_CONTAINER_CREDENTIALS_FULL_URI", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
		"AWS_CONTAINER_AUTHORIZATION_TOKEN", "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE", "AWS_REGION", "AWS_DEFAULT_REGION", "AWS_ENDPOINT_URL"} {
		unset(t, k)
	}
}

// unset removes an environment variable for the test, restoring it after.
func unset(t *testing.T, k string) {
	t.Setenv(k, "")
	os.Unsetenv(k)
}

// KeyIDs returns the access key ids that signed the ECR calls, in order.
func (a *AWS) KeyIDs() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.keyIDs)
}

// RegistryIDs returns the registryIds the ECR calls asked for.
func (a *AWS) RegistryIDs() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.registry)
}

var sigV4 = regexp.MustCompile(`^AWS4-HMAC-SHA256 Credential=([A-Z0-9]+)/[0-9]{8}/([a-z0-9-]+)/([a-z-]+)/aws4_request, SignedHeaders=[a-z0-9;-]+, Signature=[0-9a-f]{64}$`)

func (a *AWS) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.Method == http.MethodGet && r.URL.Path == "/pod-identity":
		a.podIdentity(w, r)
	case r.Header.Get("X-Amz-Target") != "":
		a.ecr(w, r)
	case r.Method == http.MethodPost:
		a.sts(w, r)
	default:
		http.Error(w, "not faked", http.StatusNotFound)
	}
}

func (a *AWS) ecr(w http.ResponseWriter, r *http.Request) {
	const ct = "application/x-amz-json-1.1"
	target := r.Header.Get("X-Amz-Target")
	var service string
	switch target {
	case "AmazonEC2ContainerRegistry_V20150921.GetAuthorizationToken":
		service = "ecr"
	case "SpencerFrontendService.GetAuthorizationToken":
		service = "ecr-public"
	default:
		writeJSON(w, 400, ct, map[string]string{"__type": "UnknownOperationException", "message": target})
		return
	}
	m := sigV4.FindStringSubmatch(r.Header.Get("Authorization"))
	if m == nil || m[3] != service {
		writeJSON(w, 403, ct, map[string]string{"__type": "MissingAuthenticationTokenException", "message": "the request is not signed with SigV4 for " + service})
		return
	}
	var in struct {
		RegistryIDs []string `json:"registryIds"`
	}
	_ = json.NewDecoder(r.Body).Decode(&in)
	a.mu.Lock()
	a.keyIDs = append(a.keyIDs, m[1])
	a.registry = append(a.registry, in.RegistryIDs...)
	a.mu.Unlock()
	if a.Echo.Load() {
		writeJSON(w, 400, ct, map[string]string{"__type": "UnrecognizedClientException", "message": "bad session token " + r.Header.Get("X-Amz-Security-Token")})
		return
	}
	if code := a.FailECRWith.Load(); code != nil {
		writeJSON(w, 400, ct, map[string]string{"__type": *code, "message": "refused: " + *code})
		return
	}
	if a.FailECR.Load() {
		writeJSON(w, 400, ct, map[string]string{"__type": "AccessDeniedException", "message": "User: arn:aws:sts::123456789012:assumed-role/test is not authorized to perform: ecr:GetAuthorizationToken"})
		return
	}
	pw, exp := a.Passwords.Issue()
	data := map[string]any{
		"authorizationToken": base64.StdEncoding.EncodeToString([]byte("AWS:" + pw)),
		"expiresAt":          float64(exp.UnixMilli()) / 1000,
	}
	if service == "ecr" {
		data["proxyEndpoint"] = "https://registry"
		writeJSON(w, 200, ct, map[string]any{"authorizationData": []any{data}})
		return
	}
	writeJSON(w, 200, ct, map[string]any{"authorizationData": data})
}

func (a *AWS) sts(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil || r.PostForm.Get("Action") != "AssumeRoleWithWebIdentity" {
		http.Error(w, "not faked", http.StatusBadRequest)
		return
	}
	if a.Echo.Load() {
		w.Header().Set("Content-Type", "text/xml")
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprintf(w, `<ErrorResponse><Error><Type>Sender</Type><Code>InvalidIdentityToken</Code><Message>bad web identity token %s</Message></Error><RequestId>1</RequestId></ErrorResponse>`, r.PostForm.Get("WebIdentityToken"))
		return
	}
	if a.WebIdentityToken == "" || r.PostForm.Get("WebIdentityToken") != a.WebIdentityToken || r.PostForm.Get("RoleArn") == "" {
		w.Header().Set("Content-Type", "text/xml")
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprint(w, `<ErrorResponse><Error><Type>Sender</Type><Code>InvalidIdentityToken</Code><Message>bad web identity token</Message></Error><RequestId>1</RequestId></ErrorResponse>`)
		return
	}
	type creds struct {
		AccessKeyID     string `xml:"AccessKeyId"`
		SecretAccessKey string `xml:"SecretAccessKey"`
		SessionToken    string `xml:"SessionToken"`
		Expiration      string `xml:"Expiration"`
	}
	var out struct {
		XMLName xml.Name `xml:"AssumeRoleWithWebIdentityResponse"`
		Result  struct {
			Credentials creds `xml:"Credentials"`
			User        struct {
				Arn string `xml:"Arn"`
				ID  string `xml:"AssumedRoleId"`
			} `xml:"AssumedRoleUser"`
		} `xml:"AssumeRoleWithWebIdentityResult"`
	}
	out.Result.Credentials = creds{WebIdentityKeyID, "web-identity-secret", "web-identity-session", time.Now().Add(time.Hour).UTC().Format(time.RFC3339)}
	out.Result.User.Arn = r.PostForm.Get("RoleArn")
	out.Result.User.ID = "AROA:test"
	w.Header().Set("Content-Type", "text/xml")
	_ = xml.NewEncoder(w).Encode(out)
}

func (a *AWS) podIdentity(w http.ResponseWriter, r *http.Request) {
	if a.PodIdentityToken == "" || strings.TrimSpace(r.Header.Get("Authorization")) != a.PodIdentityToken {
		writeJSON(w, 401, "", map[string]string{"code": "AccessDeniedException", "message": "bad pod identity token"})
		return
	}
	writeJSON(w, 200, "", map[string]string{
		"AccessKeyId":     PodIdentityKeyID,
		"SecretAccessKey": "pod-identity-secret",
		"Token":           "pod-identity-session",
		"Expiration":      time.Now().Add(time.Hour).UTC().Format(time.RFC3339),
	})
}
