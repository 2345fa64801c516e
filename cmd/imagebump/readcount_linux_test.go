//go:build linux

package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/imagebump/imagebump/internal/testkit/ci"
	"github.com/imagebump/imagebump/internal/testkit/releasebin"
	"github.com/imagebump/imagebump/internal/testkit/testgit"
	"github.com/imagebump/imagebump/internal/testkit/testregistry"
	"github.com/imagebump/imagebump/report"
)

// TestFilesReadMatchTheKernel holds what run and plan report of the files
// they read (files.read and files.cached in -o json) to what the kernel
// saw them open, as issue 13 promised: a cycle with no new commit and no
// moved pick opens no file of the tree; after a commit made elsewhere, a
// run opens the YAML files the commit wrote and no other; after a tag that
// moves a pick, the files that pick's markers are in; plan on a plain
// folder opens only a file that changed, and with --no-cache every YAML
// file each time. Each command is the built binary under strace; the files
// of the tree (outside .git) it opened for reading must be the ones the
// step names, and exactly as many as it reports read.
func TestFilesReadMatchTheKernel(t *testing.T) {
	requireStrace(t)
	reg := testregistry.Start(t, testregistry.Options{InMemory: true})

	all := (*readFixture).yamlFiles
	none := func(*readFixture) []string { return nil }
	these := func(files ...string) func(*readFixture) []string {
		return func(*readFixture) []string { return files }
	}
	firstRun := readStep{name: "first run, a clone", want: all}
	cases := []struct {
		name  string
		plain bool // plan --repo on a plain folder; otherwise run --workdir
		steps []readStep
	}{
		{name: "run, nothing new", steps: []readStep{firstRun, {name: "second run", want: none}}},
		{name: "run, a commit elsewhere edits 2 marked files", steps: []readStep{firstRun, {
			name: "run after the commit",
			change: func(t *testing.T, f *readFixture) {
				f.commit(t, map[string]string{
					"apps/web/values.yml": f.files["apps/web/values.yml"] + "# edited elsewhere\n",
					"apps/api/cron.yaml":  f.files["apps/api/cron.yaml"] + "# edited elsewhere\n",
				}, nil)
			},
			want: these("apps/api/cron.yaml", "apps/web/values.yml"),
		}}},
		{name: "run, a commit elsewhere adds, edits and deletes", steps: []readStep{firstRun, {
			name: "run after the commit",
			change: func(t *testing.T, f *readFixture) {
				f.commit(t, map[string]string{
					"apps/new.yaml":        f.files["apps/api/deploy.yaml"],                // a new marked file
					"config/settings.yaml": f.files["config/settings.yaml"] + "# edited\n", // no marker
					"README.md":            "edited\n",                                     // not YAML
				}, []string{"apps/api/cron.yaml"})
			},
			want: these("apps/new.yaml", "config/settings.yaml"),
		}}},
		{name: "run, a tag moves apps:web in 3 files", steps: []readStep{firstRun, {
			name:   "run after the tag",
			change: func(t *testing.T, f *readFixture) { f.reg.Push(t, f.repo("web"), "1.1.0") },
			want:   func(f *readFixture) []string { return f.marked("apps:web") },
			bumps:  true,
		}}},
		{name: "plan, plain folder", plain: true, steps: []readStep{
			{name: "first plan", change: func(_ *testing.T, f *readFixture) { f.settle() }, want: all},
			{name: "second plan", want: none},
			{
				name: "plan after a file grew",
				change: func(t *testing.T, f *readFixture) {
					f.write(t, "apps/web/deploy.yaml", f.files["apps/web/deploy.yaml"]+"# grown\n")
				},
				want: these("apps/web/deploy.yaml"),
			},
			{name: "plan --no-cache", noCache: true, want: all},
			{name: "plan --no-cache again", noCache: true, want: all},
		}},
	}
	// The fixtures are made before the binary is built: the build gives a
	// plain folder's files time to leave the racy window.
	fixtures := make([]*readFixture, len(cases))
	for i, tc := range cases {
		fixtures[i] = newReadFixture(t, reg, fmt.Sprintf("case%d", i), tc.plain)
	}
	// The binary users run, static and stripped: a third of the time
	// buildBinary's takes to link.
	bin, err := releasebin.Build(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}

	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := fixtures[i]
			f.bin = bin
			for _, s := range tc.steps {
				if s.change != nil {
					s.change(t, f)
				}
				files, opened := f.command(t, s.noCache)
				got := slices.Sorted(maps.Keys(opened))
				want := s.want(f)
				if diff := cmp.Diff(want, got, cmpopts.EquateEmpty()); diff != "" {
					t.Errorf("%s: files of the tree opened for reading (-want +got):\n%s", s.name, diff)
				}
				// files.read counts YAML files; any other file opened is
				// already an error above.
				yaml := 0
				for _, p := range got {
					if isYAML(p) {
						yaml++
					}
				}
				if files.Read != yaml {
					t.Errorf("%s: reports %d files read; the kernel saw %d YAML files opened for reading (path: opens): %v", s.name, files.Read, yaml, opened)
				}
				if n := len(f.yamlFiles()); files.Scanned != n || files.Cached != n-files.Read {
					t.Errorf("%s: reports %d files scanned, %d read, %d from the index; want %d scanned, the ones not read from the index", s.name, files.Scanned, files.Read, files.Cached, n)
				}
				var wantChanged []string
				if s.bumps {
					wantChanged = want
				}
				if diff := cmp.Diff(wantChanged, files.Changed, cmpopts.EquateEmpty()); diff != "" {
					t.Errorf("%s: files changed (-want +got):\n%s", s.name, diff)
				}
				if t.Failed() {
					t.FailNow() // the next step starts from a state the case did not mean
				}
			}
		})
	}
}

// readStep is one traced command of a case of TestFilesReadMatchTheKernel.
type readStep struct {
	name string
	// change is what happens before the command: a commit elsewhere, a
	// tag pushed, a file edited; nil for nothing.
	change func(t *testing.T, f *readFixture)
	// noCache adds --no-cache.
	noCache bool
	// want lists the files of the tree (slash-separated, relative to its
	// root, sorted) the command must open for reading, and no other.
	want func(f *readFixture) []string
	// bumps says the command changes exactly the files it reads; otherwise
	// it changes none.
	bumps bool
}

// racyWait is how long after a file of a plain folder was written plan
// may record it for good: setters' racyWindow (2 s: a file whose
// modification or change time was that recent when plan read it is read
// again next time, by design), plus a margin for the kernel's coarse file
// times.
const racyWait = 2*time.Second + 100*time.Millisecond

// readFixture is one case's repository or plain folder, and how to run
// the binary on it.
type readFixture struct {
	bin    string
	reg    *testregistry.Server
	prefix string // the case's repositories on reg: PREFIX/web, PREFIX/api
	config string
	env    []string
	// bare and workdir are the remote and run's --workdir; empty for plan
	// on a plain folder.
	bare, workdir string
	// root is the tree the command reads: the working copy in workdir, or
	// the plain folder.
	root string
	// files is the tree's content, as the case changed it.
	files map[string]string
	// written is when a file of the plain folder was last written.
	written time.Time
}

// fleetFiles returns a small fleet: apps:web marks three files (a full
// reference; name and tag; a kustomization's images:), apps:api two; one
// YAML file and a README hold no marker.
func fleetFiles(web, api string) map[string]string {
	marker := func(policy string) string { return ` # {"$imagepolicy": "` + policy + `"}` }
	return map[string]string{
		"README.md": "fleet\n",
		"apps/web/deploy.yaml": "apiVersion: apps/v1\nkind: Deployment\nspec:\n  template:\n    spec:\n      containers:\n" +
			"        - name: web\n          image: " + web + ":1.0.0" + marker("apps:web") + "\n",
		"apps/web/values.yml":         "image:\n  repository: " + web + marker("apps:web:name") + "\n  tag: 1.0.0" + marker("apps:web:tag") + "\n",
		"clusters/prod/Kustomization": "images:\n  - name: web\n    newName: " + web + marker("apps:web:name") + "\n    newTag: 1.0.0" + marker("apps:web:tag") + "\n",
		"apps/api/deploy.yaml":        "spec:\n  image: " + api + ":1.0.0" + marker("apps:api") + "\n",
		"apps/api/cron.yaml":          "- job: nightly\n  image: " + api + ":1.0.0" + marker("apps:api") + "\n",
		"config/settings.yaml":        "kind: ConfigMap\ndata:\n  mode: plain\n",
	}
}

// newReadFixture pushes the case's images, every marker's tag current,
// and makes the config and the repository (served by git http-backend)
// or, with plain, the folder. The binary is set later.
func newReadFixture(t *testing.T, reg *testregistry.Server, prefix string, plain bool) *readFixture {
	t.Helper()
	dir, err := filepath.EvalSymlinks(t.TempDir()) // strace -y shows real paths
	if err != nil {
		t.Fatal(err)
	}
	f := &readFixture{reg: reg, prefix: prefix, config: filepath.Join(dir, "imagebump.yaml"),
		// plan keeps a plain folder's marker index in the user's cache
		// folder.
		env: append(os.Environ(), "XDG_CACHE_HOME="+filepath.Join(dir, "cache"))}
	reg.Push(t, f.repo("web"), "1.0.0")
	reg.Push(t, f.repo("api"), "1.0.0")
	f.files = fleetFiles(reg.Repo(f.repo("web")), reg.Repo(f.repo("api")))
	cfg := fmt.Sprintf("registries:\n  - {host: %q, insecure: true}\nimages:\n"+
		"  - {name: apps:web, repository: %s, policy: {semver: \">=1.0.0\"}}\n"+
		"  - {name: apps:api, repository: %s, policy: {semver: \">=1.0.0\"}}\n",
		reg.Host, reg.Repo(f.repo("web")), reg.Repo(f.repo("api")))
	if plain {
		f.root = filepath.Join(dir, "folder")
		for name, content := range f.files {
			f.write(t, name, content)
		}
	} else {
		f.bare = testgit.NewBare(t, f.files)
		srv := testgit.StartHTTP(t, f.bare, false)
		f.workdir = filepath.Join(dir, "work")
		f.root = filepath.Join(f.workdir, "fleet") // the target's working copy
		cfg += fmt.Sprintf("targets:\n  - name: fleet\n    git: {url: %q, branch: main}\n", srv.URL)
	}
	if err := os.WriteFile(f.config, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	return f
}

// repo returns the path of the case's repository name on the registry.
func (f *readFixture) repo(name string) string { return f.prefix + "/" + name }

// write writes a file of the plain folder.
func (f *readFixture) write(t *testing.T, name, content string) {
	t.Helper()
	p := filepath.Join(f.root, filepath.FromSlash(name))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	f.files[name] = content
	f.written = time.Now()
}

// settle waits until the plain folder's files have left the racy window.
func (f *readFixture) settle() {
	time.Sleep(time.Until(f.written.Add(racyWait)))
}

// commit makes a commit on the remote's main, as someone else would:
// files written, others removed.
func (f *readFixture) commit(t *testing.T, write map[string]string, remove []string) {
	t.Helper()
	testgit.Commit(t, f.bare, "main", write, remove, "elsewhere")
	maps.Copy(f.files, write)
	for _, name := range remove {
		delete(f.files, name)
	}
}

// yamlFiles returns the tree's YAML files, sorted.
func (f *readFixture) yamlFiles() []string {
	var out []string
	for name := range f.files {
		if isYAML(name) {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// isYAML reports whether imagebump reads the file named for markers:
// *.yaml, *.yml and Kustomization, as Flux does.
func isYAML(name string) bool {
	return strings.HasSuffix(name, ".yaml") || strings.HasSuffix(name, ".yml") || path.Base(name) == "Kustomization"
}

// marked returns the files whose markers name policy, sorted.
func (f *readFixture) marked(policy string) []string {
	var out []string
	for name, content := range f.files {
		if strings.Contains(content, `"$imagepolicy": "`+policy) {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// command runs `run --workdir` or `plan --repo` with -o json under
// strace. It returns the report's file counts and the files of the tree
// the process opened for reading, with how many times each. A failed
// command, target or policy, or any problem, fails the test.
func (f *readFixture) command(t *testing.T, noCache bool) (report.Files, map[string]int) {
	t.Helper()
	args := []string{"plan", "-c", f.config, "--repo", f.root, "-o", "json"}
	if f.workdir != "" {
		args = []string{"run", "-c", f.config, "--workdir", f.workdir, "-o", "json"}
	}
	if noCache {
		args = append(args, "--no-cache")
	}
	stdout, opened := traceOpens(t, f.env, f.root, f.bin, args...)
	var files *report.Files
	var problems []report.Problem
	if f.workdir != "" {
		var rep report.Run
		if err := json.Unmarshal(stdout, &rep); err != nil || len(rep.Targets) != 1 {
			t.Fatalf("run -o json: %v\n%s", err, stdout)
		}
		tg := rep.Targets[0]
		if tg.Error != "" {
			t.Fatalf("run: target failed: %s", tg.Error)
		}
		files, problems = tg.Files, tg.Problems
	} else {
		var rep report.Plan
		if err := json.Unmarshal(stdout, &rep); err != nil {
			t.Fatalf("plan -o json: %v\n%s", err, stdout)
		}
		files, problems = &rep.Files, rep.Problems
	}
	if len(problems) > 0 || files == nil {
		t.Fatalf("%s: problems %+v, files %v\n%s", args[0], problems, files, stdout)
	}
	return *files, opened
}

// stracePath is where Debian's strace package installs strace.
const stracePath = "/usr/bin/strace"

// requireStrace stops the test through ci.Missing when strace is not
// installed or may not trace here (ptrace refused, as in some
// containers).
func requireStrace(t *testing.T) {
	t.Helper()
	if _, err := os.Stat(stracePath); err != nil {
		ci.Missing(t, "strace not found at "+stracePath+": install the Debian package strace")
		return
	}
	if out, err := exec.Command(stracePath, "-f", "-o", os.DevNull, "true").CombinedOutput(); err != nil {
		ci.Missing(t, fmt.Sprintf("strace cannot trace here: %v: %s", err, out))
	}
}

// traceOpens runs bin with args and env under strace and returns its
// standard output and the files under root, but for root/.git, that it
// opened for reading, with how many times each (slash-separated paths
// relative to root). A command that exits non-zero fails the test.
//
// Besides -f and -e trace=open,openat,openat2: -ff writes each thread's
// calls to a file of its own (Go runs goroutines on several threads), so
// that no call is cut in "unfinished" and "resumed" halves by another
// thread's; -y prints the path the kernel resolved for each descriptor,
// the returned one included, whatever the path given or the folder it was
// relative to; --seccomp-bpf stops the process at the traced calls only,
// not at every call of the Go runtime.
func traceOpens(t *testing.T, env []string, root, bin string, args ...string) ([]byte, map[string]int) {
	t.Helper()
	prefix := filepath.Join(t.TempDir(), "trace")
	cmd := exec.Command(stracePath, append([]string{"-f", "-ff", "-y", "--seccomp-bpf",
		"-e", "trace=open,openat,openat2", "-o", prefix, bin}, args...)...)
	cmd.Env = env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("strace imagebump %s: %v\n%s\n%s", strings.Join(args, " "), err, stdout.Bytes(), stderr.Bytes())
	}
	traces, err := filepath.Glob(prefix + ".*")
	if err != nil || len(traces) == 0 {
		t.Fatalf("no trace from strace (%v): %s", err, stderr.Bytes())
	}
	opened := map[string]int{}
	for _, file := range traces {
		for _, p := range readOpens(t, file) {
			rel, err := filepath.Rel(root, p)
			if err != nil || rel == "." || rel == ".." || strings.HasPrefix(rel, "../") || rel == ".git" || strings.HasPrefix(rel, ".git/") {
				continue
			}
			// A folder opened without O_DIRECTORY, as for a sync.
			if fi, err := os.Lstat(p); err == nil && fi.IsDir() {
				continue
			}
			opened[filepath.ToSlash(rel)]++
		}
	}
	return stdout.Bytes(), opened
}

// openCall matches a successful open, openat or openat2 as strace -y
// prints it: the arguments, then the descriptor returned with its path.
var openCall = regexp.MustCompile(`^(?:\d+ +)?open(?:at2?)?\((.*)\) += \d+<(.*)>$`)

// openFlag matches one flag of an open call.
var openFlag = regexp.MustCompile(`\bO_[A-Z]+\b`)

// readOpens returns the paths a trace file shows opened for reading: with
// an access mode of O_RDONLY or O_RDWR, and not a new file (O_EXCL), an
// emptied one (O_TRUNC), a folder (O_DIRECTORY) or a mere path (O_PATH).
func readOpens(t *testing.T, file string) []string {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	var cut string // the first half of a call cut by another thread's
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if head, ok := strings.CutSuffix(line, " <unfinished ...>"); ok {
			cut = head
			continue
		}
		if _, rest, ok := strings.Cut(line, " resumed>"); ok && strings.HasPrefix(line, "<... ") {
			line, cut = cut+rest, ""
		}
		m := openCall.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		flags := m[1][strings.LastIndexByte(m[1], '"')+1:] // they follow the quoted path
		reads := true
		for _, fl := range openFlag.FindAllString(flags, -1) {
			switch fl {
			case "O_WRONLY", "O_EXCL", "O_TRUNC", "O_DIRECTORY", "O_PATH":
				reads = false
			}
		}
		if reads {
			out = append(out, m[2])
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("reading %s: %v", file, err)
	}
	return out
}
