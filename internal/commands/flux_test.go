package commands

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/imagebump/imagebump/config"
	"github.com/imagebump/imagebump/internal/testkit/testgit"
	"github.com/imagebump/imagebump/internal/testkit/testregistry"
	"github.com/imagebump/imagebump/report"
)

// The Flux end-to-end tests run the sample fleet (testdata/flux, plus the
// objects and manifests in testdata/flux-e2e/overlay) through the command
// line against a real registry (distribution 2.8.2 with htpasswd, reached
// through the Docker config the fleet's secretRef maps to) and a real Git
// server (git http-backend with basic auth, the credentials read from the
// environment as the fleet's secrets mapping says), and compare what
// imagebump commits with what Flux's image-reflector-controller and
// image-automation-controller would commit.
//
// The expected files and commit messages under testdata/flux-e2e/expected
// are written by hand from Flux's documented rules, which the comments
// below cite; they are not produced by imagebump, so there is no -update
// flag for them. testdata/flux-e2e/README.md derives each one.
//
// Golden files spell the registry registry.fleet.test, the Git remote
// https://git.example.com/acme/fleet.git and each pushed digest
// {{digest REPOSITORY:TAG}}: normalize maps the test servers' values back.

const (
	fleetHost   = "registry.fleet.test"
	fleetGitURL = "https://git.example.com/acme/fleet.git"
)

// The sample fleet and the golden files, absolute: some tests change the
// working directory.
var fluxFleet, fluxE2E = mustAbs("../../testdata/flux"), mustAbs("../../testdata/flux-e2e")

func mustAbs(p string) string {
	abs, err := filepath.Abs(p)
	if err != nil {
		panic(err)
	}
	return abs
}

// fluxEnv is what the Flux end-to-end tests share: one registry holding the
// fleet's images, one git http-backend serving one bare repository per
// fleet copy.
type fluxEnv struct {
	reg *testregistry.Server
	// digests maps the golden files' digest names (REPOSITORY:TAG, or
	// REPOSITORY:TAG#N for a tag pushed again) to the digest pushed.
	digests map[string]string
	git     *testgit.HTTPServer
	// gitRoot holds the bare repositories the git server exports.
	gitRoot string
	repos   int
}

// fleetImages are the tags pushed: each entry is one image, so the tags of
// an entry share a digest and entries differ.
var fleetImages = []struct {
	repo string
	tags []string
}{
	// flux-system:podinfo, semver ">=6.0.0 <7.0.0": 6.7.0-rc.1 is a
	// prerelease the range does not admit, 7.0.0 is out of range.
	{"stefanprodan/podinfo", []string{"6.5.0", "6.5.4", "6.6.0", "6.7.0-rc.1", "7.0.0", "latest"}},
	// apps:minio, ^RELEASE\.(?P<timestamp>.*)Z$ ordered by the extracted
	// timestamp; the .fips and -fips tags do not match the pattern.
	{"minio/minio", []string{"RELEASE.2023-12-23T07-19-11Z", "RELEASE.2024-01-31T20-20-33Z", "RELEASE.2024-03-15T01-07-19Z",
		"RELEASE.2024-10-02T17-50-41Z", "RELEASE.2024-10-02T17-50-41Z.fips", "RELEASE.2024-11-07T00-52-20Z-fips", "latest"}},
	// apps:build, numerical over ^[0-9]+$ (the rule the kustomize patch
	// sets): 1100 beats 999, which an alphabetical order would pick.
	{"acme/build", []string{"999", "1041", "1042", "1100", "1100-debug", "latest"}},
	// apps:web, semver ^2.1 with digest reflection: one image per tag, so
	// the digest written tells which tag it belongs to.
	{"acme/web", []string{"2.1.0"}},
	{"acme/web", []string{"2.1.3"}},
	{"acme/web", []string{"2.2.0"}},
	{"acme/web", []string{"3.0.0"}},
	// apps:tools (the overlay), alphabetical, its exclusionList replacing
	// Flux's default ^.*\.sig$.
	{"acme/tools", []string{"v1"}},
	{"acme/tools", []string{"v2"}},
	{"acme/tools", []string{"v2.sig"}},
	{"acme/tools", []string{"v3-debug"}},
	// compose:redis, the native config's policy (semver ~7.2).
	{"library/redis", []string{"7.2.4", "7.2.5", "7.4.0"}},
}

func startFluxEnv(t *testing.T) *fluxEnv {
	t.Helper()
	reg := testregistry.Start(t, testregistry.Options{Htpasswd: true, InMemory: true})
	e := &fluxEnv{reg: reg, digests: map[string]string{}}
	for _, im := range fleetImages {
		e.push(t, "", im.repo, im.tags...)
	}
	e.gitRoot = t.TempDir()
	testgit.Git(t, e.gitRoot, "init", "--quiet", "--bare", "--initial-branch=main", "first.git")
	e.git = testgit.StartHTTP(t, filepath.Join(e.gitRoot, "first.git"), true)
	// The fleet's secrets mapping reads the Git credentials from these.
	t.Setenv("GIT_USERNAME", e.git.Username)
	t.Setenv("GIT_TOKEN", e.git.Password)
	return e
}

// push pushes one new image under tags and records its digest under
// REPOSITORY:TAG plus suffix.
func (e *fluxEnv) push(t *testing.T, suffix, repo string, tags ...string) {
	t.Helper()
	e.reg.Push(t, repo, tags...)
	d := e.reg.Digest(t, repo, tags[0])
	for _, tag := range tags {
		e.digests[repo+":"+tag+suffix] = d
	}
}

// fleet is one copy of the sample fleet, committed to a bare repository of
// its own.
type fleet struct {
	dir   string // the local copy: the Flux objects and the manifests
	bare  string
	url   string
	files map[string]string // what was committed, by slash path
	// pushLog records each push as the pre-receive hook sees it: the push
	// options, the refs updated, then "---".
	pushLog string
}

// newFleet copies the sample fleet, the overlay and the extra folders of
// testdata/flux-e2e into a temporary folder, rewrites the registry host
// and the Git URL to the test servers', writes the Docker config the
// secrets mapping names, and commits it all to a new bare repository.
func (e *fluxEnv) newFleet(t *testing.T, extra ...string) *fleet {
	t.Helper()
	e.repos++
	name := fmt.Sprintf("fleet%d.git", e.repos)
	f := &fleet{dir: t.TempDir(), bare: filepath.Join(e.gitRoot, name), files: map[string]string{}}
	f.url = strings.TrimSuffix(e.git.URL, "first.git") + name
	srcs := []string{fluxFleet, filepath.Join(fluxE2E, "overlay")}
	for _, x := range extra {
		srcs = append(srcs, filepath.Join(fluxE2E, x))
	}
	for _, src := range srcs {
		err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			rel, err := filepath.Rel(src, p)
			if err != nil {
				return err
			}
			f.files[filepath.ToSlash(rel)] = e.denormalize(f, string(data))
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	for rel, text := range f.files {
		writeFile(t, f.dir, rel, text)
	}
	auth := base64.StdEncoding.EncodeToString([]byte(e.reg.Username + ":" + e.reg.Password))
	writeFile(t, f.dir, "secrets/docker-config.json", fmt.Sprintf(`{"auths": {%q: {"auth": %q}}}`, e.reg.Host, auth))

	testgit.Git(t, e.gitRoot, "init", "--quiet", "--bare", "--initial-branch=main", name)
	testgit.Commit(t, f.bare, "main", f.files, nil, "the fleet")
	// As gitwriter's refspec test does: advertise push options and record
	// what each push carries.
	testgit.Git(t, f.bare, "config", "receive.advertisePushOptions", "true")
	f.pushLog = filepath.Join(t.TempDir(), "pushes.log")
	hook := "#!/bin/sh\n" +
		"i=0\nwhile [ \"$i\" -lt \"${GIT_PUSH_OPTION_COUNT:-0}\" ]; do eval \"echo option \\$GIT_PUSH_OPTION_$i\" >> " + f.pushLog + "; i=$((i+1)); done\n" +
		"while read old new ref; do echo \"ref $ref\" >> " + f.pushLog + "; done\n" +
		"echo --- >> " + f.pushLog + "\n"
	if err := os.WriteFile(filepath.Join(f.bare, "hooks", "pre-receive"), []byte(hook), 0o755); err != nil {
		t.Fatal(err)
	}
	return f
}

// denormalize turns golden spellings into the test servers' addresses.
func (e *fluxEnv) denormalize(f *fleet, s string) string {
	s = strings.ReplaceAll(s, fleetHost, e.reg.Host)
	return strings.ReplaceAll(s, fleetGitURL, f.url)
}

// normalize turns the test servers' addresses, the fleet's folder and the
// pushed digests into the golden files' spelling.
func (e *fluxEnv) normalize(f *fleet, s string) string {
	s = strings.ReplaceAll(s, e.reg.Host, fleetHost)
	if f != nil {
		s = strings.ReplaceAll(s, f.url, fleetGitURL)
		s = strings.ReplaceAll(s, f.dir+string(filepath.Separator), "")
	}
	names := make([]string, 0, len(e.digests))
	for k := range e.digests {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		s = strings.ReplaceAll(s, e.digests[k], "{{digest "+k+"}}")
	}
	return s
}

// readGolden returns a file under testdata/flux-e2e.
func readGolden(t *testing.T, rel string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(fluxE2E, filepath.FromSlash(rel)))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// goldenTree returns the files under testdata/flux-e2e/DIR, by slash path.
func goldenTree(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	root := filepath.Join(fluxE2E, filepath.FromSlash(dir))
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		out[filepath.ToSlash(rel)] = string(data)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// checkTree compares every file of rev in the fleet's bare repository
// with want: the committed fleet, with the files of each golden folder
// in layers laid over it.
func (e *fluxEnv) checkTree(t *testing.T, f *fleet, rev string, layers ...string) {
	t.Helper()
	want := map[string]string{}
	for p, s := range f.files {
		want[p] = e.normalize(f, s)
	}
	for _, l := range layers {
		for p, s := range goldenTree(t, l) {
			want[p] = s
		}
	}
	got := map[string]string{}
	for _, p := range strings.Split(testgit.Git(t, f.bare, "ls-tree", "-r", "--name-only", rev), "\n") {
		s, _ := testgit.ReadFile(t, f.bare, rev, p)
		got[p] = e.normalize(f, s)
	}
	if diff := cmp.Diff(got, want); diff != "" {
		t.Errorf("files on %s (-got +want):\n%s", rev, diff)
	}
}

// commitMessage returns the message of a commit exactly as stored.
func commitMessage(t *testing.T, bare, rev string) string {
	t.Helper()
	raw := testgit.Git(t, bare, "cat-file", "commit", rev)
	_, msg, ok := strings.Cut(raw, "\n\n")
	if !ok {
		t.Fatalf("commit %s has no message:\n%s", rev, raw)
	}
	// testgit.Git drops the last line break of git's output: the message's.
	return msg + "\n"
}

// push is one push as the remote's pre-receive hook saw it.
type push struct {
	Options []string
	Refs    []string
}

func readPushes(t *testing.T, f *fleet) []push {
	t.Helper()
	data, err := os.ReadFile(f.pushLog)
	if os.IsNotExist(err) {
		return nil
	} else if err != nil {
		t.Fatal(err)
	}
	var out []push
	cur := push{}
	for _, line := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
		switch {
		case line == "---":
			// Options arrive from a map in Flux and go-git alike: their
			// order is not part of the contract.
			sort.Strings(cur.Options)
			out = append(out, cur)
			cur = push{}
		case strings.HasPrefix(line, "option "):
			cur.Options = append(cur.Options, strings.TrimPrefix(line, "option "))
		case strings.HasPrefix(line, "ref "):
			cur.Refs = append(cur.Refs, strings.TrimPrefix(line, "ref "))
		}
	}
	return out
}

// planSummary renders a plan's picks and changes the way the golden files
// under expected/plan write them.
func (e *fluxEnv) planSummary(t *testing.T, f *fleet, out string) string {
	t.Helper()
	var p report.Plan
	if err := json.Unmarshal([]byte(out), &p); err != nil {
		t.Fatalf("plan output is not JSON: %v\n%s", err, out)
	}
	var lines []string
	for _, pol := range p.Policies {
		l := "policy " + pol.Name + " " + pol.Latest
		if pol.Digest != "" {
			l += "@" + pol.Digest
		}
		lines = append(lines, l)
	}
	sort.Strings(lines)
	for _, c := range p.Changes {
		setter := c.Policy
		if c.Field != "image" {
			setter += ":" + c.Field
		}
		lines = append(lines, fmt.Sprintf("change %s:%d %s %s -> %s", c.File, c.Line, setter, c.From, c.To))
	}
	for _, pr := range p.Problems {
		lines = append(lines, "problem "+pr.Message)
	}
	return e.normalize(f, strings.Join(lines, "\n")+"\n")
}

// TestFluxFleetEndToEnd plans and runs the sample fleet and compares, file
// by file and message by message, with what Flux would commit. The
// subtests share one registry and one Git server; "run" pushes a tag
// again, so it comes last.
func TestFluxFleetEndToEnd(t *testing.T) {
	e := startFluxEnv(t)

	// Flux's rules behind testdata/flux-e2e/expected/plan (see its
	// README.md for each pick):
	//   - image-reflector-controller docs, ImagePolicy "SemVer": the
	//     highest version in the range (Masterminds/semver), prereleases
	//     only where the range admits them: podinfo 6.6.0, web 2.2.0.
	//   - "Filter Tags": only tags matching the pattern count, and extract
	//     orders by the named group: minio's latest RELEASE timestamp.
	//   - "Numerical": the last tag in numerical order: build 1100 (not
	//     999), the rule coming from the kustomize patch, as Flux's
	//     kustomize-controller would apply it.
	//   - ImageRepository "Exclusion list": the default ^.*\.sig$ applies
	//     only when the field is not set, so tools' list replaces it and
	//     the alphabetical policy picks v2.sig ("v2.sig" > "v2"), while
	//     v3-debug is excluded.
	//   - "Digest Reflection": IfNotPresent and Always both resolve the
	//     digest of a tag not seen before; markers get name:tag@digest
	//     (image-automation-controller, "Marking images for update").
	//   - image-automation-controller docs: an automation applies the
	//     ImagePolicies of its own namespace, under its update.path: apps
	//     does not touch flux-system:podinfo's marker below ./apps.
	t.Run("plan", func(t *testing.T) {
		f := e.newFleet(t)
		for _, target := range []string{"apps", "flux-system"} {
			out, stderr, code := runMain(t, "plan", "-c", f.dir, "--flux-secrets", filepath.Join(f.dir, "secrets.yaml"), "--target", target, "-o", "json")
			if code != 0 {
				t.Fatalf("plan --target %s: exit %d\n%s\n%s", target, code, out, stderr)
			}
			got := e.planSummary(t, f, out)
			if diff := cmp.Diff(got, readGolden(t, "expected/plan/"+target+".txt")); diff != "" {
				t.Errorf("plan --target %s (-got +want):\n%s", target, diff)
			}
			// The objects read are listed on stderr with file:line.
			for _, want := range []string{
				"Flux objects read: 13",
				"ImagePolicy apps/tools (clusters/prod/tools/tools.yaml:18)",
				"ImageUpdateAutomation apps/apps (clusters/prod/apps/automation.yaml:3, after the kustomize build of clusters/prod/apps/kustomization.yaml)",
			} {
				if !strings.Contains(e.normalize(f, stderr), want) {
					t.Errorf("plan --target %s: stderr lacks %q:\n%s", target, want, stderr)
				}
			}
		}
	})

	// A native imagebump.yaml read with the Flux objects (--flux): its own
	// target keeps the compose file current, and the Flux targets run as
	// before. Targets run in order: the native config's first.
	t.Run("native config with --flux", func(t *testing.T) {
		f := e.newFleet(t, "native")
		out, stderr, code := runMain(t, "run", "-c", filepath.Join(f.dir, "imagebump.yaml"),
			"--flux", filepath.Join(f.dir, "clusters"), "--flux-secrets", filepath.Join(f.dir, "secrets.yaml"), "-o", "json")
		if code != 0 {
			t.Fatalf("run: exit %d\n%s\n%s", code, out, stderr)
		}
		rep := decodeRun(t, out)
		var names []string
		for _, tr := range rep.Targets {
			names = append(names, tr.Target)
		}
		if diff := cmp.Diff(names, []string{"default", "apps", "flux-system"}); diff != "" {
			t.Errorf("targets (-got +want):\n%s", diff)
		}
		mainLog := strings.Split(testgit.Git(t, f.bare, "log", "--format=%H", "main"), "\n")
		if len(mainLog) != 3 {
			t.Fatalf("main has %d commits, want the fleet, the compose bump, the podinfo bump", len(mainLog))
		}
		composeCommit := mainLog[1]
		if got, want := e.normalize(f, commitMessage(t, f.bare, composeCommit)), readGolden(t, "expected/native/message.txt"); got != want {
			t.Errorf("compose commit message:\n got %q\nwant %q", got, want)
		}
		if got := testgit.Git(t, f.bare, "log", "-1", "--format=%an <%ae>", composeCommit); got != "ops-bot <ops-bot@example.com>" {
			t.Errorf("compose commit author = %q", got)
		}
		e.checkTree(t, f, "main", "expected/native/main", "expected/run/main")
		// The apps automation checked out main after the compose bump.
		if got := testgit.Git(t, f.bare, "rev-parse", "image-updates^"); got != composeCommit {
			t.Errorf("image-updates is based on %s, want the compose commit %s", got, composeCommit)
		}
		e.checkTree(t, f, "image-updates", "expected/native/main", "expected/run/image-updates")
		if got, want := e.normalize(f, commitMessage(t, f.bare, "image-updates")), readGolden(t, "expected/run/messages/apps.txt"); got != want {
			t.Errorf("apps commit message (-got +want):\n%s", cmp.Diff(got, want))
		}
	})

	// flux export writes the Flux objects as imagebump.yaml; that config
	// validates and plans exactly as the objects do (and as Flux would,
	// expected/plan); flux generate turns it back into Flux objects, which
	// export to the same config. Run from the fleet's folder with relative
	// paths, as a user would: the Docker config keeps the spelling of the
	// secrets mapping.
	t.Run("export round trip", func(t *testing.T) {
		f := e.newFleet(t)
		t.Chdir(f.dir)
		exported, stderr, code := runMain(t, "flux", "export", "clusters", "--secrets", "secrets.yaml")
		if code != 0 {
			t.Fatalf("flux export: exit %d\n%s", code, stderr)
		}
		if !strings.Contains(exported, "dockerConfig: secrets/docker-config.json\n") {
			t.Errorf("the export does not name the Docker config as secrets.yaml does:\n%s", exported)
		}
		if !strings.Contains(stderr, "Flux objects read: 13") {
			t.Errorf("flux export: no report on stderr:\n%s", stderr)
		}
		writeFile(t, f.dir, "imagebump.yaml", exported)
		if out, stderr, code := runMain(t, "validate", "-c", "imagebump.yaml", "--repo", "."); code != 0 {
			t.Fatalf("validate the export: exit %d\n%s\n%s", code, out, stderr)
		}
		for _, target := range []string{"apps", "flux-system"} {
			native, stderr, code := runMain(t, "plan", "-c", "imagebump.yaml", "--target", target, "--repo", ".", "-o", "json")
			if code != 0 {
				t.Fatalf("plan the export --target %s: exit %d\n%s", target, code, stderr)
			}
			fromFlux, stderr, code := runMain(t, "plan", "-c", "clusters", "--flux-secrets", "secrets.yaml", "--target", target, "--repo", ".", "-o", "json")
			if code != 0 {
				t.Fatalf("plan the objects --target %s: exit %d\n%s", target, code, stderr)
			}
			if diff := cmp.Diff(native, fromFlux); diff != "" {
				t.Errorf("plan --target %s: the export (-) and the objects (+) differ:\n%s", target, diff)
			}
			if diff := cmp.Diff(e.planSummary(t, f, native), readGolden(t, "expected/plan/"+target+".txt")); diff != "" {
				t.Errorf("plan of the export --target %s (-got +want):\n%s", target, diff)
			}
		}

		objects, stderr, code := runMain(t, "flux", "generate", "-c", "imagebump.yaml")
		if code != 0 {
			t.Fatalf("flux generate: exit %d\n%s", code, stderr)
		}
		writeFile(t, f.dir, "generated/objects.yaml", objects)
		// flux generate lists the Secrets to create, KEY=FILE; mapped back
		// to those files, the objects read the same credentials.
		var mapping strings.Builder
		secretLine := regexp.MustCompile(`^  (\S+/\S+) (\S+)=(\S+)$`)
		last := ""
		for _, line := range strings.Split(stderr, "\n") {
			if m := secretLine.FindStringSubmatch(line); m != nil {
				if m[1] != last {
					fmt.Fprintf(&mapping, "%s:\n", m[1])
					last = m[1]
				}
				fmt.Fprintf(&mapping, "  %q: %q\n", m[2], m[3])
			}
		}
		writeFile(t, f.dir, "generated-secrets.yaml", mapping.String())
		back, stderr, code := runMain(t, "flux", "export", "generated", "--secrets", "generated-secrets.yaml")
		if code != 0 {
			t.Fatalf("flux export of the generated objects: exit %d\n%s\nmapping:\n%s", code, stderr, mapping.String())
		}
		writeFile(t, f.dir, "back.yaml", back)
		want, err := config.Load("imagebump.yaml")
		if err != nil {
			t.Fatal(err)
		}
		got, err := config.Load("back.yaml")
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(got, want, configWithoutLines); diff != "" {
			t.Errorf("export -> generate -> export (-got +want):\n%s\nexported:\n%s\nback:\n%s", diff, exported, back)
		}
	})

	t.Run("run", func(t *testing.T) {
		f := e.newFleet(t)
		secrets := filepath.Join(f.dir, "secrets.yaml")
		fleetCommit := testgit.Git(t, f.bare, "rev-parse", "main")
		out, stderr, code := runMain(t, "run", "-c", f.dir, "--flux-secrets", secrets, "-o", "json")
		if code != 0 {
			t.Fatalf("run: exit %d\n%s\n%s", code, out, stderr)
		}
		if strings.Contains(out+stderr, e.git.Password) || strings.Contains(out+stderr, e.reg.Password) {
			t.Error("a password appears in the output")
		}

		// ImageUpdateAutomation docs, "Branch": the push branch is created
		// from the checkout branch, and "Refspec": with both push.branch
		// and push.refspec the commit goes to both. "Push options": sent
		// to the server with the push, for the branch and the refspec
		// alike (Flux's CommitAndPush passes them to both pushes).
		refs := testgit.Refs(t, f.bare)
		if refs["refs/for/main"] == "" || refs["refs/for/main"] != refs["refs/heads/image-updates"] {
			t.Errorf("refs/for/main = %q, want the image-updates commit %q", refs["refs/for/main"], refs["refs/heads/image-updates"])
		}
		if got := testgit.Git(t, f.bare, "rev-parse", "image-updates^"); got != fleetCommit {
			t.Errorf("image-updates is based on %s, want main as checked out, %s", got, fleetCommit)
		}
		if got := testgit.Git(t, f.bare, "rev-parse", "main^"); got != fleetCommit {
			t.Errorf("main's new commit is based on %s, want %s", got, fleetCommit)
		}
		opts := []string{"merge_request.create=", "topic=image-updates"}
		wantPushes := []push{
			{Options: opts, Refs: []string{"refs/heads/image-updates"}},
			{Options: opts, Refs: []string{"refs/for/main"}},
			{Refs: []string{"refs/heads/main"}},
		}
		if diff := cmp.Diff(readPushes(t, f), wantPushes); diff != "" {
			t.Errorf("pushes (-got +want):\n%s", diff)
		}

		// Files: each automation edits only the markers of its namespace's
		// policies under its update.path, byte for byte as the setters
		// would.
		e.checkTree(t, f, "main", "expected/run/main")
		e.checkTree(t, f, "image-updates", "expected/run/image-updates")

		// Messages: flux-system has no template, so Flux's default
		// message; apps renders its .Changed template (ImageUpdateAutomation
		// docs, "Message Template"), file names relative to update.path.
		for _, c := range []struct{ rev, golden, author string }{
			{"main", "expected/run/messages/flux-system.txt", "fluxcdbot <fluxcdbot@users.noreply.github.com>"},
			{"image-updates", "expected/run/messages/apps.txt", "apps-bot <apps-bot@example.com>"},
		} {
			got := e.normalize(f, commitMessage(t, f.bare, c.rev))
			// Flux commits the rendered text as it is, and so does
			// imagebump; testgit adds nothing.
			got = strings.TrimSuffix(got, "\n")
			want := strings.TrimSuffix(readGolden(t, c.golden), "\n")
			if diff := cmp.Diff(got, want); diff != "" {
				t.Errorf("message on %s (-got +want):\n%s", c.rev, diff)
			}
			if a := testgit.Git(t, f.bare, "log", "-1", "--format=%an <%ae>", c.rev); a != c.author {
				t.Errorf("author on %s = %q, want %q", c.rev, a, c.author)
			}
		}

		// tools:v2.sig is pushed again. ImagePolicy docs, "Digest
		// Reflection": Always overwrites the digest even though the tag
		// did not change; IfNotPresent (web) keeps its digest. The push
		// branch is rebuilt from the checkout branch, which now holds the
		// podinfo bump ("Branch": "overwritten with the cloned version
		// plus the changes"), and force-pushed; main has nothing new.
		//
		// Gerrit and AGit (Gitea, Forgejo) turn a push to refs/for/main
		// into a change or a pull request and keep no such ref; the plain
		// Git server keeps it, so it is removed here as they would. (Left
		// in place, the next refspec push is not a fast-forward, and Flux
		// and imagebump both refuse to force it: see gitwriter's
		// TestUpdateRefspecNotFastForward.)
		testgit.Git(t, f.bare, "update-ref", "-d", "refs/for/main")
		e.push(t, "#2", "acme/tools", "v2.sig")
		mainBefore := testgit.Git(t, f.bare, "rev-parse", "main")
		out, stderr, code = runMain(t, "run", "-c", f.dir, "--flux-secrets", secrets, "-o", "json")
		if code != 0 {
			t.Fatalf("second run: exit %d\n%s\n%s", code, out, stderr)
		}
		if got := testgit.Git(t, f.bare, "rev-parse", "image-updates^"); got != mainBefore {
			t.Errorf("image-updates is based on %s, want main's head %s", got, mainBefore)
		}
		e.checkTree(t, f, "image-updates", "expected/run/main", "expected/run/image-updates", "expected/rerun/image-updates")
		got := e.normalize(f, commitMessage(t, f.bare, "image-updates"))
		if diff := cmp.Diff(strings.TrimSuffix(got, "\n"), strings.TrimSuffix(readGolden(t, "expected/rerun/messages/apps.txt"), "\n")); diff != "" {
			t.Errorf("second message on image-updates (-got +want):\n%s", diff)
		}
		refs = testgit.Refs(t, f.bare)
		if refs["refs/for/main"] != refs["refs/heads/image-updates"] {
			t.Errorf("refs/for/main = %q, want the new image-updates commit %q", refs["refs/for/main"], refs["refs/heads/image-updates"])
		}
		wantPushes = append(wantPushes,
			push{Options: opts, Refs: []string{"refs/heads/image-updates"}},
			push{Options: opts, Refs: []string{"refs/for/main"}})
		if diff := cmp.Diff(readPushes(t, f), wantPushes); diff != "" {
			t.Errorf("pushes after the second run (-got +want):\n%s", diff)
		}

		// Nothing new: no commit and no push (Flux: "no change since last
		// reconciliation").
		out, stderr, code = runMain(t, "run", "-c", f.dir, "--flux-secrets", secrets, "-o", "json")
		if code != 0 {
			t.Fatalf("third run: exit %d\n%s\n%s", code, out, stderr)
		}
		if diff := cmp.Diff(testgit.Refs(t, f.bare), refs); diff != "" {
			t.Errorf("the third run moved refs (-got +want):\n%s", diff)
		}
		if n := len(readPushes(t, f)); n != len(wantPushes) {
			t.Errorf("the third run pushed %d times", n-len(wantPushes))
		}
	})
}

// configWithoutLines drops what only says where a config came from.
var configWithoutLines = cmp.Options{
	cmpopts.IgnoreUnexported(config.Config{}, config.Image{}),
	cmpopts.IgnoreFields(config.Config{}, "File"),
	cmpopts.IgnoreFields(config.Image{}, "Line"),
	cmpopts.IgnoreFields(config.Registry{}, "Line"),
	cmpopts.IgnoreFields(config.Target{}, "Line"),
	cmpopts.SortSlices(func(a, b config.Image) bool { return a.Name < b.Name }),
	cmpopts.SortSlices(func(a, b config.Target) bool { return a.Name < b.Name }),
	cmpopts.EquateEmpty(),
}

// ignoredFieldsYAML sets every Flux field imagebump does not take as Flux
// does (flux/fields.go's notes, and the "not done yet" values of
// flux/native.go), each on a line of its own. REGISTRY is the test
// registry. (An ImageRepository's provider is mapped now: aws, gcp and
// azure are the registry's cloud provider; generic stands on its line.)
const ignoredFieldsYAML = `apiVersion: image.toolkit.fluxcd.io/v1
kind: ImageRepository
metadata: {name: app, namespace: apps}
spec:
  image: REGISTRY/acme/web
  interval: 5m
  timeout: 1m
  proxySecretRef: {name: proxy}
  serviceAccountName: puller
  accessFrom: {namespaceSelectors: [{matchLabels: {team: apps}}]}
  provider: generic
  certSecretRef: {name: registry-ca}
  insecure: true
---
apiVersion: image.toolkit.fluxcd.io/v1
kind: ImagePolicy
metadata: {name: app, namespace: apps}
spec:
  imageRepositoryRef: {name: app}
  digestReflectionPolicy: Always
  interval: 10m
  policy: {semver: {range: ">=1.0.0"}}
---
apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata: {name: fleet, namespace: apps}
spec:
  url: https://git.example.com/acme/fleet.git
  provider: azure
  interval: 1m
  timeout: 1m
  ref: {branch: main}
  verify: {mode: HEAD, secretRef: {name: keys}}
  proxySecretRef: {name: proxy}
  ignore: "/*"
  suspend: true
  recurseSubmodules: true
  include: [{repository: {name: other}}]
  sparseCheckout: [apps]
  serviceAccountName: cloner
status: {}
---
apiVersion: source.toolkit.fluxcd.io/v1beta2
kind: GitRepository
metadata: {name: legacy, namespace: apps}
spec:
  url: https://git.example.com/acme/legacy.git
  interval: 1m
  gitImplementation: go-git
  accessFrom: {namespaceSelectors: []}
`

// ignoredFields lists, for each field ignoredFieldsYAML sets, the object
// and the line where the report must name it.
var ignoredFields = []struct {
	object, field string
	line          int
}{
	{"ImageRepository apps/app", "spec.interval", 6},
	{"ImageRepository apps/app", "spec.timeout", 7},
	{"ImageRepository apps/app", "spec.proxySecretRef", 8},
	{"ImageRepository apps/app", "spec.serviceAccountName", 9},
	{"ImageRepository apps/app", "spec.accessFrom", 10},
	{"ImageRepository apps/app", "spec.certSecretRef", 12},
	{"ImagePolicy apps/app", "spec.interval", 21},
	{"GitRepository apps/fleet", "spec.provider", 29},
	{"GitRepository apps/fleet", "spec.interval", 30},
	{"GitRepository apps/fleet", "spec.timeout", 31},
	{"GitRepository apps/fleet", "spec.verify", 33},
	{"GitRepository apps/fleet", "spec.proxySecretRef", 34},
	{"GitRepository apps/fleet", "spec.ignore", 35},
	{"GitRepository apps/fleet", "spec.suspend", 36},
	{"GitRepository apps/fleet", "spec.recurseSubmodules", 37},
	{"GitRepository apps/fleet", "spec.include", 38},
	{"GitRepository apps/fleet", "spec.sparseCheckout", 39},
	{"GitRepository apps/fleet", "spec.serviceAccountName", 40},
	{"GitRepository apps/fleet", "status", 41},
	{"GitRepository apps/legacy", "spec.interval", 48},
	{"GitRepository apps/legacy", "spec.gitImplementation", 49},
	{"GitRepository apps/legacy", "spec.accessFrom", 50},
}

// TestFluxReportsIgnoredFields checks that validate and plan name, on
// stderr, every Flux field imagebump does not take as Flux does, with its
// file and line: nothing is dropped silently. The list is checked
// against flux/fields.go, so a field given a note there is tested here.
func TestFluxReportsIgnoredFields(t *testing.T) {
	host := startMemRegistry(t)
	dir := t.TempDir()
	file := writeFile(t, dir, "flux/objects.yaml", strings.ReplaceAll(ignoredFieldsYAML, "REGISTRY", host))
	repo := filepath.Join(dir, "repo")
	writeFile(t, repo, "web.yaml", "image: "+host+"/acme/web:1.0.0 # {\"$imagepolicy\": \"apps:app\"}\n")

	noted := map[string]bool{}
	for _, f := range ignoredFields {
		noted[strings.Fields(f.object)[0]+" "+f.field] = true
	}
	for _, rule := range notedFieldRules(t) {
		if !noted[rule] {
			t.Errorf("flux/fields.go notes %s, which ignoredFieldsYAML does not set", rule)
		}
	}

	for _, args := range [][]string{
		{"validate", "-c", file, "--repo", repo},
		{"plan", "-c", file, "--repo", repo},
	} {
		t.Run(args[0], func(t *testing.T) {
			out, stderr, code := runMain(t, args...)
			if code == ExitUsage {
				t.Fatalf("exit %d\n%s\n%s", code, out, stderr)
			}
			lines := strings.Split(stderr, "\n")
			for _, f := range ignoredFields {
				prefix := fmt.Sprintf("%s:%d: ", file, f.line)
				found := false
				for _, l := range lines {
					if strings.Contains(l, prefix) && strings.Contains(l, f.object+": "+f.field+": ") {
						found = true
						break
					}
				}
				if !found {
					t.Errorf("stderr does not report %s %s at %s", f.object, f.field, prefix)
				}
			}
			if t.Failed() {
				t.Logf("stderr:\n%s", stderr)
			}
		})
	}
	// With JSON logs (serve's, for a collector), the report is log
	// records: its lines of text were the only ones that were not JSON.
	t.Run("json logs", func(t *testing.T) {
		_, stderr, code := runMain(t, "plan", "-c", file, "--repo", repo, "--log-format", "json")
		if code == ExitUsage {
			t.Fatalf("exit %d\n%s", code, stderr)
		}
		notes := map[string]bool{}
		read := false
		for l := range strings.Lines(stderr) {
			var rec map[string]any
			if err := json.Unmarshal([]byte(l), &rec); err != nil {
				t.Errorf("a line of stderr is not JSON: %q", l)
				continue
			}
			if rec["msg"] == "Flux objects read" {
				read = rec["count"] != float64(0)
			}
			if at, ok := rec["at"].(string); ok {
				notes[fmt.Sprintf("%s %v %v", at, rec["object"], rec["field"])] = true
			}
		}
		if !read {
			t.Errorf("no record of the Flux objects read:\n%s", stderr)
		}
		for _, f := range ignoredFields {
			if key := fmt.Sprintf("%s:%d %s %s", file, f.line, f.object, f.field); !notes[key] {
				t.Errorf("no record of %s", key)
			}
		}
	})
}

// notedFieldRules returns "KIND FIELD" for every field flux/fields.go gives
// a note rather than a mapping, read from its source: the table is
// unexported, and this test must see a field added to it.
func notedFieldRules(t *testing.T) []string {
	t.Helper()
	data, err := os.ReadFile("../../flux/fields.go")
	if err != nil {
		t.Fatal(err)
	}
	kindRE := regexp.MustCompile(`^\s*Kind(\w+): \{$`)
	ruleRE := regexp.MustCompile(`^\s*"([\w.]+)":\s+\{(Info|Warning),`)
	var kind string
	var out []string
	for _, line := range strings.Split(string(data), "\n") {
		if m := kindRE.FindStringSubmatch(line); m != nil {
			kind = m[1]
		} else if m := ruleRE.FindStringSubmatch(line); m != nil && kind != "" {
			out = append(out, kind+" "+m[1])
		}
	}
	if len(out) < 15 {
		t.Fatalf("read %d noted fields from flux/fields.go: has its layout changed?", len(out))
	}
	return out
}

// TestFluxStrictDecodingCLI checks that a typo in a Flux object stops every
// command that reads it with exit 64, naming the file, the line and the
// field, as the Kubernetes API server would refuse the object.
func TestFluxStrictDecodingCLI(t *testing.T) {
	policy := "apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImagePolicy\nmetadata: {name: web, namespace: apps}\nspec:\n  imageRepositoryRef: {name: web}\n"
	repo := "---\napiVersion: image.toolkit.fluxcd.io/v1\nkind: ImageRepository\nmetadata: {name: web, namespace: apps}\nspec:\n  image: ghcr.io/acme/web\n"
	auto := "apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImageUpdateAutomation\nmetadata: {name: apps, namespace: apps}\nspec:\n  interval: 5m\n  sourceRef: {kind: GitRepository, name: fleet}\n  git:\n    commit: {author: {email: bot@example.com}}\n    push:\n      branch: auto\n      refsepc: refs/heads/auto:refs/for/main\n"
	for _, tt := range []struct {
		name  string
		files map[string]string
		want  []string
	}{
		{"typo in a policy", map[string]string{"objects.yaml": policy + "  policy:\n    semver:\n      rnage: 1.x\n" + repo},
			[]string{"objects.yaml:8: ImagePolicy apps/web: spec.policy.semver.rnage: unknown field \"rnage\" (did you mean \"range\"?)"}},
		{"typo in an automation's push", map[string]string{"auto.yaml": auto},
			[]string{"auto.yaml:11: ImageUpdateAutomation apps/apps: spec.git.push.refsepc: unknown field \"refsepc\" (did you mean \"refspec\"?)"}},
		{"wrong type", map[string]string{"objects.yaml": repo + "  insecure: \"yes\"\n"},
			[]string{"objects.yaml:7: ImageRepository apps/web: spec.insecure: expected a boolean"}},
		// After a kustomize build, fields have no line of their own: the
		// error names the object's file and line, and the build.
		{"typo in a kustomization's object", map[string]string{
			"kustomization.yaml": "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nnamespace: apps\nresources: [objects.yaml]\n",
			"objects.yaml":       "# web\n" + strings.Replace(policy, "namespace: apps", "namespace: x", 1) + "  policy: {semver: {range: 1.x}}\n  filterTag: {pattern: '.*'}\n"},
			[]string{"objects.yaml:2", "kustomization.yaml", "ImagePolicy apps/web: spec.filterTag: unknown field \"filterTag\" (did you mean \"filterTags\"?)"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			for name, text := range tt.files {
				writeFile(t, dir, "flux/"+name, text)
			}
			checkout := t.TempDir()
			for _, args := range [][]string{
				{"validate", "-c", filepath.Join(dir, "flux")},
				{"plan", "-c", filepath.Join(dir, "flux"), "--repo", checkout},
				{"run", "--flux", filepath.Join(dir, "flux")},
				{"flux", "export", filepath.Join(dir, "flux")},
			} {
				out, stderr, code := runMain(t, args...)
				if code != ExitUsage {
					t.Errorf("%s: exit %d, want %d\n%s\n%s", args[0], code, ExitUsage, out, stderr)
				}
				got := strings.ReplaceAll(stderr, filepath.Join(dir, "flux")+string(filepath.Separator), "")
				for _, want := range tt.want {
					if !strings.Contains(got, want) {
						t.Errorf("%s: stderr lacks %q:\n%s", strings.Join(args[:2], " "), want, got)
					}
				}
			}
		})
	}
}

// copyFleet copies the sample fleet as it is into a temporary folder.
func copyFleet(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	err := filepath.WalkDir(fluxFleet, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(fluxFleet, p)
		if err != nil {
			return err
		}
		writeFile(t, dir, rel, string(data))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestFluxValidatePointsAtObjects checks validate's messages about Flux
// policies: a marker naming a policy in the wrong namespace is an error
// with the marker's file:line and the policy meant (Flux matches markers
// with the policy's namespace, and would skip this one without a word);
// a policy no marker uses is pointed at in its ImagePolicy's file, not in
// the native config made of it, which is written nowhere.
func TestFluxValidatePointsAtObjects(t *testing.T) {
	dir := copyFleet(t)
	clusters := filepath.Join(dir, "clusters")
	writeFile(t, dir, "apps/podinfo/canary.yaml", "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: canary}\nspec:\n  template:\n    spec:\n      containers:\n        - name: c\n          image: registry.fleet.test/stefanprodan/podinfo:6.5.0 # {\"$imagepolicy\": \"apps:podinfo\"}\n")
	out, stderr, code := runMain(t, "validate", "-c", clusters, "--repo", dir)
	if code != ExitUsage {
		t.Errorf("validate: exit %d, want %d\n%s\n%s", code, ExitUsage, out, stderr)
	}
	want := "apps/podinfo/canary.yaml:9: unknown policy apps:podinfo"
	if !strings.Contains(out+stderr, want) || !strings.Contains(out+stderr, `did you mean "flux-system:podinfo"?`) {
		t.Errorf("validate does not point at %s with the policy meant:\n%s\n%s", want, out, stderr)
	}

	empty := t.TempDir()
	out, stderr, code = runMain(t, "validate", "--flux", clusters, "--repo", empty, "-o", "json")
	if code != 0 {
		t.Fatalf("validate: exit %d\n%s\n%s", code, out, stderr)
	}
	var rep ValidateReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Config != clusters {
		t.Errorf("config = %q, want the Flux path %q", rep.Config, clusters)
	}
	var got []string
	for _, w := range rep.Warnings {
		got = append(got, fmt.Sprintf("%s %s:%d", w.Policy, strings.TrimPrefix(w.File, clusters+string(filepath.Separator)), w.Line))
	}
	wantWarnings := []string{
		// The Flux report's warnings, which go to stderr as text (the
		// Secrets this test maps nowhere, and the like), come first.
		" prod/apps/image-repositories.yaml:30",
		" prod/apps/image-repositories.yaml:1",
		" prod/apps/image-repositories.yaml:15",
		" prod/apps/image-repositories.yaml:30",
		" prod/flux-system/gotk-sync.yaml:12",
		" prod/flux-system/podinfo.yaml:10",
		"apps:minio prod/apps/image-policies.yaml:3",
		"apps:build prod/apps/image-policies.yaml:19",
		"apps:web prod/apps/image-policies.yaml:32",
		"flux-system:podinfo prod/flux-system/podinfo.yaml:13",
	}
	if diff := cmp.Diff(got, wantWarnings); diff != "" {
		t.Errorf("warnings (-got +want):\n%s", diff)
	}
	if !strings.Contains(rep.Warnings[4].Message, "GitRepository flux-system/flux-system: ") {
		t.Errorf("a Flux warning does not name its object: %q", rep.Warnings[4].Message)
	}
	out, _, _ = runMain(t, "validate", "--flux", clusters, "--repo", empty)
	if want := "warning: " + filepath.Join(clusters, "prod/flux-system/podinfo.yaml") + ":13: policy flux-system:podinfo is used by no marker"; !strings.Contains(out, want) {
		t.Errorf("validate's text lacks %q:\n%s", want, out)
	}
}

// TestFluxUnmappedSSHSecret runs the commands on a fleet bootstrapped as
// `flux bootstrap` does it over ssh (a GitRepository with secretRef
// flux-system) and no secrets mapping: the commands that use no Git
// (validate, plan and apply with --repo, flux export) go on with a warning
// saying what run and serve will need, and the config flux export writes
// loads; run and plan without --repo, which clone, refuse it (exit 64).
func TestFluxUnmappedSSHSecret(t *testing.T) {
	dir := copyFleet(t)
	sync := filepath.Join(dir, "clusters/prod/flux-system/gotk-sync.yaml")
	data, err := os.ReadFile(sync)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, dir, "clusters/prod/flux-system/gotk-sync.yaml", strings.Replace(string(data), fleetGitURL, "ssh://git@github.com/acme/fleet", 1))
	clusters := filepath.Join(dir, "clusters/prod")
	checkout := t.TempDir() // no markers: plan asks no registry
	const (
		warning = "Secret flux-system/flux-system is not mapped: not needed here, as Git is not used, but run and serve need its identity and known_hosts"
		refusal = "Secret flux-system/flux-system is not mapped, and an ssh URL needs its identity and known_hosts"
	)
	for _, tt := range []struct {
		name     string
		args     []string
		wantCode int
		want     string
	}{
		{"validate --repo", []string{"validate", "-c", clusters, "--repo", checkout}, 0, warning},
		{"plan --repo", []string{"plan", "-c", clusters, "--repo", checkout}, 0, warning},
		{"apply --repo", []string{"apply", "-c", clusters, "--repo", checkout}, 0, warning},
		{"plan without --repo", []string{"plan", "-c", clusters, "--target", "flux-system"}, ExitUsage, refusal},
		{"run", []string{"run", "-c", clusters}, ExitUsage, refusal},
	} {
		t.Run(tt.name, func(t *testing.T) {
			out, stderr, code := runMain(t, tt.args...)
			if code != tt.wantCode || !strings.Contains(stderr, tt.want) {
				t.Errorf("exit %d, want %d with %q\n%s\n%s", code, tt.wantCode, tt.want, out, stderr)
			}
		})
	}

	t.Run("flux export", func(t *testing.T) {
		t.Chdir(dir)
		out, stderr, code := runMain(t, "flux", "export", "clusters/prod")
		if code != 0 || !strings.Contains(stderr, warning) {
			t.Fatalf("exit %d, want 0 with %q\n%s", code, warning, stderr)
		}
		if want := "sshKeyFile: unmapped-secret/flux-system/flux-system/identity\n"; !strings.Contains(out, want) {
			t.Errorf("the config does not name %q:\n%s", want, out)
		}
		writeFile(t, dir, "imagebump.yaml", out)
		if out, stderr, code := runMain(t, "validate", "-c", "imagebump.yaml"); code != 0 {
			t.Errorf("validate of the exported config: exit %d\n%s\n%s", code, out, stderr)
		}
	})
}

// TestFluxExportNothing: a path with no Flux image automation objects (a
// native config, a folder of plain manifests) is an error with nothing on
// stdout, so that `flux export DIR > imagebump.yaml` with the wrong DIR
// does not leave an empty config behind.
func TestFluxExportNothing(t *testing.T) {
	dir := t.TempDir()
	native := writeFile(t, dir, "imagebump.yaml", "images:\n  - {name: apps:web, repository: ghcr.io/acme/web, policy: {semver: \">=1\"}}\n")
	plain := filepath.Join(dir, "manifests")
	writeFile(t, plain, "deploy.yaml", "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\n")
	for _, p := range []string{native, plain} {
		stdout, stderr, code := runMain(t, "flux", "export", p)
		if code != ExitUsage || stdout != "" || !strings.Contains(stderr, "no ImagePolicy and no ImageUpdateAutomation found in "+p) {
			t.Errorf("flux export %s: exit %d, stdout %q, stderr %q; want exit 64, nothing on stdout and the error", p, code, stdout, stderr)
		}
	}
}

// TestFluxExportFile: flux export --file writes the config there, with the
// paths of the secrets mapping relative to that file's folder (on stdout
// they are relative to the current folder, and a config redirected
// elsewhere would name files that are not there); the config it writes
// loads with the Docker config where the mapping put it. A folder that
// does not exist is refused before anything is written.
func TestFluxExportFile(t *testing.T) {
	dir := copyFleet(t)
	t.Chdir(dir)
	out, stderr, code := runMain(t, "flux", "export", "clusters", "--secrets", "secrets.yaml", "--file", "deploy/sub/imagebump.yaml")
	if code != ExitUsage || !strings.Contains(stderr, "--file deploy/sub/imagebump.yaml: the folder deploy/sub does not exist") {
		t.Errorf("--file in a missing folder: exit %d\n%s%s", code, out, stderr)
	}
	if err := os.MkdirAll("deploy/sub", 0o755); err != nil {
		t.Fatal(err)
	}

	// The objects come as PATH, --flux PATH or -c DIR alike.
	want, _, code := runMain(t, "flux", "export", "clusters", "--secrets", "secrets.yaml")
	if code != 0 {
		t.Fatalf("flux export clusters: exit %d", code)
	}
	for _, args := range [][]string{{"--flux", "clusters"}, {"-c", "clusters"}} {
		got, stderr, code := runMain(t, append([]string{"flux", "export", "--secrets", "secrets.yaml"}, args...)...)
		if code != 0 || got != want {
			t.Errorf("flux export %v: exit %d, %s\n%s", args, code, cmp.Diff(got, want), stderr)
		}
	}
	if _, stderr, code := runMain(t, "flux", "export"); code != ExitUsage || !strings.Contains(stderr, "no Flux objects given") {
		t.Errorf("flux export alone: exit %d, %s", code, stderr)
	}
	out, stderr, code = runMain(t, "flux", "export", "clusters", "--secrets", "secrets.yaml", "--file", "deploy/sub/imagebump.yaml")
	if code != 0 || out != "" || !strings.Contains(stderr, "wrote deploy/sub/imagebump.yaml") {
		t.Fatalf("flux export --file: exit %d, stdout %q\n%s", code, out, stderr)
	}
	// Not over the objects it reads, nor a folder.
	var objects []string
	err := filepath.WalkDir("clusters", func(p string, d fs.DirEntry, err error) error {
		if err == nil && strings.HasSuffix(p, ".yaml") {
			objects = append(objects, p)
		}
		return err
	})
	if err != nil || len(objects) == 0 {
		t.Fatalf("no objects under clusters (%v)", err)
	}
	for _, tt := range []struct{ file, want string }{
		{"clusters", "--file clusters is a folder"},
	} {
		if _, stderr, code := runMain(t, "flux", "export", "clusters", "--file", tt.file); code != ExitUsage || !strings.Contains(stderr, tt.want) {
			t.Errorf("--file %s: exit %d, %s", tt.file, code, stderr)
		}
	}
	for _, obj := range objects {
		before, err := os.ReadFile(obj)
		if err != nil {
			t.Fatal(err)
		}
		// Every file under the folder is read (a kustomization, a plain
		// manifest too): none is overwritten.
		_, stderr, code := runMain(t, "flux", "export", "clusters", "--secrets", "secrets.yaml", "--file", obj)
		if code != ExitUsage || !strings.Contains(stderr, "--file "+obj+" is a file flux export reads") {
			t.Errorf("--file %s, a file read: exit %d, %s", obj, code, stderr)
		}
		if after, _ := os.ReadFile(obj); !bytes.Equal(after, before) {
			t.Errorf("%s changed though flux export failed", obj)
		}
		if err := os.WriteFile(obj, before, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	single := filepath.Join("clusters", "prod", "apps", "image-policies.yaml")
	if _, stderr, code := runMain(t, "flux", "export", single, "--file", single); code != ExitUsage || !strings.Contains(stderr, "is a file flux export reads") {
		t.Errorf("flux export X --file X: exit %d, %s", code, stderr)
	}
	if _, stderr, code := runMain(t, "flux", "export", "clusters", "--secrets", "secrets.yaml", "--file", "secrets.yaml"); code != ExitUsage || !strings.Contains(stderr, "is a file flux export reads") {
		t.Errorf("--file naming the Secrets mapping: exit %d, %s", code, stderr)
	}
	data, err := os.ReadFile("deploy/sub/imagebump.yaml")
	if err != nil || !strings.Contains(string(data), "dockerConfig: ../../secrets/docker-config.json\n") {
		t.Fatalf("the config does not name the Docker config from its folder (%v):\n%s", err, data)
	}
	cfg, err := config.Load("deploy/sub/imagebump.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range cfg.Registries {
		if r.Auth != nil && r.Auth.DockerConfig != filepath.Join(dir, "secrets/docker-config.json") {
			t.Errorf("registry %s reads %s, want the mapping's file", r.Host, r.Auth.DockerConfig)
		}
	}
}

// TestFluxDirWithNativeConfig: with -c DIR, an imagebump.yaml in DIR is not
// read, and a warning says so and how to read both.
func TestFluxDirWithNativeConfig(t *testing.T) {
	dir := copyFleet(t)
	clusters := filepath.Join(dir, "clusters")
	writeFile(t, clusters, "imagebump.yaml", "registries:\n  - {host: ghcr.io, rateLimit: {requestsPerSecond: 5}}\n")
	_, stderr, _ := runMain(t, "validate", "-c", clusters)
	if !strings.Contains(stderr, "holds an imagebump.yaml, which is not read") || !strings.Contains(stderr, "--flux "+clusters) {
		t.Errorf("no warning about the imagebump.yaml in the folder:\n%s", stderr)
	}
}

// TestFluxRegistryHintsInFluxTerms: with Flux objects as the config, a
// registry's error says what to set on the ImageRepository (here
// spec.insecure for a plain HTTP registry), not the native config's
// registries: entry, which the user does not have.
func TestFluxRegistryHintsInFluxTerms(t *testing.T) {
	host := startMemRegistry(t)
	flux, repo, _ := webFluxObjects(t, host, "", "")
	fluxDir := filepath.Dir(flux)
	out, stderr, code := runMain(t, "plan", "-c", fluxDir, "--repo", repo)
	want := "set spec.insecure: true on the ImageRepository objects of " + host
	if code == 0 || !strings.Contains(out+stderr, want) || strings.Contains(out+stderr, "under registries:") {
		t.Errorf("plan: exit %d, want the hint %q and no native one:\n%s%s", code, want, out, stderr)
	}
}

// webFluxObjects writes the Flux objects of policy apps:web, an
// ImageRepository of HOST/acme/web and an ImagePolicy of range >=1.0.0 <2,
// each with the extra spec lines given, and a checkout whose one file
// marks the image at 1.0.0. It returns the objects' file, the checkout and
// the marked file's content.
func webFluxObjects(t *testing.T, host, repoSpec, policySpec string) (flux, repo, marked string) {
	t.Helper()
	dir := t.TempDir()
	flux = writeFile(t, dir, "flux/policies.yaml", `apiVersion: image.toolkit.fluxcd.io/v1
kind: ImageRepository
metadata: {name: web, namespace: apps}
spec:
  image: `+host+`/acme/web
`+repoSpec+`---
apiVersion: image.toolkit.fluxcd.io/v1
kind: ImagePolicy
metadata: {name: web, namespace: apps}
spec:
  imageRepositoryRef: {name: web}
  policy: {semver: {range: ">=1.0.0 <2"}}
`+policySpec)
	repo = filepath.Join(dir, "repo")
	marked = "image: " + host + "/acme/web:1.0.0 # {\"$imagepolicy\": \"apps:web\"}\n"
	writeFile(t, repo, "app.yaml", marked)
	return flux, repo, marked
}

// TestFluxPathsOverlap: a Flux folder and a file or folder inside it,
// named by --flux and flux.paths, are read once: their objects were
// defined twice.
func TestFluxPathsOverlap(t *testing.T) {
	dir := copyFleet(t)
	cfg := writeFile(t, dir, "imagebump.yaml", "flux:\n  paths: [clusters]\n  secrets: secrets.yaml\n")
	for _, extra := range []string{"clusters", "clusters/prod", "clusters/prod/apps/image-policies.yaml", "./clusters/../clusters"} {
		_, stderr, code := runMain(t, "validate", "-c", cfg, "--flux", filepath.Join(dir, extra))
		if code != 0 || strings.Contains(stderr, "defined twice") {
			t.Errorf("--flux %s beside flux.paths: exit %d\n%s", extra, code, stderr)
		}
	}
}
