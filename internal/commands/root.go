// Package commands implements imagebump's command line: one cobra command per
// verb, each a thin layer that parses flags into an Options struct and calls a
// plain run function with a context, the options and its writers.
package commands

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"

	"github.com/imagebump/imagebump/flux"
	"github.com/imagebump/imagebump/internal/batchgc"
	"github.com/imagebump/imagebump/internal/printable"
	"github.com/imagebump/imagebump/report"
	"github.com/spf13/cobra"
)

// Exit codes, as SPEC.md documents them.
const (
	ExitOK      = 0
	ExitFailure = 1
	// ExitChanges is plan --detailed-exitcode's answer when something
	// would change and nothing failed. A failure is 1 with or without
	// changes, as terraform's -detailed-exitcode, and SPEC.md, have it.
	ExitChanges = 2
	ExitUsage   = 64
)

// exitError carries an exit code with the error that caused it.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// usageError marks err as bad usage or invalid config (exit 64).
func usageError(err error) error { return &exitError{code: ExitUsage, err: err} }

// failure marks err as a failed run (exit 1).
func failure(err error) error { return &exitError{code: ExitFailure, err: err} }

// silentExit ends the command with code and no message: what went wrong was
// already printed as part of the command's output.
type silentExit int

func (e silentExit) Error() string { return fmt.Sprintf("exit status %d", int(e)) }

// globalOptions are the flags every command takes.
type globalOptions struct {
	ConfigFile string
	configSet  bool
	// Flux are files or folders of Flux objects read with the config.
	Flux []string
	// FluxSecrets maps the Secrets the Flux objects name (docs/flux.md).
	FluxSecrets string
	LogLevel    string
	LogFormat   string
	logger      *slog.Logger
	// jsonLogs is set when the logs are JSON: what goes to stderr is
	// then log records only.
	jsonLogs bool
	stderr   io.Writer
	// fluxPolicies maps the image policies read from Flux objects to
	// their ImagePolicy, for messages that point at a policy.
	fluxPolicies map[string]flux.Object
	// fluxWarnings are the warnings of the Flux objects' report, which
	// goes to stderr; validate -o json lists them too.
	fluxWarnings []report.Problem
	// restoreGC undoes batchgc.Enable once the command is done; nil
	// when the command did not call it.
	restoreGC func()
}

// Main runs imagebump with args and returns the process exit code. A
// write to stdout or stderr that finds the pipe closed stops the command
// as a signal does (outputWriter); it then ends with 1 and no message,
// which has no reader.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	stdout, stderr = &outputWriter{w: stdout, cancel: cancel}, &outputWriter{w: stderr, cancel: cancel}
	root, g := newRoot(stdout, stderr)
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	if g.restoreGC != nil {
		// Main may run more than once in a process (tests do): the next
		// command starts from the settings this one found.
		g.restoreGC()
	}
	if outputClosed(ctx) {
		return ExitFailure
	}
	code := exitCode(err)
	var silent silentExit
	if err != nil && !errors.As(err, &silent) {
		writeError(ctx, stderr, err)
	}
	return code
}

// maxErrorLines and maxErrorBytes bound what writeError writes.
const (
	maxErrorLines = 100
	maxErrorBytes = 16 << 10
)

// writeError writes a command's error to w, "error: " first. An error
// that joins several (errors.Join: a config with many mistakes, each with
// its file:line) is written one line per error it joins, so that it
// reads as a list, after its prefix, if a wrapper put one before it;
// anything else is one line. Each line is made inert by
// printable.Message, so a newline inside one error (from a git server's
// answer, say) cannot start a line of its own, and a long one keeps its
// start and its end (which often says what to do); past maxErrorLines or
// maxErrorBytes the rest is counted. ctx says whether a signal cancelled the command (describe).
func writeError(ctx context.Context, w io.Writer, err error) {
	var lines []string
	var walk func(error)
	walk = func(err error) {
		if joined, ok := err.(interface{ Unwrap() []error }); ok && joinedText(joined.Unwrap()) == err.Error() {
			for _, e := range joined.Unwrap() {
				walk(e)
			}
			return
		}
		// A wrapper that adds nothing to the message (exitError) is
		// looked through. One that puts a prefix before a joined list
		// ("invalid registry options: " and the list) writes the prefix
		// as a line of its own, then the list; any other is one line.
		if inner := errors.Unwrap(err); inner != nil {
			text, innerText := err.Error(), inner.Error()
			if text == innerText {
				walk(inner)
				return
			}
			if prefix, ok := strings.CutSuffix(text, innerText); ok && joins(inner) {
				if p := strings.TrimRight(prefix, ": \n"); p != "" {
					lines = append(lines, describe(ctx, errors.New(p)))
				}
				walk(inner)
				return
			}
		}
		lines = append(lines, describe(ctx, err))
	}
	walk(err)
	written := 0
	for i, line := range lines {
		if i == maxErrorLines || written > maxErrorBytes {
			fmt.Fprintf(w, "error: …(%d more errors)\n", len(lines)-i)
			return
		}
		n, _ := fmt.Fprintf(w, "error: %s\n", printable.Message(line))
		written += n
	}
}

// joins reports whether err is a list errors.Join made, or wraps one
// behind wrappers that add nothing to its message.
func joins(err error) bool {
	for err != nil {
		if j, ok := err.(interface{ Unwrap() []error }); ok {
			// A list of one is written with its prefix, on one line.
			return len(j.Unwrap()) > 1 && joinedText(j.Unwrap()) == err.Error()
		}
		inner := errors.Unwrap(err)
		if inner == nil || inner.Error() != err.Error() {
			return false
		}
		err = inner
	}
	return false
}

// joinedText is the message errors.Join gives errs: an error that wraps
// several but says more than them (fmt.Errorf with two %w) is one line.
func joinedText(errs []error) string {
	texts := make([]string, len(errs))
	for i, e := range errs {
		texts[i] = e.Error()
	}
	return strings.Join(texts, "\n")
}

// exitCode maps a command's error to the process exit code.
func exitCode(err error) int {
	if err == nil {
		return ExitOK
	}
	var silent silentExit
	if errors.As(err, &silent) {
		return int(silent)
	}
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	// Errors that cobra itself raises (unknown flag, wrong argument count)
	// reach here unwrapped: they are usage errors.
	if isCobraUsageError(err) {
		return ExitUsage
	}
	return ExitFailure
}

// isCobraUsageError reports whether err came from cobra's argument and flag
// parsing, which has no typed errors to branch on.
func isCobraUsageError(err error) bool {
	msg := err.Error()
	for _, prefix := range []string{"unknown command", "unknown flag", "unknown shorthand flag", "flag needs an argument", "invalid argument", "accepts ", "requires at least", "requires at most", "if any flags in the group"} {
		if strings.HasPrefix(msg, prefix) {
			return true
		}
	}
	return false
}

// oneShotTree is the annotation of the commands that read a tree once and
// exit (plan, apply, validate): they run with internal/batchgc's garbage
// collector settings. The other commands keep Go's: run's first cycle on
// a large repository holds more, and serve lives on.
const oneShotTree = "imagebump/one-shot-tree"

// enableBatchGC is batchgc.Enable; tests see through it which commands
// call it.
var enableBatchGC = batchgc.Enable

// NewCmdRoot builds the imagebump command tree.
func NewCmdRoot(stdout, stderr io.Writer) *cobra.Command {
	root, _ := newRoot(stdout, stderr)
	return root
}

// newRoot is NewCmdRoot, with the global options the commands share.
func newRoot(stdout, stderr io.Writer) (*cobra.Command, *globalOptions) {
	g := &globalOptions{stderr: stderr}
	root := &cobra.Command{
		Use:   "imagebump",
		Short: "Keep the image references in a Git repository current with what registries publish",
		Long: `imagebump polls container registries for tags, picks tags by policy, rewrites the
YAML fields that carry Flux-style $imagepolicy marker comments, and records the
bump as a commit or a pull request.`,
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			g.configSet = cmd.Flags().Changed("config")
			format := g.LogFormat
			if cmd.Name() == "serve" && !cmd.Flags().Changed("log-format") && !isTerminal(stderr) {
				// A long-running process's logs go to a collector.
				format = "json"
			}
			logger, err := newLogger(stderr, g.LogLevel, format)
			if err != nil {
				return usageError(err)
			}
			g.logger, g.jsonLogs = logger, format == "json"
			if cmd.Annotations[oneShotTree] != "" {
				g.restoreGC = enableBatchGC()
			}
			return nil
		},
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	// --version prints what `imagebump version` prints.
	root.Version = Version()
	root.SetVersionTemplate(versionReport().String())
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError(err) })
	pf := root.PersistentFlags()
	pf.StringVarP(&g.ConfigFile, "config", "c", "imagebump.yaml", "config file")
	pf.StringArrayVar(&g.Flux, "flux", nil, "file or folder of Flux image automation objects to read as policies and targets, with or without imagebump.yaml (repeatable); -c DIR does the same")
	pf.StringVar(&g.FluxSecrets, "flux-secrets", "", "file mapping the Secrets that Flux objects name to files or env:VAR, or a folder of mounted Secrets (NAMESPACE/NAME/KEY)")
	pf.StringVar(&g.LogLevel, "log-level", "info", "log level: debug, info, warn or error")
	pf.StringVar(&g.LogFormat, "log-format", "text", "log format: text or json (serve: json unless stderr is a terminal)")

	commands := []*cobra.Command{
		NewCmdVersion(stdout),
		NewCmdTags(g, stdout, nil),
		NewCmdPlan(g, stdout, nil),
		NewCmdApply(g, stdout, nil),
		NewCmdValidate(g, stdout, nil),
		NewCmdRun(g, stdout, nil),
		NewCmdServe(g, nil),
		NewCmdDemo(g, stdout),
		NewCmdFlux(g, stdout),
		NewCmdHold(g, stdout),
		NewCmdRelease(g, stdout),
		NewCmdInit(g, stdout, nil),
	}
	for _, c := range commands {
		// Names from the config complete where a command takes them.
		if c.Flags().Lookup("target") != nil {
			_ = c.RegisterFlagCompletionFunc("target", completeTargets(g))
		}
		if c.Name() == "tags" {
			c.ValidArgsFunction = completePolicies(g)
		}
	}
	root.AddCommand(commands...)
	// A command that only groups others (flux, completion) prints its help
	// for no argument, but an argument that names none of them is an
	// error: cobra would print the help and exit 0 for `completion tcsh`
	// or `flux exprot`.
	root.InitDefaultCompletionCmd()
	for _, c := range root.Commands() {
		if c.HasSubCommands() && !c.Runnable() {
			c.Args = cobra.NoArgs
			c.RunE = func(cmd *cobra.Command, args []string) error { return cmd.Help() }
		}
	}
	return root, g
}

// newLogger builds the process logger; only the command line picks the level
// and the format.
func newLogger(w io.Writer, level, format string) (*slog.Logger, error) {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log-level %q: want debug, info, warn or error", level)
	}
	opts := &slog.HandlerOptions{Level: lv}
	switch format {
	case "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		// slog writes a time.Duration as integer nanoseconds; the cycle
		// records' durations are seconds. Every duration is seconds, so
		// that one query reads them all.
		opts.ReplaceAttr = func(_ []string, a slog.Attr) slog.Attr {
			if a.Value.Kind() == slog.KindDuration {
				return slog.Float64(a.Key, a.Value.Duration().Seconds())
			}
			return a
		}
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	default:
		return nil, fmt.Errorf("--log-format %q: want text or json", format)
	}
}

// fileExists reports whether path names an existing file.
func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
