package deploy_test

import (
	"bufio"
	"bytes"
	"debug/elf"
	"debug/macho"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/imagebump/imagebump/internal/testkit/testgit"
)

// goReleaser holds the keys of .goreleaser.yaml this repository uses;
// decoding it strictly makes a misspelt or misplaced key an error, and the
// fields are checked for what the release must publish. GoReleaser's own
// schema check is TestGoReleaserCheck.
type goReleaser struct {
	Version     int    `yaml:"version"`
	ProjectName string `yaml:"project_name"`
	Before      struct {
		Hooks []string `yaml:"hooks"`
	} `yaml:"before"`
	Builds []struct {
		ID           string   `yaml:"id"`
		Main         string   `yaml:"main"`
		Binary       string   `yaml:"binary"`
		Env          []string `yaml:"env"`
		Flags        []string `yaml:"flags"`
		Ldflags      []string `yaml:"ldflags"`
		Goos         []string `yaml:"goos"`
		Goarch       []string `yaml:"goarch"`
		ModTimestamp string   `yaml:"mod_timestamp"`
	} `yaml:"builds"`
	Archives []struct {
		ID           string   `yaml:"id"`
		IDs          []string `yaml:"ids"`
		Formats      []string `yaml:"formats"`
		NameTemplate string   `yaml:"name_template"`
		Files        []string `yaml:"files"`
	} `yaml:"archives"`
	Checksum struct {
		NameTemplate string `yaml:"name_template"`
		Algorithm    string `yaml:"algorithm"`
	} `yaml:"checksum"`
	DockersV2 []struct {
		ID         string            `yaml:"id"`
		IDs        []string          `yaml:"ids"`
		Dockerfile string            `yaml:"dockerfile"`
		Images     []string          `yaml:"images"`
		Tags       []string          `yaml:"tags"`
		Platforms  []string          `yaml:"platforms"`
		Labels     map[string]string `yaml:"labels"`
	} `yaml:"dockers_v2"`
	Release struct {
		GitHub struct {
			Owner string `yaml:"owner"`
			Name  string `yaml:"name"`
		} `yaml:"github"`
		Prerelease string `yaml:"prerelease"`
	} `yaml:"release"`
	Changelog struct {
		Sort    string `yaml:"sort"`
		Filters struct {
			Exclude []string `yaml:"exclude"`
		} `yaml:"filters"`
	} `yaml:"changelog"`
}

func loadGoReleaser() (*goReleaser, error) {
	data, err := os.ReadFile(filepath.Join(repoRoot, ".goreleaser.yaml"))
	if err != nil {
		return nil, err
	}
	var cfg goReleaser
	if err := decodeStrict(data, &cfg); err != nil {
		return nil, err
	}
	return &cfg, nil
}

// versionVar is the variable the release stamps with -X.
const versionVar = "github.com/imagebump/imagebump/internal/commands.version"

// targets are the platforms of the released binaries.
var targets = []struct{ goos, goarch string }{
	{"linux", "amd64"}, {"linux", "arm64"}, {"darwin", "amd64"}, {"darwin", "arm64"},
}

// TestGoReleaserConfig checks what .goreleaser.yaml publishes: static
// binaries for the four targets with their checksums, and the multi-arch
// image from a Dockerfile that uses the binaries GoReleaser built.
func TestGoReleaserConfig(t *testing.T) {
	cfg, err := loadGoReleaser()
	if err != nil {
		t.Fatalf(".goreleaser.yaml: %v", err)
	}
	if cfg.Version != 2 {
		t.Errorf("version = %d, want 2 (GoReleaser v2 schema)", cfg.Version)
	}
	if len(cfg.Builds) != 1 {
		t.Fatalf("builds: %d, want 1", len(cfg.Builds))
	}
	b := cfg.Builds[0]
	if diff := cmp.Diff(b.Goos, []string{"linux", "darwin"}); diff != "" {
		t.Errorf("goos (-got +want):\n%s", diff)
	}
	if diff := cmp.Diff(b.Goarch, []string{"amd64", "arm64"}); diff != "" {
		t.Errorf("goarch (-got +want):\n%s", diff)
	}
	if !slices.Contains(b.Env, "CGO_ENABLED=0") || !slices.Contains(b.Flags, "-trimpath") {
		t.Errorf("build env %q and flags %q: want CGO_ENABLED=0 and -trimpath", b.Env, b.Flags)
	}
	if ld := strings.Join(b.Ldflags, " "); !strings.Contains(ld, "-X "+versionVar+"=") {
		t.Errorf("ldflags %q do not set %s", ld, versionVar)
	}
	if fi, err := os.Stat(filepath.Join(repoRoot, b.Main)); err != nil || !fi.IsDir() {
		t.Errorf("builds[0].main %q is not a package directory: %v", b.Main, err)
	}
	for _, a := range cfg.Archives {
		for _, f := range a.Files {
			if _, err := os.Stat(filepath.Join(repoRoot, f)); err != nil {
				t.Errorf("archive file %s: %v", f, err)
			}
		}
		if !slices.Contains(a.IDs, b.ID) {
			t.Errorf("archive %q does not take build %q", a.ID, b.ID)
		}
	}
	if cfg.Checksum.NameTemplate == "" || cfg.Checksum.Algorithm != "sha256" {
		t.Errorf("checksum = %+v, want a sha256 checksums file", cfg.Checksum)
	}
	if len(cfg.DockersV2) != 1 {
		t.Fatalf("dockers_v2: %d images, want 1", len(cfg.DockersV2))
	}
	d := cfg.DockersV2[0]
	if diff := cmp.Diff(d.Images, []string{"ghcr.io/imagebump/imagebump"}); diff != "" {
		t.Errorf("dockers_v2 images (-got +want):\n%s", diff)
	}
	if diff := cmp.Diff(d.Platforms, []string{"linux/amd64", "linux/arm64"}); diff != "" {
		t.Errorf("dockers_v2 platforms (-got +want):\n%s", diff)
	}
	if !slices.Contains(d.IDs, b.ID) || !slices.Contains(d.Tags, "v{{ .Version }}") {
		t.Errorf("dockers_v2 ids %q and tags %q: want build %q and tag v{{ .Version }}", d.IDs, d.Tags, b.ID)
	}
	// GoReleaser puts each platform's binary at $TARGETPLATFORM/<binary> in
	// the build context; the release Dockerfile must copy it from there,
	// and must have no RUN step, so that the arm64 image needs no emulation.
	df := parseDockerfile(t, d.Dockerfile)
	final := df.finalStage()
	if got := final.arg("COPY"); !slices.Contains(got, "$TARGETPLATFORM/"+b.Binary+" /usr/local/bin/imagebump") {
		t.Errorf("%s copies %q; want $TARGETPLATFORM/%s to /usr/local/bin/imagebump", d.Dockerfile, got, b.Binary)
	}
	if runs := final.arg("RUN"); len(runs) != 0 {
		t.Errorf("%s has RUN steps %q; the release image must build without emulation", d.Dockerfile, runs)
	}
	checkImageStage(t, d.Dockerfile, final)
}

// TestDockerfile checks the source Dockerfile: a static, trimmed build
// stamped like the release, onto the same non-root distroless base.
func TestDockerfile(t *testing.T) {
	df := parseDockerfile(t, "Dockerfile")
	if len(df.stages) != 2 {
		t.Fatalf("Dockerfile has %d stages, want a build stage and the image", len(df.stages))
	}
	run := strings.Join(df.stages[0].arg("RUN"), "\n")
	for _, want := range []string{"CGO_ENABLED=0", "-trimpath", "-X " + versionVar + "=${VERSION}", "./cmd/imagebump"} {
		if !strings.Contains(run, want) {
			t.Errorf("Dockerfile build step %q does not contain %q", run, want)
		}
	}
	final := df.finalStage()
	if got := final.arg("COPY"); len(got) != 1 || !strings.HasSuffix(got[0], " /usr/local/bin/imagebump") {
		t.Errorf("Dockerfile copies %q, want the binary to /usr/local/bin/imagebump", got)
	}
	checkImageStage(t, "Dockerfile", final)

	// The build context keeps what the build needs: every Go, embedded and
	// module file of cmd/imagebump's packages passes .dockerignore.
	ignore := strings.Fields(stripComments(string(readFile(t, ".dockerignore"))))
	out, err := exec.Command("go", "list", "-deps", "-f", `{{if .Module}}{{if .Module.Main}}{{.Dir}}|{{join .GoFiles ","}}|{{join .EmbedFiles ","}}{{end}}{{end}}`, "../cmd/imagebump").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	root, _ := filepath.Abs(repoRoot)
	files := []string{"go.mod", "go.sum"}
	for line := range strings.Lines(string(out)) {
		parts := strings.Split(strings.TrimSpace(line), "|")
		if len(parts) != 3 {
			continue
		}
		rel, err := filepath.Rel(root, parts[0])
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range append(strings.Split(parts[1], ","), strings.Split(parts[2], ",")...) {
			if f != "" {
				files = append(files, path.Join(filepath.ToSlash(rel), f))
			}
		}
	}
	if len(files) < 20 {
		t.Fatalf("go list found only %d files; the listing is broken", len(files))
	}
	for _, f := range files {
		if p := ignoredBy(ignore, f); p != "" {
			t.Errorf(".dockerignore pattern %q drops %s, which the build needs", p, f)
		}
	}
	if p := ignoredBy(ignore, ".git/config"); p == "" {
		t.Errorf(".dockerignore lets .git into the build context")
	}
}

// checkImageStage checks the final stage of an imagebump Dockerfile.
func checkImageStage(t *testing.T, name string, s *stage) {
	t.Helper()
	if s.from != "gcr.io/distroless/static-debian12:nonroot" {
		t.Errorf("%s: final image FROM %q, want gcr.io/distroless/static-debian12:nonroot", name, s.from)
	}
	if got := s.arg("USER"); !slices.Equal(got, []string{"65532:65532"}) {
		t.Errorf("%s: USER %q, want 65532:65532", name, got)
	}
	if got := s.arg("ENTRYPOINT"); !slices.Equal(got, []string{`["/usr/local/bin/imagebump"]`}) {
		t.Errorf("%s: ENTRYPOINT %q", name, got)
	}
	if got := s.arg("WORKDIR"); !slices.Equal(got, []string{"/var/lib/imagebump"}) {
		t.Errorf("%s: WORKDIR %q, want /var/lib/imagebump (made after USER, so owned by it)", name, got)
	}
	if i, j := s.index("USER"), s.index("WORKDIR"); i < 0 || j < i {
		t.Errorf("%s: WORKDIR comes before USER; the work directory would belong to root", name)
	}
}

// TestCrossCompile builds the released binaries (once per target, in
// parallel) and checks that each is static: an ELF without an interpreter
// or needed libraries, a Mach-O that links nothing but the macOS system
// libraries every Go program on darwin links. The version from the
// release's ldflags must be in each binary.
func TestCrossCompile(t *testing.T) {
	for _, tg := range targets {
		t.Run(tg.goos+"/"+tg.goarch, func(t *testing.T) {
			t.Parallel()
			p := buildBinary(t, tg.goos, tg.goarch)
			data, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Contains(data, []byte("v"+testVersion)) {
				t.Errorf("the binary does not hold the version v%s set by the ldflags", testVersion)
			}
			switch tg.goos {
			case "linux":
				checkStaticELF(t, p, tg.goarch)
			case "darwin":
				checkMachO(t, p, tg.goarch)
			}
			t.Logf("%s/%s: %.1f MiB", tg.goos, tg.goarch, float64(len(data))/(1<<20))
		})
	}
	t.Run("version", func(t *testing.T) {
		out, err := exec.Command(hostBinary(t), "version").CombinedOutput()
		if err != nil || !strings.HasPrefix(string(out), "imagebump v"+testVersion+" ") {
			t.Errorf("imagebump version = %q, %v; want imagebump v%s ...", out, err, testVersion)
		}
	})
}

func checkStaticELF(t *testing.T, p, goarch string) {
	t.Helper()
	f, err := elf.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	wantMachine := map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}[goarch]
	if f.Machine != wantMachine {
		t.Errorf("ELF machine %v, want %v", f.Machine, wantMachine)
	}
	for _, prog := range f.Progs {
		if prog.Type == elf.PT_INTERP || prog.Type == elf.PT_DYNAMIC {
			t.Errorf("ELF has a %v program header: dynamically linked", prog.Type)
		}
	}
	libs, err := f.ImportedLibraries()
	if err != nil {
		t.Fatal(err)
	}
	if len(libs) != 0 {
		t.Errorf("ELF needs shared libraries %q", libs)
	}
}

func checkMachO(t *testing.T, p, goarch string) {
	t.Helper()
	f, err := macho.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	wantCPU := map[string]macho.Cpu{"amd64": macho.CpuAmd64, "arm64": macho.CpuArm64}[goarch]
	if f.Cpu != wantCPU {
		t.Errorf("Mach-O CPU %v, want %v", f.Cpu, wantCPU)
	}
	libs, err := f.ImportedLibraries()
	if err != nil {
		t.Fatal(err)
	}
	if len(libs) == 0 {
		t.Errorf("Mach-O imports no library; Go on darwin always links libSystem, so the file is not what was expected")
	}
	for _, l := range libs {
		if !strings.HasPrefix(l, "/usr/lib/") && !strings.HasPrefix(l, "/System/Library/Frameworks/") {
			t.Errorf("Mach-O links %s, which is not part of macOS (cgo crept in?)", l)
		}
	}
}

// TestWorkflows checks that the release workflow runs on version tags,
// tests first, and may publish packages; and that CI runs .ci/run.
func TestWorkflows(t *testing.T) {
	type step struct {
		Name string            `yaml:"name"`
		Uses string            `yaml:"uses"`
		Run  string            `yaml:"run"`
		With map[string]string `yaml:"with"`
		Env  map[string]string `yaml:"env"`
	}
	type workflow struct {
		Name string `yaml:"name"`
		On   struct {
			Push struct {
				Tags     []string `yaml:"tags"`
				Branches []string `yaml:"branches"`
			} `yaml:"push"`
			PullRequest  *struct{} `yaml:"pull_request"`
			WorkflowCall *struct{} `yaml:"workflow_call"`
		} `yaml:"on"`
		Permissions map[string]string `yaml:"permissions"`
		Concurrency map[string]any    `yaml:"concurrency"`
		Jobs        map[string]struct {
			Uses           string            `yaml:"uses"`
			Needs          string            `yaml:"needs"`
			RunsOn         string            `yaml:"runs-on"`
			TimeoutMinutes int               `yaml:"timeout-minutes"`
			Permissions    map[string]string `yaml:"permissions"`
			Steps          []step            `yaml:"steps"`
		} `yaml:"jobs"`
	}
	var ci, rel workflow
	if err := decodeStrict(readFile(t, ".github/workflows/ci.yaml"), &ci); err != nil {
		t.Fatalf("ci.yaml: %v", err)
	}
	if err := decodeStrict(readFile(t, ".github/workflows/release.yaml"), &rel); err != nil {
		t.Fatalf("release.yaml: %v", err)
	}
	if !slices.ContainsFunc(ci.Jobs["test"].Steps, func(s step) bool { return s.Run == "bash .ci/run" }) {
		t.Errorf("ci.yaml job test does not run bash .ci/run")
	}
	if ci.On.WorkflowCall == nil {
		t.Errorf("ci.yaml cannot be called by the release workflow (no workflow_call)")
	}
	if !slices.Equal(rel.On.Push.Tags, []string{"v*"}) {
		t.Errorf("release.yaml runs on tags %q, want v*", rel.On.Push.Tags)
	}
	if rel.Jobs["test"].Uses != "./.github/workflows/ci.yaml" || rel.Jobs["release"].Needs != "test" {
		t.Errorf("release.yaml does not run the tests before releasing")
	}
	job := rel.Jobs["release"]
	if job.Permissions["contents"] != "write" || job.Permissions["packages"] != "write" {
		t.Errorf("release job permissions %v, want contents and packages write", job.Permissions)
	}
	i := slices.IndexFunc(job.Steps, func(s step) bool { return strings.HasPrefix(s.Uses, "goreleaser/goreleaser-action@") })
	if i < 0 || job.Steps[i].With["args"] != "release --clean" {
		t.Fatalf("release job has no goreleaser release --clean step")
	}
	login := slices.IndexFunc(job.Steps, func(s step) bool {
		return strings.HasPrefix(s.Uses, "docker/login-action@") && s.With["registry"] == "ghcr.io"
	})
	if login < 0 || login > i {
		t.Errorf("release job does not log in to ghcr.io before GoReleaser pushes the image")
	}
}

// dockerfile is a Dockerfile split into stages of instructions, enough for
// the checks above (no line continuations in instructions checked for
// their arguments, except RUN, which is joined).
type dockerfile struct{ stages []*stage }

type stage struct {
	from  string
	instr [][2]string // instruction, arguments
}

func (d *dockerfile) finalStage() *stage { return d.stages[len(d.stages)-1] }

// arg returns the arguments of every instruction of kind in the stage,
// with COPY's flags (--from, --chmod, --chown) removed.
func (s *stage) arg(kind string) []string {
	var out []string
	for _, in := range s.instr {
		if in[0] != kind {
			continue
		}
		a := in[1]
		if kind == "COPY" {
			var keep []string
			for _, w := range strings.Fields(a) {
				if !strings.HasPrefix(w, "--") {
					keep = append(keep, w)
				}
			}
			a = strings.Join(keep, " ")
		}
		out = append(out, a)
	}
	return out
}

func (s *stage) index(kind string) int {
	return slices.IndexFunc(s.instr, func(in [2]string) bool { return in[0] == kind })
}

func parseDockerfile(t *testing.T, rel string) *dockerfile {
	t.Helper()
	var d dockerfile
	sc := bufio.NewScanner(bytes.NewReader(readFile(t, rel)))
	var cur string
	flush := func() {
		line := strings.TrimSpace(cur)
		cur = ""
		if line == "" {
			return
		}
		kind, args, _ := strings.Cut(line, " ")
		kind = strings.ToUpper(kind)
		args = strings.TrimSpace(args)
		if kind == "FROM" {
			f := strings.Fields(args)
			img := ""
			for _, w := range f {
				if !strings.HasPrefix(w, "--") {
					img = w
					break
				}
			}
			d.stages = append(d.stages, &stage{from: img})
			return
		}
		if len(d.stages) == 0 {
			if kind != "ARG" {
				t.Fatalf("%s: %s before FROM", rel, kind)
			}
			return
		}
		s := d.stages[len(d.stages)-1]
		s.instr = append(s.instr, [2]string{kind, args})
	}
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(strings.TrimSpace(line), "#") {
			continue
		}
		if strings.HasSuffix(line, `\`) {
			cur += strings.TrimSuffix(line, `\`) + " "
			continue
		}
		cur += line
		flush()
	}
	flush()
	if len(d.stages) == 0 {
		t.Fatalf("%s has no FROM", rel)
	}
	return &d
}

// stripComments drops # comment lines.
func stripComments(s string) string {
	var b strings.Builder
	for line := range strings.Lines(s) {
		if !strings.HasPrefix(strings.TrimSpace(line), "#") {
			b.WriteString(line)
		}
	}
	return b.String()
}

// ignoredBy returns the .dockerignore pattern that excludes the file at
// rel (slash-separated, from the context root), or "". It knows the forms
// this repository's .dockerignore uses: a path or glob matched from the
// root against the file or any of its parent directories, a trailing
// slash, and a leading **/ for any depth. Exclusions (!) are not used.
func ignoredBy(patterns []string, rel string) string {
	parts := strings.Split(rel, "/")
	for _, p := range patterns {
		pat := strings.TrimSuffix(p, "/")
		anyDepth := strings.HasPrefix(pat, "**/")
		pat = strings.TrimPrefix(pat, "**/")
		for end := 1; end <= len(parts); end++ {
			for start := 0; start < end; start++ {
				if start > 0 && !anyDepth {
					break
				}
				if ok, _ := path.Match(pat, strings.Join(parts[start:end], "/")); ok {
					return p
				}
			}
		}
	}
	return ""
}

// TestGoReleaserCheck runs GoReleaser's own validation of .goreleaser.yaml
// (its full schema and deprecations), with the GoReleaser that
// ./scripts/test.sh builds into the tool cache (IMAGEBUMP_GORELEASER).
func TestGoReleaserCheck(t *testing.T) {
	bin := os.Getenv("IMAGEBUMP_GORELEASER")
	if bin == "" {
		bin = testgit.RequireProgram(t, "goreleaser", "(none: ./scripts/test.sh builds GoReleaser v2.15.1 and sets IMAGEBUMP_GORELEASER)")
	}
	cmd := exec.Command(bin, "check")
	cmd.Dir = repoRoot
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "1 configuration file(s) validated") {
		t.Errorf("goreleaser check: %v\n%s", err, out)
	}
}
