//go:build linux

package foldfs

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/text/unicode/norm"
)

// TestMount: each fold makes the names it takes for one a single entry,
// listed by the name it was made with, and leaves other names apart.
func TestMount(t *testing.T) {
	for _, tt := range []struct {
		name       string
		fold       Fold
		made, also string // also is taken for made when folded
	}{
		{"case", strings.ToLower, "App.yaml", "app.yaml"},
		{"normalization form", norm.NFC.String, "caf\u00e9.yaml", "cafe\u0301.yaml"},
		{"none", func(s string) string { return s }, "App.yaml", "app.yaml"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			mnt := Mount(t, tt.fold)
			folds := tt.fold(tt.made) == tt.fold(tt.also)
			dir := filepath.Join(mnt, "d")
			if err := os.Mkdir(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, tt.made), []byte("one\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			got, err := os.ReadFile(filepath.Join(dir, tt.also))
			if folds && (err != nil || string(got) != "one\n") {
				t.Errorf("reading %q: %q, %v; want the bytes of %q", tt.also, got, err, tt.made)
			}
			if !folds && !errors.Is(err, os.ErrNotExist) {
				t.Errorf("reading %q: %q, %v; want it missing", tt.also, got, err)
			}
			f, err := os.OpenFile(filepath.Join(dir, tt.also), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
			if err == nil {
				f.Close()
			}
			if folds != errors.Is(err, os.ErrExist) {
				t.Errorf("creating %q exclusively: %v; want it to exist: %v", tt.also, err, folds)
			}
			if err := os.WriteFile(filepath.Join(dir, tt.also), []byte("two\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			want := []string{tt.made}
			if !folds {
				want = append(want, tt.also)
				slices.Sort(want)
			}
			ents, err := os.ReadDir(dir)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, e := range ents {
				names = append(names, e.Name())
			}
			if !slices.Equal(names, want) {
				t.Errorf("the folder lists %q, want %q", names, want)
			}
			if got, _ := os.ReadFile(filepath.Join(dir, tt.made)); folds && string(got) != "two\n" {
				t.Errorf("%q after writing %q: %q, want the bytes written last", tt.made, tt.also, got)
			}
			// A rename to another spelling takes it.
			if err := os.Rename(filepath.Join(dir, tt.made), filepath.Join(dir, tt.also)); err != nil {
				t.Fatal(err)
			}
			if _, err := os.Lstat(filepath.Join(dir, tt.also)); err != nil {
				t.Errorf("after the rename: %v", err)
			}
		})
	}
}
