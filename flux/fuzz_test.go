package flux

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// FuzzLoad feeds one file to Load: it never panics, and every error is an
// *Error naming the file and a line inside it.
func FuzzLoad(f *testing.F) {
	for _, seed := range []string{
		repoYAML,
		repoYAML + "  exclusionLst: [a]\n",
		"apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImagePolicy\nmetadata: {name: a}\nspec: {policy: {semver: {range: 1.x}}}\n---\n--- x\n",
		"apiVersion: v1\nkind: List\nitems:\n- apiVersion: source.toolkit.fluxcd.io/v1\n  kind: GitRepository\n  metadata: {name: g}\n  spec: {url: 1}\n",
		"apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImageRepository\nmetadata: &a {name: a}\nspec: *a\n",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, text string) {
		dir := t.TempDir()
		file := filepath.Join(dir, "f.yaml")
		if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		lines := 1
		for _, c := range text {
			if c == '\n' {
				lines++
			}
		}
		set, err := Load(context.Background(), []string{file}, LoadOptions{})
		if err == nil {
			_, _ = set.Native(NativeOptions{})
			return
		}
		for _, e := range unjoin(err) {
			var fe *Error
			if !errors.As(e, &fe) {
				t.Fatalf("error %T is no *Error: %v", e, e)
			}
			if fe.Object.File != file || fe.Line < 1 || fe.Line > lines {
				t.Fatalf("error at %s:%d, outside the %d lines of %s: %v", fe.Object.File, fe.Line, lines, file, e)
			}
		}
	})
}
