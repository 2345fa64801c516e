package gitwriter

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/google/go-cmp/cmp"

	"github.com/imagebump/imagebump/internal/testkit/testgit"
)

// checkWorkdir checks with git itself that the working copy holds rev:
// HEAD on the tracked branch at rev, an index equal to rev's tree, every
// file as the index says, and the files of rev's tree.
func checkWorkdir(t *testing.T, workdir, bare, rev string) {
	t.Helper()
	if got := testgit.Git(t, workdir, "rev-parse", "HEAD"); got != rev {
		t.Errorf("HEAD = %s, want %s", got, rev)
	}
	if got := testgit.Git(t, workdir, "symbolic-ref", "HEAD"); got != "refs/heads/main" {
		t.Errorf("HEAD points at %s", got)
	}
	if got := testgit.Git(t, workdir, "status", "--porcelain", "--untracked-files=all"); got != "" {
		t.Errorf("git status = %q, want clean", got)
	}
	if got := testgit.Git(t, workdir, "diff-index", "--cached", "--name-only", "HEAD"); got != "" {
		t.Errorf("the index differs from HEAD in %q", got)
	}
	// What git's own refresh of the stat data would change: nothing, if the
	// entries hold the files' stat data.
	testgit.Git(t, workdir, "update-index", "--refresh")
	files := strings.Split(testgit.Git(t, bare, "ls-tree", "-r", "--name-only", rev), "\n")
	for _, f := range files {
		want, _ := testgit.ReadFile(t, bare, rev, f)
		b, err := os.ReadFile(filepath.Join(workdir, filepath.FromSlash(f)))
		if err != nil || string(b) != want {
			t.Errorf("%s = %q, %v; want %q", f, b, err, want)
		}
	}
}

// TestIncrementalWorktree moves a working copy through random histories:
// commits made elsewhere (files added, edited, deleted, moved into and out
// of new folders, a file giving way to a folder) and commits made by
// Update, with and without a push branch. After each step, git itself
// must find the working copy clean at the right commit, and the commits
// Update made must hold exactly the edit on their parent.
func TestIncrementalWorktree(t *testing.T) {
	t.Parallel()
	for _, trust := range []bool{false, true} {
		t.Run(fmt.Sprintf("trust=%v", trust), func(t *testing.T) {
			t.Parallel()
			bare := testgit.NewBare(t, seed)
			workdir := t.TempDir()
			opts := Options{URL: fileURL(bare), Branch: "main", Workdir: workdir, TrustWorktree: trust}
			rng := rand.New(rand.NewPCG(1, 2))
			var first, prev string // the first step's head, the last one's
			names := []string{"a/b/one.yaml", "a/b/two.yaml", "a/c.yaml", "d.yaml", "e/f/g/h.yaml", "clusters/prod/app.yaml"}
			for step := range 24 {
				logger, logs := newLogger()
				opts.Logger = logger
				r := mustOpen(t, opts)
				checkWorkdir(t, workdir, bare, mainSHA(t, bare))
				if step > 0 && strings.Contains(logs.String(), "hard-resetting") {
					t.Errorf("step %d: Open reset the worktree whole:\n%s", step, logs)
				}
				if step > 0 {
					checkChanges(t, r, bare, prev, step)
					checkChanges(t, r, bare, first, step)
				} else {
					first = r.Head()
				}
				// Someone else commits.
				files := map[string]string{}
				var remove []string
				for range rng.IntN(4) {
					n := names[rng.IntN(len(names))]
					if _, ok := testgit.ReadFile(t, bare, "main", n); ok && rng.IntN(3) == 0 {
						remove = append(remove, n)
					} else {
						files[n] = fmt.Sprintf("step %d %d\n", step, rng.IntN(100))
					}
				}
				switch step {
				case 5:
					files["x"] = "a file\n"
				case 12:
					// A file gives way to a folder of the same name (in two
					// commits, which the working copy sees as one change).
					testgit.Commit(t, bare, "main", nil, []string{"x"}, "x goes")
					files["x/inner.yaml"] = "inner\n"
				case 20:
					// And back.
					testgit.Commit(t, bare, "main", nil, []string{"x/inner.yaml"}, "x/ goes")
					files["x"] = "a file again\n"
				case 8, 9, 10:
					// Many files at once, which the writers of a checkout
					// share: made in new folders, then each rewritten or
					// deleted, then all deleted.
					for i := range 240 {
						n := fmt.Sprintf("bulk/%02d/f%03d.yaml", i%13, i)
						switch gone := i%3 == 0; {
						case step == 9 && gone, step == 10 && !gone:
							remove = append(remove, n)
						case step < 10:
							files[n] = fmt.Sprintf("bulk %d step %d%s\n", i, step, strings.Repeat("#", i%7*step))
						}
					}
				}
				if len(files)+len(remove) > 0 {
					testgit.Commit(t, bare, "main", files, uniq(remove, files), fmt.Sprintf("other %d", step))
				}
				// imagebump commits, after a fetch within Update's retry.
				edit := map[string]string{names[rng.IntN(len(names))]: fmt.Sprintf("bump %d\n", step)}
				var deleted []string
				if rng.IntN(4) == 0 {
					deleted = append(deleted, names[rng.IntN(len(names))])
				}
				pushBranch := ""
				if rng.IntN(3) == 0 {
					pushBranch = "imagebump/main"
				}
				res, err := r.Update(t.Context(), Update{Commit: author, PushBranch: pushBranch}, func(ctx context.Context, dir string) ([]string, string, error) {
					var changed []string
					for n, c := range edit {
						p := filepath.Join(dir, filepath.FromSlash(n))
						if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
							return nil, "", err
						}
						if err := os.WriteFile(p, []byte(c), 0o644); err != nil {
							return nil, "", err
						}
						changed = append(changed, n)
					}
					for _, n := range deleted {
						if _, ok := edit[n]; !ok {
							os.Remove(filepath.Join(dir, filepath.FromSlash(n)))
							changed = append(changed, n)
						}
					}
					return changed, fmt.Sprintf("bump %d", step), nil
				})
				if err != nil {
					t.Fatalf("step %d: Update: %v", step, err)
				}
				if res.Pushed {
					rev := res.Commit
					parent := testgit.Git(t, bare, "rev-parse", rev+"^")
					got := strings.Split(testgit.Git(t, bare, "diff-tree", "-r", "--name-only", "--no-commit-id", parent, rev), "\n")
					if diff := cmp.Diff(got, res.Changed); diff != "" {
						t.Errorf("step %d: the commit changed other files than the edit (-commit +edit):\n%s", step, diff)
					}
					testgit.Git(t, bare, "fsck", "--strict", "--no-dangling")
				}
				// With a push branch, the tracked branch stays as Open
				// fetched it.
				checkWorkdir(t, workdir, bare, r.Head())
				prev = r.Head()
				if err := r.Close(); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

// checkChanges compares r.Changes(from) with git's own list of the files
// that differ. When from is the commit the worktree held before Open
// moved it, the list must be the one the move made, not a second diff.
func checkChanges(t *testing.T, r *Repo, bare, from string, step int) {
	t.Helper()
	moved := r.lastDiff
	got, err := r.Changes(from)
	if err != nil {
		t.Fatalf("step %d: Changes(%.7s): %v", step, from, err)
	}
	if moved != nil && moved.from.String() == from && r.lastDiff != moved {
		t.Errorf("step %d: Changes(%.7s) diffed the trees again, after the checkout had", step, from)
	}
	paths := []string{}
	for _, c := range got {
		paths = append(paths, c.Path)
		inGit := func(rev string) string {
			h, err := testgit.GitErr(t, bare, nil, "rev-parse", "--verify", "--quiet", rev+":"+c.Path)
			if err != nil {
				return "" // not in rev
			}
			return strings.TrimSpace(h)
		}
		if c.Old != inGit(from) || c.New != inGit(r.Head()) {
			t.Errorf("step %d: Changes(%.7s) has %s as %q → %q, git %q → %q", step, from, c.Path, c.Old, c.New, inGit(from), inGit(r.Head()))
		}
	}
	want := testgit.Git(t, bare, "diff-tree", "-r", "--name-only", "--no-commit-id", from, r.Head())
	if diff := cmp.Diff(strings.Fields(want), paths); diff != "" {
		t.Errorf("step %d: Changes(%.7s) lists other files than git diff-tree (-git +Changes):\n%s", step, from, diff)
	}
}

// uniq drops from remove what files sets again, and duplicates.
func uniq(remove []string, files map[string]string) []string {
	var out []string
	for _, r := range remove {
		if _, ok := files[r]; !ok && !slices.Contains(out, r) {
			out = append(out, r)
		}
	}
	return out
}

// TestTrustWorktree checks what TrustWorktree gives up and what Clean
// gives back: a trusted Open does not look at the files, so an edit made
// by hand in the working copy stays until Clean.
func TestTrustWorktree(t *testing.T) {
	bare := testgit.NewBare(t, seed)
	workdir := t.TempDir()
	opts := Options{URL: fileURL(bare), Branch: "main", Workdir: workdir, TrustWorktree: true}
	mustOpen(t, opts)
	app := filepath.Join(workdir, "clusters/prod/app.yaml")
	write(t, app, "image: app:9.9.9\n")
	r := mustOpen(t, opts)
	if b, _ := os.ReadFile(app); string(b) != "image: app:9.9.9\n" {
		t.Fatalf("a trusted Open looked at the files: app.yaml = %q", b)
	}
	if err := r.Clean(); err != nil {
		t.Fatal(err)
	}
	checkWorkdir(t, workdir, bare, mainSHA(t, bare))
}

// TestLeftoverIndexLock: a cycle killed between writing the index and
// renaming it leaves .git/index.lock. The next Open removes it; without
// that, every later commit failed on the lock, cycle after cycle.
func TestLeftoverIndexLock(t *testing.T) {
	t.Parallel()
	bare := testgit.NewBare(t, seed)
	workdir := t.TempDir()
	opts := Options{URL: fileURL(bare), Branch: "main", Workdir: workdir, TrustWorktree: true}
	mustOpen(t, opts).Close()
	lock := filepath.Join(workdir, ".git", "index.lock")
	if err := os.WriteFile(lock, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	leaveOld(t, lock)
	for i := range 2 {
		r := mustOpen(t, opts)
		res, err := r.Update(t.Context(), Update{Commit: author}, func(ctx context.Context, dir string) ([]string, string, error) {
			body := fmt.Sprintf("image: app:1.0.%d\n", 5+i)
			return []string{"clusters/prod/app.yaml"}, "bump", os.WriteFile(filepath.Join(dir, "clusters/prod/app.yaml"), []byte(body), 0o644)
		})
		r.Close()
		if err != nil || !res.Pushed {
			t.Fatalf("cycle %d after a leftover index.lock: %+v, %v", i, res, err)
		}
		checkWorkdir(t, workdir, bare, mainSHA(t, bare))
	}
	if _, err := os.Stat(lock); err == nil {
		t.Errorf("%s is still there", lock)
	}
}

// TestCheckoutForgetsState: moving the worktree changes files before the
// new state is recorded, so it must first remove the state file. A move
// that stops half-way (here a file where a new folder goes; a crash
// alike) must leave none, or a trusted Open would take the half-moved
// worktree for the old commit and only move the files of its next diff.
func TestCheckoutForgetsState(t *testing.T) {
	t.Parallel()
	bare := testgit.NewBare(t, seed)
	workdir := t.TempDir()
	opts := Options{URL: fileURL(bare), Branch: "main", Workdir: workdir, TrustWorktree: true}
	r := mustOpen(t, opts)
	from := plumbing.NewHash(r.Head())
	// Commit "to" in the working copy's own store, leaving its index and
	// worktree alone: app.yaml edited, and a file in a new folder.
	index := filepath.Join(t.TempDir(), "index")
	gitEnv := func(stdin string, args ...string) string {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir = workdir
		cmd.Env = append(os.Environ(), "GIT_INDEX_FILE="+index,
			"GIT_AUTHOR_NAME=a", "GIT_AUTHOR_EMAIL=a@example.invalid", "GIT_COMMITTER_NAME=a", "GIT_COMMITTER_EMAIL=a@example.invalid")
		cmd.Stdin = strings.NewReader(stdin)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return strings.TrimSpace(string(out))
	}
	gitEnv("", "read-tree", from.String())
	for name, content := range map[string]string{"clusters/prod/app.yaml": "image: app:7.0.0\n", "newdir/f.yaml": "n: 1\n"} {
		blob := gitEnv(content, "hash-object", "-w", "--stdin")
		gitEnv("", "update-index", "--add", "--cacheinfo", "100644,"+blob+","+name)
	}
	to := plumbing.NewHash(gitEnv("", "commit-tree", gitEnv("", "write-tree"), "-p", from.String(), "-m", "to"))
	state := filepath.Join(workdir, ".git", resetStateFile)
	if _, err := os.Stat(state); err != nil {
		t.Fatalf("no state file after Open: %v", err)
	}
	write(t, filepath.Join(workdir, "newdir"), "in the way\n")
	if err := r.checkout(from, to); err == nil || !strings.Contains(err.Error(), "newdir") {
		t.Fatalf("checkout with a file where a folder goes: err = %v, want one naming newdir", err)
	}
	if _, err := os.Stat(state); err == nil {
		t.Error("a checkout that stopped half-way left the state file, which records the old commit")
	}
	r.Close()
	checkNextOpenResets(t, opts, bare, "the half-moved worktree")
}

// checkNextOpenResets opens the working copy again with opts (trusted)
// and checks that it resets what, and leaves the working copy clean at
// the remote's main.
func checkNextOpenResets(t *testing.T, opts Options, bare, what string) {
	t.Helper()
	logger, logs := newLogger()
	opts.Logger = logger
	mustOpen(t, opts).Close()
	if !strings.Contains(logs.String(), "hard-resetting") {
		t.Errorf("the next trusted Open did not reset %s:\n%s", what, logs)
	}
	checkWorkdir(t, opts.Workdir, bare, mainSHA(t, bare))
}

// TestRestoreDuringEditForgetsState: an edit that puts one file back with
// Restore has still changed others, which are in no commit. Restore must
// not leave a state file saying the worktree holds the head: if the edit
// then fails (or the process dies), a trusted Open would keep the edited
// file.
func TestRestoreDuringEditForgetsState(t *testing.T) {
	t.Parallel()
	bare := testgit.NewBare(t, seed)
	workdir := t.TempDir()
	opts := Options{URL: fileURL(bare), Branch: "main", Workdir: workdir, TrustWorktree: true}
	r := mustOpen(t, opts)
	_, err := r.Update(t.Context(), Update{Commit: author, MaxAttempts: 1}, func(ctx context.Context, dir string) ([]string, string, error) {
		write(t, filepath.Join(dir, "clusters/prod/app.yaml"), "image: app:2.0.0\n")
		write(t, filepath.Join(dir, "clusters/prod/web.yaml"), "image: web:2.0.0\n")
		if err := r.Restore([]string{"clusters/prod/web.yaml"}); err != nil {
			return nil, "", err
		}
		return nil, "", errors.New("the registry is down")
	})
	if err == nil || !strings.Contains(err.Error(), "the registry is down") {
		t.Fatalf("Update error = %v, want the edit's", err)
	}
	if _, err := os.Stat(filepath.Join(workdir, ".git", resetStateFile)); err == nil {
		t.Error("the state file records a worktree an edit has changed")
	}
	r.Close()
	checkNextOpenResets(t, opts, bare, "the edited worktree")
}
