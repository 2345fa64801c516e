package gitwriter

import (
	"bytes"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/imagebump/imagebump/internal/testkit/testgit"
)

// packObjects returns objects of every type a commit makes, with sizes
// that take one, two and three bytes of a pack entry's header, and one
// larger than a zlib stored block (65,535 bytes).
func packObjects(t *testing.T) []newObject {
	t.Helper()
	rng := rand.New(rand.NewPCG(1, 2))
	big := make([]byte, 70000)
	for i := range big {
		big[i] = byte(rng.IntN(256))
	}
	var objs []newObject
	add := func(typ plumbing.ObjectType, content []byte) plumbing.Hash {
		h := plumbing.ComputeHash(typ, content)
		objs = append(objs, newObject{typ: typ, hash: h, content: content})
		return h
	}
	empty := add(plumbing.BlobObject, nil)
	small := add(plumbing.BlobObject, []byte("image: app:1.1.0\n"))
	mid := add(plumbing.BlobObject, bytes.Repeat([]byte("x"), 300))
	large := add(plumbing.BlobObject, big)
	sub := encodeTree(t, []object.TreeEntry{{Name: "big.bin", Mode: filemode.Regular, Hash: large}})
	subHash := add(plumbing.TreeObject, sub)
	root := encodeTree(t, []object.TreeEntry{
		{Name: "a.yaml", Mode: filemode.Regular, Hash: small},
		{Name: "data", Mode: filemode.Dir, Hash: subHash},
		{Name: "empty", Mode: filemode.Regular, Hash: empty},
		{Name: "run.sh", Mode: filemode.Executable, Hash: mid},
	})
	rootHash := add(plumbing.TreeObject, root)
	add(plumbing.CommitObject, []byte("tree "+rootHash.String()+"\nauthor a <a@example.invalid> 1700000000 +0000\ncommitter a <a@example.invalid> 1700000000 +0000\n\nBump app\n"))
	return objs
}

func encodeTree(t *testing.T, entries []object.TreeEntry) []byte {
	t.Helper()
	obj := &plumbing.MemoryObject{}
	if err := (&object.Tree{Entries: entries}).Encode(obj); err != nil {
		t.Fatal(err)
	}
	content, err := readAll(obj)
	if err != nil {
		t.Fatal(err)
	}
	return content
}

// checkObjects asserts that git reads every object of objs from the
// repository at gitDir with its type and content, and that git fsck finds
// nothing wrong.
func checkObjects(t *testing.T, gitDir string, objs []newObject) {
	t.Helper()
	for _, o := range objs {
		if got := testgit.Git(t, gitDir, "cat-file", "-t", o.hash.String()); got != o.typ.String() {
			t.Errorf("object %s: git says type %s, want %s", o.hash, got, o.typ)
		}
		// testgit.Git drops one trailing newline.
		got := testgit.Git(t, gitDir, "cat-file", o.typ.String(), o.hash.String())
		if want := strings.TrimSuffix(string(o.content), "\n"); got != want {
			t.Errorf("object %s: git reads %d bytes that differ from the %d written", o.hash, len(got), len(want))
		}
	}
	testgit.Git(t, gitDir, "fsck", "--strict", "--no-dangling")
}

// TestWritePack: git's own index-pack accepts the pack a push sends (it
// checks the trailer and every object's hash), and git then reads each
// object with its type and content.
func TestWritePack(t *testing.T) {
	objs := packObjects(t)
	bare := t.TempDir()
	testgit.Git(t, bare, "init", "--quiet", "--bare")
	var buf bytes.Buffer
	if err := writePack(&buf, objs); err != nil {
		t.Fatal(err)
	}
	pack := filepath.Join(bare, "objects", "pack", "pack-test.pack")
	if err := os.WriteFile(pack, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	testgit.Git(t, bare, "index-pack", pack)
	listed := testgit.Git(t, bare, "verify-pack", "-v", strings.TrimSuffix(pack, ".pack")+".idx")
	// Lines of "hash type size size-in-pack offset", whole objects only.
	entries := map[string]string{}
	for _, line := range strings.Split(listed, "\n") {
		if f := strings.Fields(line); len(f) == 5 {
			entries[f[0]] = f[1] + " " + f[2]
		}
	}
	for _, o := range objs {
		if got, want := entries[o.hash.String()], o.typ.String()+" "+strconv.Itoa(len(o.content)); got != want {
			t.Errorf("verify-pack lists %s as %q, want %q", o.hash, got, want)
		}
	}
	if len(entries) != len(objs) {
		t.Errorf("verify-pack lists %d objects, want %d:\n%s", len(entries), len(objs), listed)
	}
	checkObjects(t, bare, objs)

	// A pack entry holds objects whole; a delta type is refused.
	err := writePack(&bytes.Buffer{}, []newObject{{typ: plumbing.OFSDeltaObject, hash: objs[0].hash}})
	if err == nil || !strings.Contains(err.Error(), "cannot be packed whole") {
		t.Errorf("writePack of a delta = %v, want an error", err)
	}
}

// TestLooseWriter: the loose objects a commit stores are read by git, are
// read-only as git makes them, leave no temporary file, and are not
// written again when already there.
func TestLooseWriter(t *testing.T) {
	objs := packObjects(t)
	bare := t.TempDir()
	testgit.Git(t, bare, "init", "--quiet", "--bare")
	l := looseWriter{dir: filepath.Join(bare, "objects")}
	for _, o := range objs {
		if err := l.write(o.typ, o.hash, o.content); err != nil {
			t.Fatal(err)
		}
	}
	checkObjects(t, bare, objs)
	first := filepath.Join(bare, "objects", objs[0].hash.String()[:2], objs[0].hash.String()[2:])
	fi, err := os.Stat(first)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o444 {
		t.Errorf("a loose object has mode %v, want -r--r--r--", fi.Mode().Perm())
	}
	tmps, _ := filepath.Glob(filepath.Join(bare, "objects", "*", "tmp_obj_*"))
	if len(tmps) > 0 {
		t.Errorf("temporary files left: %v", tmps)
	}

	// Already there: not written again (the file keeps its inode).
	if err := l.write(objs[0].typ, objs[0].hash, objs[0].content); err != nil {
		t.Fatal(err)
	}
	again, err := os.Stat(first)
	if err != nil {
		t.Fatal(err)
	}
	if !os.SameFile(fi, again) {
		t.Error("an object already stored was written again")
	}

	// An empty file, as a crash can leave, is written again.
	if err := os.Chmod(first, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(first, 0); err != nil {
		t.Fatal(err)
	}
	if err := l.write(objs[0].typ, objs[0].hash, objs[0].content); err != nil {
		t.Fatal(err)
	}
	checkObjects(t, bare, objs[:1])

	// A fan-out folder that cannot be made: an error, and nothing left.
	other := t.TempDir()
	l = looseWriter{dir: other}
	h := objs[1].hash.String()
	if err := os.WriteFile(filepath.Join(other, h[:2]), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := l.write(objs[1].typ, objs[1].hash, objs[1].content); err == nil {
		t.Error("writing into a folder that is a file succeeded")
	}
}
