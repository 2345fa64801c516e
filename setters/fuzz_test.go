package setters

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"testing"

	"gopkg.in/yaml.v3"
)

// FuzzApply rewrites one-file inputs and checks that only marked scalars
// change, that the result reads as the input but for them, and that writing
// keeps the file mode. The policy apps:fuzz selects the fuzzed tag.
func FuzzApply(f *testing.F) {
	seeds, _ := filepath.Glob(filepath.Join(goldenDir, "*", "input", "*"))
	for _, s := range seeds {
		if b, err := os.ReadFile(s); err == nil {
			f.Add(b, "1.5.0")
		}
	}
	for _, s := range [][2]string{
		{"k: 1.4.2 # {\"$imagepolicy\": \"apps:fuzz:tag\"}\n", "1.10"},
		{"- &a 'x' # {\"$imagepolicy\": \"apps:fuzz\"}\n- *a\n", "it's"},
		{"a: \"\\\"\" # {\"$imagepolicy\": \"apps:fuzz:tag\"}\r\n", `a"\`},
		{"a:\n  b: x # {\"$imagepolicy\": \"apps:fuzz:tag\"}\n  c: [1]\n", "a: b #c"},
	} {
		f.Add([]byte(s[0]), s[1])
	}
	f.Fuzz(func(t *testing.T, src []byte, tag string) {
		images := maps.Clone(goldenImages)
		images["apps:fuzz"] = Image{Repository: "example.com/fuzz", Tag: tag}
		known := func(p string) bool { return p == "apps:fuzz" || goldenKnown(p) }
		out := rewrite("f.yaml", src, env{images: images, known: known})
		checkEdits(t, src, out)
		refs := References{}
		scanReferences(src, func(p string) { refs[p]++ })
		checkCovers(t, refs, out.markers)
		for _, p := range out.problems {
			// A verification failure means the splice or the quoting is
			// wrong: it must never happen.
			var ve *VerifyError
			if errors.As(p.Err, &ve) {
				t.Fatalf("verification failed: %v", p)
			}
		}

		// The same through the file system: the bytes match and the mode
		// stays.
		if !bytes.Contains(src, token) {
			return
		}
		dir := t.TempDir()
		p := filepath.Join(dir, "f.yaml")
		if err := os.WriteFile(p, src, 0o640); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, 0o640); err != nil {
			t.Fatal(err)
		}
		res, err := Apply(context.Background(), Options{Root: dir, Images: images, Known: known, Write: true, Workers: 1})
		if err != nil {
			t.Fatal(err)
		}
		want := src
		if out.out != nil {
			want = out.out
		}
		got, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("Apply wrote %q, rewrite computed %q", got, want)
		}
		if len(res.Changes) != len(out.changes) {
			t.Fatalf("Apply made %d changes, rewrite %d", len(res.Changes), len(out.changes))
		}
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o640 {
			t.Fatalf("mode changed to %v", fi.Mode())
		}
		entries, _ := os.ReadDir(dir)
		if len(entries) != 1 {
			t.Fatalf("left %d files behind", len(entries))
		}
	})
}

// checkEdits checks a rewrite outcome against its input: the output equals
// the input outside the edited spans, each span held the old value, and the
// output reads as the input but for the changed scalars.
func checkEdits(t *testing.T, src []byte, out outcome) {
	t.Helper()
	if out.out == nil {
		if len(out.changes) != 0 {
			t.Fatalf("%d changes without output", len(out.changes))
		}
		return
	}
	if len(out.changes) == 0 || len(out.changes) != len(out.edits) {
		t.Fatalf("output with %d changes and %d edits", len(out.changes), len(out.edits))
	}
	prev, pos := 0, 0
	changedLines := map[int]Change{}
	for _, ed := range out.edits {
		if ed.start < prev || ed.end < ed.start || ed.end > len(src) {
			t.Fatalf("edit span [%d,%d) out of order or range", ed.start, ed.end)
		}
		gap := src[prev:ed.start]
		if !bytes.Equal(out.out[pos:pos+len(gap)], gap) {
			t.Fatalf("bytes outside the marked scalars changed: %q became %q", gap, out.out[pos:pos+len(gap)])
		}
		pos += len(gap)
		if !bytes.HasPrefix(out.out[pos:], []byte(ed.repl)) {
			t.Fatalf("output lacks %q at %d", ed.repl, pos)
		}
		pos += len(ed.repl)
		old := src[ed.start:ed.end]
		for i := range old {
			if breakLen(old[i:]) > 0 {
				t.Fatalf("edited span %q crosses a line break", old)
			}
		}
		if v, ok := scalarValue(old, ed.node.Style); !ok || v != ed.change.Old {
			t.Fatalf("span %q reads as %q, want %q", old, v, ed.change.Old)
		}
		changedLines[ed.change.Line] = ed.change
		prev = ed.end
	}
	if !bytes.Equal(out.out[pos:], src[prev:]) {
		t.Fatalf("bytes after the last edit changed: %q became %q", src[prev:], out.out[pos:])
	}

	oldDocs, err := parseDocs(src)
	if err != nil {
		t.Fatalf("input with edits does not parse: %v", err)
	}
	newDocs, err := parseDocs(out.out)
	if err != nil {
		t.Fatalf("output does not parse: %v", err)
	}
	a, b := flatten(oldDocs), flatten(newDocs)
	if len(a) != len(b) {
		t.Fatalf("output has %d nodes, input %d", len(b), len(a))
	}
	changed := 0
	for i := range a {
		if a[i] == b[i] {
			continue
		}
		c, ok := changedLines[a[i].Line]
		x, y := a[i], b[i]
		x.Value, y.Value, x.Tag, y.Tag, x.Style, y.Style, x.Column, y.Column = "", "", "", "", 0, 0, 0, 0
		if !ok || x != y || x.Kind != yaml.ScalarNode {
			if ok && a[i].Line == b[i].Line && a[i].Column != b[i].Column && x == y {
				continue // a node after the edited scalar on its line moved
			}
			t.Fatalf("node %+v became %+v", a[i], b[i])
		}
		if a[i].Value == b[i].Value && a[i].Tag == b[i].Tag && a[i].Style == b[i].Style {
			continue
		}
		if a[i].Value != c.Old || b[i].Value != c.New || b[i].Tag != "!!str" {
			t.Fatalf("scalar %+v became %+v, want change %+v", a[i], b[i], c)
		}
		changed++
	}
	if changed != len(out.changes) {
		t.Fatalf("%d scalars changed, want %d", changed, len(out.changes))
	}
}

type flatNode struct {
	Kind                  yaml.Kind
	Style                 yaml.Style
	Tag, Value, Anchor    string
	Head, Comment, Foot   string
	Line, Column, Content int
}

// flatten lists the nodes of documents in order, not following aliases.
func flatten(docs []*yaml.Node) []flatNode {
	var out []flatNode
	var walk func(n *yaml.Node)
	walk = func(n *yaml.Node) {
		out = append(out, flatNode{n.Kind, n.Style, n.Tag, n.Value, n.Anchor, n.HeadComment, n.LineComment, n.FootComment, n.Line, n.Column, len(n.Content)})
		for _, c := range n.Content {
			walk(c)
		}
	}
	for _, d := range docs {
		walk(d)
	}
	return out
}

// TestFuzzSeedsHoldProperty runs the FuzzApply property over the golden inputs as a
// plain test, so it holds without -fuzz too.
func TestFuzzSeedsHoldProperty(t *testing.T) {
	e := env{images: goldenImages, known: goldenKnown}
	err := filepath.WalkDir(goldenDir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() || !candidate(d.Name()) {
			return err
		}
		src, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		t.Run(p, func(t *testing.T) { checkEdits(t, src, rewrite("f.yaml", src, e)) })
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// FuzzRender checks that a rendered value reads back as that string, in
// every style, followed by a comment, in a mapping and in a sequence.
func FuzzRender(f *testing.F) {
	for _, s := range []string{"1.4.2", "1.10", "on", "it's", `a"b\c`, "a: b", "a #b", "-x", "2024-01-02", "été", "~", "..."} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		if checkValue(v) != nil {
			return
		}
		for _, style := range []yaml.Style{0, yaml.SingleQuotedStyle, yaml.DoubleQuotedStyle} {
			text := render(v, style)
			for _, doc := range []string{"k: " + text + " # c\n", "- " + text + " # c\n", text + " # c\n"} {
				docs, err := parseDocs([]byte(doc))
				if err != nil {
					t.Fatalf("%q does not parse: %v", doc, err)
				}
				n := docs[0].Content[0]
				switch n.Kind {
				case yaml.MappingNode:
					n = n.Content[1]
				case yaml.SequenceNode:
					n = n.Content[0]
				}
				if n.Kind != yaml.ScalarNode || n.Value != v || n.Tag != "!!str" || n.LineComment != "# c" {
					t.Fatalf("%q reads as %v %s %q %q", doc, n.Kind, n.Tag, n.Value, n.LineComment)
				}
			}
		}
	})
}
