package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	ggcrregistry "github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/imagebump/imagebump/internal/commands"
	"github.com/imagebump/imagebump/internal/testkit/releasebin"
	"github.com/imagebump/imagebump/internal/testkit/treegen"
	"github.com/imagebump/imagebump/report"
)

// The benchmarks in this file hold imagebump to issue 3's targets: over a
// generated tree of 10,000 files, plan in at most 3x and apply in at most 4x
// the time of grep -rl '"$imagepolicy"', measured in the same run, with peak
// memory that does not grow with the tree. Run them with
//
//	go test -run '^$' -bench VsGrep -benchtime 1x -count 5 ./cmd/imagebump
//
// Each benchmark runs grep and the imagebump binary -vsgrep.reps times,
// interleaved, and reports the medians. The targets are reported, not
// asserted: the machine is shared and noisy.

var (
	reps       = flag.Int("vsgrep.reps", 5, "timed runs of grep and of imagebump per benchmark iteration")
	cpuProfile = flag.String("inprocess.cpuprofile", "", "write a CPU profile of the in-process benchmarks' loops, without the fixture's setup, to this file")
	memProfile = flag.String("inprocess.memprofile", "", "write heap profiles before (FILE.base) and after the in-process benchmarks' loops to FILE; go tool pprof -sample_index=alloc_space -base FILE.base gives the loops' allocations")
)

// treeSizes are the trees every benchmark runs over: two sizes, to show
// that memory does not grow with the tree.
var treeSizes = []int{2500, 10000}

// Targets from issue 3: imagebump's time over grep's.
const (
	planTarget  = 3.0
	applyTarget = 4.0
)

// target returns the target ratio for a tree of n files: issue 3 sets
// them for the default tree of treegen.DefaultFiles files only.
func target(n int, ratio float64) float64 {
	if n != treegen.DefaultFiles {
		return 0
	}
	return ratio
}

// fixture is what the benchmarks share, built once per process: the
// imagebump binary, a registry serving every policy's tags, and the trees.
type fixture struct {
	dir  string // holds everything below; removed by TestMain
	bin  string
	grep string
	host string
	// stopRegistry ends the registry's process.
	stopRegistry func()
	trees        map[int]*tree
	cache        string // XDG_CACHE_HOME of every process the benchmarks start
	copies       string // where freshCopy makes its copies
}

// coldCache removes the marker indexes plan and apply kept, so that the
// next run starts without one.
func (f *fixture) coldCache(b *testing.B) {
	b.Helper()
	if err := os.RemoveAll(f.cache); err != nil {
		b.Fatal(err)
	}
}

// tree is one generated repository with its config.
type tree struct {
	root   string
	config string
	stats  treegen.Stats
	// changed lists the files apply changes; copies counts the copies
	// freshCopy made.
	changed []string
	copies  int
}

var (
	fixOnce sync.Once
	fix     *fixture
	fixErr  error
)

// rssLauncherEnv makes the test binary a launcher: it runs the command
// line it was given and writes the child's peak RSS, in bytes, to the file
// the variable names. See peakRSS.
const rssLauncherEnv = "IMAGEBUMP_BENCH_RSS_FILE"

func TestMain(m *testing.M) {
	if file := os.Getenv(rssLauncherEnv); file != "" {
		os.Exit(launch(file))
	}
	if os.Getenv(stubbornChildEnv) != "" {
		stubbornChild()
	}
	if spec := os.Getenv(indexLoadEnv); spec != "" {
		loadIndexChild(spec)
	}
	if os.Getenv(registryChildEnv) != "" {
		registryChild()
	}
	flag.Parse()
	code := m.Run()
	if big != nil {
		big.srv.Close()
	}
	if fix != nil {
		fix.stopRegistry()
		os.RemoveAll(fix.dir)
	}
	os.Exit(code)
}

// registryChildEnv makes the test binary serve go-containerregistry's
// in-memory registry on loopback, writing its address on stdout, until its
// stdin closes. The benchmarks' registry runs in a process of its own, as
// a real one does: inside the benchmark's process, it answered the timed
// processes between that process's own garbage collections of the
// fixture, which added 30 to 50 ms to a cycle with nothing new.
const registryChildEnv = "IMAGEBUMP_BENCH_REGISTRY"

func registryChild() {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, "registry:", err)
		os.Exit(2)
	}
	go http.Serve(l, ggcrregistry.New(ggcrregistry.Logger(log.New(io.Discard, "", 0))))
	fmt.Println(l.Addr().String())
	_, _ = io.Copy(io.Discard, os.Stdin)
	os.Exit(0)
}

// startRegistry starts the registry's process and returns its host and
// how to stop it.
func startRegistry() (host string, stop func(), err error) {
	self, err := os.Executable()
	if err != nil {
		return "", nil, err
	}
	cmd := exec.Command(self, "-test.run=^$")
	cmd.Env = append(os.Environ(), registryChildEnv+"=1")
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return "", nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return "", nil, err
	}
	if err := cmd.Start(); err != nil {
		return "", nil, fmt.Errorf("starting the registry: %w", err)
	}
	stop = func() {
		stdin.Close()
		_ = cmd.Wait()
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		stop()
		return "", nil, fmt.Errorf("reading the registry's address: %w", err)
	}
	return strings.TrimSpace(line), stop, nil
}

// getFixture builds the fixture on first use. A missing grep or cp skips
// the benchmark, or fails it when CI=true.
func getFixture(b *testing.B) *fixture {
	b.Helper()
	for _, prog := range []string{"grep", "cp"} {
		if _, err := exec.LookPath(prog); err != nil {
			b.Fatalf("%s is not installed: %v", prog, err)
		}
	}
	fixOnce.Do(func() { fix, fixErr = newFixture() })
	if fixErr != nil {
		b.Fatal(fixErr)
	}
	return fix
}

func newFixture() (f *fixture, err error) {
	start := time.Now()
	dir, err := os.MkdirTemp("", "imagebump-bench-")
	if err != nil {
		return nil, err
	}
	f = &fixture{dir: dir, trees: map[int]*tree{}}
	// plan, apply and run keep their marker index in the user's cache
	// folder: the benchmarks' processes keep theirs here.
	f.cache = filepath.Join(dir, "cache")
	if err := os.Setenv("XDG_CACHE_HOME", f.cache); err != nil {
		return f, err
	}
	f.copies = filepath.Join(dir, "copies")
	if err := os.Mkdir(f.copies, 0o755); err != nil {
		return f, err
	}
	spreadSubfolders(f.copies)
	defer func() {
		if err != nil {
			if f.stopRegistry != nil {
				f.stopRegistry()
			}
			os.RemoveAll(dir)
			f = nil
		}
	}()
	if f.grep, err = exec.LookPath("grep"); err != nil {
		return f, err
	}

	// Timed as shipped: static, stripped.
	if f.bin, err = releasebin.Build(dir); err != nil {
		return f, err
	}

	if f.host, f.stopRegistry, err = startRegistry(); err != nil {
		return f, err
	}
	if err := pushAll(context.Background(), f.host, treegen.Repositories(treegen.Options{RegistryHost: f.host})); err != nil {
		return f, err
	}

	for _, n := range treeSizes {
		opts := treegen.Options{Files: n, RegistryHost: f.host, Seed: 1}
		t := &tree{root: filepath.Join(dir, fmt.Sprintf("tree-%d", n)), config: filepath.Join(dir, fmt.Sprintf("imagebump-%d.yaml", n))}
		if t.stats, err = treegen.Generate(t.root, opts); err != nil {
			return f, err
		}
		if err := os.WriteFile(t.config, treegen.Config(opts), 0o644); err != nil {
			return f, err
		}
		f.trees[n] = t
	}
	fmt.Fprintf(os.Stderr, "bench fixture: binary, registry %s and trees of %v files ready in %s\n", f.host, treeSizes, time.Since(start).Round(time.Millisecond))
	return f, nil
}

// pushAll pushes one small fixed image to every repository and tags it with
// each of the repository's tags: push once, then tag by manifest PUTs.
func pushAll(ctx context.Context, host string, repos []treegen.Repository) error {
	img, err := mutate.AppendLayers(empty.Image, static.NewLayer([]byte("imagebump benchmark layer"), types.DockerLayer))
	if err != nil {
		return err
	}
	img, err = mutate.Config(img, v1.Config{Labels: map[string]string{"org.example.bench": "1"}})
	if err != nil {
		return err
	}
	pusher, err := remote.NewPusher(remote.WithContext(ctx))
	if err != nil {
		return err
	}
	errs := make([]error, len(repos))
	sem := make(chan struct{}, 8)
	var wg sync.WaitGroup
	for i, r := range repos {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			errs[i] = pushTags(ctx, pusher, host, r, img)
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// pushTags pushes img to r's first tag, then puts its manifest under the
// others.
func pushTags(ctx context.Context, pusher *remote.Pusher, host string, r treegen.Repository, img v1.Image) error {
	for i, tag := range r.Tags {
		ref, err := name.NewTag(host+"/"+r.Path+":"+tag, name.Insecure)
		if err != nil {
			return err
		}
		if i == 0 {
			err = pusher.Push(ctx, ref, img)
		} else {
			err = pusher.Put(ctx, ref, img)
		}
		if err != nil {
			return fmt.Errorf("pushing %s: %w", ref, err)
		}
	}
	return nil
}

// run is one timed process run.
type run struct {
	elapsed time.Duration
	code    int
}

// timeCommand runs name with args, stdout to the file out (truncated
// first), and times it from start to exit.
func timeCommand(out, name string, args ...string) (run, error) {
	f, err := os.Create(out)
	if err != nil {
		return run{}, err
	}
	defer f.Close()
	var stderr bytes.Buffer
	cmd := exec.Command(name, args...)
	cmd.Stdout = f
	cmd.Stderr = &stderr
	start := time.Now()
	err = cmd.Run()
	elapsed := time.Since(start)
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		return run{}, fmt.Errorf("running %s: %w", filepath.Base(name), err)
	}
	r := run{elapsed: elapsed, code: cmd.ProcessState.ExitCode()}
	// grep exits 0 when it found something; plan and apply exit 1 because
	// the tree holds broken files, which the report lists.
	if r.code > 1 {
		return r, fmt.Errorf("%s %s exited %d: %s", filepath.Base(name), strings.Join(args, " "), r.code, stderr.Bytes())
	}
	return r, nil
}

// peakRSS runs name with args once, untimed, and returns its peak resident
// memory and the launcher's, which is a floor under the figure.
//
// It does not read the timed runs' rusage, because on Linux that figure
// is useless for a child of this process: Go starts children with
// vfork-style clone(CLONE_VM), so at exec the kernel records the shared
// memory map's peak, this process's (the trees' bookkeeping), as the
// child's, whatever the child uses. The launcher is this test binary
// started afresh, whose own peak is a few megabytes; the figure is exact
// when it is above the launcher's.
func peakRSS(name string, args ...string) (child, floor int64, err error) {
	self, err := os.Executable()
	if err != nil {
		return 0, 0, err
	}
	file := filepath.Join(fix.dir, "rss")
	cmd := exec.Command(self, append([]string{"-test.run=^$", "--", name}, args...)...)
	cmd.Env = append(os.Environ(), rssLauncherEnv+"="+file)
	if out, err := cmd.CombinedOutput(); err != nil {
		return 0, 0, fmt.Errorf("measuring the memory of %s: %w: %s", filepath.Base(name), err, out)
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return 0, 0, err
	}
	if _, err := fmt.Sscan(string(data), &child, &floor); err != nil {
		return 0, 0, fmt.Errorf("reading %s: %w", file, err)
	}
	return child, floor, nil
}

// launch is the launcher's main: it runs the command line that follows the
// test flags, output discarded, and writes the child's and its own peak RSS
// to file. A child exit code of 1 (broken files in the tree) is not a
// failure.
func launch(file string) int {
	flag.Parse()
	args := flag.Args()
	if len(args) == 0 {
		fmt.Fprintln(os.Stderr, "launcher: no command")
		return 2
	}
	// The child's figure starts at this process's own peak, which is
	// not its rusage (that starts at its parent's) but its memory map's
	// high-water mark.
	floor, err := highWaterMark()
	if err != nil {
		fmt.Fprintln(os.Stderr, "launcher:", err)
		return 2
	}
	var stderr bytes.Buffer
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stderr = &stderr
	err = cmd.Run()
	var exit *exec.ExitError
	if err != nil && (!errors.As(err, &exit) || exit.ExitCode() > 1) {
		fmt.Fprintf(os.Stderr, "launcher: %v: %s\n", err, stderr.Bytes())
		return 2
	}
	ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	if !ok {
		fmt.Fprintln(os.Stderr, "launcher: no rusage")
		return 2
	}
	if err := os.WriteFile(file, fmt.Appendf(nil, "%d %d\n", ru.Maxrss*1024, floor), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "launcher:", err)
		return 2
	}
	return 0
}

// highWaterMark returns this process's peak resident memory in bytes, as
// VmHWM in /proc/self/status says.
func highWaterMark() (int64, error) {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, err
	}
	for line := range strings.Lines(string(data)) {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			var kb int64
			if _, err := fmt.Sscanf(strings.TrimSpace(v), "%d kB", &kb); err != nil {
				return 0, fmt.Errorf("reading VmHWM %q: %w", v, err)
			}
			return kb * 1024, nil
		}
	}
	return 0, errors.New("no VmHWM in /proc/self/status")
}

// checkGrep checks that grep listed the files treegen says hold the token.
func checkGrep(b *testing.B, out string, st treegen.Stats) {
	b.Helper()
	data, err := os.ReadFile(out)
	if err != nil {
		b.Fatal(err)
	}
	if got, want := bytes.Count(data, []byte("\n")), st.TokenFiles; got != want {
		b.Errorf("grep listed %d files, want %d", got, want)
	}
}

// checkReport checks that a plan or apply found what treegen put in the
// tree: every change, every broken file, every policy's latest tag.
func checkReport(b *testing.B, out string, st treegen.Stats, applied bool) *report.Plan {
	b.Helper()
	data, err := os.ReadFile(out)
	if err != nil {
		b.Fatal(err)
	}
	var rep report.Plan
	if err := json.Unmarshal(data, &rep); err != nil {
		b.Fatalf("reading the JSON report: %v\n%.500s", err, data)
	}
	failed := 0
	for _, p := range rep.Policies {
		if p.Error != "" {
			failed++
		}
	}
	got := []int{len(rep.Policies), failed, rep.Files.Scanned, len(rep.Changes), len(rep.Problems)}
	want := []int{st.Policies, 0, st.YAMLFiles, st.Changes, st.InvalidFiles}
	if !slices.Equal(got, want) || rep.Applied != applied {
		b.Errorf("report: [policies, failed policies, files scanned, changes, problems] = %v, want %v; applied %v, want %v", got, want, rep.Applied, applied)
	}
	return &rep
}

// median returns the median of xs.
func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// BenchmarkPlanVsGrep times `imagebump plan -o json` against grep over the
// same tree, interleaved, per tree size.
func BenchmarkPlanVsGrep(b *testing.B) {
	f := getFixture(b)
	for _, n := range treeSizes {
		b.Run(fmt.Sprintf("files=%d", n), func(b *testing.B) {
			t := f.trees[n]
			grepOut := filepath.Join(b.TempDir(), "grep.out")
			planOut := filepath.Join(b.TempDir(), "plan.json")
			grep := func() (run, error) { return timeCommand(grepOut, f.grep, "-rl", `"$imagepolicy"`, t.root) }
			plan := func() (run, error) {
				return timeCommand(planOut, f.bin, "plan", "--repo", t.root, "-c", t.config, "-o", "json")
			}

			// Warm the page cache and check the outputs once, untimed.
			if _, err := grep(); err != nil {
				b.Fatal(err)
			}
			checkGrep(b, grepOut, t.stats)
			if _, err := plan(); err != nil {
				b.Fatal(err)
			}
			checkReport(b, planOut, t.stats, false)
			f.coldCache(b)
			rss, floor, err := peakRSS(f.bin, "plan", "--repo", t.root, "-c", t.config, "-o", "json")
			if err != nil {
				b.Fatal(err)
			}

			var grepMS, planMS []float64
			for b.Loop() {
				for range *reps {
					g, err := grep()
					if err != nil {
						b.Fatal(err)
					}
					f.coldCache(b)
					p, err := plan()
					if err != nil {
						b.Fatal(err)
					}
					grepMS = append(grepMS, ms(g.elapsed))
					planMS = append(planMS, ms(p.elapsed))
				}
			}
			reportRatio(b, "plan", target(n, planTarget), grepMS, planMS, rss, floor)
		})
	}
}

// BenchmarkApplyVsGrep times `imagebump apply -o json` against grep, both
// over the same working copy of the tree. Between runs, with the timer
// stopped, the files the last apply changed are put back from the pristine
// tree and synced, which leaves the same tree as a fresh `cp -a` (made once)
// in a fraction of the time.
func BenchmarkApplyVsGrep(b *testing.B) {
	f := getFixture(b)
	for _, n := range treeSizes {
		b.Run(fmt.Sprintf("files=%d", n), func(b *testing.B) {
			t := f.trees[n]
			tmp := b.TempDir()
			grepOut := filepath.Join(tmp, "grep.out")
			applyOut := filepath.Join(tmp, "apply.json")
			grep := func(work string) (run, error) { return timeCommand(grepOut, f.grep, "-rl", `"$imagepolicy"`, work) }
			apply := func(work string) (run, error) {
				return timeCommand(applyOut, f.bin, "apply", "--repo", work, "-c", t.config, "-o", "json")
			}

			work := f.freshCopy(b, t)
			if _, err := grep(work); err != nil {
				b.Fatal(err)
			}
			checkGrep(b, grepOut, t.stats)
			f.coldCache(b)
			if _, err := apply(work); err != nil {
				b.Fatal(err)
			}
			t.changed = checkReport(b, applyOut, t.stats, true).Files.Changed
			f.coldCache(b)
			rss, floor, err := peakRSS(f.bin, "apply", "--repo", f.freshCopy(b, t), "-c", t.config, "-o", "json")
			if err != nil {
				b.Fatal(err)
			}

			var grepMS, applyMS []float64
			for b.Loop() {
				for range *reps {
					b.StopTimer()
					work := f.freshCopy(b, t)
					f.coldCache(b)
					b.StartTimer()
					g, err := grep(work)
					if err != nil {
						b.Fatal(err)
					}
					a, err := apply(work)
					if err != nil {
						b.Fatal(err)
					}
					grepMS = append(grepMS, ms(g.elapsed))
					applyMS = append(applyMS, ms(a.elapsed))
					b.StopTimer()
					checkGrep(b, grepOut, t.stats)
					rep := checkReport(b, applyOut, t.stats, true)
					if !slices.Equal(rep.Files.Changed, t.changed) {
						b.Errorf("apply changed %d files, not the %d the first apply changed", len(rep.Files.Changed), len(t.changed))
					}
					b.StartTimer()
				}
			}
			reportRatio(b, "apply", target(n, applyTarget), grepMS, applyMS, rss, floor)
		})
	}
}

// freshCopy returns a new copy of t's tree for one apply to rewrite, made
// with cp -a and synced, so that its writeback does not land in a timed
// run. The copies stay until the fixture is removed.
//
// Why a new copy, each in a place of its own: apply replaces each file it
// changes by renaming a new file over it, which frees the old file's
// inode. On ext4 without a journal (this VM's file system), creating a
// file skips, one at a time, every free inode of its block group that was
// freed within the last minute, or six while the block holding it is not
// yet written back (find_inode_bit and recently_deleted in
// fs/ext4/ialloc.c). Back-to-back applies over one copy, or over copies
// next to each other on disk, would each scan the 842 inodes the previous
// one freed for each of their own 842 new files: a quarter of apply's CPU
// in perf, and a third more wall time (docs/benchmarks.md). An apply in a
// checkout is not preceded, within the minute, by another that replaced
// files beside it. So the copies are made in a folder whose subfolders
// ext4 spreads over the disk (spreadSubfolders, on fixture.copies), and
// old copies are not removed, which would free inodes in the same way.
func (f *fixture) freshCopy(b *testing.B, t *tree) string {
	b.Helper()
	t.copies++
	work := filepath.Join(f.copies, fmt.Sprintf("%d-%d", t.stats.Files, t.copies))
	copyTree(b, t.root, work)
	syscall.Sync()
	return work
}

// copyTree copies the folder from to the new path to with cp -a.
func copyTree(b *testing.B, from, to string) {
	b.Helper()
	if out, err := exec.Command("cp", "-a", from, to).CombinedOutput(); err != nil {
		b.Fatalf("copying %s: %v: %s", from, err, out)
	}
}

// reportRatio reports the medians, their ratio and the peak memory, and says
// so when the ratio misses its target. The targets are for trees of
// treegen.DefaultFiles files; for other sizes target is 0.
func reportRatio(b *testing.B, verb string, target float64, grepMS, toolMS []float64, maxRSS, floor int64) {
	b.Helper()
	g, t := median(grepMS), median(toolMS)
	ratio := t / g
	b.ReportMetric(0, "ns/op") // the wall time of a loop, copies included, means nothing here
	b.ReportMetric(g, "grep-ms")
	b.ReportMetric(t, verb+"-ms")
	b.ReportMetric(ratio, verb+"/grep")
	b.ReportMetric(float64(maxRSS)/(1<<20), "maxrss-MB")
	if maxRSS <= floor {
		b.Logf("the peak RSS of %s is no more than its launcher's, %.1f MB: the figure is an upper bound", verb, float64(floor)/(1<<20))
	}
	if target > 0 && ratio > target {
		b.Logf("TARGET MISSED: %s takes %.2fx grep (%.0f ms vs %.0f ms, medians of %d), target %.0fx", verb, ratio, t, g, len(toolMS), target)
	}
}

// profile starts a CPU profile when -inprocess.cpuprofile is set, and
// writes the heap profile before the loop when -inprocess.memprofile is;
// it returns the function that ends both.
func profile(b *testing.B) func() {
	stopCPU := func() {}
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			b.Fatal(err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			b.Fatal(err)
		}
		stopCPU = func() {
			pprof.StopCPUProfile()
			f.Close()
		}
	}
	if *memProfile == "" {
		return stopCPU
	}
	writeHeap(b, *memProfile+".base")
	return func() {
		stopCPU()
		writeHeap(b, *memProfile)
	}
}

// writeHeap writes the heap profile, its allocation counts up to date, to
// path.
func writeHeap(b *testing.B, path string) {
	runtime.GC()
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkPlanInProcess runs plan over the 10,000-file tree inside the
// test process, for profiling (the binary has no profiling flag):
//
//	go test -run '^$' -bench PlanInProcess -benchtime 20x -inprocess.cpuprofile cpu.out ./cmd/imagebump
//
// Unlike -cpuprofile, -inprocess.cpuprofile leaves out building the
// fixture. The registry runs in a process of its own, out of the profile.
func BenchmarkPlanInProcess(b *testing.B) {
	likeMain(b)
	f := getFixture(b)
	t := f.trees[treeSizes[len(treeSizes)-1]]
	out := filepath.Join(b.TempDir(), "plan.json")
	args := []string{"plan", "--repo", t.root, "-c", t.config, "-o", "json"}
	defer profile(b)()
	for b.Loop() {
		o, err := os.Create(out)
		if err != nil {
			b.Fatal(err)
		}
		var stderr bytes.Buffer
		code := commands.Main(b.Context(), args, o, &stderr)
		o.Close()
		if code > 1 {
			b.Fatalf("plan exited %d: %s", code, stderr.Bytes())
		}
	}
	checkReport(b, out, t.stats, false)
}

// likeMain gives the test process the soft memory limit main sets, which
// the garbage collector settings of plan and apply depend on
// (internal/batchgc), until the benchmark ends.
func likeMain(b *testing.B) {
	prev := setMemoryLimit()
	b.Cleanup(func() { debug.SetMemoryLimit(prev) })
}

// BenchmarkApplyInProcess is BenchmarkPlanInProcess for apply, cold as in
// BenchmarkApplyVsGrep: each apply rewrites a new copy of the tree, made
// with the timer stopped.
func BenchmarkApplyInProcess(b *testing.B) {
	likeMain(b)
	f := getFixture(b)
	t := f.trees[treeSizes[len(treeSizes)-1]]
	out := filepath.Join(b.TempDir(), "apply.json")
	defer profile(b)()
	for b.Loop() {
		b.StopTimer()
		work := f.freshCopy(b, t)
		f.coldCache(b)
		o, err := os.Create(out)
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		var stderr bytes.Buffer
		code := commands.Main(b.Context(), []string{"apply", "--repo", work, "-c", t.config, "-o", "json"}, o, &stderr)
		o.Close()
		if code > 1 {
			b.Fatalf("apply exited %d: %s", code, stderr.Bytes())
		}
		b.StopTimer()
		checkReport(b, out, t.stats, true)
		b.StartTimer()
	}
}
