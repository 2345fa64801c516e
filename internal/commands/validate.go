package commands

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/imagebump/imagebump/config"
	"github.com/imagebump/imagebump/cycle"
	"github.com/imagebump/imagebump/flux"
	"github.com/imagebump/imagebump/internal/cloudhost"
	"github.com/imagebump/imagebump/internal/printable"
	"github.com/imagebump/imagebump/internal/secretfile"
	"github.com/imagebump/imagebump/report"
	"github.com/imagebump/imagebump/verify"
	"github.com/spf13/cobra"
)

// ValidateOptions are the inputs of `imagebump validate`.
type ValidateOptions struct {
	global *globalOptions
	// Repo, when set, is a checkout whose markers are checked too.
	Repo string
	// Target picks one of the config's targets (its paths).
	Target string
	// Output is text or json.
	Output string
}

// NewCmdValidate builds `imagebump validate`.
func NewCmdValidate(g *globalOptions, stdout io.Writer, runF func(context.Context, *ValidateOptions, io.Writer) error) *cobra.Command {
	o := &ValidateOptions{global: g}
	cmd := &cobra.Command{
		Use:         "validate",
		Annotations: map[string]string{oneShotTree: "true"},
		Short:       "Check the config and the markers, without touching the network",
		Long: `Check the config (strict keys, policies, patterns, ranges) and, with --repo,
every marker in the checkout: markers naming unknown policies, malformed
markers (also misspelt ones, such as "$imagePolicy", in files the other
commands skip), markers on flow collections, YAML files that do not parse. Policies
that no marker uses are warned about, and so are files the config names that
are not here. Each registry with a provider is shown with where its
credentials come from (auto resolved). Exit 64 when anything is invalid.`,
		Example: `  imagebump validate
  imagebump validate -c imagebump.yaml --repo .`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.Output != "text" && o.Output != "json" {
				return usageError(fmt.Errorf("-o %q: want text or json", o.Output))
			}
			if runF != nil {
				return runF(cmd.Context(), o, stdout)
			}
			return runValidate(cmd.Context(), o, stdout)
		},
	}
	cmd.Flags().StringVar(&o.Repo, "repo", "", "local checkout whose markers are checked")
	cmd.Flags().StringVar(&o.Target, "target", "", "config target whose paths apply")
	cmd.Flags().StringVarP(&o.Output, "output", "o", "text", "output format: text or json")
	return cmd
}

// ValidateReport is the JSON document of `validate -o json`.
type ValidateReport struct {
	Version int    `json:"version"`
	Config  string `json:"config"`
	// Valid is false when the config or a marker is invalid (exit 64).
	Valid      bool `json:"valid"`
	Images     int  `json:"images"`
	Registries int  `json:"registries"`
	Targets    int  `json:"targets"`
	// Repo, Markers, FilesWithMarkers and FilesScanned describe the
	// checkout given with --repo; they are zero without it.
	Repo             string           `json:"repo,omitempty"`
	Markers          int              `json:"markers"`
	FilesWithMarkers int              `json:"filesWithMarkers"`
	FilesScanned     int              `json:"filesScanned"`
	Warnings         []report.Problem `json:"warnings"`
	Problems         []report.Problem `json:"problems"`
	// Providers lists the registries whose provider is not generic, with
	// what it stands for on their host (auto resolved).
	Providers []ProviderReport `json:"providers"`
}

// ProviderReport is one registries[] entry with a cloud provider, or auto.
type ProviderReport struct {
	Host string `json:"host"`
	Line int    `json:"line"`
	// Provider is as written: auto, aws, gcp or azure.
	Provider string `json:"provider"`
	// Resolved is the provider in use: aws, gcp, azure, or generic (auto
	// on a host no cloud is known to serve).
	Resolved string `json:"resolved"`
}

func runValidate(ctx context.Context, o *ValidateOptions, stdout io.Writer) error {
	out := ValidateReport{Version: 1, Config: o.global.ConfigFile, Valid: true, Warnings: []report.Problem{}, Problems: []report.Problem{}, Providers: []ProviderReport{}}
	cfg, err := loadConfigFor(o.global, noGit) // validate never clones
	if err != nil {
		if o.Output != "json" {
			return usageError(err)
		}
		out.Valid = false
		out.Problems = configProblems(err)
		if err := encodeJSON(stdout, out); err != nil {
			return err
		}
		return silentExit(ExitUsage)
	}
	out.Config = cfg.File // the Flux path, with --flux and no imagebump.yaml
	// The Flux report went to stderr; the document lists its warnings.
	out.Warnings = append(out.Warnings, o.global.fluxWarnings...)
	out.Images, out.Registries, out.Targets = len(cfg.Images), len(cfg.Registries), len(cfg.Targets())
	// Pull requests that cannot be opened where git.url points would fail
	// each cycle of the target (before its push, since that is checked).
	for _, t := range cfg.Targets() {
		if err := cycle.CheckPullRequest(t); err != nil {
			out.Problems = append(out.Problems, report.Problem{File: cfg.File, Line: t.Line, Message: "target " + t.Name + ": " + err.Error()})
		}
	}
	// A verify.key file that is here must hold public keys: every cycle
	// would fail on it.
	for _, im := range cfg.Images {
		if im.Verify == nil || im.Verify.Key == "" {
			continue
		}
		// A missing file is warned about below, with the others.
		if err := verify.CheckKeyFile(im.Verify.Key); err != nil && !errors.Is(err, fs.ErrNotExist) {
			msg := fmt.Sprintf("policy %s: %v", im.Name, err)
			file, line, _ := o.global.policyPos(cfg, im)
			out.Problems = append(out.Problems, report.Problem{File: file, Line: line, Policy: im.Name, Message: msg})
		}
	}
	var b strings.Builder
	// warn lists a warning in the report and in the text, at pos, or at
	// its file and line when pos is "".
	warn := func(p report.Problem, pos string) {
		out.Warnings = append(out.Warnings, p)
		if pos == "" {
			pos = fileLine(p.File, p.Line)
		}
		fmt.Fprintf(&b, "warning: %s: %s\n", pos, printable.Message(p.Message))
	}
	verdict := "config is valid"
	if len(out.Problems) > 0 {
		verdict = "config read, with problems"
	}
	fmt.Fprintf(&b, "%s: %s (%d %s, %d %s)\n", cfg.File, verdict,
		len(cfg.Images), plural(len(cfg.Images), "image policy", "image policies"),
		len(cfg.Registries), plural(len(cfg.Registries), "registry", "registries"))
	for _, p := range out.Problems {
		fmt.Fprintf(&b, "error: %s: %s\n", fileLine(p.File, p.Line), printable.Message(p.Message))
	}
	// Where each cloud registry's credentials come from, auto resolved:
	// auto on a host no cloud is known to serve (a custom name in front
	// of ECR, say) falls back to generic, which is worth a warning.
	for _, r := range cfg.Registries {
		if r.Provider == "" || r.Provider == cloudhost.Generic {
			continue
		}
		resolved := cloudhost.Resolve(r.Provider, r.Host)
		out.Providers = append(out.Providers, ProviderReport{Host: r.Host, Line: r.Line, Provider: r.Provider, Resolved: resolved})
		if resolved == cloudhost.Generic {
			msg := fmt.Sprintf("registry %s: provider auto resolves to generic, as %s is no cloud's registry host name, so its credentials come from the Docker keychain: cloud credentials go to a cloud's own registry host names only (docs/cloud-registries.md); write provider: generic (or leave it out) to say so", r.Host, r.Host)
			warn(report.Problem{File: cfg.File, Line: r.Line, Message: msg}, "")
			continue
		}
		how := "provider " + r.Provider
		if r.Provider == cloudhost.Auto {
			how = "provider auto resolves to " + resolved
		}
		fmt.Fprintf(&b, "%s: registry %s: %s: credentials from %s\n", fileLine(cfg.File, r.Line), printable.Message(r.Host), how, cloudCredentials(resolved))
	}
	for _, p := range unmatchedPolicies(cfg) {
		warn(p, "")
	}
	// A hold whose end has passed holds nothing: likely a mistyped year,
	// or one to release.
	for _, im := range cfg.Images {
		if h := im.Hold; h != nil && !h.UntilTime().IsZero() && !h.Active(time.Now()) {
			msg := fmt.Sprintf("policy %s: its hold ended at %s, so it holds nothing; remove it (imagebump release %s) or give a later until", im.Name, h.UntilTime().UTC().Format(time.RFC3339), im.Name)
			file, line, pos := o.global.policyPos(cfg, im)
			warn(report.Problem{File: file, Line: line, Policy: im.Name, Message: msg}, pos)
		}
	}
	// A file the config names that is not here fails every cycle that
	// reads it. The config may be meant for another machine (a pod's
	// mounted Secrets), so it is a warning.
	for _, f := range missingFiles(cfg) {
		path := f.Path
		if f.Secret {
			path = secretfile.Shown(path)
		}
		msg := fmt.Sprintf("%s: %s does not exist here: %s until it does (fine if the config is for another machine, such as a pod with the Secret mounted there)", f.Key, path, readerFails(f.Key))
		warn(report.Problem{File: cfg.File, Line: f.Line, Message: msg}, "")
	}
	// So is a variable a key names (env:NAME) that is not set here.
	for _, e := range cfg.EnvRefs() {
		if _, ok := os.LookupEnv(e.Path); ok {
			continue
		}
		msg := fmt.Sprintf("%s is env:%s, and %s is not set here: %s until it is (fine if the config is for another machine or a CI job that sets it)", e.Key, e.Path, e.Path, readerFails(e.Key))
		warn(report.Problem{File: cfg.File, Line: e.Line, Message: msg}, "")
	}
	if o.Repo != "" {
		if err := checkRepoFlag(o.Repo); err != nil {
			return usageError(err)
		}
		t, err := pickTarget(cfg, o.Target)
		if err != nil {
			return usageError(err)
		}
		res, err := cycle.Validate(ctx, cfg, t, o.Repo, o.global.logger)
		if err != nil {
			return usageError(err)
		}
		out.Repo, out.Markers, out.FilesWithMarkers, out.FilesScanned = o.Repo, len(res.Markers), res.FilesWithMarkers, res.FilesScanned
		used := map[string]bool{}
		for _, m := range res.Markers {
			used[m.Policy] = true
		}
		fmt.Fprintf(&b, "%s: %d %s in %d of %d YAML files\n", o.Repo,
			len(res.Markers), plural(len(res.Markers), "marker", "markers"), res.FilesWithMarkers, res.FilesScanned)
		// Config order is file order, so the warnings come in line order.
		for _, im := range cfg.Images {
			if !used[im.Name] {
				msg := fmt.Sprintf("policy %s is used by no marker under %s", im.Name, o.Repo)
				file, line, pos := o.global.policyPos(cfg, im)
				warn(report.Problem{File: file, Line: line, Policy: im.Name, Message: msg}, pos)
			}
		}
		// Marker text where no marker is read (a Dockerfile, a .json):
		// Flux's rule, so a warning, as the mention may be no marker.
		for _, p := range res.Elsewhere {
			out.Warnings = append(out.Warnings, report.Problem{File: p.File, Line: p.Line, Message: p.Error()})
			fmt.Fprintf(&b, "warning: %s\n", printable.Message(p.Error()))
		}
		for _, p := range res.Problems {
			out.Problems = append(out.Problems, report.Problem{File: p.File, Line: p.Line, Policy: p.Policy, Message: p.Error()})
			fmt.Fprintf(&b, "error: %s\n", printable.Message(p.Error()))
		}
	}
	out.Valid = len(out.Problems) == 0
	if o.Output == "json" {
		err = encodeJSON(stdout, out)
	} else {
		_, err = io.WriteString(stdout, b.String())
	}
	if err != nil {
		return err
	}
	if !out.Valid {
		if o.Output == "json" {
			return silentExit(ExitUsage)
		}
		if o.Repo == "" {
			return usageError(fmt.Errorf("%d %s in the config", len(out.Problems), plural(len(out.Problems), "problem", "problems")))
		}
		return usageError(fmt.Errorf("%d %s in the config and the markers of %s", len(out.Problems), plural(len(out.Problems), "problem", "problems"), o.Repo))
	}
	return nil
}

// configProblems turns a config's load error into problems with their
// positions.
// unmatchedPolicies warns of each entry of a target's policies that
// matches no image policy: most likely a typo, with which the target
// applies none of what it meant to, and its plan and its cycles say that
// every marked field is current.
func unmatchedPolicies(cfg *config.Config) []report.Problem {
	var out []report.Problem
	for _, t := range cfg.Targets() {
		for _, g := range t.Policies {
			if slices.ContainsFunc(cfg.Images, func(im config.Image) bool { return config.Target{Policies: []string{g}}.Selects(im.Name) }) {
				continue
			}
			msg := fmt.Sprintf("target %s: policies entry %q matches no image policy, so the target applies none through it; names are NAMESPACE:NAME, such as %s", t.Name, g, exampleNames(cfg))
			out = append(out, report.Problem{File: cfg.File, Line: t.Line, Message: msg})
		}
	}
	return out
}

func configProblems(err error) []report.Problem {
	var out []report.Problem
	var walk func(error)
	walk = func(err error) {
		if joined, ok := err.(interface{ Unwrap() []error }); ok {
			for _, e := range joined.Unwrap() {
				walk(e)
			}
			return
		}
		var ce *config.Error
		if errors.As(err, &ce) {
			out = append(out, report.Problem{File: ce.File, Line: ce.Line, Column: ce.Column, Message: ce.Error()})
			return
		}
		var fe *flux.Error
		if errors.As(err, &fe) {
			out = append(out, report.Problem{File: fe.Object.File, Line: fe.Line, Message: fe.Error()})
			return
		}
		out = append(out, report.Problem{Message: err.Error()})
	}
	walk(err)
	return out
}

// loadProblems is configProblems for an error holding a config's
// problems (its file's, or its Flux objects'), and nil for any other:
// plan's and run's JSON documents list them with their places, as
// validate's does.
func loadProblems(err error) []report.Problem {
	var ce *config.Error
	var fe *flux.Error
	if !errors.As(err, &ce) && !errors.As(err, &fe) {
		return nil
	}
	return configProblems(err)
}

// exampleNames names up to three of the config's image policies, for a
// message.
func exampleNames(cfg *config.Config) string {
	var names []string
	for _, im := range cfg.Images[:min(3, len(cfg.Images))] {
		names = append(names, im.Name)
	}
	if len(names) == 0 {
		return "apps:web (the config has no image policy)"
	}
	return strings.Join(names, ", ")
}

// fileLine is FILE:LINE, or FILE when the line is not known (a config
// made from Flux objects), where FILE:0 would trip editors' parsers.
func fileLine(file string, line int) string {
	if line <= 0 {
		return file
	}
	return fmt.Sprintf("%s:%d", file, line)
}

// cloudCredentials names where a cloud provider's registry credentials
// come from, for validate's summary.
func cloudCredentials(provider string) string {
	switch provider {
	case cloudhost.AWS:
		return "AWS (ECR GetAuthorizationToken, with the SDK's credential chain)"
	case cloudhost.GCP:
		return "Google (Application Default Credentials)"
	case cloudhost.Azure:
		return "Azure (Entra ID, exchanged at the registry for an ACR token)"
	}
	return provider
}

// readerFails says what fails while a file or variable the key names is
// missing: a webhook's secret is read by the webhook handler, the rest by
// the cycles.
func readerFails(key string) string {
	if strings.HasPrefix(key, "webhooks") {
		return "the webhook requests checked with it are answered 500"
	}
	return "the cycles that read it will fail"
}

// missingFiles returns the files cfg names that do not exist.
func missingFiles(cfg *config.Config) []config.FileRef {
	var out []config.FileRef
	for _, f := range cfg.Files() {
		if _, err := os.Stat(f.Path); errors.Is(err, fs.ErrNotExist) {
			out = append(out, f)
		}
	}
	return out
}
