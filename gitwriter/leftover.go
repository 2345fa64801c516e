package gitwriter

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/imagebump/imagebump/internal/retry"
)

// What a killed cycle leaves in a working copy: a cycle holds its working
// copy alone (cycle locks the workdir), so a lock file or the part of a
// pack there is either a killed cycle's or a git command's that someone
// runs in the working copy. A killed cycle's would block every later
// commit (a lock) or pile up in a crash loop (a part of a pack); a running
// git's must not be pulled from under it. Nothing tells them apart but
// time: git writes its part of a pack as it goes and holds a lock for as
// long as its command runs, while what a killed cycle left no longer
// changes. A lock that stays unchanged for long (git commit's, while its
// editor is open) is told by the git process that runs in the working
// copy, where /proc shows it (gitWorkingIn).

// leftAge is how long a lock file or the part of a pack must have gone
// unchanged before Open takes it for what a killed cycle left. A variable
// for tests, which set it only outside parallel tests.
var leftAge = 10 * time.Second

// leftPoll is how often a young lock is looked at again.
const leftPoll = 50 * time.Millisecond

// settled reports whether a file last modified at mod has gone unchanged
// for age at now. A time as far ahead of now counts too: the clock was set
// back since, and no one writing now has written it.
func settled(mod, now time.Time, age time.Duration) bool {
	d := now.Sub(mod)
	return d >= age || d <= -age
}

// leftTemp reports whether e is a temporary file of git's or imagebump's
// (tmp_*) unchanged for age at now: what Open removes from the pack folder
// after leftAge, and a fold from the whole store after staleAge.
func leftTemp(e os.DirEntry, now time.Time, age time.Duration) bool {
	if !strings.HasPrefix(e.Name(), "tmp_") || !e.Type().IsRegular() {
		return false
	}
	fi, err := e.Info()
	return err == nil && settled(fi.ModTime(), now, age)
}

// removeLeftLocks removes the index.lock and shallow.lock a killed cycle
// left. A lock modified within leftAge is waited for: it goes once it has
// stayed the same file, unchanged, for leftAge, or once its owner removes
// it. A lock that changes meanwhile belongs to a command still running
// there, and fails the cycle; the next one looks again.
func (r *Repo) removeLeftLocks(ctx context.Context) error {
	for _, name := range []string{"index.lock", "shallow.lock"} {
		path := filepath.Join(r.dir, ".git", name)
		left, err := r.waitLeft(ctx, path, "a lock", "lock")
		if err != nil {
			return err
		}
		if left && os.Remove(path) == nil {
			r.log.Info("removed the "+name+" an interrupted cycle left", "workdir", r.dir)
		}
	}
	return nil
}

// waitLeft reports whether the file at path is there and left by a killed
// cycle, waiting up to leftAge for a young one to settle or go. what names
// the file in the log line ("a lock"), and key its attribute there.
func (r *Repo) waitLeft(ctx context.Context, path, what, key string) (bool, error) {
	first, err := os.Lstat(path)
	if err != nil {
		return false, nil // not there
	}
	if !first.Mode().IsRegular() {
		// Neither git nor a cycle makes one: someone's, left alone.
		r.log.Warn("a folder or symbolic link stands where git keeps a lock file, and every cycle that writes there fails until it goes: remove it", "lock", path, "mode", first.Mode().Type().String())
		return false, nil
	}
	if settled(first.ModTime(), time.Now(), leftAge) {
		return r.notInUse(path)
	}
	r.log.Info("waiting for "+what+" in the working copy to settle or go: it changed in the last "+leftAge.String(), key, path)
	deadline := time.Now().Add(leftAge)
	for {
		if err := retry.Sleep(ctx, leftPoll); err != nil {
			return false, fmt.Errorf("waiting for %s to go: %w", path, err)
		}
		fi, err := os.Lstat(path)
		if err != nil {
			return false, nil // its owner removed it
		}
		if !os.SameFile(first, fi) || !fi.ModTime().Equal(first.ModTime()) || fi.Size() != first.Size() || fi.Mode() != first.Mode() {
			return false, fmt.Errorf("%s is in use: another program (a git command run in imagebump's working copy?) changed it in the last %s; "+
				"imagebump's working copy is its own, so stop that program; the next cycle looks again", path, leftAge)
		}
		if settled(fi.ModTime(), time.Now(), leftAge) || !time.Now().Before(deadline) {
			return r.notInUse(path)
		}
	}
}

// notInUse reports whether the file at path, unchanged for leftAge, is a
// killed cycle's: not while a git command runs in the working copy, as
// git commit holds index.lock unchanged for as long as its editor is
// open. Where it cannot be seen (another user's git, no /proc), time
// alone tells.
func (r *Repo) notInUse(path string) (bool, error) {
	if pid, name, ok := gitWorkingIn(r.dir); ok {
		return false, fmt.Errorf("%s is in use: %s (process %d) runs in the working copy (a git commit waiting for its editor?); "+
			"imagebump's working copy is its own, so end that command; the next cycle looks again", path, name, pid)
	}
	return true, nil
}

// removeLeftParts removes the temporary files of packs being written (a
// fetch's, a commit's, a fold's) that a killed cycle left in the pack
// folder, and returns the packs there. A part modified within leftAge may
// be a running git's, and stays for a later Open.
func (r *Repo) removeLeftParts(packDir string) []string {
	entries, _ := os.ReadDir(packDir) // in name order, as a glob's
	now := time.Now()
	removed := 0
	var packs []string
	for _, e := range entries {
		switch name := e.Name(); {
		case strings.HasPrefix(name, "tmp_"):
			if leftTemp(e, now, leftAge) && os.Remove(filepath.Join(packDir, name)) == nil {
				removed++
			}
		case strings.HasSuffix(name, ".pack"):
			packs = append(packs, filepath.Join(packDir, name))
		}
	}
	if removed > 0 {
		r.log.Info("removed the partial pack files an interrupted cycle left", "files", removed, "workdir", r.dir)
	}
	return packs
}

// waitYoungTemps waits for the temporary files a git command writes in
// the object store as it goes (a fetch's pack, a commit's loose objects:
// tmp_* in the pack folder and in the fan-out folders) to settle or go,
// before the working copy is emptied for a new clone: a young one may be
// a running git's, whose folder a clone would pull from under it. Each
// young file is waited for as a lock is (waitLeft), and one that changes
// meanwhile fails the cycle, with the working copy left as it is.
func (r *Repo) waitYoungTemps(ctx context.Context) error {
	if pid, ok := gcRunning(r.dir, time.Now()); ok {
		return fmt.Errorf("git gc is running in the working copy (process %d, named in .git/gc.pid); imagebump's working copy is its own, so stop it or let it end; the next cycle looks again", pid)
	}
	if pid, name, ok := gitWorkingIn(r.dir); ok {
		return fmt.Errorf("%s (process %d) runs in the working copy %s, which a new clone would empty under it; imagebump's working copy is its own, so end that command; the next cycle looks again", name, pid, r.dir)
	}
	objects := filepath.Join(r.dir, filepath.FromSlash(objectsDir))
	now := time.Now()
	for _, f := range append([]string{"pack"}, fanOuts...) {
		entries, _ := os.ReadDir(filepath.Join(objects, f))
		for _, e := range entries {
			// tmp_*: a fetch's or a commit's; .tmp-*: a repack's packs.
			temp := strings.HasPrefix(e.Name(), "tmp_") || strings.HasPrefix(e.Name(), ".tmp-")
			if !temp || !e.Type().IsRegular() || leftTemp(e, now, leftAge) {
				continue
			}
			if _, err := r.waitLeft(ctx, filepath.Join(objects, f, e.Name()), "a temporary file of git's", "file"); err != nil {
				return err
			}
		}
	}
	return nil
}

// gcStale is how old a gc.pid may be before git takes its gc as dead
// whatever its process: git's own rule.
const gcStale = 12 * time.Hour

// gcRunning reports whether a git gc runs in the working copy at dir, and
// its process: git writes .git/gc.pid ("PID HOST") when gc starts, before
// it writes anything in the object store, and removes it when done. As
// git does, a file older than gcStale is a dead gc's; so is one naming
// this host and a process that is not running. A gc of another host (a
// shared volume) is taken as running until the file is stale.
func gcRunning(dir string, now time.Time) (int, bool) {
	path := filepath.Join(dir, ".git", "gc.pid")
	fi, err := os.Lstat(path)
	if err != nil || !fi.Mode().IsRegular() || now.Sub(fi.ModTime()) > gcStale {
		return 0, false
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, false
	}
	var pid int
	var host string
	if n, _ := fmt.Sscanf(string(data), "%d %s", &pid, &host); n != 2 || pid <= 0 {
		return 0, false
	}
	if me, err := os.Hostname(); err == nil && me != host {
		return pid, true
	}
	return pid, processRunning(pid)
}

// processRunning reports whether a process with this pid runs here: a
// signal 0 reaches it, or it is someone else's (on Windows: it can be
// opened).
func processRunning(pid int) bool {
	p, err := os.FindProcess(pid)
	if err != nil {
		return false
	}
	if runtime.GOOS == "windows" {
		// FindProcess opens the process there, and fails when there is
		// none; no signal 0 is sent.
		p.Release()
		return true
	}
	err = p.Signal(syscall.Signal(0))
	return err == nil || errors.Is(err, syscall.EPERM)
}
