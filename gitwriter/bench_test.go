package gitwriter

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/imagebump/imagebump/internal/testkit/testgit"
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
