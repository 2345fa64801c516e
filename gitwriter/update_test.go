package gitwriter

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/imagebump/imagebump/internal/testkit/testgit"
)

func TestUpdateSameBranch(t *testing.T) {
	bare, s, auth := httpRemote(t)
	base := mainSHA(t, bare)
	r := mustOpen(t, Options{URL: s.URL, Branch: "main", Auth: auth, Workdir: t.TempDir()})

	edit := func(ctx context.Context, dir string) ([]string, string, error) {
		write(t, filepath.Join(dir, "clusters/prod/app.yaml"), "image: app:1.1.0\n")
		// An unreported change is not committed.
		write(t, filepath.Join(dir, "clusters/prod/web.yaml"), "image: web:6.6.6\n")
		if err := os.Remove(filepath.Join(dir, "README.md")); err != nil {
			return nil, "", err
		}
		write(t, filepath.Join(dir, "clusters/prod/new.yaml"), "new\n")
		// Reported twice, and once with a ./ prefix: staged once.
		return []string{"clusters/prod/app.yaml", "./clusters/prod/app.yaml", "README.md", "clusters/prod/new.yaml"}, "Bump app to 1.1.0", nil
	}
	got, err := r.Update(t.Context(), Update{Commit: author}, edit)
	if err != nil {
		t.Fatal(err)
	}
	head := mainSHA(t, bare)
	want := &Result{
		Commit:   head,
		Branch:   "main",
		Pushed:   true,
		Attempts: 1,
		Changed:  []string{"README.md", "clusters/prod/app.yaml", "clusters/prod/new.yaml"},
	}
	if diff := cmp.Diff(got, want); diff != "" {
		t.Errorf("Update() mismatch (-got +want):\n%s", diff)
	}
	if r.Head() != head {
		t.Errorf("Head() = %s after the push, want %s", r.Head(), head)
	}
	if parent := testgit.Git(t, bare, "rev-parse", head+"^"); parent != base {
		t.Errorf("new commit's parent = %s, want the old head %s", parent, base)
	}
	if got := testgit.Git(t, bare, "show", "-s", "--format=%an <%ae>|%cn <%ce>|%s", head); got != "imagebump <imagebump@example.invalid>|imagebump <imagebump@example.invalid>|Bump app to 1.1.0" {
		t.Errorf("commit author|committer|message = %q", got)
	}
	files := testgit.Git(t, bare, "diff-tree", "--no-commit-id", "--name-status", "-r", head)
	if diff := cmp.Diff(files, "D\tREADME.md\nM\tclusters/prod/app.yaml\nA\tclusters/prod/new.yaml"); diff != "" {
		t.Errorf("files in the commit mismatch (-got +want):\n%s", diff)
	}
	if content, _ := testgit.ReadFile(t, bare, "main", "clusters/prod/web.yaml"); content != seed["clusters/prod/web.yaml"] {
		t.Errorf("unreported web.yaml was committed: %q", content)
	}

	// The same edit again: nothing changes on the remote.
	before := testgit.Refs(t, bare)
	r2 := mustOpen(t, Options{URL: r.opts.URL, Branch: "main", Auth: auth, Workdir: r.Dir()})
	got, err = r2.Update(t.Context(), Update{Commit: author}, func(ctx context.Context, dir string) ([]string, string, error) {
		write(t, filepath.Join(dir, "clusters/prod/app.yaml"), "image: app:1.1.0\n")
		return []string{"clusters/prod/app.yaml", "README.md"}, "Bump app to 1.1.0", nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want = &Result{Commit: head, Branch: "main", Attempts: 1}
	if diff := cmp.Diff(got, want); diff != "" {
		t.Errorf("second Update() mismatch (-got +want):\n%s", diff)
	}
	if diff := cmp.Diff(testgit.Refs(t, bare), before); diff != "" {
		t.Errorf("remote refs changed by an Update with nothing new (-got +want):\n%s", diff)
	}
	if got := testgit.Git(t, r2.Dir(), "rev-parse", "HEAD"); got != head {
		t.Errorf("local HEAD = %s after a no-op Update, want %s", got, head)
	}
}

func TestUpdateNothingToDo(t *testing.T) {
	tests := []struct {
		name string
		edit Edit
	}{
		{name: "nil changes", edit: func(ctx context.Context, dir string) ([]string, string, error) { return nil, "", nil }},
		{name: "same content rewritten", edit: setFiles(map[string]string{"clusters/prod/app.yaml": seed["clusters/prod/app.yaml"]}, "no-op", nil)},
		{name: "missing file reported", edit: func(ctx context.Context, dir string) ([]string, string, error) {
			return []string{"never/existed.yaml"}, "x", nil
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bare := testgit.NewBare(t, seed)
			s := testgit.StartHTTP(t, bare, false)
			before := testgit.Refs(t, bare)
			r := mustOpen(t, Options{URL: s.URL, Branch: "main", Workdir: t.TempDir()})
			requests := s.Requests()
			for _, pushBranch := range []string{"", "imagebump/main"} {
				got, err := r.Update(t.Context(), Update{Commit: author, PushBranch: pushBranch}, tt.edit)
				if err != nil {
					t.Fatal(err)
				}
				wantBranch := "main"
				if pushBranch != "" {
					wantBranch = pushBranch
				}
				want := &Result{Commit: before["refs/heads/main"], Branch: wantBranch, Attempts: 1}
				if diff := cmp.Diff(got, want); diff != "" {
					t.Errorf("Update(push branch %q) mismatch (-got +want):\n%s", pushBranch, diff)
				}
			}
			if diff := cmp.Diff(testgit.Refs(t, bare), before); diff != "" {
				t.Errorf("remote refs changed (-got +want):\n%s", diff)
			}
			if got := s.Requests(); got != requests {
				t.Errorf("Update made %d HTTP requests with nothing to do, want none", got-requests)
			}
		})
	}
}

func TestUpdateNonFastForward(t *testing.T) {
	bare, s, auth := httpRemote(t)
	r := mustOpen(t, Options{URL: s.URL, Branch: "main", Auth: auth, Workdir: t.TempDir()})
	// Someone else pushes after Open.
	other := testgit.Commit(t, bare, "main", map[string]string{"clusters/prod/web.yaml": "image: web:2.0.0\n"}, nil, "bump web elsewhere")

	var calls int
	got, err := r.Update(t.Context(), Update{Commit: author}, setFiles(map[string]string{"clusters/prod/app.yaml": "image: app:1.1.0\n"}, "Bump app", &calls))
	if err != nil {
		t.Fatal(err)
	}
	if got.Attempts != 2 || calls != 2 || !got.Pushed {
		t.Errorf("Update() = %+v with %d edit calls; want pushed after 2 attempts and 2 edits", got, calls)
	}
	if diff := cmp.Diff(testgit.Log(t, bare, "main"), []string{"Bump app", "bump web elsewhere", "initial commit"}); diff != "" {
		t.Errorf("remote log mismatch (-got +want):\n%s", diff)
	}
	if parent := testgit.Git(t, bare, "rev-parse", "main^"); parent != other {
		t.Errorf("our commit's parent = %s, want the other push %s", parent, other)
	}
	for name, want := range map[string]string{"clusters/prod/app.yaml": "image: app:1.1.0\n", "clusters/prod/web.yaml": "image: web:2.0.0\n"} {
		if content, _ := testgit.ReadFile(t, bare, "main", name); content != want {
			t.Errorf("remote %s = %q, want %q", name, content, want)
		}
	}
}

func TestUpdateRace(t *testing.T) {
	bare, s, auth := httpRemote(t)
	files := []string{"clusters/prod/app.yaml", "clusters/prod/web.yaml"}
	repos := make([]*Repo, len(files))
	for i := range files {
		repos[i] = mustOpen(t, Options{URL: s.URL, Branch: "main", Auth: auth, Workdir: t.TempDir()})
	}
	results := make([]*Result, len(files))
	errs := make([]error, len(files))
	calls := make([]int, len(files))
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i, name := range files {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			edit := setFiles(map[string]string{name: "image: bumped\n"}, "Bump "+name, &calls[i])
			results[i], errs[i] = repos[i].Update(context.Background(), Update{Commit: author, MaxAttempts: 6}, edit)
		}()
	}
	close(start)
	wg.Wait()
	attempts := 0
	for i := range files {
		if errs[i] != nil {
			t.Fatalf("Update %d: %v", i, errs[i])
		}
		if !results[i].Pushed {
			t.Errorf("Update %d did not push: %+v", i, results[i])
		}
		if calls[i] != results[i].Attempts {
			t.Errorf("Update %d called the edit %d times in %d attempts", i, calls[i], results[i].Attempts)
		}
		attempts += results[i].Attempts
	}
	// Both started from the same head, so one push must have lost.
	if attempts < 3 {
		t.Errorf("the two Updates took %d attempts in all, want at least 3 (one lost the race)", attempts)
	}
	log := testgit.Log(t, bare, "main")
	if len(log) != 3 || log[2] != "initial commit" {
		t.Fatalf("remote log = %q, want two bumps on the initial commit", log)
	}
	gotSubjects := []string{log[0], log[1]}
	if gotSubjects[0] > gotSubjects[1] {
		gotSubjects[0], gotSubjects[1] = gotSubjects[1], gotSubjects[0]
	}
	if diff := cmp.Diff(gotSubjects, []string{"Bump clusters/prod/app.yaml", "Bump clusters/prod/web.yaml"}); diff != "" {
		t.Errorf("remote bumps mismatch (-got +want):\n%s", diff)
	}
	for _, name := range files {
		if content, _ := testgit.ReadFile(t, bare, "main", name); content != "image: bumped\n" {
			t.Errorf("remote %s = %q, want the bump", name, content)
		}
	}
	if got := mainSHA(t, bare); got != results[0].Commit && got != results[1].Commit {
		t.Errorf("remote main = %s, want one of the Updates' commits %s, %s", got, results[0].Commit, results[1].Commit)
	}
}

func TestUpdateGivesUp(t *testing.T) {
	bare := testgit.NewBare(t, seed)
	r := mustOpen(t, Options{URL: fileURL(bare), Branch: "main", Workdir: t.TempDir()})
	var others []string
	// Every edit is overtaken by another push before it can land.
	edit := func(ctx context.Context, dir string) ([]string, string, error) {
		others = append(others, testgit.Commit(t, bare, "main", map[string]string{"other.txt": strings.Repeat("x", len(others)+1)}, nil, "other"))
		return setFiles(map[string]string{"clusters/prod/app.yaml": "image: app:2.0.0\n"}, "Bump app", nil)(ctx, dir)
	}
	_, err := r.Update(t.Context(), Update{Commit: author, MaxAttempts: 3}, edit)
	if !errors.Is(err, ErrConflict) {
		t.Fatalf("Update() error = %v, want ErrConflict", err)
	}
	if !strings.Contains(err.Error(), `"main"`) || !strings.Contains(err.Error(), bare) {
		t.Errorf("error %q does not name the branch and the remote", err)
	}
	if len(others) != 3 {
		t.Errorf("edit called %d times, want 3", len(others))
	}
	// Never forced: the other pushes are all there.
	if got := mainSHA(t, bare); got != others[len(others)-1] {
		t.Errorf("remote main = %s, want the last other push %s", got, others[len(others)-1])
	}
}

func TestUpdatePushBranch(t *testing.T) {
	bare, s, auth := httpRemote(t)
	const pushBranch = "imagebump/main"
	u := Update{Commit: author, PushBranch: pushBranch}
	edit := setFiles(map[string]string{"clusters/prod/app.yaml": "image: app:1.1.0\n"}, "Bump app", nil)
	workdir := t.TempDir()
	open := func(dir string) *Repo {
		return mustOpen(t, Options{URL: s.URL, Branch: "main", Auth: auth, Workdir: dir})
	}
	mainBefore := mainSHA(t, bare)

	// First run: the branch is created, not forced.
	got, err := open(workdir).Update(t.Context(), u, edit)
	if err != nil {
		t.Fatal(err)
	}
	first := testgit.Refs(t, bare)["refs/heads/"+pushBranch]
	want := &Result{Commit: first, Branch: pushBranch, Pushed: true, Attempts: 1, Changed: []string{"clusters/prod/app.yaml"}}
	if diff := cmp.Diff(got, want); diff != "" {
		t.Errorf("first Update() mismatch (-got +want):\n%s", diff)
	}
	if parent := testgit.Git(t, bare, "rev-parse", first+"^"); parent != mainBefore {
		t.Errorf("push branch's parent = %s, want main %s", parent, mainBefore)
	}
	if got := mainSHA(t, bare); got != mainBefore {
		t.Errorf("main moved to %s in push branch mode, want it at %s", got, mainBefore)
	}

	// Second run with the same edit, on the reused working copy and on a
	// fresh one (which must fetch the push branch's commit): no push.
	for _, dir := range []string{workdir, t.TempDir()} {
		before := testgit.Refs(t, bare)
		pushes := s.Pushes()
		got, err = open(dir).Update(t.Context(), u, edit)
		if err != nil {
			t.Fatal(err)
		}
		want = &Result{Commit: first, Branch: pushBranch, Attempts: 1, Changed: []string{"clusters/prod/app.yaml"}}
		if diff := cmp.Diff(got, want); diff != "" {
			t.Errorf("repeated Update() mismatch (-got +want):\n%s", diff)
		}
		if diff := cmp.Diff(testgit.Refs(t, bare), before); diff != "" {
			t.Errorf("remote refs changed by a repeated Update (-got +want):\n%s", diff)
		}
		if s.Pushes() != pushes {
			t.Errorf("a repeated Update pushed")
		}
	}

	// The tracked branch moves: the push branch is rebuilt on it and forced.
	moved := testgit.Commit(t, bare, "main", map[string]string{"clusters/prod/web.yaml": "image: web:2.0.0\n"}, nil, "bump web on main")
	got, err = open(workdir).Update(t.Context(), u, edit)
	if err != nil {
		t.Fatal(err)
	}
	rebuilt := testgit.Refs(t, bare)["refs/heads/"+pushBranch]
	want = &Result{Commit: rebuilt, Branch: pushBranch, Pushed: true, Forced: true, Attempts: 1, Changed: []string{"clusters/prod/app.yaml"}}
	if diff := cmp.Diff(got, want); diff != "" {
		t.Errorf("Update() after main moved mismatch (-got +want):\n%s", diff)
	}
	if diff := cmp.Diff(testgit.Log(t, bare, pushBranch), []string{"Bump app", "bump web on main", "initial commit"}); diff != "" {
		t.Errorf("push branch log mismatch (-got +want):\n%s", diff)
	}
	if got := mainSHA(t, bare); got != moved {
		t.Errorf("main = %s, want it untouched at %s", got, moved)
	}

	// A different edit on the same base also forces.
	got, err = open(workdir).Update(t.Context(), u, setFiles(map[string]string{"clusters/prod/app.yaml": "image: app:1.2.0\n"}, "Bump app to 1.2.0", nil))
	if err != nil {
		t.Fatal(err)
	}
	if !got.Pushed || !got.Forced {
		t.Errorf("Update() with a new edit = %+v, want a forced push", got)
	}
	if content, _ := testgit.ReadFile(t, bare, pushBranch, "clusters/prod/app.yaml"); content != "image: app:1.2.0\n" {
		t.Errorf("push branch app.yaml = %q, want 1.2.0", content)
	}
	if got := mainSHA(t, bare); got != moved {
		t.Errorf("main = %s, want it untouched at %s", got, moved)
	}
}

func TestUpdatePushBranchLease(t *testing.T) {
	for _, tc := range []struct {
		name string
		// intruder is who writes the push branch between Update's look
		// at it and its push: another imagebump (a second replica) or a
		// person.
		intruderName, intruderEmail string
		wantForced                  bool
	}{
		{"another imagebump", author.AuthorName, author.AuthorEmail, true},
		{"a person", "Jane Reviewer", "jane@example.invalid", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bare := testgit.NewBare(t, seed)
			const pushBranch = "imagebump/main"
			r := mustOpen(t, Options{URL: fileURL(bare), Branch: "main", Workdir: t.TempDir()})
			testgit.CommitAs(t, bare, pushBranch, author.AuthorName, author.AuthorEmail, map[string]string{"x.txt": "x\n"}, nil, "stale push branch")
			var once sync.Once
			var intruder string
			edit := setFiles(map[string]string{"clusters/prod/app.yaml": "image: app:1.1.0\n"}, "Bump app", nil)
			r.beforePush = func() {
				once.Do(func() {
					intruder = testgit.CommitAs(t, bare, pushBranch, tc.intruderName, tc.intruderEmail, map[string]string{"y.txt": "y\n"}, nil, "intruder")
				})
			}
			// The lease makes the first push fail; the retry looks at
			// what the intruder wrote.
			got, err := r.Update(t.Context(), Update{Commit: author, PushBranch: pushBranch}, edit)
			if intruder == "" {
				t.Fatal("the intruding commit was never made")
			}
			if !tc.wantForced {
				var fe *ForeignCommitError
				if !errors.As(err, &fe) || fe.Commit != intruder[:12] || !strings.Contains(err.Error(), "committed by Jane Reviewer <jane@example.invalid>") {
					t.Fatalf("Update() = %+v, %v; want a *ForeignCommitError naming the intruder %s", got, err, intruder)
				}
				if tip := testgit.Refs(t, bare)["refs/heads/"+pushBranch]; tip != intruder {
					t.Errorf("push branch = %s, want the person's commit %s kept", tip, intruder)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.Attempts != 2 || !got.Forced {
				t.Errorf("Update() = %+v, want a forced push on the second attempt", got)
			}
			if diff := cmp.Diff(testgit.Log(t, bare, pushBranch), []string{"Bump app", "initial commit"}); diff != "" {
				t.Errorf("push branch log mismatch (-got +want):\n%s", diff)
			}
		})
	}
}

// TestUpdatePushBranchForeign: a push branch that ends in a commit
// imagebump did not make is left as it is, with an error that names the
// commit and says what to do; once the branch is deleted, Update makes it
// again.
func TestUpdatePushBranchForeign(t *testing.T) {
	const pushBranch = "imagebump/main"
	edit := setFiles(map[string]string{"clusters/prod/app.yaml": "image: app:1.1.0\n"}, "Bump app", nil)
	u := Update{Commit: author, PushBranch: pushBranch}
	for _, tc := range []struct {
		name string
		// setup leaves the push branch in the state under test.
		setup func(t *testing.T, bare string, r *Repo)
		why   string
	}{
		{"a branch of that name made by a person", func(t *testing.T, bare string, r *Repo) {
			testgit.CommitAs(t, bare, pushBranch, "Jane", "jane@example.invalid", map[string]string{"work.txt": "mine\n"}, nil, "human work")
		}, "committed by Jane <jane@example.invalid>"},
		{"a reviewer's fix on imagebump's branch", func(t *testing.T, bare string, r *Repo) {
			if _, err := r.Update(t.Context(), u, edit); err != nil {
				t.Fatal(err)
			}
			testgit.CommitAs(t, bare, pushBranch, "Jane", "jane@example.invalid", map[string]string{"clusters/prod/app.yaml": "image: app:1.1.0\npullPolicy: Always\n"}, nil, "review: set pullPolicy")
		}, "committed by Jane <jane@example.invalid>"},
		{"imagebump's commit rebased by a forge", func(t *testing.T, bare string, r *Repo) {
			testgit.CommitAs(t, bare, pushBranch, author.AuthorName, author.AuthorEmail, map[string]string{"clusters/prod/app.yaml": "image: app:1.0.5\n"}, nil, "Bump app")
			// Author kept, committer the forge: as a rebase writes it.
			work := t.TempDir()
			testgit.Git(t, work, "clone", "--quiet", "--branch", pushBranch, bare, ".")
			if _, err := testgit.GitErr(t, work, []string{"GIT_COMMITTER_NAME=GitHub", "GIT_COMMITTER_EMAIL=noreply@github.invalid"}, "commit", "--quiet", "--amend", "--no-edit"); err != nil {
				t.Fatal(err)
			}
			testgit.Git(t, work, "push", "--quiet", "--force", "origin", "HEAD:refs/heads/"+pushBranch)
		}, "committed by GitHub <noreply@github.invalid>"},
		{"the base merged into imagebump's branch", func(t *testing.T, bare string, r *Repo) {
			if _, err := r.Update(t.Context(), u, edit); err != nil {
				t.Fatal(err)
			}
			testgit.Commit(t, bare, "main", map[string]string{"clusters/prod/web.yaml": "image: web:2.0.0\n"}, nil, "bump web on main")
			work := t.TempDir()
			testgit.Git(t, work, "clone", "--quiet", "--branch", pushBranch, bare, ".")
			env := []string{"GIT_AUTHOR_NAME=" + author.AuthorName, "GIT_AUTHOR_EMAIL=" + author.AuthorEmail, "GIT_COMMITTER_NAME=" + author.AuthorName, "GIT_COMMITTER_EMAIL=" + author.AuthorEmail}
			if _, err := testgit.GitErr(t, work, env, "merge", "--quiet", "--no-edit", "origin/main"); err != nil {
				t.Fatal(err)
			}
			testgit.Git(t, work, "push", "--quiet", "origin", "HEAD:refs/heads/"+pushBranch)
		}, "a merge commit"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bare := testgit.NewBare(t, seed)
			r := mustOpen(t, Options{URL: fileURL(bare), Branch: "main", Workdir: t.TempDir()})
			tc.setup(t, bare, r)
			before := testgit.Refs(t, bare)
			r = mustOpen(t, Options{URL: fileURL(bare), Branch: "main", Workdir: t.TempDir()})
			got, err := r.Update(t.Context(), u, edit)
			var fe *ForeignCommitError
			if !errors.As(err, &fe) || fe.Commit != before["refs/heads/"+pushBranch][:12] || !strings.Contains(fe.Why, tc.why) {
				t.Fatalf("Update() = %+v, %v; want a *ForeignCommitError for the branch's tip, %s", got, err, tc.why)
			}
			for _, w := range []string{`branch "imagebump/main" ends in commit ` + fe.Commit, "which imagebump did not make", "merge the pull request, when one is open; else put the commit on another branch, or drop it), then delete the branch", "closes it on GitHub and Gitea"} {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
			if diff := cmp.Diff(testgit.Refs(t, bare), before); diff != "" {
				t.Errorf("remote refs changed (-got +want):\n%s", diff)
			}
			// A Replace that says no leaves it too; it is asked with the
			// tip's full hash.
			tip := before["refs/heads/"+pushBranch]
			var asked string
			no := u
			no.Replace = func(_ context.Context, c string) (bool, error) { asked = c; return false, nil }
			if _, err := r.Update(t.Context(), no, edit); !errors.As(err, &fe) || asked != tip {
				t.Fatalf("Update() with a Replace saying no = %v, asked about %q; want a *ForeignCommitError, asked about %s", err, asked, tip)
			}
			if diff := cmp.Diff(testgit.Refs(t, bare), before); diff != "" {
				t.Errorf("remote refs changed (-got +want):\n%s", diff)
			}
			// One that says yes (the head of a merged pull request) lets
			// the branch be replaced.
			yes := u
			yes.Replace = func(context.Context, string) (bool, error) { return true, nil }
			if got, err = r.Update(t.Context(), yes, edit); err != nil || !got.Pushed || !got.Forced {
				t.Fatalf("Update() with a Replace saying yes = %+v, %v; want it pushed, forced", got, err)
			}
			if now := testgit.Refs(t, bare)["refs/heads/"+pushBranch]; now != got.Commit {
				t.Errorf("%s = %s, want the new commit %s", pushBranch, now, got.Commit)
			}
			// The person deletes the branch: the next Update makes it.
			testgit.Git(t, bare, "branch", "-D", pushBranch)
			if got, err = r.Update(t.Context(), u, edit); err != nil || !got.Pushed || got.Forced {
				t.Fatalf("Update() after the branch was deleted = %+v, %v; want it pushed, not forced", got, err)
			}
		})
	}
}

func TestUpdateChecks(t *testing.T) {
	bare := testgit.NewBare(t, seed)
	r := mustOpen(t, Options{URL: fileURL(bare), Branch: "main", Workdir: t.TempDir()})
	noop := func(ctx context.Context, dir string) ([]string, string, error) { return nil, "", nil }
	tests := []struct {
		name   string
		u      Update
		edit   Edit
		hfs    bool // protectHFS, as on macOS
		wantIn string
	}{
		{name: "no author", u: Update{}, edit: noop, wantIn: "author"},
		{name: "push branch is the tracked branch", u: Update{Commit: author, PushBranch: "main"}, edit: noop, wantIn: "is the tracked branch"},
		{name: "bad push branch", u: Update{Commit: author, PushBranch: "a b"}, edit: noop, wantIn: "not a valid branch name"},
		{name: "edit fails", u: Update{Commit: author}, edit: func(ctx context.Context, dir string) ([]string, string, error) {
			return nil, "", errors.New("marker is malformed")
		}, wantIn: "marker is malformed"},
		{name: "path outside", u: Update{Commit: author}, edit: func(ctx context.Context, dir string) ([]string, string, error) {
			return []string{"../outside.yaml"}, "x", nil
		}, wantIn: "not a path inside the worktree"},
		{name: "path in .git", u: Update{Commit: author}, edit: func(ctx context.Context, dir string) ([]string, string, error) {
			return []string{".git/config"}, "x", nil
		}, wantIn: "a path git refuses to commit"},
		{name: "path in a folder's .git, in capitals", u: Update{Commit: author}, edit: func(ctx context.Context, dir string) ([]string, string, error) {
			return []string{"clusters/.GIT/x"}, "x", os.MkdirAll(filepath.Join(dir, "clusters", ".GIT"), 0o755)
		}, wantIn: "a path git refuses to commit"},
		{name: "a link git takes for .gitmodules", u: Update{Commit: author}, edit: func(ctx context.Context, dir string) ([]string, string, error) {
			return []string{"GITMOD~1"}, "x", os.Symlink("target", filepath.Join(dir, "GITMOD~1"))
		}, wantIn: "a symbolic link git refuses to commit"},
		{name: "a link below a folder git takes for .gitmodules", u: Update{Commit: author}, edit: func(ctx context.Context, dir string) ([]string, string, error) {
			if err := os.MkdirAll(filepath.Join(dir, ".gitmodules"), 0o755); err != nil {
				return nil, "", err
			}
			return []string{".gitmodules/y"}, "x", os.Symlink("target", filepath.Join(dir, ".gitmodules", "y"))
		}, wantIn: "a symbolic link git refuses to commit"},
		{name: "a path NTFS takes for .git after a backslash", u: Update{Commit: author}, edit: func(ctx context.Context, dir string) ([]string, string, error) {
			return []string{`x\.git`}, "x", os.WriteFile(filepath.Join(dir, `x\.git`), []byte("x\n"), 0o644)
		}, wantIn: "a path git refuses to commit"},
		{name: "a path HFS+ takes for .git, on macOS", u: Update{Commit: author}, hfs: true, edit: func(ctx context.Context, dir string) ([]string, string, error) {
			return []string{".g\u200cit"}, "x", os.WriteFile(filepath.Join(dir, ".g\u200cit"), []byte("x\n"), 0o644)
		}, wantIn: "a path git refuses to commit"},
		{name: "a link HFS+ takes for .gitmodules, on macOS", u: Update{Commit: author}, hfs: true, edit: func(ctx context.Context, dir string) ([]string, string, error) {
			return []string{".gitmodules\ufeff"}, "x", os.Symlink("target", filepath.Join(dir, ".gitmodules\ufeff"))
		}, wantIn: "a symbolic link git refuses to commit"},
		{name: "absolute path", u: Update{Commit: author}, edit: func(ctx context.Context, dir string) ([]string, string, error) {
			return []string{"/etc/passwd"}, "x", nil
		}, wantIn: "not a path inside the worktree"},
		{name: "directory", u: Update{Commit: author}, edit: func(ctx context.Context, dir string) ([]string, string, error) {
			return []string{"clusters"}, "x", nil
		}, wantIn: "is a directory"},
		{name: "no message", u: Update{Commit: author}, edit: setFiles(map[string]string{"a.yaml": "a\n"}, "", nil), wantIn: "no commit message"},
		{name: "signing key missing", u: Update{Commit: Commit{AuthorName: "a", AuthorEmail: "b", Signer: &Signer{KeyFile: "/nonexistent/key.asc"}}}, edit: noop, wantIn: "signing key file"},
	}
	before := testgit.Refs(t, bare)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.hfs {
				defer func(was bool) { protectHFS = was }(protectHFS)
				protectHFS = true
			}
			_, err := r.Update(t.Context(), tt.u, tt.edit)
			if err == nil || !strings.Contains(err.Error(), tt.wantIn) {
				t.Fatalf("Update() error = %v, want one containing %q", err, tt.wantIn)
			}
		})
	}
	if diff := cmp.Diff(testgit.Refs(t, bare), before); diff != "" {
		t.Errorf("failed Updates changed the remote (-got +want):\n%s", diff)
	}
	// After all those failures the working copy still works.
	got, err := r.Update(t.Context(), Update{Commit: author}, setFiles(map[string]string{"clusters/prod/app.yaml": "image: app:3.0.0\n"}, "Bump app", nil))
	if err != nil || !got.Pushed {
		t.Fatalf("Update() after failures = %+v, %v; want a push", got, err)
	}
	if diff := cmp.Diff(testgit.Git(t, bare, "diff-tree", "--no-commit-id", "--name-only", "-r", "main"), "clusters/prod/app.yaml"); diff != "" {
		t.Errorf("files of the commit after failed edits mismatch (-got +want):\n%s", diff)
	}
}

// TestUpdateFolderChanges: an edit that removes a folder, or puts a file
// where a folder was or a folder where a file was, and reports only the
// paths it wrote or removed, gets a commit with the folder's files gone
// and a Git index that agrees with it.
func TestUpdateFolderChanges(t *testing.T) {
	for _, tc := range []struct {
		name    string
		remove  []string          // removed whole, before writing
		write   map[string]string // then written
		report  []string
		tree    []string // the commit's files
		changed []string // Result.Changed: files only
	}{
		{
			name:    "a folder removed, reported as the folder",
			remove:  []string{"clusters/prod"},
			report:  []string{"clusters/prod"},
			tree:    []string{"README.md"},
			changed: []string{"clusters/prod/app.yaml", "clusters/prod/web.yaml"},
		},
		{
			name:    "the folder above it removed",
			remove:  []string{"clusters"},
			report:  []string{"clusters"},
			tree:    []string{"README.md"},
			changed: []string{"clusters/prod/app.yaml", "clusters/prod/web.yaml"},
		},
		{
			name:    "a folder replaced by a file",
			remove:  []string{"clusters/prod"},
			write:   map[string]string{"clusters/prod": "moved\n"},
			report:  []string{"clusters/prod"},
			tree:    []string{"README.md", "clusters/prod"},
			changed: []string{"clusters/prod", "clusters/prod/app.yaml", "clusters/prod/web.yaml"},
		},
		{
			name:    "a file replaced by a folder",
			remove:  []string{"README.md"},
			write:   map[string]string{"README.md/index.yaml": "a: 1\n"},
			report:  []string{"README.md/index.yaml"},
			tree:    []string{"README.md/index.yaml", "clusters/prod/app.yaml", "clusters/prod/web.yaml"},
			changed: []string{"README.md", "README.md/index.yaml"},
		},
	} {
		for _, syncfs := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/syncfs=%v", tc.name, syncfs), func(t *testing.T) {
				if !syncfs {
					// As where there is no syncfs(2): a file at a time.
					old := syncFiles
					syncFiles = syncEach
					t.Cleanup(func() { syncFiles = old })
				}
				bare := testgit.NewBare(t, seed)
				workdir := t.TempDir()
				r := mustOpen(t, Options{URL: fileURL(bare), Branch: "main", Workdir: workdir})
				res, err := r.Update(t.Context(), Update{Commit: author}, func(ctx context.Context, dir string) ([]string, string, error) {
					for _, p := range tc.remove {
						if err := os.RemoveAll(filepath.Join(dir, p)); err != nil {
							return nil, "", err
						}
					}
					if _, _, err := setFiles(tc.write, "", nil)(ctx, dir); err != nil {
						return nil, "", err
					}
					return tc.report, "Reshape", nil
				})
				if err != nil || !res.Pushed {
					t.Fatalf("Update = %+v, %v", res, err)
				}
				files := strings.Split(testgit.Git(t, bare, "ls-tree", "-r", "--name-only", "main"), "\n")
				if diff := cmp.Diff(tc.tree, files); diff != "" {
					t.Errorf("the commit's files (-want +got):\n%s", diff)
				}
				if diff := cmp.Diff(tc.changed, res.Changed); diff != "" {
					t.Errorf("Result.Changed (-want +got):\n%s", diff)
				}
				checkWorkdir(t, workdir, bare, mainSHA(t, bare))
			})
		}
	}
}

// TestUpdateRefusesPathBeyondSymlink: a path reported through a symbolic
// link to a folder is refused, as git add refuses it; committing it would
// replace the link by a folder.
func TestUpdateRefusesPathBeyondSymlink(t *testing.T) {
	bare := testgit.NewBare(t, seed)
	workdir := t.TempDir()
	r := mustOpen(t, Options{URL: fileURL(bare), Branch: "main", Workdir: workdir})
	if _, err := r.Update(t.Context(), Update{Commit: author}, func(ctx context.Context, dir string) ([]string, string, error) {
		return []string{"link"}, "Link", os.Symlink("clusters/prod", filepath.Join(dir, "link"))
	}); err != nil {
		t.Fatal(err)
	}
	head := mainSHA(t, bare)
	_, err := r.Update(t.Context(), Update{Commit: author}, func(ctx context.Context, dir string) ([]string, string, error) {
		return []string{"link/new.yaml"}, "Through the link", os.WriteFile(filepath.Join(dir, "link", "new.yaml"), []byte("a: 1\n"), 0o644)
	})
	if err == nil || !strings.Contains(err.Error(), `beyond the symbolic link "link"`) {
		t.Errorf("Update = %v, want an error naming the link", err)
	}
	if got := mainSHA(t, bare); got != head {
		t.Errorf("the remote moved to %s", got)
	}
	if out := testgit.Git(t, bare, "ls-tree", "main", "link"); !strings.HasPrefix(out, "120000") {
		t.Errorf("the link is now %q", out)
	}
}

// TestUpdateStoresManyObjectsAsPack: a commit of packFrom objects or more
// is stored in the working copy as one pack, not a loose file each; git
// finds it sound, and the same Repo reads it for its next commit.
func TestUpdateStoresManyObjectsAsPack(t *testing.T) {
	bare := testgit.NewBare(t, seed)
	workdir := t.TempDir()
	r := mustOpen(t, Options{URL: fileURL(bare), Branch: "main", Workdir: workdir})
	_, packs0 := storeShape(t, workdir)
	files := map[string]string{}
	for i := range packFrom {
		files[fmt.Sprintf("apps/app%03d/deploy.yaml", i)] = fmt.Sprintf("image: app%03d:1.0.0\n", i)
	}
	res, err := r.Update(t.Context(), Update{Commit: author}, setFiles(files, "Add apps", nil))
	if err != nil || !res.Pushed {
		t.Fatalf("Update = %+v, %v", res, err)
	}
	loose, packs := storeShape(t, workdir)
	if len(loose) != 0 || len(packs) != len(packs0)+1 {
		t.Errorf("after a commit of %d files: %d loose objects, %d packs; want 0 and %d", packFrom, len(loose), len(packs), len(packs0)+1)
	}
	testgit.Git(t, workdir, "fsck", "--strict", "--no-dangling", "--full")
	checkWorkdir(t, workdir, bare, mainSHA(t, bare))

	// The next commit, by the same Repo, builds on trees only the new
	// pack holds.
	res, err = r.Update(t.Context(), Update{Commit: author}, setFiles(map[string]string{"apps/app007/deploy.yaml": "image: app007:1.1.0\n"}, "Bump app007", nil))
	if err != nil || !res.Pushed {
		t.Fatalf("the next Update = %+v, %v", res, err)
	}
	if got, _ := testgit.ReadFile(t, bare, "main", "apps/app042/deploy.yaml"); got != files["apps/app042/deploy.yaml"] {
		t.Errorf("the next commit lost apps/app042: %q", got)
	}
	checkWorkdir(t, workdir, bare, mainSHA(t, bare))
}

// TestUpdateKeepsFileMode: an edit changes a file's content, not whether
// it is executable: the commit keeps the base's bit whatever the
// worktree file's is (a chmod by hand; a file system that keeps no such
// bits shows every file one way), as git's core.fileMode=false does. A
// link that becomes a file takes the file's mode.
func TestUpdateKeepsFileMode(t *testing.T) {
	bare := testgit.NewBare(t, map[string]string{"app.yaml": "image: app:1.0.0\n", "run.sh": "image: app:1.0.0\n", "plain.yaml": "x\n"})
	work := filepath.Join(t.TempDir(), "src")
	testgit.Git(t, "", "clone", "-q", bare, work)
	testgit.Git(t, work, "update-index", "--chmod=+x", "run.sh")
	if err := os.Symlink("plain.yaml", filepath.Join(work, "link.yaml")); err != nil {
		t.Fatal(err)
	}
	testgit.Git(t, work, "add", "link.yaml")
	testgit.Git(t, work, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-qm", "modes")
	testgit.Git(t, work, "push", "-q", "origin", "main")

	r := mustOpen(t, Options{URL: fileURL(bare), Branch: "main", Workdir: t.TempDir()})
	for p, mode := range map[string]os.FileMode{"app.yaml": 0o755, "run.sh": 0o644} {
		if err := os.Chmod(filepath.Join(r.Dir(), p), mode); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Remove(filepath.Join(r.Dir(), "link.yaml")); err != nil {
		t.Fatal(err)
	}
	files := map[string]string{"app.yaml": "image: app:2.0.0\n", "run.sh": "image: app:2.0.0\n", "link.yaml": "image: app:2.0.0\n"}
	if _, err := r.Update(t.Context(), Update{Commit: author}, setFiles(files, "Bump", nil)); err != nil {
		t.Fatal(err)
	}
	got := testgit.Git(t, bare, "ls-tree", "main", "app.yaml", "run.sh", "link.yaml")
	for p, mode := range map[string]string{"app.yaml": "100644", "run.sh": "100755", "link.yaml": "100644"} {
		if !regexp.MustCompile(`(?m)^` + mode + ` blob \w+\t` + regexp.QuoteMeta(p) + `$`).MatchString(got) {
			t.Errorf("%s in the commit: want mode %s; ls-tree says\n%s", p, mode, got)
		}
	}
	// The next Open finds the worktree clean: the bit is not content.
	head := r.Head()
	r.Close()
	r = mustOpen(t, Options{URL: fileURL(bare), Branch: "main", Workdir: r.Dir()})
	if r.Head() != head {
		t.Errorf("Head() = %s, want %s", r.Head(), head)
	}
}

// TestPushBranchFiles: the files of the remote push branch, as it holds
// them, and whether it exists.
func TestPushBranchFiles(t *testing.T) {
	const pushBranch = "imagebump/main"
	bare := testgit.NewBare(t, seed)
	r := mustOpen(t, Options{URL: fileURL(bare), Branch: "main", Workdir: t.TempDir()})
	files := []string{"clusters/prod/app.yaml", "clusters/prod/web.yaml", "clusters/prod/gone.yaml", "clusters"}
	got, exists, err := r.PushBranchFiles(t.Context(), pushBranch, files)
	if err != nil || exists || got != nil {
		t.Fatalf("no branch yet: %v, %v, %v; want it not to exist", got, exists, err)
	}
	if _, err := r.Update(t.Context(), Update{Commit: author, PushBranch: pushBranch},
		setFiles(map[string]string{"clusters/prod/app.yaml": "image: app:1.1.0\n"}, "Bump app", nil)); err != nil {
		t.Fatal(err)
	}
	got, exists, err = r.PushBranchFiles(t.Context(), pushBranch, files)
	if err != nil || !exists {
		t.Fatalf("PushBranchFiles: %v, %v", exists, err)
	}
	want := map[string]BranchFile{
		"clusters/prod/app.yaml":  {Present: true, Regular: true, Data: []byte("image: app:1.1.0\n")},
		"clusters/prod/web.yaml":  {Present: true, Regular: true, Data: []byte("image: web:1.0.0\n")},
		"clusters/prod/gone.yaml": {},
		"clusters":                {Present: true}, // a folder is no file
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("PushBranchFiles (-want +got):\n%s", diff)
	}
}
