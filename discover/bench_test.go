package discover

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
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

// BenchmarkFindKustomizations: a fleet of apps, each a folder with its own
// kustomization (setting its namespace) and a Deployment, at two sizes.
// The namespaces a kustomization gives are found from each file's folders
// up: the time per app stays flat as the fleet grows (asking every
// kustomization for every file made 10,000 apps take 9.8 s, 0.43 s before
// namespaces were followed).
func BenchmarkFindKustomizations(b *testing.B) {
	for _, apps := range []int{1000, 4000} {
		b.Run(fmt.Sprintf("apps=%d", apps), func(b *testing.B) {
			dir := b.TempDir()
			for i := range apps {
				app := filepath.Join(dir, "apps", fmt.Sprintf("app%d", i))
				if err := os.MkdirAll(app, 0o755); err != nil {
					b.Fatal(err)
				}
				kust := fmt.Sprintf("namespace: ns%d\nresources:\n  - deploy.yaml\n", i)
				deploy := fmt.Sprintf("apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: app%d}\nspec:\n  template:\n    spec:\n      containers:\n        - {name: app, image: ghcr.io/acme/app%d:1.0.0}\n", i, i)
				if err := os.WriteFile(filepath.Join(app, "kustomization.yaml"), []byte(kust), 0o644); err != nil {
					b.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(app, "deploy.yaml"), []byte(deploy), 0o644); err != nil {
					b.Fatal(err)
				}
			}
			var inv *Inventory
			for b.Loop() {
				var err error
				if inv, err = Find(context.Background(), FindOptions{Root: dir}); err != nil {
					b.Fatal(err)
				}
			}
			if len(inv.Uses) != apps || inv.Uses[apps-1].Namespace == "" {
				b.Fatalf("%d uses, the last in namespace %q; want %d, each in its kustomization's", len(inv.Uses), inv.Uses[len(inv.Uses)-1].Namespace, apps)
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N*apps), "µs/app")
		})
	}
}

// BenchmarkFindOverlays measures Find on a fleet of base and overlay
// kustomizations, each overlay with an images entry for its app: every
// reference is checked against the entries that cover it and the
// kustomizations that may build it, which must not mean asking every
// kustomization for every reference.
func BenchmarkFindOverlays(b *testing.B) {
	for _, apps := range []int{1000, 4000} {
		b.Run(fmt.Sprintf("apps=%d", apps), func(b *testing.B) {
			dir := b.TempDir()
			write := func(p, s string) {
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					b.Fatal(err)
				}
				if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
					b.Fatal(err)
				}
			}
			for i := range apps {
				app := filepath.Join(dir, "apps", fmt.Sprintf("app%d", i))
				write(filepath.Join(app, "base", "kustomization.yaml"), "resources:\n  - deploy.yaml\n")
				write(filepath.Join(app, "base", "deploy.yaml"), fmt.Sprintf("apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: app%d}\nspec:\n  template:\n    spec:\n      containers:\n        - {name: app, image: ghcr.io/acme/app%d:1.0.0}\n", i, i))
				write(filepath.Join(app, "prod", "kustomization.yaml"), fmt.Sprintf("namespace: ns%d\nresources:\n  - ../base\nimages:\n  - name: ghcr.io/acme/app%d\n    newTag: 1.0.0\n", i, i))
			}
			var inv *Inventory
			for b.Loop() {
				var err error
				if inv, err = Find(context.Background(), FindOptions{Root: dir}); err != nil {
					b.Fatal(err)
				}
			}
			if len(inv.Untracked) != apps {
				b.Fatalf("%d references left to the images entries, want %d", len(inv.Untracked), apps)
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N*apps), "µs/app")
		})
	}
}
