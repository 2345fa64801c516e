package testregistry

import (
	"crypto/ecdsa"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"crypto/tls"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

const (
	// tokenService is the service name the registry and its token server
	// agree on (the JWT's audience).
	tokenService = "imagebump-testregistry"
	// tokenIssuer is the issuer the registry trusts.
	tokenIssuer = "imagebump-testregistry-token-server"
	// tokenLifetime is how long an issued token is valid.
	tokenLifetime = 15 * time.Minute
)

// tokenServer issues bearer tokens as distribution's token auth expects:
// an ES256 JWT whose x5c header carries a certificate issued by the test CA,
// granting every scope a client asks for once it has shown the right
// username and password.
type tokenServer struct {
	username, password string
	signer             *issued
	chain              []string // x5c: base64 (standard) DER, leaf first
}

// access is one entry of the JWT's access claim.
type access struct {
	Type    string   `json:"type"`
	Name    string   `json:"name"`
	Actions []string `json:"actions"`
}

// claims is the JWT payload distribution reads.
type claims struct {
	Issuer     string   `json:"iss"`
	Subject    string   `json:"sub"`
	Audience   string   `json:"aud"`
	Expiration int64    `json:"exp"`
	NotBefore  int64    `json:"nbf"`
	IssuedAt   int64    `json:"iat"`
	JWTID      string   `json:"jti"`
	Access     []access `json:"access"`
}

// startTokenServer starts a token server on 127.0.0.1 and returns the realm
// URL, spelled with "localhost" because go-containerregistry refuses a realm
// whose host is a loopback IP literal. Given a serving certificate it serves
// HTTPS (a client of a TLS registry rejects a plain-HTTP realm).
func startTokenServer(t testing.TB, ts *tokenServer, serving *issued) (realm string) {
	t.Helper()
	srv := httptest.NewUnstartedServer(ts)
	scheme := "http"
	if serving != nil {
		srv.TLS = &tls.Config{Certificates: []tls.Certificate{serving.tlsCertificate()}}
		srv.StartTLS()
		scheme = "https"
	} else {
		srv.Start()
	}
	t.Cleanup(srv.Close)
	// httptest listens on 127.0.0.1, which "localhost" also names.
	port := srv.Listener.Addr().(*net.TCPAddr).Port
	return fmt.Sprintf("%s://localhost:%d/token", scheme, port)
}

// ServeHTTP answers GET /token (basic auth, as docker and go-containerregistry
// send it) and POST /token with grant_type=password (the OAuth2 form).
func (ts *tokenServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/token" {
		http.NotFound(w, r)
		return
	}
	var user, pass string
	var scopes []string
	switch r.Method {
	case http.MethodGet:
		var ok bool
		user, pass, ok = r.BasicAuth()
		if !ok {
			user, pass = "", ""
		}
		scopes = r.URL.Query()["scope"]
	case http.MethodPost:
		if err := r.ParseForm(); err != nil {
			http.Error(w, "bad form", http.StatusBadRequest)
			return
		}
		if r.PostForm.Get("grant_type") != "password" {
			http.Error(w, `{"error":"unsupported_grant_type"}`, http.StatusBadRequest)
			return
		}
		user, pass = r.PostForm.Get("username"), r.PostForm.Get("password")
		scopes = r.PostForm["scope"]
	default:
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	if svc := r.FormValue("service"); svc != "" && svc != tokenService {
		http.Error(w, "unknown service", http.StatusBadRequest)
		return
	}
	if !ts.authorized(user, pass) {
		w.Header().Set("WWW-Authenticate", `Basic realm="imagebump-testregistry"`)
		http.Error(w, "unauthorized", http.StatusUnauthorized)
		return
	}
	now := time.Now()
	token, err := ts.sign(claims{
		Issuer:     tokenIssuer,
		Subject:    user,
		Audience:   tokenService,
		Expiration: now.Add(tokenLifetime).Unix(),
		NotBefore:  now.Add(-time.Minute).Unix(),
		IssuedAt:   now.Unix(),
		JWTID:      randomHex(8),
		Access:     parseScopes(scopes),
	})
	if err != nil {
		http.Error(w, "signing token", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{
		"token":        token,
		"access_token": token,
		"expires_in":   int(tokenLifetime / time.Second),
		"issued_at":    now.UTC().Format(time.RFC3339),
	})
}

func (ts *tokenServer) authorized(user, pass string) bool {
	u := subtle.ConstantTimeCompare([]byte(user), []byte(ts.username))
	p := subtle.ConstantTimeCompare([]byte(pass), []byte(ts.password))
	return u&p == 1
}

// parseScopes turns scope parameters ("repository:team/app:pull,push",
// several per parameter separated by spaces) into access claims granting
// exactly what was asked.
func parseScopes(params []string) []access {
	grants := []access{} // never null: distribution reads an absent list as no access anyway
	for _, param := range params {
		for _, scope := range strings.Fields(param) {
			typ, rest, ok := strings.Cut(scope, ":")
			if !ok {
				continue
			}
			i := strings.LastIndex(rest, ":")
			if i < 0 {
				continue
			}
			name, actions := rest[:i], rest[i+1:]
			grants = append(grants, access{Type: typ, Name: name, Actions: strings.Split(actions, ",")})
		}
	}
	return grants
}

// sign encodes c as a compact JWS signed with ES256.
func (ts *tokenServer) sign(c claims) (string, error) {
	header, err := json.Marshal(map[string]any{
		"typ": "JWT",
		"alg": "ES256",
		"x5c": ts.chain,
	})
	if err != nil {
		return "", fmt.Errorf("encoding token header: %w", err)
	}
	payload, err := json.Marshal(c)
	if err != nil {
		return "", fmt.Errorf("encoding token claims: %w", err)
	}
	enc := base64.RawURLEncoding
	input := enc.EncodeToString(header) + "." + enc.EncodeToString(payload)
	sig, err := signES256(ts.signer.key, []byte(input))
	if err != nil {
		return "", err
	}
	return input + "." + enc.EncodeToString(sig), nil
}

// signES256 returns the JWS ES256 signature of input: R and S as 32-byte
// big-endian integers, concatenated (RFC 7518, section 3.4), not ASN.1.
func signES256(key *ecdsa.PrivateKey, input []byte) ([]byte, error) {
	digest := sha256.Sum256(input)
	r, s, err := ecdsa.Sign(rand.Reader, key, digest[:])
	if err != nil {
		return nil, fmt.Errorf("signing token: %w", err)
	}
	sig := make([]byte, 64)
	r.FillBytes(sig[:32])
	s.FillBytes(sig[32:])
	return sig, nil
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // crypto/rand.Read never fails
	return hex.EncodeToString(b)
}
