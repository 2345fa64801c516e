package gitwriter

import (
	"bytes"
	"errors"
	"fmt"
	"path"
	"runtime"
	"strings"
	"unicode/utf8"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// treeDiffer lists the files that differ between two trees as git
// diff-tree -r does: it walks both in their stored order and skips every
// subtree whose hash is the same on both sides. Trees are read through a
// packSet, and what it does not read through go-git's store (read).
type treeDiffer struct {
	r     *Repo
	ps    *packSet // nil: go-git's store reads every tree
	out   []treeChange
	path  []byte // the folder being walked, ending in "/", or empty
	depth int
	// foldsNames: names the worktree takes for one are refused in the
	// new tree (namesFold).
	foldsNames bool
}

// maxTreeDepth bounds how deep the walk goes, as git's core.maxTreeDepth
// does with its default: git refuses to read a deeper tree.
const maxTreeDepth = 2048

// storedEntry is one entry of a tree as stored; name points into the tree's
// content.
type storedEntry struct {
	name []byte
	mode filemode.FileMode
	hash plumbing.Hash
}

func (e storedEntry) isDir() bool { return e.mode == filemode.Dir }

// openPacks returns a packSet of the working copy's packs that reads
// objects no pack lists through go-git's store, or an error when the
// pack folder is one go-git must answer for (packBases). The caller
// closes it.
func (r *Repo) openPacks() (*packSet, error) {
	ps, err := openPackSet(r.objects)
	if err != nil {
		return nil, err
	}
	ps.loose = r.looseObject
	return ps, nil
}

// diffTreesPacked lists the files that differ between two commits'
// trees, from the empty tree when from is zero, read through ps (nil:
// through go-git's store).
func (r *Repo) diffTreesPacked(ps *packSet, from, to plumbing.Hash) ([]treeChange, error) {
	var err error
	var fromTree plumbing.Hash // zero: the empty tree
	if !from.IsZero() {
		if fromTree, err = r.treeOf(from); err != nil {
			return nil, fmt.Errorf("reading commit %s: %w", shortHash(from), err)
		}
	}
	toTree, err := r.treeOf(to)
	if err != nil {
		return nil, fmt.Errorf("reading commit %s: %w", shortHash(to), err)
	}
	d := &treeDiffer{r: r, ps: ps, foldsNames: r.namesFold()}
	if err := d.walk(fromTree, toTree); err != nil {
		return nil, err
	}
	return d.out, nil
}

// walk adds the files that differ between trees a and b, in the folder
// d.path; a zero hash is a missing tree.
func (d *treeDiffer) walk(a, b plumbing.Hash) error {
	if a == b {
		return nil
	}
	if d.depth >= maxTreeDepth {
		return fmt.Errorf("%s is more than %d folders deep, past git's core.maxTreeDepth: %w", d.path, maxTreeDepth, errBadTree)
	}
	ea, err := d.entries(a)
	if err != nil {
		return err
	}
	eb, err := d.entries(b)
	if err != nil {
		return err
	}
	if d.foldsNames {
		if a, b := foldedPair(eb, func(e storedEntry) string { return string(e.name) }); a != "" {
			return &foldedNamesError{string(d.path) + a, string(d.path) + b}
		}
	}
	for len(ea) > 0 || len(eb) > 0 {
		c := 1
		switch {
		case len(ea) == 0:
		case len(eb) == 0:
			c = -1
		default:
			c = compareEntries(ea[0], eb[0])
		}
		switch {
		case c < 0:
			err = d.one(ea[0], true)
			ea = ea[1:]
		case c > 0:
			err = d.one(eb[0], false)
			eb = eb[1:]
		default:
			x, y := ea[0], eb[0]
			ea, eb = ea[1:], eb[1:]
			switch {
			case x.isDir():
				err = d.into(x.name, x.hash, y.hash)
			case x.hash != y.hash || x.mode != y.mode:
				if err = d.checkLink(y); err == nil {
					d.out = append(d.out, treeChange{path: d.pathOf(x.name), from: x.treeEntry(), to: y.treeEntry()})
				}
			}
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// into walks the subtrees a and b of the folder name.
func (d *treeDiffer) into(name []byte, a, b plumbing.Hash) error {
	n := len(d.path)
	d.path = append(append(d.path, name...), '/')
	d.depth++
	err := d.walk(a, b)
	d.path = d.path[:n]
	d.depth--
	return err
}

// pathOf is the path of the entry name in the folder being walked.
func (d *treeDiffer) pathOf(name []byte) string {
	return string(d.path) + string(name)
}

// one adds entry e, on one side only: every file under it when it is a
// tree; gone says the side is the old one.
func (d *treeDiffer) one(e storedEntry, gone bool) error {
	if e.isDir() {
		a, b := e.hash, plumbing.ZeroHash
		if !gone {
			a, b = b, a
		}
		return d.into(e.name, a, b)
	}
	c := treeChange{path: d.pathOf(e.name)}
	if gone {
		c.from = e.treeEntry()
	} else {
		if err := d.checkLink(e); err != nil {
			return err
		}
		c.to = e.treeEntry()
	}
	d.out = append(d.out, c)
	return nil
}

// checkLink refuses a symbolic link e of the new tree below a folder git
// takes for ".gitmodules" (checkLinkPath; parseTree checks its name).
func (d *treeDiffer) checkLink(e storedEntry) error {
	if e.mode != filemode.Symlink || len(d.path) == 0 {
		return nil
	}
	return checkLinkPath(d.pathOf(e.name))
}

func (e storedEntry) treeEntry() object.TreeEntry {
	return object.TreeEntry{Name: string(e.name), Mode: e.mode, Hash: e.hash}
}

// compareEntries orders two entries of a tree as git stores them: by
// name, a tree's name taken to end in "/". Equal means the same name and
// kind.
func compareEntries(a, b storedEntry) int {
	n := min(len(a.name), len(b.name))
	if c := bytes.Compare(a.name[:n], b.name[:n]); c != 0 {
		return c
	}
	return int(nameEnd(a, n)) - int(nameEnd(b, n))
}

// nameEnd is the byte of e's sort key at i: its name's, then "/" for a
// tree, then nothing (0).
func nameEnd(e storedEntry, i int) byte {
	switch {
	case i < len(e.name):
		return e.name[i]
	case i == len(e.name) && e.isDir():
		return '/'
	}
	return 0
}

// entries reads tree h (none for a zero hash) and parses it.
func (d *treeDiffer) entries(h plumbing.Hash) ([]storedEntry, error) {
	if h.IsZero() {
		return nil, nil
	}
	t, content, err := d.read(h)
	if err != nil {
		return nil, err
	}
	if t != plumbing.TreeObject {
		return nil, fmt.Errorf("object %s is a %s, not a tree: %w", shortHash(h), t, plumbing.ErrInvalidType)
	}
	return parseTreeIn(h, strings.TrimSuffix(string(d.path), "/"), content)
}

// read reads object h through the packSet, checked; what the packSet
// does not read (an object no pack lists, one past maxPackedRead, a
// delta chain past maxChainBytes, every object when there is no packSet)
// is read through go-git's store, checked too (storedObject).
func (d *treeDiffer) read(h plumbing.Hash) (plumbing.ObjectType, []byte, error) {
	if d.ps != nil {
		t, content, err := d.ps.object(h)
		switch {
		case err == nil, errors.Is(err, errDamaged):
			return t, content, err
		case errors.Is(err, errNotPacked):
			return d.r.looseObject(h)
		}
		d.r.log.Debug("reading a tree through go-git's store", "tree", shortHash(h), "reason", err.Error())
	}
	return storedObject(d.r.repo, plumbing.AnyObject, h)
}

// parseTreeIn parses tree h of the folder (slash-separated, "" for the
// root), saying which tree and folder an error is in. Every error is
// errBadTree: a tree that hashes to its name is what the remote sent,
// and git's fsck refuses it too.
func parseTreeIn(h plumbing.Hash, folder string, content []byte) ([]storedEntry, error) {
	entries, err := parseTree(content)
	if err == nil {
		return entries, nil
	}
	if !errors.Is(err, errBadTree) {
		err = fmt.Errorf("%w: %w", err, errBadTree)
	}
	where := "the root folder"
	if folder != "" {
		where = "folder " + folder
	}
	return nil, fmt.Errorf("tree %s (%s): %w", shortHash(h), where, err)
}

// looseObject reads object h, which no pack lists, through go-git's
// store, checked against its name.
func (r *Repo) looseObject(h plumbing.Hash) (plumbing.ObjectType, []byte, error) {
	t, content, err := storedObject(r.repo, plumbing.AnyObject, h)
	if errors.Is(err, plumbing.ErrObjectNotFound) {
		return 0, nil, fmt.Errorf("%w (%w)", err, errNotPacked)
	}
	return t, content, err
}

// storedObject reads object h, of type t (or any), through go-git's
// store, which does not check what it reads, and checks it against its
// name: an object that does not match is errDamaged.
func storedObject(repo *git.Repository, t plumbing.ObjectType, h plumbing.Hash) (plumbing.ObjectType, []byte, error) {
	o, err := repo.Storer.EncodedObject(t, h)
	if err != nil {
		return 0, nil, fmt.Errorf("reading object %s: %w", shortHash(h), err)
	}
	content, err := readAll(o)
	if err != nil {
		return 0, nil, fmt.Errorf("reading object %s: %w", shortHash(h), err)
	}
	if objectHash(o.Type(), content) != h {
		return 0, nil, fmt.Errorf("object %s: its content does not match its name: %w", shortHash(h), errDamaged)
	}
	return o.Type(), content, nil
}

// parseTree parses a tree's content: entries of an octal mode, a space,
// a name, a NUL and a 20-byte hash, in git's order (compareEntries),
// each name once (a folder and a file of the same name are refused), and
// none that git refuses to check out (checkEntryName; a link git takes
// for ".gitmodules", linkName). Modes are read as go-git's store reads them (as
// git does, but for a file executable by its group or others only): a
// folder, a link, an executable file or a plain one, anything else a
// submodule.
func parseTree(content []byte) ([]storedEntry, error) {
	var out []storedEntry
	for len(content) > 0 {
		sp := bytes.IndexByte(content, ' ')
		if sp <= 0 || sp > 7 {
			return nil, errors.New("an entry without a mode")
		}
		var mode uint32
		for _, c := range content[:sp] {
			if c < '0' || c > '7' {
				return nil, fmt.Errorf("the mode %q is not octal", content[:sp])
			}
			mode = mode<<3 | uint32(c-'0')
		}
		content = content[sp+1:]
		nul := bytes.IndexByte(content, 0)
		if nul <= 0 || len(content) < nul+1+20 {
			return nil, errors.New("an entry cut short")
		}
		e := storedEntry{name: content[:nul], mode: canonicalMode(mode)}
		if bytes.IndexByte(e.name, '/') >= 0 {
			return nil, fmt.Errorf("the name %q holds a slash", e.name)
		}
		if refusedName(e.name) {
			return nil, checkEntryName(string(e.name))
		}
		if e.mode == filemode.Symlink && linkName(e.name) {
			return nil, fmt.Errorf("a symbolic link named %q, which git takes for .gitmodules: %w", e.name, errBadTree)
		}
		copy(e.hash[:], content[nul+1:])
		content = content[nul+21:]
		if len(out) > 0 && compareEntries(out[len(out)-1], e) >= 0 {
			return nil, fmt.Errorf("the entry %q is out of order", e.name)
		}
		if e.isDir() {
			// A file or link of the same name sorts before the folder,
			// with only names that extend it in between.
			for k := len(out) - 1; k >= 0 && bytes.HasPrefix(out[k].name, e.name); k-- {
				if len(out[k].name) == len(e.name) {
					return nil, fmt.Errorf("%q is both a folder and a file or link: %w", e.name, errBadTree)
				}
			}
		}
		out = append(out, e)
	}
	return out, nil
}

// canonicalMode is the mode go-git's store gives a tree entry stored
// with mode m.
func canonicalMode(m uint32) filemode.FileMode {
	switch m & 0o170000 {
	case 0o040000:
		return filemode.Dir
	case 0o100000:
		if m&0o111 != 0 {
			return filemode.Executable
		}
		return filemode.Regular
	case 0o120000:
		return filemode.Symlink
	}
	return filemode.Submodule
}

// errBadTree marks a commit whose tree git refuses to check out: any
// tree parseTree refuses (an entry named "", ".", ".." or one NTFS, or
// on macOS HFS+, takes for ".git", a name with a slash, or on Windows a
// backslash, a name that is both a folder and a file, entries out of
// order), a link below a folder git takes for ".gitmodules", or folders
// deeper than maxTreeDepth; and, where the worktree's file system folds
// names, a folder with two names it takes for one (foldedNamesError,
// which git checks out with a warning). Written as it stands, such a
// tree could put files outside the worktree or in .git, or one file's
// bytes under another's path; it is the commit's fault, not the working
// copy's, so it is no reason to clone afresh.
var errBadTree = errors.New("git refuses to check out such a tree; revert or rewrite the commit that brought it on the remote branch")

// checkEntryName refuses a tree entry name git refuses to check out:
// empty, ".", "..", a name NTFS takes for ".git" (ntfsDotGit), which git
// refuses on every system, on macOS one HFS+ takes for it (hfsDot), or
// on Windows any name with a backslash (backslashSeparates).
func checkEntryName(name string) error {
	if refusedName([]byte(name)) {
		return fmt.Errorf("an entry named %q: %w", name, errBadTree)
	}
	return nil
}

// refusedName is checkEntryName's test, on the bytes of a tree entry.
func refusedName(name []byte) bool {
	if backslashSeparates && bytes.IndexByte(name, '\\') >= 0 {
		return true
	}
	switch len(name) {
	case 0:
		return true
	case 1:
		return name[0] == '.'
	case 2:
		return name[0] == '.' && name[1] == '.'
	}
	return ntfsAny(name, ntfsDotGit) || protectHFS && hfsDot(name, "git")
}

// backslashSeparates is set where a backslash in a name is a folder
// separator to the file system, so that "..\\x" would be written outside
// the worktree: on Windows, where git refuses any name with a backslash.
// (Windows is not a release target; its other rules, such as reserved
// names like "aux", are not checked.)
var backslashSeparates = runtime.GOOS == "windows"

// linkName reports whether git refuses a symbolic link named name: one
// NTFS, or on macOS HFS+, takes for ".gitmodules".
func linkName(name []byte) bool {
	return ntfsAny(name, ntfsGitmodules) || protectHFS && hfsDot(name, "gitmodules")
}

// protectHFS is git's core.protectHFS as git sets it by default: on
// macOS only, where HFS+ takes a name with invisible code points in it
// for ".git".
var protectHFS = runtime.GOOS == "darwin"

// hfsDot reports whether HFS+ takes name for "." followed by needle (in
// lower case ASCII), as git's core.protectHFS does: the code points
// HFS+ ignores (hfsNext) are skipped, and ASCII letters match in any
// case. Bytes that are not UTF-8 right after the needle count as the
// end of the name, as they do in git.
func hfsDot(name []byte, needle string) bool {
	r, name := hfsNext(name)
	if r != '.' {
		return false
	}
	for i := range len(needle) {
		r, name = hfsNext(name)
		if r >= 'A' && r <= 'Z' {
			r += 'a' - 'A'
		}
		if r != rune(needle[i]) {
			return false
		}
	}
	r, _ = hfsNext(name)
	return r == 0
}

// hfsNext returns the first code point of b that HFS+ does not ignore,
// and the bytes after it. It returns 0 at the end of b and at bytes git
// does not read as UTF-8: what Go's decoder refuses, and U+FFFE and
// U+FFFF. The ignored code points are git's list: the zero-width
// (non-)joiners, the direction marks, embeddings and overrides
// (U+200C–U+200F, U+202A–U+202E), the deprecated format characters
// U+206A–U+206F, and U+FEFF.
func hfsNext(b []byte) (rune, []byte) {
	for len(b) > 0 {
		r, n := utf8.DecodeRune(b)
		if r == utf8.RuneError && n == 1 || r == 0xfffe || r == 0xffff {
			return 0, nil
		}
		b = b[n:]
		if hfsIgnored(r) {
			continue
		}
		return r, b
	}
	return 0, nil
}

// hfsIgnored reports whether HFS+ ignores r in names (git's list, see
// hfsNext).
func hfsIgnored(r rune) bool {
	return r >= 0x200c && r <= 0x200f || r >= 0x202a && r <= 0x202e || r >= 0x206a && r <= 0x206f || r == 0xfeff
}

// ntfsAny reports whether is holds for name or for what follows any
// backslash in it: NTFS takes a backslash for a folder separator, and git
// checks each part.
func ntfsAny(name []byte, is func([]byte) bool) bool {
	for {
		if is(name) {
			return true
		}
		i := bytes.IndexByte(name, '\\')
		if i < 0 {
			return false
		}
		name = name[i+1:]
	}
}

// ntfsDotGit reports whether NTFS takes name for ".git", as git's
// core.protectNTFS (on by default on every system since git 2.24.1)
// does: ".git" or its short name "git~1", in any case, followed by
// nothing but dots and spaces up to the end, a ":" (an alternate data
// stream) or a backslash (a separator there).
func ntfsDotGit(name []byte) bool {
	for _, stem := range []string{".git", "git~1"} {
		if len(name) >= len(stem) && bytes.EqualFold(name[:len(stem)], []byte(stem)) {
			return ntfsTail(name[len(stem):], true)
		}
	}
	return false
}

// ntfsGitmodules reports whether NTFS takes name for ".gitmodules": the
// name itself, its short name "gitmod~1" to "gitmod~4", or a short name
// of the hashed form, up to six letters of "gi7eba", a "~", a digit from
// 1 to 9 and more digits, eight characters in all; in any case, followed
// by what ntfsTail allows, a backslash not among it. git refuses a
// symbolic link so named.
func ntfsGitmodules(name []byte) bool {
	if len(name) >= 11 && bytes.EqualFold(name[:11], []byte(".gitmodules")) {
		return ntfsTail(name[11:], false)
	}
	if len(name) < 8 {
		return false
	}
	if bytes.EqualFold(name[:6], []byte("gitmod")) && name[6] == '~' && name[7] >= '1' && name[7] <= '4' {
		return ntfsTail(name[8:], false)
	}
	tilde := bytes.IndexByte(name[:7], '~')
	if tilde < 0 || !bytes.EqualFold(name[:tilde], []byte("gi7eba"[:tilde])) || name[tilde+1] < '1' || name[tilde+1] > '9' {
		return false
	}
	for _, c := range name[tilde+2 : 8] {
		if c < '0' || c > '9' {
			return false
		}
	}
	return ntfsTail(name[8:], false)
}

// ntfsTail reports whether rest, after a name NTFS takes for another,
// is nothing but dots and spaces up to its end, a ":", or a backslash
// when backslash is set (git's test for ".git" stops there, its test for
// ".gitmodules" does not).
func ntfsTail(rest []byte, backslash bool) bool {
	for _, c := range rest {
		switch {
		case c == ':', c == '\\' && backslash:
			return true
		case c == '.', c == ' ':
		default:
			return false
		}
	}
	return true
}

// checkLinkPath refuses the path of a symbolic link that git refuses:
// git checks its name (linkName) and every folder of its path
// (linkFolder) for what NTFS, or on macOS HFS+, takes for ".gitmodules".
func checkLinkPath(p string) error {
	folders, name := path.Split(p)
	refused := ""
	for folder := range strings.SplitSeq(strings.TrimSuffix(folders, "/"), "/") {
		if folder != "" && linkFolder([]byte(folder)) {
			refused = folder
		}
	}
	if linkName([]byte(name)) {
		refused = name
	}
	if refused != "" {
		return fmt.Errorf("%s: %q, which git takes for .gitmodules in the path of a symbolic link: %w", p, refused, errBadTree)
	}
	return nil
}

// linkFolder reports whether git refuses a symbolic link below a folder
// named name. git reads the link's path on past the folder: its NTFS
// test (at the folder's start and after each backslash in it) meets the
// "/" that follows, where only a ":" before it ends a name NTFS takes
// for ".gitmodules" ("gitmod~1:x" is refused, "gitmod~1" and
// ".gitmodules." are not); a folder named ".gitmodules" in any case is
// refused, as is, on macOS, one HFS+ takes for it, where "/" ends the
// name.
func linkFolder(name []byte) bool {
	return bytes.EqualFold(name, []byte(".gitmodules")) ||
		ntfsAny(append(name[:len(name):len(name)], '/'), ntfsGitmodules) ||
		protectHFS && hfsDot(name, "gitmodules")
}

// checkEntryPath is checkEntryName for each folder and file of path p,
// before it is written in the worktree.
func checkEntryPath(p string) error {
	for name := range strings.SplitSeq(p, "/") {
		if err := checkEntryName(name); err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
	}
	return nil
}
