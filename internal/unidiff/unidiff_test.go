package unidiff

import (
	"bytes"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestWriteFormat(t *testing.T) {
	tests := []struct {
		name          string
		before, after string
		want          string
	}{
		{
			name:   "equal",
			before: "a\nb\n",
			after:  "a\nb\n",
			want:   "",
		},
		{
			name:   "one line in the middle",
			before: "1\n2\n3\n4\n5\n6\n7\n8\n9\n",
			after:  "1\n2\n3\n4\nFIVE\n6\n7\n8\n9\n",
			want: "diff --git a/f.yaml b/f.yaml\n--- a/f.yaml\n+++ b/f.yaml\n" +
				"@@ -2,7 +2,7 @@\n 2\n 3\n 4\n-5\n+FIVE\n 6\n 7\n 8\n",
		},
		{
			name:   "two changes far apart make two hunks",
			before: "a\n1\n2\n3\n4\n5\n6\n7\n8\nb\n",
			after:  "A\n1\n2\n3\n4\n5\n6\n7\n8\nB\n",
			want: "diff --git a/f.yaml b/f.yaml\n--- a/f.yaml\n+++ b/f.yaml\n" +
				"@@ -1,4 +1,4 @@\n-a\n+A\n 1\n 2\n 3\n" +
				"@@ -7,4 +7,4 @@\n 6\n 7\n 8\n-b\n+B\n",
		},
		{
			name:   "crlf kept and no newline at end",
			before: "x: 1\r\ny: 2",
			after:  "x: 1\r\ny: 3",
			want: "diff --git a/f.yaml b/f.yaml\n--- a/f.yaml\n+++ b/f.yaml\n" +
				"@@ -1,2 +1,2 @@\n x: 1\r\n-y: 2\n\\ No newline at end of file\n+y: 3\n\\ No newline at end of file\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := Write(&buf, "f.yaml", []byte(tt.before), []byte(tt.after)); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(buf.String(), tt.want); diff != "" {
				t.Errorf("Write() mismatch (-got +want):\n%s", diff)
			}
		})
	}
}

// TestGitApplyAcceptsRandomEdits checks, on random files and random edits,
// that `git apply` turns before into after with our diff.
func TestGitApplyAcceptsRandomEdits(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		// git is part of the test setup (./scripts/test.sh installs it).
		t.Fatal("git is not installed: install the Debian package git, or run ./scripts/test.sh")
	}
	rng := rand.New(rand.NewSource(1))
	dir := t.TempDir()
	run := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	run("init", "-q")
	for i := 0; i < 60; i++ {
		before := randomFile(rng)
		after := mutate(rng, before)
		name := fmt.Sprintf("f%d.yaml", i)
		if err := os.WriteFile(filepath.Join(dir, name), before, 0o644); err != nil {
			t.Fatal(err)
		}
		var patch bytes.Buffer
		if err := Write(&patch, name, before, after); err != nil {
			t.Fatal(err)
		}
		if bytes.Equal(before, after) {
			if patch.Len() != 0 {
				t.Fatalf("case %d: diff of equal files is not empty", i)
			}
			continue
		}
		pf := filepath.Join(t.TempDir(), "p.diff")
		if err := os.WriteFile(pf, patch.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		run("apply", "--whitespace=nowarn", pf)
		got, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, after) {
			t.Fatalf("case %d: git apply gave\n%q\nwant\n%q\npatch:\n%s", i, got, after, patch.String())
		}
	}
}

func randomFile(rng *rand.Rand) []byte {
	var b bytes.Buffer
	n := rng.Intn(40)
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "line%d: %d\n", rng.Intn(8), rng.Intn(3))
	}
	if rng.Intn(4) == 0 {
		b.WriteString("tail")
	}
	return b.Bytes()
}

func mutate(rng *rand.Rand, data []byte) []byte {
	lines := splitLines(data)
	out := make([][]byte, 0, len(lines)+4)
	for _, l := range lines {
		switch rng.Intn(10) {
		case 0:
			// drop the line
		case 1:
			out = append(out, []byte(fmt.Sprintf("new: %d\n", rng.Intn(100))), l)
		case 2:
			out = append(out, []byte(fmt.Sprintf("changed: %d\n", rng.Intn(100))))
		default:
			out = append(out, l)
		}
	}
	return bytes.Join(out, nil)
}

// TestGitApplyAcceptsHostileNames checks that paths git would quote (a
// newline, quotes, a backslash, a tab, UTF-8, a crafted "+++" folder) come
// out quoted, cannot forge a hunk, and that git apply edits exactly the
// named file.
func TestGitApplyAcceptsHostileNames(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Fatal("git is not installed: install the Debian package git, or run ./scripts/test.sh")
	}
	for _, name := range []string{
		"plain.yaml",
		"with space.yaml",
		"new\nline.yaml",
		"quote\"d.yaml",
		"back\\slash.yaml",
		"tab\there.yaml",
		"caf\u00e9.yaml",
		"dir\n+++ b/evil.yaml/x.yaml",
		"esc\x1b[31mred.yaml",
	} {
		t.Run(strconv.Quote(name), func(t *testing.T) {
			dir := t.TempDir()
			git := func(args ...string) {
				t.Helper()
				cmd := exec.Command("git", args...)
				cmd.Dir = dir
				if out, err := cmd.CombinedOutput(); err != nil {
					t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
				}
			}
			git("init", "-q")
			p := filepath.Join(dir, filepath.FromSlash(name))
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			before, after := []byte("a: 1\nb: 2\n"), []byte("a: 1\nb: 3\n")
			if err := os.WriteFile(p, before, 0o644); err != nil {
				t.Fatal(err)
			}
			var patch bytes.Buffer
			if err := Write(&patch, name, before, after); err != nil {
				t.Fatal(err)
			}
			// Exactly three header lines and one hunk of four: a name cannot add
			// lines.
			if got := strings.Count(patch.String(), "\n"); got != 3+4 {
				t.Fatalf("patch has %d lines, want 7:\n%s", got, patch.String())
			}
			pf := filepath.Join(t.TempDir(), "p.diff")
			if err := os.WriteFile(pf, patch.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
			git("apply", pf)
			got, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, after) {
				t.Errorf("git apply gave %q, want %q\npatch:\n%s", got, after, patch.String())
			}
		})
	}
}

// FuzzQuotePath checks that a quoted path reads back as the path (Go's
// unquoting follows the same C escapes), and that the result holds no
// control character either way.
func FuzzQuotePath(f *testing.F) {
	for _, s := range []string{"a/b.yaml", "x\ny", "\"", "\\", "caf\u00e9", "\x00\x7f\xff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		q := QuotePath(p)
		for i := 0; i < len(q); i++ {
			if q[i] < 0x20 || q[i] == 0x7f {
				t.Fatalf("QuotePath(%q) = %q holds a control character", p, q)
			}
		}
		if q == p {
			return
		}
		back, err := strconv.Unquote(q)
		if err != nil || back != p {
			t.Fatalf("QuotePath(%q) = %s, which reads back as %q (%v)", p, q, back, err)
		}
	})
}
