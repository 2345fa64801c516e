package serve

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/imagebump/imagebump/config"
	"github.com/imagebump/imagebump/internal/testkit/releasebin"
	"github.com/imagebump/imagebump/internal/testkit/testgit"
)

// The benchmarks in this file hold serve to issue 8's targets; run them
// with
//
//	go test -run '^$' -bench . -benchtime 1x ./serve
//
// and see docs/benchmarks.md for the figures.

// soak is BenchmarkServeSoak's fixture: five in-process registries of 100
// repositories each, and one target per registry whose repository pins
// each image at its latest tag, so that every cycle has nothing new.
type soak struct {
	cfg     *config.Config
	workdir string
}

const (
	soakRegistries = 5
	soakImages     = 100 // per registry
)

func newSoak(b *testing.B) *soak {
	b.Helper()
	dir := b.TempDir()
	var cfg strings.Builder
	cfg.WriteString("registries:\n")
	var images, targets strings.Builder
	for i := range soakRegistries {
		reg := memRegistry(b)
		fmt.Fprintf(&cfg, "  - {host: %q, insecure: true}\n", reg.Host)
		files := map[string]string{}
		for j := range soakImages {
			repo := fmt.Sprintf("team/app%d", j)
			reg.Push(b, repo, "1.0.0", "1.1.0", "1.2.0", "latest")
			policy := fmt.Sprintf("r%d:app%d", i, j)
			fmt.Fprintf(&images, "  - {name: %q, repository: %s, policy: {semver: \">=1.0.0\"}}\n", policy, reg.Repo(repo))
			files[fmt.Sprintf("apps/app%d.yaml", j)] = fmt.Sprintf("spec:\n  image: %s:1.2.0 # {\"$imagepolicy\": %q}\n", reg.Repo(repo), policy)
		}
		bare := testgit.NewBare(b, files)
		fmt.Fprintf(&targets, "  - {name: t%d, git: {url: \"file://%s\", branch: main}, schedule: 1m, policies: [\"r%d:*\"]}\n", i, bare, i)
	}
	text := cfg.String() + "images:\n" + images.String() + "targets:\n" + targets.String()
	file := filepath.Join(dir, "imagebump.yaml")
	writeTestFile(b, file, text)
	c, err := config.Load(file)
	if err != nil {
		b.Fatal(err)
	}
	return &soak{cfg: c, workdir: filepath.Join(dir, "work")}
}

// memSample is the memory of the process after a full collection.
type memSample struct {
	heapInuse  uint64 // runtime.MemStats.HeapInuse
	heapAlloc  uint64
	rss        uint64 // VmRSS from /proc/self/status; 0 off Linux
	goroutines int
}

func sampleMemory() memSample {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return memSample{heapInuse: ms.HeapInuse, heapAlloc: ms.HeapAlloc, rss: vmRSS(), goroutines: runtime.NumGoroutine()}
}

func vmRSS() uint64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, _ := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// BenchmarkServeSoak runs serve over 500 images on 5 registries (5
// targets) for 200 cycles per target, on the fake clock so that the
// cycles follow each other without waiting, and compares the memory and
// goroutines after cycle 200 with those after cycle 20. Targets (issue 8):
// Go heap in use within 10%, no goroutine growth.
func BenchmarkServeSoak(b *testing.B) {
	const warm, cycles = 20, 200
	f := newSoak(b)
	for b.Loop() {
		clock := newFakeClock(t0)
		s, err := New(Options{Config: f.cfg, Workdir: f.workdir, Clock: clock, MaxJitter: -1})
		if err != nil {
			b.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- s.Run(ctx) }()
		var at20, at200 memSample
		start := time.Now()
		var at20Time time.Duration
		for round := 1; round <= cycles; round++ {
			// Without jitter every target's cycle of this round starts at
			// once (the first at start); wait until all ran and wait again.
			waitFor(b, func() bool {
				for _, ts := range s.Status().Targets {
					if ts.CyclesRun < round || ts.RunningSince != nil {
						return false
					}
				}
				return true
			}, "round %d", round)
			clock.WaitTimers(b, soakRegistries)
			if round == warm {
				at20, at20Time = sampleMemory(), time.Since(start)
			}
			if round == cycles {
				at200 = sampleMemory()
				break
			}
			clock.Advance(time.Minute)
		}
		elapsed := time.Since(start)
		for _, ts := range s.Status().Targets {
			if ts.ConsecutiveFailures > 0 || ts.Cycles[0].Result != ResultSuccess || ts.Cycles[0].Pushed {
				b.Fatalf("target %s: %+v", ts.Name, ts.Cycles[0])
			}
		}
		cancel()
		if err := <-done; err != nil {
			b.Fatal(err)
		}
		heapRatio := float64(at200.heapInuse) / float64(at20.heapInuse)
		b.ReportMetric(float64(at20.heapInuse)/(1<<20), "heap20-MiB")
		b.ReportMetric(float64(at200.heapInuse)/(1<<20), "heap200-MiB")
		b.ReportMetric(heapRatio, "heap200/heap20")
		b.ReportMetric(float64(at20.rss)/(1<<20), "rss20-MiB")
		b.ReportMetric(float64(at200.rss)/(1<<20), "rss200-MiB")
		b.ReportMetric(float64(at20.goroutines), "goroutines20")
		b.ReportMetric(float64(at200.goroutines), "goroutines200")
		b.ReportMetric(float64((elapsed-at20Time).Milliseconds())/float64(soakRegistries*(cycles-warm)), "ms/cycle")
		if heapRatio > 1.10 {
			b.Errorf("Go heap in use grew %.1f%% from cycle %d to %d (%d -> %d bytes); want at most 10%%", (heapRatio-1)*100, warm, cycles, at20.heapInuse, at200.heapInuse)
		}
		if at200.goroutines > at20.goroutines {
			b.Errorf("goroutines grew from %d after cycle %d to %d after cycle %d", at20.goroutines, warm, at200.goroutines, cycles)
		}
	}
}

// buildImagebump builds the imagebump binary into dir, as the release
// builds it.
func buildImagebump(b *testing.B, dir string) string {
	b.Helper()
	bin, err := releasebin.Build(dir)
	if err != nil {
		b.Fatal(err)
	}
	return bin
}

// BenchmarkNoopCycleVsRun times a cycle with nothing new, in serve (an
// in-process cycle, triggered) and as `imagebump run` (the whole process:
// start, config load, registry client, fetch, scan), on the same target:
// 20 images on an in-process registry, a repository served by git
// http-backend, each side with its own kept working copy. The two are
// interleaved and their medians compared.
func BenchmarkNoopCycleVsRun(b *testing.B) {
	const images, reps = 20, 15
	dir := b.TempDir()
	bin := buildImagebump(b, dir)
	reg := memRegistry(b)
	files := map[string]string{}
	var cfg strings.Builder
	fmt.Fprintf(&cfg, "registries: [{host: %q, insecure: true}]\nimages:\n", reg.Host)
	for j := range images {
		repo := fmt.Sprintf("team/app%d", j)
		reg.Push(b, repo, "1.0.0", "1.1.0", "1.2.0")
		policy := fmt.Sprintf("apps:app%d", j)
		fmt.Fprintf(&cfg, "  - {name: %q, repository: %s, policy: {semver: \">=1.0.0\"}}\n", policy, reg.Repo(repo))
		files[fmt.Sprintf("apps/app%d.yaml", j)] = fmt.Sprintf("spec:\n  image: %s:1.2.0 # {\"$imagepolicy\": %q}\n", reg.Repo(repo), policy)
	}
	bare := testgit.NewBare(b, files)
	gsrv := testgit.StartHTTP(b, bare, false)
	fmt.Fprintf(&cfg, "git: {url: %q, branch: main}\nschedule: 1h\n", gsrv.URL)
	cfgFile := filepath.Join(dir, "imagebump.yaml")
	writeTestFile(b, cfgFile, cfg.String())
	c, err := config.Load(cfgFile)
	if err != nil {
		b.Fatal(err)
	}
	runCmd := func() time.Duration {
		start := time.Now()
		cmd := exec.Command(bin, "run", "-c", cfgFile, "--workdir", filepath.Join(dir, "run-work"), "--log-level", "warn")
		cmd.Stdout, cmd.Stderr = io.Discard, os.Stderr
		if err := cmd.Run(); err != nil {
			b.Fatalf("imagebump run: %v", err)
		}
		return time.Since(start)
	}

	for b.Loop() {
		s, err := New(Options{Config: c, Workdir: filepath.Join(dir, "serve-work"), Debounce: -1, MaxJitter: -1})
		if err != nil {
			b.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- s.Run(ctx) }()
		cycled := func(n int) bool {
			ts := s.Status().Targets[0]
			return ts.CyclesRun >= n && ts.RunningSince == nil
		}
		waitFor(b, func() bool { return cycled(1) }, "the first cycle")
		runCmd() // the run side's first clone
		var serveTimes, runTimes []time.Duration
		for i := range reps {
			start := time.Now()
			if err := s.Trigger("default", "bench"); err != nil {
				b.Fatal(err)
			}
			waitFor(b, func() bool { return cycled(i + 2) }, "cycle %d", i+2)
			serveTimes = append(serveTimes, time.Since(start))
			runTimes = append(runTimes, runCmd())
		}
		cancel()
		if err := <-done; err != nil {
			b.Fatal(err)
		}
		ts := s.Status().Targets[0]
		if ts.Cycles[0].Pushed || ts.Cycles[0].Result != ResultSuccess {
			b.Fatalf("the serve cycle was not a no-op: %+v", ts.Cycles[0])
		}
		slices.Sort(serveTimes)
		slices.Sort(runTimes)
		sm, rm := serveTimes[reps/2], runTimes[reps/2]
		b.ReportMetric(float64(sm.Microseconds())/1000, "serve-ms")
		b.ReportMetric(float64(rm.Microseconds())/1000, "run-ms")
		b.ReportMetric(float64(sm)/float64(rm), "serve/run")
	}
}
