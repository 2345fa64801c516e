//go:build unix

package commands

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// fifo makes a named pipe in a temporary folder and writes content to it
// once, when a reader opens it, as a shell's -c <(cat FILE) does.
func fifo(t *testing.T, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "config.pipe")
	if err := syscall.Mkfifo(p, 0o600); err != nil {
		t.Fatal(err)
	}
	go func() {
		f, err := os.OpenFile(p, os.O_WRONLY, 0)
		if err != nil {
			return
		}
		f.WriteString(content)
		f.Close()
	}()
	return p
}

// TestConfigFromPipe: a config given as a pipe is read once and checked
// whole. Before, the first of two reads (looking for Flux objects) took
// it all and the second found an empty, valid config.
func TestConfigFromPipe(t *testing.T) {
	tests := []struct {
		name, content string
		wantCode      int
		want          string
	}{
		{"a valid config", "images:\n  - {name: apps:web, repository: ghcr.io/acme/web, policy: {semver: \">=1\"}}\n", 0, "config is valid (1 image policy, 0 registries)"},
		{"an unknown key", "images:\n  - {name: apps:web, repository: ghcr.io/acme/web, policy: {semver: \">=1\"}, bogus: 1}\n", 64, `images[0]: unknown key "bogus"`},
		{"Flux objects", "apiVersion: image.toolkit.fluxcd.io/v1beta2\nkind: ImagePolicy\n", 64, "imagebump reads Flux objects from files or folders only"},
		{"nothing", "", 64, "gave nothing to read"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := fifo(t, tt.content)
			stdout, stderr, code := runMain(t, "validate", "-c", p)
			if code != tt.wantCode || !strings.Contains(stdout+stderr, tt.want) {
				t.Errorf("validate -c PIPE: exit %d, output %q; want exit %d and %q", code, stdout+stderr, tt.wantCode, tt.want)
			}
		})
	}
}
