package setters

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestNearMisses: a file without the marker text is skipped, as Flux skips
// it, so a marker misspelt in a file with no other marker did nothing and
// said nothing. With NearMisses (validate), the comments there meant as
// markers are reported, and nothing else about such a file; nothing is
// changed, even with an image to write and Write set.
func TestNearMisses(t *testing.T) {
	files := map[string]string{
		"cased.yaml":    "image: ghcr.io/acme/app:1.4.2 # {\"$imagePolicy\": \"apps:app\"}\n",
		"unquoted.yaml": "spec:\n  tag: 1.4.2 # {$imagepolicy: apps:app:tag}\n",
		"crlf.yaml":     "a: b\r\nimage: app:1 #{\"$ImagePolicy\":\"apps:app\"}\r\n",
		// Mentions that are no marker, in files that are or are not YAML.
		"prose.yaml":  "# see the $ImagePolicy docs\na: b # about $IMAGEPOLICY\n",
		"string.yaml": "note: \"$ImagePolicy\"\n",
		"broken.yaml": "a: [unclosed # {\"$imagePolicy\": \"apps:app\"}\n",
		"shell.yaml":  "run: echo ${HOME} $PATH $\n",
		// Meant as a marker, where no marker applies.
		"alone.yaml": "a: b\n# {\"$imagePolicy\": \"apps:app\"}\n",
		// A file with the marker text is read as ever: its misspelt
		// marker was reported before too.
		"mixed.yaml": "a: app:1 # {\"$imagepolicy\": \"apps:app\"}\nb: app:1 # {\"$imagePolicy\": \"apps:app\"}\n",
	}
	images := map[string]Image{"apps:app": {Repository: "ghcr.io/acme/app", Tag: "1.5.0"}}
	for _, tt := range []struct {
		name       string
		nearMisses bool
		want       []string
	}{
		{"without NearMisses", false, []string{
			`mixed.yaml:2: malformed marker {"$imagePolicy": "apps:app"}: unknown key "$imagePolicy" (the key is "$imagepolicy")`,
		}},
		{"with NearMisses", true, []string{
			"alone.yaml:2: " + errNoScalar.Error(),
			`cased.yaml:1: malformed marker {"$imagePolicy": "apps:app"}: unknown key "$imagePolicy" (the key is "$imagepolicy")`,
			`crlf.yaml:2: malformed marker {"$ImagePolicy":"apps:app"}: unknown key "$ImagePolicy" (the key is "$imagepolicy")`,
			`mixed.yaml:2: malformed marker {"$imagePolicy": "apps:app"}: unknown key "$imagePolicy" (the key is "$imagepolicy")`,
			`unquoted.yaml:2: malformed marker {$imagepolicy: apps:app:tag}: invalid JSON: invalid character '$'`,
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := writeRepo(t, files)
			res, err := Apply(context.Background(), Options{Root: dir, Images: images, Write: true, NearMisses: tt.nearMisses})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(problemLines(res.Problems), tt.want); diff != "" {
				t.Errorf("problems (-got +want):\n%s", diff)
			}
			if len(res.Markers) != 1 || res.Markers[0].File != "mixed.yaml" || res.FilesWithMarkers != 1 {
				t.Errorf("markers %v in %d files; want mixed.yaml's alone", res.Markers, res.FilesWithMarkers)
			}
			for name, before := range files {
				got, err := os.ReadFile(filepath.Join(dir, name))
				if err != nil {
					t.Fatal(err)
				}
				if name != "mixed.yaml" && string(got) != before {
					t.Errorf("%s changed: %q", name, got)
				}
			}
		})
	}
}

func TestNearMiss(t *testing.T) {
	for _, tt := range []struct {
		src  string
		want bool
	}{
		{"", false},
		{"$", false},
		{"$imagepolic", false},
		{"$imagepolicy", true},
		{"x: $IMAGEPOLICY", true},
		{"$$ImagePolicy", true},
		{"$ imagepolicy", false},
		{"imagepolicy", false},
		{strings.Repeat("$", 100) + "imagePolicy", true},
		{"$imagepolic\u0079", true},
		{"${imagepolicy}", false},
	} {
		if got := nearMiss([]byte(tt.src)); got != tt.want {
			t.Errorf("nearMiss(%q) = %v, want %v", tt.src, got, tt.want)
		}
	}
}

// TestElsewhere: with NearMisses, files that are never scanned by their
// names (a Dockerfile, a .json, a Helm template) but mention $imagepolicy
// are listed at their first mention, outside Problems, and left alone;
// prose (.md), binary files, files over the size limit, files that do not
// mention it and YAML files are not listed. Without NearMisses none is
// read.
func TestElsewhere(t *testing.T) {
	files := map[string]string{
		"app/Dockerfile":                "FROM alpine\nFROM ghcr.io/acme/app:1.4.2 # {\"$imagepolicy\": \"apps:app\"}\n",
		"app/values.json":               "{\"image\": \"app:1\", \"$ImagePolicy\": \"apps:app\"}\n",
		"chart/templates/d.yaml.gotmpl": "a: b\n\nimage: {{ .img }} # {\"$imagepolicy\": \"apps:app\"}\n",
		"README.md":                     "Write # {\"$imagepolicy\": \"ns:name\"} after the image.\n",
		"docs/notes.TXT":                "$imagepolicy\n",
		"bin/blob":                      "\x00\x01$imagepolicy\n",
		"big.json":                      strings.Repeat(" ", 200) + "$imagepolicy\n",
		"plain.json":                    "{\"image\": \"app:1\"}\n",
		"d.yaml":                        "image: ghcr.io/acme/app:1.4.2 # {\"$imagepolicy\": \"apps:app\"}\n",
	}
	images := map[string]Image{"apps:app": {Repository: "ghcr.io/acme/app", Tag: "1.5.0"}}
	for _, tt := range []struct {
		name       string
		nearMisses bool
		want       []string
	}{
		{"without NearMisses", false, nil},
		{"with NearMisses", true, []string{
			"app/Dockerfile:2: " + ErrNotScanned.Error(),
			"app/values.json:1: " + ErrNotScanned.Error(),
			"chart/templates/d.yaml.gotmpl:3: " + ErrNotScanned.Error(),
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := writeRepo(t, files)
			res, err := Apply(context.Background(), Options{Root: dir, Images: images, Write: true, NearMisses: tt.nearMisses, MaxFileSize: 100})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(problemLines(res.Elsewhere), tt.want); diff != "" {
				t.Errorf("elsewhere (-got +want):\n%s", diff)
			}
			if len(res.Problems) != 0 || res.FilesScanned != 1 || len(res.Changes) != 1 {
				t.Errorf("problems %v, %d files scanned, changes %v; want d.yaml's change alone", res.Problems, res.FilesScanned, res.Changes)
			}
			for name, before := range files {
				got, err := os.ReadFile(filepath.Join(dir, name))
				if err != nil {
					t.Fatal(err)
				}
				if name != "d.yaml" && string(got) != before {
					t.Errorf("%s changed: %q", name, got)
				}
			}
		})
	}
}
