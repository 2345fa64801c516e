package commands

import (
	"strings"

	"github.com/spf13/cobra"

	"github.com/imagebump/imagebump/config"
)

// Shell completion of names from the config: `completion bash|zsh|fish|
// powershell` (cobra's) prints the script; these functions answer it.

// completeTargets completes --target with the config's target names.
func completeTargets(g *globalOptions) cobra.CompletionFunc {
	return func(_ *cobra.Command, _ []string, prefix string) ([]cobra.Completion, cobra.ShellCompDirective) {
		cfg, err := config.Load(g.ConfigFile)
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		var out []cobra.Completion
		for _, t := range cfg.Targets() {
			if strings.HasPrefix(t.Name, prefix) {
				out = append(out, cobra.CompletionWithDesc(t.Name, t.Git.URL))
			}
		}
		return out, cobra.ShellCompDirectiveNoFileComp
	}
}

// completePolicies completes a policy argument with the config's image
// policy names, with their repository as the description.
func completePolicies(g *globalOptions) cobra.CompletionFunc {
	return func(_ *cobra.Command, args []string, prefix string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		cfg, err := config.Load(g.ConfigFile)
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		var out []cobra.Completion
		for _, im := range cfg.Images {
			if strings.HasPrefix(im.Name, prefix) {
				out = append(out, cobra.CompletionWithDesc(im.Name, im.Repository))
			}
		}
		return out, cobra.ShellCompDirectiveNoFileComp
	}
}
