package releasebin

import (
	"debug/elf"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// TestMatchesRelease checks that Env and Flags are what the build section
// of .goreleaser.yaml and the go build of the Dockerfile use, so the
// benchmarks time what ships.
func TestMatchesRelease(t *testing.T) {
	read := func(name string) []byte {
		data, err := os.ReadFile(filepath.Join("..", "..", "..", name))
		if err != nil {
			t.Fatal(err)
		}
		return data
	}
	var gr struct {
		Builds []struct {
			Env     []string `yaml:"env"`
			Flags   []string `yaml:"flags"`
			Ldflags []string `yaml:"ldflags"`
		} `yaml:"builds"`
	}
	if err := yaml.Unmarshal(read(".goreleaser.yaml"), &gr); err != nil {
		t.Fatal(err)
	}
	if len(gr.Builds) != 1 {
		t.Fatalf(".goreleaser.yaml has %d builds; want the one this package copies", len(gr.Builds))
	}
	b := gr.Builds[0]
	ldflags := strings.Join(b.Ldflags, " ")
	got := append(append(slices.Clone(b.Env), b.Flags...), "-ldflags", strings.TrimSpace(strings.Split(ldflags, "-X")[0]))
	if want := append(slices.Clone(Env), Flags...); !slices.Equal(got, want) {
		t.Errorf(".goreleaser.yaml builds with %q, releasebin with %q: make them agree", got, want)
	}

	// The Dockerfile's RUN that builds, its continuation lines joined.
	run := strings.ReplaceAll(string(read("Dockerfile")), "\\\n", " ")
	var build string
	for _, line := range strings.Split(run, "\n") {
		if strings.Contains(line, "go build") {
			build = line
		}
	}
	before, after, ok := strings.Cut(build, `-ldflags "`)
	if !ok {
		t.Fatalf("the Dockerfile's go build (%s) has no quoted -ldflags", build)
	}
	ld, rest, _ := strings.Cut(after, `"`)
	if strings.TrimSpace(strings.Split(ld, "-X")[0]) != Flags[2] {
		t.Errorf("the Dockerfile's go build links with -ldflags %q, releasebin with %q", ld, Flags[2])
	}
	fields := strings.Fields(before + rest)
	for _, want := range Env {
		if !slices.Contains(fields, want) {
			t.Errorf("the Dockerfile's go build (%s) does not set %s", build, want)
		}
	}
	if !slices.Contains(fields, "-trimpath") {
		t.Errorf("the Dockerfile's go build (%s) does not use -trimpath", build)
	}
	for _, f := range fields[slices.Index(fields, "build")+1:] {
		if strings.HasPrefix(f, "-") && f != "-o" && !slices.Contains(Flags[:1], f) {
			t.Errorf("the Dockerfile's go build uses %s, which releasebin does not", f)
		}
	}
}

// TestBuildIsStatic builds the binary for Linux, the platform of the
// release's image, and checks that it is linked as the release's is:
// statically, without a symbol table. Cross-building keeps the check the
// same on any machine.
func TestBuildIsStatic(t *testing.T) {
	bin, err := build(t.TempDir(), "GOOS=linux", "GOARCH="+runtime.GOARCH)
	if err != nil {
		t.Fatal(err)
	}
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Errorf("the binary asks for a dynamic loader; the release's is static")
		}
	}
	if syms, err := f.Symbols(); err == nil && len(syms) > 0 {
		t.Errorf("the binary has %d symbols; the release strips them", len(syms))
	}
}
