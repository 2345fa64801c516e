package cloudauth

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
)

// TestRecordingTransport: a token request's credentials are recorded and
// the request arrives whole; a form past maxFormBody arrives whole too,
// unread.
func TestRecordingTransport(t *testing.T) {
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got = append(got, string(b))
	}))
	defer srv.Close()
	remembered := map[string]string{}
	tr := &recordingTransport{next: http.DefaultTransport, remember: func(name, value string) {
		if value != "" {
			remembered[name] = value
		}
	}}
	client := &http.Client{Transport: tr}
	small := url.Values{"grant_type": {"client_credentials"}, "client_secret": {"s3cret-value"}}.Encode()
	large := "padding=" + strings.Repeat("a", maxFormBody+100) + "&client_secret=late"
	for _, body := range []string{small, large} {
		resp, err := client.Post(srv.URL, "application/x-www-form-urlencoded", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	if len(got) != 2 || got[0] != small || got[1] != large {
		t.Errorf("the server got %d bodies; want both whole (sizes %d and %d)", len(got), len(small), len(large))
	}
	if remembered["sent client_secret"] != "s3cret-value" {
		t.Errorf("remembered %v; want the small form's client_secret", remembered)
	}
}
