package gitwriter

import (
	"bufio"
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-git/go-billy/v5/osfs"
	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/storage/filesystem"

	"github.com/imagebump/imagebump/internal/testkit/testgit"
	"github.com/imagebump/imagebump/internal/testkit/treegen"
)

// Size of the benchmark repository.
const (
	benchCommits = 10000
	benchDirs    = 100 // files are spread over this many directories
)

// benchRepo is the benchmark repository, made once per test binary run
// with git fast-import and removed by TestMain.
var benchRepo struct {
	once sync.Once
	root string
	bare string
	err  error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if benchRepo.root != "" {
		_ = os.RemoveAll(benchRepo.root)
	}
	os.Exit(code)
}

// benchBare returns a bare repository whose main has benchCommits commits,
// each adding one file, so its head holds benchCommits files.
func benchBare(b *testing.B) string {
	b.Helper()
	git := testgit.RequireProgram(b, "git", "git")
	benchRepo.once.Do(func() {
		root, err := os.MkdirTemp("", "imagebump-bench-")
		if err != nil {
			benchRepo.err = err
			return
		}
		benchRepo.root = root
		bare := filepath.Join(root, "big.git")
		if out, err := exec.Command(git, "init", "--quiet", "--bare", "--initial-branch=main", bare).CombinedOutput(); err != nil {
			benchRepo.err = fmt.Errorf("git init: %v: %s", err, out)
			return
		}
		cmd := exec.Command(git, "fast-import", "--quiet")
		cmd.Dir = bare
		cmd.Env = append(os.Environ(), "GIT_DIR="+bare)
		in, err := cmd.StdinPipe()
		if err != nil {
			benchRepo.err = err
			return
		}
		if err := cmd.Start(); err != nil {
			benchRepo.err = err
			return
		}
		w := bufio.NewWriter(in)
		when := int64(1700000000)
		for i := range benchCommits {
			msg := fmt.Sprintf("add file %05d", i)
			content := fmt.Sprintf("name: app-%05d\nimage: ghcr.io/acme/app-%05d:1.0.%d\n", i, i, i)
			fmt.Fprintf(w, "commit refs/heads/main\ncommitter bench <bench@example.invalid> %d +0000\ndata %d\n%s\n", when+int64(i), len(msg), msg)
			fmt.Fprintf(w, "M 100644 inline apps/dir%03d/app%05d.yaml\ndata %d\n%s\n", i%benchDirs, i, len(content), content)
		}
		if err := w.Flush(); err != nil {
			benchRepo.err = err
			return
		}
		_ = in.Close()
		if err := cmd.Wait(); err != nil {
			benchRepo.err = fmt.Errorf("git fast-import: %w", err)
			return
		}
		benchRepo.bare = bare
	})
	if benchRepo.err != nil {
		b.Fatal(benchRepo.err)
	}
	return benchRepo.bare
}

// BenchmarkNoopCycle compares a cycle with nothing new on a reused working
// copy (Open on the existing Workdir, then an Update whose edit changes
// nothing) with a fresh shallow clone of the same repository, both over
// smart HTTP with basic auth. ns/op is the reused cycle.
func BenchmarkNoopCycle(b *testing.B) {
	bare := benchBare(b)
	s := testgit.StartHTTP(b, bare, true)
	dir := b.TempDir()
	auth := Auth{UsernameFile: filepath.Join(dir, "user"), PasswordFile: filepath.Join(dir, "pass")}
	if err := os.WriteFile(auth.UsernameFile, []byte(s.Username), 0o600); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(auth.PasswordFile, []byte(s.Password), 0o600); err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	open := func(workdir string) *Repo {
		r, err := Open(ctx, Options{URL: s.URL, Branch: "main", Auth: auth, Workdir: workdir})
		if err != nil {
			b.Fatal(err)
		}
		return r
	}
	// The edit rewrites one file with the content it has: nothing changes.
	noop := func(ctx context.Context, dir string) ([]string, string, error) {
		const name = "apps/dir007/app00007.yaml"
		p := filepath.Join(dir, name)
		content, err := os.ReadFile(p)
		if err != nil {
			return nil, "", err
		}
		return []string{name}, "no-op", os.WriteFile(p, content, 0o644)
	}

	// Fresh shallow clones, timed apart from b's timer.
	const freshRuns = 3
	var fresh []time.Duration
	for range freshRuns {
		start := time.Now()
		r := open(filepath.Join(b.TempDir(), "fresh"))
		fresh = append(fresh, time.Since(start))
		if len(r.head.String()) != 40 {
			b.Fatal("fresh clone has no head")
		}
	}
	slices.Sort(fresh)
	freshMedian := fresh[len(fresh)/2]

	workdir := filepath.Join(b.TempDir(), "reused")
	open(workdir)
	pushes := s.Pushes()
	b.ResetTimer()
	start := time.Now()
	for range b.N {
		r := open(workdir)
		res, err := r.Update(ctx, Update{Commit: author}, noop)
		if err != nil {
			b.Fatal(err)
		}
		if res.Pushed {
			b.Fatal("a no-op cycle pushed")
		}
	}
	reused := time.Since(start) / time.Duration(b.N)
	b.StopTimer()
	if s.Pushes() != pushes {
		b.Fatal("a no-op cycle pushed")
	}
	ratio := float64(freshMedian) / float64(reused)
	b.ReportMetric(float64(freshMedian.Nanoseconds()), "fresh-clone-ns")
	b.ReportMetric(float64(reused.Nanoseconds()), "reused-cycle-ns")
	b.ReportMetric(ratio, "x-cheaper")
	if ratio < 5 {
		b.Errorf("a reused no-op cycle (%v) is only %.1fx cheaper than a fresh shallow clone (%v); want at least 5x", reused, ratio, freshMedian)
	}
}

// BenchmarkFold times the fold of a grown working copy of the benchmark
// repository, whose clone's pack holds 10,101 objects: loose objects as
// many bumps leave them, 600-byte blobs each, and 19 packs of 20 objects
// as fetches leave them.
//   - part: 3,000 loose objects. The clone's pack holds more than twice
//     the rest and stays; the loose objects and small packs are folded.
//   - whole: 6,700 loose objects, git's gc.auto. Everything is folded,
//     the clone's pack too.
//
// ns/op is one fold. It also reports the objects folded, how long looking
// up an object the store lacks takes before and after (go-git asks each
// pack in turn), and how long the check every Close makes takes.
func BenchmarkFold(b *testing.B) {
	bare := benchBare(b)
	ctx := context.Background()
	seedDir := filepath.Join(b.TempDir(), "seed")
	r, err := Open(ctx, Options{URL: fileURL(bare), Branch: "main", Workdir: seedDir})
	if err != nil {
		b.Fatal(err)
	}
	r.closeStorage() // no fold: that is what is timed
	missing := plumbing.NewHash(strings.Repeat("e", 40))
	lookup := func(r *Repo) time.Duration {
		const n = 2000
		start := time.Now()
		for range n {
			if r.storage.HasEncodedObject(missing) == nil {
				b.Fatal("found an object that is not there")
			}
		}
		return time.Since(start) / n
	}
	for _, bc := range []struct {
		name  string
		loose int
	}{{"part", 3000}, {"whole", 6700}} {
		b.Run(bc.name, func(b *testing.B) {
			grown := filepath.Join(b.TempDir(), "grown")
			if out, err := exec.Command("cp", "-a", seedDir, grown).CombinedOutput(); err != nil {
				b.Fatalf("cp: %v: %s", err, out)
			}
			objects := filepath.Join(grown, ".git", "objects")
			rng := rand.New(rand.NewPCG(1, 2))
			blob := func() (plumbing.Hash, []byte) {
				content := make([]byte, 600)
				for i := range content {
					content[i] = byte('a' + rng.IntN(26))
				}
				return plumbing.ComputeHash(plumbing.BlobObject, content), content
			}
			lw := looseWriter{dir: objects}
			for range bc.loose {
				h, content := blob()
				if err := lw.write(plumbing.BlobObject, h, content); err != nil {
					b.Fatal(err)
				}
			}
			for range 19 {
				w, err := newPackWriter(filepath.Join(objects, "pack"))
				if err != nil {
					b.Fatal(err)
				}
				for range 20 {
					h, content := blob()
					if err := w.add(plumbing.BlobObject, h, content); err != nil {
						b.Fatal(err)
					}
				}
				if _, err := w.finish(); err != nil {
					b.Fatal(err)
				}
			}
			var before, after, due time.Duration
			var folded, kBBefore, kBAfter int
			b.ResetTimer()
			for range b.N {
				b.StopTimer()
				work := filepath.Join(b.TempDir(), "work")
				if out, err := exec.Command("cp", "-a", grown, work).CombinedOutput(); err != nil {
					b.Fatalf("cp: %v: %s", err, out)
				}
				r, err := Open(ctx, Options{URL: fileURL(bare), Branch: "main", Workdir: work})
				if err != nil {
					b.Fatal(err)
				}
				before += lookup(r)
				kBBefore = diskKB(b, objects)
				start := time.Now()
				for range 100 {
					if !r.housekeepingDue() {
						b.Fatal("housekeeping is not due")
					}
				}
				due += time.Since(start) / 100
				b.StartTimer()
				res, err := r.fold()
				b.StopTimer()
				if err != nil || res.kept != 0 {
					b.Fatalf("fold = %+v, %v", res, err)
				}
				folded = res.objects
				r.openStorage()
				after += lookup(r)
				r.closeStorage()
				kBAfter = diskKB(b, filepath.Join(work, ".git", "objects"))
			}
			n := time.Duration(b.N)
			b.ReportMetric(float64(folded), "objects-folded")
			b.ReportMetric(float64((before / n).Nanoseconds()), "lookup-before-ns")
			b.ReportMetric(float64((after / n).Nanoseconds()), "lookup-after-ns")
			b.ReportMetric(float64((due / n).Nanoseconds()), "check-ns")
			b.ReportMetric(float64(kBBefore), "store-kB-before")
			b.ReportMetric(float64(kBAfter), "store-kB-after")
		})
	}
}

// diskKB returns the disk space the files under dir take, in kB, as du
// counts it.
func diskKB(b *testing.B, dir string) int {
	out, err := exec.Command("du", "-sk", dir).Output()
	if err != nil {
		b.Fatalf("du: %v", err)
	}
	kB, err := strconv.Atoi(strings.Fields(string(out))[0])
	if err != nil {
		b.Fatalf("du: %q: %v", out, err)
	}
	return kB
}

// BenchmarkTreeDiff diffs a 50,000-file tree (internal/testkit/treegen,
// packed by git repack with deltas, as a clone holds it) against a
// commit 1,000 commits of 10 files later (stored as git fast-import packs
// them, with deltas, as a fetch would), and reads the blobs of the files
// that changed: through go-git's store, as gitwriter did before the pack
// reader, and through the pack reader, one after the other in each
// iteration, each on a store opened afresh. It reports the medians and
// their ratios.
func BenchmarkTreeDiff(b *testing.B) {
	work := treegenRepo(b, filepath.Join(b.TempDir(), "work"))
	testgit.Git(b, work, "repack", "-a", "-d", "-q")
	testgit.Git(b, work, "prune-packed")
	from := testgit.Git(b, work, "rev-parse", "main")
	paths := strings.Fields(testgit.Git(b, work, "ls-files"))
	rng := rand.New(rand.NewPCG(13, 1000))
	var stream strings.Builder
	for c := range 1000 {
		fmt.Fprintf(&stream, "commit refs/heads/main\ncommitter o <o@example.invalid> %d +0000\ndata 6\nchange\n", 1700000000+c)
		if c == 0 {
			fmt.Fprintf(&stream, "from %s\n", from)
		}
		for i := range 10 {
			p := paths[rng.IntN(len(paths))]
			if i%5 == 4 {
				p = fmt.Sprintf("added/c%04d/%d-%s", c, i, filepath.Base(p))
			}
			content := fmt.Sprintf("%s\n# change %d\n", strings.Repeat("kind: ConfigMap\n", 20), c)
			fmt.Fprintf(&stream, "M 100644 inline %s\ndata %d\n%s\n", p, len(content), content)
		}
	}
	cmd := exec.Command("git", "fast-import", "--quiet")
	cmd.Dir = work
	cmd.Stdin = strings.NewReader(stream.String())
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("git fast-import: %v: %s", err, out)
	}
	to := plumbing.NewHash(testgit.Git(b, work, "rev-parse", "main"))
	gitDir := filepath.Join(work, ".git")
	open := func() (*Repo, func()) {
		st := filesystem.NewStorageWithOptions(osfs.New(gitDir), cache.NewObjectLRU(objectCacheSize), filesystem.Options{KeepDescriptors: true})
		repo, err := git.Open(st, nil)
		if err != nil {
			b.Fatal(err)
		}
		return &Repo{repo: repo, objects: filepath.Join(gitDir, "objects"), log: slog.New(slog.DiscardHandler)}, func() { st.Close() }
	}
	var diffOld, diffNew, blobsOld, blobsNew []float64
	changes := 0
	for b.Loop() {
		r, done := open()
		start := time.Now()
		old, err := goGitDiff(r, plumbing.NewHash(from), to)
		if err != nil {
			b.Fatal(err)
		}
		diffOld = append(diffOld, msSince(start))
		start = time.Now()
		for _, c := range old {
			if !c.to.Hash.IsZero() {
				if _, err := r.entryContent(nil, c.path, c.to); err != nil {
					b.Fatal(err)
				}
			}
		}
		blobsOld = append(blobsOld, msSince(start))
		done()

		r, done = open()
		start = time.Now()
		ps, err := r.openPacks()
		if err != nil {
			b.Fatal(err)
		}
		now, err := r.diffTreesPacked(ps, plumbing.NewHash(from), to)
		if err != nil {
			b.Fatal(err)
		}
		diffNew = append(diffNew, msSince(start))
		start = time.Now()
		for _, c := range now {
			if !c.to.Hash.IsZero() {
				if _, err := r.entryContent(ps, c.path, c.to); err != nil {
					b.Fatal(err)
				}
			}
		}
		ps.Close()
		blobsNew = append(blobsNew, msSince(start))
		done()
		if len(old) != len(now) {
			b.Fatalf("go-git lists %d changes, the pack reader %d", len(old), len(now))
		}
		changes = len(now)
	}
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(float64(changes), "changes")
	b.ReportMetric(benchMedian(diffOld), "diff-go-git-ms")
	b.ReportMetric(benchMedian(diffNew), "diff-packs-ms")
	b.ReportMetric(benchMedian(diffNew)/benchMedian(diffOld), "diff-packs/go-git")
	b.ReportMetric(benchMedian(blobsOld), "blobs-go-git-ms")
	b.ReportMetric(benchMedian(blobsNew), "blobs-packs-ms")
	b.ReportMetric(benchMedian(blobsNew)/benchMedian(blobsOld), "blobs-packs/go-git")
}

func msSince(t time.Time) float64 { return float64(time.Since(t).Microseconds()) / 1000 }

// benchMedian is the median of xs.
func benchMedian(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}

// BenchmarkReset times the hard reset of a reused working copy of a
// 50,000-file treegen tree where 50 files were changed, 50 deleted and
// 50 untracked ones added (what a person, or a crash, may leave): the
// reset (read-tree --reset -u and clean -fdx, as reset does it) against
// go-git's hard reset and the same clean, as reset did it before, taking
// turns on the same working copy. ns/op is unused.
func BenchmarkReset(b *testing.B) {
	dir := b.TempDir()
	src := treegenRepo(b, filepath.Join(dir, "src"))
	r, err := Open(b.Context(), Options{URL: fileURL(src), Branch: "main", Workdir: filepath.Join(dir, "work")})
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	paths := strings.Fields(testgit.Git(b, src, "ls-files"))
	rng := rand.New(rand.NewPCG(13, 1))
	damage := func() {
		for i := range 150 {
			p := filepath.Join(r.dir, filepath.FromSlash(paths[rng.IntN(len(paths))]))
			switch i % 3 {
			case 0:
				_ = os.WriteFile(p, []byte("changed\n"), 0o644)
			case 1:
				_ = os.Remove(p)
			default:
				_ = os.WriteFile(p+".stray", []byte("untracked\n"), 0o644)
			}
		}
		_ = exec.Command("sync").Run()
	}
	goGit := func() error {
		wt, err := r.repo.Worktree()
		if err != nil {
			return err
		}
		if err := wt.Reset(&git.ResetOptions{Commit: r.head, Mode: git.HardReset}); err != nil {
			return err
		}
		idx, err := r.repo.Storer.Index()
		if err != nil {
			return err
		}
		return cleanUntracked(r.dir, idx)
	}
	var ours, theirs []float64
	for b.Loop() {
		for turn := range 2 {
			damage()
			start := time.Now()
			if turn == 0 {
				err = r.reset()
			} else {
				err = goGit()
			}
			if err != nil {
				b.Fatal(err)
			}
			if turn == 0 {
				ours = append(ours, msSince(start))
			} else {
				theirs = append(theirs, msSince(start))
			}
			if got := testgit.Git(b, r.dir, "status", "--porcelain", "--untracked-files=all"); got != "" {
				b.Fatalf("git status after a reset = %q", got)
			}
		}
	}
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(benchMedian(ours), "reset-ms")
	b.ReportMetric(benchMedian(theirs), "go-git-reset-ms")
	b.ReportMetric(benchMedian(ours)/benchMedian(theirs), "reset/go-git")
}

// treegenRepo generates a 50,000-file treegen tree in dir, commits it on
// main in a repository there, and returns dir.
func treegenRepo(b *testing.B, dir string) string {
	b.Helper()
	testgit.RequireProgram(b, "git", "git")
	if _, err := treegen.Generate(dir, treegen.Options{Files: 50000, Seed: 1}); err != nil {
		b.Fatal(err)
	}
	testgit.Git(b, dir, "init", "-q", "--initial-branch=main")
	testgit.Git(b, dir, "add", "-A")
	testgit.Git(b, dir, "-c", "user.name=b", "-c", "user.email=b@example.invalid", "commit", "-q", "-m", "fleet")
	return dir
}

// goGitDiff lists the files that differ between two commits' trees as
// go-git's DiffTree does, for BenchmarkTreeDiff to compare with.
func goGitDiff(r *Repo, from, to plumbing.Hash) ([]treeChange, error) {
	fromTree, err := r.commitTree(from)
	if err != nil {
		return nil, err
	}
	toTree, err := r.commitTree(to)
	if err != nil {
		return nil, err
	}
	changes, err := object.DiffTree(fromTree, toTree)
	if err != nil {
		return nil, err
	}
	out := make([]treeChange, 0, len(changes))
	for _, c := range changes {
		tc := treeChange{path: c.To.Name, from: c.From.TreeEntry, to: c.To.TreeEntry}
		if tc.path == "" {
			tc.path = c.From.Name
		}
		out = append(out, tc)
	}
	return out, nil
}

// BenchmarkFetchChange times Open on a reused working copy of a copy of
// the benchmark repository (10,000 files) after a one-line commit was
// pushed to it by someone else, over smart HTTP, with 12 MB of random
// blobs beside the files: thin is imagebump's fetch, whole go-git's own.
// ns/op is one Open; store-bytes/op is what the fetch added to the
// working copy's object store.
func BenchmarkFetchChange(b *testing.B) {
	bare := filepath.Join(b.TempDir(), "copy.git")
	testgit.Git(b, filepath.Dir(bare), "clone", "--quiet", "--bare", benchBare(b), bare)
	blobs := map[string]string{}
	for _, name := range []string{"blobs/a", "blobs/b", "blobs/c"} {
		blobs[name] = string(randomBytes(b, 4<<20))
	}
	testgit.Commit(b, bare, "main", blobs, nil, "blobs")
	s := testgit.StartHTTP(b, bare, false)
	ctx := context.Background()
	change := 0
	for _, mode := range []string{"thin", "whole"} {
		b.Run(mode, func(b *testing.B) {
			defer func(was bool) { fetchThinPacks = was }(fetchThinPacks)
			fetchThinPacks = mode == "thin"
			workdir := filepath.Join(b.TempDir(), "w")
			open := func() {
				r, err := Open(ctx, Options{URL: s.URL, Branch: "main", Workdir: workdir})
				if err != nil {
					b.Fatal(err)
				}
				if err := r.Close(); err != nil {
					b.Fatal(err)
				}
			}
			open()
			var grew int64
			b.ResetTimer()
			for range b.N {
				b.StopTimer()
				change++
				testgit.Commit(b, bare, "main", map[string]string{"apps/dir001/app00001.yaml": fmt.Sprintf("image: ghcr.io/acme/app-00001:2.0.%d\n", change)}, nil, "bump")
				before := dirBytes(b, filepath.Join(workdir, ".git", "objects"))
				b.StartTimer()
				open()
				b.StopTimer()
				grew += dirBytes(b, filepath.Join(workdir, ".git", "objects")) - before
				b.StartTimer()
			}
			b.ReportMetric(float64(grew)/float64(b.N), "store-bytes/op")
		})
	}
}
