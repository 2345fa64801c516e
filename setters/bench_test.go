package setters

import (
	"context"
	"testing"
)

// BenchmarkApply plans (a dry run) over a generated tree of 2,000 files, 10%
// of them marked, and reports the time per file, to compare with
// grep -rl '"$imagepolicy"' over the same tree.
func BenchmarkApply(b *testing.B) {
	const files = 2000
	dir := b.TempDir()
	genTree(b, dir, files, 10)
	images := map[string]Image{
		"apps:app": {Repository: "ghcr.io/acme/app", Tag: "1.5.0"},
		"apps:web": {Repository: "docker.io/acme/web", Tag: "v2"},
	}
	b.ResetTimer()
	for b.Loop() {
		res, err := Apply(context.Background(), Options{Root: dir, Images: images})
		if err != nil {
			b.Fatal(err)
		}
		if res.FilesScanned != files || len(res.FilesChanged) != files/10 {
			b.Fatalf("scanned %d and changed %d files, want %d and %d", res.FilesScanned, len(res.FilesChanged), files, files/10)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*files), "ns/file")
}
