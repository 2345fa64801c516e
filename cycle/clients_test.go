package cycle

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/imagebump/imagebump/config"
	"github.com/imagebump/imagebump/registry"
)

func TestRegistryOptionsProvider(t *testing.T) {
	cfg := &config.Config{Registries: []config.Registry{
		{Host: "123456789012.dkr.ecr.eu-west-1.amazonaws.com", Provider: "aws"},
		{Host: "ghcr.io", Auth: &config.RegistryAuth{TokenFile: "/t"}},
	}}
	var got []string
	for _, h := range RegistryOptions(cfg, nil).Hosts {
		got = append(got, h.Provider)
	}
	if diff := cmp.Diff(got, []string{registry.ProviderAWS, ""}); diff != "" {
		t.Errorf("providers (-got +want):\n%s", diff)
	}
}

// TestCheckPullRequestHostedForge: a public forge's host tells its
// provider: provider gitlab with a github.com URL (or the reverse) is
// refused up front, naming the provider to set, where every cycle failed
// on an HTTP 405 or 404 from the wrong API. Other hosts take any provider,
// and an apiURL given is taken as meant.
func TestCheckPullRequestHostedForge(t *testing.T) {
	for _, tt := range []struct {
		url, provider, apiURL, want string
	}{
		{"https://github.com/acme/fleet.git", "gitlab", "", "provider is gitlab, but git.url's host github.com serves github's API: set provider: github"},
		{"git@gitlab.com:acme/fleet.git", "github", "", "set provider: gitlab"},
		{"https://codeberg.org/acme/fleet.git", "github", "", "set provider: gitea"},
		{"https://github.com/acme/fleet.git", "github", "", ""},
		{"https://codeberg.org/acme/fleet.git", "gitea", "", ""},
		{"https://git.example/acme/fleet.git", "gitlab", "", ""},
		{"https://github.com/acme/fleet.git", "gitlab", "https://gitlab.example/api/v4", ""},
	} {
		target := config.Target{Name: "t", Git: &config.Git{URL: tt.url, Branch: "main"},
			Push: &config.Push{Branch: "imagebump/main", PullRequest: &config.PullRequest{Provider: tt.provider, APIURL: tt.apiURL, TokenFile: "token"}}}
		err := CheckPullRequest(target)
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%s with %s: %v, want no error", tt.url, tt.provider, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("%s with %s: %v, want an error saying %q", tt.url, tt.provider, err, tt.want)
		}
	}
}

// TestGitTimeout: git.timeout reaches the working copy's options, and the
// config refuses one too short for a round trip.
func TestGitTimeout(t *testing.T) {
	cfg, err := config.Parse([]byte("images:\n  - {name: a, repository: ghcr.io/a/b, policy: {semver: \">=1\"}}\ngit: {url: \"https://git.example/acme/fleet.git\", timeout: 10m}\n"), "c.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if got := GitOptions(cfg.Targets()[0], "", nil).Timeout; got != 10*time.Minute {
		t.Errorf("Timeout = %v, want 10m", got)
	}
	_, err = config.Parse([]byte("images:\n  - {name: a, repository: ghcr.io/a/b, policy: {semver: \">=1\"}}\ngit: {url: \"https://git.example/acme/fleet.git\", timeout: 1s}\n"), "c.yaml")
	if err == nil || !strings.Contains(err.Error(), "git.timeout: must be at least 5s") {
		t.Errorf("timeout 1s: %v", err)
	}
}
