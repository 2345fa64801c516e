package commands

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"github.com/imagebump/imagebump/config"
	"github.com/imagebump/imagebump/flux"
)

// FluxExportOptions are the inputs of `imagebump flux export`.
type FluxExportOptions struct {
	global *globalOptions
	// Paths are files or folders of Flux objects.
	Paths []string
	// Secrets maps the Secrets the objects name (file or folder).
	Secrets string
	// NoKustomize reads folders as written, without building their
	// kustomization.
	NoKustomize bool
	// File, when set, is where the config is written instead of stdout;
	// its relative paths are then relative to File's folder.
	File string
}

// NewCmdFlux builds `imagebump flux` and its subcommands.
func NewCmdFlux(g *globalOptions, stdout io.Writer) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "flux",
		Short: "Move between Flux image automation objects and imagebump.yaml",
		Long: `imagebump reads Flux's ImageRepository, ImagePolicy, ImageUpdateAutomation
and GitRepository objects as they are (-c DIR, --flux DIR, or flux.paths in
imagebump.yaml). These commands convert, for a move in either direction:

  flux export     Flux objects -> an equivalent imagebump.yaml (out of the controllers)
  flux generate   imagebump.yaml -> Flux objects (into the controllers)

See docs/flux.md for the field-by-field migration guide.`,
		Args: cobra.NoArgs,
	}
	cmd.AddCommand(newCmdFluxExport(g, stdout), newCmdFluxGenerate(g, stdout))
	return cmd
}

func newCmdFluxExport(g *globalOptions, stdout io.Writer) *cobra.Command {
	o := &FluxExportOptions{global: g}
	cmd := &cobra.Command{
		Use:   "export [PATH...]",
		Short: "Write Flux image automation objects as an equivalent imagebump.yaml",
		Long: `Read the Flux objects in the files and folders given (as arguments, or
with --flux or -c; a folder with a kustomization is built first, so patched
policies are read as Flux sees them) and print the equivalent
imagebump.yaml on stdout, or write it to --file. Comments name the
object each entry comes from. What imagebump does differently with a field is
listed on stderr, object by object, with its file and line: nothing is
dropped silently.`,
		Example: `  imagebump flux export clusters/prod --flux-secrets secrets.yaml > imagebump.yaml
  imagebump flux export clusters/prod --flux-secrets secrets.yaml --file deploy/imagebump.yaml
  imagebump validate -c imagebump.yaml`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			// The Flux objects may also come as the other commands take
			// them: --flux PATH, or -c naming a folder or a file of them.
			o.Paths = append(append([]string(nil), args...), g.Flux...)
			if g.configSet {
				if !isFluxSource(g.ConfigFile) {
					return usageError(fmt.Errorf("-c %s is not Flux objects: flux export reads Flux objects (a native config is one already)", g.ConfigFile))
				}
				o.Paths = append(o.Paths, g.ConfigFile)
			}
			if len(o.Paths) == 0 {
				return usageError(errors.New("no Flux objects given: imagebump flux export PATH... (files or folders of Flux objects; --flux PATH and -c DIR work too)"))
			}
			if o.Secrets == "" {
				o.Secrets = g.FluxSecrets
			}
			return runFluxExport(cmd.Context(), o, stdout)
		},
	}
	cmd.Flags().StringVar(&o.Secrets, "secrets", "", "file mapping the objects' Secrets to files or env:VAR, or a folder of mounted Secrets (same as --flux-secrets)")
	cmd.Flags().BoolVar(&o.NoKustomize, "no-kustomize", false, "read folders as written, without building their kustomization")
	cmd.Flags().StringVar(&o.File, "file", "", "write the config to this file instead of stdout, with the paths it names (Secrets' files) relative to its folder; on stdout they are relative to the current folder")
	return cmd
}

func runFluxExport(ctx context.Context, o *FluxExportOptions, stdout io.Writer) error {
	if o.File != "" {
		if st, err := os.Stat(o.File); err == nil && st.IsDir() {
			return usageError(fmt.Errorf("--file %s is a folder: name the file to write, such as %s", o.File, filepath.Join(o.File, "imagebump.yaml")))
		}
	}
	set, err := flux.Load(ctx, o.Paths, flux.LoadOptions{NoKustomize: o.NoKustomize, Logger: o.global.logger})
	if err != nil {
		return usageError(err)
	}
	if err := notAnInput(o.File, o.Secrets, o.Paths, set); err != nil {
		return usageError(err)
	}
	var secrets *flux.Secrets
	if o.Secrets != "" {
		if st, err := os.Stat(o.Secrets); err == nil && st.IsDir() {
			secrets = &flux.Secrets{Dir: o.Secrets}
		} else if secrets, err = flux.LoadSecrets(o.Secrets); err != nil {
			return usageError(err)
		}
	}
	// Exporting uses no Git: a Git Secret that is not mapped is a
	// warning, and the config names placeholders for an ssh key.
	file := "imagebump.yaml" // on stdout: relative to the current folder
	if o.File != "" {
		if err := folderOf("--file", o.File); err != nil {
			return usageError(err)
		}
		file = o.File
	}
	native, err := set.Native(flux.NativeOptions{Secrets: secrets, File: file, NoGit: true})
	if err != nil {
		return usageError(err)
	}
	if err := native.Report.WriteText(o.global.stderr); err != nil {
		return err
	}
	if len(native.Config.Images) == 0 && len(native.Config.Targets()) == 0 {
		// Nothing on stdout: `flux export DIR > imagebump.yaml` with the
		// wrong DIR must not leave an empty config in place of one.
		return usageError(fmt.Errorf("no ImagePolicy and no ImageUpdateAutomation found in %s: flux export reads Flux image automation objects (a native imagebump.yaml is already a config: pass it with -c)", strings.Join(o.Paths, ", ")))
	}
	if o.File != "" {
		if err := replaceFile(o.File, native.YAML); err != nil {
			return failure(fmt.Errorf("writing %s: %w", o.File, err))
		}
		_, err = fmt.Fprintf(o.global.stderr, "wrote %s; check it with imagebump validate -c %s\n", o.File, o.File)
		return err
	}
	_, err = stdout.Write(native.YAML)
	return err
}

// notAnInput refuses a --file that flux export read (objects, a
// kustomization, a manifest of a folder it read), was given to read, or
// is the Secrets mapping: the config written would replace it.
func notAnInput(file, secrets string, paths []string, set *flux.Set) error {
	if file == "" {
		return nil
	}
	inputs := append(slices.Clone(paths), set.Files...)
	if secrets != "" {
		inputs = append(inputs, secrets)
	}
	for _, in := range inputs {
		if sameFile(file, in) {
			return fmt.Errorf("--file %s is a file flux export reads (%s): writing the config there would replace it; name another file, such as imagebump.yaml beside the objects", file, in)
		}
	}
	return nil
}

func newCmdFluxGenerate(g *globalOptions, stdout io.Writer) *cobra.Command {
	return &cobra.Command{
		Use:   "generate",
		Short: "Write imagebump.yaml as Flux image automation objects",
		Long: `Print the config's image policies, registries and targets as Flux objects
(ImageRepository, ImagePolicy, ImageUpdateAutomation, GitRepository) on
stdout. The Secrets to create are listed on stderr with the files they come
from, and so is every setting Flux cannot express (pull requests, cron
schedules, minimum age, signature verification, platform digests, rate
limits, imagebump's own message templates).`,
		Example: `  imagebump flux generate -c imagebump.yaml > flux-image-automation.yaml`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := loadConfig(g)
			if err != nil {
				return usageError(err)
			}
			return runFluxGenerate(cfg, g.stderr, stdout)
		},
	}
}

func runFluxGenerate(cfg *config.Config, stderr, stdout io.Writer) error {
	out, err := flux.Export(cfg)
	if err != nil {
		return usageError(err)
	}
	var b bytes.Buffer
	if out.Secrets != nil && len(out.Secrets.Keys) > 0 {
		b.WriteString("Secrets to create (kubectl create secret generic NAME -n NAMESPACE --from-file=KEY=FILE, or --from-literal=KEY=\"$VARIABLE\" for env:VARIABLE):\n")
		names := make([]string, 0, len(out.Secrets.Keys))
		for n := range out.Secrets.Keys {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			keys := out.Secrets.Keys[n]
			ks := make([]string, 0, len(keys))
			for k := range keys {
				ks = append(ks, k)
			}
			sort.Strings(ks)
			for _, k := range ks {
				fmt.Fprintf(&b, "  %s %s=%s\n", n, k, keys[k])
			}
		}
	}
	if len(out.Notes) > 0 {
		fmt.Fprintf(&b, "Not expressible in Flux: %d\n", len(out.Notes))
		for _, n := range out.Notes {
			fmt.Fprintf(&b, "  %s\n", n)
		}
	}
	if stderr != nil {
		if _, err := stderr.Write(b.Bytes()); err != nil {
			return err
		}
	}
	if len(out.YAML) == 0 {
		return failure(errors.New("the config has no image policy or target to write as Flux objects"))
	}
	_, err = stdout.Write(out.YAML)
	return err
}
