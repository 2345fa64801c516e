package cycle

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/imagebump/imagebump/config"
	"github.com/imagebump/imagebump/gitwriter"
	"github.com/imagebump/imagebump/internal/secretfile"
	"github.com/imagebump/imagebump/pullrequest"
	"github.com/imagebump/imagebump/pullrequest/gitea"
	"github.com/imagebump/imagebump/pullrequest/github"
	"github.com/imagebump/imagebump/pullrequest/gitlab"
	"github.com/imagebump/imagebump/registry"
)

// This file is the one place where the config becomes clients: the
// registry client, a target's Git options and its pull-request provider.

// RegistryOptions turns the config's `registries:` into registry client
// options. A nil config gives the defaults: anonymous or Docker keychain auth,
// verified TLS, no rate limit.
func RegistryOptions(cfg *config.Config, logger *slog.Logger) registry.Options {
	opts := registry.Options{Logger: logger}
	if cfg == nil {
		return opts
	}
	opts.FluxTerms = cfg.FromFlux
	for _, r := range cfg.Registries {
		h := registry.Host{
			Host:              r.Host,
			Provider:          r.Provider,
			Insecure:          r.Insecure,
			CAFile:            r.CAFile,
			Concurrency:       r.Concurrency,
			Timeout:           r.Timeout,
			MaxPages:          r.MaxPages,
			MaxTags:           r.MaxTags,
			RepositoryTimeout: r.RepositoryTimeout,
		}
		if r.Retries != nil {
			h.MaxRetries = *r.Retries
			if *r.Retries == 0 {
				h.MaxRetries = registry.NoRetries
			}
		}
		if r.Auth != nil {
			h.DockerConfig = r.Auth.DockerConfig
			h.UsernameFile = r.Auth.UsernameFile
			h.PasswordFile = r.Auth.PasswordFile
			h.TokenFile = r.Auth.TokenFile
		}
		if r.RateLimit != nil {
			h.RequestsPerSecond = r.RateLimit.RequestsPerSecond
			h.Burst = r.RateLimit.Burst
		}
		opts.Hosts = append(opts.Hosts, h)
	}
	return opts
}

// NewRegistry builds the registry client the config describes.
func NewRegistry(cfg *config.Config, logger *slog.Logger) (*registry.Client, error) {
	return registry.New(RegistryOptions(cfg, logger))
}

// GitOptions turns a target's git settings into gitwriter options. workdir
// is the working copy's folder; empty means a temporary clone.
func GitOptions(t config.Target, workdir string, logger *slog.Logger) gitwriter.Options {
	g := t.Git
	opts := gitwriter.Options{URL: g.URL, Branch: g.Branch, Workdir: workdir, Logger: logger, Timeout: g.Timeout}
	if a := g.Auth; a != nil {
		opts.Auth = gitwriter.Auth{
			TokenFile:             a.TokenFile,
			UsernameFile:          a.UsernameFile,
			PasswordFile:          a.PasswordFile,
			SSHKeyFile:            a.SSHKeyFile,
			SSHKeyPassphraseFile:  a.SSHKeyPassphraseFile,
			KnownHostsFile:        a.KnownHostsFile,
			InsecureIgnoreHostKey: a.InsecureIgnoreHostKey,
		}
	}
	return opts
}

// unsafeName matches what may not appear in a working copy's folder name.
var unsafeName = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// WorkdirFor returns the folder under parent that keeps target's working
// copy between cycles, or "" when parent is "" (a temporary clone).
func WorkdirFor(parent, target string) string {
	if parent == "" {
		return ""
	}
	return filepath.Join(parent, unsafeName.ReplaceAllString(target, "_"))
}

// WantsPullRequest reports whether a target opens pull requests: it has
// push.pullRequest and pushes to its own branch.
func WantsPullRequest(t config.Target) bool {
	return t.Push != nil && t.Push.PullRequest != nil && t.Push.Branch != ""
}

// CheckPullRequest checks, without reading the token or asking the
// forge, that a target's pull requests can be opened where its git.url
// points: an owner and a repository in the URL, and an API URL (given,
// or the provider's default for the host). A cycle checks it before it
// pushes, and validate checks it, so that a target is not refused only
// after its branch was pushed. A target without pull requests passes.
func CheckPullRequest(t config.Target) error {
	if !WantsPullRequest(t) {
		return nil
	}
	_, _, err := pullRequestPlace(t)
	return err
}

// checkEnvRefs checks that each env:VARIABLE a target's credentials name
// is set, so that a missing one is reported with the config key that
// names it, before the cycle starts, rather than as "environment variable
// X is not set" from deep in a clone or a pull request.
func checkEnvRefs(t config.Target) error {
	var refs [][2]string
	if a := t.Git.Auth; a != nil {
		refs = append(refs, [2]string{"git.auth.tokenFile", a.TokenFile}, [2]string{"git.auth.usernameFile", a.UsernameFile},
			[2]string{"git.auth.passwordFile", a.PasswordFile}, [2]string{"git.auth.sshKeyFile", a.SSHKeyFile},
			[2]string{"git.auth.sshKeyPassphraseFile", a.SSHKeyPassphraseFile})
	}
	if WantsPullRequest(t) {
		refs = append(refs, [2]string{"push.pullRequest.tokenFile", t.Push.PullRequest.TokenFile})
	}
	for _, r := range refs {
		if !secretfile.IsEnv(r[1]) {
			continue
		}
		name := strings.TrimPrefix(r[1], secretfile.EnvPrefix)
		if _, ok := os.LookupEnv(name); !ok {
			return fmt.Errorf("%s is %s, and %s is not set in imagebump's environment: set it (in a container, from a Secret), or name a file", r[0], r[1], name)
		}
	}
	return nil
}

// pullRequestPlace returns the owner/repository path of the target's
// git.url and the forge's API URL. For GitHub and Gitea, whose
// repositories are always owner/repo, a longer path is an error here, so
// that validate and the check before a push see it.
func pullRequestPlace(t config.Target) (ownerPath, api string, err error) {
	var host string
	if host, ownerPath, err = pullrequest.ParseRepoURL(t.Git.URL); err != nil {
		return "", "", fmt.Errorf("push.pullRequest: %w", err)
	}
	if want := pullrequest.HostedProvider(host); want != "" && want != t.Push.PullRequest.Provider && t.Push.PullRequest.APIURL == "" {
		return "", "", fmt.Errorf("push.pullRequest: provider is %s, but git.url's host %s serves %s's API: set provider: %s", t.Push.PullRequest.Provider, host, want, want)
	}
	if p := t.Push.PullRequest.Provider; p == "github" || p == "gitea" {
		if _, _, err := pullrequest.OwnerRepo(ownerPath); err != nil {
			return "", "", fmt.Errorf("push.pullRequest: %w", err)
		}
	}
	if api = t.Push.PullRequest.APIURL; api == "" {
		if api, err = pullrequest.DefaultAPIURL(t.Push.PullRequest.Provider, t.Git.URL); err != nil {
			return "", "", fmt.Errorf("push.pullRequest: %w", err)
		}
	}
	return ownerPath, api, nil
}

// NewPullRequestProvider builds the forge adapter a target's
// push.pullRequest names. The owner and repository come from git.url, the
// API URL from apiURL or the provider's default for that host, the token
// from pullRequest.tokenFile or else git.auth.tokenFile, read now.
func NewPullRequestProvider(t config.Target) (pullrequest.Provider, error) {
	if !WantsPullRequest(t) {
		return nil, fmt.Errorf("target %s opens no pull requests (it needs push.branch and push.pullRequest)", t.Name)
	}
	pr := t.Push.PullRequest
	ownerPath, api, err := pullRequestPlace(t)
	if err != nil {
		return nil, err
	}
	tokenFile := pr.TokenFile
	if tokenFile == "" && t.Git.Auth != nil {
		tokenFile = t.Git.Auth.TokenFile
	}
	if tokenFile == "" {
		return nil, errors.New("push.pullRequest: no token: set push.pullRequest.tokenFile (or git.auth.tokenFile)")
	}
	token, err := secretfile.Read(tokenFile)
	switch {
	case errors.Is(err, secretfile.ErrEmpty):
		return nil, fmt.Errorf("push.pullRequest: the token file %s is empty", secretfile.Shown(tokenFile))
	case err != nil:
		// The path is safe to show (the error names it); the content never is.
		return nil, fmt.Errorf("push.pullRequest: reading the token: %w", err)
	}
	switch pr.Provider {
	case "github":
		owner, repo, err := pullrequest.OwnerRepo(ownerPath)
		if err != nil {
			return nil, err
		}
		return github.New(github.Options{APIURL: api, Token: token, Owner: owner, Repo: repo})
	case "gitlab":
		return gitlab.New(gitlab.Options{APIURL: api, Token: token, Project: ownerPath})
	case "gitea":
		owner, repo, err := pullrequest.OwnerRepo(ownerPath)
		if err != nil {
			return nil, err
		}
		return gitea.New(gitea.Options{APIURL: api, Token: token, Owner: owner, Repo: repo})
	}
	return nil, fmt.Errorf("push.pullRequest: unknown provider %q: want github, gitlab or gitea", pr.Provider)
}
