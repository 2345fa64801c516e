package cycle

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/imagebump/imagebump/config"
	"github.com/imagebump/imagebump/internal/testkit/testgit"
	"github.com/imagebump/imagebump/registry"
	"github.com/imagebump/imagebump/setters"
)

// incrementalConfig is the config of the random histories: four policies,
// one pinning digests.
const incrementalConfig = `
images:
  - {name: apps:web, repository: reg.example/web, policy: {semver: ">=1.0.0"}}
  - {name: apps:api, repository: reg.example/api, policy: {semver: ">=1.0.0"}}
  - {name: apps:job, repository: reg.example/job, policy: {semver: ">=1.0.0 <2"}}
  - {name: apps:pin, repository: reg.example/pin, policy: {semver: ">=1.0.0"}, digest: always}
git:
  url: URL
  branch: main
commit:
  author: {name: bot, email: bot@example.invalid}
`

// markedFile returns a file with markers of random policies and forms, or
// one of the files a fleet also holds: unmarked, broken, with a marker
// that applies to nothing or names an unknown policy.
func markedFile(rng *rand.Rand, tags []string) string {
	pols := []string{"web", "api", "job", "pin"}
	pol := func() string { return pols[rng.IntN(len(pols))] }
	tag := func() string { return tags[rng.IntN(len(tags))] }
	switch rng.IntN(9) {
	case 0:
		return "kind: ConfigMap\ndata:\n  k: v\n"
	case 1:
		return "broken: [\nimage: reg.example/web:1.0.0 # {\"$imagepolicy\": \"apps:web\"}\n"
	case 2:
		return "image: reg.example/web:1.0.0 # {\"$imagepolicy\": \"apps:nope\"}\n"
	case 3:
		return "list: [a, b] # {\"$imagepolicy\": \"apps:web\"}\n"
	case 4:
		p := pol()
		return fmt.Sprintf("images:\n  - name: reg.example/%s # {\"$imagepolicy\": \"apps:%s:name\"}\n    newTag: %q # {\"$imagepolicy\": \"apps:%s:tag\"}\n", p, p, tag(), p)
	case 5:
		return fmt.Sprintf("digest: sha256:%064d # {\"$imagepolicy\": \"apps:pin:digest\"}\n", rng.IntN(3))
	default:
		var b strings.Builder
		b.WriteString("apiVersion: apps/v1\nkind: Deployment\nspec:\n  template:\n    spec:\n      containers:\n")
		for i := range 1 + rng.IntN(3) {
			p := pol()
			fmt.Fprintf(&b, "        - name: c%d\n          image: reg.example/%s:%s # {\"$imagepolicy\": \"apps:%s\"}\n", i, p, tag(), p)
		}
		return b.String()
	}
}

// incrementalTarget parses incrementalConfig for the repository at bare,
// with extra: indented, under git (paths: ...); otherwise at the top
// (push: ...).
func incrementalTarget(t *testing.T, bare, extra string) (*config.Config, config.Target) {
	t.Helper()
	text := strings.Replace(incrementalConfig, "URL", "file://"+bare, 1)
	if strings.HasPrefix(extra, "  ") {
		text = strings.Replace(text, "  branch: main\n", "  branch: main\n"+extra, 1)
	} else {
		text += extra
	}
	cfg, err := config.Parse([]byte(text), "imagebump.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return cfg, cfg.Targets()[0]
}

// comparableReport is what an incremental and a full cycle must agree
// on.
type comparableReport struct {
	Policies     []string
	Unreferenced []string
	Changes      []setters.Change
	Problems     []string
	Markers      []setters.Marker
	FilesScanned int
	FilesChanged []string
}

func comparableOf(r *Report) comparableReport {
	c := comparableReport{Unreferenced: r.Unreferenced, Changes: r.Changes, Markers: r.Markers, FilesScanned: r.FilesScanned, FilesChanged: r.FilesChanged}
	for _, p := range r.Policies {
		c.Policies = append(c.Policies, p.Name+"="+p.Latest()+"@"+p.Digest)
	}
	for _, p := range r.Problems {
		c.Problems = append(c.Problems, p.Error())
	}
	return c
}

// TestIncrementalCycleEqualsFullRescan is the property behind the marker
// index: on random histories of a repository (commits by others that add,
// edit, move and delete marked files; tags pushed to the registries), each
// cycle of a target that keeps its working copy and marker index reports
// and commits exactly what a full rescan of the same commit finds: a plan
// over a fresh clone, which reads every file.
func TestIncrementalCycleEqualsFullRescan(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name  string
		extra string
		// serve gives each cycle the last one, as serve does: the prefetch
		// and the marker index then come from it (ReloadIndex).
		serve bool
	}{
		{"tracked branch", "", false},
		{"push branch", "push:\n  branch: imagebump/main\n", false},
		{"paths", "  paths: [clusters, top.yaml]\n", false},
		{"tracked branch, as serve", "", true},
		{"push branch, as serve", "push:\n  branch: imagebump/main\n", true},
	} {
		for seed := range uint64(2) {
			t.Run(fmt.Sprintf("%s/seed=%d", tt.name, seed), func(t *testing.T) {
				t.Parallel()
				incrementalHistory(t, seed, tt.extra, tt.serve)
			})
		}
	}
}

func incrementalHistory(t *testing.T, seed uint64, extra string, serve bool) {
	rng := rand.New(rand.NewPCG(seed, 7))
	tags := []string{"1.0.0", "1.1.0", "1.2.0", "2.0.0"}
	names := []string{"clusters/a/web.yaml", "clusters/a/api.yml", "clusters/b/Kustomization", "clusters/b/c/d.yaml",
		"apps/x.yaml", "apps/y.yaml", "top.yaml", "notes.txt"}
	files := map[string]string{}
	for _, n := range names[:4] {
		files[n] = markedFile(rng, tags)
	}
	bare := testgit.NewBare(t, files)
	cfg, target := incrementalTarget(t, bare, extra)
	reg := &fakeRegistry{tags: map[string][]string{}, digests: map[string]string{}}
	for _, r := range []string{"web", "api", "job", "pin"} {
		reg.tags["reg.example/"+r] = []string{"1.0.0"}
		reg.digests["reg.example/"+r+":1.0.0"] = digestA
	}
	workdir := t.TempDir()
	ctx := context.Background()
	var read, scanned int
	var previous *TargetResult
	for round := range 14 {
		// Others commit: files added, edited, moved, deleted.
		add, remove := map[string]string{}, []string(nil)
		for range rng.IntN(4) {
			n := names[rng.IntN(len(names))]
			_, exists := testgit.ReadFile(t, bare, "main", n)
			switch op := rng.IntN(4); {
			case op == 0 && exists && !slices.Contains(remove, n):
				remove = append(remove, n)
				delete(add, n)
			case op == 1 && exists && !slices.Contains(remove, n):
				to := names[rng.IntN(len(names))]
				if _, taken := testgit.ReadFile(t, bare, "main", to); !taken && to != n {
					c, _ := testgit.ReadFile(t, bare, "main", n)
					remove = append(remove, n)
					delete(add, n)
					add[to] = c
				}
			default:
				if !slices.Contains(remove, n) {
					add[n] = markedFile(rng, tags)
				}
			}
		}
		if len(add)+len(remove) > 0 {
			testgit.Commit(t, bare, "main", add, remove, fmt.Sprintf("others %d", round))
		}
		// Tags pushed.
		for r := range reg.tags {
			if rng.IntN(3) == 0 {
				next := tags[rng.IntN(len(tags))]
				if !slices.Contains(reg.tags[r], next) {
					reg.tags[r] = append(reg.tags[r], next)
					reg.digests[r+":"+next] = fmt.Sprintf("sha256:%064x", rng.Uint32())
				}
			}
		}

		plan, err := Plan(ctx, PlanOptions{Config: cfg, Target: &target, Registry: reg})
		if err != nil {
			t.Fatalf("round %d: full rescan: %v", round, err)
		}
		res, err := RunTarget(ctx, TargetOptions{Config: cfg, Target: target, Registry: reg, Workdir: workdir, Previous: previous})
		if err != nil {
			t.Fatalf("round %d: incremental cycle: %v", round, err)
		}
		if serve {
			if round > 0 && previous.index == nil {
				t.Errorf("round %d: the last cycle kept no marker index for this one", round)
			}
			previous = res
		}
		got, want := comparableOf(res.Report), comparableOf(plan.Report)
		if diff := cmp.Diff(got, want); diff != "" {
			t.Fatalf("round %d: the incremental cycle differs from a full rescan (-incremental +full):\n%s", round, diff)
		}
		read += res.Report.FilesRead
		scanned += res.Report.FilesScanned
		if len(want.Changes) > 0 != res.Pushed && res.PushBranch == "" {
			t.Errorf("round %d: %d changes, pushed %v", round, len(want.Changes), res.Pushed)
		}
		if res.Pushed {
			// The commit holds exactly the files the rescan would change.
			parent := testgit.Git(t, bare, "rev-parse", res.Commit+"^")
			files := strings.Split(testgit.Git(t, bare, "diff-tree", "-r", "--name-only", "--no-commit-id", parent, res.Commit), "\n")
			if diff := cmp.Diff(files, want.FilesChanged); diff != "" {
				t.Errorf("round %d: the commit's files differ from the rescan's (-commit +rescan):\n%s", round, diff)
			}
		}
	}
	t.Logf("files read %d of %d scanned", read, scanned)
	if read >= scanned {
		t.Errorf("the incremental cycles read %d of %d files: the index served none", read, scanned)
	}
}

// prefetchFixture is a repository with a web marker, which the commit
// of replaceWebByAPI replaces by an api one, and a registry that records
// what it lists.
type prefetchFixture struct {
	bare, workdir string
	cfg           *config.Config
	target        config.Target
	reg           *fakeRegistry
}

func newPrefetchFixture(t *testing.T) *prefetchFixture {
	f := &prefetchFixture{bare: testgit.NewBare(t, map[string]string{
		"web.yaml": "image: reg.example/web:1.0.0 # {\"$imagepolicy\": \"apps:web\"}\n",
	}), workdir: t.TempDir()}
	f.cfg, f.target = incrementalTarget(t, f.bare, "")
	f.reg = &fakeRegistry{tags: map[string][]string{
		"reg.example/web": {"1.0.0"}, "reg.example/api": {"1.0.0", "1.1.0"},
	}}
	return f
}

// run runs a cycle given prev, with the registry's record emptied first.
func (f *prefetchFixture) run(t *testing.T, prev *TargetResult) *TargetResult {
	t.Helper()
	f.reg.mu.Lock()
	f.reg.scanned = nil
	f.reg.mu.Unlock()
	res, err := RunTarget(context.Background(), TargetOptions{Config: f.cfg, Target: f.target, Registry: f.reg, Workdir: f.workdir, Previous: prev})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// replaceWebByAPI is someone's commit replacing the web marker by an api
// one.
func (f *prefetchFixture) replaceWebByAPI(t *testing.T) {
	testgit.Commit(t, f.bare, "main", map[string]string{
		"api.yaml": "image: reg.example/api:1.0.0 # {\"$imagepolicy\": \"apps:api\"}\n",
	}, []string{"web.yaml"}, "web goes, api comes")
}

// checkAPIBump checks the cycle after replaceWebByAPI: web was asked for
// first (the last commit used it), then api; web's result is dropped
// from the report; the api bump is pushed.
func (f *prefetchFixture) checkAPIBump(t *testing.T, res *TargetResult) {
	t.Helper()
	if diff := cmp.Diff(f.reg.scanned, []string{"reg.example/web", "reg.example/api"}); diff != "" {
		t.Errorf("registries asked (-got +want): web, which the last commit used, then api:\n%s", diff)
	}
	var names []string
	for _, p := range res.Report.Policies {
		names = append(names, p.Name+"="+p.Latest())
	}
	if diff := cmp.Diff(names, []string{"apps:api=1.1.0"}); diff != "" {
		t.Errorf("policies reported (-got +want): web's prefetched result dropped\n%s", diff)
	}
	if !res.Pushed || len(res.Report.Changes) != 1 {
		t.Errorf("pushed %v with %d changes, want the api bump", res.Pushed, len(res.Report.Changes))
	}
}

// TestPrefetch: a kept working copy's cycle asks the registries for the
// policies its last commit used while it fetches; a policy that only the
// new commit uses is asked for after the fetch, and one the new commit no
// longer uses is dropped from the report.
func TestPrefetch(t *testing.T) {
	f := newPrefetchFixture(t)
	f.run(t, nil) // the first cycle clones: no index yet, no prefetch
	f.replaceWebByAPI(t)
	f.checkAPIBump(t, f.run(t, nil))
	// Nothing new: the prefetch (api) is all the cycle asks.
	if res := f.run(t, nil); res.Pushed || !slices.Equal(f.reg.scanned, []string{"reg.example/api"}) {
		t.Errorf("a cycle with nothing new pushed %v and asked %v, want only api", res.Pushed, f.reg.scanned)
	}
}

// TestPrefetchFromPrevious: given its last cycle, as serve gives it, a
// cycle asks the registries for that cycle's policies without the kept
// index: here there is none, and without Previous nothing is prefetched.
func TestPrefetchFromPrevious(t *testing.T) {
	f := newPrefetchFixture(t)
	run := func(prev *TargetResult) *TargetResult {
		t.Helper()
		// No kept index: only Previous can name the last commit's policies.
		if err := os.RemoveAll(IndexFile(WorkdirFor(f.workdir, f.target.Name))); err != nil {
			t.Fatal(err)
		}
		return f.run(t, prev)
	}
	first := run(nil)
	// Without Previous, the listing starts with the scan, of what it finds.
	if res := run(nil); !slices.Equal(f.reg.scanned, []string{"reg.example/web"}) {
		t.Errorf("without Previous, asked %v, want web once", f.reg.scanned)
	} else if res.Pushed {
		t.Error("a cycle with nothing new pushed")
	}
	f.replaceWebByAPI(t)
	f.checkAPIBump(t, run(first))
}

// TestTagWarningsOncePerChange: a registry listing a tag that is not a
// valid OCI tag is warned about by the first cycle; the next cycles, given
// their last as serve gives it, log the same warning at debug only, and a
// new warning (another bad tag) at warn again.
func TestTagWarningsOncePerChange(t *testing.T) {
	f := newPrefetchFixture(t)
	f.reg.tags["reg.example/web"] = []string{"1.0.0", "bad tag"}
	run := func(prev *TargetResult) (*TargetResult, string) {
		t.Helper()
		var logs bytes.Buffer
		res, err := RunTarget(context.Background(), TargetOptions{Config: f.cfg, Target: f.target, Registry: f.reg, Workdir: f.workdir, Previous: prev,
			Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
		if err != nil {
			t.Fatal(err)
		}
		return res, logs.String()
	}
	warned := func(logs, tag string) string {
		for line := range strings.Lines(logs) {
			if strings.Contains(line, "valid OCI tag") && strings.Contains(line, tag) {
				return strings.Fields(strings.SplitN(line, "level=", 2)[1])[0]
			}
		}
		return ""
	}
	first, logs := run(nil)
	if got := warned(logs, "bad tag"); got != "WARN" {
		t.Errorf("first cycle: the bad tag logged at %q, want WARN:\n%s", got, logs)
	}
	second, logs := run(first)
	if got := warned(logs, "bad tag"); got != "DEBUG" {
		t.Errorf("second cycle: the bad tag logged at %q, want DEBUG:\n%s", got, logs)
	}
	f.reg.mu.Lock()
	f.reg.tags["reg.example/web"] = []string{"1.0.0", "bad tag", "worse tag"}
	f.reg.mu.Unlock()
	if _, logs = run(second); warned(logs, "worse tag") != "WARN" {
		t.Errorf("a new bad tag is not warned about:\n%s", logs)
	}
	// Without a last cycle (run, plan), every warning is at warn.
	if _, logs = run(nil); warned(logs, "bad tag") != "WARN" {
		t.Errorf("without Previous: not at WARN:\n%s", logs)
	}
}

// TestNewURLDropsTheLastIndex: a target whose git.url changes (a reload,
// in serve) clones the new repository into its working copy; the last
// cycle's index, of the other repository, is dropped for a full scan that
// says why, where it was tried and failed on a commit the new clone lacks.
func TestNewURLDropsTheLastIndex(t *testing.T) {
	workdir := t.TempDir()
	a := testgit.NewBare(t, map[string]string{"web.yaml": "image: reg.example/web:1.0.0 # {\"$imagepolicy\": \"apps:web\"}\n"})
	b := testgit.NewBare(t, map[string]string{"api.yaml": "image: reg.example/api:1.0.0 # {\"$imagepolicy\": \"apps:api\"}\n"})
	reg := &fakeRegistry{tags: map[string][]string{"reg.example/web": {"1.0.0"}, "reg.example/api": {"1.0.0", "1.1.0"}}}
	cfgA, ta := incrementalTarget(t, a, "")
	first, err := RunTarget(context.Background(), TargetOptions{Config: cfgA, Target: ta, Registry: reg, Workdir: workdir})
	if err != nil {
		t.Fatal(err)
	}
	cfgB, tb := incrementalTarget(t, b, "")
	var logs bytes.Buffer
	res, err := RunTarget(context.Background(), TargetOptions{Config: cfgB, Target: tb, Registry: reg, Workdir: workdir, Previous: first,
		Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Pushed || len(res.Report.Changes) != 1 || res.Report.Changes[0].File != "api.yaml" {
		t.Errorf("the cycle on the new URL: pushed %v, changes %+v", res.Pushed, res.Report.Changes)
	}
	if !strings.Contains(logs.String(), "the working copy was cloned afresh") || strings.Contains(logs.String(), "not found") {
		t.Errorf("the full scan's reason:\n%s", logs.String())
	}
}

// TestFullScanResetsTheWorkingCopy: when a new commit makes the kept index
// unusable (a symbolic link comes into scope, or above a path in scope,
// so the cycle scans every file), a file someone changed in the working
// copy is reset before the scan reads it: the commit pushed holds the
// remote's bytes with the bump, never the local ones.
func TestFullScanResetsTheWorkingCopy(t *testing.T) {
	original := "image: reg.example/api:1.0.0 # {\"$imagepolicy\": \"apps:api\"}\n"
	web := "image: reg.example/web:1.0.0 # {\"$imagepolicy\": \"apps:web\"}\n"
	for _, tt := range []struct {
		name  string
		files map[string]string
		paths string
		other string // the file changed locally, then bumped
		link  func(t *testing.T, clone string)
	}{
		{
			name:  "a link in scope",
			files: map[string]string{"web.yaml": web, "other.yaml": original},
			other: "other.yaml",
			link: func(t *testing.T, clone string) {
				if err := os.Symlink("web.yaml", filepath.Join(clone, "link.yaml")); err != nil {
					t.Fatal(err)
				}
			},
		},
		{
			name:  "a link above a path",
			files: map[string]string{"clusters/a/web.yaml": web, "real/a/web.yaml": web, "real/a/other.yaml": original},
			paths: "  paths: [clusters/a]\n",
			other: "real/a/other.yaml",
			link: func(t *testing.T, clone string) {
				testgit.Git(t, clone, "rm", "-r", "--quiet", "clusters")
				if err := os.Symlink("real", filepath.Join(clone, "clusters")); err != nil {
					t.Fatal(err)
				}
			},
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			bare := testgit.NewBare(t, tt.files)
			cfg, target := incrementalTarget(t, bare, tt.paths)
			reg := &fakeRegistry{tags: map[string][]string{"reg.example/web": {"1.0.0"}, "reg.example/api": {"1.0.0"}}}
			workdir := t.TempDir()
			ctx := context.Background()
			if _, err := RunTarget(ctx, TargetOptions{Config: cfg, Target: target, Registry: reg, Workdir: workdir}); err != nil {
				t.Fatal(err)
			}
			// Someone writes in the working copy: a marker still, other bytes.
			local := filepath.Join(WorkdirFor(workdir, target.Name), filepath.FromSlash(tt.other))
			if err := os.WriteFile(local, []byte("local: change\n"+original), 0o644); err != nil {
				t.Fatal(err)
			}
			// Others commit a symbolic link, and api gets a new tag.
			clone := t.TempDir()
			testgit.Git(t, clone, "clone", "--quiet", bare, ".")
			tt.link(t, clone)
			testgit.Git(t, clone, "add", "--all")
			testgit.Git(t, clone, "commit", "--quiet", "-m", "a link")
			testgit.Git(t, clone, "push", "--quiet", "origin", "HEAD:main")
			reg.tags["reg.example/api"] = []string{"1.0.0", "1.1.0"}

			res, err := RunTarget(ctx, TargetOptions{Config: cfg, Target: target, Registry: reg, Workdir: workdir})
			if err != nil {
				t.Fatal(err)
			}
			if !res.Pushed {
				t.Fatalf("the api bump was not pushed: %+v", res.Report.Problems)
			}
			got, _ := testgit.ReadFile(t, bare, "main", tt.other)
			if want := strings.Replace(original, "1.0.0", "1.1.0", 1); got != want {
				t.Errorf("%s pushed:\n%s\nwant the remote's bytes with the bump:\n%s", tt.other, got, want)
			}
		})
	}
}

// racingRegistry is a fakeRegistry whose first listing runs race: a push
// to the remote that lands between the cycle's fetch and its push.
type racingRegistry struct {
	*fakeRegistry
	once sync.Once
	race func()
}

func (r *racingRegistry) Scan(ctx context.Context, repos []string, n int) []registry.Result {
	r.once.Do(r.race)
	return r.fakeRegistry.Scan(ctx, repos, n)
}

// TestRedoneReadsCounted: the files an attempt read before it was done
// again count in RedoneReads, which the report of the last attempt does
// not hold: after a push race, and after files someone else wrote in the
// working copy.
func TestRedoneReadsCounted(t *testing.T) {
	web := "image: reg.example/web:1.0.0 # {\"$imagepolicy\": \"apps:web\"}\n"
	api := "image: reg.example/api:1.0.0 # {\"$imagepolicy\": \"apps:api\"}\n"
	files := map[string]string{"web.yaml": web, "api.yaml": api, "plain.yaml": "kind: ConfigMap\n"}
	ctx := context.Background()

	t.Run("push race", func(t *testing.T) {
		bare := testgit.NewBare(t, files)
		cfg, target := incrementalTarget(t, bare, "")
		reg := &racingRegistry{
			fakeRegistry: &fakeRegistry{tags: map[string][]string{"reg.example/web": {"1.0.0", "1.1.0"}, "reg.example/api": {"1.0.0"}}},
			race: func() {
				testgit.Commit(t, bare, "main", map[string]string{"new.yaml": "kind: Secret\n"}, nil, "meanwhile")
			},
		}
		res, err := RunTarget(ctx, TargetOptions{Config: cfg, Target: target, Registry: reg, Workdir: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		// The first attempt, on a new working copy, read every file.
		if !res.Pushed || res.Attempts != 2 || res.RedoneReads != len(files) {
			t.Errorf("pushed %v after %d attempts, redone reads %d; want a push after 2, and %d", res.Pushed, res.Attempts, res.RedoneReads, len(files))
		}
	})

	t.Run("written in the working copy", func(t *testing.T) {
		bare := testgit.NewBare(t, files)
		cfg, target := incrementalTarget(t, bare, "")
		reg := &fakeRegistry{tags: map[string][]string{"reg.example/web": {"1.0.0"}, "reg.example/api": {"1.0.0"}}}
		workdir := t.TempDir()
		if _, err := RunTarget(ctx, TargetOptions{Config: cfg, Target: target, Registry: reg, Workdir: workdir}); err != nil {
			t.Fatal(err)
		}
		local := filepath.Join(WorkdirFor(workdir, target.Name), "web.yaml")
		if err := os.WriteFile(local, []byte("local: change\n"+web), 0o644); err != nil {
			t.Fatal(err)
		}
		reg.tags["reg.example/web"] = []string{"1.0.0", "1.1.0"}
		res, err := RunTarget(ctx, TargetOptions{Config: cfg, Target: target, Registry: reg, Workdir: workdir})
		if err != nil {
			t.Fatal(err)
		}
		if got, _ := testgit.ReadFile(t, bare, "main", "web.yaml"); got != strings.Replace(web, "1.0.0", "1.1.0", 1) {
			t.Errorf("web.yaml pushed: %q, want the remote's bytes bumped", got)
		}
		if res.RedoneReads != 1 || res.Report.FilesRead != 1 {
			t.Errorf("redone reads %d, last attempt's %d; want 1 and 1 (web.yaml, read twice)", res.RedoneReads, res.Report.FilesRead)
		}
	})
}

// TestLinkedFolderInTheWorkingCopy: someone replaces a folder of the
// working copy with a symbolic link to a copy of it elsewhere, same bytes.
// The next cycle's bump must not write through the link (a file outside
// the working copy was rewritten, and the cycle then failed): the file is
// not the commit's, the working copy is reset, and the bump pushed. With
// --no-cache, the full check of the worktree took the linked files for
// clean, the scan found no marker there, and the bump was lost.
func TestLinkedFolderInTheWorkingCopy(t *testing.T) {
	for _, noCache := range []bool{false, true} {
		t.Run(fmt.Sprintf("no-cache=%v", noCache), func(t *testing.T) {
			original := "image: reg.example/api:1.0.0 # {\"$imagepolicy\": \"apps:api\"}\n"
			bare := testgit.NewBare(t, map[string]string{"clusters/prod/api.yaml": original})
			cfg, target := incrementalTarget(t, bare, "")
			reg := &fakeRegistry{tags: map[string][]string{"reg.example/api": {"1.0.0"}}}
			workdir := t.TempDir()
			ctx := context.Background()
			opts := TargetOptions{Config: cfg, Target: target, Registry: reg, Workdir: workdir, NoCache: noCache}
			if _, err := RunTarget(ctx, opts); err != nil {
				t.Fatal(err)
			}
			prod := filepath.Join(WorkdirFor(workdir, target.Name), "clusters", "prod")
			outside := filepath.Join(t.TempDir(), "prod")
			if err := os.Rename(prod, outside); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(outside, prod); err != nil {
				t.Fatal(err)
			}
			reg.tags["reg.example/api"] = []string{"1.0.0", "1.1.0"}
			res, err := RunTarget(ctx, opts)
			if err != nil {
				t.Fatal(err)
			}
			if got, _ := os.ReadFile(filepath.Join(outside, "api.yaml")); string(got) != original {
				t.Errorf("the file outside the working copy was written:\n%s", got)
			}
			want := strings.Replace(original, "1.0.0", "1.1.0", 1)
			if got, _ := testgit.ReadFile(t, bare, "main", "clusters/prod/api.yaml"); !res.Pushed || got != want {
				t.Errorf("pushed %v, the remote holds:\n%s\nwant:\n%s", res.Pushed, got, want)
			}
		})
	}
}
