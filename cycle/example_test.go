package cycle_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/imagebump/imagebump/config"
	"github.com/imagebump/imagebump/cycle"
	"github.com/imagebump/imagebump/registry"
)

// staticRegistry answers every repository with the same tags.
type staticRegistry []string

func (s staticRegistry) Scan(_ context.Context, repos []string, _ int) []registry.Result {
	out := make([]registry.Result, len(repos))
	for i, r := range repos {
		out[i] = registry.Result{Repository: r, Tags: s}
	}
	return out
}

func (s staticRegistry) Digest(context.Context, string, string, string) (string, error) {
	return "", fmt.Errorf("no digests here")
}

func ExampleRun() {
	cfg, err := config.Parse([]byte(`images:
  - name: apps:web
    repository: ghcr.io/acme/web
    policy: {semver: "^1.0.0"}
`), "imagebump.yaml")
	if err != nil {
		panic(err)
	}
	root, err := os.MkdirTemp("", "example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(root)
	manifest := "image: ghcr.io/acme/web:1.0.0 # {\"$imagepolicy\": \"apps:web\"}\n"
	if err := os.WriteFile(filepath.Join(root, "web.yaml"), []byte(manifest), 0o644); err != nil {
		panic(err)
	}

	rep, err := cycle.Run(context.Background(), cycle.Options{
		Config:   cfg,
		Registry: staticRegistry{"1.0.0", "1.4.2", "2.0.0"},
		Root:     root,
		Write:    true,
	})
	if err != nil {
		panic(err)
	}
	for _, c := range rep.Changes {
		fmt.Printf("%s:%d %s -> %s\n", c.File, c.Line, c.Old, c.New)
	}
	data, _ := os.ReadFile(filepath.Join(root, "web.yaml"))
	fmt.Print(string(data))
	// Output:
	// web.yaml:1 ghcr.io/acme/web:1.0.0 -> ghcr.io/acme/web:1.4.2
	// image: ghcr.io/acme/web:1.4.2 # {"$imagepolicy": "apps:web"}
}
