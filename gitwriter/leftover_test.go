package gitwriter

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/imagebump/imagebump/internal/testkit/testgit"
)

// leaveOld makes the file at path look as a killed cycle left it a minute
// ago: unchanged for longer than leftAge.
func leaveOld(t *testing.T, path string) {
	t.Helper()
	old := time.Now().Add(-time.Minute)
	if err := os.Chtimes(path, old, old); err != nil {
		t.Fatal(err)
	}
}

// setLeftAge sets leftAge for the test, and back after it. Not for
// parallel tests.
func setLeftAge(t *testing.T, d time.Duration) {
	t.Helper()
	saved := leftAge
	leftAge = d
	t.Cleanup(func() { leftAge = saved })
}

// keepWriting writes the file at path every 20 ms, a byte longer each
// time, as a running git writes its lock or part of a pack, until stop
// closes.
func keepWriting(path string, stop <-chan struct{}) {
	for i := 0; ; i++ {
		select {
		case <-stop:
			return
		case <-time.After(20 * time.Millisecond):
		}
		os.WriteFile(path, []byte(strings.Repeat("x", i)), 0o644)
	}
}

func TestSettled(t *testing.T) {
	now := time.Date(2026, 12, 4, 23, 0, 0, 0, time.UTC)
	for _, tt := range []struct {
		name string
		mod  time.Time
		want bool
	}{
		{"written just now", now, false},
		{"written a second ago", now.Add(-time.Second), false},
		{"unchanged for leftAge", now.Add(-leftAge), true},
		{"unchanged for an hour", now.Add(-time.Hour), true},
		{"a second ahead (clock skew)", now.Add(time.Second), false},
		{"an hour ahead (the clock was set back)", now.Add(time.Hour), true},
	} {
		if got := settled(tt.mod, now, leftAge); got != tt.want {
			t.Errorf("%s: settled = %v, want %v", tt.name, got, tt.want)
		}
	}
}

// TestLeftLocks: a lock file in the working copy is either a killed
// cycle's or a running git command's. Open removes one unchanged for
// leftAge at once, waits for a young one to settle or go, and fails,
// leaving it, when it changes meanwhile. Not parallel: it sets leftAge.
func TestLeftLocks(t *testing.T) {
	setLeftAge(t, 400*time.Millisecond)
	for _, name := range []string{"index.lock", "shallow.lock"} {
		t.Run(name, func(t *testing.T) {
			bare := testgit.NewBare(t, seed)
			for _, tt := range []struct {
				name string
				// hold changes or removes the lock while Open waits;
				// it returns when stop closes.
				hold    func(lock string, stop <-chan struct{})
				wantErr bool // the lock is in use: Open fails, the lock stays
				removed bool // Open says it removed the lock
				waits   bool // Open waited leftAge for the lock to settle
			}{
				{name: "young, left", removed: true, waits: true},
				{name: "young, its owner removes it", hold: func(lock string, _ <-chan struct{}) {
					time.Sleep(100 * time.Millisecond)
					os.Remove(lock)
				}},
				{name: "in use", wantErr: true, hold: keepWriting},
				// As git takes a lock: a new file each time, once the
				// last one is renamed or removed.
				{name: "in use, made again", wantErr: true, hold: func(lock string, stop <-chan struct{}) {
					for {
						select {
						case <-stop:
							return
						case <-time.After(30 * time.Millisecond):
						}
						os.Remove(lock)
						os.WriteFile(lock, nil, 0o644)
					}
				}},
			} {
				t.Run(tt.name, func(t *testing.T) {
					logger, logs := newLogger()
					opts := Options{URL: fileURL(bare), Branch: "main", Workdir: t.TempDir(), Logger: logger}
					openClose(t, opts)
					lock := filepath.Join(opts.Workdir, ".git", name)
					write(t, lock, "")
					stop := make(chan struct{})
					var wg sync.WaitGroup
					if tt.hold != nil {
						wg.Go(func() { tt.hold(lock, stop) })
					}
					start := time.Now()
					r, err := Open(t.Context(), opts)
					took := time.Since(start)
					close(stop)
					wg.Wait()
					if tt.wantErr {
						if err == nil {
							r.Close()
							t.Fatal("Open succeeded with a lock another program kept changing")
						}
						for _, want := range []string{lock, "is in use", "next cycle"} {
							if !strings.Contains(err.Error(), want) {
								t.Errorf("error lacks %q: %v", want, err)
							}
						}
						if _, err := os.Lstat(lock); err != nil {
							t.Errorf("Open removed a lock in use: %v", err)
						}
						return
					}
					if err != nil {
						t.Fatal(err)
					}
					r.Close()
					if _, err := os.Lstat(lock); !os.IsNotExist(err) {
						t.Errorf("%s is still there (%v)", lock, err)
					}
					if got := strings.Contains(logs.String(), "removed the "+name); got != tt.removed {
						t.Errorf("Open logged the lock's removal: %v, want %v\n%s", got, tt.removed, logs)
					}
					if tt.waits && took < leftAge {
						t.Errorf("Open took %s with a lock written just now; want it to wait %s first", took, leftAge)
					}
					if !strings.Contains(logs.String(), "waiting for a lock") {
						t.Errorf("Open did not say it waited for the lock:\n%s", logs)
					}
				})
			}
		})
	}
}

// TestLeftLockCancelled: a cycle cancelled while it waits for a young lock
// stops waiting at once and says what it waited for.
func TestLeftLockCancelled(t *testing.T) {
	setLeftAge(t, time.Minute)
	bare := testgit.NewBare(t, seed)
	opts := Options{URL: fileURL(bare), Branch: "main", Workdir: t.TempDir()}
	openClose(t, opts)
	lock := filepath.Join(opts.Workdir, ".git", "index.lock")
	write(t, lock, "")
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	r, err := Open(ctx, opts)
	if err == nil {
		r.Close()
		t.Fatal("Open succeeded, cancelled while it waited for a lock")
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("Open took %s to stop once cancelled", took)
	}
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), fmt.Sprintf("waiting for %s", lock)) {
		t.Errorf("Open: %v; want the deadline, naming the lock", err)
	}
	if _, err := os.Lstat(lock); err != nil {
		t.Errorf("a cancelled Open removed the lock: %v", err)
	}
}

// TestLockDuringReset: a lock that turns up after Open looked for left
// ones (here a symbolic link, which Open leaves alone, with a warning)
// fails the cycle when the worktree moves to a new head. It made Open
// empty the working copy for a fresh clone, under the git command that
// held the lock.
func TestLockDuringReset(t *testing.T) {
	bare := testgit.NewBare(t, seed)
	logger, logs := newLogger()
	opts := Options{URL: fileURL(bare), Branch: "main", Workdir: t.TempDir(), Logger: logger}
	openClose(t, opts)
	mine := filepath.Join(opts.Workdir, ".git", "operator-notes")
	write(t, mine, "a file only this working copy has")
	lock := filepath.Join(opts.Workdir, ".git", "index.lock")
	if err := os.Symlink("elsewhere", lock); err != nil {
		t.Fatal(err)
	}
	testgit.Commit(t, bare, "main", map[string]string{"clusters/prod/app.yaml": "image: app:1.2.0\n"}, nil, "theirs")
	r, err := Open(t.Context(), opts)
	if err == nil {
		r.Close()
		t.Fatal("Open succeeded with the index locked while the worktree moved")
	}
	for _, want := range []string{"moving the worktree", lock + " exists"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q: %v", want, err)
		}
	}
	if strings.Contains(logs.String(), "re-cloning") {
		t.Errorf("Open re-cloned the working copy with a lock held:\n%s", logs)
	}
	if _, err := os.Lstat(mine); err != nil {
		t.Errorf("the working copy was emptied: %v", err)
	}
	if !strings.Contains(logs.String(), "a folder or symbolic link stands where git keeps a lock file") {
		t.Errorf("Open did not warn of the symbolic link:\n%s", logs)
	}
	if _, err := os.Lstat(lock); err != nil {
		t.Errorf("Open removed the symbolic link: %v", err)
	}
	if err := os.Remove(lock); err != nil {
		t.Fatal(err)
	}
	openClose(t, opts)
	if got, _ := os.ReadFile(filepath.Join(opts.Workdir, "clusters/prod/app.yaml")); string(got) != "image: app:1.2.0\n" {
		t.Errorf("after the lock went, app.yaml = %q", got)
	}
}

// TestRecloneWaitsForTemps: a working copy to be cloned afresh (here one
// of another URL) is emptied only once the temporary files a git command
// writes in the object store as it goes have settled. One that keeps
// changing fails the cycle, with the working copy left whole; one left
// unchanged is waited for, then goes with the rest. Not parallel: it sets
// leftAge.
func TestRecloneWaitsForTemps(t *testing.T) {
	setLeftAge(t, 400*time.Millisecond)
	for _, tt := range []struct {
		name    string
		temp    string // under .git/objects
		busy    bool   // written to all along
		wantErr bool
	}{
		{name: "a fetch's pack, being written", temp: "pack/tmp_pack_Xy12", busy: true, wantErr: true},
		{name: "a commit's loose object, being written", temp: "3f/tmp_obj_Ab9", busy: true, wantErr: true},
		{name: "a young loose object, left", temp: "3f/tmp_obj_Ab9"},
		{name: "a young pack part, left", temp: "pack/tmp_idx_77"},
		{name: "a repack's pack, being written", temp: "pack/.tmp-4242-pack-0a1b.pack", busy: true, wantErr: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			logger, logs := newLogger()
			wd := t.TempDir()
			openClose(t, Options{URL: fileURL(testgit.NewBare(t, seed)), Branch: "main", Workdir: wd})
			mine := filepath.Join(wd, ".git", "operator-notes")
			write(t, mine, "a file only this working copy has")
			temp := filepath.Join(wd, ".git", "objects", filepath.FromSlash(tt.temp))
			if err := os.MkdirAll(filepath.Dir(temp), 0o755); err != nil {
				t.Fatal(err)
			}
			other := testgit.NewBare(t, seed)
			write(t, temp, "")
			fi, err := os.Stat(temp)
			if err != nil {
				t.Fatal(err)
			}
			stop := make(chan struct{})
			var wg sync.WaitGroup
			if tt.busy {
				wg.Go(func() { keepWriting(temp, stop) })
			}
			r, err := Open(t.Context(), Options{URL: fileURL(other), Branch: "main", Workdir: wd, Logger: logger})
			took := time.Since(fi.ModTime())
			close(stop)
			wg.Wait()
			if tt.wantErr {
				if err == nil {
					r.Close()
					t.Fatal("Open emptied the working copy while a git command wrote there")
				}
				for _, want := range []string{"re-cloning the working copy (it is a clone of another URL)", temp, "is in use", "next cycle"} {
					if !strings.Contains(err.Error(), want) {
						t.Errorf("error lacks %q: %v", want, err)
					}
				}
				for _, kept := range []string{mine, temp} {
					if _, err := os.Lstat(kept); err != nil {
						t.Errorf("%s is gone: %v", kept, err)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			if !r.Cloned() {
				t.Error("Open did not clone the other URL afresh")
			}
			if took < leftAge {
				t.Errorf("Open returned %s after a temporary file was written; want it to wait until it is %s old", took, leftAge)
			}
			if !strings.Contains(logs.String(), "waiting for a temporary file of git's") {
				t.Errorf("Open did not say it waited:\n%s", logs)
			}
			if _, err := os.Lstat(temp); !os.IsNotExist(err) {
				t.Errorf("%s is still there after the new clone (%v)", temp, err)
			}
		})
	}
}

// TestRecloneWaitsForGC: a git gc someone runs in the working copy writes
// .git/gc.pid at its start, long before it writes a pack; a re-clone then
// fails the cycle, naming the process, and empties nothing. A gc.pid that
// git itself would take as dead (its process gone, or 12 hours old) does
// not stop it; one of another host does, until stale.
func TestRecloneWaitsForGC(t *testing.T) {
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	host, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name    string
		pid     string
		age     time.Duration
		wantErr bool
	}{
		{name: "gc running here", pid: fmt.Sprintf("%d %s", os.Getpid(), host), wantErr: true},
		{name: "gc on another host", pid: "4242 other-host.example", wantErr: true},
		{name: "a killed gc", pid: fmt.Sprintf("%d %s", dead.Process.Pid, host)},
		{name: "a stale gc.pid", pid: fmt.Sprintf("%d %s", os.Getpid(), host), age: 13 * time.Hour},
		{name: "a stale gc.pid of another host", pid: "4242 other-host.example", age: 13 * time.Hour},
		{name: "no pid in it", pid: "garbage"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			wd := t.TempDir()
			openClose(t, Options{URL: fileURL(testgit.NewBare(t, seed)), Branch: "main", Workdir: wd})
			mine := filepath.Join(wd, ".git", "operator-notes")
			write(t, mine, "a file only this working copy has")
			pidFile := filepath.Join(wd, ".git", "gc.pid")
			write(t, pidFile, tt.pid)
			if tt.age > 0 {
				old := time.Now().Add(-tt.age)
				if err := os.Chtimes(pidFile, old, old); err != nil {
					t.Fatal(err)
				}
			}
			r, err := Open(t.Context(), Options{URL: fileURL(testgit.NewBare(t, seed)), Branch: "main", Workdir: wd})
			if !tt.wantErr {
				if err != nil {
					t.Fatal(err)
				}
				defer r.Close()
				if !r.Cloned() {
					t.Error("Open did not clone the other URL afresh")
				}
				return
			}
			if err == nil {
				r.Close()
				t.Fatal("Open emptied the working copy while git gc ran there")
			}
			pid, _, _ := strings.Cut(tt.pid, " ")
			for _, want := range []string{"git gc is running", "process " + pid, "next cycle"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error lacks %q: %v", want, err)
				}
			}
			if _, err := os.Lstat(mine); err != nil {
				t.Errorf("%s is gone: %v", mine, err)
			}
		})
	}
}

// TestCloneTimeout: a clone gets DefaultCloneTimeout when no timeout is
// set (a first clone of a large repository over a slow link was cut off at
// 2 minutes every time, from nothing); a timeout set bounds every
// operation, the clone too.
func TestCloneTimeout(t *testing.T) {
	bare := testgit.NewBare(t, seed)
	for _, tt := range []struct {
		timeout     time.Duration
		clone, rest time.Duration
	}{
		{0, DefaultCloneTimeout, DefaultTimeout},
		{5 * time.Second, 5 * time.Second, 5 * time.Second},
		{time.Hour, time.Hour, time.Hour},
	} {
		r, err := Open(t.Context(), Options{URL: fileURL(bare), Branch: "main", Workdir: t.TempDir(), Timeout: tt.timeout})
		if err != nil {
			t.Fatal(err)
		}
		if got := r.timeout(opClone); got != tt.clone {
			t.Errorf("timeout %v: a clone gets %v, want %v", tt.timeout, got, tt.clone)
		}
		if got := r.timeout("fetching"); got != tt.rest {
			t.Errorf("timeout %v: a fetch gets %v, want %v", tt.timeout, got, tt.rest)
		}
		r.Close()
	}
}

// TestCloneOfAServerThatAnswersNothing: a first clone of a server that
// takes the connection and answers nothing held its cycle (and serve's
// slot) for the clone's 30 minutes; its refs, asked for first, must come
// within the bound of every other operation. Not parallel: it sets
// cloneRefsTimeout.
func TestCloneOfAServerThatAnswersNothing(t *testing.T) {
	saved := cloneRefsTimeout
	cloneRefsTimeout = 300 * time.Millisecond
	t.Cleanup(func() { cloneRefsTimeout = saved })
	hold := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-hold:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(func() { close(hold); srv.Close() })
	start := time.Now()
	r, err := Open(t.Context(), Options{URL: srv.URL + "/fleet.git", Branch: "main", Workdir: t.TempDir()})
	if err == nil {
		r.Close()
		t.Fatal("Open succeeded against a server that answers nothing")
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("Open took %s to give up", took)
	}
	for _, want := range []string{"cloning " + srv.URL + "/fleet.git", "timed out after 300ms"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q: %v", want, err)
		}
	}
}
