package commands

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/imagebump/imagebump/config"
	"github.com/imagebump/imagebump/cycle"
	"github.com/imagebump/imagebump/internal/printable"
	"github.com/imagebump/imagebump/pullrequest"
	"github.com/imagebump/imagebump/report"
)

// RunOptions are the inputs of `imagebump run`.
type RunOptions struct {
	global *globalOptions
	// Workdir keeps one working copy per target between runs; empty means
	// fresh temporary clones.
	Workdir string
	// Target runs only the named target.
	Target string
	// Output is text or json.
	Output string
	// NoCache reads every marked file and checks every file of a reused
	// working copy, without the marker index.
	NoCache bool

	// registry replaces the registry client in tests.
	registry cycle.Registry
	// pullRequests replaces the forge client in tests.
	pullRequests func(config.Target) (pullrequest.Provider, error)
}

// NewCmdRun builds `imagebump run`.
func NewCmdRun(g *globalOptions, stdout io.Writer, runF func(context.Context, *RunOptions, io.Writer) error) *cobra.Command {
	o := &RunOptions{global: g}
	cmd := &cobra.Command{
		Use:   "run",
		Short: "One full cycle: clone or fetch, scan, rewrite, commit, push; then exit",
		Long: `Run one cycle for every target of the config (or the one --target names):
clone the repository (or, with --workdir, fetch and move the working copy
kept there to the new head), scan the registries, rewrite the marked fields,
commit, and push to git.branch or to push.branch. A cycle with nothing new
makes no commit and no push.

DIR/<target> belongs to imagebump: a clone of another URL there is deleted
and cloned afresh, a clone of the same URL is taken over (reset, untracked
files deleted); only a non-empty folder holding no Git repository is refused.
With the marker index (the default), a local edit or untracked file stays
until a file the cycle reads differs from the commit; --no-cache checks every
file and resets any difference.

Exit 0 when every target succeeded, 1 when any policy, file or target failed
(the others still ran), 64 for an invalid config.`,
		Example: `  imagebump run -c /etc/imagebump/imagebump.yaml --workdir /var/lib/imagebump
  imagebump run --target prod -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.Output != "text" && o.Output != "json" {
				return usageError(fmt.Errorf("-o %q: want text or json", o.Output))
			}
			if runF != nil {
				return runF(cmd.Context(), o, stdout)
			}
			return runRun(cmd.Context(), o, stdout)
		},
	}
	cmd.Flags().StringVar(&o.Workdir, "workdir", "", "folder that keeps a working copy per target between runs (default: fresh temporary clones)")
	cmd.Flags().StringVar(&o.Target, "target", "", "run only this target")
	cmd.Flags().StringVarP(&o.Output, "output", "o", "text", "output format: text or json")
	cmd.Flags().BoolVar(&o.NoCache, "no-cache", false, "read every file without the marker index, and check the whole working copy: reset what differs from the commit and delete untracked files (see docs/cli.md)")
	return cmd
}

func runRun(ctx context.Context, o *RunOptions, stdout io.Writer) error {
	// Refused before any cycle (the config, --target).
	return jsonOnFailure(ctx, runTargets(ctx, o, stdout), o.Output, true, stdout, func(msg string, err error) error {
		return encodeJSON(stdout, report.Run{Version: report.Version, Targets: []report.Target{}, Error: msg, Problems: loadProblems(err)})
	})
}

// runTargets is run: each target's cycle in turn, and the report.
func runTargets(ctx context.Context, o *RunOptions, stdout io.Writer) error {
	cfg, err := loadConfig(o.global)
	if err != nil {
		return usageError(err)
	}
	if o.Workdir != "" {
		// Made here, as serve makes its own: a path through a file fails
		// once, before any target, rather than each target's cycle.
		if st, err := os.Stat(o.Workdir); err == nil && !st.IsDir() {
			return usageError(fmt.Errorf("--workdir %s is a file, not a folder: name a folder (it is made if missing) where run keeps a working copy per target", o.Workdir))
		}
		if err := os.MkdirAll(o.Workdir, 0o755); err != nil {
			return usageError(fmt.Errorf("--workdir %s cannot be made: %w; name a folder this user may create", o.Workdir, err))
		}
	}
	targets, err := chooseTargets(cfg, o.Target)
	if err != nil {
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

	out := report.Run{Version: report.Version}
	var results []*cycle.TargetResult
	failed := false
	for _, t := range targets {
		res, err := cycle.RunTarget(ctx, cycle.TargetOptions{
			Config: cfg, Target: t, Registry: reg, Workdir: o.Workdir,
			PullRequests: o.pullRequests, Logger: o.global.logger, NoCache: o.NoCache,
		})
		errText := ""
		if err != nil {
			errText = describe(ctx, err)
		}
		if err != nil || res.Failed() {
			failed = true
		}
		results = append(results, res)
		out.Targets = append(out.Targets, report.NewTarget(res, errText))
	}
	if o.Output == "json" {
		err = encodeJSON(stdout, out)
	} else {
		err = writeRunText(stdout, out, results)
	}
	if err != nil {
		return err
	}
	if failed {
		// The summary on stdout says it all; stderr gets the failures too,
		// for a cron mail or a log that keeps only stderr.
		for _, t := range out.Targets {
			if t.Error != "" {
				o.global.logger.Error("target failed", "target", t.Target, "error", targetError(t))
			}
		}
		return silentExit(ExitFailure)
	}
	return nil
}

// chooseTargets returns the named target, or every target.
func chooseTargets(cfg *config.Config, name string) ([]config.Target, error) {
	targets := cfg.Targets()
	if len(targets) == 0 {
		return nil, fmt.Errorf("%s has no git repository: set git.url (or targets:) to clone, commit and push", cfg.File)
	}
	if name == "" {
		return targets, nil
	}
	t, err := pickTarget(cfg, name)
	if err != nil {
		return nil, err
	}
	return []config.Target{*t}, nil
}

func writeRunText(w io.Writer, rep report.Run, results []*cycle.TargetResult) error {
	var b strings.Builder
	for i, t := range rep.Targets {
		if i > 0 {
			b.WriteString("\n")
		}
		fmt.Fprintf(&b, "target %s: %s (branch %s)\n", t.Target, t.Repository, t.Branch)
		t.Error = targetError(t) // the line above names it
		if scan := results[i].Report; scan != nil {
			var inner strings.Builder
			_ = writePlanText(&inner, scan, true)
			for _, line := range strings.Split(strings.TrimRight(inner.String(), "\n"), "\n") {
				b.WriteString("  " + line + "\n")
			}
		}
		if pr := t.PullRequest; pr != nil {
			fmt.Fprintf(&b, "  pull request: %s\n", describePR(pr, false))
		}
		switch {
		case t.Error != "" && t.Pushed:
			fmt.Fprintf(&b, "  pushed %s to %s, then FAILED: %s\n", shortSHA(t.Commit), pushTarget(t), printable.Message(t.Error))
		case t.Error != "" && len(t.Changes) > 0 && t.PullRequest != nil && t.PushBranch != "" && !t.Held:
			// Pushed by an earlier run: the pull request step came after
			// the branch was found holding them.
			fmt.Fprintf(&b, "  %s holds the edits above (pushed before), then FAILED: %s\n", t.PushBranch, printable.Message(t.Error))
		case t.Error != "" && len(t.Changes) > 0:
			fmt.Fprintf(&b, "  FAILED, the edits above were not pushed (the next run makes them again): %s\n", printable.Message(t.Error))
		case t.Error != "":
			fmt.Fprintf(&b, "  FAILED: %s\n", printable.Message(t.Error))
		case t.Pushed:
			fmt.Fprintf(&b, "  committed %s and pushed it to %s\n", shortSHA(t.Commit), pushTarget(t))
		case t.Held:
			fmt.Fprintf(&b, "  %s left as it is while a policy failed, so that it does not lose that policy's bumps\n", t.PushBranch)
		default:
			fmt.Fprintf(&b, "  nothing to commit: no push\n")
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// targetError is t's error where the target is named already (the text
// summary's heading, the log's target attribute): without the "target
// NAME: " it begins with.
func targetError(t report.Target) string {
	return strings.TrimPrefix(t.Error, "target "+t.Target+": ")
}

// pushTarget names the branch a summary's commit went to.
func pushTarget(t report.Target) string {
	if t.PushBranch == "" {
		return t.Branch
	}
	if t.Forced {
		return t.PushBranch + " (force-pushed: imagebump's own branch)"
	}
	return t.PushBranch
}

func shortSHA(s string) string {
	if len(s) > 12 {
		return s[:12]
	}
	return s
}

// describePR says in words what happened (or, for plan, would happen) to a
// pull request.
func describePR(pr *pullrequest.Result, plan bool) string {
	ref := pr.URL
	if pr.Number != 0 {
		ref = fmt.Sprintf("#%d %s", pr.Number, pr.URL)
	}
	var what string
	switch pr.Outcome {
	case pullrequest.Opened:
		what = "opened " + ref
		if plan {
			what = "would open a new pull request"
		}
	case pullrequest.Updated:
		what = "updated " + ref
		if plan {
			what = "would update " + ref
		}
	case pullrequest.Unchanged:
		what = "up to date: " + ref
	case pullrequest.Skipped:
		what = "not reopened: " + ref + " (closed or merged) already proposed these bumps"
	case pullrequest.Closed:
		what = "closed " + ref + ": its branch proposes nothing any more"
		if plan {
			what = "would close " + ref + ": its branch proposes nothing any more"
		}
	default:
		what = string(pr.Outcome) + " " + ref
	}
	if len(pr.Labels) > 0 {
		verb := "added labels"
		if plan {
			verb = "would add labels"
		}
		what += fmt.Sprintf("; %s %s", verb, strings.Join(pr.Labels, ", "))
	}
	if len(pr.Duplicates) > 0 {
		verb := "closed"
		if plan {
			verb = "would close"
		}
		nums := make([]string, len(pr.Duplicates))
		for i, n := range pr.Duplicates {
			nums[i] = fmt.Sprintf("#%d", n)
		}
		what += fmt.Sprintf("; %s %s, open from the same branch too (duplicates)", verb, strings.Join(nums, ", "))
	}
	return pr.Provider + ": " + what
}
