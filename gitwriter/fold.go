package gitwriter

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

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
		fi, err := os.Lstat(filepath.Join(dir, probe.name))
		switch {
		case err == nil:
			same, err := os.Lstat(p)
			*probe.set = err == nil && os.SameFile(fi, same)
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

// key is the name f takes name for.
func (f folding) key(name []byte) string {
	s := string(name)
	if f.forms {
		s = norm.NFC.String(s)
	}
	if f.cases {
		s = strings.ToLower(strings.ToUpper(s))
	}
	return s
}

// checkFolded refuses a folder (at path dir, with entries) that holds
// two names f takes for one.
func (f folding) checkFolded(dir string, entries []storedEntry) error {
	if !f.any() || len(entries) < 2 {
		return nil
	}
	seen := make(map[string][]byte, len(entries))
	for _, e := range entries {
		k := f.key(e.name)
		if other, ok := seen[k]; ok {
			return &foldedError{dir + string(other), dir + string(e.name), f}
		}
		seen[k] = e.name
	}
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
