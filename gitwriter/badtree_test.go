package gitwriter

import (
	"bytes"
	"compress/zlib"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	gogit "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"

	"github.com/imagebump/imagebump/internal/testkit/testgit"
)

// TestParseTreeRefusesBadNames: entries git refuses to check out, which
// written as they stand could put files outside the worktree or in .git.
func TestParseTreeRefusesBadNames(t *testing.T) {
	h := strings.Repeat("\x01", 20)
	entry := func(mode, name string) string { return mode + " " + name + "\x00" + h }
	tests := []struct {
		name    string
		content string
		bad     bool // errBadTree, not only an error
		ok      bool
	}{
		{"dot dot folder", entry("40000", ".."), true, false},
		{"dot file", entry("100644", "."), true, false},
		{".git folder", entry("40000", ".git"), true, false},
		{".GIT file", entry("100644", ".GIT"), true, false},
		{"empty name", entry("100644", ""), false, false},
		{"a file and a folder a", entry("100644", "a") + entry("40000", "a"), true, false},
		{"a link and a folder a, a-b between", entry("120000", "a") + entry("100644", "a-b") + entry("40000", "a"), true, false},
		{"an executable and a folder a, a.x between", entry("100755", "a") + entry("40000", "a.x") + entry("40000", "a"), true, false},
		{"names like the refused ones", entry("100644", "..a") + entry("40000", ".github") + entry("100644", ".gitignore"), false, true},
		{"a file a and a folder a-b", entry("100644", "a") + entry("40000", "a-b") + entry("100644", "ab"), false, true},
		{"a folder a and a file a0", entry("40000", "a") + entry("100644", "a0"), false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parseTree([]byte(tt.content))
			if tt.ok != (err == nil) {
				t.Fatalf("parseTree: err = %v, want ok %v", err, tt.ok)
			}
			if tt.bad != errors.Is(err, errBadTree) {
				t.Errorf("parseTree: err = %v, errBadTree %v, want %v", err, errors.Is(err, errBadTree), tt.bad)
			}
		})
	}
	for _, p := range []string{"../x", "a/../x", "a/.git/config", ".Git/hooks/x", "a//b", "./a"} {
		if err := checkEntryPath(p); !errors.Is(err, errBadTree) {
			t.Errorf("checkEntryPath(%q) = %v, want errBadTree", p, err)
		}
	}
	if err := checkEntryPath("clusters/.github/a..b"); err != nil {
		t.Errorf("checkEntryPath of a good path = %v", err)
	}
}

// TestOpenRefusesBadTree pushes commits whose trees git refuses to check
// out: a folder ".." holding a file; a link "a" to a folder outside the
// worktree beside a folder "a" holding a file; the same link beside a
// file named "a/b"; and the link after the folder, out of order. (The
// last two once made the pack reader hand the tree to go-git's diff,
// which listed both the link and the file under it.) Open fails with an
// error saying so, on a fresh clone, on a working copy moved to the
// commit, and on one hard-reset to it; it writes nothing outside the
// worktree, and does not clone again and again for it.
func TestOpenRefusesBadTree(t *testing.T) {
	for _, shape := range []string{"dotdot", "link and folder", "slash", "out of order"} {
		for _, via := range []string{"clone", "move", "reset"} {
			t.Run(shape+"/"+via, func(t *testing.T) { testBadTree(t, shape, via) })
		}
	}
}

func testBadTree(t *testing.T, shape, via string) {
	bare := testgit.NewBare(t, seed)
	base := t.TempDir()
	workdir := filepath.Join(base, "work")
	outside := filepath.Join(t.TempDir(), "outside")
	if err := os.Mkdir(outside, 0o755); err != nil {
		t.Fatal(err)
	}
	opts := Options{URL: fileURL(bare), Branch: "main", Workdir: workdir}
	if via != "clone" {
		mustOpen(t, opts).Close()
	}

	object := func(typ, content string) string { return rawObject(t, bare, typ, content) }
	entry := func(mode, name, h string) string { return treeEntryBytes(t, mode, name, h) }
	readme := testgit.Git(t, bare, "rev-parse", "main:README.md")
	pwned := object("blob", "pwned\n")
	inner := object("tree", entry("100644", "b", pwned))
	var root string
	switch shape {
	case "dotdot":
		root = object("tree", entry("40000", "..", object("tree", entry("100644", "pwned.txt", pwned)))+entry("100644", "README.md", readme))
	case "link and folder":
		root = object("tree", entry("100644", "README.md", readme)+entry("120000", "a", object("blob", outside))+entry("40000", "a", inner))
	case "slash":
		// go-git's diff took "a/b" as a file in a folder a.
		root = object("tree", entry("100644", "README.md", readme)+entry("120000", "a", object("blob", outside))+entry("100644", "a/b", pwned))
	default:
		// The folder a sorts after the link a: go-git's diff listed both.
		root = object("tree", entry("100644", "README.md", readme)+entry("40000", "a", inner)+entry("120000", "a", object("blob", outside)))
	}
	commit := testgit.Git(t, bare, "commit-tree", root, "-p", "main", "-m", "bad")
	testgit.Git(t, bare, "update-ref", "refs/heads/main", commit)
	if via == "reset" {
		if err := os.Remove(filepath.Join(workdir, ".git", resetStateFile)); err != nil {
			t.Fatal(err)
		}
	}

	var store os.FileInfo // the working copy's .git after the first attempt
	for attempt := range 2 {
		logger, logs := newLogger()
		opts.Logger = logger
		r, err := Open(t.Context(), opts)
		if err == nil {
			r.Close()
			t.Fatalf("Open of a commit with a bad tree succeeded")
		}
		if !errors.Is(err, errBadTree) || !strings.Contains(err.Error(), "git refuses to check out") || !strings.Contains(err.Error(), "revert or rewrite the commit") {
			t.Errorf("Open: err = %v, want errBadTree saying what and what to do", err)
		}
		if strings.Contains(logs.String(), "re-cloning") {
			t.Errorf("attempt %d: Open cloned afresh for a bad commit:\n%s", attempt, logs)
		}
		// A clone that met the commit is kept, and not made again
		// while the commit is there.
		fi, err := os.Stat(filepath.Join(workdir, ".git"))
		if err != nil {
			t.Fatalf("attempt %d left no working copy: %v", attempt, err)
		}
		if store != nil && !os.SameFile(fi, store) {
			t.Errorf("attempt %d cloned afresh", attempt)
		}
		store = fi
		if entries, _ := os.ReadDir(workdir); len(entries) != 1 && via == "clone" {
			t.Errorf("attempt %d left %d entries in the worktree, want .git alone", attempt, len(entries))
		}
	}
	for _, p := range []string{filepath.Join(base, "pwned.txt"), filepath.Join(outside, "b")} {
		if _, err := os.Lstat(p); err == nil {
			t.Errorf("Open wrote %s, outside the worktree", p)
		}
	}
	// A move refused keeps the record of what the worktree holds: the
	// next head is reached by a move, not a reset.
	if _, err := os.Stat(filepath.Join(workdir, ".git", resetStateFile)); via == "move" && err != nil {
		t.Errorf("a refused move lost the state file: %v", err)
	}

	// Once the remote branch is fixed, the next Open brings the working
	// copy to it.
	testgit.Git(t, bare, "update-ref", "refs/heads/main", commit+"^")
	opts.Logger = nil
	r := mustOpen(t, opts)
	defer r.Close()
	if r.Head() != testgit.Git(t, bare, "rev-parse", "main") {
		t.Errorf("Open after the fix holds %s", r.Head())
	}
	if got := testgit.Git(t, workdir, "status", "--porcelain", "--ignored"); got != "" {
		t.Errorf("after the fix, git status says:\n%s", got)
	}
	if _, err := os.Stat(filepath.Join(workdir, "README.md")); err != nil {
		t.Errorf("after the fix: %v", err)
	}
}

// TestRestoreRefusesPathBeyondLink: a head whose "a" is a link to a
// folder outside the worktree (a tree git accepts), and a Restore of
// "a/b", which the head does not hold: Restore deleted the file the link
// reached, outside the worktree. Now it refuses the path.
func TestRestoreRefusesPathBeyondLink(t *testing.T) {
	outside := t.TempDir()
	victim := filepath.Join(outside, "b")
	if err := os.WriteFile(victim, []byte("keep\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	bare := testgit.NewBare(t, seed)
	link := gitStdin(t, bare, outside, "hash-object", "-w", "--stdin")
	tree := gitStdin(t, bare, testgit.Git(t, bare, "ls-tree", "main")+"\n120000 blob "+link+"\ta\n", "mktree")
	testgit.Git(t, bare, "update-ref", "refs/heads/main", gitStdin(t, bare, "", "commit-tree", tree, "-p", "main", "-m", "a link"))
	r := mustOpen(t, Options{URL: fileURL(bare), Branch: "main", Workdir: t.TempDir()})
	defer r.Close()
	if fi, err := os.Lstat(filepath.Join(r.Dir(), "a")); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("the working copy has no link a: %v", err)
	}
	if err := r.Restore([]string{"a/b"}); err == nil || !strings.Contains(err.Error(), "beyond the symbolic link") {
		t.Errorf("Restore of a path beyond a link: err = %v", err)
	}
	if _, err := os.Stat(victim); err != nil {
		t.Errorf("Restore deleted %s, outside the worktree: %v", victim, err)
	}
}

// TestFallbackDiffChecksTreeNames: when the pack reader cannot read the
// store (here: no pack folder), trees are read through go-git's store and
// still parsed by gitwriter: a commit that adds a link "z/x" beside an
// unchanged folder "z/x" is refused saying why. (go-git's diff, once
// asked here, checks no name, lists only what changed, and failed on it
// with "directory not found".)
func TestFallbackDiffChecksTreeNames(t *testing.T) {
	bare := testgit.NewBare(t, seed)
	object := func(typ, content string) string { return rawObject(t, bare, typ, content) }
	entry := func(mode, name, h string) string { return treeEntryBytes(t, mode, name, h) }
	readme := testgit.Git(t, bare, "rev-parse", "main:README.md")
	folder := entry("40000", "x", object("tree", entry("100644", "b", object("blob", "b\n"))))
	link := entry("120000", "x", object("blob", "/elsewhere"))
	commit := func(z, parent string) plumbing.Hash {
		root := object("tree", entry("100644", "README.md", readme)+entry("40000", "z", object("tree", z)))
		args := []string{"commit-tree", root, "-m", "z"}
		if parent != "" {
			args = append(args, "-p", parent)
		}
		return plumbing.NewHash(testgit.Git(t, bare, args...))
	}
	good := commit(folder, "")
	bad := commit(link+folder, good.String())
	_ = os.RemoveAll(filepath.Join(bare, "objects", "pack"))
	repo, err := gogit.PlainOpen(bare)
	if err != nil {
		t.Fatal(err)
	}
	r := &Repo{repo: repo, objects: filepath.Join(bare, "objects"), log: slog.New(slog.DiscardHandler)}
	if _, err := r.openPacks(); err == nil {
		t.Fatal("the pack reader opened a store with no pack folder: the test does not reach go-git's store")
	}
	if _, err := r.diffUncached(nil, plumbing.ZeroHash, good); err != nil {
		t.Fatalf("the diff of a sound commit through go-git's store: %v", err)
	}
	changes, err := r.diffUncached(nil, good, bad)
	if !errors.Is(err, errBadTree) || !strings.Contains(err.Error(), "folder z") {
		t.Errorf("the diff through go-git's store of a link added beside a folder of its name = %v, %v; want errBadTree naming folder z", changes, err)
	}
}

// gitStdin runs git on the bare repository with stdin and returns its
// output, trimmed.
func gitStdin(t *testing.T, bare, stdin string, args ...string) string {
	t.Helper()
	git := testgit.RequireProgram(t, "git", "git")
	cmd := exec.Command(git, append([]string{"--git-dir=" + bare}, args...)...)
	cmd.Stdin = strings.NewReader(stdin)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git %s: %v", strings.Join(args, " "), err)
	}
	return strings.TrimSpace(string(out))
}

// rawObject stores an object of type typ with content in the bare
// repository as it stands (git checks no tree it is given so), and
// returns its name.
func rawObject(t *testing.T, bare, typ, content string) string {
	t.Helper()
	return gitStdin(t, bare, content, "hash-object", "-w", "--literally", "-t", typ, "--stdin")
}

// treeEntryBytes is one tree entry as git stores it: a mode, a name and the
// object's name in 20 bytes.
func treeEntryBytes(t *testing.T, mode, name, h string) string {
	t.Helper()
	raw, err := hex.DecodeString(h)
	if err != nil {
		t.Fatal(err)
	}
	return mode + " " + name + "\x00" + string(raw)
}

// TestFailedOpenClosesPacks: an Open that fails after opening the object
// store (on a bad commit, or a fetch that fails) returns no Repo to
// Close, so it closes the pack files itself. Before, they stayed open
// until the garbage collector found them.
func TestFailedOpenClosesPacks(t *testing.T) {
	bare := testgit.NewBare(t, seed)
	workdir := filepath.Join(t.TempDir(), "work")
	opts := Options{URL: fileURL(bare), Branch: "main", Workdir: workdir}
	mustOpen(t, opts).Close()
	bad := rawObject(t, bare, "tree", treeEntryBytes(t, "100644", "..", rawObject(t, bare, "blob", "x\n")))
	testgit.Git(t, bare, "update-ref", "refs/heads/main", testgit.Git(t, bare, "commit-tree", bad, "-p", "main", "-m", "bad"))
	openPacks := func() (n int) {
		fds, err := os.ReadDir("/proc/self/fd")
		if err != nil {
			t.Fatal(err)
		}
		for _, fd := range fds {
			if target, err := os.Readlink(filepath.Join("/proc/self/fd", fd.Name())); err == nil && strings.HasPrefix(target, filepath.Join(workdir, ".git")) {
				n++
			}
		}
		return n
	}
	for attempt := range 3 {
		if _, err := Open(t.Context(), opts); !errors.Is(err, errBadTree) {
			t.Fatalf("Open: %v, want errBadTree", err)
		}
		if n := openPacks(); n != 0 {
			t.Errorf("after failed Open %d, %d files of the working copy's .git are open", attempt+1, n)
		}
	}
	// The same when the remote cannot be reached.
	if err := os.Rename(bare, bare+".gone"); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(t.Context(), opts); err == nil {
		t.Fatal("Open of a remote that is gone succeeded")
	}
	if n := openPacks(); n != 0 {
		t.Errorf("after an Open whose fetch failed, %d files of the working copy's .git are open", n)
	}
}

// TestFallbackDiffChecksTrees: when the pack reader cannot read the
// store, go-git's diff walked both commits' trees, unchecked: a damaged
// tree of the old commit gave a wrong list of changes. Checking what it
// read did not help: go-git's tree walk ends a folder's list, with no
// error, at a subtree it cannot read. Trees read through go-git's store
// are now checked and walked by gitwriter.
func TestFallbackDiffChecksTrees(t *testing.T) {
	bare := testgit.NewBare(t, seed)
	object := func(typ, content string) string { return rawObject(t, bare, typ, content) }
	entry := func(mode, name, h string) string { return treeEntryBytes(t, mode, name, h) }
	readme := testgit.Git(t, bare, "rev-parse", "main:README.md")
	b := entry("100644", "b", object("blob", "b\n"))
	oldZ := object("tree", b)
	commit := func(z, parent string) plumbing.Hash {
		root := object("tree", entry("100644", "README.md", readme)+entry("40000", "z", z))
		args := []string{"commit-tree", root, "-m", "z"}
		if parent != "" {
			args = append(args, "-p", parent)
		}
		return plumbing.NewHash(testgit.Git(t, bare, args...))
	}
	old := commit(oldZ, "")
	next := commit(object("tree", b+entry("100644", "c", object("blob", "c\n"))), old.String())
	_ = os.RemoveAll(filepath.Join(bare, "objects", "pack"))
	repo, err := gogit.PlainOpen(bare)
	if err != nil {
		t.Fatal(err)
	}
	r := &Repo{repo: repo, objects: filepath.Join(bare, "objects"), log: slog.New(slog.DiscardHandler)}
	changes, err := r.diffUncached(nil, old, next)
	if err != nil || len(changes) != 1 || changes[0].path != "z/c" {
		t.Fatalf("the diff of a sound history through go-git's store = %+v, %v; want z/c added", changes, err)
	}
	damageLoose(t, filepath.Join(bare, "objects"), plumbing.NewHash(oldZ), "100644 b", "100644 d")
	if repo, err = gogit.PlainOpen(bare); err != nil { // nothing cached
		t.Fatal(err)
	}
	r = &Repo{repo: repo, objects: filepath.Join(bare, "objects"), log: slog.New(slog.DiscardHandler)}
	changes, err = r.diffUncached(nil, old, next)
	if !errors.Is(err, errDamaged) {
		t.Errorf("the diff through go-git's store from a commit with a damaged tree = %+v, %v; want errDamaged", changes, err)
	}
}

// TestOpenMovesFromRefusedTree: a working copy at a commit whose tree
// today's checks refuse (left by an older imagebump, which accepted it:
// a chain of folders deeper than maxTreeDepth, entries out of order),
// and a remote that moved on to a sound commit. Open blamed the sound
// head and failed every time; it now hard-resets to it.
func TestOpenMovesFromRefusedTree(t *testing.T) {
	for _, shape := range []string{"deep", "out of order"} {
		t.Run(shape, func(t *testing.T) {
			bare := testgit.NewBare(t, seed)
			workdir := filepath.Join(t.TempDir(), "work")
			opts := Options{URL: fileURL(bare), Branch: "main", Workdir: workdir, Depth: -1, TrustWorktree: true}
			mustOpen(t, opts).Close()
			good := testgit.Git(t, bare, "rev-parse", "main")
			readme := testgit.Git(t, bare, "rev-parse", "main:README.md")
			var refused string
			switch shape {
			case "deep":
				// Written directly: a git process per tree takes seconds.
				h := plumbing.NewHash(gitStdin(t, bare, "", "mktree"))
				for range maxTreeDepth + 1 {
					h = writeLoose(t, bare, plumbing.TreeObject, append([]byte("40000 d\x00"), h[:]...))
				}
				refused = rawObject(t, bare, "tree", treeEntryBytes(t, "100644", "README.md", readme)+treeEntryBytes(t, "40000", "deep", h.String()))
			default:
				refused = rawObject(t, bare, "tree", treeEntryBytes(t, "100644", "b", readme)+treeEntryBytes(t, "100644", "a", readme))
			}
			old := testgit.Git(t, bare, "commit-tree", refused, "-p", good, "-m", "refused now")
			head := testgit.Git(t, bare, "commit-tree", good+"^{tree}", "-p", old, "-m", "sound")
			testgit.Git(t, bare, "update-ref", "refs/heads/main", head)
			// The working copy as it was left at the old commit.
			testgit.Git(t, workdir, "fetch", "origin")
			testgit.Git(t, workdir, "update-ref", "refs/heads/main", old)
			sum, err := indexChecksum(filepath.Join(workdir, ".git", "index"))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(workdir, ".git", resetStateFile), []byte(old+" "+sum+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			r, err := Open(t.Context(), opts)
			if err != nil {
				t.Fatalf("Open of the sound head: %v", err)
			}
			defer r.Close()
			if r.Head() != head {
				t.Errorf("Open holds %s, want %s", r.Head(), head)
			}
			if got := testgit.Git(t, workdir, "status", "--porcelain", "--ignored"); got != "" {
				t.Errorf("git status after Open:\n%s", got)
			}
		})
	}
}

// writeLoose stores an object of type typ with content in the bare
// repository as a loose file, as git does, and returns its name.
func writeLoose(t *testing.T, bare string, typ plumbing.ObjectType, content []byte) plumbing.Hash {
	t.Helper()
	h := objectHash(typ, content)
	var buf bytes.Buffer
	zw := zlib.NewWriter(&buf)
	fmt.Fprintf(zw, "%s %d\x00", typ, len(content))
	zw.Write(content)
	zw.Close()
	p := filepath.Join(bare, "objects", h.String()[:2], h.String()[2:])
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, buf.Bytes(), 0o444); err != nil && !os.IsExist(err) {
		t.Fatal(err)
	}
	return h
}

// TestRefusedNamesMatchGit asks the git on this machine to check out a
// tree of one entry, a file or a symbolic link, for names that NTFS or
// HFS+ takes for ".git" or ".gitmodules" and names that only look like
// them, and requires parseTree to refuse exactly what git refuses. git
// protects NTFS on every system by default, HFS+ only on macOS: each
// name is asked with core.protectHFS off and on, and protectHFS set to
// match.
func TestRefusedNamesMatchGit(t *testing.T) {
	for _, hfs := range []bool{false, true} {
		t.Run(fmt.Sprintf("protectHFS=%v", hfs), func(t *testing.T) { testRefusedNames(t, hfs) })
	}
}

func testRefusedNames(t *testing.T, hfs bool) {
	defer func(was bool) { protectHFS = was }(protectHFS)
	protectHFS = hfs
	work := t.TempDir()
	testgit.Git(t, work, "init", "-q")
	testgit.Git(t, work, "config", "core.protectHFS", strconv.FormatBool(hfs))
	blob := rawObject(t, filepath.Join(work, ".git"), "blob", "target")
	names := []string{
		".git", ".GIT", ".Git.", ".git ", ".git. .", ".git:x", ".git::$INDEX_ALLOCATION", `.git\x`,
		"git~1", "GIT~1", "git~1.", "Git~1 :y", `git~1\x`,
		".gitx", "x.git", ".git.x", "git~2", "git~1x", "git~10", ". git", `a\b`,
		".gitmodules", ".GitModules. ", ".gitmodules:x", ".gitmodulesx",
		"gitmod~1", "GITMOD~4", "gitmod~4 .", "gitmod~5", "gitmod~1x",
		"gi7eba~1", "GI7EBA~9", "gi7eb~12", "gi7e~123", "~1234567", "gi7eba~0", "gi7ebb~1", "gi7eba~1x", "gi7eba~",
		".gitattributes", ".gitignore",
		// NTFS takes a backslash for a separator: git checks each part,
		// but its .gitmodules test does not stop at one.
		`x\.git`, `x\.GIT.`, `x\git~1`, `x\git~1:a`, `a\b\.git`, `x\.gitx`,
		`x\.gitmodules`, `x\gitmod~1`, `x\gi7eba~1`, `.gitmodules\`, `.gitmodules\x`, `gitmod~1\`, `gi7eba~1\x`,
		// HFS+ ignores some invisible code points and folds case.
		".g\u200cit", ".GI\u200dT", "\u200e.git", ".git\u200f", ".git\u202a\u202e", "\u206a.g\u206fit", ".git\ufeff",
		".git\u200cx", ".git\u200b", ".gi\u0307t", ".git\ufffd", "\u200c.gitx", ".\u200c", "..\u200d",
		// Bytes git does not read as UTF-8 end the name after ".git",
		// and nowhere else.
		".git\xff", ".git\xe2\x80", ".git\uffff", ".git\ufffe", ".git\xed\xa0\x80", ".git\xc0\xae", ".g\xffit", "\xff.git",
		"\ufeff.gitmodules", ".gitmodule\u200cs", ".GITMODULES\u200d", ".gitmodules\u200cx", ".gitmodules\xff", `x\.gitmodule` + "\u200cs",
	}
	for _, name := range names {
		for _, mode := range []string{"100644", "120000"} {
			tree := rawObject(t, filepath.Join(work, ".git"), "tree", treeEntryBytes(t, mode, name, blob))
			commit := strings.TrimSpace(testgit.Git(t, work, "commit-tree", tree, "-m", "x"))
			_, gitErr := testgit.GitErr(t, work, nil, "read-tree", "-u", "--reset", commit)
			if gitErr != nil && !strings.Contains(gitErr.Error(), "invalid path") {
				t.Fatalf("git read-tree of %q (%s): %v", name, mode, gitErr)
			}
			content, err := hex.DecodeString(blob)
			if err != nil {
				t.Fatal(err)
			}
			_, ours := parseTree([]byte(mode + " " + name + "\x00" + string(content)))
			if ours != nil && !errors.Is(ours, errBadTree) {
				t.Errorf("parseTree of %q (%s): %v, not errBadTree", name, mode, ours)
			}
			if (gitErr != nil) != (ours != nil) {
				t.Errorf("%q (%s): git refuses it: %v; parseTree: %v", name, mode, gitErr != nil, ours)
			}
		}
	}

	// git checks a link's every folder too: a link below a folder it
	// takes for .gitmodules is refused, a file there is not. Its NTFS
	// test reads on past the folder, so a ":" ends such a name there, and
	// the "/" that follows does not.
	repo, err := gogit.PlainOpen(work)
	if err != nil {
		t.Fatal(err)
	}
	r := &Repo{repo: repo, objects: filepath.Join(work, ".git", "objects"), log: slog.New(slog.DiscardHandler)}
	for _, folder := range []string{
		".gitmodules", ".GITMODULES", "gitmod~1:x", `x\.gitmodules`, ".gitmodulesx", "modules", ".gitmodule\u200cs", "\ufeff.gitmodules",
		"gitmod~1", "GITMOD~4.", "gi7eba~1", ".gitmodules.", ".gitmodules ", ".gitmodules .:x", `x\.gitmodules:`, `x\gitmod~1:a`, `a\b\gi7eba~1 :`,
		".gitmodules\xe2", `x\.gitmodule` + "\u200cs",
	} {
		for _, mode := range []string{"100644", "120000"} {
			sub := rawObject(t, filepath.Join(work, ".git"), "tree", treeEntryBytes(t, mode, "y", blob))
			tree := rawObject(t, filepath.Join(work, ".git"), "tree", treeEntryBytes(t, "40000", folder, sub))
			commit := strings.TrimSpace(testgit.Git(t, work, "commit-tree", tree, "-m", "x"))
			_, gitErr := testgit.GitErr(t, work, nil, "read-tree", "-u", "--reset", commit)
			if gitErr != nil && !strings.Contains(gitErr.Error(), "invalid path") {
				t.Fatalf("git read-tree of %q/y (%s): %v", folder, mode, gitErr)
			}
			_, ours := r.diffUncached(nil, plumbing.ZeroHash, plumbing.NewHash(commit))
			if ours != nil && !errors.Is(ours, errBadTree) {
				t.Errorf("the tree of %q/y (%s): %v, not errBadTree", folder, mode, ours)
			}
			if (gitErr != nil) != (ours != nil) {
				t.Errorf("%q/y (%s): git refuses it: %v; the diff: %v", folder, mode, gitErr != nil, ours)
			}
		}
	}
}

// TestBackslashOnWindows: where a backslash separates folders (Windows),
// a name with one is refused, as git for Windows refuses it, so that
// "..\..\x" cannot be written outside the worktree; elsewhere git
// checks such names out (TestRefusedNamesMatchGit asks it), and so does
// parseTree.
func TestBackslashOnWindows(t *testing.T) {
	hash := strings.Repeat("\x01", 20)
	for _, windows := range []bool{false, true} {
		t.Run(fmt.Sprintf("backslashSeparates=%v", windows), func(t *testing.T) {
			defer func(was bool) { backslashSeparates = was }(backslashSeparates)
			backslashSeparates = windows
			for _, tt := range []struct {
				name    string
				refused bool
			}{
				{`..\..\x`, windows},
				{`a\b`, windows},
				{`\x`, windows},
				{`x\`, windows},
				{`.\`, windows},
				{`\`, windows},
				{"a.b", false},
				{"..", true},
			} {
				_, err := parseTree([]byte("100644 " + tt.name + "\x00" + hash))
				if (err != nil) != tt.refused || err != nil && !errors.Is(err, errBadTree) {
					t.Errorf("parseTree of an entry %q: %v, want refused %v", tt.name, err, tt.refused)
				}
				err = checkEntryPath("clusters/" + tt.name + "/x.yaml")
				if (err != nil) != tt.refused {
					t.Errorf("checkEntryPath of a path through %q: %v, want refused %v", tt.name, err, tt.refused)
				}
			}
		})
	}
}
