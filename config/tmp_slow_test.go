package config

import (
	"os"
	"testing"
	"time"
)

func FuzzTmpSlow(f *testing.F) {
	ex, _ := os.ReadFile("../docs/examples/imagebump.yaml")
	f.Add(ex)
	f.Add([]byte("a: &a [*a]\n"))
	f.Add([]byte("images:\n  - &a {name: a, repository: nginx, policy: {numerical: asc}}\n  - <<: *a\n    name: b\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		done := make(chan struct{})
		go func() {
			select {
			case <-done:
			case <-time.After(2 * time.Second):
				os.WriteFile("/tmp/slow.yaml", data, 0o644)
				panic("slow input")
			}
		}()
		Parse(data, "name.yaml")
		close(done)
	})
}
