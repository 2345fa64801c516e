package setters

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestReferencedCoversApply checks, on every golden case, that Referenced
// names every policy whose markers Apply finds (the cycle asks registries
// only for those), and counts them at least as often.
func TestReferencedCoversApply(t *testing.T) {
	cases, err := os.ReadDir(goldenDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		if !c.IsDir() {
			continue
		}
		t.Run(c.Name(), func(t *testing.T) {
			root := filepath.Join(goldenDir, c.Name(), "input")
			refs, err := Referenced(context.Background(), Options{Root: root})
			if err != nil {
				t.Fatal(err)
			}
			res, err := Apply(context.Background(), Options{Root: root, Known: func(string) bool { return true }})
			if err != nil {
				t.Fatal(err)
			}
			checkCovers(t, refs, res.Markers)
		})
	}
}

// checkCovers fails the test when refs counts fewer markers of a policy
// than markers holds: the cycle asks registries only for the policies the
// reference scan finds.
func checkCovers(t *testing.T, refs References, markers []Marker) {
	t.Helper()
	found := References{}
	for _, m := range markers {
		found[m.Policy]++
	}
	for p, n := range found {
		if refs[p] < n {
			t.Errorf("the reference scan counts %d markers of %s, the parse found %d", refs[p], p, n)
		}
	}
}

func TestScanReferences(t *testing.T) {
	for _, tt := range []struct {
		name string
		src  string
		want References
	}{
		{"image", "image: a:1 # {\"$imagepolicy\": \"ns:app\"}\n", References{"ns:app": 1}},
		{"suffixes", "tag: 1 # {\"$imagepolicy\": \"ns:app:tag\"}\nname: a # {\"$imagepolicy\": \"ns:app:name\"}\n", References{"ns:app": 2}},
		{"hash in a quoted value", "x: \"a#b\" # {\"$imagepolicy\": \"ns:b\"}", References{"ns:b": 1}},
		{"crlf", "a: 1 # {\"$imagepolicy\": \"ns:c\"}\r\nb: 2 # {\"$imagepolicy\": \"ns:d\"}\r\n", References{"ns:c": 1, "ns:d": 1}},
		{"lone cr", "a: 1\rimage: r/a:1 # {\"$imagepolicy\": \"ns:f\"}\rb: 2\r", References{"ns:f": 1}},
		{"nel", "image: r/a:1 # {\"$imagepolicy\": \"ns:g\"}\u0085b: 2\n", References{"ns:g": 1}},
		{"line separator", "a: 1\u2028image: r/a:1 # {\"$imagepolicy\": \"ns:h\"}\u2028b: 2\n", References{"ns:h": 1}},
		{"paragraph separator", "image: r/a:1 # {\"$imagepolicy\": \"ns:i\"}\u2029b: 2\n", References{"ns:i": 1}},
		{"not a break", "image: r/a:1 # {\"$imagepolicy\": \"ns:j\"} \u00e9\n", References{}},
		{"malformed", "a: 1 # {\"$imagepolicy\": \"nonamespace\"}\n", References{}},
		{"text after the marker", "a: 1 # {\"$imagepolicy\": \"ns:e\"} #note\n", References{}},
		{"no comment", "a: \"$imagepolicy\"\n", References{}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := References{}
			scanReferences([]byte(tt.src), func(p string) { got[p]++ })
			if diff := cmp.Diff(got, tt.want); diff != "" {
				t.Errorf("scanReferences (-got +want):\n%s", diff)
			}
		})
	}
}

// TestOnReference checks that the scans report every marker comment as
// they find it: Referenced, and an Index's Scan both when it reads the
// files and when it keeps their entries unread.
func TestOnReference(t *testing.T) {
	root := t.TempDir()
	files := map[string]string{
		"a.yaml":     "image: r/a:1 # {\"$imagepolicy\": \"ns:a\"}\n",
		"b/c.yaml":   "tag: 1 # {\"$imagepolicy\": \"ns:a:tag\"}\nname: r/b # {\"$imagepolicy\": \"ns:b:name\"}\n",
		"d/e/f.yaml": "plain: 1\n",
		"g.txt":      "image: r/g:1 # {\"$imagepolicy\": \"ns:g\"}\n",
	}
	writeFiles(t, root, files)
	want := References{"ns:a": 2, "ns:b": 1}
	var mu sync.Mutex
	var got References
	opts := Options{Root: root, OnReference: func(p string) {
		mu.Lock()
		got[p]++
		mu.Unlock()
	}}

	got = References{}
	refs, err := Referenced(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Referenced reported (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(want, refs); diff != "" {
		t.Errorf("Referenced returned (-want +got):\n%s", diff)
	}

	trustClock(t)
	ix := NewIndex(ByStat, opts)
	for _, scan := range []string{"reading every file", "keeping the entries"} {
		got = References{}
		if err := ix.Scan(context.Background(), opts); err != nil {
			t.Fatal(err)
		}
		if read := len(ix.read) > 0; read != (scan == "reading every file") {
			t.Errorf("Index.Scan %s read files: %v", scan, read)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("Index.Scan %s reported (-want +got):\n%s", scan, diff)
		}
		if diff := cmp.Diff(want, ix.References()); diff != "" {
			t.Errorf("Index.References after %s (-want +got):\n%s", scan, diff)
		}
	}
}

// TestReferencedQuiet: the walk of Referenced logs nothing; the Apply that
// follows it gives the walk's warnings (a broken link), once.
func TestReferencedQuiet(t *testing.T) {
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "a.yaml"), []byte("image: a:1 # {\"$imagepolicy\": \"ns:a\"}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("nowhere.yaml", filepath.Join(root, "b.yaml")); err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	opts := Options{Root: root, Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))}
	if refs, err := Referenced(t.Context(), opts); err != nil || refs["ns:a"] != 1 {
		t.Fatalf("Referenced = %v, %v", refs, err)
	}
	if logs.Len() != 0 {
		t.Errorf("Referenced logged:\n%s", logs.String())
	}
	opts.Known = func(string) bool { return true }
	if _, err := Apply(t.Context(), opts); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(logs.String(), "broken symlink"); n != 1 {
		t.Errorf("Apply logged the broken link %d times, want once:\n%s", n, logs.String())
	}
}
