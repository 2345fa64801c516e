package pullrequest

import (
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/imagebump/imagebump/internal/redact"
	"github.com/imagebump/imagebump/internal/scpurl"
)

// ParseRepoURL returns the host and the repository path of a Git remote URL
// in one of the forms forges show: https://host/owner/repo.git,
// ssh://git@host/owner/repo.git or scp-like git@host:owner/repo.git (also
// http:// and git://, with or without .git). ownerPath is "owner/repo", or
// "group/sub/project" for a GitLab project in nested groups. host keeps the
// port of an http(s) URL, which the API shares; it drops an SSH port, which
// the API does not. User names and passwords are never returned. A local
// path or file:// URL has no forge and is an error.
func ParseRepoURL(gitURL string) (host, ownerPath string, err error) {
	host, ownerPath, _, err = parseRepoURL(gitURL)
	return host, ownerPath, err
}

// parseRepoURL is ParseRepoURL that also returns the scheme of the forge's
// web and API server: http for an http:// remote, https otherwise.
func parseRepoURL(gitURL string) (host, ownerPath, scheme string, err error) {
	fail := func(why string) (string, string, string, error) {
		return "", "", "", fmt.Errorf("git URL %s: %s", redact.String(gitURL), why)
	}
	var path string
	if i := strings.Index(gitURL, "://"); i >= 0 {
		u, perr := url.Parse(gitURL)
		if perr != nil {
			return fail("not a URL")
		}
		switch u.Scheme {
		case "https", "http":
			host, scheme = u.Host, u.Scheme
		case "ssh", "git", "git+ssh", "ssh+git":
			host, scheme = u.Hostname(), "https"
			if strings.Contains(host, ":") {
				host = "[" + host + "]"
			}
		case "file":
			return fail("a local repository has no pull requests")
		default:
			return fail(fmt.Sprintf("unsupported scheme %q", u.Scheme))
		}
		path = u.Path
	} else {
		a, ok := scpurl.Parse(gitURL)
		if !ok {
			return fail("a local path has no pull requests; use an https://, ssh:// or user@host:path URL")
		}
		host, path, scheme = a.HostPort(), a.Path, "https"
	}
	if host == "" {
		return fail("no host")
	}
	path = strings.Trim(path, "/")
	path = strings.TrimSuffix(path, ".git")
	path = strings.TrimSuffix(path, "/")
	segs := strings.Split(path, "/")
	if len(segs) < 2 {
		return fail("the path needs an owner and a repository, as owner/repo")
	}
	for _, s := range segs {
		if s == "" || s == "." || s == ".." {
			return fail(fmt.Sprintf("bad path %q", path))
		}
	}
	return host, path, scheme, nil
}

// OwnerRepo splits an ownerPath from ParseRepoURL into owner and repo, for
// GitHub and Gitea, whose repositories are always owner/repo. A longer path
// (a Gitea served under a sub-path) is an error: the owner and repository
// are taken from the URL's path alone, so such a forge is not supported.
func OwnerRepo(ownerPath string) (owner, repo string, err error) {
	owner, repo, ok := strings.Cut(ownerPath, "/")
	if !ok || owner == "" || repo == "" || strings.Contains(repo, "/") {
		return "", "", fmt.Errorf("repository path %q of git.url is not owner/repo: the pull request's owner and repository are taken from that path, so a forge served under a sub-path (https://example.com/git/owner/repo) is not supported; serve it at the root of a host name", ownerPath)
	}
	return owner, repo, nil
}

// DefaultAPIURL returns the API base URL a provider has for the repository
// at gitURL: for github, https://api.github.com/ when the host is
// github.com and https://HOST/api/v3/ (GitHub Enterprise Server) otherwise;
// for gitlab and gitea, the server itself, https://HOST (http:// when the
// Git URL is http://), since their adapters add /api/v4 and /api/v1.
func DefaultAPIURL(provider, gitURL string) (string, error) {
	host, _, scheme, err := parseRepoURL(gitURL)
	if err != nil {
		return "", err
	}
	switch provider {
	case "github":
		if strings.EqualFold(host, "github.com") || strings.EqualFold(host, "www.github.com") {
			return "https://api.github.com/", nil
		}
		return scheme + "://" + host + "/api/v3/", nil
	case "gitlab", "gitea":
		return scheme + "://" + host, nil
	case "":
		return "", errors.New("no provider given")
	default:
		return "", fmt.Errorf("unknown provider %q: want github, gitlab or gitea", provider)
	}
}

// hostedForges are the public forges whose provider their host tells.
var hostedForges = map[string]string{
	"github.com":   "github",
	"gitlab.com":   "gitlab",
	"codeberg.org": "gitea",
	"gitea.com":    "gitea",
}

// HostedProvider returns the provider of a public forge's host (github.com
// is GitHub's, codeberg.org runs Forgejo, which speaks Gitea's API), ""
// for any other host, where any provider may run.
func HostedProvider(host string) string {
	h := strings.TrimPrefix(strings.ToLower(host), "www.")
	if i := strings.LastIndexByte(h, ':'); i >= 0 && !strings.Contains(h[i:], "]") {
		h = h[:i]
	}
	return hostedForges[h]
}
