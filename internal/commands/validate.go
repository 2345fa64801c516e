package commands

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/imagebump/imagebump/cycle"
	"github.com/imagebump/imagebump/internal/printable"
	"github.com/spf13/cobra"
)

// ValidateOptions are the inputs of `imagebump validate`.
type ValidateOptions struct {
	global *globalOptions
	// Repo, when set, is a checkout whose markers are checked too.
	Repo string
	// Target picks one of the config's targets (its paths).
	Target string
}

// NewCmdValidate builds `imagebump validate`.
func NewCmdValidate(g *globalOptions, stdout io.Writer, runF func(context.Context, *ValidateOptions, io.Writer) error) *cobra.Command {
	o := &ValidateOptions{global: g}
	cmd := &cobra.Command{
		Use:   "validate",
		Short: "Check the config and the markers, without touching the network",
		Long: `Check the config (strict keys, policies, patterns, ranges) and, with --repo,
every marker in the checkout: markers naming unknown policies, malformed
markers, markers on flow collections, YAML files that do not parse. Policies
that no marker uses are warned about. Exit 64 when anything is invalid.`,
		Example: `  imagebump validate
  imagebump validate -c imagebump.yaml --repo .`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if runF != nil {
				return runF(cmd.Context(), o, stdout)
			}
			return runValidate(cmd.Context(), o, stdout)
		},
	}
	cmd.Flags().StringVar(&o.Repo, "repo", "", "local checkout whose markers are checked")
	cmd.Flags().StringVar(&o.Target, "target", "", "config target whose paths apply")
	return cmd
}

func runValidate(ctx context.Context, o *ValidateOptions, stdout io.Writer) error {
	cfg, err := loadConfig(o.global)
	if err != nil {
		return usageError(err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s: config is valid (%d %s, %d %s)\n", o.global.ConfigFile,
		len(cfg.Images), plural(len(cfg.Images), "image policy", "image policies"),
		len(cfg.Registries), plural(len(cfg.Registries), "registry", "registries"))
	if o.Repo == "" {
		_, err := io.WriteString(stdout, b.String())
		return err
	}
	t, err := pickTarget(cfg, o.Target)
	if err != nil {
		return usageError(err)
	}
	res, err := cycle.Validate(ctx, cfg, t, o.Repo, o.global.logger)
	if err != nil {
		return usageError(err)
	}
	used := map[string]bool{}
	for _, m := range res.Markers {
		used[m.Policy] = true
	}
	fmt.Fprintf(&b, "%s: %d %s in %d of %d YAML files\n", o.Repo,
		len(res.Markers), plural(len(res.Markers), "marker", "markers"), res.FilesWithMarkers, res.FilesScanned)
	// Config order is file order, so the warnings come in line order.
	for _, im := range cfg.Images {
		if !used[im.Name] {
			fmt.Fprintf(&b, "warning: %s:%d: policy %s is used by no marker under %s\n", cfg.File, im.Line, im.Name, o.Repo)
		}
	}
	for _, p := range res.Problems {
		fmt.Fprintf(&b, "error: %s\n", printable.String(p.Error()))
	}
	if _, err := io.WriteString(stdout, b.String()); err != nil {
		return err
	}
	if len(res.Problems) > 0 {
		return usageError(fmt.Errorf("%d %s in the markers of %s", len(res.Problems), plural(len(res.Problems), "problem", "problems"), o.Repo))
	}
	return nil
}
