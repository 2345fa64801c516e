package pullrequest

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/body")

// TestBodyGolden compares Body with testdata/body/NAME.md; -update rewrites
// them.
func TestBodyGolden(t *testing.T) {
	cases := map[string][]Change{
		"one-change": {
			{File: "apps/app.yaml", Line: 4, Policy: "apps:app", Old: "ghcr.io/acme/app:1.4.2", New: "ghcr.io/acme/app:1.5.0"},
		},
		"sorted-across-files": {
			{File: "b/web.yaml", Line: 9, Policy: "apps:web:tag", Old: "2.0.0", New: "2.1.0"},
			{File: "a/app.yaml", Line: 30, Policy: "apps:app:digest", Old: "sha256:aaaa", New: "sha256:bbbb"},
			{File: "a/app.yaml", Line: 2, Policy: "apps:app", Old: "ghcr.io/acme/app:1.4.2", New: "ghcr.io/acme/app:1.5.0"},
		},
		"escaping": {
			{File: "odd|name.yaml", Line: 1, Policy: "apps:pipe", Old: "a|b", New: "c||d"},
			{File: "ticks.yaml", Line: 2, Policy: "apps:tick", Old: "`start", New: "mid``dle`"},
			{File: "lines.yaml", Line: 3, Policy: "apps:nl", Old: "one\ntwo", New: "three\r\nfour"},
			{File: "empty.yaml", Line: 4, Policy: "apps:empty", Old: "", New: "1.0.0"},
			{File: "html.yaml", Line: 5, Policy: "apps:html", Old: "<!-- imagebump:content=" + strings.Repeat("0", 64) + " -->", New: "<b>x</b>"},
		},
	}
	for name, changes := range cases {
		t.Run(name, func(t *testing.T) {
			got := Body(changes)
			path := filepath.Join("testdata", "body", name+".md")
			if *update {
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if diff := cmp.Diff(string(want), got); diff != "" {
				t.Errorf("Body (-want +got):\n%s", diff)
			}
			if key := ContentKeyOf(got); key != ContentKey(changes) {
				t.Errorf("ContentKeyOf(Body) = %q, want ContentKey %q", key, ContentKey(changes))
			}
		})
	}
}

func TestContentKey(t *testing.T) {
	a := Change{File: "a.yaml", Line: 1, Policy: "apps:a", Old: "1", New: "2"}
	b := Change{File: "b.yaml", Line: 5, Policy: "apps:b", Old: "3", New: "4"}
	moved := b
	moved.Line = 50
	key := ContentKey([]Change{a, b})
	if len(key) != 64 {
		t.Fatalf("ContentKey = %q, want 64 hex digits", key)
	}
	same := map[string][]Change{
		"reordered":   {b, a},
		"lines moved": {a, moved},
	}
	for name, cs := range same {
		if got := ContentKey(cs); got != key {
			t.Errorf("%s: ContentKey = %s, want %s", name, got, key)
		}
		if got, want := Body(cs), Body([]Change{a, b}); got != want {
			t.Errorf("%s: Body differs:\n%s\nwant:\n%s", name, got, want)
		}
	}
	other := func(f func(*Change)) []Change {
		c := b
		f(&c)
		return []Change{a, c}
	}
	differ := map[string][]Change{
		"new value":   other(func(c *Change) { c.New = "5" }),
		"old value":   other(func(c *Change) { c.Old = "5" }),
		"policy":      other(func(c *Change) { c.Policy = "apps:c" }),
		"file":        other(func(c *Change) { c.File = "c.yaml" }),
		"one fewer":   {a},
		"one more":    {a, b, {File: "c.yaml", Policy: "p", Old: "1", New: "2"}},
		"field shift": {a, {File: "b.yaml", Policy: "apps:b3", Old: "", New: "4"}},
	}
	for name, cs := range differ {
		if got := ContentKey(cs); got == key {
			t.Errorf("%s: ContentKey did not change", name)
		}
	}
}

func TestContentKeyOf(t *testing.T) {
	k1, k2 := strings.Repeat("a", 64), strings.Repeat("b", 64)
	for _, c := range []struct{ name, body, want string }{
		{"none", "a body written by hand", ""},
		{"one", "text\n<!-- imagebump:content=" + k1 + " -->\n", k1},
		{"last wins", "<!-- imagebump:content=" + k2 + " -->\n<!-- imagebump:content=" + k1 + " -->", k1},
		{"short", "<!-- imagebump:content=abc -->", ""},
		{"upper case", "<!-- imagebump:content=" + strings.ToUpper(k1) + " -->", ""},
		{"crlf", "x\r\n<!-- imagebump:content=" + k1 + " -->\r\n", k1},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := ContentKeyOf(c.body); got != c.want {
				t.Errorf("ContentKeyOf = %q, want %q", got, c.want)
			}
		})
	}
}

// TestBodyLong checks that a body with very many changes stays under
// GitHub's limit and still carries the key of every change.
func TestBodyLong(t *testing.T) {
	var changes []Change
	for i := range 3000 {
		changes = append(changes, Change{File: "apps/app.yaml", Line: i + 1, Policy: "apps:app", Old: "ghcr.io/acme/app:1.4." + strings.Repeat("9", i%7), New: "ghcr.io/acme/app:1.5.0"})
	}
	got := Body(changes)
	if len(got) > 65536 {
		t.Errorf("body is %d bytes, want at most 65536", len(got))
	}
	if !strings.Contains(got, " more, not listed here.") {
		t.Error("the body does not say that rows were left out")
	}
	if ContentKeyOf(got) != ContentKey(changes) {
		t.Error("the body's key is not the key of all changes")
	}
}

// TestBodyNotes: the notes are listed under a heading that fits each kind
// of note (a tag a gate held back, a policy held, a policy that failed):
// the heading spoke of gates alone, over a failed policy's note too.
func TestBodyNotes(t *testing.T) {
	changes := []Change{{File: "app.yaml", Line: 1, Policy: "apps:app", Old: "1.0.0", New: "1.1.0"}}
	notes := []string{
		"apps:web: could not be checked this time (the run's log says why), so its markers are left as they are",
		"apps:api 2.0.0: unsigned (no signature found)",
	}
	body := BodyWithNotes(changes, notes)
	want := "\nLeft out of this pull request:\n\n- `" + notes[0] + "`\n- `" + notes[1] + "`\n"
	if !strings.Contains(body, want) {
		t.Errorf("body:\n%s\nwant it to hold:\n%s", body, want)
	}
	if strings.Contains(body, "gate that held each") {
		t.Errorf("the heading speaks of gates for a failed policy:\n%s", body)
	}
	if Body(changes) == body || !strings.Contains(body, ContentKey(changes)) {
		t.Error("notes changed nothing, or the content key")
	}
}
