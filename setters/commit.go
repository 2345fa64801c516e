package setters

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/imagebump/imagebump/internal/durable"
)

// Apply writes in two phases. While the workers read and edit, each changed
// file is staged: its new bytes go to a temporary file in the same folder,
// with the original's mode, unsynced. Once every file is staged, one
// syncfs(2) per file system makes all of them durable at once (platforms
// without syncfs sync each temporary file instead), and only then are they
// renamed over the originals, each after checking that the original still
// holds the bytes the edit was computed from; a last sync makes the renames
// durable. Syncing every file and its folder one by one took most of apply's
// time; the result is as safe: a reader, or the repository after a crash,
// sees each file old or new, never a part. Until the renames start, nothing
// in the repository has changed, so a cancelled run or a failed sync only
// removes the temporary files.

// ErrChanged reports a file that changed on disk while it was being edited
// (another apply, an editor, a checkout): it is left as the other writer
// left it, and its Problem's WriteError wraps ErrChanged.
var ErrChanged = errors.New("the file changed while it was being edited; left as is")

// staged is a changed file whose new bytes wait in a temporary file next to
// it.
type staged struct {
	rel, abs string
	// tmp is the temporary file; empty once renamed or removed.
	tmp string
	// dev is the file system the file lives on.
	dev uint64
	// size and sum identify the bytes the edit was computed from.
	size int
	sum  [sha256.Size]byte
	// changes are the file's changed scalars, reported once it is renamed.
	changes []Change
	// before and after are kept for Options.OnEdit only.
	before, after []byte
	// entry is the marker index's entry for the new content, recorded once
	// the file is renamed.
	entry *fileEntry
	// err is why the file was not renamed.
	err error
}

// stage writes data, the new content of the regular file at abs whose
// content was old, to a temporary file in the same folder with the same
// mode. The temporary file is synced only when durable is set and no
// syncfs(2) can do it later (syncEachFile).
func stage(abs string, old, data []byte, durable bool) (*staged, error) {
	fi, err := os.Lstat(abs)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is no longer a regular file", filepath.Base(abs))
	}
	own := ownerOf(fi)
	if err := checkLinks(own); err != nil {
		return nil, err
	}
	dir, base := filepath.Split(abs)
	tmp, err := writeTemp(dir, base, fi.Mode(), own, data, durable && syncEachFile)
	if err != nil {
		return nil, err
	}
	return &staged{abs: abs, tmp: tmp, dev: devOf(fi), size: len(old), sum: sha256.Sum256(old)}, nil
}

// checkLinks refuses a file with more than one name: a rename would give
// this name a new file and leave the other names on the old one, so the
// links would silently split.
func checkLinks(own owner) error {
	if own.links > 1 {
		return fmt.Errorf("the file has %d hard links, and replacing it would split them; not rewritten (make it a single file, or a symlink)", own.links)
	}
	return nil
}

// wouldStage reports why stage would refuse to rewrite the file at abs,
// for a run that does not write: so that plan reports what apply would.
func wouldStage(abs string) error {
	fi, err := os.Lstat(abs)
	if err != nil {
		return err
	}
	return checkLinks(ownerOf(fi))
}

// discard removes the temporary file, if it is still there.
func (s *staged) discard() {
	if s.tmp != "" {
		os.Remove(s.tmp)
		s.tmp = ""
	}
}

// commit renames the temporary file over the original if the original
// still holds the bytes the edit was computed from; otherwise, or if the
// rename fails, it removes the temporary file. buf is scratch space.
func (s *staged) commit(buf *bytes.Buffer) error {
	err := s.check(buf)
	if err == nil {
		err = os.Rename(s.tmp, s.abs)
	}
	if err != nil {
		s.discard()
		return err
	}
	s.tmp = ""
	return nil
}

// check reports whether the original is still the regular file that was
// read.
func (s *staged) check(buf *bytes.Buffer) error {
	fi, err := os.Lstat(s.abs)
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("%s is no longer a regular file", filepath.Base(s.abs))
	}
	if fi.Size() != int64(s.size) {
		return ErrChanged
	}
	if err := readFile(s.abs, buf, -1); err != nil {
		return err
	}
	if buf.Len() != s.size || sha256.Sum256(buf.Bytes()) != s.sum {
		return ErrChanged
	}
	return nil
}

// writeAtomic replaces the regular file at path, whose content was old,
// with data through a temporary file in the same folder, keeping its mode,
// so readers see the old or the new file, never a part. If the file no
// longer holds old, it is left alone. buf is scratch space. It is the
// one-file form of what Apply does for all its files at once.
func writeAtomic(path string, old, data []byte, buf *bytes.Buffer) error {
	s, err := stage(path, old, data, true)
	if err != nil {
		return err
	}
	files := []*staged{s}
	if err := syncStaged(files); err != nil {
		s.discard()
		return err
	}
	if err := s.commit(buf); err != nil {
		return err
	}
	// The file is replaced; a folder that cannot be synced is not an
	// error, as not every file system supports it.
	_ = syncRenamed(files)
	return nil
}

// fsDirs returns one folder per file system the files live on.
func fsDirs(files []*staged) []string {
	seen := map[uint64]bool{}
	var dirs []string
	for _, s := range files {
		if !seen[s.dev] {
			seen[s.dev] = true
			dirs = append(dirs, filepath.Dir(s.abs))
		}
	}
	return dirs
}

// syncEach syncs each file's temporary file, for when syncfs(2) is not
// available.
func syncEach(files []*staged) error {
	for _, s := range files {
		if s.tmp == "" {
			continue
		}
		if err := durable.Sync(s.tmp); err != nil {
			return fmt.Errorf("syncing %s: %w", filepath.Base(s.tmp), err)
		}
	}
	return nil
}

// syncDirs syncs the folder of each renamed file once, so the renames are
// durable. Not every file system can sync a folder; the first error is
// returned after trying them all.
func syncDirs(files []*staged) error {
	seen := map[string]bool{}
	var first error
	for _, s := range files {
		dir := filepath.Dir(s.abs)
		if s.tmp != "" || s.err != nil || seen[dir] {
			continue
		}
		seen[dir] = true
		if err := durable.Sync(dir); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// keptMode is the part of an fs.FileMode a temporary file takes over.
const keptMode = fs.ModePerm | fs.ModeSetuid | fs.ModeSetgid | fs.ModeSticky
