package commands

import (
	"bytes"
	"context"
	"embed"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/google/go-containerregistry/pkg/name"
	ggcrregistry "github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/spf13/cobra"

	"github.com/imagebump/imagebump/internal/unidiff"
)

// demoFiles is the demo's config and sample repository. REGISTRY in them
// stands for the address of the registry the demo starts.
//
//go:embed demo
var demoFiles embed.FS

// demoTags are the tags the demo registry publishes, per repository.
var demoTags = map[string][]string{
	"acme/web":    {"0.9.0", "1.0.0", "1.1.0", "1.2.0", "1.3.0-rc.1", "2.0.0", "latest"},
	"acme/worker": {"RELEASE.2024-01-05T10-00-00Z", "RELEASE.2024-02-10T09-15-00Z", "RELEASE.2024-03-01T08-30-00Z", "latest"},
	"acme/api":    {"2.3.0", "2.3.4", "2.4.0", "2.3.4.sig"},
	"acme/cache":  {"0", "41", "42", "100", "latest"},
	"acme/proxy":  {"1.0.0", "1.0.1"},
}

// DemoOptions are the inputs of `imagebump demo`.
type DemoOptions struct {
	global *globalOptions
	// Keep leaves the sample repository on disk and prints where.
	Keep bool
	// Dir is where the sample repository goes; empty means a new temporary
	// folder.
	Dir string
}

// NewCmdDemo builds `imagebump demo`.
func NewCmdDemo(g *globalOptions, stdout io.Writer) *cobra.Command {
	o := &DemoOptions{global: g}
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "A self-contained tour: an embedded registry, a sample repository, a real cycle",
		Long: `Start a registry in this process on 127.0.0.1 with sample images, write a
sample repository (a Deployment, a kustomization with images:, Helm values and
a docker-compose file, all with markers) to a temporary folder, then show what
tags, plan and apply do, and the resulting diff. Then commit the same sample
to a local bare repository and run a real cycle against it (clone, edit,
commit, push), show the commit, and run again to show that nothing new makes
no commit. Offline; takes seconds.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runDemo(cmd.Context(), o, stdout)
		},
	}
	cmd.Flags().BoolVar(&o.Keep, "keep", false, "keep the sample repository and print its path")
	cmd.Flags().StringVar(&o.Dir, "dir", "", "write the sample repository here (must be empty or absent)")
	return cmd
}

func runDemo(ctx context.Context, o *DemoOptions, stdout io.Writer) error {
	host, stop, err := startDemoRegistry(ctx)
	if err != nil {
		return failure(err)
	}
	defer stop()

	dir := o.Dir
	if dir == "" {
		dir, err = os.MkdirTemp("", "imagebump-demo-")
		if err != nil {
			return failure(err)
		}
		if !o.Keep {
			defer os.RemoveAll(dir)
		}
	}
	repo := filepath.Join(dir, "repo")
	// plan's marker index goes with the sample, not to the user's cache.
	cache := filepath.Join(dir, "cache")
	cfgPath := filepath.Join(dir, "imagebump.yaml")
	if err := writeDemoFiles(dir, host); err != nil {
		return failure(err)
	}
	original, err := snapshot(repo)
	if err != nil {
		return failure(err)
	}
	// The same sample, committed to a bare repository, is what run clones.
	bare := filepath.Join(dir, "fleet.git")
	if err := makeDemoRemote(repo, bare); err != nil {
		return failure(err)
	}
	runCfgPath := filepath.Join(dir, "imagebump-run.yaml")
	if err := writeRunConfig(cfgPath, runCfgPath, bare); err != nil {
		return failure(err)
	}

	step := func(format string, args ...any) {
		fmt.Fprintf(stdout, "\n\033[1m$ "+format+"\033[0m\n", args...)
	}
	if !isTerminal(stdout) {
		step = func(format string, args ...any) {
			fmt.Fprintf(stdout, "\n$ "+format+"\n", args...)
		}
	}
	gone := " (removed at the end; --keep keeps it)"
	if o.Keep {
		gone = ""
	}
	fmt.Fprintf(stdout, "imagebump demo: a registry on %s publishes %d sample images;\na sample repository with markers is in %s%s.\n", host, len(demoTags), repo, gone)

	// The demo's own commands log warnings only, and to the same stream.
	g := &globalOptions{ConfigFile: cfgPath, configSet: true, logger: slog.New(slog.NewTextHandler(stdout, &slog.HandlerOptions{Level: slog.LevelError}))}
	if o.global != nil && o.global.logger != nil && o.global.LogLevel == "debug" {
		g.logger = o.global.logger
	}

	step("imagebump tags apps:worker    # what does a policy pick, and why?")
	if err := runTags(ctx, &TagsOptions{global: g, Target: "apps:worker", Output: "text"}, stdout); err != nil {
		return err
	}

	step("imagebump plan --repo %s    # what would move, where", repo)
	if err := runPlan(ctx, &PlanOptions{global: g, Repo: repo, cacheDir: cache, Output: "text"}, stdout); err != nil {
		return err
	}

	step("imagebump apply --repo %s   # rewrite the marked fields, nothing else", repo)
	if err := runPlan(ctx, &PlanOptions{global: g, Repo: repo, cacheDir: cache, Output: "text", Write: true}, stdout); err != nil {
		return err
	}

	step("diff of the repository before and after apply")
	if err := diffSnapshot(stdout, repo, original); err != nil {
		return failure(err)
	}

	step("imagebump plan --repo %s    # again: already current", repo)
	if err := runPlan(ctx, &PlanOptions{global: g, Repo: repo, cacheDir: cache, Output: "text"}, stdout); err != nil {
		return err
	}

	gr := *g
	gr.ConfigFile = runCfgPath
	workdir := filepath.Join(dir, "work")
	step("imagebump run -c imagebump-run.yaml --workdir %s   # clone %s, edit, commit, push", workdir, "file://"+bare)
	if err := runRun(ctx, &RunOptions{global: &gr, Workdir: workdir, Output: "text"}, stdout); err != nil {
		return err
	}
	step("git --git-dir %s log -1 --stat   # the commit run pushed", bare)
	if err := showHeadCommit(stdout, bare); err != nil {
		return failure(err)
	}
	step("imagebump run -c imagebump-run.yaml --workdir %s   # again: nothing new, no commit, no push", workdir)
	if err := runRun(ctx, &RunOptions{global: &gr, Workdir: workdir, Output: "text"}, stdout); err != nil {
		return err
	}
	if o.Keep || o.Dir != "" {
		fmt.Fprintf(stdout, "\nThe sample repository and its config are in %s.\n", dir)
	}
	return nil
}

// startDemoRegistry serves go-containerregistry's in-memory registry on a
// loopback port and pushes the demo's images to it.
func startDemoRegistry(ctx context.Context) (string, func(), error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, fmt.Errorf("starting the demo registry: %w", err)
	}
	srv := &http.Server{Handler: ggcrregistry.New(ggcrregistry.Logger(discardStdLogger())), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	stop := func() {
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}
	host := ln.Addr().String()
	if err := pushDemoImages(ctx, host, nil); err != nil {
		stop()
		return "", nil, err
	}
	return host, stop, nil
}

// pushDemoImages pushes the demo's tags to the registry at host over plain
// HTTP. The images are built from fixed bytes, so their digests are the same
// on every run and every registry. transport may be nil.
func pushDemoImages(ctx context.Context, host string, transport http.RoundTripper) error {
	repos := make([]string, 0, len(demoTags))
	for r := range demoTags {
		repos = append(repos, r)
	}
	sort.Strings(repos)
	opts := []remote.Option{remote.WithContext(ctx)}
	if transport != nil {
		opts = append(opts, remote.WithTransport(transport))
	}
	for _, r := range repos {
		base, err := mutate.AppendLayers(empty.Image, static.NewLayer([]byte("imagebump demo layer of "+r), types.DockerLayer))
		if err != nil {
			return err
		}
		for _, tag := range demoTags[r] {
			// Each tag gets its own config, so each tag has its own digest.
			img, err := mutate.Config(base, v1.Config{Labels: map[string]string{"org.example.demo.tag": tag}})
			if err != nil {
				return err
			}
			ref, err := name.NewTag(host+"/"+r+":"+tag, name.Insecure)
			if err != nil {
				return err
			}
			if err := remote.Write(ref, img, opts...); err != nil {
				return fmt.Errorf("pushing demo image %s: %w", ref, err)
			}
		}
	}
	return nil
}

// writeDemoFiles writes the embedded config and sample repository into dir,
// with REGISTRY replaced by host.
func writeDemoFiles(dir, host string) error {
	if entries, err := os.ReadDir(dir); err == nil && len(entries) > 0 {
		return fmt.Errorf("--dir %s is not empty", dir)
	}
	return fs.WalkDir(demoFiles, "demo", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel := strings.TrimPrefix(strings.TrimPrefix(p, "demo"), "/")
		target := filepath.Join(dir, filepath.FromSlash(rel))
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		data, err := demoFiles.ReadFile(p)
		if err != nil {
			return err
		}
		data = bytes.ReplaceAll(data, []byte("REGISTRY"), []byte(host))
		return os.WriteFile(target, data, 0o644)
	})
}

// snapshot reads every file under root, keyed by slash path.
func snapshot(root string) (map[string][]byte, error) {
	files := map[string][]byte{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		files[filepath.ToSlash(rel)] = data
		return nil
	})
	return files, err
}

// diffSnapshot prints a unified diff of every file under root that differs
// from before.
func diffSnapshot(w io.Writer, root string, before map[string][]byte) error {
	after, err := snapshot(root)
	if err != nil {
		return err
	}
	names := make([]string, 0, len(after))
	for n := range after {
		names = append(names, n)
	}
	sort.Strings(names)
	changed := 0
	for _, n := range names {
		if !bytes.Equal(before[n], after[n]) {
			changed++
			if err := unidiff.Write(w, n, before[n], after[n]); err != nil {
				return err
			}
		}
	}
	if changed == 0 {
		return errors.New("apply changed no file")
	}
	return nil
}

// isTerminal reports whether w is a character device, where the demo may
// use bold headings.
func isTerminal(w io.Writer) bool {
	f, ok := underlying(w).(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// discardStdLogger silences the in-process registry's request log.
func discardStdLogger() *log.Logger { return log.New(io.Discard, "", 0) }

// makeDemoRemote commits the files under src and makes a bare repository of
// that commit at bare, with its branch main.
func makeDemoRemote(src, bare string) error {
	work := bare + ".init"
	defer os.RemoveAll(work)
	files, err := snapshot(src)
	if err != nil {
		return err
	}
	r, err := git.PlainInitWithOptions(work, &git.PlainInitOptions{
		InitOptions: git.InitOptions{DefaultBranch: plumbing.NewBranchReferenceName("main")},
	})
	if err != nil {
		return err
	}
	wt, err := r.Worktree()
	if err != nil {
		return err
	}
	for name, data := range files {
		p := filepath.Join(work, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			return err
		}
		if _, err := wt.Add(name); err != nil {
			return err
		}
	}
	sig := &object.Signature{Name: "demo", Email: "demo@localhost", When: time.Date(2024, 1, 5, 10, 0, 0, 0, time.UTC)}
	if _, err := wt.Commit("Sample fleet repository", &git.CommitOptions{Author: sig, Committer: sig}); err != nil {
		return err
	}
	_, err = git.PlainClone(bare, true, &git.CloneOptions{URL: work})
	return err
}

// writeRunConfig writes the demo config plus a git section naming the bare
// repository, for run.
func writeRunConfig(from, to, bare string) error {
	data, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	data = append(data, []byte(fmt.Sprintf("\ngit:\n  url: file://%s\n  branch: main\ncommit:\n  author: {name: imagebump demo, email: demo@localhost}\n", filepath.ToSlash(bare)))...)
	return os.WriteFile(to, data, 0o644)
}

// showHeadCommit prints the newest commit of main in the bare repository,
// with the files it changed.
func showHeadCommit(w io.Writer, bare string) error {
	r, err := git.PlainOpen(bare)
	if err != nil {
		return err
	}
	ref, err := r.Reference(plumbing.NewBranchReferenceName("main"), true)
	if err != nil {
		return err
	}
	c, err := r.CommitObject(ref.Hash())
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "commit %s\nAuthor: %s <%s>\n\n", c.Hash, c.Author.Name, c.Author.Email)
	for _, line := range strings.Split(strings.TrimRight(c.Message, "\n"), "\n") {
		fmt.Fprintf(w, "    %s\n", line)
	}
	stats, err := c.Stats()
	if err != nil {
		return err
	}
	fmt.Fprintln(w)
	for _, st := range stats {
		fmt.Fprintf(w, " %s | %d insertions(+), %d deletions(-)\n", st.Name, st.Addition, st.Deletion)
	}
	return nil
}
