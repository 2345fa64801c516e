package gitwriter

import (
	"os"
	"path/filepath"
)

// A file system may keep no executable bits: CIFS and Azure Files mounts
// show every file with the mode the mount gives, FAT none. git finds out
// when it makes a repository (core.fileMode) and, where the bits are not
// kept, leaves them out of its comparisons. A worktree file whose bit
// differs from the index's is then not a change to reset on every cycle;
// commits keep the base's bit in any case (keptMode).

// execBitsIn probes the file system of dir (probeExecBits); tests give
// another answer.
var execBitsIn = probeExecBits

// probeExecBits creates a file in dir, makes it executable and not again,
// and reports whether the file system kept each change.
func probeExecBits(dir string) (bool, error) {
	p := filepath.Join(dir, "imagebump-mode-probe")
	if err := os.WriteFile(p, nil, 0o644); err != nil {
		return false, err
	}
	defer os.Remove(p)
	for _, mode := range []os.FileMode{0o755, 0o644} {
		if err := os.Chmod(p, mode); err != nil {
			return false, err
		}
		fi, err := os.Lstat(p)
		if err != nil {
			return false, err
		}
		if fi.Mode()&0o100 != mode&0o100 {
			return false, nil
		}
	}
	return true, nil
}

// keepsExecBits reports whether the worktree's file system keeps files'
// executable bits, probed in its .git folder on first use. A probe that
// fails counts as keeping them: a file whose bit differs is then written
// again, as before the probe.
func (r *Repo) keepsExecBits() bool {
	return r.probed(&r.execBits, execBitsIn, true, "whether the file system keeps executable bits")
}
