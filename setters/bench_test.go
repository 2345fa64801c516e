package setters

import (
	"context"
	"fmt"
	"path"
	"strings"
	"testing"

	"github.com/imagebump/imagebump/internal/testkit/treegen"
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

// BenchmarkApplySteady times what a steady cycle in serve asks of the
// setters: a ByBlob index with nothing pending, every policy's pick the
// value its markers hold, over a generated tree of 20,000 files: the
// policies the markers name, then Apply. It reads no file; the time is
// the counting, the marker check and the Result it builds.
func BenchmarkApplySteady(b *testing.B) {
	dir := b.TempDir()
	opts := treegen.Options{Files: 20000, RegistryHost: "registry.example", Seed: 1}
	st, err := treegen.Generate(dir, opts)
	if err != nil {
		b.Fatal(err)
	}
	images := map[string]Image{}
	for i, r := range treegen.Repositories(opts) {
		img := Image{Repository: opts.RegistryHost + "/" + r.Path, Tag: r.Latest}
		if r.Digest {
			img.Digest = "sha256:" + strings.Repeat("ab", 32)
		}
		images[fmt.Sprintf("team-%02d:%s", i%20, path.Base(r.Path))] = img
	}
	known := func(p string) bool { _, ok := images[p]; return ok }
	ctx := b.Context()
	ix := NewIndex(ByBlob, Options{})
	// The first Apply reads and bumps every marked file, the second
	// parses what the first wrote.
	for range 2 {
		if _, err := Apply(ctx, Options{Root: dir, Images: images, Known: known, Write: true, Index: ix}); err != nil {
			b.Fatal(err)
		}
	}
	// kept is serve, whose index lives from cycle to cycle; fresh is
	// run, whose index was just loaded and never served.
	for _, fresh := range []bool{false, true} {
		b.Run(map[bool]string{false: "kept", true: "fresh"}[fresh], func(b *testing.B) {
			var markers int
			for b.Loop() {
				if fresh {
					ix.steady, ix.refs, ix.quiet = nil, nil, false
				}
				refs := ix.References()
				res, err := Apply(ctx, Options{Root: dir, Images: images, Known: known, Write: true, Index: ix})
				if err != nil {
					b.Fatal(err)
				}
				if res.FilesRead != 0 || len(res.Changes) != 0 || len(res.Markers) == 0 || len(refs) == 0 {
					b.Fatalf("a steady Apply read %d files, made %d changes and listed %d markers of %d policies", res.FilesRead, len(res.Changes), len(res.Markers), len(refs))
				}
				markers = len(res.Markers)
			}
			b.ReportMetric(float64(markers), "markers")
			b.ReportMetric(float64(st.MarkedFiles), "marked-files")
		})
	}
}
