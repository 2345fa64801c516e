package setters

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const fuzzMarker = `{"$imagepolicy": "apps:fuzz:tag"}`

func TestInsert(t *testing.T) {
	m := func(ref string) string { return `# {"$imagepolicy": "` + ref + `"}` }
	tests := []struct {
		name   string
		src    string
		ins    []Insertion
		want   string // "" means src unchanged
		status []InsertStatus
		errs   []string
	}{
		{
			name:   "plain value",
			src:    "image: ghcr.io/acme/app:1.0.0\n",
			ins:    []Insertion{{Line: 1, Column: 8, Value: "ghcr.io/acme/app:1.0.0", Policy: "apps:app"}},
			want:   "image: ghcr.io/acme/app:1.0.0 " + m("apps:app") + "\n",
			status: []InsertStatus{Inserted},
		},
		{
			name: "split fields, CRLF kept",
			src:  "image:\r\n  repository: ghcr.io/acme/app\r\n  tag: \"1.10\"\r\n",
			ins: []Insertion{
				{Line: 3, Column: 8, Value: "1.10", Policy: "apps:app", Field: FieldTag},
				{Line: 2, Column: 15, Value: "ghcr.io/acme/app", Policy: "apps:app", Field: FieldName},
			},
			want:   "image:\r\n  repository: ghcr.io/acme/app " + m("apps:app:name") + "\r\n  tag: \"1.10\" " + m("apps:app:tag") + "\r\n",
			status: []InsertStatus{Inserted, Inserted},
		},
		{
			name:   "single quotes with an escaped quote",
			src:    "- 'it''s:1'\n",
			ins:    []Insertion{{Line: 1, Column: 3, Value: "it's:1", Policy: "a:b"}},
			want:   "- 'it''s:1' " + m("a:b") + "\n",
			status: []InsertStatus{Inserted},
		},
		{
			name:   "trailing spaces stay",
			src:    "tag: 1.2.3  \t\nx: y\n",
			ins:    []Insertion{{Line: 1, Column: 6, Value: "1.2.3", Policy: "a:b", Field: FieldTag}},
			want:   "tag: 1.2.3  \t" + m("a:b:tag") + "\nx: y\n",
			status: []InsertStatus{Inserted},
		},
		{
			name:   "same marker present",
			src:    "image: a:1 " + m("a:b") + "\n",
			ins:    []Insertion{{Line: 1, Column: 8, Value: "a:1", Policy: "a:b"}},
			status: []InsertStatus{Present},
		},
		{
			name:   "same marker as a head comment",
			src:    "args:\n  " + m("a:b") + "\n  - a:1\n",
			ins:    []Insertion{{Line: 3, Column: 5, Value: "a:1", Policy: "a:b"}},
			status: []InsertStatus{Present},
		},
		{
			name:   "other marker",
			src:    "image: a:1 " + m("a:other") + "\n",
			ins:    []Insertion{{Line: 1, Column: 8, Value: "a:1", Policy: "a:b"}},
			status: []InsertStatus{Refused},
			errs:   []string{`marked already with {"$imagepolicy": "a:other"}`},
		},
		{
			name:   "a comment of its own",
			src:    "image: a:1 # pinned for CVE-1\n",
			ins:    []Insertion{{Line: 1, Column: 8, Value: "a:1", Policy: "a:b"}},
			status: []InsertStatus{Refused},
			errs:   []string{"has a comment already"},
		},
		{
			name:   "an empty comment is completed",
			src:    "image: a:1   ##\n",
			ins:    []Insertion{{Line: 1, Column: 8, Value: "a:1", Policy: "a:b"}},
			want:   "image: a:1   ## {\"$imagepolicy\": \"a:b\"}\n",
			status: []InsertStatus{Inserted},
		},
		{
			name:   "flow collection",
			src:    "c: {image: a:1}\n",
			ins:    []Insertion{{Line: 1, Column: 12, Value: "a:1", Policy: "a:b"}},
			status: []InsertStatus{Refused},
			errs:   []string{"flow collection"},
		},
		{
			name:   "block scalar",
			src:    "image: |\n  a:1\n",
			ins:    []Insertion{{Line: 1, Column: 8, Value: "a:1\n", Policy: "a:b"}},
			status: []InsertStatus{Refused},
			errs:   []string{"block scalar"},
		},
		{
			name:   "mapping key",
			src:    "a:1: x\n",
			ins:    []Insertion{{Line: 1, Column: 1, Value: "a:1", Policy: "a:b"}},
			status: []InsertStatus{Refused},
			errs:   []string{"mapping key"},
		},
		{
			name:   "multi-line plain scalar",
			src:    "image: a\n  b\n",
			ins:    []Insertion{{Line: 1, Column: 8, Value: "a b", Policy: "a:b"}},
			status: []InsertStatus{Refused},
			errs:   []string{"spans several lines"},
		},
		{
			name:   "value differs",
			src:    "image: a:1\n",
			ins:    []Insertion{{Line: 1, Column: 8, Value: "a:2", Policy: "a:b"}},
			status: []InsertStatus{Refused},
			errs:   []string{`no scalar "a:2"`},
		},
		{
			name:   "anchor, not alias",
			src:    "x: &img a:1\ny: *img\n",
			ins:    []Insertion{{Line: 1, Column: 4, Value: "a:1", Policy: "a:b"}},
			want:   "x: &img a:1 " + m("a:b") + "\ny: *img\n",
			status: []InsertStatus{Inserted},
		},
		{
			name: "multi-document, root list, BOM",
			src:  "\uFEFF- a:1\n---\n- - b:2\n...\n",
			ins: []Insertion{
				{Line: 1, Column: 3, Value: "a:1", Policy: "a:b"},
				{Line: 3, Column: 5, Value: "b:2", Policy: "a:c"},
			},
			want:   "\uFEFF- a:1 " + m("a:b") + "\n---\n- - b:2 " + m("a:c") + "\n...\n",
			status: []InsertStatus{Inserted, Inserted},
		},
		{
			name: "twice on one value",
			src:  "image: a:1\n",
			ins: []Insertion{
				{Line: 1, Column: 8, Value: "a:1", Policy: "a:b"},
				{Line: 1, Column: 8, Value: "a:1", Policy: "a:b"},
				{Line: 1, Column: 8, Value: "a:1", Policy: "a:c"},
			},
			want:   "image: a:1 " + m("a:b") + "\n",
			status: []InsertStatus{Inserted, Present, Refused},
			errs:   []string{"", "", "another insertion"},
		},
		{
			name:   "bad policy reference",
			src:    "image: a:1\n",
			ins:    []Insertion{{Line: 1, Column: 8, Value: "a:1", Policy: "nonamespace"}},
			status: []InsertStatus{Refused},
			errs:   []string{"NAMESPACE:NAME"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, res, err := Insert([]byte(tt.src), tt.ins)
			if err != nil {
				t.Fatal(err)
			}
			want := tt.want
			if want == "" {
				want = tt.src
			}
			if diff := cmp.Diff(string(out), want); diff != "" {
				t.Errorf("output (-got +want):\n%s", diff)
			}
			var status []InsertStatus
			for i, r := range res {
				status = append(status, r.Status)
				if i < len(tt.errs) && tt.errs[i] != "" && (r.Err == nil || !strings.Contains(r.Err.Error(), tt.errs[i])) {
					t.Errorf("result %d: error %v, want one containing %q", i, r.Err, tt.errs[i])
				}
				if r.Status != Refused && r.Err != nil {
					t.Errorf("result %d: %v with error %v", i, r.Status, r.Err)
				}
			}
			if diff := cmp.Diff(status, tt.status); diff != "" {
				t.Errorf("statuses (-got +want):\n%s", diff)
			}
			// Idempotent: the output again changes nothing.
			again, res2, err := Insert(out, tt.ins)
			if err != nil || !bytes.Equal(again, out) {
				t.Errorf("inserting again changed the file (%v):\n%s", err, again)
			}
			for i, r := range res2 {
				if r.Status == Inserted {
					t.Errorf("result %d inserted again", i)
				}
			}
		})
	}
}

func TestInsertInvalidYAML(t *testing.T) {
	_, _, err := Insert([]byte("a: [\n"), []Insertion{{Line: 1, Column: 1, Value: "a", Policy: "a:b"}})
	var se *SyntaxError
	if !errors.As(err, &se) {
		t.Fatalf("error %v, want a *SyntaxError", err)
	}
}

// valueScalars lists the insertions that would mark every value scalar of
// src that sits on one line, for the fuzz target.
func valueScalars(src []byte) []Insertion {
	docs, err := parseDocs(src)
	if err != nil {
		return nil
	}
	var out []Insertion
	for pos, s := range indexScalars(docs) {
		if s.value {
			out = append(out, Insertion{Line: pos[0], Column: pos[1], Value: s.n.Value, Policy: "apps:fuzz", Field: FieldTag})
		}
	}
	slices.SortFunc(out, func(a, b Insertion) int { return a.Line*1000 + a.Column - b.Line*1000 - b.Column })
	return out
}

// FuzzInsert marks every value of the input and checks the invariant: the
// output holds the input's bytes with only marker comments added; it reads
// as the same tree, comments aside; Apply (and so validate) finds a marker
// naming the policy on each value marked, and no problem there; inserting
// again changes nothing; and writing keeps the mode.
func FuzzInsert(f *testing.F) {
	for _, dir := range []string{goldenDir, filepath.Join("..", "testdata", "init")} {
		_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err == nil && d.Type().IsRegular() && candidate(d.Name()) {
				if b, err := os.ReadFile(p); err == nil {
					f.Add(b)
				}
			}
			return nil
		})
	}
	for _, s := range []string{
		"a: b\n",
		"- x # c\n- y #\n- z\n",
		"a:\n  b: x\n# top\nc: 1\n",
		"k: &a 'x'\nl: *a\n",
		"a: \"q\" \r\nb:\r\n  - c\r\n",
		"a: b\n  # foot\n",
		"? a\n: b\n",
		"a: !!str b\n",
		// Found by fuzzing: lone CRs make one editor line of two YAML
		// lines, one with a comment that mentions the marker key, and
		// one with a misspelt marker in a file that had no marker text.
		"      0: 0\r      0: #0\"$imagepolicy\"",
		"0: 0\n0: 0\r0: 00\r0: #0000000000\r0000000: 0 #{$imAgepoliCY",
		" 000000: 0\r#{$imAgepoliCY0",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		ins := valueScalars(src)
		if len(ins) == 0 || len(ins) > 64 {
			return
		}
		out, res, err := Insert(src, ins)
		if err != nil {
			t.Fatalf("Insert failed on input that parses: %v", err)
		}
		inserted := 0
		for _, r := range res {
			if r.Status == Inserted {
				inserted++
			}
		}
		checkOnlyMarkersAdded(t, src, out, inserted)
		checkSameTree(t, src, out)
		checkMarkersRead(t, out, res)

		again, res2, err := Insert(out, ins)
		if err != nil || !bytes.Equal(again, out) {
			t.Fatalf("inserting again changed the file (%v)", err)
		}
		for i, r := range res2 {
			if r.Status == Inserted || (res[i].Status == Inserted && r.Status != Present) {
				t.Fatalf("insertion %d: %v then %v (%v)", i, res[i].Status, r.Status, r.Err)
			}
		}

		if inserted == 0 {
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
		known := func(p string) bool { return p == "apps:fuzz" }
		// The input's own problems (a comment that reads as a malformed
		// marker, say) are there before any insertion: not the insertion's.
		// A file without the marker text is read for them too (NearMisses):
		// once marked, it is read.
		before, err := Apply(context.Background(), Options{Root: dir, Known: known, Workers: 1, NearMisses: true})
		if err != nil {
			t.Fatal(err)
		}
		had := map[string]bool{}
		for _, p := range before.Problems {
			had[p.Error()] = true
		}
		problems, err := WriteFiles(context.Background(), dir, []FileEdit{{File: "f.yaml", Before: src, After: out}})
		if err != nil || len(problems) > 0 {
			t.Fatalf("WriteFiles: %v %v", err, problems)
		}
		got, err := os.ReadFile(p)
		if err != nil || !bytes.Equal(got, out) {
			t.Fatalf("WriteFiles wrote %q (%v)", got, err)
		}
		if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != 0o640 {
			t.Fatalf("mode not kept: %v %v", fi.Mode(), err)
		}
		res3, err := Apply(context.Background(), Options{Root: dir, Known: known, Workers: 1})
		if err != nil {
			t.Fatal(err)
		}
		if len(res3.Markers) < inserted {
			t.Fatalf("Apply found %d markers, %d were inserted", len(res3.Markers), inserted)
		}
		// validate (Apply with the policy known) accepts every marker put.
		for _, r := range res {
			if r.Status != Inserted {
				continue
			}
			for _, p := range res3.Problems {
				// A marker already there for another policy may share the
				// editor's line (a file whose breaks are lone CRs is one
				// line to an editor): its problems are not the insertion's.
				if p.Line == EditorLine(out, r.Line) && (p.Policy == "" || p.Policy == "apps:fuzz") && !had[p.Error()] {
					t.Fatalf("validate reports a problem on a marked line: %v", p)
				}
			}
		}
	})
}

// checkOnlyMarkersAdded checks that out is src with n marker comments
// added, and nothing else: src must align with out where out's other bytes
// are whole markers (" # {...}", or " {...}" completing an empty comment).
func checkOnlyMarkersAdded(t *testing.T, src, out []byte, n int) {
	t.Helper()
	adds := [][]byte{[]byte(" # " + fuzzMarker), []byte(" " + fuzzMarker), []byte("# " + fuzzMarker)}
	// reach holds, at input offset i, the offsets d (out = i+d) reached
	// by matching bytes and skipping markers.
	reach := map[int]bool{0: true}
	for i := 0; ; i++ {
		for grew := true; grew; {
			grew = false
			for d := range reach {
				for _, a := range adds {
					if bytes.HasPrefix(out[min(i+d, len(out)):], a) && !reach[d+len(a)] {
						reach[d+len(a)] = true
						grew = true
					}
				}
			}
		}
		if i == len(src) {
			break
		}
		next := map[int]bool{}
		for d := range reach {
			if j := i + d; j < len(out) && out[j] == src[i] {
				next[d] = true
			}
		}
		if len(next) == 0 {
			t.Fatalf("output differs from input at byte %d beyond an added marker:\ninput  %q\noutput %q", i, src, out)
		}
		reach = next
	}
	extra := len(out) - len(src)
	if !reach[extra] {
		t.Fatalf("output has bytes beyond the input and its markers:\ninput  %q\noutput %q", src, out)
	}
	// extra is the length of n markers of the three kinds.
	ok := false
	for a := 0; a <= n; a++ {
		for b := 0; a+b <= n; b++ {
			if a*len(adds[0])+b*len(adds[1])+(n-a-b)*len(adds[2]) == extra {
				ok = true
			}
		}
	}
	if !ok {
		t.Fatalf("%d bytes added for %d markers", extra, n)
	}
}

// checkSameTree checks that out parses to src's tree, comments aside.
func checkSameTree(t *testing.T, src, out []byte) {
	t.Helper()
	a, err := parseDocs(src)
	if err != nil {
		t.Fatal(err)
	}
	b, err := parseDocs(out)
	if err != nil {
		t.Fatalf("output does not parse: %v", err)
	}
	fa, fb := flatten(a), flatten(b)
	if len(fa) != len(fb) {
		t.Fatalf("output has %d nodes, input %d", len(fb), len(fa))
	}
	for i := range fa {
		x, y := fa[i], fb[i]
		x.Head, x.Comment, x.Foot, y.Head, y.Comment, y.Foot = "", "", "", "", "", ""
		if x != y {
			t.Fatalf("node %+v became %+v", fa[i], fb[i])
		}
	}
}

// checkMarkersRead checks that Apply's reading of out finds each inserted
// or present marker on its value, with no problem on its line.
func checkMarkersRead(t *testing.T, out []byte, res []InsertResult) {
	t.Helper()
	got := rewriteLines("f.yaml", out, env{known: func(p string) bool { return p == "apps:fuzz" }})
	for _, r := range res {
		if r.Status == Refused {
			continue
		}
		found := false
		for _, m := range got.markers {
			if m.Line == r.Line && m.Column == r.Column && m.Policy == r.Policy && m.Field == r.Field {
				found = true
			}
		}
		if !found {
			t.Fatalf("no marker read at %d:%d after %v", r.Line, r.Column, r.Status)
		}
		for _, p := range got.problems {
			if p.Line == r.Line {
				t.Fatalf("problem on a marked line: %v", p)
			}
		}
	}
}

// TestInsertSeedsHoldProperty runs the FuzzInsert property over the golden
// inputs as a plain test.
func TestInsertSeedsHoldProperty(t *testing.T) {
	for _, dir := range []string{goldenDir, filepath.Join("..", "testdata", "init")} {
		err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil || !d.Type().IsRegular() || !candidate(d.Name()) {
				return err
			}
			src, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			t.Run(p, func(t *testing.T) {
				ins := valueScalars(src)
				out, res, err := Insert(src, ins)
				if err != nil {
					var se *SyntaxError
					if errors.As(err, &se) {
						return
					}
					t.Fatal(err)
				}
				inserted := 0
				for _, r := range res {
					if r.Status == Inserted {
						inserted++
					}
				}
				checkOnlyMarkersAdded(t, src, out, inserted)
				checkSameTree(t, src, out)
				checkMarkersRead(t, out, res)
			})
			return nil
		})
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			t.Fatal(err)
		}
	}
}

func TestWalk(t *testing.T) {
	root := t.TempDir()
	writeFile(t, filepath.Join(root, "a.yaml"), "a: 1\n")
	writeFile(t, filepath.Join(root, "sub", "Kustomization"), "images: []\n")
	writeFile(t, filepath.Join(root, "sub", "notes.txt"), "x\n")
	writeFile(t, filepath.Join(root, ".git", "config.yaml"), "a: 1\n")
	writeFile(t, filepath.Join(root, "big.yml"), strings.Repeat("#", 100)+"\n")
	outside := t.TempDir()
	writeFile(t, filepath.Join(outside, "o.yaml"), "o: 1\n")
	symlink(t, filepath.Join(outside, "o.yaml"), filepath.Join(root, "escape.yaml"))

	var got []string
	problems, err := Walk(context.Background(), Options{Root: root, MaxFileSize: 50}, func(file string, src []byte) error {
		got = append(got, file+"="+string(src))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(got)
	if diff := cmp.Diff(got, []string{"a.yaml=a: 1\n", "sub/Kustomization=images: []\n"}); diff != "" {
		t.Errorf("files (-got +want):\n%s", diff)
	}
	var msgs []string
	for _, p := range problems {
		msgs = append(msgs, p.Error())
	}
	if len(msgs) != 2 || !strings.Contains(msgs[0], "big.yml: the file is 101 bytes, over the limit") || !strings.Contains(msgs[1], "escape.yaml: the symlink leads outside") {
		t.Errorf("problems: %q", msgs)
	}

	stop := errors.New("stop")
	if _, err := Walk(context.Background(), Options{Root: root}, func(string, []byte) error { return stop }); !errors.Is(err, stop) {
		t.Errorf("Walk returned %v, want fn's error", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Walk(ctx, Options{Root: root}, func(string, []byte) error { return nil }); !errors.Is(err, context.Canceled) {
		t.Errorf("Walk with a cancelled ctx returned %v", err)
	}
}

func TestWriteFiles(t *testing.T) {
	root := t.TempDir()
	writeFile(t, filepath.Join(root, "a.yaml"), "a: 1\n")
	if err := os.Chmod(filepath.Join(root, "a.yaml"), 0o600); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(root, "changed.yaml"), "now\n")
	writeFile(t, filepath.Join(root, "exists.yaml"), "x\n")
	outside := t.TempDir()
	symlink(t, outside, filepath.Join(root, "out"))

	problems, err := WriteFiles(context.Background(), root, []FileEdit{
		{File: "a.yaml", Before: []byte("a: 1\n"), After: []byte("a: 1 # c\n")},
		{File: "new/../new.yaml", After: []byte("n: 1\n")},
		{File: "changed.yaml", Before: []byte("then\n"), After: []byte("later\n")},
		{File: "exists.yaml", After: []byte("y\n")},
		{File: "out/x.yaml", After: []byte("x\n")},
		{File: "../x.yaml", After: []byte("x\n")},
		{File: ".git/x.yaml", After: []byte("x\n")},
	})
	if err != nil {
		t.Fatal(err)
	}
	var msgs []string
	for _, p := range problems {
		msgs = append(msgs, p.Error())
	}
	for _, want := range []string{"../x.yaml: writing file: the path leads outside", ".git/x.yaml: writing file: the path is inside .git", "changed.yaml: writing file: the file changed", "exists.yaml: writing file: exists.yaml exists already", "out/x.yaml: writing file: the path leads outside"} {
		if !slices.ContainsFunc(msgs, func(m string) bool { return strings.HasPrefix(m, want) }) {
			t.Errorf("no problem %q in %q", want, msgs)
		}
	}
	if len(msgs) != 5 {
		t.Errorf("%d problems, want 5: %q", len(msgs), msgs)
	}
	for name, want := range map[string]string{"a.yaml": "a: 1 # c\n", "new.yaml": "n: 1\n", "changed.yaml": "now\n", "exists.yaml": "x\n"} {
		if got := readTestFile(t, filepath.Join(root, name)); got != want {
			t.Errorf("%s = %q, want %q", name, got, want)
		}
	}
	if fi, _ := os.Stat(filepath.Join(root, "a.yaml")); fi.Mode().Perm() != 0o600 {
		t.Errorf("a.yaml mode %v, want 0600", fi.Mode().Perm())
	}
	if fi, _ := os.Stat(filepath.Join(root, "new.yaml")); fi.Mode().Perm() != NewFileMode {
		t.Errorf("new.yaml mode %v, want %v", fi.Mode().Perm(), NewFileMode)
	}
	if entries, _ := os.ReadDir(outside); len(entries) != 0 {
		t.Errorf("wrote outside the root: %v", entries)
	}
	all, _ := os.ReadDir(root)
	for _, e := range all {
		if staleTemp(e.Name()) {
			t.Errorf("left %s behind", e.Name())
		}
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := WriteFiles(ctx, root, []FileEdit{{File: "a.yaml", Before: []byte("a: 1 # c\n"), After: []byte("z\n")}}); !errors.Is(err, context.Canceled) {
		t.Errorf("WriteFiles with a cancelled ctx returned %v", err)
	}
	if got := readTestFile(t, filepath.Join(root, "a.yaml")); got != "a: 1 # c\n" {
		t.Errorf("a cancelled WriteFiles wrote %q", got)
	}
}
