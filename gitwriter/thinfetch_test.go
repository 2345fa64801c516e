package gitwriter

import (
	"bytes"
	"context"
	"crypto/rand"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/imagebump/imagebump/internal/testkit/testgit"
)

// TestFetchSendsWhatChanged runs a reused shallow working copy against
// git http-backend and sshd (real git-upload-pack) while the remote's
// branch moves in the ways a fleet's does: one small commit, several,
// a force-push that rewrites the last commit (its tree holds an object
// of an older commit, which the shallow copy never had), a merge of a
// branch made from an older commit, and an unrelated history. After each,
// the working copy holds the remote's files, real git finds its store
// whole (git fsck), and no fetch fell back to the whole tree. A small
// change costs bytes, not the repository's 12 MB of random blobs, which
// every fetch brought before.
func TestFetchSendsWhatChanged(t *testing.T) {
	files := map[string]string{"clusters/app.yaml": "image: app:1.0.0\n", "clusters/web.yaml": "image: web:1.0.0\n"}
	for _, name := range []string{"blobs/a", "blobs/b", "blobs/c"} {
		files[name] = string(randomBytes(t, 4<<20))
	}
	bare := testgit.NewBare(t, files)
	start := testgit.Refs(t, bare)["refs/heads/main"]
	hs := testgit.StartHTTP(t, bare, false)
	sshd := testgit.StartSSH(t, bare)
	remotes := []struct {
		name string
		url  string
		auth Auth
	}{
		{"http", hs.URL, Auth{}},
		{"ssh", sshd.URL, Auth{SSHKeyFile: sshd.KeyFile, KnownHostsFile: sshd.KnownHostsFile}},
	}

	// Each step moves the remote's main branch, and says how many bytes
	// the working copy's store may grow by at most.
	small := int64(64 << 10)
	steps := []struct {
		name  string
		move  func(t *testing.T)
		limit int64
	}{
		{"one commit", func(t *testing.T) {
			testgit.Commit(t, bare, "main", map[string]string{"clusters/app.yaml": "image: app:1.1.0\n"}, nil, "bump app")
		}, small},
		{"five commits", func(t *testing.T) {
			for i := range 5 {
				testgit.Commit(t, bare, "main", map[string]string{"clusters/web.yaml": "image: web:1.0." + string(rune('1'+i)) + "\n"}, nil, "bump web")
			}
		}, small},
		{"last commit rewritten", func(t *testing.T) {
			// The new head's parent is the old head's parent, and its
			// web.yaml is the one of two commits back, which the shallow
			// copy never fetched.
			rewrite(t, bare, "git reset --quiet --hard HEAD~1 && printf 'image: web:1.0.3\\n' > clusters/web.yaml && git commit --quiet -am rewritten && git push --quiet --force origin HEAD:main")
		}, small},
		{"merge of an old branch", func(t *testing.T) {
			rewrite(t, bare, "git checkout --quiet -b side HEAD~3 && printf 'x: 1\\n' > side.yaml && git add side.yaml && git commit --quiet -m side && "+
				"git checkout --quiet main && git merge --quiet --no-edit side && git push --quiet origin HEAD:main")
		}, small},
		{"unrelated history", func(t *testing.T) {
			rewrite(t, bare, "git checkout --quiet --orphan fresh && git rm --quiet -rf --cached . && rm -rf clusters side.yaml && mkdir clusters && "+
				"printf 'image: app:9.0.0\\n' > clusters/app.yaml && git add clusters && git commit --quiet -m fresh && git push --quiet --force origin HEAD:main")
		}, small},
	}

	for _, rm := range remotes {
		t.Run(rm.name, func(t *testing.T) {
			wd := t.TempDir()
			var logs bytes.Buffer
			opts := Options{URL: rm.url, Auth: rm.auth, Workdir: wd, Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))}
			openClose(t, opts)
			for _, st := range steps {
				st.move(t)
				before := dirBytes(t, filepath.Join(wd, ".git", "objects"))
				openClose(t, opts)
				grew := dirBytes(t, filepath.Join(wd, ".git", "objects")) - before
				if grew > st.limit {
					t.Errorf("%s: the store grew by %d bytes, want at most %d", st.name, grew, st.limit)
				}
				for _, name := range []string{"clusters/app.yaml", "clusters/web.yaml", "side.yaml"} {
					want, ok := testgit.ReadFile(t, bare, "main", name)
					got, err := os.ReadFile(filepath.Join(wd, filepath.FromSlash(name)))
					if ok != (err == nil) || (ok && string(got) != want) {
						t.Errorf("%s: %s is %q (%v), the remote has %q (%v)", st.name, name, got, err, want, ok)
					}
				}
				if out, err := testgit.GitErr(t, wd, nil, "fsck", "--no-progress", "--no-dangling"); err != nil {
					t.Fatalf("%s: git fsck on the working copy: %v\n%s", st.name, err, out)
				}
				if logs.Len() > 0 {
					t.Fatalf("%s: warnings: %s", st.name, logs.String())
				}
			}
		})
		// The next remote starts from the same history.
		testgit.Git(t, bare, "update-ref", "refs/heads/main", start)
	}
}

// openClose opens the working copy opts describe, fetching, and closes it.
func openClose(t testing.TB, opts Options) {
	t.Helper()
	r, err := Open(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
}

// rewrite runs script in a full clone of bare, whose origin is bare.
func rewrite(t *testing.T, bare, script string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "w")
	testgit.Git(t, filepath.Dir(dir), "clone", "--quiet", bare, dir)
	cmd := exec.Command("sh", "-ec", script)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.invalid", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.invalid")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", script, err, out)
	}
}

func randomBytes(t testing.TB, n int) []byte {
	t.Helper()
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return b
}

// dirBytes returns the size of the files under dir.
func dirBytes(t testing.TB, dir string) int64 {
	t.Helper()
	var n int64
	err := filepath.WalkDir(dir, func(_ string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		fi, err := d.Info()
		if err == nil {
			n += fi.Size()
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestThinFetchCutOff: what a fetch asks of the server; and a connection
// that breaks while the thin pack comes
// is the network's failure: the fetch fails with it, and is not done again
// as a whole-tree fetch (which would spend a second timeout); nothing of
// the partial pack stays, and the next Open fetches the change.
func TestThinFetchCutOff(t *testing.T) {
	files := map[string]string{"clusters/app.yaml": "image: app:1.0.0\n", "blobs/a": string(randomBytes(t, 1<<20))}
	bare := testgit.NewBare(t, files)
	hs := testgit.StartHTTP(t, bare, false)
	target, err := url.Parse(hs.URL)
	if err != nil {
		t.Fatal(err)
	}
	target.Path = ""
	var cut atomic.Bool
	var uploads, lists atomic.Int32
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/info/refs") {
			lists.Add(1)
		}
		if !strings.HasSuffix(r.URL.Path, "/git-upload-pack") {
			httputil.NewSingleHostReverseProxy(target).ServeHTTP(w, r)
			return
		}
		uploads.Add(1)
		if !cut.Load() {
			httputil.NewSingleHostReverseProxy(target).ServeHTTP(w, r)
			return
		}
		// The answer's first bytes, then a broken connection.
		rec := httptest.NewRecorder()
		httputil.NewSingleHostReverseProxy(target).ServeHTTP(rec, r)
		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		w.WriteHeader(rec.Code)
		body := rec.Body.Bytes()
		_, _ = w.Write(body[:min(len(body), 300)])
		w.(http.Flusher).Flush()
		conn, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			conn.Close()
		}
	}))
	t.Cleanup(proxy.Close)
	wd := t.TempDir()
	opts := Options{URL: proxy.URL + target.Path + strings.TrimPrefix(hs.URL, "http://"+target.Host), Branch: "main", Workdir: wd}
	open := func() error {
		r, err := Open(context.Background(), opts)
		if err != nil {
			return err
		}
		return r.Close()
	}
	if err := open(); err != nil {
		t.Fatal(err)
	}
	// Requests: a fetch with nothing new lists the refs once; one that
	// brings a commit lists them once and asks for the pack once, in the
	// same session (it listed them twice).
	// With no branch configured, the listing that finds the default
	// branch serves the fetch.
	for _, step := range []struct {
		name         string
		lists, packs int32
		commit       bool
		branch       string
	}{
		{"nothing new", 1, 0, false, "main"},
		{"a commit", 1, 1, true, "main"},
		{"nothing new, the default branch", 1, 0, false, ""},
	} {
		if step.commit {
			testgit.Commit(t, bare, "main", map[string]string{"clusters/app.yaml": "image: app:1.0.1\n"}, nil, "bump")
		}
		lists.Store(0)
		uploads.Store(0)
		opts.Branch = step.branch
		if err := open(); err != nil {
			t.Fatal(err)
		}
		if l, p := lists.Load(), uploads.Load(); l != step.lists || p != step.packs {
			t.Errorf("%s: %d listings and %d pack requests, want %d and %d", step.name, l, p, step.lists, step.packs)
		}
	}
	testgit.Commit(t, bare, "main", map[string]string{"clusters/app.yaml": "image: app:1.1.0\n", "blobs/b": string(randomBytes(t, 64<<10))}, nil, "bump")
	cut.Store(true)
	uploads.Store(0)
	err = open()
	if err == nil {
		t.Fatal("Open succeeded over a connection cut in the middle of the pack")
	}
	if n := uploads.Load(); n != 1 {
		t.Errorf("%d fetch requests after the cut, want 1 (no whole-tree fetch after a network error): %v", n, err)
	}
	if temps, _ := filepath.Glob(filepath.Join(wd, ".git", "objects", "pack", "tmp_*")); len(temps) > 0 {
		t.Errorf("partial files left: %v", temps)
	}
	cut.Store(false)
	if err := open(); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(filepath.Join(wd, "clusters", "app.yaml")); string(got) != "image: app:1.1.0\n" {
		t.Errorf("after the connection came back, app.yaml = %q", got)
	}
}
