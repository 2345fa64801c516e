package setters

import (
	"maps"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestSteadyView checks that an Apply served whole from an index's steady
// view reports what a full Apply does, and that the view serves exactly
// when no marker would move and no file must be read.
func TestSteadyView(t *testing.T) {
	const (
		app     = "image: ghcr.io/acme/app:1.5.0 # {\"$imagepolicy\": \"apps:app\"}\n"
		appOld  = "image: ghcr.io/acme/app:1.4.2 # {\"$imagepolicy\": \"apps:app\"}\n"
		tag     = "tag: 1.5.0 # {\"$imagepolicy\": \"apps:app:tag\"}\n"
		web     = "image: docker.io/acme/web:v2.3.1 # {\"$imagepolicy\": \"apps:web\"}\n"
		broken  = "broken: [\nimage: x # {\"$imagepolicy\": \"apps:app\"}\n"
		unknown = "image: ghcr.io/acme/app:1.0.0 # {\"$imagepolicy\": \"apps:nope\"}\n"
		failed  = "image: ghcr.io/acme/app:1.0.0 # {\"$imagepolicy\": \"apps:failed\"}\n"
		digest  = "digest: sha256:00 # {\"$imagepolicy\": \"apps:app:digest\"}\n"
		// A marker in a flow mapping is never edited: it is a problem
		// of the file alone, whatever its policy picks or whether it
		// exists.
		flowOld     = "c: {image: ghcr.io/acme/app:1.0.0 # {\"$imagepolicy\": \"apps:app\"}\n}\n"
		flowUnknown = "c: {image: ghcr.io/acme/app:1.0.0 # {\"$imagepolicy\": \"apps:nope\"}\n}\n"
	)
	for _, tc := range []struct {
		name  string
		files map[string]string
		// served is whether the second Apply is served from the view.
		served bool
	}{
		{"every marker at its pick", map[string]string{"a.yaml": app + web, "b/c.yaml": tag, "d.yaml": "plain: text\n"}, true},
		{"a file that does not parse", map[string]string{"a.yaml": app, "b.yaml": broken}, true},
		{"an unknown policy", map[string]string{"a.yaml": app, "b.yaml": unknown, "c.yaml": unknown + tag}, true},
		{"a policy that resolved nothing", map[string]string{"a.yaml": app, "b.yaml": failed}, true},
		{"a digest the policy does not give", map[string]string{"a.yaml": tag + digest, "b.yaml": digest}, true},
		{"a flow mapping at an old value", map[string]string{"a.yaml": app, "b.yaml": flowOld}, true},
		{"a flow mapping naming an unknown policy", map[string]string{"a.yaml": app, "b.yaml": flowUnknown}, true},
		{"one marker moves", map[string]string{"a.yaml": app, "b.yaml": appOld}, false},
		{"one of two markers of a file moves", map[string]string{"a.yaml": web + appOld}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			for rel, content := range tc.files {
				p := filepath.Join(dir, filepath.FromSlash(rel))
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			opts := Options{Root: dir, Images: goldenImages, Known: goldenKnown}
			want, err := Apply(t.Context(), opts)
			if err != nil {
				t.Fatal(err)
			}
			ix := NewIndex(ByBlob, opts)
			io := opts
			io.Index = ix
			// The first Apply reads and parses every file; the second
			// has nothing new, and the third is served from the view
			// the second made way for.
			for i := range 3 {
				got, err := Apply(t.Context(), io)
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(normal(got), normal(want)); diff != "" {
					t.Fatalf("Apply %d differs from the full one (-indexed +full):\n%s", i+1, diff)
				}
				viewed := ix.steady != nil && len(got.Markers) > 0 && &got.Markers[0] == &ix.steady.markers[0]
				if i == 1 && viewed {
					t.Error("the second Apply was served from a view: a one-off Apply would pay for making it")
				}
				if i == 2 && viewed != tc.served {
					t.Errorf("the third Apply was served from the steady view: %v, want %v", viewed, tc.served)
				}
				if i > 0 && tc.served && got.FilesRead != 0 {
					t.Errorf("a steady Apply read %d files", got.FilesRead)
				}
			}
			if !tc.served && ix.steady != nil {
				t.Error("a view was made while a marker moves: every Apply pays for it and none uses it")
			}
			// The view lists the markers each file would, in order, and
			// counts the policies the comments name as References did.
			refs := References{}
			for _, e := range ix.files {
				for _, p := range e.refs {
					refs[p]++
				}
			}
			// A caller may change the map it gets.
			ix.References()["apps:app"] += 100
			if diff := cmp.Diff(ix.References(), refs); diff != "" {
				t.Errorf("References (-view +entries):\n%s", diff)
			}
		})
	}
}

// TestSteadyViewDropped checks that every change to an index's entries
// drops the view: an Update and Scan, a file Apply writes, a reset.
func TestSteadyViewDropped(t *testing.T) {
	const app = "image: ghcr.io/acme/app:1.5.0 # {\"$imagepolicy\": \"apps:app\"}\n"
	dir := t.TempDir()
	write := func(rel, content string) {
		if err := os.WriteFile(filepath.Join(dir, rel), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("a.yaml", app)
	write("b.yaml", app)
	opts := Options{Root: dir, Images: goldenImages, Known: goldenKnown, Write: true}
	ix := NewIndex(ByBlob, opts)
	opts.Index = ix
	apply := func(wantMarkers int) *Result {
		t.Helper()
		res, err := Apply(t.Context(), opts)
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Markers) != wantMarkers {
			t.Fatalf("Apply listed %d markers, want %d: %+v", len(res.Markers), wantMarkers, res.Markers)
		}
		return res
	}
	apply(2)
	apply(2)
	apply(2)
	if ix.steady == nil {
		t.Fatal("a steady Apply left no view")
	}

	// A commit adds a marker to b.yaml and removes a.yaml.
	b2 := app + "tag: 1.4.0 # {\"$imagepolicy\": \"apps:app:tag\"}\n"
	write("b.yaml", b2)
	if err := os.Remove(filepath.Join(dir, "a.yaml")); err != nil {
		t.Fatal(err)
	}
	ix.Update("2", []FileChange{{Path: "a.yaml", Old: BlobHash([]byte(app))}, {Path: "b.yaml", Old: BlobHash([]byte(app)), New: BlobHash([]byte(b2))}}, nil)
	if ix.steady != nil {
		t.Error("Update removed a file and kept the view")
	}
	// b.yaml's tag moves: Apply writes it.
	res := apply(2)
	if len(res.FilesChanged) != 1 {
		t.Fatalf("Apply changed %v, want b.yaml", res.FilesChanged)
	}
	if ix.steady != nil {
		t.Error("Apply wrote a file and kept the view")
	}
	apply(2)
	res = apply(2)
	if len(res.Changes) != 0 || res.FilesRead != 0 {
		t.Errorf("the Apply after the bump changed %d markers and read %d files", len(res.Changes), res.FilesRead)
	}
	if res.Markers[1].Value != "1.5.0" {
		t.Errorf("the view serves b.yaml's tag as %q, want the value written, 1.5.0", res.Markers[1].Value)
	}
	// A commit changes b.yaml, but the worktree holds other bytes: the
	// file is stale, and the markers its entry lists are not served.
	ix.Update("3", []FileChange{{Path: "b.yaml", Old: BlobHash([]byte(b2)), New: BlobHash([]byte(b2 + "# committed\n"))}}, nil)
	for range 3 {
		if res = apply(0); len(res.Stale) != 1 {
			t.Errorf("with b.yaml stale, Apply listed stale files %v, want b.yaml", res.Stale)
		}
	}
	ix.Reset()
	if ix.steady != nil {
		t.Error("Reset kept the view")
	}
}

// TestSteadyViewMixed checks a policy whose markers hold different
// values while it resolves nothing: the view is made, and once the
// policy resolves to one of the values, the markers at the other move.
func TestSteadyViewMixed(t *testing.T) {
	dir := t.TempDir()
	for rel, tag := range map[string]string{"a.yaml": "1.0.0", "b.yaml": "2.0.0"} {
		content := "tag: " + tag + " # {\"$imagepolicy\": \"apps:failed:tag\"}\n"
		if err := os.WriteFile(filepath.Join(dir, rel), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	opts := Options{Root: dir, Images: goldenImages, Known: goldenKnown, Index: NewIndex(ByBlob, Options{})}
	for range 3 {
		if _, err := Apply(t.Context(), opts); err != nil {
			t.Fatal(err)
		}
	}
	if opts.Index.steady == nil {
		t.Fatal("no view was made")
	}
	opts.Images = maps.Clone(goldenImages)
	opts.Images["apps:failed"] = Image{Repository: "ghcr.io/acme/app", Tag: "1.0.0"}
	res, err := Apply(t.Context(), opts)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Changes) != 1 || res.Changes[0].File != "b.yaml" {
		t.Errorf("once apps:failed picks 1.0.0, Apply changes %+v, want b.yaml's tag", res.Changes)
	}
}
