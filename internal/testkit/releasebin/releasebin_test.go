package releasebin

import (
	"bytes"
	"debug/elf"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestMatchesRelease checks that Env and Flags are what .goreleaser.yaml
// and the Dockerfile build with, so the benchmarks time what ships.
func TestMatchesRelease(t *testing.T) {
	for _, file := range []string{".goreleaser.yaml", "Dockerfile"} {
		data, err := os.ReadFile(filepath.Join("..", "..", "..", file))
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range append(append([]string{}, Env...), "-trimpath", "-s -w") {
			if !bytes.Contains(data, []byte(want)) {
				t.Errorf("%s does not build with %q, which releasebin does: make them agree", file, want)
			}
		}
	}
}

// TestBuildIsStatic builds the binary and checks that it is linked as the
// release's is: statically, without a symbol table.
func TestBuildIsStatic(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the whole command")
	}
	if runtime.GOOS != "linux" {
		t.Skip("reads the ELF headers of a Linux build")
	}
	bin, err := Build(t.TempDir())
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
		names := make([]string, 0, 3)
		for _, s := range syms[:min(3, len(syms))] {
			names = append(names, s.Name)
		}
		t.Errorf("the binary has %d symbols (%s ...); the release strips them", len(syms), strings.Join(names, ", "))
	}
}
