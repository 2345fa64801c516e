package gitwriter

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"golang.org/x/text/cases"
	"golang.org/x/text/unicode/norm"
)

// A file system may take two names for one: names that differ in case
// (macOS's and Windows' defaults), or in Unicode normalization form (APFS
// and HFS+, even case-sensitive ones). A tree holding two such names in
// one folder would be written as one file, its bytes the last written: a
// cycle would then read one path's bytes for the other's, and commit
// them. Where the worktree's file system folds names so, such a tree is
// refused (foldedNamesError).

// namesFoldIn probes the file system of dir (probeNameFolding). It is a
// variable so that tests can give an answer this machine's file systems
// do not.
var namesFoldIn = probeNameFolding

// probeNameFolding creates a file in dir and asks for it by another case
// and by another normalization form: found either way, the file system
// folds names.
func probeNameFolding(dir string) (bool, error) {
	// The names asked for have the ASCII letters in upper case, or the "é"
	// decomposed (NFD) where the name made has it composed (NFC).
	const made = "imagebump-fold-probe-\u00e9"
	p := filepath.Join(dir, made)
	if err := os.WriteFile(p, nil, 0o644); err != nil {
		return false, err
	}
	defer os.Remove(p)
	for _, other := range []string{"IMAGEBUMP-FOLD-PROBE-\u00e9", "imagebump-fold-probe-e\u0301"} {
		// The names are the probe's own: finding the other spelling at
		// all means the file system took it for the one made (a file
		// system that gives each name its own inode number, as some
		// FUSE and CIFS mounts do, would fool os.SameFile).
		_, err := os.Lstat(filepath.Join(dir, other))
		switch {
		case err == nil:
			return true, nil
		case !errors.Is(err, os.ErrNotExist):
			return false, err
		}
	}
	return false, nil
}

// namesFold reports whether the worktree's file system folds names,
// probed in its .git folder on first use. A probe that fails counts as
// folding: it only makes a tree with such names refused.
func (r *Repo) namesFold() bool {
	if r.dir == "" {
		return false
	}
	return r.probed(&r.foldsNames, namesFoldIn, true, "whether the file system folds names")
}

// probed returns *answer, asking probe of the worktree's .git folder on
// first use; a probe that fails answers failed, which errs on the safe
// side, and says so in the debug log.
func (r *Repo) probed(answer **bool, probe func(dir string) (bool, error), failed bool, what string) bool {
	if *answer == nil {
		yes, err := probe(filepath.Join(r.dir, ".git"))
		if err != nil {
			r.log.Debug("could not tell "+what+"; taking the safe answer", "answer", failed, "error", err)
			yes = failed
		}
		*answer = &yes
	}
	return **answer
}

// nameFoldKey is what a file system that folds names takes name for, or
// more: decomposed (NFD, as APFS stores names), fully case-folded (as
// Linux's casefold does: "ß" is "ss"), upper- then lower-cased (as
// NTFS's upcase table would, one rune for one), and decomposed again,
// without the code points HFS+ ignores in names (hfsIgnored: "a\u200cb"
// is "ab" there). Folding more than a file system does only refuses more
// trees. The caser is cases.Fold(), one per folder: a Caser is not
// shared.
func nameFoldKey(c cases.Caser, name string) string {
	s := c.String(norm.NFD.String(name))
	s = norm.NFD.String(strings.ToLower(strings.ToUpper(s)))
	return strings.Map(func(r rune) rune {
		if hfsIgnored(r) {
			return -1
		}
		return r
	}, s)
}

// foldedPair returns two names of a folder's entries (as name gives
// them) that nameFoldKey takes for one, or "" and "".
func foldedPair[E any](entries []E, name func(E) string) (string, string) {
	if len(entries) < 2 {
		return "", ""
	}
	c := cases.Fold()
	seen := make(map[string]string, len(entries))
	for _, e := range entries {
		n := name(e)
		k := nameFoldKey(c, n)
		if other, ok := seen[k]; ok {
			return other, n
		}
		seen[k] = n
	}
	return "", ""
}

// foldedNamesError refuses a tree with two paths the worktree's file
// system takes for one. It is an errBadTree: the commit, not the working
// copy, is at fault, so the clone is kept.
type foldedNamesError struct{ a, b string }

func (e *foldedNamesError) Error() string {
	return fmt.Sprintf("%q and %q would be one file in the working copy: its file system takes names that differ only in case or in Unicode normalization form for one, "+
		"so the bytes of one would be read, edited and committed as the other's. Rename one of them on the remote branch, "+
		"or put the working copy on a file system that tells them apart (--workdir for run and serve; TMPDIR for plan, and for run without --workdir; on macOS, a case-sensitive APFS volume for case)", e.a, e.b)
}

func (e *foldedNamesError) Is(target error) bool { return target == errBadTree }

// namesCheckedFile, in .git, marks a working copy whose head had every
// folder checked for names its file system takes for one (after a clone,
// or checkNamesOnce); every later move walks, and checks, what changed.
const namesCheckedFile = "imagebump-fold-checked"

// markNamesChecked records that the head's every folder was checked, on
// a file system that folds names.
func (r *Repo) markNamesChecked() {
	if r.namesFold() {
		_ = os.WriteFile(filepath.Join(r.dir, ".git", namesCheckedFile), nil, 0o644)
	}
}

// checkNamesOnce checks every folder of the head's tree, once per
// working copy, on a file system that folds names: a working copy an
// older imagebump checked out may hold two such names in a folder no
// move walks again.
func (r *Repo) checkNamesOnce() error {
	if !r.namesFold() {
		return nil
	}
	if _, err := os.Stat(filepath.Join(r.dir, ".git", namesCheckedFile)); err == nil {
		return nil
	}
	ps, _ := r.openPacks() // nil: go-git's store answers
	if ps != nil {
		defer ps.Close()
	}
	if _, err := r.diffUncached(ps, plumbing.ZeroHash, r.head); err != nil {
		return fmt.Errorf("checking the names of %s: %w", shortHash(r.head), err)
	}
	r.markNamesChecked()
	return nil
}
