package commands

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/imagebump/imagebump/config"
	"github.com/imagebump/imagebump/cycle"
	"github.com/imagebump/imagebump/internal/gittop"
	"github.com/imagebump/imagebump/internal/printable"
	"github.com/imagebump/imagebump/internal/unidiff"
	"github.com/imagebump/imagebump/pullrequest"
	"github.com/imagebump/imagebump/report"
	"github.com/imagebump/imagebump/setters"
)

// PlanOptions are the inputs of `imagebump plan` and `imagebump apply`.
type PlanOptions struct {
	global *globalOptions

	// Repo is the local checkout to scan.
	Repo string
	// Target picks one of the config's targets (its paths and policies).
	Target string
	// Output is text, json or (plan only) diff.
	Output string
	// DetailedExitcode makes plan exit 2 when there are changes.
	DetailedExitcode bool
	// Write applies the edits (apply).
	Write bool
	// NoCache reads every file, without the marker index kept in the
	// user's cache folder.
	NoCache bool

	// cacheDir replaces the user's cache folder as the home of the
	// marker index: the demo keeps its own in its temporary folder.
	cacheDir string
	// registry replaces the registry client in tests.
	registry cycle.Registry
	// pullRequests replaces the forge client in tests.
	pullRequests func(config.Target) (pullrequest.Provider, error)
}

// NewCmdPlan builds `imagebump plan`.
func NewCmdPlan(g *globalOptions, stdout io.Writer, runF func(context.Context, *PlanOptions, io.Writer) error) *cobra.Command {
	o := &PlanOptions{global: g}
	cmd := &cobra.Command{
		Use:         "plan",
		Annotations: map[string]string{oneShotTree: "true"},
		Short:       "Show what would move, from what to what, in which file and line",
		Long: `Scan the registries, select the latest tag per policy, find every marker in
the checkout and show the edits a run would make. Nothing is written.

Output: a policies table, the changes (FILE:LINE, POLICY, FROM, TO) and every
problem (unknown markers, failed policies, skipped files) with file:line.
-o json prints the same as a stable JSON document (see docs/cli.md); -o diff
prints a unified diff that git apply accepts.

--detailed-exitcode: exit 0 when nothing would change, 2 when something
would and nothing failed, 1 when something failed (the changes are printed
all the same), as terraform's -detailed-exitcode.`,
		Example: `  imagebump plan --repo .
  imagebump plan --repo . -o diff | git apply
  imagebump plan --repo . -o json --detailed-exitcode`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.Output != "text" && o.Output != "json" && o.Output != "diff" && o.Output != "markdown" {
				return usageError(fmt.Errorf("-o %q: want text, json, diff or markdown", o.Output))
			}
			if runF != nil {
				return runF(cmd.Context(), o, stdout)
			}
			return runPlan(cmd.Context(), o, stdout)
		},
	}
	addPlanFlags(cmd, o)
	cmd.Flags().StringVarP(&o.Output, "output", "o", "text", "output format: text, json, diff, or markdown (a table for a pull-request comment)")
	cmd.Flags().BoolVar(&o.DetailedExitcode, "detailed-exitcode", false, "exit 0 for no change, 2 for changes, 1 for problems (with or without changes)")
	return cmd
}

// NewCmdApply builds `imagebump apply`.
func NewCmdApply(g *globalOptions, stdout io.Writer, runF func(context.Context, *PlanOptions, io.Writer) error) *cobra.Command {
	o := &PlanOptions{global: g, Write: true}
	cmd := &cobra.Command{
		Use:         "apply",
		Annotations: map[string]string{oneShotTree: "true"},
		Short:       "Rewrite a local checkout in place, with no Git operations",
		Long: `Do what plan shows, and write the edits into the checkout: only the bytes of
each marked scalar change, each file is verified and written atomically.
No commit, no push: for CI pipelines that commit themselves.`,
		Example: `  imagebump apply --repo . && git diff`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.Output != "text" && o.Output != "json" {
				return usageError(fmt.Errorf("-o %q: want text or json", o.Output))
			}
			if runF != nil {
				return runF(cmd.Context(), o, stdout)
			}
			return runPlan(cmd.Context(), o, stdout)
		},
	}
	cmd.Flags().StringVar(&o.Repo, "repo", "", "local checkout to rewrite (required)")
	cmd.Flags().StringVar(&o.Target, "target", "", "config target whose paths and policies apply (default: the only one, or all policies over the whole checkout)")
	cmd.Flags().StringVarP(&o.Output, "output", "o", "text", "output format: text or json")
	addNoCacheFlag(cmd, &o.NoCache)
	return cmd
}

// addNoCacheFlag adds --no-cache.
func addNoCacheFlag(cmd *cobra.Command, p *bool) {
	cmd.Flags().BoolVar(p, "no-cache", false, "read every file: do not use or update the marker index (see docs/cli.md)")
}

// indexFile returns where the marker index of the checkout repo, scanned
// under paths, is kept: in cacheDir, or the user's cache folder
// ($XDG_CACHE_HOME/imagebump/markers, that is ~/.cache/imagebump/markers),
// one file per checkout and paths named by the hash of the checkout's
// real path and the paths, never inside the checkout. Two targets with
// other paths thus keep an index each, where one would rebuild the
// other's. It fails when there is no cache folder.
func indexFile(cacheDir, repo string, paths []string) (string, error) {
	if cacheDir == "" {
		dir, err := os.UserCacheDir()
		if err != nil {
			return "", err
		}
		cacheDir = dir
	}
	abs, err := filepath.Abs(repo)
	if err != nil {
		return "", err
	}
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		abs = real
	}
	h := sha256.New()
	h.Write([]byte(abs))
	for _, p := range paths {
		h.Write([]byte{0})
		h.Write([]byte(p))
	}
	return filepath.Join(cacheDir, "imagebump", "markers", hex.EncodeToString(h.Sum(nil)[:16])), nil
}

func addPlanFlags(cmd *cobra.Command, o *PlanOptions) {
	cmd.Flags().StringVar(&o.Repo, "repo", "", "local checkout to scan (plan without it clones the target's repository read-only into a temporary folder)")
	cmd.Flags().StringVar(&o.Target, "target", "", "config target whose paths and policies apply (default: the only one, or all policies over the whole checkout)")
	addNoCacheFlag(cmd, &o.NoCache)
}

func runPlan(ctx context.Context, o *PlanOptions, stdout io.Writer) error {
	// Stopped before it had a result (the config, the clone): any failure.
	return jsonOnFailure(ctx, planOrApply(ctx, o, stdout), o.Output, false, stdout, func(msg string, err error) error {
		out := report.NewPlan(&cycle.Report{}, false)
		out.Error = msg
		if ps := loadProblems(err); ps != nil {
			out.Problems = ps
		}
		return encodeJSON(stdout, out)
	})
}

// jsonOnFailure gives a JSON reader the command's document, empty but for
// the error, when err stopped the command before it wrote one, as the
// message goes to stderr: any failure, or with usageOnly the refusals of
// exit 64 alone (a failure later wrote the document already). write
// writes the document holding msg, the error as the user reads it (an
// interrupt names its signal), and may read the error itself (a config's
// problems, with their places). It returns err, or write's error.
func jsonOnFailure(ctx context.Context, err error, output string, usageOnly bool, stdout io.Writer, write func(msg string, err error) error) error {
	var ee *exitError
	if output != "json" || !errors.As(err, &ee) || usageOnly && ee.code != ExitUsage {
		return err
	}
	if werr := write(describe(ctx, ee.err), ee.err); werr != nil {
		return werr
	}
	return err
}

func planOrApply(ctx context.Context, o *PlanOptions, stdout io.Writer) error {
	// Only plan without --repo clones the target's repository.
	cfg, err := loadConfigFor(o.global, gitUse(o.Repo == ""))
	if err != nil {
		return usageError(err)
	}
	t, err := pickTarget(cfg, o.Target)
	if err != nil {
		return usageError(err)
	}
	if o.Repo == "" {
		if o.Write {
			return usageError(errors.New("apply needs --repo DIR: it rewrites a local checkout (use run to clone, commit and push)"))
		}
		// Without --repo, plan clones the target's repository read-only
		// into a temporary folder and plans against that.
		if t == nil {
			if _, err := chooseTargets(cfg, ""); err != nil {
				return usageError(fmt.Errorf("%w; or plan a local checkout with --repo DIR", err))
			}
			return usageError(fmt.Errorf("plan without --repo clones one target's repository: choose one with --target (targets: %s)", targetNames(cfg.Targets())))
		}
	} else if err := checkRepoFlag(o.Repo); err != nil {
		return usageError(err)
	}
	reg := o.registry
	if reg == nil {
		client, err := cycle.NewRegistry(cfg, o.global.logger)
		if err != nil {
			return usageError(err)
		}
		reg = client
	}

	var mu sync.Mutex
	diffs := map[string][]byte{}
	var onEdit func(string, []byte, []byte)
	if o.Output == "diff" {
		// Paths are from the top of the Git working tree --repo is in, as
		// git diff writes them, so that git apply takes the patch from
		// anywhere in it; from --repo itself outside a Git tree.
		prefix := ""
		if o.Repo != "" {
			prefix = gitPrefix(o.Repo)
		}
		onEdit = func(file string, before, after []byte) {
			var b bytes.Buffer
			_ = unidiff.Write(&b, path.Join(prefix, file), before, after) // writes to memory cannot fail
			mu.Lock()
			diffs[file] = b.Bytes()
			mu.Unlock()
		}
	}
	idxFile := ""
	if o.Repo != "" && !o.NoCache {
		var paths []string
		if t != nil {
			paths = t.Git.Paths
		}
		var err error
		if idxFile, err = indexFile(o.cacheDir, o.Repo, paths); err != nil {
			o.global.logger.Info("no marker index, so every file is read: set HOME (or, on Linux, XDG_CACHE_HOME to an absolute path) to have one, or pass --no-cache to say so", "error", err)
		}
	}
	plan, err := cycle.Plan(ctx, cycle.PlanOptions{
		IndexFile:    idxFile,
		Config:       cfg,
		Target:       t,
		Registry:     reg,
		Repo:         o.Repo,
		Write:        o.Write,
		OnEdit:       onEdit,
		PullRequests: o.pullRequests,
		Logger:       o.global.logger,
	})
	if err != nil {
		return failure(err)
	}
	rep, pr, prErr := plan.Report, plan.PullRequest, plan.PullRequestErr

	switch o.Output {
	case "json":
		// A file that could not be written (a read-only folder) is a
		// problem, and its edits are not among the changes: apply did
		// not apply all it meant to.
		out := report.NewPlan(rep, o.Write && len(rep.Unwritten()) == 0)
		out.PullRequest, out.Held, out.PushRefused = pr, plan.Held, plan.Refused()
		if prErr != nil {
			out.PullRequestError = prErr.Error()
		}
		err = encodeJSON(stdout, out)
	case "markdown":
		err = writePlanMarkdown(stdout, rep, pr, pullRequestLine(plan))
	case "diff":
		files := make([]string, 0, len(diffs))
		for f := range diffs {
			files = append(files, f)
		}
		sort.Strings(files)
		for _, f := range files {
			if _, err = stdout.Write(diffs[f]); err != nil {
				break
			}
		}
		// Problems still reach the user, on stderr, so a piped diff stays clean.
		for _, p := range problemLines(rep) {
			o.global.logger.Error(p)
		}
		if len(files) == 0 {
			// git apply refuses an empty patch ("No valid patches in
			// input"): say why nothing came.
			o.global.logger.Info("nothing would change: the diff is empty (git apply refuses an empty one)")
		}
	default:
		err = writePlanText(stdout, rep, o.Write)
		if err == nil && pr != nil {
			_, err = fmt.Fprintf(stdout, "Pull request: %s\n", describePR(pr, true))
		}
		if line := pullRequestLine(plan); err == nil && line != "" {
			_, err = fmt.Fprintf(stdout, "Pull request: %s\n", printable.Message(line))
		}
	}
	if err != nil {
		return err
	}
	changes := len(rep.Changes) > 0
	switch {
	case rep.Failed():
		return silentExit(ExitFailure)
	case o.DetailedExitcode && changes:
		return silentExit(ExitChanges)
	}
	return nil
}

// pullRequestLine says what keeps a plan from previewing the pull
// request: a run would leave the push branch as it is, or stop before it,
// or it could not be checked; "" when nothing does.
func pullRequestLine(plan *cycle.PlanResult) string {
	switch {
	case plan.Held:
		return "a run would leave push.branch and its pull request as they are: a policy failed, and the branch holds its bumps, which a rebuild would drop (see run)"
	case plan.Refused():
		return "a run would stop before it: " + plan.PullRequestErr.Error()
	case plan.PullRequestErr != nil:
		return "could not be checked: " + plan.PullRequestErr.Error()
	}
	return ""
}

// noChanges is the line that says a report has no changes, and no failed
// policy: held markers and markers that could not be read are not current
// for all that.
func noChanges(rep *cycle.Report) string {
	if len(rep.Policies) == 0 && len(rep.Problems) > 0 {
		// Every marker names a policy the config lacks (or has another
		// problem): nothing was compared, so nothing is current.
		return "No changes: no marker names a policy that could be asked, so no registry was; the markers with problems (below) are left as they are"
	}
	msg := "No changes: every marked field is current"
	if rep.HoldsMarked() {
		msg = "No changes: every marked field is current, or held"
	}
	if len(rep.Problems) > 0 {
		msg += "; the markers with problems (below) are left as they are"
	}
	return msg
}

// gitPrefix returns the path of dir from the top of the Git working tree
// it is in, slash-separated ("" at the top, or outside any Git tree), as
// git diff prefixes paths: found by looking for .git upwards, as git does
// (GIT_DIR and GIT_WORK_TREE are not read).
func gitPrefix(dir string) string {
	// The path as given, not through symbolic links: a --repo linked into
	// another tree is still where the user applies the patch.
	abs, err := filepath.Abs(dir)
	if err != nil {
		return ""
	}
	top, ok := gittop.Find(abs)
	if !ok {
		return ""
	}
	rel, err := filepath.Rel(top, abs)
	if err != nil || rel == "." {
		return ""
	}
	return filepath.ToSlash(rel)
}

// pickTarget returns the named target, the only target when there is one,
// or nil (every policy over the whole checkout) otherwise.
func pickTarget(cfg *config.Config, name string) (*config.Target, error) {
	targets := cfg.Targets()
	switch {
	case name != "":
		for i := range targets {
			if targets[i].Name == name {
				return &targets[i], nil
			}
		}
		if len(targets) == 0 {
			return nil, fmt.Errorf("--target %q: %s has no targets (no git: and no targets: section)", name, cfg.File)
		}
		return nil, fmt.Errorf("--target %q: no such target in %s (targets: %s)", name, cfg.File, targetNames(targets))
	case len(targets) == 1:
		return &targets[0], nil
	}
	return nil, nil
}

// targetNames lists the targets' names for an error message.
func targetNames(targets []config.Target) string {
	names := make([]string, len(targets))
	for i, t := range targets {
		names[i] = t.Name
	}
	return strings.Join(names, ", ")
}

// holdLines says, a line each, which better tags a gate held back and
// which policies are held, for the text and Markdown plans.
func holdLines(rep *cycle.Report) []string {
	var out []string
	for _, p := range rep.Policies {
		for _, h := range p.HeldBack {
			out = append(out, fmt.Sprintf("Held back: %s %s (%s): %s", p.Name, h.Tag, h.Gate, h.Detail))
		}
		if h := p.Held; h != nil {
			until := "until released (imagebump release " + p.Name + ")"
			if u := report.Time(h.UntilTime()); u != "" {
				until = "until " + u
			}
			out = append(out, fmt.Sprintf("Held: %s stays where it is, %s: %s", p.Name, until, h.Reason))
		}
	}
	return out
}

func writePlanText(w io.Writer, rep *cycle.Report, applied bool) error {
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "POLICY\tIMAGE\tLATEST")
	for _, p := range rep.Policies {
		latest := p.Latest()
		if p.Err != nil {
			latest = "(failed, see problems)"
		} else if p.Digest != "" {
			latest += "@" + p.Digest
		}
		if p.Held != nil {
			latest += " (held)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", printable.String(p.Name), printable.String(p.Repository), printable.String(latest))
	}
	tw.Flush()
	for _, line := range holdLines(rep) {
		fmt.Fprintln(&b, printable.String(line))
	}
	if len(rep.Unreferenced) > 0 {
		fmt.Fprintf(&b, "Not asked (no marker names %s): %s\n", plural(len(rep.Unreferenced), "it", "them"), printable.String(strings.Join(rep.Unreferenced, ", ")))
	}

	b.WriteString("\n")
	failed := rep.FailedPolicies()
	unwritten := rep.Unwritten()
	switch {
	case len(rep.Changes) == 0 && len(unwritten) > 0:
		b.WriteString("No changes written: " + unwrittenNote(unwritten) + ".\n")
	case len(rep.Markers) == 0 && len(rep.Problems) == 0:
		b.WriteString("No markers found: nothing to keep current, and no registry was asked. Mark the fields imagebump owns (see docs/markers.md), or check git.paths and --repo.\n")
	case len(rep.Changes) == 0 && failed == 0:
		b.WriteString(noChanges(rep) + ".\n")
	case len(rep.Changes) == 0:
		fmt.Fprintf(&b, "No changes for the policies that resolved; the markers of %d failed %s were left as they are.\n", failed, plural(failed, "policy", "policies"))
	default:
		tw = tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "FILE:LINE\tPOLICY\tFROM\tTO")
		for _, c := range rep.Changes {
			fmt.Fprintf(tw, "%s:%d\t%s\t%s\t%s\n", printable.String(c.File), c.Line, printable.String(policyField(c.Policy, c.Field)), printable.String(c.Old), printable.String(c.New))
		}
		tw.Flush()
		if len(unwritten) > 0 {
			b.WriteString("Not written: " + unwrittenNote(unwritten) + ".\n")
		}
	}

	problems := problemLines(rep)
	if len(problems) > 0 {
		b.WriteString("\nProblems:\n")
		for _, l := range problems {
			b.WriteString("  " + printable.Message(l) + "\n")
		}
	}

	verb := "would change"
	if applied {
		verb = "changed"
	}
	fmt.Fprintf(&b, "\n%d %s in %d %s (%s), %d %s scanned (%d read, %d from the index), %d %s.\n",
		len(rep.Changes), plural(len(rep.Changes), "field", "fields"),
		len(rep.FilesChanged), plural(len(rep.FilesChanged), "file", "files"), verb,
		rep.FilesScanned, plural(rep.FilesScanned, "file", "files"), rep.FilesRead, rep.FilesCached,
		len(problems), plural(len(problems), "problem", "problems"))
	_, err := io.WriteString(w, b.String())
	return err
}

// unwrittenNote says that n files apply could not write, and what to do.
func unwrittenNote(unwritten []setters.Problem) string {
	changed := 0
	for _, p := range unwritten {
		if errors.Is(p.Err, setters.ErrChanged) {
			changed++
		}
	}
	var notes []string
	if n := len(unwritten) - changed; n > 0 {
		notes = append(notes, fmt.Sprintf("%d %s could not be written (see the problems: a full disk, a file size limit, or a folder this user may not write), and %s not current; free space, raise the limit or make %s writable, then apply again",
			n, plural(n, "file", "files"), plural(n, "its fields are", "their fields are"), plural(n, "it", "them")))
	}
	if changed > 0 {
		notes = append(notes, fmt.Sprintf("%d %s changed on disk while apply edited %s (another apply, an editor, a checkout), and %s left as the other writer left %s; apply again once nothing else writes there",
			changed, plural(changed, "file", "files"), plural(changed, "it", "them"), plural(changed, "was", "were"), plural(changed, "it", "them")))
	}
	return strings.Join(notes, "; ")
}

// problemLines renders failed policies, then file and marker problems.
func problemLines(rep *cycle.Report) []string {
	var out []string
	for _, p := range rep.Policies {
		if p.Err != nil {
			out = append(out, p.Err.Error())
		}
	}
	for _, p := range rep.Problems {
		out = append(out, p.Error())
	}
	return out
}

func policyField(policy string, f setters.Field) string {
	if f == setters.FieldImage {
		return policy
	}
	return policy + ":" + string(f)
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// checkRepoFlag checks the folder --repo names, saying what is wrong with
// it and what to name instead.
func checkRepoFlag(dir string) error {
	st, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("--repo %s does not exist: name the folder of a checkout", dir)
	case err != nil:
		return fmt.Errorf("--repo %s: %w", dir, err)
	case !st.IsDir():
		return fmt.Errorf("--repo %s is a file, not a folder: name the folder of a checkout", dir)
	}
	return nil
}
