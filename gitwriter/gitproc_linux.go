package gitwriter

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// gitWorkingIn returns a git process whose current folder is dir or a
// folder in it, and its name (git, git-remote-https), as /proc shows
// them: git runs in the worktree it works on, and git -C DIR moves there
// first. Processes of other users, whose folder this one may not read,
// and git commands run from elsewhere with --git-dir, are not seen.
func gitWorkingIn(dir string) (pid int, name string, found bool) {
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		dir = real
	}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0, "", false
	}
	self := os.Getpid()
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		comm, err := os.ReadFile("/proc/" + e.Name() + "/comm")
		if err != nil {
			continue
		}
		name := strings.TrimSpace(string(comm))
		if name != "git" && !strings.HasPrefix(name, "git-") {
			continue
		}
		cwd, err := os.Readlink("/proc/" + e.Name() + "/cwd")
		if err != nil {
			continue
		}
		if cwd == dir || strings.HasPrefix(cwd, dir+string(filepath.Separator)) {
			return pid, name, true
		}
	}
	return 0, "", false
}
