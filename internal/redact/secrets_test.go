package redact

import (
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestSecretsText(t *testing.T) {
	const pass = `p@ss "w0rd"/+`
	basic := base64.StdEncoding.EncodeToString([]byte("bob:" + pass))
	var s Secrets
	s.Set("registry/password", pass)
	s.Set("registry/token", "tok-123456")
	s.Set("forge/token", `tok<&>"1`)
	tests := []struct {
		name  string
		in    string
		extra []string
		want  string
	}{
		{name: "raw", in: "bad password " + pass + " given", want: "bad password REDACTED given"},
		{name: "query escaped", in: "body password=" + url.QueryEscape(pass), want: "body password=REDACTED"},
		{name: "json escaped", in: `{"message":"` + strings.ReplaceAll(pass, `"`, `\"`) + `"}`, want: `{"message":"REDACTED"}`},
		{name: "json escaped, < > & too", in: `{"m":"tok\u003c\u0026\u003e\"1"}`, want: `{"m":"REDACTED"}`},
		{name: "json escaped, < > & raw", in: `{"m":"tok<&>\"1"}`, want: `{"m":"REDACTED"}`},
		{name: "base64 of the value", in: "x " + base64.StdEncoding.EncodeToString([]byte(pass)), want: "x REDACTED"},
		{name: "token", in: "Bearer tok-123456 refused", want: "Bearer REDACTED refused"},
		{name: "url credentials too", in: "GET https://u:v@h.io/?access_token=zz", want: "GET https://h.io/?access_token=REDACTED"},
		{name: "extra basic header", in: "echo: Authorization: Basic " + basic, extra: AuthorizationSecrets("Basic " + basic), want: "echo: Authorization: Basic REDACTED"},
		{name: "nothing to hide", in: "connection refused", want: "connection refused"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := s.Text(tt.in, tt.extra...); got != tt.want {
				t.Errorf("Text(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestSecretsSetReplacesAndForgets(t *testing.T) {
	var s Secrets
	s.Set("pw", "old-secret")
	s.Set("pw", "new-secret")
	if got, want := s.Text("old-secret new-secret"), "old-secret REDACTED"; got != want {
		t.Errorf("after rotation: %q, want %q", got, want)
	}
	if s.Len() != 1 {
		t.Errorf("Len = %d after setting one name twice, want 1", s.Len())
	}
	s.Set("pw", "")
	if got := s.Text("new-secret"); got != "new-secret" {
		t.Errorf("after forgetting: %q", got)
	}
}

func TestSecretsLongestFirst(t *testing.T) {
	var s Secrets
	s.Set("a", "abc")
	s.Set("b", "abcdef")
	if got, want := s.Text("xabcdefx"), "xREDACTEDx"; got != want {
		t.Errorf("Text = %q, want %q (the longer secret whole)", got, want)
	}
}

func TestSecretsNil(t *testing.T) {
	var s *Secrets
	s.Set("x", "y")
	if got, want := s.Text("https://u:p@h.io/ y"), "https://h.io/ y"; got != want {
		t.Errorf("nil Secrets Text = %q, want %q", got, want)
	}
}

func TestSecretsError(t *testing.T) {
	var s Secrets
	s.Set("t", "hunter2")
	base := fmt.Errorf("server said hunter2: %w", fs.ErrPermission)
	err := s.Error(base)
	if got, want := err.Error(), "server said REDACTED: permission denied"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	if !errors.Is(err, fs.ErrPermission) {
		t.Error("the cleaned error does not unwrap to the original")
	}
	if s.Error(nil) != nil {
		t.Error("Error(nil) is not nil")
	}
}

func TestSecretsConcurrent(t *testing.T) {
	var s Secrets
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for j := range 100 {
				s.Set(fmt.Sprint(i), fmt.Sprintf("secret-%d-%d", i, j))
				_ = s.Text("secret-1-1 secret-2-2")
			}
		})
	}
	wg.Wait()
	if s.Len() != 8 {
		t.Errorf("Len = %d, want 8", s.Len())
	}
}

func TestAuthorizationSecrets(t *testing.T) {
	basic := base64.StdEncoding.EncodeToString([]byte("bob:s3cret"))
	tests := []struct {
		in   string
		want []string
	}{
		{in: "", want: nil},
		{in: "Basic " + basic, want: []string{basic, "bob:s3cret", "s3cret"}},
		{in: "Bearer abc.def", want: []string{"abc.def"}},
		{in: "Basic not-base64!", want: []string{"not-base64!"}},
		{in: "opaque", want: []string{"opaque"}},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			if diff := cmp.Diff(AuthorizationSecrets(tt.in), tt.want); diff != "" {
				t.Errorf("AuthorizationSecrets mismatch (-got +want):\n%s", diff)
			}
		})
	}
}

func FuzzSecretsText(f *testing.F) {
	f.Add("s3cret", "the s3cret is out")
	f.Add(`a"b\c`, `{"m":"a\"b\\c"}`)
	f.Add("x y", "x+y x%20y")
	f.Fuzz(func(t *testing.T, secret, text string) {
		if secret == "" || strings.Contains(secret, "\x00") {
			return
		}
		var s Secrets
		s.Set("s", secret)
		got := s.Strip(text + secret + text)
		if !strings.Contains(got, Placeholder) {
			t.Fatalf("Strip(%q) replaced nothing", text+secret+text)
		}
		// The placeholder next to the text may spell the secret again;
		// what must never survive is the secret made of the input's bytes.
		if rest := strings.ReplaceAll(got, Placeholder, "\x00"); strings.Contains(rest, secret) {
			t.Fatalf("Strip left the secret %q in %q", secret, got)
		}
	})
}
