package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/imagebump/imagebump/config"
	"github.com/imagebump/imagebump/cycle"
	"github.com/imagebump/imagebump/internal/testkit/treegen"
	"github.com/imagebump/imagebump/setters"
)

// The benchmarks in this file hold imagebump to issue 13's targets: on a
// generated repository of 50,000 files, served by git http-backend on
// loopback (the server's work is another process's), with the registry of
// bench_test.go:
//
//   - a cycle with nothing new inside serve (cycle.RunTarget in this
//     process with one registry client for every cycle, as serve's workers
//     call it) at most 0.1x grep -rl over the same tree, and as `imagebump
//     run --workdir` (a process) at most 0.3x;
//   - one policy moving, touching about 20 files, inside serve: at most
//     0.3x grep (the commit and push included);
//   - after 1,000 commits of 10 files each, an incremental cycle against a
//     full rescan (run's --no-cache), both timed;
//   - the memory of the marker index for the 50,000 files;
//   - a first run (clone, scan, about 4,000 files bumped, commit, push)
//     against apply on the same tree: at most 5x, and under 200 MB.
//
// Run them with
//
//	go test -run '^$' -bench 'Steady|PolicyMove|History|IndexMemory|FirstRun' -benchtime 1x -timeout 2h ./cmd/imagebump
//
// Ratios are of medians measured in one run, interleaved with grep; the
// targets are reported, not asserted: the machine is shared and noisy.

// bigFiles is the size of the tree of issue 13.
const bigFiles = 50000

// Targets from issue 13.
const (
	steadyServeTarget = 0.1
	steadyRunTarget   = 0.3
	moveTarget        = 0.3
	firstRunTarget    = 5.0
	firstRunMaxRSS    = 200 << 20
)

// bigFixture is the 50,000-file repository, built once.
type bigFixture struct {
	tree    string // the generated tree, never written (grep's and apply's source)
	stats   treegen.Stats
	bare    string
	url     string
	config  string
	cfg     *config.Config
	initial string              // the generated tree's commit
	bumped  string              // its bumps, made by the first cycle
	serve   string              // a serve working copy folder (cycle.TargetOptions.Workdir) at bumped
	last    *cycle.TargetResult // the last cycle in serve, for the next one
	run     string              // a run working copy folder at bumped
	reg     cycle.Registry
	srv     *httptest.Server
	// serverNS adds up the time git http-backend took to answer, request
	// by request (a cycle's requests to it do not overlap).
	serverNS atomic.Int64
	pushNS   atomic.Int64 // the same, of the push's requests alone
}

var (
	bigOnce sync.Once
	big     *bigFixture
	bigErr  error
)

// getBig builds the 50,000-file fixture on first use.
func getBig(b *testing.B) (*fixture, *bigFixture) {
	b.Helper()
	f := getFixture(b)
	if _, err := exec.LookPath("git"); err != nil {
		b.Fatalf("git is not installed: %v", err)
	}
	bigOnce.Do(func() { big, bigErr = newBig(f) })
	if bigErr != nil {
		b.Fatal(bigErr)
	}
	return f, big
}

func newBig(f *fixture) (*bigFixture, error) {
	start := time.Now()
	g := &bigFixture{tree: filepath.Join(f.dir, "tree-50k"), bare: filepath.Join(f.dir, "git", "fleet.git")}
	opts := treegen.Options{Files: bigFiles, RegistryHost: f.host, Seed: 1}
	var err error
	if g.stats, err = treegen.Generate(g.tree, opts); err != nil {
		return nil, err
	}
	gitEnv := append(os.Environ(), "GIT_AUTHOR_NAME=bench", "GIT_AUTHOR_EMAIL=bench@example.invalid",
		"GIT_COMMITTER_NAME=bench", "GIT_COMMITTER_EMAIL=bench@example.invalid", "GIT_CONFIG_GLOBAL=/dev/null",
		// No automatic gc in the background: the explicit one below would
		// find it running.
		"GIT_CONFIG_COUNT=1", "GIT_CONFIG_KEY_0=gc.auto", "GIT_CONFIG_VALUE_0=0")
	gitCmd := func(args ...string) (string, error) {
		cmd := exec.Command("git", args...)
		cmd.Env = gitEnv
		out, err := cmd.CombinedOutput()
		if err != nil {
			return "", fmt.Errorf("git %s: %v: %s", strings.Join(args, " "), err, out)
		}
		return strings.TrimSpace(string(out)), nil
	}
	gd := "--git-dir=" + g.bare
	for _, args := range [][]string{
		{"init", "--quiet", "--bare", "--initial-branch=main", g.bare},
		{gd, "--work-tree=" + g.tree, "add", "--all"},
		{gd, "--work-tree=" + g.tree, "commit", "--quiet", "-m", "fleet"},
		{gd, "gc", "--quiet"},
		{gd, "config", "http.receivepack", "true"},
	} {
		if _, err := gitCmd(args...); err != nil {
			return nil, err
		}
	}
	if g.initial, err = gitCmd(gd, "rev-parse", "refs/heads/main"); err != nil {
		return nil, err
	}
	backend := &cgi.Handler{
		Path: mustLook("git"), Args: []string{"http-backend"}, Dir: filepath.Dir(g.bare),
		Env: []string{"GIT_PROJECT_ROOT=" + filepath.Dir(g.bare), "GIT_HTTP_EXPORT_ALL=1", "REMOTE_USER=bench"},
	}
	g.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		backend.ServeHTTP(w, r)
		took := int64(time.Since(start))
		g.serverNS.Add(took)
		if strings.Contains(r.URL.String(), "receive-pack") {
			g.pushNS.Add(took)
		}
	}))
	g.url = g.srv.URL + "/fleet.git"
	g.config = filepath.Join(f.dir, "imagebump-50k.yaml")
	text := string(treegen.Config(opts)) + fmt.Sprintf("git:\n  url: %s\n  branch: main\ncommit:\n  author: {name: bench, email: bench@example.invalid}\n", g.url)
	if err := os.WriteFile(g.config, []byte(text), 0o644); err != nil {
		return nil, err
	}
	if g.cfg, err = config.Parse([]byte(text), g.config); err != nil {
		return nil, err
	}
	client, err := cycle.NewRegistry(g.cfg, nil)
	if err != nil {
		return nil, err
	}
	g.reg = client

	// The serve working copy makes the bumps; the run one clones them.
	g.serve = filepath.Join(f.dir, "serve-work")
	res, err := g.cycle(context.Background(), g.serve, false)
	if err != nil {
		return nil, fmt.Errorf("first cycle: %w", err)
	}
	if !res.Pushed || len(res.Report.Changes) != g.stats.Changes {
		return nil, fmt.Errorf("first cycle: pushed %v, %d changes, want %d", res.Pushed, len(res.Report.Changes), g.stats.Changes)
	}
	g.bumped = res.Commit
	g.run = filepath.Join(f.dir, "run-work")
	if _, _, err := g.runProcess(g.run); err != nil {
		return nil, err
	}
	fmt.Fprintf(os.Stderr, "bench fixture: %d-file repository at %s, bumped, in %s\n", bigFiles, g.url, time.Since(start).Round(time.Millisecond))
	return g, nil
}

func mustLook(prog string) string {
	p, err := exec.LookPath(prog)
	if err != nil {
		panic(err)
	}
	return p
}

// cycle runs one cycle of the target in this process, as serve does.
// With IMAGEBUMP_BENCH_LOG set, the cycles log at debug level to stderr,
// with times, to see where a cycle's time goes.
func (g *bigFixture) cycle(ctx context.Context, workdir string, noCache bool) (*cycle.TargetResult, error) {
	var logger *slog.Logger
	if os.Getenv("IMAGEBUMP_BENCH_LOG") != "" {
		logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug, ReplaceAttr: microseconds}))
		logger.Debug("cycle starting", "workdir", filepath.Base(workdir))
	}
	// serve's worker gives each cycle the target's last one, after a
	// success; so do the cycles in serve's working copy.
	var prev *cycle.TargetResult
	if workdir == g.serve {
		prev = g.last
	}
	res, err := cycle.RunTarget(ctx, cycle.TargetOptions{
		Config: g.cfg, Target: g.cfg.Targets()[0], Registry: g.reg, Workdir: workdir, NoCache: noCache, Logger: logger, Previous: prev,
	})
	if workdir == g.serve {
		g.last = nil
		if err == nil {
			g.last = res
		}
	}
	return res, err
}

// microseconds shows a log record's time to the microsecond.
func microseconds(_ []string, a slog.Attr) slog.Attr {
	if a.Key == slog.TimeKey {
		return slog.String(slog.TimeKey, a.Value.Time().Format("15:04:05.000000"))
	}
	return a
}

// runProcess times `imagebump run --workdir workdir -o json` and returns
// its stderr (the log).
func (g *bigFixture) runProcess(workdir string, extra ...string) (time.Duration, string, error) {
	var stderr bytes.Buffer
	cmd := exec.Command(fix.bin, append([]string{"run", "-c", g.config, "--workdir", workdir, "-o", "json"}, extra...)...)
	cmd.Stderr = &stderr
	start := time.Now()
	err := cmd.Run()
	elapsed := time.Since(start)
	var exit *exec.ExitError
	if err != nil && (!errors.As(err, &exit) || exit.ExitCode() > 1) {
		return elapsed, stderr.String(), fmt.Errorf("imagebump run: %w: %s", err, stderr.Bytes())
	}
	return elapsed, stderr.String(), nil
}

// grep times grep -rl over the generated tree.
func (g *bigFixture) grep(b *testing.B) time.Duration {
	b.Helper()
	r, err := timeCommand(filepath.Join(b.TempDir(), "grep.out"), fix.grep, "-rl", `"$imagepolicy"`, g.tree)
	if err != nil {
		b.Fatal(err)
	}
	return r.elapsed
}

// setMain points the remote's main at commit.
func (g *bigFixture) setMain(b *testing.B, commit string) {
	b.Helper()
	if out, err := exec.Command("git", "--git-dir="+g.bare, "update-ref", "refs/heads/main", commit).CombinedOutput(); err != nil {
		b.Fatalf("git update-ref: %v: %s", err, out)
	}
}

// BenchmarkSteadyCycle times a cycle with nothing new on the 50,000-file
// repository, inside serve and as a run process, against grep.
func BenchmarkSteadyCycle(b *testing.B) {
	_, g := getBig(b)
	g.setMain(b, g.bumped)
	ctx := b.Context()
	// Warm both working copies once.
	if _, err := g.cycle(ctx, g.serve, false); err != nil {
		b.Fatal(err)
	}
	if _, _, err := g.runProcess(g.run); err != nil {
		b.Fatal(err)
	}
	g.grep(b)
	var grepMS, serveMS, serverMS, runMS []float64
	read := 0
	// Only the cycles in serve run in this process: a profile of the loop
	// is theirs.
	defer profile(b)()
	for b.Loop() {
		for range *reps {
			grepMS = append(grepMS, ms(g.grep(b)))
			g.serverNS.Store(0)
			start := time.Now()
			res, err := g.cycle(ctx, g.serve, false)
			if err != nil {
				b.Fatal(err)
			}
			serveMS = append(serveMS, ms(time.Since(start)))
			serverMS = append(serverMS, ms(time.Duration(g.serverNS.Load())))
			if res.Pushed || len(res.Report.Changes) != 0 {
				b.Fatalf("a cycle with nothing new pushed %v, %d changes", res.Pushed, len(res.Report.Changes))
			}
			read += res.Report.FilesRead
			d, _, err := g.runProcess(g.run)
			if err != nil {
				b.Fatal(err)
			}
			runMS = append(runMS, ms(d))
		}
	}
	gm, sm, rm := median(grepMS), median(serveMS), median(runMS)
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(gm, "grep-ms")
	b.ReportMetric(sm, "serve-ms")
	b.ReportMetric(rm, "run-ms")
	b.ReportMetric(sm/gm, "serve/grep")
	b.ReportMetric(rm/gm, "run/grep")
	// The git server's answer to the fetch's one request (is the branch
	// where it was?): the cycle waits for it, while the tag listings run
	// beside it.
	b.ReportMetric(median(serverMS), "git-server-ms")
	b.ReportMetric(median(serverMS)/gm, "git-server/grep")
	b.ReportMetric(float64(read), "files-read")
	missed(b, "a steady cycle in serve", sm/gm, steadyServeTarget)
	missed(b, "a steady run", rm/gm, steadyRunTarget)
}

// missed logs a ratio over its target.
func missed(b *testing.B, what string, ratio, target float64) {
	if ratio > target {
		b.Logf("TARGET MISSED: %s takes %.3fx grep, target %.2fx", what, ratio, target)
	}
}

// BenchmarkPolicyMove times, inside serve, the cycle after one policy's
// repository got a new tag: it bumps the files that policy's markers are
// in (about 20), commits and pushes.
// moveTags numbers the tags BenchmarkPolicyMove pushes, across its runs.
var moveTags atomic.Int64

func BenchmarkPolicyMove(b *testing.B) {
	f, g := getBig(b)
	g.setMain(b, g.bumped)
	ctx := b.Context()
	if _, err := g.cycle(ctx, g.serve, false); err != nil {
		b.Fatal(err)
	}
	repo, files := g.policyWithFiles(b, 20)
	pusher, err := remote.NewPusher(remote.WithContext(ctx))
	if err != nil {
		b.Fatal(err)
	}
	img := benchImage(b)
	minor := strings.Split(repo.Latest, ".")[1]
	var grepMS, moveMS, serverMS, pushMS []float64
	var changed, read []float64
	// -inprocess.cpuprofile: the cycles, and the pushes of their new tags.
	defer profile(b)()
	for b.Loop() {
		for range *reps {
			b.StopTimer()
			// A tag newer than every one pushed before, in this run of
			// the benchmark or an earlier one of the process (-count).
			tag := fmt.Sprintf("1.%s.%d", minor, 100+moveTags.Add(1))
			if err := pushTags(ctx, pusher, f.host, treegen.Repository{Path: repo.Path, Tags: []string{tag}}, img); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
			grepMS = append(grepMS, ms(g.grep(b)))
			g.serverNS.Store(0)
			g.pushNS.Store(0)
			start := time.Now()
			res, err := g.cycle(ctx, g.serve, false)
			if err != nil {
				b.Fatal(err)
			}
			moveMS = append(moveMS, ms(time.Since(start)))
			serverMS = append(serverMS, ms(time.Duration(g.serverNS.Load())))
			pushMS = append(pushMS, ms(time.Duration(g.pushNS.Load())))
			if !res.Pushed || len(res.Report.FilesChanged) != files {
				b.Fatalf("the cycle after a new tag of %s pushed %v and changed %d files, want %d", repo.Path, res.Pushed, len(res.Report.FilesChanged), files)
			}
			changed = append(changed, float64(len(res.Report.FilesChanged)))
			read = append(read, float64(res.Report.FilesRead))
		}
	}
	// The bumps stay; later benchmarks start from them.
	g.bumped = g.head(b)
	gm, mm := median(grepMS), median(moveMS)
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(gm, "grep-ms")
	b.ReportMetric(mm, "move-ms")
	b.ReportMetric(mm/gm, "move/grep")
	// The git server's share: what is left of the target for the rest.
	// Its answers to the push come on top of a cycle with nothing new
	// (BenchmarkSteadyCycle), which holds the fetch's.
	b.ReportMetric(median(serverMS), "git-server-ms")
	b.ReportMetric(median(serverMS)/gm, "git-server/grep")
	b.ReportMetric(median(pushMS)/gm, "push-server/grep")
	b.ReportMetric(median(changed), "files-changed")
	b.ReportMetric(median(read), "files-read")
	missed(b, "a cycle moving one policy", mm/gm, moveTarget)
}

// head returns where the remote's main points.
func (g *bigFixture) head(b *testing.B) string {
	b.Helper()
	out, err := exec.Command("git", "--git-dir="+g.bare, "rev-parse", "refs/heads/main").Output()
	if err != nil {
		b.Fatal(err)
	}
	return strings.TrimSpace(string(out))
}

// policyWithFiles returns the repository of a policy whose markers are in
// about want files (treegen spreads markers round robin over the
// policies), and that number.
func (g *bigFixture) policyWithFiles(b *testing.B, want int) (treegen.Repository, int) {
	b.Helper()
	res, err := setters.Apply(b.Context(), setters.Options{Root: g.tree, Known: func(string) bool { return true }})
	if err != nil {
		b.Fatal(err)
	}
	files := map[string]map[string]bool{}
	for _, m := range res.Markers {
		if files[m.Policy] == nil {
			files[m.Policy] = map[string]bool{}
		}
		files[m.Policy][m.File] = true
	}
	repos := treegen.Repositories(treegen.Options{RegistryHost: fix.host})
	best, bestN := -1, 0
	for i, r := range repos {
		// The policy of repository fleet/app-NNN is team-MM:app-NNN.
		name := fmt.Sprintf("team-%02d:%s", i%20, filepath.Base(r.Path))
		n := len(files[name])
		if r.Digest {
			continue
		}
		if best < 0 || abs(n-want) < abs(bestN-want) {
			best, bestN = i, n
		}
	}
	return repos[best], bestN
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// benchImage is the image every benchmark tag points at.
func benchImage(b *testing.B) v1Image {
	b.Helper()
	img, err := benchImageOnce()
	if err != nil {
		b.Fatal(err)
	}
	return img
}

// BenchmarkHistory makes 1,000 commits of 10 files each (edits, new
// files, deletions, moves; markers kept current, so nothing is bumped),
// then times a cycle with the marker index against one with --no-cache
// (a full rescan, as before the index) from copies of the same working
// copy.
func BenchmarkHistory(b *testing.B) {
	_, g := getBig(b)
	g.setMain(b, g.bumped)
	ctx := b.Context()
	if _, err := g.cycle(ctx, g.serve, false); err != nil {
		b.Fatal(err)
	}
	top := g.history(b, 1000, 10)
	var incMS, fullMS, incRead, fullRead []float64
	for b.Loop() {
		for range max(1, *reps/2) {
			b.StopTimer()
			g.setMain(b, g.bumped)
			inc, full := copyDir(b, g.serve), copyDir(b, g.serve)
			g.setMain(b, top)
			syncFS()
			b.StartTimer()
			start := time.Now()
			ri, err := g.cycle(ctx, inc, false)
			if err != nil {
				b.Fatal(err)
			}
			incMS = append(incMS, ms(time.Since(start)))
			start = time.Now()
			rf, err := g.cycle(ctx, full, true)
			if err != nil {
				b.Fatal(err)
			}
			fullMS = append(fullMS, ms(time.Since(start)))
			if ri.Pushed || rf.Pushed || len(ri.Report.Markers) != len(rf.Report.Markers) || ri.Report.FilesScanned != rf.Report.FilesScanned {
				b.Fatalf("incremental: pushed %v, %d markers, %d files; full: pushed %v, %d markers, %d files",
					ri.Pushed, len(ri.Report.Markers), ri.Report.FilesScanned, rf.Pushed, len(rf.Report.Markers), rf.Report.FilesScanned)
			}
			incRead = append(incRead, float64(ri.Report.FilesRead))
			fullRead = append(fullRead, float64(rf.Report.FilesRead))
		}
	}
	g.setMain(b, g.bumped)
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(median(incMS), "incremental-ms")
	b.ReportMetric(median(fullMS), "full-ms")
	b.ReportMetric(median(incMS)/median(fullMS), "incremental/full")
	b.ReportMetric(median(incRead), "incremental-files-read")
	b.ReportMetric(median(fullRead), "full-files-read")
}

// history commits n commits of k files each on the bumped head with git
// fast-import, and returns the last. The contents are files of the bumped
// tree, so the markers stay current.
func (g *bigFixture) history(b *testing.B, n, k int) string {
	b.Helper()
	rng := rand.New(rand.NewPCG(13, 1000))
	var paths []string
	err := filepath.WalkDir(filepath.Join(g.serve, "default"), func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == ".git" {
			return filepath.SkipDir
		}
		if d.Type().IsRegular() {
			rel, _ := filepath.Rel(filepath.Join(g.serve, "default"), p)
			paths = append(paths, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	slices.Sort(paths)
	written := map[string][]byte{} // paths the history wrote
	content := func(p string) []byte {
		if d, ok := written[p]; ok {
			return d
		}
		data, err := os.ReadFile(filepath.Join(g.serve, "default", filepath.FromSlash(p)))
		if err != nil {
			b.Fatal(err)
		}
		return data
	}
	live := slices.Clone(paths)
	var stream bytes.Buffer
	w := bufio.NewWriter(&stream)
	data := func(d []byte) { fmt.Fprintf(w, "data %d\n", len(d)); w.Write(d); w.WriteString("\n") }
	when := time.Now().Unix() - int64(n)
	for c := range n {
		fmt.Fprintf(w, "commit refs/heads/main\ncommitter other <other@example.invalid> %d +0000\n", when+int64(c))
		data([]byte(fmt.Sprintf("change %d", c)))
		if c == 0 {
			fmt.Fprintf(w, "from %s\n", g.bumped)
		}
		for i := range k {
			at := rng.IntN(len(live))
			p := live[at]
			switch op := i % 10; {
			case op < 6: // edit: a comment line more
				d := append(slices.Clone(content(p)), fmt.Sprintf("\n# edited by change %d\n", c)...)
				fmt.Fprintf(w, "M 100644 inline %s\n", p)
				data(d)
				written[p] = d
			case op < 8: // a new file, a copy of another
				np := fmt.Sprintf("added/c%04d/f%d-%s", c, i, filepath.Base(p))
				fmt.Fprintf(w, "M 100644 inline %s\n", np)
				data(content(p))
				written[np] = content(p)
				live = append(live, np)
			case op == 8: // deleted
				fmt.Fprintf(w, "D %s\n", p)
				live = slices.Delete(live, at, at+1)
			default: // moved
				np := "moved/" + strconv.Itoa(c) + "/" + p
				fmt.Fprintf(w, "D %s\nM 100644 inline %s\n", p, np)
				data(content(p))
				written[np] = content(p)
				live[at] = np
			}
		}
		w.WriteString("\n")
	}
	w.Flush()
	cmd := exec.Command("git", "--git-dir="+g.bare, "fast-import", "--quiet", "--force")
	cmd.Stdin = &stream
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("git fast-import: %v: %s", err, out)
	}
	return g.head(b)
}

// copyDir copies a folder with cp -a into a new temporary one, placed
// apart from the last (see fixture.freshCopy).
func copyDir(b *testing.B, dir string) string {
	b.Helper()
	to := filepath.Join(spreadTempDir(b), "copy")
	copyTree(b, dir, to)
	return to
}

// spreadTempDir returns a new temporary folder whose subfolders the file
// system places apart (see spreadSubfolders).
func spreadTempDir(b *testing.B) string {
	b.Helper()
	dir := b.TempDir()
	spreadSubfolders(dir)
	return dir
}

// indexLoadEnv makes the test binary load the marker index at the path it
// names, print its own peak RSS and exit (see BenchmarkIndexMemory). The
// value "-" prints the peak without loading anything.
const indexLoadEnv = "IMAGEBUMP_BENCH_LOAD_INDEX"

// loadIndexChild is the child's main.
func loadIndexChild(spec string) {
	if spec != "-" {
		kind, path, _ := strings.Cut(spec, ":")
		k := setters.ByBlob
		if kind == "stat" {
			k = setters.ByStat
		}
		ix, why := setters.LoadIndex(path, k, setters.Options{})
		if why != "" {
			fmt.Fprintln(os.Stderr, why)
			os.Exit(2)
		}
		runtime.KeepAlive(ix)
	}
	hwm, err := highWaterMark()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	fmt.Println(hwm)
	os.Exit(0)
}

// BenchmarkIndexMemory measures the marker index of the 50,000-file tree
// (4,731 files with the token, 8,662 markers): of a Git working copy (a
// blob-keyed index holds the files with markers) and of a plain folder (a
// stat-keyed index holds every YAML file). Peak RSS is that of a process
// that loads it, less that of one that does not; heap is what stays
// allocated once it is loaded.
func BenchmarkIndexMemory(b *testing.B) {
	_, g := getBig(b)
	blobFile := cycle.IndexFile(filepath.Join(g.serve, "default"))
	statFile := filepath.Join(b.TempDir(), "stat-index")
	ix := setters.NewIndex(setters.ByStat, setters.Options{})
	if _, err := setters.Apply(b.Context(), setters.Options{Root: g.tree, Index: ix, Known: func(string) bool { return true }}); err != nil {
		b.Fatal(err)
	}
	if err := ix.Save(statFile); err != nil {
		b.Fatal(err)
	}
	self, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	peak := func(spec string) int64 {
		cmd := exec.Command(self, "-test.run=^$")
		cmd.Env = append(os.Environ(), indexLoadEnv+"="+spec, "GOGC=100")
		out, err := cmd.Output()
		if err != nil {
			b.Fatalf("loading %s: %v", spec, err)
		}
		n, err := strconv.ParseInt(strings.TrimSpace(string(out)), 10, 64)
		if err != nil {
			b.Fatal(err)
		}
		return n
	}
	heap := func(kind setters.IndexKind, path string) (retained, allocated uint64) {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		ix, why := setters.LoadIndex(path, kind, setters.Options{})
		if why != "" {
			b.Fatal(why)
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		runtime.KeepAlive(ix)
		return after.HeapAlloc - before.HeapAlloc, after.TotalAlloc - before.TotalAlloc
	}
	var base, blobPeak, statPeak int64
	var blobHeap, blobAlloc, statHeap, statAlloc uint64
	for b.Loop() {
		base = peak("-")
		blobPeak = peak("blob:" + blobFile)
		statPeak = peak("stat:" + statFile)
		blobHeap, blobAlloc = heap(setters.ByBlob, blobFile)
		statHeap, statAlloc = heap(setters.ByStat, statFile)
	}
	size := func(p string) float64 {
		fi, err := os.Stat(p)
		if err != nil {
			b.Fatal(err)
		}
		return float64(fi.Size()) / (1 << 20)
	}
	const mb = 1 << 20
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(size(blobFile), "blob-file-MB")
	b.ReportMetric(float64(blobHeap)/mb, "blob-heap-MB")
	b.ReportMetric(float64(blobAlloc)/mb, "blob-alloc-MB")
	b.ReportMetric(float64(blobPeak-base)/mb, "blob-peak-rss-MB")
	b.ReportMetric(size(statFile), "stat-file-MB")
	b.ReportMetric(float64(statHeap)/mb, "stat-heap-MB")
	b.ReportMetric(float64(statAlloc)/mb, "stat-alloc-MB")
	b.ReportMetric(float64(statPeak-base)/mb, "stat-peak-rss-MB")
}

// cloneLine finds the duration of the clone in run's log.
var cloneLine = regexp.MustCompile(`msg=cloned .*\bduration=([0-9.a-zµ]+)`)

// BenchmarkFirstRun times `imagebump run` on a new working copy of the
// 50,000-file repository at its generated (unbumped) commit: clone, scan,
// about 4,000 files bumped, commit and push; and `imagebump apply
// --no-cache` on a copy of the same tree. Peak RSS is run's.
func BenchmarkFirstRun(b *testing.B) {
	_, g := getBig(b)
	var runMS, cloneMS, applyMS []float64
	var rss, floor int64
	for b.Loop() {
		for range max(1, *reps/2) {
			b.StopTimer()
			g.setMain(b, g.initial)
			work := filepath.Join(spreadTempDir(b), "work")
			copyTree := copyDir(b, g.tree)
			syncFS()
			b.StartTimer()
			d, log, err := g.runProcess(work)
			if err != nil {
				b.Fatal(err)
			}
			m := cloneLine.FindStringSubmatch(log)
			if m == nil {
				b.Fatalf("no clone in the log:\n%s", log)
			}
			clone, err := time.ParseDuration(m[1])
			if err != nil {
				b.Fatal(err)
			}
			runMS = append(runMS, ms(d))
			cloneMS = append(cloneMS, ms(clone))
			a, err := timeCommand(filepath.Join(b.TempDir(), "apply.json"), fix.bin, "apply", "--repo", copyTree, "-c", g.config, "-o", "json", "--no-cache")
			if err != nil {
				b.Fatal(err)
			}
			applyMS = append(applyMS, ms(a.elapsed))
		}
		b.StopTimer()
		g.setMain(b, g.initial)
		rss, floor, _ = peakRSS(fix.bin, "run", "-c", g.config, "--workdir", filepath.Join(b.TempDir(), "work"), "-o", "json")
		b.StartTimer()
	}
	g.setMain(b, g.bumped)
	rm, cm, am := median(runMS), median(cloneMS), median(applyMS)
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(rm, "run-ms")
	b.ReportMetric(cm, "clone-ms")
	b.ReportMetric(rm-cm, "after-clone-ms")
	b.ReportMetric(am, "apply-ms")
	b.ReportMetric((rm-cm)/am, "after-clone/apply")
	b.ReportMetric(rm/am, "run/apply")
	b.ReportMetric(float64(rss)/(1<<20), "maxrss-MB")
	if rss <= floor {
		b.Logf("the peak RSS of run is no more than its launcher's, %.1f MB: the figure is an upper bound", float64(floor)/(1<<20))
	}
	missed(b, "a first run after the clone", (rm-cm)/am, firstRunTarget)
	if rss > firstRunMaxRSS {
		b.Logf("TARGET MISSED: a first run peaks at %.0f MB, target %d MB", float64(rss)/(1<<20), firstRunMaxRSS>>20)
	}
}

// syncFS writes dirty pages back, so that a copy's writeback does not land
// in a timed run.
func syncFS() { exec.Command("sync").Run() }

// v1Image is an image to tag.
type v1Image = v1.Image

// benchImageOnce builds the small image every benchmark tag points at.
var benchImageOnce = sync.OnceValues(func() (v1.Image, error) {
	img, err := mutate.AppendLayers(empty.Image, static.NewLayer([]byte("imagebump benchmark layer"), types.DockerLayer))
	if err != nil {
		return nil, err
	}
	return mutate.Config(img, v1.Config{Labels: map[string]string{"org.example.bench": "1"}})
})
