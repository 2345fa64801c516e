package treegen

import (
	"bytes"
	"context"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"gopkg.in/yaml.v3"

	"github.com/imagebump/imagebump/config"
	"github.com/imagebump/imagebump/setters"
)

// readTree returns every file under dir by slash path.
func readTree(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		files[filepath.ToSlash(rel)] = data
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

func TestGenerateIsDeterministic(t *testing.T) {
	opts := Options{Files: 1200, Seed: 7, RegistryHost: "127.0.0.1:5000"}
	a, b, c := t.TempDir(), t.TempDir(), t.TempDir()
	statsA, err := Generate(a, opts)
	if err != nil {
		t.Fatal(err)
	}
	statsB, err := Generate(b, opts)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(statsA, statsB); diff != "" {
		t.Errorf("stats of two runs with the same seed differ (-first +second):\n%s", diff)
	}
	treeA, treeB := readTree(t, a), readTree(t, b)
	if diff := cmp.Diff(treeA, treeB); diff != "" {
		t.Errorf("two trees with the same seed differ (-first +second):\n%s", diff)
	}

	opts.Seed = 8
	if _, err := Generate(c, opts); err != nil {
		t.Fatal(err)
	}
	if cmp.Equal(treeA, readTree(t, c)) {
		t.Errorf("trees with seeds 7 and 8 are the same")
	}
}

// count is what a test finds by reading a tree, to hold against Stats.
type count struct {
	Stats
	crlf, bom, wide, kustomizationFiles, rootLists, multiDoc int
}

var (
	twoSpaces  = regexp.MustCompile(`(?m)^  [a-z]`)
	fourSpaces = regexp.MustCompile(`(?m)^    [a-z]`)
)

// countTree reads the tree under dir without the generator's help.
func countTree(t *testing.T, dir string) count {
	t.Helper()
	var c count
	for rel, data := range readTree(t, dir) {
		c.Files++
		c.Bytes += int64(len(data))
		hasToken := bytes.Contains(data, []byte(`"$imagepolicy"`))
		if hasToken {
			c.TokenFiles++
		}
		base := filepath.Base(rel)
		ext := filepath.Ext(base)
		if ext != ".yaml" && ext != ".yml" && base != "Kustomization" {
			continue
		}
		c.YAMLFiles++
		if base == "Kustomization" {
			c.kustomizationFiles++
		}
		if bytes.Contains(data, []byte("\r\n")) {
			c.crlf++
		}
		if bytes.HasPrefix(data, []byte("\uFEFF")) {
			c.bom++
		}
		if fourSpaces.Match(data) && !twoSpaces.Match(data) {
			c.wide++
		}
		if bytes.HasPrefix(bytes.TrimPrefix(data, []byte("\uFEFF")), []byte("- ")) {
			c.rootLists++
		}
		if bytes.Contains(data, []byte("\n---")) {
			c.multiDoc++
		}
		if strings.Contains(rel, "/templates/") {
			continue // Helm templates are not YAML until rendered
		}
		if err := parseAll(data); err != nil {
			if !hasToken {
				t.Errorf("%s: does not parse and has no marker: %v", rel, err)
			}
			c.InvalidFiles++
			continue
		}
		if !hasToken {
			continue
		}
		c.MarkedFiles++
		for _, line := range strings.Split(string(data), "\n") {
			_, comment, ok := strings.Cut(line, `# {"$imagepolicy": "`)
			if !ok {
				continue
			}
			ref, _, _ := strings.Cut(comment, `"`)
			c.Markers++
			switch strings.Count(ref, ":") {
			case 1:
				c.ImageMarkers++
			default:
				switch ref[strings.LastIndex(ref, ":")+1:] {
				case "tag":
					c.TagMarkers++
				case "name":
					c.NameMarkers++
				case "digest":
					c.DigestMarkers++
				default:
					t.Errorf("%s: marker %q has an unknown suffix", rel, ref)
				}
			}
		}
	}
	return c
}

// parseAll decodes every document of data.
func parseAll(data []byte) error {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	for {
		var n yaml.Node
		err := dec.Decode(&n)
		if err != nil {
			if err.Error() == "EOF" {
				return nil
			}
			return err
		}
	}
}

func TestGenerateStats(t *testing.T) {
	tests := []struct {
		name string
		opts Options
	}{
		{"1500 files, defaults", Options{Files: 1500}},
		{"2500 files, 20% marked, 50 policies, 5 invalid", Options{Files: 2500, MarkedFraction: 0.2, Policies: 50, InvalidFiles: 5, Seed: 3}},
		{"300 files, no markers, none invalid", Options{Files: 300, MarkedFraction: -1, InvalidFiles: -1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			got, err := Generate(dir, tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			c := countTree(t, dir)
			want := c.Stats
			want.Policies = tt.opts.withDefaults().Policies
			// The counting above sees markers but not which would change.
			want.Changes = got.Changes
			if diff := cmp.Diff(got, want); diff != "" {
				t.Errorf("Stats disagree with the tree (-got +want):\n%s", diff)
			}

			o := tt.opts.withDefaults()
			if got.Files != o.Files {
				t.Errorf("Files = %d, want %d", got.Files, o.Files)
			}
			if want := int(math.Round(o.MarkedFraction * float64(got.YAMLFiles))); got.MarkedFiles != want {
				t.Errorf("MarkedFiles = %d, want %d (%.2f of %d YAML files)", got.MarkedFiles, want, o.MarkedFraction, got.YAMLFiles)
			}
			if got.InvalidFiles != o.InvalidFiles {
				t.Errorf("InvalidFiles = %d, want %d", got.InvalidFiles, o.InvalidFiles)
			}
			if got.Changes > got.Markers || got.Changes < got.Markers-got.NameMarkers {
				t.Errorf("Changes = %d, want between %d and %d (markers less name markers, markers)", got.Changes, got.Markers-got.NameMarkers, got.Markers)
			}
			if got.MarkedFiles == 0 {
				return
			}
			for name, n := range map[string]int{
				"image markers": got.ImageMarkers, "tag markers": got.TagMarkers,
				"name markers": got.NameMarkers, "digest markers": got.DigestMarkers,
				"CRLF files": c.crlf, "files with a BOM": c.bom, "4-space files": c.wide,
				"files named Kustomization": c.kustomizationFiles, "root lists": c.rootLists,
				"multi-document files": c.multiDoc, "non-YAML files with a marker": got.TokenFiles - got.MarkedFiles - got.InvalidFiles,
			} {
				if n == 0 {
					t.Errorf("the tree has no %s", name)
				}
			}
		})
	}
}

// TestGenerateMatchesSetters runs the setters over a tree with the images
// the config's policies select from Repositories, and checks that they find
// what Stats promises.
func TestGenerateMatchesSetters(t *testing.T) {
	opts := Options{Files: 2500, Seed: 11, RegistryHost: "127.0.0.1:5000"}
	dir := t.TempDir()
	st, err := Generate(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Parse(Config(opts), "imagebump.yaml")
	if err != nil {
		t.Fatalf("Config does not load: %v", err)
	}
	repos := map[string]Repository{}
	for _, r := range Repositories(opts) {
		repos[opts.RegistryHost+"/"+r.Path] = r
	}
	images := map[string]setters.Image{}
	for _, im := range cfg.Images {
		r, ok := repos[im.Repository]
		if !ok {
			t.Fatalf("policy %s watches %s, which Repositories does not list", im.Name, im.Repository)
		}
		sel := im.Policy().Select(r.Tags)
		if sel.Latest != r.Latest {
			t.Errorf("policy %s selects %q from %s, Repository.Latest is %q", im.Name, sel.Latest, r.Path, r.Latest)
		}
		if got, want := im.Digest == "always", r.Digest; got != want {
			t.Errorf("policy %s pins digests: %v, Repository.Digest: %v", im.Name, got, want)
		}
		images[im.Name] = setters.Image{Repository: im.Repository, Tag: r.Latest, Digest: "sha256:" + strings.Repeat("ab", 32)}
	}
	res, err := setters.Apply(context.Background(), setters.Options{Root: dir, Images: images})
	if err != nil {
		t.Fatal(err)
	}
	used := map[string]bool{}
	for _, m := range res.Markers {
		used[m.Policy] = true
	}
	got := map[string]int{
		"files scanned": res.FilesScanned, "files with markers": res.FilesWithMarkers,
		"markers": len(res.Markers), "changes": len(res.Changes), "problems": len(res.Problems),
		"policies used": len(used),
	}
	want := map[string]int{
		"files scanned": st.YAMLFiles, "files with markers": st.MarkedFiles,
		"markers": st.Markers, "changes": st.Changes, "problems": st.InvalidFiles,
		"policies used": st.Policies,
	}
	if diff := cmp.Diff(got, want); diff != "" {
		t.Errorf("setters.Apply disagrees with Stats (-got +want):\n%s", diff)
		for _, p := range res.Problems {
			t.Log(p)
		}
	}
}

func TestGenerateRefusesAFullFolder(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "keep.txt"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Generate(dir, Options{Files: 10}); err == nil {
		t.Fatal("Generate wrote into a folder that was not empty")
	}
}

func TestConfig(t *testing.T) {
	tests := []struct {
		host         string
		wantInsecure bool
	}{
		{"127.0.0.1:5000", true},
		{"localhost:5000", true},
		{"[::1]:5000", true},
		{"registry.example.com", false},
		{"ghcr.io:443", false},
	}
	for _, tt := range tests {
		t.Run(tt.host, func(t *testing.T) {
			opts := Options{Policies: 12, RegistryHost: tt.host}
			cfg, err := config.Parse(Config(opts), "imagebump.yaml")
			if err != nil {
				t.Fatalf("Config does not load: %v", err)
			}
			if got, want := len(cfg.Images), 12; got != want {
				t.Errorf("%d images, want %d", got, want)
			}
			gotInsecure := len(cfg.Registries) == 1 && cfg.Registries[0].Host == tt.host && cfg.Registries[0].Insecure
			if gotInsecure != tt.wantInsecure {
				t.Errorf("plain HTTP to %s: %v, want %v; registries: %+v", tt.host, gotInsecure, tt.wantInsecure, cfg.Registries)
			}
			for i, r := range Repositories(opts) {
				if got, want := cfg.Images[i].Repository, tt.host+"/"+r.Path; got != want {
					t.Errorf("image %d repository = %q, want %q", i, got, want)
				}
			}
		})
	}
}
