package gitwriter

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/format/index"

	"github.com/imagebump/imagebump/internal/testkit/testgit"
)

// TestResetWorktree leaves a working copy in shapes that make the next
// Open hard-reset it, with a commit made elsewhere meanwhile, and checks
// with git that the worktree then holds the new head. A file the reset
// has no need to write is kept (README.md, the same in both commits and
// untouched but for its times, so that the reset hashes it); nothing
// outside the worktree is written
// through a link that took a folder's place.
func TestResetWorktree(t *testing.T) {
	tests := []struct {
		name string
		// damage changes the worktree; outside is a folder beside it.
		damage func(t *testing.T, dir, outside string)
	}{
		{
			name: "a changed file and untracked ones",
			damage: func(t *testing.T, dir, _ string) {
				write(t, filepath.Join(dir, "clusters/prod/app.yaml"), "image: app:9.9.9\n")
				write(t, filepath.Join(dir, "stray/deep/x.yaml"), "x\n")
				write(t, filepath.Join(dir, "clusters/prod/stray.yaml"), "x\n")
			},
		},
		{
			name: "a folder replaced by a link to another",
			damage: func(t *testing.T, dir, outside string) {
				write(t, filepath.Join(outside, "app.yaml"), "image: app:6.6.6\n")
				write(t, filepath.Join(outside, "web.yaml"), seed["clusters/prod/web.yaml"])
				if err := os.RemoveAll(filepath.Join(dir, "clusters/prod")); err != nil {
					t.Fatal(err)
				}
				if err := os.Symlink(outside, filepath.Join(dir, "clusters/prod")); err != nil {
					t.Fatal(err)
				}
			},
		},
		{
			name: "a folder replaced by a file",
			damage: func(t *testing.T, dir, _ string) {
				if err := os.RemoveAll(filepath.Join(dir, "clusters")); err != nil {
					t.Fatal(err)
				}
				write(t, filepath.Join(dir, "clusters"), "not a folder\n")
			},
		},
		{
			name: "a file replaced by a folder",
			damage: func(t *testing.T, dir, _ string) {
				p := filepath.Join(dir, "clusters/prod/web.yaml")
				if err := os.Remove(p); err != nil {
					t.Fatal(err)
				}
				write(t, filepath.Join(p, "inside.yaml"), "x\n")
			},
		},
		{
			name: "a mode changed, a file deleted, the state file gone",
			damage: func(t *testing.T, dir, _ string) {
				if err := os.Chmod(filepath.Join(dir, "clusters/prod/app.yaml"), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.Remove(filepath.Join(dir, "clusters/prod/web.yaml")); err != nil {
					t.Fatal(err)
				}
				if err := os.Remove(filepath.Join(dir, ".git", resetStateFile)); err != nil {
					t.Fatal(err)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bare := testgit.NewBare(t, seed)
			workdir := filepath.Join(t.TempDir(), "work")
			outside := filepath.Join(t.TempDir(), "outside")
			opts := Options{URL: fileURL(bare), Branch: "main", Workdir: workdir}
			mustOpen(t, opts).Close()
			// A time no write gives: a file written again has another.
			readmePath := filepath.Join(workdir, "README.md")
			old := time.Date(2001, 2, 3, 4, 5, 6, 0, time.UTC)
			if err := os.Chtimes(readmePath, old, old); err != nil {
				t.Fatal(err)
			}
			readme, err := os.Lstat(readmePath)
			if err != nil {
				t.Fatal(err)
			}
			moved := testgit.Commit(t, bare, "main", map[string]string{
				"clusters/prod/new.yaml": "new\n",
				"clusters/prod/web.yaml": "image: web:2.0.0\n",
			}, nil, "meanwhile")
			tt.damage(t, workdir, outside)

			logger, logs := newLogger()
			opts.Logger = logger
			r := mustOpen(t, opts)
			defer r.Close()
			if !strings.Contains(logs.String(), "hard-resetting the worktree") || strings.Contains(logs.String(), "re-cloning") {
				t.Fatalf("Open did not reset the reused working copy:\n%s", logs)
			}
			checkWorkdir(t, workdir, bare, moved)
			if got, err := os.Lstat(readmePath); err != nil || !os.SameFile(readme, got) || !got.ModTime().Equal(old) {
				t.Errorf("the reset wrote README.md again (%v): the file was clean", err)
			}
			if b, err := os.ReadFile(filepath.Join(outside, "app.yaml")); err == nil && string(b) != "image: app:6.6.6\n" {
				t.Errorf("the reset wrote through the link, outside the worktree: app.yaml = %q", b)
			}
			if _, err := os.Stat(filepath.Join(outside, "new.yaml")); err == nil {
				t.Errorf("the reset wrote new.yaml through the link, outside the worktree")
			}
			// The next Open finds the worktree as the reset recorded it.
			logger, logs = newLogger()
			opts.Logger = logger
			mustOpen(t, opts).Close()
			if strings.Contains(logs.String(), "hard-resetting") {
				t.Errorf("the Open after the reset reset again:\n%s", logs)
			}
		})
	}
}

// TestResetSyncsBeforeIndex: the files a reset writes are made durable
// before the new index records their times (durable.go), and those it
// keeps are not synced for nothing.
func TestResetSyncsBeforeIndex(t *testing.T) {
	bare := testgit.NewBare(t, seed)
	workdir := t.TempDir()
	opts := Options{URL: fileURL(bare), Branch: "main", Workdir: workdir}
	mustOpen(t, opts).Close()
	write(t, filepath.Join(workdir, "clusters/prod/app.yaml"), "image: app:9.9.9\n")
	old, err := indexChecksum(filepath.Join(workdir, ".git", "index"))
	if err != nil {
		t.Fatal(err)
	}
	var synced []string
	var indexThen string
	orig := syncFiles
	t.Cleanup(func() { syncFiles = orig })
	syncFiles = func(dir string, paths []string) error {
		synced = append(synced, paths...)
		indexThen, _ = indexChecksum(filepath.Join(dir, ".git", "index"))
		return orig(dir, paths)
	}
	mustOpen(t, opts).Close()
	checkWorkdir(t, workdir, bare, mainSHA(t, bare))
	if !slices.Equal(synced, []string{"clusters/prod/app.yaml"}) {
		t.Errorf("the reset synced %q, want the one file it wrote", synced)
	}
	if indexThen != old {
		t.Errorf("the index was rewritten before the files written were synced")
	}
}

// TestHandEditSameSizeAndTime: a file edited by hand to the same size,
// its modification time put back (sed -i; touch -d), is found changed by
// its inode and ctime, as git finds it, and reset: by Open when it checks
// the worktree, and by Clean when Open trusted it. The index is written
// well after the file (an Update of another file), so that the entry is
// not racy and only the lstat compare can tell.
func TestHandEditSameSizeAndTime(t *testing.T) {
	for _, trust := range []bool{false, true} {
		t.Run(map[bool]string{false: "Open", true: "Clean"}[trust], func(t *testing.T) {
			bare := testgit.NewBare(t, seed)
			opts := Options{URL: fileURL(bare), Branch: "main", Workdir: t.TempDir(), TrustWorktree: trust}
			mustOpen(t, opts).Close()
			time.Sleep(20 * time.Millisecond)
			r := mustOpen(t, opts)
			if _, err := r.Update(t.Context(), Update{Commit: author}, setFiles(map[string]string{"clusters/prod/web.yaml": "image: web:2.0.0\n"}, "Bump", nil)); err != nil {
				t.Fatal(err)
			}
			r.Close()
			p := filepath.Join(opts.Workdir, "clusters/prod/app.yaml")
			fi, err := os.Stat(p)
			if err != nil {
				t.Fatal(err)
			}
			time.Sleep(10 * time.Millisecond) // a new ctime
			edited := strings.Replace(seed["clusters/prod/app.yaml"], "1.0.0", "6.6.6", 1)
			tmp := p + ".tmp"
			write(t, tmp, edited)
			if err := os.Rename(tmp, p); err != nil {
				t.Fatal(err)
			}
			if err := os.Chtimes(p, fi.ModTime(), fi.ModTime()); err != nil {
				t.Fatal(err)
			}
			r = mustOpen(t, opts)
			if trust {
				if err := r.Clean(); err != nil {
					t.Fatal(err)
				}
			}
			if b, err := os.ReadFile(p); err != nil || string(b) != seed["clusters/prod/app.yaml"] {
				t.Errorf("the edited file = %q, %v; want it reset to %q", b, err, seed["clusters/prod/app.yaml"])
			}
		})
	}
}

// TestIndexRefreshed: files whose lstat data changed but not their
// content (a chmod that changes nothing moves the ctime, as a copy of the
// folder or a chown would) are hashed once by a check of the whole
// worktree, which then writes their new lstat data into the index and
// records the state, so that the next check trusts them. A file changed
// less than refreshAfter ago is left out (it may change again within the
// tick its lstat data show): it is hashed again at the next check.
func TestIndexRefreshed(t *testing.T) {
	for _, tt := range []struct {
		name    string
		after   time.Duration
		refresh bool
	}{
		{"settled", 0, true},
		{"just changed", time.Hour, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			defer func(was time.Duration) { refreshAfter = was }(refreshAfter)
			refreshAfter = tt.after
			bare := testgit.NewBare(t, seed)
			opts := Options{URL: fileURL(bare), Branch: "main", Workdir: t.TempDir()}
			mustOpen(t, opts).Close()
			time.Sleep(10 * time.Millisecond)
			for p := range seed {
				if err := os.Chmod(filepath.Join(opts.Workdir, filepath.FromSlash(p)), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			time.Sleep(10 * time.Millisecond) // the refreshed index is written after the files' ctimes
			r := mustOpen(t, opts)
			idx, err := r.repo.Storer.Index()
			if err != nil {
				t.Fatal(err)
			}
			for p := range seed {
				e, err := idx.Entry(p)
				if err != nil {
					t.Fatal(err)
				}
				fi, err := os.Lstat(filepath.Join(opts.Workdir, filepath.FromSlash(p)))
				if err != nil {
					t.Fatal(err)
				}
				if statSame(e, fi) != tt.refresh {
					t.Errorf("%s: the index holds its new lstat data: %v, want %v", p, !tt.refresh, tt.refresh)
				}
			}
			if at, why := r.recordedState(); why.text != "" || at.String() != r.Head() {
				t.Errorf("recordedState() = %s, %q; want the head recorded for the index", at, why.text)
			}
		})
	}
}

// TestCleanStale: Clean rewrites the files a caller names as not holding
// what the commit does, though the worktree was verified and their lstat
// data are what the index records (an edit within one clock tick, or on
// a file system whose ctime follows its mtime, leaves them so); without
// names, it trusts them, as git does.
func TestCleanStale(t *testing.T) {
	bare := testgit.NewBare(t, seed)
	r := mustOpen(t, Options{URL: fileURL(bare), Branch: "main", Workdir: t.TempDir()})
	const rel = "clusters/prod/app.yaml"
	p := filepath.Join(r.Dir(), rel)
	edited := strings.Replace(seed[rel], "1.0.0", "6.6.6", 1)
	write(t, p, edited)

	// The index takes the edited file's lstat data, with the old blob.
	idx, err := r.repo.Storer.Index()
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Lstat(p)
	if err != nil {
		t.Fatal(err)
	}
	e, err := idx.Entry(rel)
	if err != nil {
		t.Fatal(err)
	}
	setEntryStat(e, statFields(fi))
	time.Sleep(10 * time.Millisecond) // the index is written after the file: not racy
	if err := r.repo.Storer.SetIndex(idx); err != nil {
		t.Fatal(err)
	}
	r.recordState()
	r.verified = false

	if err := r.Clean(); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(p); string(b) != edited {
		t.Fatalf("Clean() wrote %s again: %q; the test's index no longer fools the lstat check", rel, b)
	}
	if err := r.Clean(rel); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(p); err != nil || string(b) != seed[rel] {
		t.Errorf("after Clean(%q): %q, %v; want %q", rel, b, err, seed[rel])
	}
	if st := testgit.Git(t, r.Dir(), "status", "--porcelain"); st != "" {
		t.Errorf("git status = %q, want clean", st)
	}
}

// TestIndexVersion4: an index of version 4 (prefix-compressed paths,
// which `git update-index --index-version 4` or feature.manyFiles give)
// is patched through go-git (patchIndexSlowly), by a commit and by the
// refresh of a whole check. Each entry must then hold every lstat field
// of its file, the device too, and the index keep its version; git reads
// it and finds nothing changed.
func TestIndexVersion4(t *testing.T) {
	bare := testgit.NewBare(t, seed)
	opts := Options{URL: fileURL(bare), Branch: "main", Workdir: t.TempDir()}
	mustOpen(t, opts).Close()
	// Made version 4 while the working copy is open: the reset of an
	// Open would write a new index of version 2.
	r := mustOpen(t, opts)
	testgit.Git(t, opts.Workdir, "update-index", "--index-version", "4")
	if v, stale := readIndexStat(t, opts.Workdir); v != 4 || len(stale) > 0 {
		t.Fatalf("after git update-index --index-version 4: version %d, stale %q", v, stale)
	}
	if _, err := r.Update(t.Context(), Update{Commit: author}, setFiles(map[string]string{"clusters/prod/web.yaml": "image: web:2.0.0\n"}, "Bump", nil)); err != nil {
		t.Fatal(err)
	}
	r.Close()
	if v, stale := readIndexStat(t, opts.Workdir); v != 4 || len(stale) > 0 {
		t.Errorf("after a commit: version %d, want 4 kept; stale lstat data for %q", v, stale)
	}

	// A chmod that changes nothing moves every file's ctime; a check of
	// the whole worktree hashes them and refreshes the index.
	defer func(was time.Duration) { refreshAfter = was }(refreshAfter)
	refreshAfter = 0
	time.Sleep(10 * time.Millisecond)
	for p := range seed {
		if err := os.Chmod(filepath.Join(opts.Workdir, filepath.FromSlash(p)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if _, stale := readIndexStat(t, opts.Workdir); len(stale) != len(seed) {
		t.Fatalf("stale lstat data for %q after the chmod, want every file", stale)
	}
	time.Sleep(10 * time.Millisecond)
	mustOpen(t, opts).Close()
	if v, stale := readIndexStat(t, opts.Workdir); v != 4 || len(stale) > 0 {
		t.Errorf("after the refresh: version %d, want 4 kept; stale lstat data for %q", v, stale)
	}
	if at, err := indexChecksum(filepath.Join(opts.Workdir, ".git", "index")); err != nil || !strings.Contains(readState(t, opts.Workdir), at) {
		t.Errorf("the state recorded is not for the refreshed index (%v)", err)
	}
	checkWorkdir(t, opts.Workdir, bare, mainSHA(t, bare))
}

// readIndexStat reads the working copy's index with go-git and returns
// its version and the files whose entries do not hold every one of their
// lstat fields.
func readIndexStat(t *testing.T, workdir string) (version uint32, stale []string) {
	t.Helper()
	f, err := os.Open(filepath.Join(workdir, ".git", "index"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var idx index.Index
	if err := index.NewDecoder(f).Decode(&idx); err != nil {
		t.Fatalf("reading the index: %v", err)
	}
	for _, e := range idx.Entries {
		fi, err := os.Lstat(filepath.Join(workdir, filepath.FromSlash(e.Name)))
		if err != nil {
			t.Fatal(err)
		}
		if entryStat(e) != statFields(fi) {
			stale = append(stale, e.Name)
		}
	}
	return idx.Version, stale
}

// readState returns the working copy's state file.
func readState(t *testing.T, workdir string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(workdir, ".git", resetStateFile))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestRefreshIndexFails: a refresh whose index write fails (here a lock
// another git command holds) records no state, so that the next Open
// checks the worktree whole rather than trusting an index that may be
// torn (go-git, on the slow path, writes it in place).
func TestRefreshIndexFails(t *testing.T) {
	bare := testgit.NewBare(t, seed)
	opts := Options{URL: fileURL(bare), Branch: "main", Workdir: t.TempDir()}
	r := mustOpen(t, opts)
	if _, why := r.recordedState(); why.text != "" {
		t.Fatalf("no state recorded after Open: %s", why.text)
	}
	lock := filepath.Join(opts.Workdir, ".git", "index.lock")
	write(t, lock, "")
	fi, err := os.Lstat(filepath.Join(opts.Workdir, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	r.refreshIndex([]indexChange{{name: "README.md", hash: plumbing.ComputeHash(plumbing.BlobObject, []byte(seed["README.md"])), mode: filemode.Regular, stat: statFields(fi)}})
	if _, why := r.recordedState(); why.text != "no recorded reset" {
		t.Errorf("recordedState after a failed refresh: %q, want none recorded", why.text)
	}
	r.Close()
	if err := os.Remove(lock); err != nil {
		t.Fatal(err)
	}
	logger, logs := newLogger()
	opts.Logger = logger
	mustOpen(t, opts).Close()
	if !strings.Contains(logs.String(), "no recorded reset") {
		t.Errorf("the next Open trusted the worktree:\n%s", logs)
	}
}

// TestTreeNamed: the tree Open takes from the first line of a head
// commit the state file records, without reading a long message whole,
// is the commit's: loose (a commit imagebump made) and packed (a clone's,
// with a message of 1,500 lines, as a first run's bump has). The
// commit's name is not checked there: it was when the state was written.
func TestTreeNamed(t *testing.T) {
	bare := testgit.NewBare(t, seed)
	var long strings.Builder
	for i := range 1500 { // 80 kB: git's limit for one argument is 128 kB
		fmt.Fprintf(&long, "- clusters/prod/app%04d.yaml: app:1.0.0 -> app:1.1.0\n", i)
	}
	testgit.Commit(t, bare, "main", map[string]string{"clusters/prod/app.yaml": "image: app:1.1.0\n"}, nil, "Bump\n\n"+long.String())
	testgit.Git(t, bare, "gc", "--quiet")
	opts := Options{URL: fileURL(bare), Branch: "main", Workdir: t.TempDir()}
	r := mustOpen(t, opts)
	check := func(when string) {
		t.Helper()
		head := plumbing.NewHash(testgit.Git(t, opts.Workdir, "rev-parse", "HEAD"))
		want := testgit.Git(t, opts.Workdir, "rev-parse", "HEAD^{tree}")
		if got, err := commitTree(r.repo, r.objects, head, true); err != nil || got.String() != want {
			t.Errorf("%s: commitTree of a known commit = %s, %v; want %s", when, got, err, want)
		}
	}
	check("a packed commit with a long message")
	if res, err := r.Update(t.Context(), Update{Commit: author}, setFiles(map[string]string{"clusters/prod/app.yaml": "image: app:2.0.0\n"}, "Bump", nil)); err != nil || !res.Pushed {
		t.Fatalf("Update: %+v, %v", res, err)
	}
	check("a loose commit")
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	// The next Open takes the tree that way and moves on from it.
	mustOpen(t, opts).Close()
	checkWorkdir(t, opts.Workdir, bare, mainSHA(t, bare))
}
