package gitwriter_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/imagebump/imagebump/gitwriter"
)

// This is one imagebump cycle: open (clone or reuse) the working copy, run
// an edit that bumps a tag, and let Update commit and push it. A second
// cycle finds nothing to change and pushes nothing.
func Example() {
	ctx := context.Background()
	remote, cleanup := newRemote()
	defer cleanup()
	workdir, err := os.MkdirTemp("", "imagebump-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(workdir)

	bump := func(ctx context.Context, dir string) ([]string, string, error) {
		const name = "clusters/prod/app.yaml"
		p := filepath.Join(dir, name)
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, "", err
		}
		updated := strings.ReplaceAll(string(b), "app:1.0.0", "app:1.1.0")
		if err := os.WriteFile(p, []byte(updated), 0o644); err != nil {
			return nil, "", err
		}
		return []string{name}, "Bump app to 1.1.0", nil
	}
	cycle := func() {
		repo, err := gitwriter.Open(ctx, gitwriter.Options{
			URL:     remote, // https://, ssh:// and git@host:path work too, with Auth
			Branch:  "main",
			Workdir: workdir,
		})
		if err != nil {
			log.Fatal(err)
		}
		defer repo.Close()
		res, err := repo.Update(ctx, gitwriter.Update{
			Commit: gitwriter.Commit{AuthorName: "imagebump", AuthorEmail: "imagebump@example.com"},
		}, bump)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("pushed: %v, branch: %s, changed: %v\n", res.Pushed, res.Branch, res.Changed)
	}
	cycle()
	cycle()
	// Output:
	// pushed: true, branch: main, changed: [clusters/prod/app.yaml]
	// pushed: false, branch: main, changed: []
}

// newRemote makes a bare repository whose main branch holds one manifest,
// and returns its file:// URL.
func newRemote() (url string, cleanup func()) {
	root, err := os.MkdirTemp("", "imagebump-remote-")
	if err != nil {
		log.Fatal(err)
	}
	bare := filepath.Join(root, "fleet.git")
	if _, err := git.PlainInitWithOptions(bare, &git.PlainInitOptions{
		InitOptions: git.InitOptions{DefaultBranch: plumbing.Main},
		Bare:        true,
	}); err != nil {
		log.Fatal(err)
	}
	seedDir := filepath.Join(root, "seed")
	seed, err := git.PlainInitWithOptions(seedDir, &git.PlainInitOptions{
		InitOptions: git.InitOptions{DefaultBranch: plumbing.Main},
	})
	if err != nil {
		log.Fatal(err)
	}
	manifest := filepath.Join(seedDir, "clusters", "prod", "app.yaml")
	if err := os.MkdirAll(filepath.Dir(manifest), 0o755); err != nil {
		log.Fatal(err)
	}
	if err := os.WriteFile(manifest, []byte("image: ghcr.io/acme/app:1.0.0\n"), 0o644); err != nil {
		log.Fatal(err)
	}
	wt, err := seed.Worktree()
	if err != nil {
		log.Fatal(err)
	}
	if _, err := wt.Add("clusters/prod/app.yaml"); err != nil {
		log.Fatal(err)
	}
	sig := &object.Signature{Name: "seed", Email: "seed@example.com", When: time.Now()}
	if _, err := wt.Commit("Add app\n", &git.CommitOptions{Author: sig}); err != nil {
		log.Fatal(err)
	}
	url = "file://" + filepath.ToSlash(bare)
	if _, err := seed.CreateRemote(&config.RemoteConfig{Name: "origin", URLs: []string{url}}); err != nil {
		log.Fatal(err)
	}
	if err := seed.Push(&git.PushOptions{RefSpecs: []config.RefSpec{"refs/heads/main:refs/heads/main"}}); err != nil {
		log.Fatal(err)
	}
	return url, func() { _ = os.RemoveAll(root) }
}
