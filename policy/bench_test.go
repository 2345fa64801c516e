//go:build unix

package policy_test

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/imagebump/imagebump/policy"
)

// benchTags makes n tags the way a busy repository has them, in a fixed
// shuffled order: mostly tags of the policy's shape, plus signatures and
// the odd "latest".
func benchTags(kind string, n int) []string {
	rng := rand.New(rand.NewPCG(uint64(n), 7))
	start := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
	tags := make([]string, n)
	for i := range tags {
		switch {
		case i%50 == 0:
			tags[i] = "latest"
		case i%10 == 1:
			tags[i] = fmt.Sprintf("sha256-%016x.sig", rng.Uint64())
		case kind == "semver":
			v := fmt.Sprintf("%d.%d.%d", i%7, i/7%100, i/700)
			switch i % 4 {
			case 0:
				v = "v" + v
			case 1:
				v += fmt.Sprintf("-rc.%d", i%5)
			}
			tags[i] = v
		case kind == "alphabetical":
			tags[i] = "RELEASE." + start.Add(time.Duration(i)*time.Minute).Format("2006-01-02T15-04-05Z")
		default:
			tags[i] = fmt.Sprintf("main-%07x-%d", rng.Uint32()&0xfffffff, 1_000_000+i)
		}
	}
	rng.Shuffle(n, func(i, j int) { tags[i], tags[j] = tags[j], tags[i] })
	return tags
}

// cpuTime returns the CPU time the process has used so far.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkSelect reports ns/tag and allocs/tag for each policy kind over
// growing tag lists: flat figures across n mean linear growth. cpu-ns/tag
// counts the CPU time of the whole process (GC included) instead of wall
// time, which is steadier on a machine that other work keeps busy.
func BenchmarkSelect(b *testing.B) {
	specs := []struct {
		kind string
		spec policy.Spec
	}{
		{"semver", policy.Spec{SemVer: ">=1.0.0 <6", Exclude: []string{`-debug$`}}},
		{"alphabetical", policy.Spec{Alphabetical: "asc", FilterPattern: `^RELEASE\.(?P<timestamp>.*)Z$`, FilterExtract: "$timestamp"}},
		{"numerical", policy.Spec{Numerical: "asc", FilterPattern: `^main-[a-f0-9]+-(?P<ts>\d+)$`, FilterExtract: "$ts"}},
	}
	for _, s := range specs {
		p, err := policy.New(s.spec)
		if err != nil {
			b.Fatal(err)
		}
		for _, n := range []int{1_000, 10_000, 100_000} {
			tags := benchTags(s.kind, n)
			b.Run(fmt.Sprintf("%s/n=%d", s.kind, n), func(b *testing.B) {
				var before, after runtime.MemStats
				runtime.ReadMemStats(&before)
				cpu := cpuTime(b)
				for b.Loop() {
					if p.Select(tags).Latest == "" {
						b.Fatal("no tag picked")
					}
				}
				cpu = cpuTime(b) - cpu
				runtime.ReadMemStats(&after)
				perTag := float64(b.N) * float64(n)
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/perTag, "ns/tag")
				b.ReportMetric(float64(cpu.Nanoseconds())/perTag, "cpu-ns/tag")
				b.ReportMetric(float64(after.Mallocs-before.Mallocs)/perTag, "allocs/tag")
			})
		}
	}
}

// BenchmarkManyPolicies selects for 1,000 policies over one repository
// of 10,000 tags and keeps every result, as a cycle does, with Select
// (the lists), Pick (the counts) and PickList (the counts, the policies
// sharing one TagList, as a cycle's do): retained-MB is the heap the
// results (and the list) hold once collected, ns/policy the time of one
// selection.
func BenchmarkManyPolicies(b *testing.B) {
	const policies = 1_000
	tags := benchTags("semver", 10_000)
	p, err := policy.New(policy.Spec{SemVer: ">=0.0.0-0"})
	if err != nil {
		b.Fatal(err)
	}
	for _, way := range []struct {
		name string
		sel  func(*policy.TagList) (policy.Result, error)
	}{
		{"Select", func(l *policy.TagList) (policy.Result, error) { return p.SelectContext(b.Context(), l.Tags()) }},
		{"Pick", func(l *policy.TagList) (policy.Result, error) { return p.Pick(b.Context(), l.Tags()) }},
		// The policies share one list, made for each cycle.
		{"PickList", func(l *policy.TagList) (policy.Result, error) { return p.PickList(b.Context(), l) }},
	} {
		b.Run(way.name, func(b *testing.B) {
			var retained uint64
			for b.Loop() {
				var before, after runtime.MemStats
				runtime.GC()
				runtime.ReadMemStats(&before)
				list := policy.NewTagList(tags)
				results := make([]policy.Result, policies)
				for i := range results {
					if results[i], err = way.sel(list); err != nil || results[i].Latest == "" {
						b.Fatal("no tag picked", err)
					}
				}
				runtime.GC()
				runtime.ReadMemStats(&after)
				retained = after.HeapAlloc - before.HeapAlloc
				runtime.KeepAlive(results)
				runtime.KeepAlive(list)
			}
			b.ReportMetric(float64(retained)/(1<<20), "retained-MB")
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*policies), "ns/policy")
		})
	}
}
