package setters

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/imagebump/imagebump/internal/testkit/ci"
)

const hardenedMarker = "image: reg.example/app:1.0.0 # {\"$imagepolicy\": \"ns:app\"}\n"

var hardenedImages = map[string]Image{"ns:app": {Repository: "reg.example/app", Tag: "2.0.0"}}

func TestRootInsideGitRefused(t *testing.T) {
	root := t.TempDir()
	gitDir := filepath.Join(root, ".git", "refs")
	if err := os.MkdirAll(gitDir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{filepath.Join(root, ".git"), gitDir} {
		_, err := Apply(context.Background(), Options{Root: dir, Images: hardenedImages, Write: true})
		if err == nil || !strings.Contains(err.Error(), "inside a .git folder") {
			t.Errorf("Apply(root %s) = %v, want a refusal", dir, err)
		}
		if _, err := Referenced(context.Background(), Options{Root: dir}); err == nil {
			t.Errorf("Referenced(root %s) accepted a root inside .git", dir)
		}
	}
}

func TestPathsEntrySymlinkOutsideIsAProblem(t *testing.T) {
	outside := t.TempDir()
	writeFile(t, filepath.Join(outside, "app.yaml"), hardenedMarker)
	root := t.TempDir()
	if err := os.Symlink(outside, filepath.Join(root, "clusters")); err != nil {
		t.Fatal(err)
	}
	res, err := Apply(context.Background(), Options{Root: root, Paths: []string{"clusters"}, Images: hardenedImages, Write: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Problems) != 1 || !errors.Is(res.Problems[0].Err, errOutside) || res.Problems[0].File != "clusters" {
		t.Fatalf("problems = %v, want clusters: %v", res.Problems, errOutside)
	}
	if got := readString(t, filepath.Join(outside, "app.yaml")); got != hardenedMarker {
		t.Errorf("a file outside the root changed: %q", got)
	}
}

func TestFileSizeLimit(t *testing.T) {
	root := t.TempDir()
	big := hardenedMarker + strings.Repeat("# padding padding padding padding\n", 100)
	writeFile(t, filepath.Join(root, "marked.yaml"), big)
	writeFile(t, filepath.Join(root, "crds.yaml"), strings.Repeat("x: y\n", 1000))
	writeFile(t, filepath.Join(root, "small.yaml"), hardenedMarker)
	res, err := Apply(context.Background(), Options{Root: root, Images: hardenedImages, Write: true, MaxFileSize: 1024})
	if err != nil {
		t.Fatal(err)
	}
	var tl *TooLargeError
	if len(res.Problems) != 1 || res.Problems[0].File != "marked.yaml" || !errors.As(res.Problems[0].Err, &tl) {
		t.Fatalf("problems = %v, want only marked.yaml too large", res.Problems)
	}
	if len(res.Changes) != 1 || res.Changes[0].File != "small.yaml" {
		t.Errorf("changes = %v, want small.yaml only", res.Changes)
	}
	if got := readString(t, filepath.Join(root, "marked.yaml")); got != big {
		t.Error("a file over the limit was rewritten")
	}
	refs, err := Referenced(context.Background(), Options{Root: root, MaxFileSize: 1024})
	if err != nil || refs["ns:app"] != 1 {
		t.Errorf("Referenced = %v, %v; want the small file's marker only", refs, err)
	}
}

// TestReadFileNeverBlocks checks that a FIFO where a file was expected
// (swapped in after the walk, say) is refused at once, not waited on.
func TestReadFileNeverBlocks(t *testing.T) {
	p := filepath.Join(t.TempDir(), "app.yaml")
	if err := syscall.Mkfifo(p, 0o644); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		var buf bytes.Buffer
		done <- readFile(p, &buf, 0)
	}()
	select {
	case err := <-done:
		if !errors.Is(err, errNotRegular) {
			t.Errorf("readFile(FIFO) = %v, want errNotRegular", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("readFile blocked on a FIFO")
	}
	// The walk skips it too, and the run goes on.
	res, err := Apply(context.Background(), Options{Root: filepath.Dir(p), Images: hardenedImages})
	if err != nil || len(res.Problems) != 0 {
		t.Errorf("Apply over a FIFO = %v, %v", res, err)
	}
}

func TestHardLinkedFileIsReportedNotSplit(t *testing.T) {
	root := t.TempDir()
	a, b := filepath.Join(root, "a.yaml"), filepath.Join(root, "b.yml.bak")
	writeFile(t, a, hardenedMarker)
	if err := os.Link(a, b); err != nil {
		t.Fatal(err)
	}
	// A dry run (plan) reports what the write (apply) does.
	for _, write := range []bool{false, true} {
		res, err := Apply(context.Background(), Options{Root: root, Images: hardenedImages, Write: write})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Problems) != 1 || !strings.Contains(res.Problems[0].Error(), "2 hard links") || len(res.Changes) != 0 {
			t.Fatalf("write %v: problems = %v, changes = %v", write, res.Problems, res.Changes)
		}
	}
	var sa, sb syscall.Stat_t
	if syscall.Stat(a, &sa) != nil || syscall.Stat(b, &sb) != nil || sa.Ino != sb.Ino {
		t.Error("the hard links were split")
	}
}

// TestOwnerAndModeKept checks that a rewritten file keeps its owner, group
// and mode (set-id bits included) when imagebump runs as root.
func TestOwnerAndModeKept(t *testing.T) {
	if os.Geteuid() != 0 {
		ci.Missing(t, "needs root to give a file to another user (CI runs the tests as root)")
	}
	root := t.TempDir()
	p := filepath.Join(root, "app.yaml")
	writeFile(t, p, hardenedMarker)
	if err := os.Chown(p, 1234, 5678); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, 0o640|os.ModeSetgid); err != nil {
		t.Fatal(err)
	}
	res, err := Apply(context.Background(), Options{Root: root, Images: hardenedImages, Write: true})
	if err != nil || len(res.Changes) != 1 {
		t.Fatalf("Apply = %v, %v", res, err)
	}
	var st syscall.Stat_t
	if err := syscall.Stat(p, &st); err != nil {
		t.Fatal(err)
	}
	if st.Uid != 1234 || st.Gid != 5678 || st.Mode&0o7777 != 0o640|syscall.S_ISGID {
		t.Errorf("after the rewrite: owner %d:%d mode %o, want 1234:5678 mode 2640", st.Uid, st.Gid, st.Mode&0o7777)
	}
}

func TestStaleTemporaryFilesRemoved(t *testing.T) {
	root := t.TempDir()
	writeFile(t, filepath.Join(root, "app.yaml"), hardenedMarker)
	stale := filepath.Join(root, ".app.yaml.imagebump-12345")
	fresh := filepath.Join(root, ".app.yaml.imagebump-67890")
	mine := filepath.Join(root, ".app.yaml.imagebump-notours")
	for _, p := range []string{stale, fresh, mine} {
		writeFile(t, p, "partial")
	}
	old := time.Now().Add(-time.Hour)
	for _, p := range []string{stale, mine} {
		if err := os.Chtimes(p, old, old); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := Apply(context.Background(), Options{Root: root, Images: hardenedImages}); err != nil {
		t.Fatal(err)
	}
	if !exists(stale) {
		t.Error("a dry run removed a file")
	}
	if _, err := Apply(context.Background(), Options{Root: root, Images: hardenedImages, Write: true}); err != nil {
		t.Fatal(err)
	}
	if exists(stale) || !exists(fresh) || !exists(mine) {
		t.Errorf("after apply: stale %v (want gone), fresh %v, not ours %v (want both kept)", exists(stale), exists(fresh), exists(mine))
	}
}

// TestLinesCountAsEditorsDo checks that a lone CR or a LINE SEPARATOR,
// which yaml.v3 counts as line breaks, does not shift reported lines.
func TestLinesCountAsEditorsDo(t *testing.T) {
	for _, tt := range []struct {
		name, src string
		line      int
	}{
		{"LF", "a: 1\n# note\n" + hardenedMarker, 3},
		{"CRLF", "a: 1\r\n# note\r\n" + strings.TrimSuffix(hardenedMarker, "\n") + "\r\n", 3},
		{"line separator in a quoted value", "a: 1\nb: \"one\u2028two\"\n" + hardenedMarker, 3},
		{"NEL in a quoted value", "a: 1\nb: \"one\u0085two\"\n" + hardenedMarker, 3},
		{"lone CR", "a: 1\rb: 2\n" + hardenedMarker, 2},
	} {
		t.Run(tt.name, func(t *testing.T) {
			out := rewrite("f.yaml", []byte(tt.src), env{images: hardenedImages, known: func(string) bool { return true }})
			if len(out.changes) != 1 || out.changes[0].Line != tt.line || len(out.markers) != 1 || out.markers[0].Line != tt.line {
				t.Errorf("changes %v markers %v problems %v, want line %d", out.changes, out.markers, out.problems, tt.line)
			}
		})
	}
}

func TestRefusedBytesHaveALine(t *testing.T) {
	for _, tt := range []struct {
		name, src, want string
		line            int
	}{
		{"NUL", hardenedMarker + "b: 2\nc: x\x00y\n", "a NUL byte", 3},
		{"invalid UTF-8", hardenedMarker + "b: \xff\n", "invalid UTF-8 (byte 0xff)", 2},
		{"escape", hardenedMarker + "\nb: \x1b[2J\n", "the control character 0x1b", 3},
	} {
		t.Run(tt.name, func(t *testing.T) {
			out := rewrite("f.yaml", []byte(tt.src), env{images: hardenedImages, known: func(string) bool { return true }})
			if len(out.problems) != 1 || out.problems[0].Line != tt.line || !strings.Contains(out.problems[0].Error(), tt.want) {
				t.Errorf("problems = %v, want one at line %d saying %q", out.problems, tt.line, tt.want)
			}
		})
	}
}

func readString(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func exists(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}

// TestReadFileSizes reads files of sizes around the read buffer's, which
// end either with a short read or with a read that returns end of file,
// with and without a size limit.
func TestReadFileSizes(t *testing.T) {
	dir := t.TempDir()
	var buf bytes.Buffer
	for _, size := range []int{0, 1, 4095, 4096, 16383, 16384, 16385, 32768, 49152, 100000, 1 << 20} {
		data := make([]byte, size)
		for i := range data {
			data[i] = byte('a' + i%26)
		}
		p := filepath.Join(dir, fmt.Sprintf("f%d", size))
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		for _, limit := range []int64{0, int64(size), 8 << 20} {
			if err := readFile(p, &buf, limit); err != nil {
				t.Fatalf("readFile of %d bytes, limit %d: %v", size, limit, err)
			}
			if !bytes.Equal(buf.Bytes(), data) {
				t.Errorf("readFile of %d bytes, limit %d, read %d bytes, not the file's", size, limit, buf.Len())
			}
		}
	}
}

// TestOtherFileDoesNotFollowALink: a file that is not scanned, swapped
// for a symbolic link after the walk saw it, is not followed to what it
// leads to (outside the repository, say), as readFile does not follow one.
func TestOtherFileDoesNotFollowALink(t *testing.T) {
	outside := filepath.Join(t.TempDir(), "Dockerfile")
	writeFile(t, outside, "FROM ghcr.io/acme/app:1.0.0 # {\"$imagepolicy\": \"apps:app\"}\n")
	link := filepath.Join(t.TempDir(), "Dockerfile")
	if err := os.Symlink(outside, link); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	for _, tt := range []struct {
		abs  string
		want int
	}{{outside, 1}, {link, 0}} {
		r := &run{res: &Result{}}
		r.otherFile(job{rel: "Dockerfile", abs: tt.abs, other: true}, &buf)
		if len(r.res.Elsewhere) != tt.want {
			t.Errorf("otherFile(%s): Elsewhere = %v, want %d entries", tt.abs, r.res.Elsewhere, tt.want)
		}
	}
}
