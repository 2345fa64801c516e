package commands

import (
	"context"
	"encoding/json"
	"io"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/imagebump/imagebump/config"
)

// TestTagsFlags checks flag parsing alone: the run function is replaced.
func TestTagsFlags(t *testing.T) {
	tests := []struct {
		name     string
		args     []string
		want     TagsOptions
		wantCode int
	}{
		{
			name: "repository with semver and excludes",
			args: []string{"tags", "ghcr.io/acme/app", "--semver", ">=1.0.0", "--exclude", "^a", "--exclude", "^b", "-o", "json"},
			want: TagsOptions{Target: "ghcr.io/acme/app", SemVer: ">=1.0.0", Exclude: []string{"^a", "^b"}, Output: "json"},
		},
		{
			name: "filter with extract and digest for a platform",
			args: []string{"tags", "apps:web", "--alphabetical", "asc", "--filter-pattern", "^R(?P<ts>.*)$", "--filter-extract", "$ts", "--digest", "--platform", "linux/arm64"},
			want: TagsOptions{Target: "apps:web", Alphabetical: "asc", FilterPattern: "^R(?P<ts>.*)$", FilterExtract: "$ts", Digest: true, Platform: "linux/arm64", Output: "text"},
		},
		{name: "two policy kinds", args: []string{"tags", "x/y", "--semver", "1", "--numerical", "asc"}, wantCode: ExitUsage},
		{name: "no argument", args: []string{"tags"}, wantCode: ExitUsage},
		{name: "bad output", args: []string{"tags", "x/y", "-o", "yaml"}, wantCode: ExitUsage},
		{name: "unknown flag", args: []string{"tags", "x/y", "--semvar", "1"}, wantCode: ExitUsage},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got *TagsOptions
			root := NewCmdRoot(io.Discard, io.Discard)
			for _, c := range root.Commands() {
				if c.Name() == "tags" {
					root.RemoveCommand(c)
				}
			}
			g := &globalOptions{}
			tags := NewCmdTags(g, io.Discard, func(_ context.Context, o *TagsOptions, _ io.Writer) error {
				got = o
				return nil
			})
			root.AddCommand(tags)
			root.SetArgs(tt.args)
			err := root.Execute()
			code := exitCode(err)
			if code != tt.wantCode {
				t.Fatalf("exit code = %d (%v), want %d", code, err, tt.wantCode)
			}
			if tt.wantCode != 0 {
				return
			}
			got.global = nil
			if diff := cmp.Diff(*got, tt.want, cmp.AllowUnexported(TagsOptions{})); diff != "" {
				t.Errorf("options mismatch (-got +want):\n%s", diff)
			}
		})
	}
}

func sorted(s []string) []string {
	sort.Strings(s)
	return s
}

func TestTagsAgainstRegistry(t *testing.T) {
	host := startMemRegistry(t)
	dir := t.TempDir()
	cfg := writeFile(t, dir, "imagebump.yaml", `registries:
  - host: `+host+`
    insecure: true
images:
  - name: apps:web
    repository: `+host+`/acme/web
    policy: {semver: ">=1.0.0 <2"}
  - name: nomatch
    repository: `+host+`/acme/web
    policy: {semver: ">=5"}
`)
	tests := []struct {
		name       string
		args       []string
		wantCode   int
		wantLatest string
		wantCands  []string
		wantOut    string // a fragment of stdout, for text output
		wantErr    string // a fragment of stderr
		// wantJSONErr is a fragment of the JSON document's error, which
		// -o json prints when the command fails too.
		wantJSONErr string
	}{
		{
			name:       "policy from config",
			args:       []string{"tags", "apps:web", "-c", cfg, "-o", "json"},
			wantLatest: "1.2.0",
			wantCands:  []string{"1.0.0", "1.1.0", "1.2.0"},
		},
		{
			name:       "flags replace the config's rule",
			args:       []string{"tags", "apps:web", "-c", cfg, "-o", "json", "--semver", ">=1.0.0-0 <2"},
			wantLatest: "1.3.0-rc.1",
			wantCands:  []string{"1.0.0", "1.1.0", "1.2.0", "1.3.0-rc.1"},
		},
		{
			name:       "repository with flags, no config",
			args:       []string{"tags", host + "/acme/cache", "-c", cfg, "-o", "json", "--numerical", "asc", "--exclude", "^0$"},
			wantLatest: "100",
			wantCands:  []string{"100", "41", "42"},
		},
		{
			name:    "text output marks the pick",
			args:    []string{"tags", "apps:web", "-c", cfg},
			wantOut: "1.2.0       LATEST",
		},
		{
			name:        "no tag matches exits 1",
			args:        []string{"tags", "nomatch", "-c", cfg, "-o", "json"},
			wantCode:    ExitFailure,
			wantErr:     "no tag matches",
			wantJSONErr: "no tag matches",
		},
		{
			name:        "unknown repository in JSON: the document says why",
			args:        []string{"tags", host + "/acme/nope", "-c", cfg, "-o", "json"},
			wantCode:    ExitFailure,
			wantErr:     "acme/nope",
			wantJSONErr: "list tags for " + host + "/acme/nope",
		},
		{
			name:     "unknown repository exits 1 naming it",
			args:     []string{"tags", host + "/acme/nope", "-c", cfg, "--semver", "*"},
			wantCode: ExitFailure,
			wantErr:  "acme/nope",
		},
		{
			name:     "bad range exits 64",
			args:     []string{"tags", host + "/acme/web", "-c", cfg, "--semver", ">=banana"},
			wantCode: ExitUsage,
			wantErr:  "semver",
		},
		{
			name:     "missing config given with -c exits 64",
			args:     []string{"tags", "apps:web", "-c", dir + "/nope.yaml"},
			wantCode: ExitUsage,
			wantErr:  "nope.yaml",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stdout, stderr, code := runMain(t, tt.args...)
			if code != tt.wantCode {
				t.Fatalf("exit code = %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tt.wantCode, stdout, stderr)
			}
			if tt.wantErr != "" && !strings.Contains(stderr, tt.wantErr) {
				t.Errorf("stderr %q does not mention %q", stderr, tt.wantErr)
			}
			if tt.wantOut != "" && !strings.Contains(stdout, tt.wantOut) {
				t.Errorf("stdout does not contain %q:\n%s", tt.wantOut, stdout)
			}
			if tt.wantJSONErr != "" {
				var rep TagsReport
				if err := json.Unmarshal([]byte(stdout), &rep); err != nil || !strings.Contains(rep.Error, tt.wantJSONErr) {
					t.Errorf("JSON error %q (%v), want it to mention %q:\n%s", rep.Error, err, tt.wantJSONErr, stdout)
				}
			}
			if tt.wantCands == nil {
				return
			}
			var rep TagsReport
			if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
				t.Fatalf("output is not JSON: %v\n%s", err, stdout)
			}
			if rep.Latest != tt.wantLatest {
				t.Errorf("latest = %q, want %q", rep.Latest, tt.wantLatest)
			}
			got := append([]string(nil), rep.Candidates...)
			if diff := cmp.Diff(sorted(got), sorted(tt.wantCands)); diff != "" {
				t.Errorf("candidates mismatch (-got +want):\n%s", diff)
			}
			if len(rep.Tags) == 0 {
				t.Error("tags is empty")
			}
		})
	}
}

// TestTagsReferenceAndInsecure checks the two things a new user tries
// first: pasting a whole image reference, and a plain-HTTP registry
// without a config.
func TestTagsReferenceAndInsecure(t *testing.T) {
	host := startMemRegistry(t)
	t.Chdir(t.TempDir()) // no imagebump.yaml here
	for _, tt := range []struct {
		name, ref, wantNote string
	}{
		{"tag", host + "/acme/web:1.0.0", "the tag 1.0.0 was dropped"},
		{"digest", host + "/acme/web@sha256:" + strings.Repeat("ab", 32), "the digest sha256:"},
		{"tag and digest", host + "/acme/web:1.0.0@sha256:" + strings.Repeat("ab", 32), "the tag 1.0.0 and the digest"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			out, stderr, code := runMain(t, "tags", tt.ref, "--insecure", "--semver", ">=1.0.0 <2", "-o", "json")
			if code != 0 {
				t.Fatalf("exit %d\n%s\n%s", code, out, stderr)
			}
			var rep TagsReport
			if err := json.Unmarshal([]byte(out), &rep); err != nil {
				t.Fatal(err)
			}
			if rep.Repository != host+"/acme/web" || rep.Latest != "1.2.0" || !strings.Contains(rep.Note, tt.wantNote) {
				t.Errorf("repository %q latest %q note %q", rep.Repository, rep.Latest, rep.Note)
			}
		})
	}
	// Without --insecure, plain HTTP is refused, and the error says so.
	_, stderr, code := runMain(t, "tags", host+"/acme/web")
	if code != 1 || !strings.Contains(stderr, "insecure") {
		t.Errorf("plain HTTP without --insecure: exit %d\n%s", code, stderr)
	}
}

// TestTagsExplainAgeGate walks tags through every step of a config policy
// with a minimum age: the newest is held back as too young, and --explain
// says which step stops each tag.
func TestTagsExplainAgeGate(t *testing.T) {
	host := startMemRegistry(t)
	ctx := context.Background()
	now := time.Now()
	for tag, age := range map[string]time.Duration{"3.0.0": 72 * time.Hour, "3.1.0": time.Hour} {
		img, err := random.Image(64, 1)
		if err != nil {
			t.Fatal(err)
		}
		img, _ = mutate.CreatedAt(img, v1.Time{Time: now.Add(-age)})
		ref, _ := name.NewTag(host+"/acme/young:"+tag, name.Insecure)
		if err := remote.Write(ref, img, remote.WithContext(ctx)); err != nil {
			t.Fatal(err)
		}
	}
	dir := t.TempDir()
	cfg := writeFile(t, dir, "imagebump.yaml", "registries:\n  - {host: \""+host+"\", insecure: true}\nimages:\n  - {name: young, repository: "+host+"/acme/young, policy: {semver: \">=1.0.0\"}, minAge: 24h, exclude: ['^x']}\n")
	for _, tt := range []struct {
		tag  string
		want []ExplainStep // the steps checked, by step and result
	}{
		{"3.1.0", []ExplainStep{{Step: "valid", Result: "pass"}, {Step: "excluded", Result: "pass"}, {Step: "filtered", Result: "pass"}, {Step: "range", Result: "pass"}, {Step: "rank", Result: "pass"}, {Step: "age", Result: "stop"}}}, // the walk ends at its first stop
		{"3.0.0", []ExplainStep{{Step: "valid", Result: "pass"}, {Step: "excluded", Result: "pass"}, {Step: "filtered", Result: "pass"}, {Step: "range", Result: "pass"}, {Step: "rank", Result: "pass"}, {Step: "age", Result: "pass"}, {Step: "hold", Result: "pass"}}},
		{"9.9.9", []ExplainStep{{Step: "listed", Result: "stop"}}},
	} {
		t.Run(tt.tag, func(t *testing.T) {
			out, stderr, code := runMain(t, "tags", "young", "-c", cfg, "-o", "json", "--explain", tt.tag)
			if code != 0 {
				t.Fatalf("exit %d\n%s%s", code, out, stderr)
			}
			var rep TagsReport
			if err := json.Unmarshal([]byte(out), &rep); err != nil {
				t.Fatal(err)
			}
			if rep.Latest != "3.0.0" || len(rep.HeldBack) != 1 || rep.HeldBack[0].Tag != "3.1.0" || rep.HeldBack[0].Gate != "too young" {
				t.Errorf("latest %q held back %+v", rep.Latest, rep.HeldBack)
			}
			if !strings.HasPrefix(rep.Summary, "picked 3.0.0 from 2 tags") || !strings.HasSuffix(rep.Summary, "; 1 better tag held back") {
				t.Errorf("summary %q, want it to name the pick past the gate, 3.0.0", rep.Summary)
			}
			var got []ExplainStep
			for _, s := range rep.Explain {
				got = append(got, ExplainStep{Step: s.Step, Result: s.Result})
			}
			if diff := cmp.Diff(got, tt.want); diff != "" {
				t.Errorf("explain (-got +want):\n%s", diff)
			}
		})
	}
	out, _, _ := runMain(t, "tags", "young", "-c", cfg)
	if !strings.Contains(out, "held back: too young") || !strings.Contains(out, "held back: 3.1.0 (too young): created") {
		t.Errorf("text output does not say why 3.1.0 was held back:\n%s", out)
	}

	// An image with no creation time: the age gate cannot be checked,
	// and, as plan and run do, tags picks nothing; --explain says why.
	img, err := random.Image(64, 1)
	if err != nil {
		t.Fatal(err)
	}
	ref, _ := name.NewTag(host+"/acme/undated:1.0.0", name.Insecure)
	if err := remote.Write(ref, img, remote.WithContext(ctx)); err != nil {
		t.Fatal(err)
	}
	cfg = writeFile(t, dir, "undated.yaml", "registries:\n  - {host: \""+host+"\", insecure: true}\nimages:\n  - {name: undated, repository: "+host+"/acme/undated, policy: {semver: \">=1.0.0\"}, minAge: 24h}\n")
	out, stderr, code := runMain(t, "tags", "undated", "-c", cfg, "-o", "json", "--explain", "1.0.0")
	var rep TagsReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if code != 1 || rep.Latest != "" || !strings.HasPrefix(rep.Summary, "no tag picked: ") {
		t.Errorf("exit %d, latest %q, summary %q; want exit 1 and no tag picked\n%s", code, rep.Latest, rep.Summary, stderr)
	}
	var steps []string
	for _, s := range rep.Explain {
		steps = append(steps, s.Step+" "+s.Result)
	}
	if !slices.Contains(steps, "gates stop") || !slices.Contains(steps, "rank pass") {
		t.Errorf("explain %q, want the rule's pick to pass rank and the gates step to stop it", steps)
	}
	out, _, _ = runMain(t, "tags", "undated", "-c", cfg)
	if strings.Contains(out, "LATEST") {
		t.Errorf("text output marks a tag LATEST that the gate could not check:\n%s", out)
	}
}

// TestTagsMistypedPolicy: a name in a namespace of the config's policies
// that names none of them is refused with the nearest policy, not read
// as a Docker Hub repository (apps:wbe would list docker.io/library/apps).
func TestTagsMistypedPolicy(t *testing.T) {
	host := startMemRegistry(t)
	cfg, _ := demoSetup(t, host)
	_, stderr, code := runMain(t, "-c", cfg, "tags", "apps:wbe")
	if code != ExitUsage || !strings.Contains(stderr, `"apps:wbe" is no image policy in `+cfg+` (did you mean "apps:web"?)`) {
		t.Errorf("exit %d, stderr %q; want a usage error naming apps:web", code, stderr)
	}
	// The policy itself is still found.
	if out, stderr, code := runMain(t, "-c", cfg, "tags", "apps:web", "-o", "json"); code != 0 || !strings.Contains(out, `"policy": "apps:web"`) {
		t.Errorf("tags apps:web: exit %d\n%s\n%s", code, out, stderr)
	}
}

// TestTagsBadRepository: a repository no registry can serve is refused
// at once, without a request: a port out of range used to be retried as a
// network failure for seconds.
func TestTagsBadRepository(t *testing.T) {
	for _, tc := range []struct{ repo, want string }{
		{"localhost:99999/foo/bar", "port 99999 is not between 1 and 65535"},
		{"localhost:0/foo", "port 0 is not between 1 and 65535"},
		{"https://ghcr.io/acme/app", "has a scheme"},
		{"ghcr.io/Acme/app", "invalid repository"},
		// It was read as Docker Hub's bob, "the tag s3cr3t and the digest
		// 127.0.0.1:5055/private/app" dropped, the password printed.
		{"bob:s3cr3t@127.0.0.1:5055/private/app", "holds a user name or password before the host"},
	} {
		t.Run(tc.repo, func(t *testing.T) {
			start := time.Now()
			_, stderr, code := runMain(t, "tags", tc.repo)
			if code != ExitUsage || !strings.Contains(stderr, tc.want) || strings.Contains(stderr, "retrying") || strings.Contains(stderr, "s3cr3t") {
				t.Errorf("exit %d, stderr %q; want a usage error saying %q, no retry", code, stderr, tc.want)
			}
			if d := time.Since(start); d > 2*time.Second {
				t.Errorf("took %s: was the registry asked?", d)
			}
		})
	}
}

// TestDidYouMean: a policy name a typo away is suggested; a name far from
// every policy (redis:7.2, a Docker Hub repository and tag, beside a
// policy redis:cache) is not, so tags lists that repository.
func TestDidYouMean(t *testing.T) {
	cfg, err := config.Parse([]byte("images:\n  - {name: \"apps:web\", repository: r.example/web, policy: {semver: \">=1\"}}\n  - {name: \"redis:cache\", repository: r.example/redis, policy: {semver: \">=1\"}}\n"), "imagebump.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{"apps:wbe": ` (did you mean "apps:web"?)`, "redis:7.2": ""} {
		if got := didYouMean(cfg, name); got != want {
			t.Errorf("didYouMean(%q) = %q, want %q", name, got, want)
		}
	}
}

// TestReadAsRepository: an argument in a namespace of the config's
// policies that names none of them is said to have been read as a
// repository, with the namespace's policies; others get nothing.
func TestReadAsRepository(t *testing.T) {
	cfg, err := config.Parse([]byte("images:\n  - {name: \"apps:web\", repository: r.example/web, policy: {semver: \">=1\"}}\n  - {name: \"apps:api\", repository: r.example/api, policy: {semver: \">=1\"}}\n  - {name: minio, repository: r.example/minio, policy: {semver: \">=1\"}}\n"), "imagebump.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for arg, want := range map[string]string{
		"apps:nope":             `"apps:nope" is no image policy in imagebump.yaml, so it was read as the repository apps; the policies of namespace apps: apps:web, apps:api`,
		"minoi":                 `"minoi" is no image policy in imagebump.yaml, so it was read as the repository apps (did you mean "default:minio"?)`,
		"nginx":                 "",
		"redis:7.2":             "",
		"ghcr.io/acme/apps:1.0": "",
	} {
		if got := readAsRepository(cfg, arg, "apps", "imagebump.yaml"); got != want {
			t.Errorf("readAsRepository(%q) = %q, want %q", arg, got, want)
		}
	}
	// Without a config, a name with a colon may be a policy's: the error
	// says no config was loaded (it was a bare network error).
	if got, want := readAsRepository(nil, "apps:web", "apps", ""), `no config was loaded, so "apps:web" was read as the Docker Hub repository apps; if it names a policy, pass -c FILE`; got != want {
		t.Errorf("without a config: %q, want %q", got, want)
	}
	if got := readAsRepository(nil, "nginx", "nginx", ""); got != "" {
		t.Errorf("without a config, a bare name: %q", got)
	}
}

// TestTagsExplainRange: --explain says a version outside the range is
// outside it, a prerelease within it that the range does not admit, and
// a tag the rule cannot read as a version cannot be ordered.
func TestTagsExplainRange(t *testing.T) {
	host := startMemRegistry(t)
	t.Chdir(t.TempDir())
	for tag, want := range map[string]string{
		"0.9.0":      `a version, outside the range ">=1.0.0 <2"`,
		"1.3.0-rc.1": `a prerelease, which the range ">=1.0.0 <2" does not admit`,
		"2.0.0":      `a version, outside the range ">=1.0.0 <2"`,
		"latest":     "the rule cannot order it",
	} {
		out, stderr, code := runMain(t, "tags", host+"/acme/web", "--insecure", "--semver", ">=1.0.0 <2", "-o", "json", "--explain", tag)
		var rep TagsReport
		if err := json.Unmarshal([]byte(out), &rep); err != nil || code != 0 {
			t.Fatalf("tags --explain %s: exit %d (%v)\n%s", tag, code, err, stderr)
		}
		last := rep.Explain[len(rep.Explain)-1]
		if last.Step != "range" || last.Result != "stop" || !strings.HasPrefix(last.Detail, want) {
			t.Errorf("--explain %s ends with %+v, want range stop %q", tag, last, want)
		}
	}
}

// TestTagsPlainHTTPHint: a registry that speaks plain HTTP, listed
// without --insecure, gets the flag named beside the config's setting.
func TestTagsPlainHTTPHint(t *testing.T) {
	host := startMemRegistry(t)
	t.Chdir(t.TempDir())
	_, stderr, code := runMain(t, "tags", host+"/acme/web")
	for _, want := range []string{"add {host: " + host + ", insecure: true} under registries:", "pass --insecure to allow plain HTTP to " + host} {
		if code != ExitFailure || !strings.Contains(stderr, want) {
			t.Errorf("tags over plain HTTP without --insecure: exit %d, want 1 and %q:\n%s", code, want, stderr)
		}
	}
}

// TestTagsFlagsThatNeedOthers: --platform without --digest, and --digest
// without a policy, did nothing without a word; they are usage errors.
func TestTagsFlagsThatNeedOthers(t *testing.T) {
	t.Chdir(t.TempDir())
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"tags", "ghcr.io/acme/web", "--semver", ">=1", "--platform", "linux/arm64"}, "--platform says which digest --digest resolves: give --digest too"},
		{[]string{"tags", "ghcr.io/acme/web", "--digest"}, "--digest resolves the digest of the tag a policy picks"},
	} {
		out, stderr, code := runMain(t, c.args...)
		if code != ExitUsage || !strings.Contains(stderr, c.want) {
			t.Errorf("%v: exit %d, want 64 and %q\n%s%s", c.args, code, c.want, out, stderr)
		}
	}
}

// TestMissingConfigFile: -c naming no file says so, for tags as for plan
// (it said "reading config: open X: no such file or directory").
func TestMissingConfigFile(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "imagebump.yaml")
	for _, args := range [][]string{{"tags", "apps:web"}, {"plan", "--repo", t.TempDir()}, {"validate"}} {
		_, stderr, code := runMain(t, append(args, "-c", missing)...)
		if code != ExitUsage || !strings.Contains(stderr, "no config: -c "+missing+" names no file or folder here") {
			t.Errorf("%s: exit %d, stderr %q", args[0], code, stderr)
		}
	}
}
