package discover

import (
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5"
	gitconfig "github.com/go-git/go-git/v5/config"
	"github.com/google/go-cmp/cmp"
)

// makeCheckout makes dir a Git checkout with go-git, with the remotes
// given as "NAME URL" (a name given twice gets both URLs).
func makeCheckout(t *testing.T, dir string, remotes ...string) {
	t.Helper()
	repo, err := git.PlainInit(dir, false)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	urls := map[string][]string{}
	for _, r := range remotes {
		name, u, ok := strings.Cut(r, " ")
		if !ok {
			t.Fatalf("remote %q: want NAME URL", r)
		}
		if urls[name] == nil {
			names = append(names, name)
		}
		urls[name] = append(urls[name], u)
	}
	for _, name := range names {
		if _, err := repo.CreateRemote(&gitconfig.RemoteConfig{Name: name, URLs: urls[name]}); err != nil {
			t.Fatal(err)
		}
	}
}

func TestRepoKeyOf(t *testing.T) {
	tests := []struct {
		in   string
		want repoKey // zero: not a repository's URL
	}{
		{"https://github.com/acme/fleet", repoKey{"github.com", "acme/fleet"}},
		{"https://github.com/acme/fleet.git", repoKey{"github.com", "acme/fleet"}},
		{"https://github.com/acme/fleet/", repoKey{"github.com", "acme/fleet"}},
		{"https://github.com/acme/fleet.git/", repoKey{"github.com", "acme/fleet"}},
		{"HTTPS://GitHub.COM/acme/fleet", repoKey{"github.com", "acme/fleet"}},
		{"https://x-access-token:s3cret@github.com/acme/fleet", repoKey{"github.com", "acme/fleet"}},
		{"https://github.com:443/acme/fleet", repoKey{"github.com", "acme/fleet"}},
		{"http://git.example:80/acme/fleet", repoKey{"git.example", "acme/fleet"}},
		{"https://git.example:8443/acme/fleet", repoKey{"git.example:8443", "acme/fleet"}},
		{"ssh://git@github.com/acme/fleet.git", repoKey{"github.com", "acme/fleet"}},
		{"ssh://git@github.com:22/acme/fleet", repoKey{"github.com", "acme/fleet"}},
		{"ssh://git@git.example:2222/acme/fleet", repoKey{"git.example:2222", "acme/fleet"}},
		{"git+ssh://git@github.com/acme/fleet", repoKey{"github.com", "acme/fleet"}},
		{"git://git.example/acme/fleet", repoKey{"git.example", "acme/fleet"}},
		{"git@github.com:acme/fleet.git", repoKey{"github.com", "acme/fleet"}},
		{"github.com:acme/fleet", repoKey{"github.com", "acme/fleet"}},
		{"git@[::1]:acme/fleet.git", repoKey{"::1", "acme/fleet"}},
		{"ssh://git@[::1]:2222/acme/fleet", repoKey{"[::1]:2222", "acme/fleet"}},
		{"https://gitlab.com/group/sub/repo.git", repoKey{"gitlab.com", "group/sub/repo"}},
		{"https://github.com//acme//fleet", repoKey{"github.com", "acme/fleet"}},
		{"  https://github.com/acme/fleet\n", repoKey{"github.com", "acme/fleet"}},
		{"/srv/git/fleet.git", repoKey{}},
		{"file:///srv/git/fleet.git", repoKey{}},
		{"../fleet", repoKey{}},
		{`C:\repos\fleet`, repoKey{}},
		{"https://github.com", repoKey{}},
		{"https://github.com/", repoKey{}},
		{"https://github.com/.git", repoKey{}},
		{"oci://ghcr.io/acme/manifests", repoKey{}},
		{"s3://bucket/path", repoKey{}},
		{"https://%zz/acme", repoKey{}},
		{"user:password@host:acme/fleet", repoKey{}},
		{"https://github.com/${OWNER}/fleet", repoKey{}},
		{"${FLEET_URL}", repoKey{}},
		{"", repoKey{}},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, ok := repoKeyOf(tt.in)
			if ok != (tt.want != repoKey{}) || got != tt.want {
				t.Errorf("repoKeyOf(%q) = %+v, %v; want %+v", tt.in, got, ok, tt.want)
			}
		})
	}
}

func TestSameRepository(t *testing.T) {
	tests := []struct {
		name string
		a, b string
		want bool
	}{
		{"https and scp-like", "https://github.com/acme/fleet", "git@github.com:acme/fleet.git", true},
		{"ssh and https with .git", "ssh://git@github.com/acme/fleet", "https://github.com/acme/fleet.git", true},
		{"ssh with the default port", "ssh://git@github.com:22/acme/fleet.git", "git@github.com:acme/fleet", true},
		{"host in another case", "https://GitHub.com/acme/fleet", "git@github.com:acme/fleet.git", true},
		{"trailing slash", "https://github.com/acme/fleet/", "https://github.com/acme/fleet", true},
		{"user info", "https://bot:token@github.com/acme/fleet", "https://github.com/acme/fleet", true},
		{"gitlab subgroup, both forms", "https://gitlab.com/group/sub/repo", "git@gitlab.com:group/sub/repo.git", true},
		{"another owner", "https://github.com/acme/fleet", "https://github.com/other/fleet", false},
		{"another repository", "https://github.com/acme/fleet", "https://github.com/acme/fleet-apps", false},
		{"another host", "https://github.com/acme/fleet", "https://gitlab.com/acme/fleet", false},
		{"another port", "ssh://git@git.example:2222/acme/fleet", "git@git.example:acme/fleet", false},
		{"a gitlab subgroup and its parent group", "https://gitlab.com/group/sub/repo", "https://gitlab.com/group/repo", false},
		{"gitlab subgroups of one name", "https://gitlab.com/a/sub/repo", "https://gitlab.com/b/sub/repo", false},
		{"a path's case", "https://github.com/acme/fleet", "https://github.com/Acme/Fleet", false},
		{"a local path", "/srv/git/fleet.git", "/srv/git/fleet.git", false},
		{"an OCI repository", "oci://ghcr.io/acme/fleet", "https://ghcr.io/acme/fleet", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := sameRepository(tt.a, tt.b); got != tt.want {
				t.Errorf("sameRepository(%q, %q) = %v, want %v", tt.a, tt.b, got, tt.want)
			}
			if got := sameRepository(tt.b, tt.a); got != tt.want {
				t.Errorf("sameRepository(%q, %q) = %v, want %v", tt.b, tt.a, got, tt.want)
			}
		})
	}
}

// FuzzRepoKey checks repoKeyOf's key: a lowercase host, a path without
// the slashes around it or a .git suffix, no credential of a URL, and the
// same key read back from the https, ssh and scp-like URLs written from
// it.
func FuzzRepoKey(f *testing.F) {
	for _, s := range []string{
		"https://github.com/acme/fleet.git", "ssh://git@GitHub.com:22/acme/fleet/", "git@github.com:acme/fleet.git",
		"https://u:p@h:8443/a/b", "git@[::1]:a.git", "ssh://[fe80::1%25eth0]/x", "https://h/a/../b/.git", "h:/",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		k, ok := repoKeyOf(s)
		if !ok {
			return
		}
		if k.host == "" || k.path == "" || k.host != strings.ToLower(k.host) || strings.HasPrefix(k.path, "/") || strings.HasSuffix(k.path, "/") || strings.HasSuffix(k.path, ".git") {
			t.Fatalf("repoKeyOf(%q) = %+v", s, k)
		}
		if u, err := url.Parse(strings.TrimSpace(s)); err == nil && u.User != nil {
			if p, set := u.User.Password(); set && p != "" && strings.Contains(k.host, p) {
				t.Fatalf("repoKeyOf(%q) = %+v holds the password", s, k)
			}
		}
		if strings.Contains(strings.TrimPrefix(k.host, "["), "]:") || strings.Count(k.host, ":") == 1 {
			return // a port: the forms below would drop or change it
		}
		host := k.host
		if strings.Contains(host, ":") {
			host = "[" + host + "]"
		}
		forms := []string{
			(&url.URL{Scheme: "https", Host: host, Path: "/" + k.path + ".git"}).String(),
			(&url.URL{Scheme: "ssh", User: url.User("git"), Host: host, Path: "/" + k.path + "/"}).String(),
		}
		for _, form := range forms {
			if back, ok := repoKeyOf(form); !ok || back != k {
				t.Errorf("repoKeyOf(%q) = %+v, %v; want %+v, of %q", form, back, ok, k, s)
			}
		}
	})
}

func TestReadCheckout(t *testing.T) {
	log := slog.New(slog.DiscardHandler)
	t.Run("not a checkout", func(t *testing.T) {
		if co := readCheckout(t.TempDir(), log); co.found || co.remotes != nil || co.err != "" {
			t.Errorf("readCheckout = %+v, want nothing", co)
		}
	})
	t.Run("no remote", func(t *testing.T) {
		dir := t.TempDir()
		makeCheckout(t, dir)
		if co := readCheckout(dir, log); !co.found || co.remotes != nil || co.err != "" {
			t.Errorf("readCheckout = %+v, want a checkout without remotes", co)
		}
	})
	top := t.TempDir()
	makeCheckout(t, top, "upstream https://github.com/acme/fleet", "origin git@github.com:me/fleet.git", "origin https://github.com/me/fleet")
	want := []remote{{"origin", "git@github.com:me/fleet.git"}, {"origin", "https://github.com/me/fleet"}, {"upstream", "https://github.com/acme/fleet"}}
	deep := filepath.Join(top, "clusters", "prod")
	if err := os.MkdirAll(deep, 0o755); err != nil {
		t.Fatal(err)
	}
	// A linked worktree, as git worktree add lays it out: a .git file
	// naming its folder in the main checkout's .git, whose commondir
	// names that .git, where the config is.
	wt := t.TempDir()
	admin := filepath.Join(top, ".git", "worktrees", "wt")
	for name, content := range map[string]string{
		filepath.Join(admin, "commondir"): "../..\n",
		filepath.Join(admin, "HEAD"):      "ref: refs/heads/wt\n",
		filepath.Join(admin, "gitdir"):    filepath.Join(wt, ".git") + "\n",
		filepath.Join(wt, ".git"):         "gitdir: " + admin + "\n",
	} {
		if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(name, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// A .git file naming a folder relative to it, as a submodule's does.
	sub := filepath.Join(top, "sub")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(sub, ".git"), []byte("gitdir: ../.git\r\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for name, dir := range map[string]string{"the top": top, "a folder below": deep, "a linked worktree": wt, "a relative gitdir": sub} {
		t.Run(name, func(t *testing.T) {
			co := readCheckout(dir, log)
			if !co.found || co.err != "" {
				t.Fatalf("readCheckout = %+v", co)
			}
			if diff := cmp.Diff(co.remotes, want, cmp.AllowUnexported(remote{})); diff != "" {
				t.Errorf("remotes (-got +want):\n%s", diff)
			}
		})
	}
	t.Run("a .git file naming nothing", func(t *testing.T) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, ".git"), []byte("not a pointer\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		co := readCheckout(dir, log)
		if !co.found || co.remotes != nil || !strings.Contains(co.err, "does not start with gitdir:") {
			t.Errorf("readCheckout = %+v, want a checkout whose remotes cannot be read", co)
		}
	})
	t.Run("a remote's pushurl", func(t *testing.T) {
		dir := t.TempDir()
		makeCheckout(t, dir)
		cfg := "[remote \"origin\"]\n\turl = https://mirror.example/acme/fleet\n\tpushurl = git@github.com:acme/fleet.git\n"
		f, err := os.OpenFile(filepath.Join(dir, ".git", "config"), os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.WriteString(cfg); err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
		co := readCheckout(dir, log)
		want := []remote{{"origin", "https://mirror.example/acme/fleet"}, {"origin", "git@github.com:acme/fleet.git"}}
		if diff := cmp.Diff(co.remotes, want, cmp.AllowUnexported(remote{})); diff != "" || co.err != "" {
			t.Errorf("remotes (-got +want):\n%s (error %q)", diff, co.err)
		}
	})
	t.Run("a config with an extension go-git does not know", func(t *testing.T) {
		dir := t.TempDir()
		makeCheckout(t, dir, "origin https://github.com/acme/fleet")
		f, err := os.OpenFile(filepath.Join(dir, ".git", "config"), os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.WriteString("[extensions]\n\tpartialClone = origin\n\tworktreeConfig = true\n"); err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
		co := readCheckout(dir, log)
		if diff := cmp.Diff(co.remotes, []remote{{"origin", "https://github.com/acme/fleet"}}, cmp.AllowUnexported(remote{})); diff != "" || co.err != "" {
			t.Errorf("remotes (-got +want):\n%s (error %q)", diff, co.err)
		}
	})
}
