package gitwriter

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/imagebump/imagebump/internal/testkit/testgit"
)

// TestShallowListKeepsTheBoundary runs cycles on a reused shallow working
// copy while someone else commits between them, and checks after each
// that .git/shallow lists the tracked head's boundary and at most one
// other commit, however many heads were fetched: before, it gained an
// entry per fetch, and each fetch sent them all. Real git must find the
// store whole after each cycle (git fsck reads the shallow file: a
// boundary dropped while a ref still reaches it is a missing parent).
// The thin fetch (git http-backend) and go-git's fetch (a file:// remote,
// served in-process) both keep it short. A shallow.lock a killed cycle
// left is removed by the next Open.
func TestShallowListKeepsTheBoundary(t *testing.T) {
	for _, remote := range []string{"http", "file"} {
		t.Run(remote, func(t *testing.T) {
			bare := testgit.NewBare(t, map[string]string{"clusters/app.yaml": "image: app:1.0.0\n"})
			url := remoteURL(t, remote, bare)
			wd := t.TempDir()
			opts := Options{URL: url, Workdir: wd}
			shallowFile := filepath.Join(wd, ".git", "shallow")
			var fetched []string
			for i := range 6 {
				testgit.Commit(t, bare, "main", map[string]string{"clusters/app.yaml": fmt.Sprintf("image: app:1.%d.0\n", i+1)}, nil, "theirs")
				if i == 3 {
					if err := os.WriteFile(shallowFile+".lock", []byte("left by a killed cycle\n"), 0o644); err != nil {
						t.Fatal(err)
					}
					leaveOld(t, shallowFile+".lock")
				}
				r, err := Open(context.Background(), opts)
				if err != nil {
					t.Fatal(err)
				}
				res, err := r.Update(context.Background(), Update{Commit: Commit{AuthorName: "imagebump", AuthorEmail: "imagebump@example.invalid"}},
					func(_ context.Context, dir string) ([]string, string, error) {
						return []string{"ours.yaml"}, "ours", os.WriteFile(filepath.Join(dir, "ours.yaml"), []byte(fmt.Sprintf("n: %d\n", i)), 0o644)
					})
				if err != nil {
					t.Fatal(err)
				}
				if !res.Pushed {
					t.Fatalf("cycle %d pushed nothing", i)
				}
				// Our commit is the head; its parent, theirs, the
				// boundary of the fetch.
				theirs := testgit.Git(t, bare, "rev-parse", "refs/heads/main~1")
				fetched = append(fetched, theirs)
				list := shallowList(t, shallowFile)
				if !slices.Contains(list, theirs) || len(list) > 2 {
					t.Errorf("cycle %d: the shallow file lists %d commits %v, want %s and at most one other", i, len(list), list, theirs)
				}
				// Every head fetched so far listed again, the walk from
				// the refs, through our commit, keeps theirs alone.
				if err := r.setShallow(hashes(fetched)); err != nil {
					t.Fatal(err)
				}
				if list := shallowList(t, shallowFile); !slices.Equal(list, []string{theirs}) {
					t.Errorf("cycle %d: with every fetched head listed, setShallow kept %v, want [%s]", i, list, theirs)
				}
				if err := r.Close(); err != nil {
					t.Fatal(err)
				}
				if out, err := testgit.GitErr(t, wd, nil, "fsck", "--no-progress", "--no-dangling"); err != nil {
					t.Fatalf("cycle %d: git fsck on the working copy: %v\n%s", i, err, out)
				}
				if _, err := os.Stat(shallowFile + ".lock"); err == nil {
					t.Errorf("cycle %d: shallow.lock is still there", i)
				}
			}
		})
	}
}

// shallowList returns the commits the shallow file at path lists.
func shallowList(t *testing.T, path string) []string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Fields(string(data))
}

func hashes(hexes []string) []plumbing.Hash {
	hs := make([]plumbing.Hash, len(hexes))
	for i, h := range hexes {
		hs[i] = plumbing.NewHash(h)
	}
	return hs
}

// TestShallowListKeepsWhatGitReaches: an operator who runs git in the
// working copy leaves reflogs (git pull, git fetch) or a linked worktree,
// from which git walks too. After more cycles, each fetching a new head,
// real git must still find every boundary it reaches: git fsck passes and
// git gc can repack. Pruning from the refs alone failed both.
func TestShallowListKeepsWhatGitReaches(t *testing.T) {
	for _, tt := range []struct {
		name string
		git  []string
		at   []int // the cycles before which it runs
	}{
		// Twice: after one pull, ORIG_HEAD and FETCH_HEAD name what the
		// reflogs do; after the second, only the reflogs name the first.
		{"git pull", []string{"pull", "--quiet"}, []int{1, 3}},
		{"git worktree add", []string{"worktree", "add", "--quiet", "--detach", "../linked"}, []int{1}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			bare := testgit.NewBare(t, map[string]string{"clusters/app.yaml": "image: app:1.0.0\n"})
			opts := Options{URL: testgit.StartHTTP(t, bare, false).URL, Workdir: filepath.Join(t.TempDir(), "wd")}
			for i := range 6 {
				testgit.Commit(t, bare, "main", map[string]string{"clusters/app.yaml": fmt.Sprintf("image: app:1.%d.0\n", i+1)}, nil, "theirs")
				if slices.Contains(tt.at, i) {
					testgit.Git(t, opts.Workdir, tt.git...)
					testgit.Commit(t, bare, "main", map[string]string{"other.yaml": fmt.Sprintf("x: %d\n", i)}, nil, "theirs again")
				}
				openClose(t, opts)
			}
			for _, args := range [][]string{{"fsck", "--no-progress", "--no-dangling"}, {"gc", "--quiet"}, {"fsck", "--no-progress", "--no-dangling"}} {
				if out, err := testgit.GitErr(t, opts.Workdir, nil, args...); err != nil {
					t.Fatalf("git %s in the working copy: %v\n%s", args[0], err, out)
				}
			}
		})
	}
}

// TestShallowWriteFailure: when the shallow file cannot be written after
// a thin fetch stored its objects, the fetch fails and the tracking ref
// stays where it was. It fell back to go-git's fetch, which found the head
// stored and moved the ref with no new boundary: git fsck found the
// working copy broken, and it stayed so. A shallow.lock that is a folder
// (Open removes only a file) stands for any write failure.
func TestShallowWriteFailure(t *testing.T) {
	bare := testgit.NewBare(t, map[string]string{"clusters/app.yaml": "image: app:1.0.0\n"})
	wd := t.TempDir()
	opts := Options{URL: testgit.StartHTTP(t, bare, false).URL, Workdir: wd}
	openClose(t, opts)
	tracked := testgit.Git(t, wd, "rev-parse", "refs/remotes/origin/main")
	testgit.Commit(t, bare, "main", map[string]string{"clusters/app.yaml": "image: app:1.1.0\n"}, nil, "theirs")
	testgit.Commit(t, bare, "main", map[string]string{"clusters/app.yaml": "image: app:1.2.0\n"}, nil, "theirs again")
	lock := filepath.Join(wd, ".git", "shallow.lock")
	if err := os.MkdirAll(filepath.Join(lock, "in-the-way"), 0o755); err != nil {
		t.Fatal(err)
	}
	if r, err := Open(context.Background(), opts); err == nil {
		r.Close()
		t.Fatal("Open succeeded with a shallow file it could not write")
	} else if !strings.Contains(err.Error(), "writing the shallow file") {
		t.Errorf("Open: %v, want an error writing the shallow file", err)
	}
	if got := testgit.Git(t, wd, "rev-parse", "refs/remotes/origin/main"); got != tracked {
		t.Errorf("the tracking ref moved to %s with the fetch failed; want %s", got, tracked)
	}
	if err := os.RemoveAll(lock); err != nil {
		t.Fatal(err)
	}
	openClose(t, opts)
	if got, _ := os.ReadFile(filepath.Join(wd, "clusters", "app.yaml")); string(got) != "image: app:1.2.0\n" {
		t.Errorf("after the fix, app.yaml = %q", got)
	}
	if out, err := testgit.GitErr(t, wd, nil, "fsck", "--no-progress", "--no-dangling"); err != nil {
		t.Fatalf("git fsck on the working copy: %v\n%s", err, out)
	}
}

// TestShallowBackToAnOldHead: the remote's branch is set back to a head
// fetched cycles ago, which the store still holds and the list no longer
// names. go-git's fetch (a file:// remote) moves the ref to it and lists
// nothing; the pruning must list it again (its parent is missing), or git
// finds the working copy broken and the next thin fetch claims a history
// the store lacks. Then the remote moves on.
func TestShallowBackToAnOldHead(t *testing.T) {
	for _, remote := range []string{"file", "http"} {
		t.Run(remote, func(t *testing.T) {
			bare := testgit.NewBare(t, map[string]string{"clusters/app.yaml": "image: app:1.0.0\n"})
			url := remoteURL(t, remote, bare)
			opts := Options{URL: url, Workdir: t.TempDir()}
			old := testgit.Commit(t, bare, "main", map[string]string{"clusters/app.yaml": "image: app:1.1.0\n"}, nil, "old")
			openClose(t, opts)
			for _, v := range []string{"1.2.0", "1.3.0", "1.4.0"} {
				testgit.Commit(t, bare, "main", map[string]string{"clusters/app.yaml": "image: app:" + v + "\n"}, nil, "newer")
				openClose(t, opts)
			}
			testgit.Git(t, bare, "update-ref", "refs/heads/main", old)
			openClose(t, opts)
			fsck := func(when string) {
				t.Helper()
				if out, err := testgit.GitErr(t, opts.Workdir, nil, "fsck", "--no-progress", "--no-dangling"); err != nil {
					t.Fatalf("git fsck on the working copy %s: %v\n%s", when, err, out)
				}
			}
			fsck("set back")
			testgit.Commit(t, bare, "main", map[string]string{"clusters/app.yaml": "image: app:2.0.0\n"}, nil, "on again")
			openClose(t, opts)
			if got, _ := os.ReadFile(filepath.Join(opts.Workdir, "clusters", "app.yaml")); string(got) != "image: app:2.0.0\n" {
				t.Errorf("app.yaml = %q after the remote moved on", got)
			}
			fsck("moved on")
		})
	}
}

// remoteURL serves bare as kind says: "http" through git http-backend
// (the thin fetch), "file" in process (go-git's fetch).
func remoteURL(t *testing.T, kind, bare string) string {
	t.Helper()
	if kind == "http" {
		return testgit.StartHTTP(t, bare, false).URL
	}
	return fileURL(bare)
}
