package commands

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"
)

// referenceDir holds the generated command reference, one Markdown file per
// command. `go test ./internal/commands -update` regenerates it.
var referenceDir = filepath.Join("..", "..", "docs", "reference")

// TestReferenceDocs keeps docs/reference equal to what the commands say
// about themselves, so the reference never drifts from the flags.
func TestReferenceDocs(t *testing.T) {
	root := NewCmdRoot(io.Discard, io.Discard)
	root.DisableAutoGenTag = true
	got := map[string]string{}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if !c.IsAvailableCommand() && c != root {
			return
		}
		var b bytes.Buffer
		if err := doc.GenMarkdownCustom(c, &b, func(name string) string { return name }); err != nil {
			t.Fatal(err)
		}
		got[strings.ReplaceAll(c.CommandPath(), " ", "_")+".md"] = b.String()
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)

	if *update {
		if err := os.RemoveAll(referenceDir); err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(referenceDir, 0o755); err != nil {
			t.Fatal(err)
		}
		for name, text := range got {
			if err := os.WriteFile(filepath.Join(referenceDir, name), []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return
	}
	entries, err := os.ReadDir(referenceDir)
	if err != nil {
		t.Fatalf("%v (run go test ./internal/commands -update)", err)
	}
	if len(entries) != len(got) {
		t.Errorf("docs/reference has %d files, the commands make %d: run go test ./internal/commands -update", len(entries), len(got))
	}
	for name, text := range got {
		want, err := os.ReadFile(filepath.Join(referenceDir, name))
		if err != nil || string(want) != text {
			t.Errorf("docs/reference/%s is stale: run go test ./internal/commands -update", name)
		}
	}
}
