package discover

import (
	"context"
	"testing"

	"github.com/imagebump/imagebump/internal/testkit/treegen"
)

// BenchmarkInit reads a generated fleet of 2,000 files without markers, as
// init finds a repository it adopts: Find alone, then Find, Propose and
// Markers (every insertion verified), and reports the time per file.
func BenchmarkInit(b *testing.B) {
	const files = 2000
	dir := b.TempDir()
	if _, err := treegen.Generate(dir, treegen.Options{Files: files, MarkedFraction: -1, InvalidFiles: -1, Seed: 1}); err != nil {
		b.Fatal(err)
	}
	b.Run("find", func(b *testing.B) {
		for b.Loop() {
			if _, err := Find(context.Background(), FindOptions{Root: dir}); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*files), "ns/file")
	})
	b.Run("find+propose+markers", func(b *testing.B) {
		marks := 0
		for b.Loop() {
			inv, err := Find(context.Background(), FindOptions{Root: dir})
			if err != nil {
				b.Fatal(err)
			}
			marks = 0
			for _, f := range Markers(inv, Propose(inv, ProposeOptions{})) {
				marks += len(f.Marks)
			}
		}
		if marks == 0 {
			b.Fatal("no marker proposed over the fleet")
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*files), "ns/file")
		b.ReportMetric(float64(marks), "markers")
	})
}
