package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/imagebump/imagebump/internal/commands"
	"github.com/imagebump/imagebump/internal/testkit/treegen"
)

// BenchmarkManyPoliciesPlan plans a repository of 1,000 marked files,
// each naming a policy of its own, all of them semver policies on one
// repository of 10,000 tags, without the marker index, inside the test
// process (the registry runs in a process of its own):
//
//	go test -run '^$' -bench ManyPoliciesPlan -benchtime 3x ./cmd/imagebump
//
// What it measures is the selection: a thousand policies over the same
// tags, which share their parsing through one policy.TagList, with a
// thousand distinct ranges, and with ten (policies of one repository
// mostly share a few ranges, one per environment, and share their
// checks too).
func BenchmarkManyPoliciesPlan(b *testing.B) {
	const (
		policies = 1_000
		tags     = 10_000
	)
	likeMain(b)
	host, stop, err := startRegistry()
	if err != nil {
		b.Fatal(err)
	}
	defer stop()
	repo := treegen.Repository{Path: "bench/many"}
	for i := range tags {
		repo.Tags = append(repo.Tags, fmt.Sprintf("%d.%d.%d", i/1000, i/10%100, i%10))
	}
	if err := pushAll(b.Context(), host, []treegen.Repository{repo}); err != nil {
		b.Fatal(err)
	}
	for _, ranges := range []int{policies, 10} {
		b.Run(fmt.Sprintf("ranges=%d", ranges), func(b *testing.B) {
			planMany(b, host, repo.Path, policies, ranges)
		})
	}
}

// planMany plans a repository of n marked files, each naming a policy of
// its own on repository, among ranges distinct semver ranges.
func planMany(b *testing.B, host, repository string, n, ranges int) {
	dir := b.TempDir()
	var cfg strings.Builder
	fmt.Fprintf(&cfg, "registries:\n  - host: %q\n    insecure: true\nimages:\n", host)
	for i := range n {
		// Ranges that all admit the latest tag, 9.99.9.
		r := i % ranges
		fmt.Fprintf(&cfg, "  - name: many:p%04d\n    repository: %q\n    policy: {semver: \">=%d.%d.0\"}\n", i, host+"/"+repository, r/100, r%100)
		file := filepath.Join(dir, "repo", fmt.Sprintf("p%04d.yaml", i))
		if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
			b.Fatal(err)
		}
		body := fmt.Sprintf("image: %s/%s:0.0.1 # {\"$imagepolicy\": \"many:p%04d\"}\n", host, repository, i)
		if err := os.WriteFile(file, []byte(body), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	config := filepath.Join(dir, "imagebump.yaml")
	if err := os.WriteFile(config, []byte(cfg.String()), 0o644); err != nil {
		b.Fatal(err)
	}
	args := []string{"plan", "--no-cache", "--repo", filepath.Join(dir, "repo"), "-c", config, "-o", "json"}
	var out, stderr bytes.Buffer
	for b.Loop() {
		out.Reset()
		stderr.Reset()
		if code := commands.Main(b.Context(), args, &out, &stderr); code > 1 {
			b.Fatalf("plan exited %d: %s", code, stderr.Bytes())
		}
	}
	if got := strings.Count(out.String(), `"9.99.9"`); got < n {
		b.Fatalf("the plan names the latest tag %d times, want at least once per policy (%d): %s", got, n, stderr.Bytes())
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n)/1e3, "µs/policy")
}
