// Package releasebin builds the imagebump command the way a release
// builds it, for the benchmarks that time the binary: what users run is a
// static binary (CGO_ENABLED=0, -trimpath, -ldflags "-s -w"), from
// .goreleaser.yaml and the Dockerfile. A plain `go build` on a machine
// with a C compiler links with cgo instead, and because kustomize's
// plugin loader imports package plugin, that binary is dynamically linked
// with every symbol exported: 102 MB against 53 MB, and 10 to 20 ms more
// to start each command.
package releasebin

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// Env and Flags are the release build's environment and go build flags,
// but for the version the release stamps in with -X (it changes no
// timing); TestMatchesRelease checks them against .goreleaser.yaml and
// the Dockerfile.
var (
	Env   = []string{"CGO_ENABLED=0"}
	Flags = []string{"-trimpath", "-ldflags", "-s -w"}
)

// Build builds ./cmd/imagebump of this module into dir as the release
// does and returns the binary's path.
func Build(dir string) (string, error) { return build(dir) }

// build is Build with more environment, such as GOOS to cross-build.
func build(dir string, env ...string) (string, error) {
	goCmd, err := exec.LookPath("go")
	if err != nil {
		return "", fmt.Errorf("building imagebump: no go command on PATH: %w", err)
	}
	bin := filepath.Join(dir, "imagebump")
	args := append([]string{"build", "-o", bin}, Flags...)
	cmd := exec.Command(goCmd, append(args, "github.com/imagebump/imagebump/cmd/imagebump")...)
	cmd.Env = append(append(os.Environ(), Env...), env...)
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building imagebump as the release does: %w\n%s", err, out)
	}
	return bin, nil
}
