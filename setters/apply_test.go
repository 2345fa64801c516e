package setters

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sync/semaphore"
	"gopkg.in/yaml.v3"
)

var testImages = map[string]Image{"apps:app": {Repository: "ghcr.io/acme/app", Tag: "1.5.0"}}

func TestRewrite(t *testing.T) {
	const m = ` # {"$imagepolicy": "apps:app"}`
	const mt = ` # {"$imagepolicy": "apps:app:tag"}`
	for _, tc := range []struct {
		name, in, want string
	}{
		{"multibyte key", "ключ: ghcr.io/acme/app:1.4.2" + m + "\n", "ключ: ghcr.io/acme/app:1.5.0" + m + "\n"},
		{"multibyte before", "- {é: 1}\n- ü: ghcr.io/acme/app:1.4.2" + m + "\n", "- {é: 1}\n- ü: ghcr.io/acme/app:1.5.0" + m + "\n"},
		{"tab", "k:\tghcr.io/acme/app:1.4.2\t" + m + "\n", "k:\tghcr.io/acme/app:1.5.0\t" + m + "\n"},
		{"CR only", "a: b\rk: 1.4.2" + mt + "\rc: d\r", "a: b\rk: 1.5.0" + mt + "\rc: d\r"},
		{"line separator", "a: b\u2028k: 1.4.2" + mt + "\n", "a: b\u2028k: 1.5.0" + mt + "\n"},
		{"next line", "a: b\u0085k: 1.4.2" + mt + "\n", "a: b\u0085k: 1.5.0" + mt + "\n"},
		{"no final newline", "k: 1.4.2" + mt, "k: 1.5.0" + mt},
		{"trailing spaces", "k: 1.4.2" + mt + "   \n", "k: 1.5.0" + mt + "   \n"},
		{"anchor and tag", "k: &a !!str 1.4.2" + mt + "\nj: *a\n", "k: &a !!str 1.5.0" + mt + "\nj: *a\n"},
		{"tag and anchor", "k: !!str &a '1.4.2'" + mt + "\n", "k: !!str &a '1.5.0'" + mt + "\n"},
		{"root scalar", "1.4.2" + mt + "\n", "1.5.0" + mt + "\n"},
		{"complex key", "? k\n: 1.4.2" + mt + "\n", "? k\n: 1.5.0" + mt + "\n"},
		{"escaped quote", `k: "a\"b"` + mt + "\n", `k: "1.5.0"` + mt + "\n"},
		{"escaped backslash", `k: "a\\"` + mt + "\n", `k: "1.5.0"` + mt + "\n"},
		{"hash in value", "k: a#b" + mt + "\n", "k: 1.5.0" + mt + "\n"},
		{"null-looking old value", "k: ~" + mt + "\n", "k: 1.5.0" + mt + "\n"},
		{"numeric old value", "k: 1.4" + mt + "\n", "k: 1.5.0" + mt + "\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := rewrite("f.yaml", []byte(tc.in), env{images: testImages, known: func(string) bool { return true }})
			if len(out.problems) > 0 {
				t.Fatalf("problems: %v", out.problems)
			}
			if got := string(out.out); got != tc.want {
				t.Errorf("rewrite:\n got %q\nwant %q", got, tc.want)
			}
		})
	}
}

// TestValueFor: the value each kind of marker takes from a pick, and the
// picks that give it none. The bug it guards against: a policy resolved
// to a digest alone (no tag) refused, or written as "repo:@sha256:...",
// which no registry accepts.
func TestValueFor(t *testing.T) {
	const repo = "ghcr.io/acme/app"
	for _, tt := range []struct {
		name    string
		img     Image
		field   Field
		want    string
		wantErr string
	}{
		{"image: tag", Image{Repository: repo, Tag: "1.5.0"}, FieldImage, repo + ":1.5.0", ""},
		{"image: tag and digest", Image{Repository: repo, Tag: "1.5.0", Digest: testDigest}, FieldImage, repo + ":1.5.0@" + testDigest, ""},
		{"image: digest alone", Image{Repository: repo, Digest: testDigest}, FieldImage, repo + "@" + testDigest, ""},
		{"image: neither tag nor digest", Image{Repository: repo}, FieldImage, "", "resolved no tag"},
		{"image: no repository", Image{Tag: "1.5.0"}, FieldImage, "", "resolved no repository"},
		{"tag", Image{Repository: repo, Tag: "1.5.0", Digest: testDigest}, FieldTag, "1.5.0", ""},
		{"tag: digest alone", Image{Repository: repo, Digest: testDigest}, FieldTag, "", "resolved no tag"},
		{"name", Image{Repository: repo, Digest: testDigest}, FieldName, repo, ""},
		{"digest", Image{Repository: repo, Digest: testDigest}, FieldDigest, testDigest, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ValueFor(tt.img, "apps:app", tt.field)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Errorf("ValueFor(%+v, %q) = %q, %v; want an error with %q", tt.img, tt.field, got, err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Errorf("ValueFor(%+v, %q) = %q, %v; want %q", tt.img, tt.field, got, err, tt.want)
			}
		})
	}
}

func TestVerify(t *testing.T) {
	for _, tc := range []struct {
		name, old, new, value, want string
	}{
		{"good", "a: 1.4.2\nb: x\n", "a: 1.5.0\nb: x\n", "1.5.0", ""},
		{"other value changed", "a: 1.4.2\nb: x\n", "a: 1.5.0\nb: y\n", "1.5.0", `the value "x" changed to "y"`},
		{"not a string", "a: 1.4.2\n", "a: 1.10\n", "1.10", "reads as !!float"},
		{"wrong value", "a: 1.4.2\n", "a: 1.5.1\n", "1.5.0", `reads as "1.5.1"`},
		{"comment changed", "a: 1.4.2 # x\n", "a: 1.5.0 # y\n", "1.5.0", "comment changed"},
		{"structure changed", "a: 1.4.2\n", "a: 1.5.0\nb: c\n", "1.5.0", "changed size"},
		{"line moved", "a: 1.4.2\nb: x\n", "a: 1.5.0\n\nb: x\n", "1.5.0", "moved to line 3"},
		{"document added", "a: 1.4.2\n", "a: 1.5.0\n---\nb: x\n", "1.5.0", "2 documents"},
		{"invalid", "a: 1.4.2\n", "a: [1.5.0\n", "1.5.0", "invalid YAML"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			docs, err := parseDocs([]byte(tc.old))
			if err != nil {
				t.Fatal(err)
			}
			node := docs[0].Content[0].Content[1]
			_, err = verify(docs, []byte(tc.new), []edit{{node: node, change: Change{New: tc.value}}})
			got := ""
			if err != nil {
				got = err.Error()
			}
			if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
				t.Errorf("verify = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestLineIndexOffset(t *testing.T) {
	src := []byte("\ufeffaé: b\r\nc: 1\u2028d: 2\n")
	ix := newLineIndex(src)
	for _, tc := range []struct{ line, col, want int }{
		{1, 1, 3}, {1, 2, 4}, {1, 3, 6}, {1, 5, 8}, {1, 6, 9}, {1, 7, -1},
		{2, 1, 11}, {3, 1, 18}, {3, 4, 21}, {4, 1, 23}, {5, 1, -1}, {0, 1, -1},
	} {
		if got := ix.offset(tc.line, tc.col); got != tc.want {
			t.Errorf("offset(%d, %d) = %d, want %d", tc.line, tc.col, got, tc.want)
		}
	}
	// Every node yaml.v3 reports starts at the offset we compute.
	var n yaml.Node
	if err := yaml.Unmarshal(src, &n); err != nil {
		t.Fatal(err)
	}
	k := n.Content[0].Content[0]
	if p := ix.offset(k.Line, k.Column); string(src[p:p+3]) != "aé" {
		t.Errorf("key at %d:%d is %q", k.Line, k.Column, src[p:])
	}
}

func TestApplyErrors(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file.yaml")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	for _, tc := range []struct {
		name string
		ctx  context.Context
		root string
		want string
	}{
		{"empty root", context.Background(), "", "no repository root"},
		{"missing root", context.Background(), filepath.Join(t.TempDir(), "missing"), "resolving repository root"},
		{"file root", context.Background(), file, "is not a directory"},
		{"cancelled", cancelled, t.TempDir(), "context canceled"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := Apply(tc.ctx, Options{Root: tc.root})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Apply = %v, %v; want error containing %q", res, err, tc.want)
			}
			if tc.ctx == cancelled && !errors.Is(err, context.Canceled) {
				t.Errorf("error %v is not context.Canceled", err)
			}
		})
	}
}

// writeRepo writes files (path -> content) under a new folder.
func writeRepo(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	writeFiles(t, dir, files)
	return dir
}

func TestApplyScanOnly(t *testing.T) {
	dir := writeRepo(t, map[string]string{
		"a.yaml":       "image: ghcr.io/acme/app:1.4.2 # {\"$imagepolicy\": \"apps:app\"}\ntag: 1.4.2 # {\"$imagepolicy\": \"apps:app:tag\"}\n",
		"b/c.yml":      "- web:v1 # {\"$imagepolicy\": \"apps:web\"}\n",
		"b/plain.yaml": "a: b\n",
		"notes.txt":    "x # {\"$imagepolicy\": \"apps:app\"}\n",
	})
	res, err := Apply(context.Background(), Options{Root: dir})
	if err != nil {
		t.Fatal(err)
	}
	wantMarkers := []Marker{
		{File: "a.yaml", Line: 1, Column: 8, Policy: "apps:app", Field: FieldImage, Value: "ghcr.io/acme/app:1.4.2"},
		{File: "a.yaml", Line: 2, Column: 6, Policy: "apps:app", Field: FieldTag, Value: "1.4.2"},
		{File: "b/c.yml", Line: 1, Column: 3, Policy: "apps:web", Field: FieldImage, Value: "web:v1"},
	}
	if diff := cmp.Diff(res.Markers, wantMarkers); diff != "" {
		t.Errorf("markers (-got +want):\n%s", diff)
	}
	wantProblems := []string{
		"a.yaml:1: unknown policy apps:app: no image policy of that name is configured",
		"a.yaml:2: unknown policy apps:app: no image policy of that name is configured",
		"b/c.yml:1: unknown policy apps:web: no image policy of that name is configured",
	}
	if diff := cmp.Diff(problemLines(res.Problems), wantProblems); diff != "" {
		t.Errorf("problems (-got +want):\n%s", diff)
	}
	for _, p := range res.Problems {
		var upe *UnknownPolicyError
		if !errors.As(p, &upe) || upe.Policy != p.Policy {
			t.Errorf("problem %v: not an UnknownPolicyError for %s", p, p.Policy)
		}
	}
	if res.FilesScanned != 3 || res.FilesWithMarkers != 2 || len(res.Changes) != 0 || len(res.FilesChanged) != 0 {
		t.Errorf("scanned %d, with markers %d, changes %v, files changed %v; want 3, 2, none, none",
			res.FilesScanned, res.FilesWithMarkers, res.Changes, res.FilesChanged)
	}
}

func TestApplyPaths(t *testing.T) {
	const marked = "image: ghcr.io/acme/app:1.4.2 # {\"$imagepolicy\": \"apps:app\"}\n"
	dir := writeRepo(t, map[string]string{
		"prod/a.yaml":    marked,
		"prod/sub/b.yml": marked,
		"staging/c.yaml": marked,
		"single.yaml":    marked,
		"notes.txt":      marked,
		".git/d.yaml":    marked,
	})
	res, err := Apply(context.Background(), Options{
		Root:   dir,
		Paths:  []string{"prod", "prod/sub", "single.yaml", "notes.txt", "../outside", "/etc", "missing", ".git", "single.yaml/x"},
		Images: testImages,
	})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(res.FilesChanged, []string{"prod/a.yaml", "prod/sub/b.yml", "single.yaml"}); diff != "" {
		t.Errorf("files changed (-got +want):\n%s", diff)
	}
	wantProblems := []string{
		"../outside: the path leads outside the repository root; not scanned",
		".git: the path is inside .git; not scanned",
		"/etc: the path leads outside the repository root; not scanned",
		"missing: the path does not exist: a paths entry (git.paths, or --paths) names a file or folder relative to the repository root",
		// Named by the file on the way, without the root's absolute path.
		"single.yaml/x: single.yaml is a file, not a folder: give the file itself, or a folder",
	}
	if diff := cmp.Diff(problemLines(res.Problems), wantProblems); diff != "" {
		t.Errorf("problems (-got +want):\n%s", diff)
	}
	if got := readTestFile(t, filepath.Join(dir, "staging/c.yaml")); got != marked {
		t.Errorf("staging/c.yaml outside Paths changed: %q", got)
	}
}

// genTree writes n marked and unmarked files in nested folders and returns
// the root.
func genTree(tb testing.TB, dir string, n int, markedEvery int) {
	tb.Helper()
	for i := range n {
		p := filepath.Join(dir, fmt.Sprintf("team%02d", i%17), fmt.Sprintf("app%03d", i%101), fmt.Sprintf("f%05d.yaml", i))
		var content string
		if i%markedEvery == 0 {
			content = fmt.Sprintf("apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: app%d\nspec:\n  template:\n    spec:\n      containers:\n        - name: app\n          image: ghcr.io/acme/app:1.4.%d # {\"$imagepolicy\": \"apps:app\"}\n        - name: web\n          image: docker.io/acme/web:v1 # {\"$imagepolicy\": \"apps:web:tag\"}\n", i, i%3)
		} else {
			content = fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm%d\ndata:\n  key: value\n  image: ghcr.io/acme/app:1.4.2\n", i)
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			tb.Fatal(err)
		}
	}
}

func TestApplyDeterministic(t *testing.T) {
	dir := t.TempDir()
	genTree(t, dir, 300, 7)
	var got []any
	for _, workers := range []int{1, 8} {
		var inside atomic.Int32
		calls := 0
		res, err := Apply(context.Background(), Options{
			Root: dir, Images: testImages, Workers: workers,
			Known: func(p string) bool { return p == "apps:app" },
			OnEdit: func(string, []byte, []byte) {
				if inside.Add(1) != 1 {
					t.Error("OnEdit calls overlap")
				}
				calls++
				inside.Add(-1)
			},
		})
		if err != nil {
			t.Fatal(err)
		}
		if calls != len(res.FilesChanged) {
			t.Errorf("workers %d: OnEdit called %d times for %d files", workers, calls, len(res.FilesChanged))
		}
		got = append(got, comparable(res))
	}
	if diff := cmp.Diff(got[0], got[1]); diff != "" {
		t.Errorf("1 worker and 8 workers differ (-1 +8):\n%s", diff)
	}
	res := got[0].(struct {
		Result
		Problems []string
	})
	// 43 of the 300 files are marked; each changes, and each names the
	// unknown apps:web.
	if len(res.FilesChanged) != 43 || len(res.Problems) != 43 || res.FilesScanned != 300 {
		t.Errorf("changed %d files with %d problems of %d scanned; want 43, 43, 300",
			len(res.FilesChanged), len(res.Problems), res.FilesScanned)
	}
}

func TestProblemError(t *testing.T) {
	err := errors.New("boom")
	for _, tc := range []struct {
		p    Problem
		want string
	}{
		{Problem{File: "a/b.yaml", Line: 3, Err: err}, "a/b.yaml:3: boom"},
		{Problem{File: "a/b.yaml", Err: err}, "a/b.yaml: boom"},
	} {
		if got := tc.p.Error(); got != tc.want {
			t.Errorf("Error() = %q, want %q", got, tc.want)
		}
		if !errors.Is(tc.p, err) {
			t.Errorf("%v does not unwrap to its Err", tc.p)
		}
	}
}

func TestWriteAtomic(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f.yaml")
	writeFile(t, p, "old\n")
	if err := os.Chmod(p, 0o600); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := writeAtomic(p, []byte("old\n"), []byte("new\n"), &buf); err != nil {
		t.Fatal(err)
	}
	if got := readTestFile(t, p); got != "new\n" {
		t.Errorf("content %q, want %q", got, "new\n")
	}
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600", fi.Mode().Perm())
	}

	// The file changed since it was read: it is left alone.
	err = writeAtomic(p, []byte("old\n"), []byte("newer\n"), &buf)
	if !errors.Is(err, ErrChanged) {
		t.Errorf("writeAtomic over a changed file = %v, want ErrChanged", err)
	}
	if got := readTestFile(t, p); got != "new\n" {
		t.Errorf("content %q, want %q", got, "new\n")
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 {
		t.Errorf("temporary files left behind: %v", entries)
	}
}

func TestApplySymlinkedFolder(t *testing.T) {
	const marked = "image: ghcr.io/acme/app:1.4.2 # {\"$imagepolicy\": \"apps:app\"}\n"
	dir := writeRepo(t, map[string]string{
		"base/app.yaml":    marked,
		"prod/own.yaml":    marked,
		"other/skip.yaml":  marked,
		".git/hidden.yaml": marked,
	})
	symlink(t, "../base", filepath.Join(dir, "prod", "base"))
	symlink(t, "../base", filepath.Join(dir, "prod", "again"))
	symlink(t, "../.git", filepath.Join(dir, "prod", "git"))
	symlink(t, "../.git/hidden.yaml", filepath.Join(dir, "prod", "hidden.yaml"))
	res, err := Apply(context.Background(), Options{Root: dir, Paths: []string{"prod"}, Images: testImages, Write: true})
	if err != nil {
		t.Fatal(err)
	}
	// The linked folder is walked once and its file reported by its real
	// path; nothing in .git is read.
	if diff := cmp.Diff(res.FilesChanged, []string{"base/app.yaml", "prod/own.yaml"}); diff != "" {
		t.Errorf("files changed (-got +want):\n%s", diff)
	}
	if len(res.Problems) != 0 || res.FilesScanned != 2 {
		t.Errorf("problems %v, scanned %d; want none, 2", res.Problems, res.FilesScanned)
	}
	for _, f := range []string{"other/skip.yaml", ".git/hidden.yaml"} {
		if got := readTestFile(t, filepath.Join(dir, f)); got != marked {
			t.Errorf("%s changed: %q", f, got)
		}
	}
	if fi, err := os.Lstat(filepath.Join(dir, "prod", "base")); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("prod/base is no longer a symlink (%v)", err)
	}
}

// TestParseBudget rewrites large marked files with more workers than the
// budget holds files, and checks that the bytes parsed at once never
// exceed parseBudget, that a file larger than the budget is still parsed
// (alone), and that every file is rewritten.
func TestParseBudget(t *testing.T) {
	// A budget of 64 KiB, and files of 27 KiB, one of 82 KiB.
	oldBudget, oldParsing := parseBudget, parsing
	parseBudget, parsing = 64<<10, semaphore.NewWeighted(64<<10)
	t.Cleanup(func() { parseBudget, parsing = oldBudget, oldParsing })
	dir := t.TempDir()
	filler := strings.Repeat("  k: v\n", (27<<10)/7)
	sizes := map[string]int{}
	for i := range 6 {
		name := fmt.Sprintf("big%d.yaml", i)
		body := "a:\n" + filler + "image: ghcr.io/acme/app:1.4.2 # {\"$imagepolicy\": \"apps:app\"}\n"
		if i == 0 {
			body = "a:\n" + strings.Repeat(filler, 3) + body[len("a:\n"):] // over the budget
		}
		sizes[name] = len(body)
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var inFlight, peak atomic.Int64
	onParse = func(n int64) {
		now := inFlight.Add(n)
		for p := peak.Load(); now > p && !peak.CompareAndSwap(p, now); p = peak.Load() {
		}
	}
	t.Cleanup(func() { onParse = nil })
	res, err := Apply(context.Background(), Options{Root: dir, Images: testImages, Write: true, Workers: 6, MaxFileSize: -1})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Changes) != 6 || len(res.Problems) != 0 {
		t.Fatalf("%d changes, problems %v; want one change in each of the 6 files", len(res.Changes), res.Problems)
	}
	if p := peak.Load(); p > parseBudget || p < int64(sizes["big1.yaml"]) {
		t.Errorf("at most %d bytes parsed at once, want between one file (%d) and the budget (%d)", p, sizes["big1.yaml"], parseBudget)
	}
	if inFlight.Load() != 0 {
		t.Errorf("%d bytes still held after the run", inFlight.Load())
	}
}
