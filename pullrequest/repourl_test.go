package pullrequest

import (
	"strings"
	"testing"
)

func TestParseRepoURL(t *testing.T) {
	for _, c := range []struct {
		in, host, path string
	}{
		{"https://github.com/acme/fleet.git", "github.com", "acme/fleet"},
		{"https://github.com/acme/fleet", "github.com", "acme/fleet"},
		{"https://github.com/acme/fleet/", "github.com", "acme/fleet"},
		{"https://token:x-oauth@github.com/acme/fleet.git", "github.com", "acme/fleet"},
		{"http://gitea.local:3000/acme/fleet.git", "gitea.local:3000", "acme/fleet"},
		{"ssh://git@github.com/acme/fleet.git", "github.com", "acme/fleet"},
		{"ssh://git@gitea.example.com:2222/acme/fleet.git", "gitea.example.com", "acme/fleet"},
		{"git@github.com:acme/fleet.git", "github.com", "acme/fleet"},
		{"github.com:acme/fleet", "github.com", "acme/fleet"},
		{"git@gitlab.com:acme/platform/team/fleet.git", "gitlab.com", "acme/platform/team/fleet"},
		{"https://gitlab.example.com/acme/platform/fleet.git", "gitlab.example.com", "acme/platform/fleet"},
		{"git://git.example.com/acme/fleet.git", "git.example.com", "acme/fleet"},
		{"ssh://git@[::1]:22/acme/fleet.git", "[::1]", "acme/fleet"},
	} {
		t.Run(c.in, func(t *testing.T) {
			host, path, err := ParseRepoURL(c.in)
			if err != nil {
				t.Fatal(err)
			}
			if host != c.host || path != c.path {
				t.Errorf("got %q %q, want %q %q", host, path, c.host, c.path)
			}
		})
	}
}

func TestParseRepoURLErrors(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"file:///srv/git/fleet.git", "local repository"},
		{"/srv/git/fleet.git", "local path"},
		{"./fleet", "local path"},
		{"https://github.com/fleet.git", "owner/repo"},
		{"https://github.com/", "owner/repo"},
		{"https://github.com/acme/../fleet", "bad path"},
		{"ftp://example.com/acme/fleet", "unsupported scheme"},
		{"https://user:hunter2@github.com/x.git", "owner/repo"},
	} {
		t.Run(c.in, func(t *testing.T) {
			_, _, err := ParseRepoURL(c.in)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want an error saying %q", err, c.want)
			}
			if strings.Contains(err.Error(), "hunter2") {
				t.Errorf("the error holds the password: %v", err)
			}
		})
	}
}

func TestOwnerRepo(t *testing.T) {
	if o, r, err := OwnerRepo("acme/fleet"); err != nil || o != "acme" || r != "fleet" {
		t.Errorf("OwnerRepo(acme/fleet) = %q, %q, %v", o, r, err)
	}
	for _, bad := range []string{"acme", "acme/platform/fleet", "/fleet", "acme/"} {
		if _, _, err := OwnerRepo(bad); err == nil {
			t.Errorf("OwnerRepo(%q) accepted it", bad)
		}
	}
}

func TestDefaultAPIURL(t *testing.T) {
	for _, c := range []struct{ provider, gitURL, want string }{
		{"github", "https://github.com/acme/fleet.git", "https://api.github.com/"},
		{"github", "git@github.com:acme/fleet.git", "https://api.github.com/"},
		{"github", "https://ghe.example.com/acme/fleet.git", "https://ghe.example.com/api/v3/"},
		{"gitlab", "git@gitlab.com:acme/platform/fleet.git", "https://gitlab.com"},
		{"gitlab", "ssh://git@gitlab.example.com:2222/acme/fleet.git", "https://gitlab.example.com"},
		{"gitea", "http://gitea.local:3000/acme/fleet.git", "http://gitea.local:3000"},
		{"gitea", "https://codeberg.org/acme/fleet.git", "https://codeberg.org"},
	} {
		t.Run(c.provider+" "+c.gitURL, func(t *testing.T) {
			got, err := DefaultAPIURL(c.provider, c.gitURL)
			if err != nil || got != c.want {
				t.Errorf("got %q, %v; want %q", got, err, c.want)
			}
		})
	}
	for _, p := range []string{"", "bitbucket"} {
		if _, err := DefaultAPIURL(p, "https://github.com/acme/fleet"); err == nil {
			t.Errorf("DefaultAPIURL(%q) accepted it", p)
		}
	}
}
