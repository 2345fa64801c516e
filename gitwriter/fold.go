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

// folding says which names the worktree's file system takes for one:
// names that differ in case (macOS's and Windows' defaults), or in
// Unicode normalization form (APFS and HFS+, even case-sensitive ones).
// A tree holding two such names in one folder would be written as one
// file, its bytes the last written: a cycle would then read one path's
// bytes for the other's, and commit them.
type folding struct {
	cases, forms bool
}

func (f folding) any() bool { return f.cases || f.forms }

// foldingOf probes the file system of dir: it creates a file there and
// asks for it by another case, and by another normalization form. It is
// a variable so that tests can give a folding this machine's file
// systems do not.
var foldingOf = probeFolding

func probeFolding(dir string) (folding, error) {
	// The name asked for has its ASCII letters in upper case, or its "é"
	// decomposed (NFD) where the name made has it composed (NFC).
	const made, otherCase, otherForm = "imagebump-fold-probe-\u00e9", "IMAGEBUMP-FOLD-PROBE-\u00e9", "imagebump-fold-probe-e\u0301"
	p := filepath.Join(dir, made)
	if err := os.WriteFile(p, nil, 0o644); err != nil {
		return folding{}, err
	}
	defer os.Remove(p)
	var f folding
	for _, probe := range []struct {
		name string
		set  *bool
	}{{otherCase, &f.cases}, {otherForm, &f.forms}} {
		// The names are the probe's own: finding the other spelling at
		// all means the file system took it for the one made (a file
		// system that gives each name its own inode number, as some
		// FUSE and CIFS mounts do, would fool os.SameFile).
		_, err := os.Lstat(filepath.Join(dir, probe.name))
		switch {
		case err == nil:
			*probe.set = true
		case !errors.Is(err, os.ErrNotExist):
			return folding{}, err
		}
	}
	return f, nil
}

// folding returns the folding of the worktree's file system, probed in
// its .git folder on first use. A probe that fails counts as both kinds
// of folding: it only makes a tree with such names refused.
func (r *Repo) folding() folding {
	if r.dir == "" {
		return folding{}
	}
	if r.folds == nil {
		f, err := foldingOf(filepath.Join(r.dir, ".git"))
		if err != nil {
			r.log.Debug("could not tell whether the file system folds names; taking it that it does", "error", err)
			f = folding{cases: true, forms: true}
		}
		r.folds = &f
	}
	return *r.folds
}

// foldKey is what a file system that folds names takes name for, or
// more: decomposed (NFD, as APFS stores names), fully case-folded (as
// Linux's casefold does: "ß" is "ss"), upper- then lower-cased (as
// NTFS's upcase table would, one rune for one), and decomposed again.
// Folding more than a file system does only refuses more trees. The
// caser is cases.Fold(), one per check: a Caser is not shared.
func foldKey(c cases.Caser, name string) string {
	s := c.String(norm.NFD.String(name))
	return norm.NFD.String(strings.ToLower(strings.ToUpper(s)))
}

// checkFolded refuses a folder (at path dir, with entries) that holds
// two names f takes for one.
func (f folding) checkFolded(dir string, entries []storedEntry) error {
	return checkFoldedNames(f, dir, entries, func(e storedEntry) string { return string(e.name) })
}

// checkFoldedNames is checkFolded for entries whose names name gives.
func checkFoldedNames[E any](f folding, dir string, entries []E, name func(E) string) error {
	if !f.any() || len(entries) < 2 {
		return nil
	}
	c := cases.Fold()
	seen := make(map[string]string, len(entries))
	for _, e := range entries {
		n := name(e)
		k := foldKey(c, n)
		if other, ok := seen[k]; ok {
			return &foldedError{dir + other, dir + n, f}
		}
		seen[k] = n
	}
	return nil
}

// foldCheckedFile, in .git, marks a working copy whose head had every
// folder checked for names its file system takes for one (after a clone,
// or checkFoldedOnce); every later move walks, and checks, what changed.
const foldCheckedFile = "imagebump-fold-checked"

// markFoldChecked records that the head's every folder was checked, on a
// file system that folds names.
func (r *Repo) markFoldChecked() {
	if r.folding().any() {
		_ = os.WriteFile(filepath.Join(r.dir, ".git", foldCheckedFile), nil, 0o644)
	}
}

// checkFoldedOnce checks every folder of the head's tree, once per
// working copy, on a file system that folds names: a working copy an
// older imagebump checked out may hold two such names in a folder no
// move walks again.
func (r *Repo) checkFoldedOnce() error {
	if !r.folding().any() {
		return nil
	}
	if _, err := os.Stat(filepath.Join(r.dir, ".git", foldCheckedFile)); err == nil {
		return nil
	}
	ps, _ := r.openPacks() // nil: go-git's store answers
	if ps != nil {
		defer ps.Close()
	}
	if _, err := r.diffUncached(ps, plumbing.ZeroHash, r.head); err != nil {
		return fmt.Errorf("checking the names of %s: %w", shortHash(r.head), err)
	}
	r.markFoldChecked()
	return nil
}

// foldedError is checkFolded's refusal. It is an errBadTree: the commit,
// not the working copy, is at fault here, so the clone is kept.
type foldedError struct {
	a, b string
	f    folding
}

func (e *foldedError) Error() string {
	how := "in case"
	switch {
	case e.f.cases && e.f.forms:
		how = "in case or in Unicode normalization form"
	case e.f.forms:
		how = "in Unicode normalization form"
	}
	return fmt.Sprintf("%q and %q would be one file in the working copy: its file system does not tell names apart that differ %s, "+
		"so the bytes of one would be read, edited and committed as the other's. Rename one of them on the remote branch, "+
		"or put --workdir on a file system that tells them apart (on macOS, a case-sensitive APFS volume for case)", e.a, e.b, how)
}

func (e *foldedError) Is(target error) bool { return target == errBadTree }
