// Package fakecloud runs local fakes of the cloud endpoints that issue
// registry credentials, as their documentation describes them, so that
// tests can drive the real AWS, Google and Azure SDKs against them: AWS
// (ECR and ECR Public GetAuthorizationToken, STS AssumeRoleWithWebIdentity,
// the EKS Pod Identity agent), Google (the GCE metadata server and the
// OAuth2 token endpoint of a service-account key) and Microsoft Entra ID
// (OpenID discovery and the client-credentials token endpoint), and a
// registry front (Registry) that demands the credentials they issued, with
// ACR's /oauth2/exchange.
//
// Every token a fake issues expires after the TTL the test sets, and is
// refused after that, so a client that uses an expired token fails.
package fakecloud

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"sync"
	"time"
)

// Tokens issues random tokens that expire after TTL and checks them.
type Tokens struct {
	Prefix string        // put before each token, to tell them apart in failures
	TTL    time.Duration // zero: an hour
	// Now is the clock tokens are issued and checked by. Zero: time.Now.
	Now func() time.Time

	mu     sync.Mutex
	issued map[string]time.Time
	n      int
	log    []Issue
}

// Issue is one token issued: when, and when it expires.
type Issue struct{ At, Expires time.Time }

// Issues returns every token issued, in order.
func (t *Tokens) Issues() []Issue {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]Issue(nil), t.log...)
}

// Issue returns a new token and when it expires.
func (t *Tokens) Issue() (string, time.Time) {
	b := make([]byte, 18)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	tok := t.Prefix + base64.RawURLEncoding.EncodeToString(b)
	ttl := t.TTL
	if ttl == 0 {
		ttl = time.Hour
	}
	exp := t.now().Add(ttl)
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.issued == nil {
		t.issued = map[string]time.Time{}
	}
	t.issued[tok] = exp
	t.n++
	t.log = append(t.log, Issue{At: t.now(), Expires: exp})
	return tok, exp
}

func (t *Tokens) now() time.Time {
	if t.Now != nil {
		return t.Now()
	}
	return time.Now()
}

// Add records tok, issued elsewhere, as valid until exp.
func (t *Tokens) Add(tok string, exp time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.issued == nil {
		t.issued = map[string]time.Time{}
	}
	t.issued[tok] = exp
	t.n++
	t.log = append(t.log, Issue{At: t.now(), Expires: exp})
}

// Check reports whether tok was issued and has not expired: "ok",
// "expired" or "unknown".
func (t *Tokens) Check(tok string) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	exp, ok := t.issued[tok]
	switch {
	case !ok:
		return "unknown"
	case !t.now().Before(exp):
		return "expired"
	}
	return "ok"
}

// Valid reports whether tok was issued and has not expired.
func (t *Tokens) Valid(tok string) bool { return t.Check(tok) == "ok" }

// Count returns how many tokens were issued.
func (t *Tokens) Count() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.n
}

// All returns every token issued, for tests that search output for them.
func (t *Tokens) All() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []string
	for k := range t.issued {
		out = append(out, k)
	}
	return out
}

// JWT returns an unsigned JWT (alg none) with the given claims; Entra ID
// and ACR tokens are JWTs that clients read claims from without checking.
func JWT(claims map[string]any) string {
	b, err := json.Marshal(claims)
	if err != nil {
		panic(err)
	}
	enc := base64.RawURLEncoding
	return enc.EncodeToString([]byte(`{"alg":"none","typ":"JWT"}`)) + "." + enc.EncodeToString(b) + ".x"
}

func writeJSON(w http.ResponseWriter, status int, contentType string, v any) {
	if contentType == "" {
		contentType = "application/json"
	}
	w.Header().Set("Content-Type", contentType)
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
