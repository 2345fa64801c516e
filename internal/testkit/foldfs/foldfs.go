//go:build linux

// Package foldfs mounts a file system that takes two names for one, as
// macOS's and Windows' default file systems do, for tests of code that
// must notice it. Linux's own file systems fold names only with casefold,
// which needs a kernel built with CONFIG_UNICODE (this project's machines
// lack it), so the file system here is a loopback over a folder, served
// through FUSE: every name is looked up, created, removed and renamed by
// its key (Fold), and a folder lists each entry by the name it was made
// with (case-preserving).
//
// Mounting needs /dev/fuse and root (the mount is made directly, without
// fusermount); a test without them stops through ci.Missing.
package foldfs

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"

	"github.com/imagebump/imagebump/internal/testkit/ci"
)

// Fold is what the file system takes a name for: two names with one key
// are one entry.
type Fold func(name string) string

// Mount serves a new empty folder through a file system that folds names
// by fold, and returns where it is mounted; it is unmounted when t ends.
func Mount(t testing.TB, fold Fold) string {
	t.Helper()
	if _, err := os.Stat("/dev/fuse"); err != nil {
		ci.Missing(t, "foldfs: no /dev/fuse: run the test on a Linux machine with FUSE (modprobe fuse)")
	}
	if os.Geteuid() != 0 {
		ci.Missing(t, "foldfs: mounting needs root; run the test as root, as scripts/test.sh does in CI")
	}
	backing, mnt := t.TempDir(), t.TempDir()
	root := &node{fs: &folding{backing: backing, fold: fold}}
	zero := time.Duration(0)
	server, err := fs.Mount(mnt, root, &fs.Options{
		// Nothing is cached in the kernel: every name is asked of
		// Lookup, so each spelling is folded.
		EntryTimeout:    &zero,
		AttrTimeout:     &zero,
		NegativeTimeout: &zero,
		MountOptions:    fuse.MountOptions{FsName: "foldfs", Name: "foldfs", DirectMount: true},
	})
	if err != nil {
		ci.Missing(t, "foldfs: mounting a FUSE file system on "+mnt+": "+err.Error())
	}
	var st syscall.Stat_t
	if err := syscall.Stat(mnt, &st); err != nil {
		t.Fatalf("foldfs: %v", err)
	}
	t.Cleanup(func() {
		if err := server.Unmount(); err != nil {
			t.Errorf("foldfs: unmounting %s (is a file left open?): %v", mnt, err)
			abort(t, st.Dev)
			if err := syscall.Unmount(mnt, syscall.MNT_DETACH); err != nil {
				t.Errorf("foldfs: detaching %s: %v", mnt, err)
			}
		}
	})
	return mnt
}

// abort ends the FUSE connection of the mount on device dev. A file left
// open keeps the mount busy, and its file system is served by this very
// process: closing the file as the process ends would wait for an answer
// the process can no longer give. Aborted, every request fails at once.
func abort(t testing.TB, dev uint64) {
	const conns = "/sys/fs/fuse/connections"
	if ents, _ := os.ReadDir(conns); len(ents) == 0 {
		if err := syscall.Mount("fusectl", conns, "fusectl", 0, ""); err != nil {
			t.Errorf("foldfs: mounting %s: %v", conns, err)
		}
	}
	// The kernel names a connection by its device number, major<<20|minor.
	name := strconv.FormatUint(uint64(unix.Major(dev))<<20|uint64(unix.Minor(dev)), 10)
	if err := os.WriteFile(filepath.Join(conns, name, "abort"), []byte("1"), 0o200); err != nil {
		t.Errorf("foldfs: aborting the connection: %v", err)
	}
}

// folding is the file system's state: the folder it serves and its key.
type folding struct {
	backing string
	fold    Fold
}

// name returns the entry of folder dir (a real path) that name is taken
// for: the one spelt so, else the one with name's key, else "".
func (f *folding) name(dir, name string) string {
	if _, err := os.Lstat(filepath.Join(dir, name)); err == nil {
		return name
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return ""
	}
	key := f.fold(name)
	for _, e := range ents {
		if f.fold(e.Name()) == key {
			return e.Name()
		}
	}
	return ""
}

// node is a file or folder; its real path is found from its path in the
// mount, a folder at a time.
type node struct {
	fs.Inode
	fs *folding
}

var (
	_ fs.NodeLookuper   = (*node)(nil)
	_ fs.NodeGetattrer  = (*node)(nil)
	_ fs.NodeSetattrer  = (*node)(nil)
	_ fs.NodeOpener     = (*node)(nil)
	_ fs.NodeCreater    = (*node)(nil)
	_ fs.NodeMkdirer    = (*node)(nil)
	_ fs.NodeSymlinker  = (*node)(nil)
	_ fs.NodeReadlinker = (*node)(nil)
	_ fs.NodeUnlinker   = (*node)(nil)
	_ fs.NodeRmdirer    = (*node)(nil)
	_ fs.NodeRenamer    = (*node)(nil)
	_ fs.NodeReaddirer  = (*node)(nil)
	_ fs.NodeFsyncer    = (*node)(nil)
	_ fs.NodeStatfser   = (*node)(nil)
)

func (n *node) real() string {
	p := n.fs.backing
	rel := n.Path(n.Root())
	if rel == "" {
		return p
	}
	for _, c := range strings.Split(rel, "/") {
		if e := n.fs.name(p, c); e != "" {
			c = e
		}
		p = filepath.Join(p, c)
	}
	return p
}

// entry returns the real path name is taken for in n, or "" and ENOENT.
func (n *node) entry(name string) (string, syscall.Errno) {
	dir := n.real()
	e := n.fs.name(dir, name)
	if e == "" {
		return "", syscall.ENOENT
	}
	return filepath.Join(dir, e), 0
}

func (n *node) child(ctx context.Context, p string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	var st syscall.Stat_t
	if err := syscall.Lstat(p, &st); err != nil {
		return nil, fs.ToErrno(err)
	}
	out.Attr.FromStat(&st)
	return n.NewInode(ctx, &node{fs: n.fs}, fs.StableAttr{Mode: st.Mode, Ino: st.Ino}), 0
}

func (n *node) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	p, errno := n.entry(name)
	if errno != 0 {
		return nil, errno
	}
	return n.child(ctx, p, out)
}

func (n *node) Getattr(ctx context.Context, fh fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	if g, ok := fh.(fs.FileGetattrer); ok {
		return g.Getattr(ctx, out)
	}
	var st syscall.Stat_t
	if err := syscall.Lstat(n.real(), &st); err != nil {
		return fs.ToErrno(err)
	}
	out.FromStat(&st)
	return 0
}

func (n *node) Setattr(ctx context.Context, fh fs.FileHandle, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	p := n.real()
	if m, ok := in.GetMode(); ok {
		if err := syscall.Chmod(p, m); err != nil {
			return fs.ToErrno(err)
		}
	}
	if size, ok := in.GetSize(); ok {
		if err := syscall.Truncate(p, int64(size)); err != nil {
			return fs.ToErrno(err)
		}
	}
	mtime, mok := in.GetMTime()
	atime, aok := in.GetATime()
	if mok || aok {
		if !mok {
			mtime = time.Now()
		}
		if !aok {
			atime = time.Now()
		}
		if err := os.Chtimes(p, atime, mtime); err != nil {
			return fs.ToErrno(err)
		}
	}
	return n.Getattr(ctx, nil, out)
}

func (n *node) Open(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	fd, err := syscall.Open(n.real(), int(flags)&^syscall.O_APPEND, 0)
	if err != nil {
		return nil, 0, fs.ToErrno(err)
	}
	return fs.NewLoopbackFile(fd), 0, 0
}

func (n *node) Create(ctx context.Context, name string, flags, mode uint32, out *fuse.EntryOut) (*fs.Inode, fs.FileHandle, uint32, syscall.Errno) {
	dir := n.real()
	e := n.fs.name(dir, name)
	switch {
	case e == "":
		e = name
	case flags&syscall.O_EXCL != 0:
		return nil, nil, 0, syscall.EEXIST
	}
	p := filepath.Join(dir, e)
	fd, err := syscall.Open(p, int(flags)|syscall.O_CREAT, mode)
	if err != nil {
		return nil, nil, 0, fs.ToErrno(err)
	}
	ch, errno := n.child(ctx, p, out)
	if errno != 0 {
		syscall.Close(fd)
		return nil, nil, 0, errno
	}
	return ch, fs.NewLoopbackFile(fd), 0, 0
}

// made makes a new entry name in n with mk, or fails with EEXIST when
// name is taken for one already there.
func (n *node) made(ctx context.Context, name string, out *fuse.EntryOut, mk func(p string) error) (*fs.Inode, syscall.Errno) {
	dir := n.real()
	if n.fs.name(dir, name) != "" {
		return nil, syscall.EEXIST
	}
	p := filepath.Join(dir, name)
	if err := mk(p); err != nil {
		return nil, fs.ToErrno(err)
	}
	return n.child(ctx, p, out)
}

func (n *node) Mkdir(ctx context.Context, name string, mode uint32, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	return n.made(ctx, name, out, func(p string) error { return os.Mkdir(p, os.FileMode(mode)) })
}

func (n *node) Symlink(ctx context.Context, target, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	return n.made(ctx, name, out, func(p string) error { return os.Symlink(target, p) })
}

func (n *node) Readlink(ctx context.Context) ([]byte, syscall.Errno) {
	target, err := os.Readlink(n.real())
	if err != nil {
		return nil, fs.ToErrno(err)
	}
	return []byte(target), 0
}

func (n *node) Unlink(ctx context.Context, name string) syscall.Errno {
	p, errno := n.entry(name)
	if errno != 0 {
		return errno
	}
	return fs.ToErrno(syscall.Unlink(p))
}

func (n *node) Rmdir(ctx context.Context, name string) syscall.Errno {
	p, errno := n.entry(name)
	if errno != 0 {
		return errno
	}
	return fs.ToErrno(syscall.Rmdir(p))
}

// Rename moves name to newName, which takes the new spelling, as
// rename(2) does on APFS and NTFS: an entry newName is taken for is
// replaced.
func (n *node) Rename(ctx context.Context, name string, newParent fs.InodeEmbedder, newName string, flags uint32) syscall.Errno {
	from, errno := n.entry(name)
	if errno != 0 {
		return errno
	}
	dir := newParent.EmbeddedInode().Operations().(*node).real()
	to := filepath.Join(dir, newName)
	if e := n.fs.name(dir, newName); e != "" && e != newName && filepath.Join(dir, e) != from {
		if err := syscall.Unlink(filepath.Join(dir, e)); err != nil {
			return fs.ToErrno(err)
		}
	}
	return fs.ToErrno(syscall.Rename(from, to))
}

func (n *node) Readdir(ctx context.Context) (fs.DirStream, syscall.Errno) {
	return fs.NewLoopbackDirStream(n.real())
}

func (n *node) Fsync(ctx context.Context, fh fs.FileHandle, flags uint32) syscall.Errno {
	if s, ok := fh.(fs.FileFsyncer); ok {
		return s.Fsync(ctx, flags)
	}
	return 0
}

func (n *node) Statfs(ctx context.Context, out *fuse.StatfsOut) syscall.Errno {
	var s syscall.Statfs_t
	if err := syscall.Statfs(n.fs.backing, &s); err != nil {
		return fs.ToErrno(err)
	}
	out.FromStatfsT(&s)
	return 0
}
