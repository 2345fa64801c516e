package gitwriter

import (
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp"
	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/google/go-cmp/cmp"

	"github.com/imagebump/imagebump/internal/testkit/testgit"
)

// TestFileTransportWithoutGit clones, fetches and pushes a file:// remote
// with no git program in PATH: the container image ships without git.
// The results are then checked with the git CLI.
func TestFileTransportWithoutGit(t *testing.T) {
	bare := testgit.NewBare(t, seed)
	second := testgit.Commit(t, bare, "main", map[string]string{"clusters/prod/db.yaml": "image: db:1.0.0\n"}, nil, "add db")
	workdir := t.TempDir()
	var pushed, branchCommit string

	t.Run("no git in PATH", func(t *testing.T) {
		t.Setenv("PATH", t.TempDir())
		for _, prog := range []string{"git", "git-upload-pack", "git-receive-pack"} {
			if p, err := exec.LookPath(prog); err == nil {
				t.Fatalf("%s is still found in PATH at %s", prog, p)
			}
		}
		opts := Options{URL: fileURL(bare), Branch: "main", Workdir: workdir}
		r := mustOpen(t, opts)
		if r.Head() != second {
			t.Fatalf("Head() after clone = %s, want %s", r.Head(), second)
		}
		res, err := r.Update(t.Context(), Update{Commit: author},
			setFiles(map[string]string{"clusters/prod/app.yaml": "image: app:1.1.0\n"}, "Bump app", nil))
		if err != nil {
			t.Fatalf("Update (push to main): %v", err)
		}
		if !res.Pushed {
			t.Fatalf("Update = %+v, want a push", res)
		}
		pushed = res.Commit

		// Reuse: fetch into the shallow working copy, then push a branch
		// of imagebump's own, and update it (forced with a lease).
		r = mustOpen(t, opts)
		if r.Head() != pushed {
			t.Fatalf("Head() after reuse = %s, want %s", r.Head(), pushed)
		}
		for i, tag := range []string{"1.2.0", "1.3.0"} {
			res, err := r.Update(t.Context(), Update{Commit: author, PushBranch: "imagebump/main"},
				setFiles(map[string]string{"clusters/prod/web.yaml": "image: web:" + tag + "\n"}, "Bump web", nil))
			if err != nil {
				t.Fatalf("Update (push branch, round %d): %v", i, err)
			}
			if !res.Pushed || res.Forced != (i == 1) {
				t.Fatalf("Update (push branch, round %d) = %+v, want pushed, forced %v", i, res, i == 1)
			}
			branchCommit = res.Commit
		}
	})
	if t.Failed() {
		return
	}

	want := map[string]string{"refs/heads/main": pushed, "refs/heads/imagebump/main": branchCommit}
	if diff := cmp.Diff(testgit.Refs(t, bare), want); diff != "" {
		t.Errorf("remote refs (-got +want):\n%s", diff)
	}
	if diff := cmp.Diff(testgit.Log(t, bare, "imagebump/main"), []string{"Bump web", "Bump app", "add db", "initial commit"}); diff != "" {
		t.Errorf("push branch log (-got +want):\n%s", diff)
	}
	if got, _ := testgit.ReadFile(t, bare, "imagebump/main", "clusters/prod/web.yaml"); got != "image: web:1.3.0\n" {
		t.Errorf("web.yaml on the push branch = %q", got)
	}
	if out, err := testgit.GitErr(t, bare, nil, "fsck", "--strict", "--no-dangling"); err != nil || out != "" {
		t.Errorf("git fsck of the remote: %q, %v", out, err)
	}
	if got := testgit.Git(t, workdir, "rev-parse", "--is-shallow-repository"); got != "true" {
		t.Errorf("working copy is-shallow = %q, want true", got)
	}
	if out, err := testgit.GitErr(t, workdir, nil, "fsck", "--no-dangling"); err != nil || out != "" {
		t.Errorf("git fsck of the working copy: %q, %v", out, err)
	}
}

// TestFileTransportDepth checks that the in-process transport sends what
// git-upload-pack would for each depth: the head alone (shallow) or the
// whole history.
func TestFileTransportDepth(t *testing.T) {
	bare := testgit.NewBare(t, seed)
	for i := range 3 {
		testgit.Commit(t, bare, "main", map[string]string{"n.txt": strconv.Itoa(i) + "\n"}, nil, "commit "+strconv.Itoa(i))
	}
	tests := []struct {
		depth       int
		wantCommits string // "all": as many as the remote has
		wantShallow string
	}{
		{depth: 0, wantCommits: "1", wantShallow: "true"}, // DefaultDepth
		{depth: 2, wantCommits: "2", wantShallow: "true"},
		{depth: -1, wantCommits: "all", wantShallow: "false"},
	}
	for _, tt := range tests {
		t.Run("depth "+strconv.Itoa(tt.depth), func(t *testing.T) {
			workdir := t.TempDir()
			opts := Options{URL: fileURL(bare), Branch: "main", Workdir: workdir, Depth: tt.depth}
			mustOpen(t, opts)
			want := tt.wantCommits
			if want == "all" {
				want = testgit.Git(t, bare, "rev-list", "--count", "main")
			}
			if got := testgit.Git(t, workdir, "rev-list", "--count", "HEAD"); got != want {
				t.Errorf("commits in the clone = %s, want %s", got, want)
			}
			if got := testgit.Git(t, workdir, "rev-parse", "--is-shallow-repository"); got != tt.wantShallow {
				t.Errorf("is-shallow = %s, want %s", got, tt.wantShallow)
			}
			// A new remote commit reaches the reused working copy, whose
			// objects stay complete.
			moved := testgit.Commit(t, bare, "main", map[string]string{"clusters/prod/app.yaml": "image: app:" + strconv.Itoa(tt.depth+5) + "\n"}, nil, "moved")
			if r := mustOpen(t, opts); r.Head() != moved {
				t.Errorf("Head() after fetch = %s, want %s", r.Head(), moved)
			}
			if out, err := testgit.GitErr(t, workdir, nil, "fsck", "--no-dangling"); err != nil || out != "" {
				t.Errorf("git fsck of the working copy: %q, %v", out, err)
			}
		})
	}
}

// TestFileTransportRefUpdates sends ref updates straight to the in-process
// receive-pack: each is applied only if the ref still holds the value the
// client saw, which go-git's own in-process server does not check.
func TestFileTransportRefUpdates(t *testing.T) {
	bare := testgit.NewBare(t, seed)
	main := plumbing.NewHash(mainSHA(t, bare))
	other := plumbing.NewHash(testgit.Commit(t, bare, "other", map[string]string{"o.txt": "o\n"}, nil, "other"))
	featY := testgit.Commit(t, bare, "feat/y", map[string]string{"y.txt": "y\n"}, nil, "y")
	testgit.Git(t, bare, "symbolic-ref", "refs/heads/alias", "refs/heads/main")
	// Every hash ref in packed-refs only, as after git gc.
	testgit.Git(t, bare, "pack-refs", "--all")
	// Empty folders, as a deleted ref under them leaves.
	if err := os.MkdirAll(filepath.Join(bare, "refs", "heads", "stale", "deeper"), 0o755); err != nil {
		t.Fatal(err)
	}
	missing := plumbing.NewHash(strings.Repeat("ab", 20))
	tests := []struct {
		name     string
		cmd      packp.Command
		wantErr  string // "" means applied
		wantRefs map[string]string
	}{
		{
			name:    "update from a stale value",
			cmd:     packp.Command{Name: "refs/heads/main", Old: other, New: other},
			wantErr: "reference has changed",
		},
		{
			name:    "create over an existing ref",
			cmd:     packp.Command{Name: "refs/heads/other", New: main},
			wantErr: "reference has changed",
		},
		{
			name:    "delete",
			cmd:     packp.Command{Name: "refs/heads/other", Old: other},
			wantErr: "deleting a ref is not supported",
		},
		{
			name:    "update to a missing object",
			cmd:     packp.Command{Name: "refs/heads/main", Old: main, New: missing},
			wantErr: "missing object",
		},
		{
			name:    "create under a packed ref",
			cmd:     packp.Command{Name: "refs/heads/main/x", New: main},
			wantErr: "refs/heads/main exists; cannot create refs/heads/main/x",
		},
		{
			name:    "create where a folder holds a ref",
			cmd:     packp.Command{Name: "refs/heads/feat", New: main},
			wantErr: "refs/heads/feat/y exists; cannot create refs/heads/feat",
		},
		{
			name:    "create in a new folder, from a stale value",
			cmd:     packp.Command{Name: "refs/heads/new/deep/x", Old: main, New: other},
			wantErr: "reference has changed",
		},
		{
			name:    "create over a symbolic ref",
			cmd:     packp.Command{Name: "refs/heads/alias", New: other},
			wantErr: "symbolic ref to refs/heads/main",
		},
		{
			name: "update a packed ref from the current value",
			cmd:  packp.Command{Name: "refs/heads/main", Old: main, New: other},
			wantRefs: map[string]string{"refs/heads/main": other.String(), "refs/heads/other": other.String(),
				"refs/heads/feat/y": featY, "refs/heads/alias": other.String()},
		},
		{
			name: "create in a new folder",
			cmd:  packp.Command{Name: "refs/heads/new/deep/x", New: main},
			wantRefs: map[string]string{"refs/heads/main": other.String(), "refs/heads/other": other.String(),
				"refs/heads/feat/y": featY, "refs/heads/alias": other.String(), "refs/heads/new/deep/x": main.String()},
		},
		{
			name: "create where empty folders are",
			cmd:  packp.Command{Name: "refs/heads/stale", New: main},
			wantRefs: map[string]string{"refs/heads/main": other.String(), "refs/heads/other": other.String(),
				"refs/heads/feat/y": featY, "refs/heads/alias": other.String(), "refs/heads/new/deep/x": main.String(),
				"refs/heads/stale": main.String()},
		},
	}
	ep, err := transport.NewEndpoint(fileURL(bare))
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := testgit.Refs(t, bare)
			treeBefore := refsTree(t, bare)
			s, err := fileTransport{}.NewReceivePackSession(ep, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			ar, err := s.AdvertisedReferencesContext(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			req := packp.NewReferenceUpdateRequestFromCapabilities(ar.Capabilities)
			cmd := tt.cmd
			req.Commands = []*packp.Command{&cmd}
			rs, err := s.ReceivePack(t.Context(), req)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("ReceivePack error = %v, want one containing %q", err, tt.wantErr)
				}
				if rs == nil || rs.Error() == nil {
					t.Errorf("report status %+v does not carry the refusal", rs)
				}
				if diff := cmp.Diff(testgit.Refs(t, bare), before); diff != "" {
					t.Errorf("a refused update changed the refs (-got +want):\n%s", diff)
				}
				if diff := cmp.Diff(refsTree(t, bare), treeBefore); diff != "" {
					t.Errorf("a refused update left files or folders under refs/ (-got +want):\n%s", diff)
				}
				return
			}
			if err != nil {
				t.Fatalf("ReceivePack: %v", err)
			}
			if diff := cmp.Diff(testgit.Refs(t, bare), tt.wantRefs); diff != "" {
				t.Errorf("refs (-got +want):\n%s", diff)
			}
		})
	}
}

// refsTree lists the files and folders under the repository's refs/.
func refsTree(t *testing.T, gitDir string) []string {
	t.Helper()
	var paths []string
	err := filepath.WalkDir(filepath.Join(gitDir, "refs"), func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(gitDir, p)
		if d.IsDir() {
			rel += "/"
		}
		paths = append(paths, rel)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return paths
}

// TestFileTransportNonBare checks that a non-bare file:// remote is read
// from its .git and that its checked-out branch is not moved under its
// worktree, as git's receive.denyCurrentBranch refuses by default.
func TestFileTransportNonBare(t *testing.T) {
	bare := testgit.NewBare(t, seed)
	nonBare := filepath.Join(t.TempDir(), "checkout")
	testgit.Git(t, filepath.Dir(nonBare), "clone", "--quiet", bare, nonBare)
	head := testgit.Git(t, nonBare, "rev-parse", "HEAD")

	r := mustOpen(t, Options{URL: fileURL(nonBare), Branch: "main", Workdir: t.TempDir()})
	if r.Head() != head {
		t.Fatalf("Head() = %s, want %s", r.Head(), head)
	}
	edit := setFiles(map[string]string{"clusters/prod/app.yaml": "image: app:2.0.0\n"}, "Bump app", nil)
	_, err := r.Update(t.Context(), Update{Commit: author, MaxAttempts: 1}, edit)
	if err == nil || !strings.Contains(err.Error(), "checked out branch") {
		t.Fatalf("push to the checked-out branch: error = %v, want a refusal", err)
	}
	if got := testgit.Git(t, nonBare, "rev-parse", "HEAD"); got != head {
		t.Errorf("the non-bare remote's HEAD moved to %s", got)
	}
	res, err := r.Update(t.Context(), Update{Commit: author, PushBranch: "imagebump/main"}, edit)
	if err != nil || !res.Pushed {
		t.Fatalf("push to another branch of a non-bare remote = %+v, %v; want a push", res, err)
	}
	if got := testgit.Git(t, nonBare, "rev-parse", "refs/heads/imagebump/main"); got != res.Commit {
		t.Errorf("imagebump/main = %s, want %s", got, res.Commit)
	}

	// A branch checked out in a linked worktree of a bare remote is
	// refused too, as git refuses it; others of the same remote are not.
	linked := filepath.Join(t.TempDir(), "linked")
	testgit.Git(t, bare, "branch", "staging", "main")
	testgit.Git(t, bare, "worktree", "add", "--quiet", linked, "staging")
	staging := testgit.Git(t, bare, "rev-parse", "refs/heads/staging")
	r2 := mustOpen(t, Options{URL: fileURL(bare), Branch: "staging", Workdir: t.TempDir()})
	_, err = r2.Update(t.Context(), Update{Commit: author, MaxAttempts: 1}, edit)
	if err == nil || !strings.Contains(err.Error(), "checked out branch") {
		t.Fatalf("push to a branch a linked worktree has checked out: error = %v, want a refusal", err)
	}
	if got := testgit.Git(t, bare, "rev-parse", "refs/heads/staging"); got != staging {
		t.Errorf("the linked worktree's branch moved to %s", got)
	}
	if status := testgit.Git(t, linked, "status", "--porcelain"); status != "" {
		t.Errorf("the linked worktree is not clean: %q", status)
	}
	if res, err := r2.Update(t.Context(), Update{Commit: author, PushBranch: "imagebump/staging"}, edit); err != nil || !res.Pushed {
		t.Errorf("push to another branch of the same remote = %+v, %v", res, err)
	}

	// A non-bare repository named by its .git folder or by a linked
	// worktree still has its main worktree's branch checked out; and a
	// branch a worktree is rebasing (HEAD detached) counts too.
	feature := filepath.Join(t.TempDir(), "feature")
	testgit.Git(t, nonBare, "worktree", "add", "--quiet", "-b", "feature", feature)
	testgit.Git(t, nonBare, "branch", "topic", "main")
	topicPath := filepath.Join(t.TempDir(), "topic")
	testgit.Git(t, nonBare, "worktree", "add", "--quiet", topicPath, "topic")
	testgit.Git(t, topicPath, "-c", "user.name=a", "-c", "user.email=a@example.invalid", "commit", "--quiet", "--allow-empty", "-m", "local")
	if _, err := testgit.GitErr(t, topicPath, nil, "-c", "user.name=a", "-c", "user.email=a@example.invalid", "rebase", "--quiet", "--exec", "false", "HEAD~1"); err == nil {
		t.Fatal("the rebase did not stop")
	}
	for _, tc := range []struct{ url, branch string }{
		{fileURL(filepath.Join(nonBare, ".git")), "main"},
		{fileURL(feature), "main"},
		{fileURL(nonBare), "topic"},
	} {
		before := testgit.Git(t, nonBare, "rev-parse", "refs/heads/"+tc.branch)
		r3 := mustOpen(t, Options{URL: tc.url, Branch: tc.branch, Workdir: t.TempDir()})
		_, err := r3.Update(t.Context(), Update{Commit: author, MaxAttempts: 1}, setFiles(map[string]string{"clusters/prod/app.yaml": "image: app:9.0.0\n"}, "Bump app", nil))
		r3.Close()
		if err == nil || !strings.Contains(err.Error(), "checked out branch") {
			t.Errorf("push to %s through %s: error = %v, want a refusal", tc.branch, tc.url, err)
		}
		if got := testgit.Git(t, nonBare, "rev-parse", "refs/heads/"+tc.branch); got != before {
			t.Errorf("%s moved to %s through %s", tc.branch, got, tc.url)
		}
	}
}

// TestFileTransportRefLock checks the ref writes of a push to a file://
// remote against git's own locking: a ref whose <ref>.lock exists is not
// written and the lock is left to its owner; a packed ref is updated; no
// lock file is left behind; and a reader of the ref file (git reads it
// without any lock) sees a whole hash at every moment of many pushes,
// never the empty or partial file a write in place shows.
func TestFileTransportRefLock(t *testing.T) {
	bare := testgit.NewBare(t, seed)
	refFile := filepath.Join(bare, "refs", "heads", "main")
	lockFile := refFile + ".lock"
	write(t, lockFile, "")
	before := mainSHA(t, bare)
	r := mustOpen(t, Options{URL: fileURL(bare), Branch: "main", Workdir: t.TempDir()})
	edit := func(v int) Edit {
		return setFiles(map[string]string{"clusters/prod/app.yaml": "image: app:" + strconv.Itoa(10+v) + ".0.0\n"}, "Bump app", nil)
	}
	_, err := r.Update(t.Context(), Update{Commit: author, MaxAttempts: 1}, edit(1))
	if err == nil || !strings.Contains(err.Error(), "refs/heads/main is locked") || !strings.Contains(err.Error(), lockFile) {
		t.Fatalf("push while git holds the ref's lock: error = %v, want one naming %s", err, lockFile)
	}
	if got := mainSHA(t, bare); got != before {
		t.Errorf("main moved to %s under another writer's lock", got)
	}
	if _, err := os.Stat(lockFile); err != nil {
		t.Errorf("the other writer's lock file was removed: %v", err)
	}
	if err := os.Remove(lockFile); err != nil {
		t.Fatal(err)
	}

	// The ref only in packed-refs, as after git gc.
	testgit.Git(t, bare, "pack-refs", "--all")
	if _, err := os.Stat(refFile); !os.IsNotExist(err) {
		t.Fatalf("pack-refs left %s: %v", refFile, err)
	}
	stop := make(chan struct{})
	bad := make(chan string, 1)
	go func() {
		defer close(bad)
		for {
			select {
			case <-stop:
				return
			default:
			}
			b, err := os.ReadFile(refFile)
			if os.IsNotExist(err) {
				continue
			}
			if err != nil || len(b) != 41 || !plumbing.IsHash(string(b[:40])) || b[40] != '\n' {
				bad <- fmt.Sprintf("%q (%v)", b, err)
				return
			}
		}
	}()
	var last string
	for i := 2; i < 60; i++ {
		res, err := r.Update(t.Context(), Update{Commit: author}, edit(i))
		if err != nil {
			t.Fatal(err)
		}
		last = res.Commit
	}
	close(stop)
	if b, ok := <-bad; ok {
		t.Errorf("a reader saw the ref file as %s during a push", b)
	}
	if got := testgit.Git(t, bare, "rev-parse", "--verify", "refs/heads/main"); got != last {
		t.Errorf("main = %s, want the last push %s", got, last)
	}
	if m, _ := filepath.Glob(filepath.Join(bare, "refs", "heads", "*.lock")); len(m) > 0 {
		t.Errorf("lock files left: %v", m)
	}
	testgit.Git(t, bare, "fsck", "--strict")
}

// TestFilePushShares: a push over file:// leaves the pack and the ref as
// readable as their folders are, as git does, where go-git wrote the pack
// at 0600: with a folder shared with its group (core.sharedRepository=
// group) the group may read the commit, and write the ref.
func TestFilePushShares(t *testing.T) {
	for _, tt := range []struct {
		name              string
		dirMode           os.FileMode
		wantPack, wantRef os.FileMode
	}{
		{"usual umask", 0o755, 0o444, 0o644},
		{"shared with the group", 0o2775, 0o444, 0o664},
		{"private", 0o700, 0o400, 0o600},
	} {
		t.Run(tt.name, func(t *testing.T) {
			bare := testgit.NewBare(t, seed)
			for _, d := range []string{"objects/pack", "refs/heads"} {
				if err := os.Chmod(filepath.Join(bare, d), tt.dirMode); err != nil {
					t.Fatal(err)
				}
			}
			before, _ := filepath.Glob(filepath.Join(bare, "objects", "pack", "pack-*"))
			r := mustOpen(t, Options{URL: fileURL(bare), Branch: "main", Workdir: t.TempDir()})
			edit := setFiles(map[string]string{"clusters/prod/app.yaml": "image: app:1.1.0\n"}, "Bump app", nil)
			if _, err := r.Update(t.Context(), Update{Commit: author}, edit); err != nil {
				t.Fatal(err)
			}
			// A push branch in a folder of its own: the folder is made
			// as its parent is, and the ref as the folder gives.
			if _, err := r.Update(t.Context(), Update{Commit: author, PushBranch: "imagebump/apps"}, setFiles(map[string]string{"clusters/prod/app.yaml": "image: app:1.2.0\n"}, "Bump app", nil)); err != nil {
				t.Fatal(err)
			}
			if fi, err := os.Stat(filepath.Join(bare, "refs", "heads", "imagebump")); err != nil || fi.Mode()&(os.ModePerm|os.ModeSetgid) != tt.dirMode&(os.ModePerm|os.ModeSetgid) {
				t.Errorf("refs/heads/imagebump: mode %v (%v), want %v", fi.Mode(), err, tt.dirMode)
			}
			if fi, err := os.Stat(filepath.Join(bare, "refs", "heads", "imagebump", "apps")); err != nil || fi.Mode().Perm() != tt.wantRef {
				t.Errorf("refs/heads/imagebump/apps: mode %v (%v), want %v", fi.Mode().Perm(), err, tt.wantRef)
			}
			after, _ := filepath.Glob(filepath.Join(bare, "objects", "pack", "pack-*"))
			var pushed int
			for _, p := range after {
				if slices.Contains(before, p) {
					continue
				}
				pushed++
				if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != tt.wantPack {
					t.Errorf("%s: mode %v, want %v", filepath.Base(p), fi.Mode().Perm(), tt.wantPack)
				}
			}
			if pushed == 0 {
				t.Fatal("the push wrote no pack")
			}
			if fi, err := os.Stat(filepath.Join(bare, "refs", "heads", "main")); err != nil || fi.Mode().Perm() != tt.wantRef {
				t.Errorf("refs/heads/main: mode %v (%v), want %v", fi.Mode().Perm(), err, tt.wantRef)
			}
		})
	}
}
