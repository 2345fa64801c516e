package redact

import (
	"net/url"
	"testing"
)

func TestURL(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want string
	}{
		{name: "plain", in: "https://ghcr.io/v2/acme/app/tags/list", want: "https://ghcr.io/v2/acme/app/tags/list"},
		{name: "userinfo", in: "https://bob:s3cret@ghcr.io/v2/", want: "https://ghcr.io/v2/"},
		{name: "pagination kept", in: "https://ghcr.io/v2/a/tags/list?last=v1&n=100", want: "https://ghcr.io/v2/a/tags/list?last=v1&n=100"},
		{name: "token query", in: "https://auth.io/token?access_token=abc&scope=repository%3Aa%3Apull", want: "https://auth.io/token?access_token=REDACTED&scope=repository%3Aa%3Apull"},
		{name: "signed storage url", in: "https://s3.io/blob?X-Amz-Signature=xyz", want: "https://s3.io/blob?X-Amz-Signature=REDACTED"},
		{name: "a forge's listing", in: "https://git.example/api/v1/repos/a/b/pulls?limit=50&page=2&state=closed&token=t", want: "https://git.example/api/v1/repos/a/b/pulls?limit=50&page=2&state=closed&token=REDACTED"},
		{name: "fragment", in: "https://h.io/p#secret", want: "https://h.io/p"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u, err := url.Parse(tt.in)
			if err != nil {
				t.Fatal(err)
			}
			if got := URL(u); got != tt.want {
				t.Errorf("URL(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestText(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want string
	}{
		{name: "no url", in: "connection refused", want: "connection refused"},
		{name: "quoted url error", in: `Get "https://u:p@h.io/v2/?token=t": EOF`, want: `Get "https://h.io/v2/?token=REDACTED": EOF`},
		{name: "two urls", in: "from https://a:b@x.io/ to http://y.io/?sig=1.", want: "from https://x.io/ to http://y.io/?sig=REDACTED."},
		{name: "unparsable", in: "see https://h.io/%zz now", want: "see REDACTED now"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Text(tt.in); got != tt.want {
				t.Errorf("Text(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

// TestStringSCP: Git's scp-like remotes keep their host and path (they
// were shown as REDACTED, in reports, the status page and a commit
// message's {{ .Repository }}); the user goes, as a URL's does, and what is
// neither a URL nor scp-like is still replaced whole.
func TestStringSCP(t *testing.T) {
	for in, want := range map[string]string{
		"git@github.com:acme/fleet.git":     "github.com:acme/fleet.git",
		"root@127.0.0.1:/srv/git/fleet.git": "127.0.0.1:/srv/git/fleet.git",
		"git.example:fleet.git":             "git.example:fleet.git",
		"%zz:x":                             "REDACTED",
		"https://h.io/%zz":                  "REDACTED",
		"git@host:path with space":          "REDACTED",
	} {
		if got := String(in); got != want {
			t.Errorf("String(%q) = %q, want %q", in, got, want)
		}
	}
}
