package discover

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/netip"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	gitconfig "github.com/go-git/go-git/v5/config"

	"github.com/imagebump/imagebump/internal/gittop"
	"github.com/imagebump/imagebump/internal/redact"
	"github.com/imagebump/imagebump/internal/scpurl"
)

// A Flux GitRepository whose spec.url names the repository a remote of
// the scanned checkout names is this repository (see fluxsources.go). The
// two are rarely written alike: Flux is often given ssh://git@host/o/r
// where the checkout was cloned from https://host/o/r.git, or the other
// way round. repoKey is what stays the same across those forms.

// repoKey names a Git repository across the forms of its URL: the host,
// lowercased, with its port when it is not the scheme's default, and the
// path without the slashes around it and without a .git suffix. The user
// (git@, a token) is not part of it.
type repoKey struct {
	host, path string
}

// defaultPorts are the ports a Git URL's scheme implies, which writing
// them out does not change.
var defaultPorts = map[string]string{
	"http":    "80",
	"https":   "443",
	"ssh":     "22",
	"git+ssh": "22",
	"ssh+git": "22",
	"git":     "9418",
}

// repoKeyOf reads a Git URL as the key of the repository it names: an
// http, https, ssh (git+ssh, ssh+git) or git URL, or an scp-like address
// ([user@]host:path, as scpurl reads it, made of the characters remotes
// are written with). It is false for anything else: a local path, a
// file:// URL, a URL without a host or a path, one holding a variable
// ($, as in the ${VAR} Flux's post-build substitution replaces).
// scp-like paths are relative to the user's home on the server, which
// forges ignore, so git@host:o/r.git and ssh://git@host/o/r.git are taken
// for one repository, as they are on GitHub, GitLab and Gitea. The path's
// case counts: Git servers other than the forges tell paths apart by it.
func repoKeyOf(s string) (repoKey, bool) {
	s = strings.TrimSpace(s)
	if strings.Contains(s, "$") {
		return repoKey{}, false // a variable, Flux's ${VAR}: not the URL yet
	}
	var host, port, p string
	if strings.Contains(s, "://") {
		u, err := url.Parse(s)
		if err != nil {
			return repoKey{}, false
		}
		def, ok := defaultPorts[strings.ToLower(u.Scheme)]
		if !ok {
			return repoKey{}, false
		}
		host, port, p = u.Hostname(), u.Port(), u.Path
		if port == def {
			port = ""
		}
	} else {
		a, ok := scpurl.Parse(s)
		if !ok || !a.Plain() {
			return repoKey{}, false
		}
		host, p = a.Host, a.Path
	}
	p = cleanRepoPath(p)
	if !hostName(host) || p == "" {
		return repoKey{}, false
	}
	host = strings.ToLower(host)
	if port != "" {
		host = net.JoinHostPort(host, port)
	}
	return repoKey{host: host, path: p}, true
}

// hostName reports whether h is a host a Git URL names: a name of
// letters, digits, '.', '-' and '_', or an IP address (without an IPv6
// zone, which names no repository across machines).
func hostName(h string) bool {
	if a, err := netip.ParseAddr(h); err == nil {
		return a.Zone() == ""
	}
	return h != "" && strings.Trim(h, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-_") == ""
}

// cleanRepoPath returns the path of a repository's URL without the
// slashes around it, doubled slashes, dot elements or a .git suffix.
func cleanRepoPath(p string) string {
	p = path.Clean("/" + p)
	for {
		q := path.Clean(strings.TrimSuffix(p, ".git"))
		if q == p {
			return strings.TrimPrefix(p, "/")
		}
		p = q
	}
}

// sameRepository reports whether the Git URLs a and b name the same
// repository (repoKeyOf); false when either names none.
func sameRepository(a, b string) bool {
	ka, ok := repoKeyOf(a)
	kb, okb := repoKeyOf(b)
	return ok && okb && ka == kb
}

// remote is one URL of one of the checkout's Git remotes.
type remote struct {
	name, url string
}

// comparable reports whether the remote's URL names a repository of a
// host (not a local path), which a GitRepository's spec.url can name.
func (r remote) comparable() bool {
	_, ok := repoKeyOf(r.url)
	return ok
}

// String writes the remote for a note: its name and its URL, redacted.
func (r remote) String() string {
	s := r.name + " " + redact.String(r.url)
	if !r.comparable() {
		s += " (not a URL of a host)"
	}
	return s
}

// checkout is what init knows of the Git checkout it scans.
type checkout struct {
	// found is set when the root is in a Git checkout.
	found bool
	// remotes are its remotes' URLs, by remote name; each URL of a remote
	// with several (url and pushurl) is one.
	remotes []remote
	// err says why the remotes could not be read, redacted; "" when
	// they were.
	err string
}

// readCheckout reads the remotes of the Git checkout root (absolute) is
// in: the nearest folder, from root up, holding .git, a folder or the
// file of a linked worktree or a submodule, whose remotes are those of
// the Git folder it names (and, for a worktree, of the main checkout).
// A root in no checkout has none: urls then tell nothing.
//
// It reads the config file itself, with go-git's parser, rather than
// opening the repository with go-git: git.PlainOpen refuses a repository
// with an extension go-git does not know, and `git clone --filter` (a
// partial clone, extensions.partialClone) and `git sparse-checkout`
// (extensions.worktreeConfig) write ones it does not. Only the
// repository's own config is read, not the user's: a url.NAME.insteadOf
// there is not applied.
func readCheckout(root string, log *slog.Logger) checkout {
	top, ok := gittop.Find(root)
	if !ok {
		return checkout{}
	}
	co := checkout{found: true}
	remotes, err := readRemotes(top)
	if err != nil {
		co.err = redact.Text(err.Error())
		log.Debug("the Git checkout's remotes cannot be read: they are not compared with GitRepository urls", "error", co.err)
		return co
	}
	co.remotes = remotes
	return co
}

// maxGitConfig bounds the size of the Git config file read: one of a
// checkout is a few hundred bytes.
const maxGitConfig = 1 << 20

// readRemotes returns the remotes of the Git checkout whose working tree
// is top, sorted by name.
func readRemotes(top string) ([]remote, error) {
	dir, err := gitDir(top)
	if err != nil {
		return nil, err
	}
	file := filepath.Join(dir, "config")
	f, err := os.Open(file)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the Git config: %w", err)
	}
	defer f.Close()
	cfg, err := gitconfig.ReadConfig(io.LimitReader(f, maxGitConfig))
	if err != nil {
		return nil, fmt.Errorf("reading the Git config %s: %w", file, err)
	}
	var remotes []remote
	for _, sub := range cfg.Raw.Section("remote").Subsections {
		// go-git's RemoteConfig keeps the url entries only.
		for _, key := range []string{"url", "pushurl"} {
			for _, u := range sub.Options.GetAll(key) {
				remotes = append(remotes, remote{name: sub.Name, url: u})
			}
		}
	}
	// Each remote's URLs are together, in the order written.
	slices.SortStableFunc(remotes, func(a, b remote) int { return strings.Compare(a.name, b.name) })
	return remotes, nil
}

// gitDir returns the Git folder that holds the config of the working
// tree top: top/.git, or the folder the .git file names ("gitdir: DIR",
// relative to top), and then the folder its commondir file names
// (relative to it), as a linked worktree's does, where the remotes are.
func gitDir(top string) (string, error) {
	dir := filepath.Join(top, ".git")
	fi, err := os.Stat(dir)
	if err != nil {
		return "", fmt.Errorf("reading the Git folder: %w", err)
	}
	if !fi.IsDir() {
		b, err := readSmall(dir)
		if err != nil {
			return "", fmt.Errorf("reading the .git file: %w", err)
		}
		named, ok := strings.CutPrefix(firstLine(b), "gitdir:")
		if !ok {
			return "", fmt.Errorf("the .git file %s does not start with gitdir:", dir)
		}
		dir = within(top, strings.TrimSpace(named))
	}
	b, err := readSmall(filepath.Join(dir, "commondir"))
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return dir, nil
	case err != nil:
		return "", fmt.Errorf("reading the Git folder's commondir: %w", err)
	}
	return within(dir, strings.TrimSpace(firstLine(b))), nil
}

// within resolves the path p, named in a file of the folder dir: an
// absolute path, or one relative to dir.
func within(dir, p string) string {
	if filepath.IsAbs(p) {
		return filepath.Clean(p)
	}
	return filepath.Join(dir, p)
}

// maxPointer bounds the size of a .git or commondir file, which holds
// one path.
const maxPointer = 64 << 10

// readSmall reads a file of at most maxPointer bytes.
func readSmall(name string) ([]byte, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, maxPointer))
}

// firstLine returns b up to its first line break.
func firstLine(b []byte) string {
	s, _, _ := strings.Cut(string(b), "\n")
	return strings.TrimSuffix(s, "\r")
}

// comparable reports whether some remote of the checkout names a
// repository a spec.url can name.
func (co checkout) comparable() bool {
	return slices.ContainsFunc(co.remotes, remote.comparable)
}

// named returns the remote whose repository the Git URL u names, and
// whether there is one.
func (co checkout) named(u string) (remote, bool) {
	for _, r := range co.remotes {
		if sameRepository(u, r.url) {
			return r, true
		}
	}
	return remote{}, false
}
