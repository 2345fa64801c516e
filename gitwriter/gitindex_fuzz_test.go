package gitwriter

import (
	"bytes"
	"crypto/sha1"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
)

// FuzzParseRawIndex feeds the index reader bodies with a valid checksum:
// it must never panic, and an index it accepts must come out of a patch
// with no changes as the same entries, and out of a patch with changes
// sorted, with each name once.
func FuzzParseRawIndex(f *testing.F) {
	// A seed from git itself: an index with nested paths, a name that
	// sorts between a folder and its files, and an executable.
	dir := f.TempDir()
	for name, body := range map[string]string{"a.yaml": "a\n", "a-b.yaml": "b\n", "a/x.yaml": "x\n", "z/y/w.yaml": "w\n", "run.sh": "#!/bin/sh\n"} {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			f.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o755); err != nil {
			f.Fatal(err)
		}
	}
	for _, args := range [][]string{{"init", "-q"}, {"add", "-A"}} {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			f.Fatalf("git %v: %v: %s", args, err, out)
		}
	}
	seed, err := os.ReadFile(filepath.Join(dir, ".git", "index"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(seed[:len(seed)-sha1.Size], "a/x.yaml", false)
	f.Add(seed[:len(seed)-sha1.Size], "a.yaml", true)
	f.Add(seed[:len(seed)-sha1.Size], "b", false)
	f.Fuzz(func(t *testing.T, body []byte, name string, remove bool) {
		sum := sha1.Sum(body)
		ix, err := parseRawIndex(append(bytes.Clone(body), sum[:]...))
		if err != nil {
			return
		}
		n := len(ix.entries)
		var entries bytes.Buffer
		for _, e := range ix.entries {
			entries.Write(e.data)
		}
		same := ix.patch(nil)
		again, err := parseRawIndex(same)
		if err != nil {
			t.Fatalf("a patch with no changes does not parse: %v", err)
		}
		var got bytes.Buffer
		for _, e := range again.entries {
			got.Write(e.data)
		}
		if len(again.entries) != n || !bytes.Equal(got.Bytes(), entries.Bytes()) {
			t.Fatalf("a patch with no changes changed the entries: %d -> %d", n, len(again.entries))
		}
		if name == "" || bytes.IndexByte([]byte(name), 0) >= 0 || len(name) > 0xfff {
			return
		}
		patched, err := parseRawIndex(again.patch([]indexChange{{name: name, remove: remove, hash: plumbing.NewHash("0123456789abcdef0123456789abcdef01234567"), mode: 0o100644}}))
		if err != nil {
			t.Fatalf("a patched index does not parse: %v", err)
		}
		for _, e := range patched.entries {
			if string(e.name) == name && remove {
				t.Fatalf("%q is still there after its removal", name)
			}
		}
		count := func(ix *rawIndex) int {
			n := 0
			for _, e := range ix.entries {
				if string(e.name) == name {
					n++
				}
			}
			return n
		}
		if !remove && count(patched) != 1 {
			t.Fatalf("%q is there %d times after a patch, want once", name, count(patched))
		}
		// Two changes to one name, in either order: the later wins.
		h := plumbing.NewHash("89abcdef0123456789abcdef0123456789abcdef")
		for _, last := range []bool{remove, !remove} {
			base, err := parseRawIndex(same)
			if err != nil {
				t.Fatal(err)
			}
			twice, err := parseRawIndex(base.patch([]indexChange{
				{name: name, remove: !last, hash: h, mode: 0o100644},
				{name: name, remove: last, hash: h, mode: 0o100644},
			}))
			if err != nil {
				t.Fatalf("an index patched twice for %q does not parse: %v", name, err)
			}
			if want := map[bool]int{true: 0, false: 1}[last]; count(twice) != want {
				t.Fatalf("%q is there %d times after a change and a later remove=%v, want %d", name, count(twice), last, want)
			}
		}
	})
}
