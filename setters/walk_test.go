package setters

import (
	"context"
	"log/slog"
	"path/filepath"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestWithin(t *testing.T) {
	for _, tc := range []struct {
		path, dir string
		want      bool
	}{
		{"/a/b", "/a/b", true},
		{"/a/b/c", "/a/b", true},
		{"/a/bc", "/a/b", false},
		{"/a", "/a/b", false},
		{"/a", "/", true},
		{"/", "/", true},
	} {
		path, dir := filepath.FromSlash(tc.path), filepath.FromSlash(tc.dir)
		if got := within(path, dir); got != tc.want {
			t.Errorf("within(%q, %q) = %v, want %v", path, dir, got, tc.want)
		}
	}
}

// walk runs a walker over paths under root and returns the files it sent,
// in order, and the walker.
func walk(t *testing.T, root string, paths ...string) ([]string, *walker) {
	t.Helper()
	root, err := filepath.EvalSymlinks(root)
	if err != nil {
		t.Fatal(err)
	}
	jobs := make(chan job)
	done := make(chan []string)
	go func() {
		var sent []string
		for j := range jobs {
			sent = append(sent, j.rel)
		}
		done <- sent
	}()
	log := slog.New(slog.DiscardHandler)
	w := &walker{ctx: context.Background(), root: root, jobs: jobs, log: log, run: &run{log: log, res: &Result{}}}
	for _, p := range paths {
		w.path(p)
	}
	close(jobs)
	sent := <-done
	if len(w.run.res.Problems) > 0 {
		t.Errorf("problems: %v", w.run.res.Problems)
	}
	return sent, w
}

// TestWalkerSendsOnce walks overlapping paths and symlinks, and checks that
// each file is sent once, by its real path, and that the walker remembers
// only what symlinks and overlapping paths need.
func TestWalkerSendsOnce(t *testing.T) {
	const y = "a: b\n"
	files := map[string]string{
		"prod/a.yaml": y, "prod/sub/b.yml": y, "prod/sub/deep/c.yaml": y,
		"base/d.yaml": y, "base/e.yaml": y, "top.yaml": y, "notes.txt": y,
	}
	all := []string{"base/d.yaml", "base/e.yaml", "prod/a.yaml", "prod/sub/b.yml", "prod/sub/deep/c.yaml", "top.yaml"}
	for _, tc := range []struct {
		name   string
		links  map[string]string // link -> target
		paths  []string
		want   []string
		tops   int // folders remembered
		linked int // files remembered
	}{
		{name: "whole tree", paths: []string{"."}, want: all, tops: 1},
		{name: "folder, then a folder inside it", paths: []string{"prod", "prod/sub"},
			want: []string{"prod/a.yaml", "prod/sub/b.yml", "prod/sub/deep/c.yaml"}, tops: 1},
		{name: "folder inside, then its parent", paths: []string{"prod/sub", "prod"},
			want: []string{"prod/a.yaml", "prod/sub/b.yml", "prod/sub/deep/c.yaml"}, tops: 2},
		{name: "nested folders, then the root", paths: []string{"prod/sub/deep", "prod/sub", "."}, want: all, tops: 3},
		{name: "file, then its folder", paths: []string{"prod/a.yaml", "prod"},
			want: []string{"prod/a.yaml", "prod/sub/b.yml", "prod/sub/deep/c.yaml"}, tops: 1, linked: 1},
		{name: "folder, then a file in it", paths: []string{"prod", "prod/a.yaml"},
			want: []string{"prod/a.yaml", "prod/sub/b.yml", "prod/sub/deep/c.yaml"}, tops: 1},
		{name: "file twice", paths: []string{"top.yaml", "./top.yaml"}, want: []string{"top.yaml"}, linked: 1},
		{name: "link to a folder walked later", links: map[string]string{"prod/base": "../base"},
			paths: []string{"prod", "base"}, want: []string{"base/d.yaml", "base/e.yaml", "prod/a.yaml", "prod/sub/b.yml", "prod/sub/deep/c.yaml"}, tops: 2},
		{name: "link to a folder walked already", links: map[string]string{"prod/base": "../base"},
			paths: []string{"base", "prod"}, want: []string{"base/d.yaml", "base/e.yaml", "prod/a.yaml", "prod/sub/b.yml", "prod/sub/deep/c.yaml"}, tops: 2},
		{name: "links to a folder and its parent", links: map[string]string{"l1": "prod/sub", "l2": "prod"},
			paths: []string{"l1", "l2"}, want: []string{"prod/a.yaml", "prod/sub/b.yml", "prod/sub/deep/c.yaml"}, tops: 2},
		{name: "link to a file in the walk", links: map[string]string{"alias.yaml": "base/d.yaml"},
			paths: []string{"."}, want: all, tops: 1},
		{name: "link to a file outside the walk", links: map[string]string{"prod/alias.yaml": "../base/d.yaml"},
			paths: []string{"prod", "base"}, want: []string{"base/d.yaml", "base/e.yaml", "prod/a.yaml", "prod/sub/b.yml", "prod/sub/deep/c.yaml"}, tops: 2, linked: 1},
		{name: "YAML link to a text file", links: map[string]string{"notes.yaml": "notes.txt"},
			paths: []string{"."}, want: append(slices.Clone(all), "notes.txt"), tops: 1, linked: 1},
		{name: "loop", links: map[string]string{"prod/sub/up": "../.."}, paths: []string{"."}, want: all, tops: 1},
		{name: "path through a linked folder", links: map[string]string{"p": "prod"},
			paths: []string{"p/sub", "prod"}, want: []string{"prod/a.yaml", "prod/sub/b.yml", "prod/sub/deep/c.yaml"}, tops: 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := writeRepo(t, files)
			for l, target := range tc.links {
				symlink(t, filepath.FromSlash(target), filepath.Join(dir, filepath.FromSlash(l)))
			}
			sent, w := walk(t, dir, tc.paths...)
			slices.Sort(sent)
			slices.Sort(tc.want)
			if diff := cmp.Diff(sent, tc.want); diff != "" {
				t.Errorf("files sent (-got +want):\n%s", diff)
			}
			if len(w.tops) != tc.tops || len(w.linked) != tc.linked {
				t.Errorf("the walker remembers %d folders and %d files (%v, %v), want %d and %d",
					len(w.tops), len(w.linked), w.tops, w.linked, tc.tops, tc.linked)
			}
		})
	}
}
