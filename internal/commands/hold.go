package commands

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/imagebump/imagebump/config"
)

// HoldOptions are the inputs of `imagebump hold` and `imagebump release`.
type HoldOptions struct {
	global *globalOptions
	// Policy is the image policy to hold or release.
	Policy string
	// Reason and Until describe the hold.
	Reason, Until string
	// Release removes the hold instead.
	Release bool
}

// NewCmdHold builds `imagebump hold`.
func NewCmdHold(g *globalOptions, stdout io.Writer) *cobra.Command {
	o := &HoldOptions{global: g}
	cmd := &cobra.Command{
		Use:   "hold POLICY --reason TEXT [--until TIME]",
		Short: "Hold a policy still (an incident, a freeze), as an edit of the config",
		Long: `Add hold: {reason, until} to the policy's entry in the config file, changing
only those bytes: comments, quoting and order stay, so the hold is a small
commit to review like any other change. While held, the policy is still
selected and reported (plan shows what it would pick), but its markers stay
where they are. --until (RFC 3339, or a date meaning its midnight UTC) ends the
hold by itself; without it, the hold lasts until imagebump release.`,
		Example: `  imagebump hold apps:web --reason "incident 42" --until 2026-12-24T00:00:00Z
  git commit -am "Hold apps:web during incident 42"`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completePolicies(g),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Policy = args[0]
			if o.Reason == "" {
				return usageError(errors.New("--reason is required: a hold says why, for whoever reads the plan or the pull request"))
			}
			return runHold(o, stdout)
		},
	}
	cmd.Flags().StringVar(&o.Reason, "reason", "", "why the policy is held (required)")
	cmd.Flags().StringVar(&o.Until, "until", "", "when the hold ends: RFC 3339 (2026-12-24T00:00:00Z) or a date (2026-12-24)")
	return cmd
}

// NewCmdRelease builds `imagebump release`.
func NewCmdRelease(g *globalOptions, stdout io.Writer) *cobra.Command {
	o := &HoldOptions{global: g, Release: true}
	return &cobra.Command{
		Use:               "release POLICY",
		Short:             "Release a held policy, as an edit of the config",
		Long:              `Remove the policy's hold from the config file, changing only those bytes.`,
		Example:           `  imagebump release apps:web && git commit -am "Release apps:web"`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completePolicies(g),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Policy = args[0]
			return runHold(o, stdout)
		},
	}
}

func runHold(o *HoldOptions, stdout io.Writer) error {
	file := o.global.ConfigFile
	verb, suspend := "hold", "true"
	if o.Release {
		verb, suspend = "release", "false"
	}
	// Flux objects hold a policy with suspend, which imagebump reads as a
	// hold; the command edits a native config only.
	if len(o.global.Flux) > 0 || isFluxSource(file) {
		what := "--flux names Flux objects"
		if len(o.global.Flux) == 0 {
			what = "-c " + file + " holds Flux objects"
		}
		return usageError(fmt.Errorf("%s: imagebump %s edits an imagebump.yaml; with Flux objects, set spec.suspend: %s on ImagePolicy %s instead (imagebump reads a suspended policy as held)",
			what, verb, suspend, strings.Replace(config.NormalizeName(o.Policy), ":", "/", 1)))
	}
	if !o.Release && o.Until != "" {
		// A hold that has ended already would hold nothing.
		if t, err := config.ParseHoldTime(o.Until); err == nil && !t.After(time.Now()) {
			return usageError(fmt.Errorf("--until %s has passed (it is %s): the hold would hold nothing; give a later time, or leave --until out to hold until released", o.Until, time.Now().UTC().Format(time.RFC3339)))
		}
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return usageError(fmt.Errorf("reading the config: %w", err))
	}
	var out []byte
	if o.Release {
		out, err = config.ClearHold(data, file, o.Policy)
	} else {
		out, err = config.SetHold(data, file, o.Policy, config.Hold{Reason: o.Reason, Until: o.Until})
	}
	switch {
	case errors.Is(err, config.ErrNotHeld):
		_, err = fmt.Fprintf(stdout, "%s: %s is not held; nothing to release\n", file, config.NormalizeName(o.Policy))
		return err
	case errors.Is(err, config.ErrNoPolicy):
		// Not in the file's images, but in the config: an ImagePolicy of
		// the Flux objects its flux: paths name. Loaded without its Flux
		// report: the error is the news.
		quiet := *o.global
		quiet.stderr = nil
		// hold clones nothing: loaded as validate loads it.
		if cfg, lerr := loadConfigFor(&quiet, noGit); lerr == nil {
			if im, ok := cfg.Image(o.Policy); ok {
				if obj, fromFlux := quiet.fluxPolicies[im.Name]; fromFlux {
					return usageError(fmt.Errorf("%s is an ImagePolicy of the Flux objects %s reads (%s, by flux.paths): imagebump %s edits the policies of the imagebump.yaml itself; set spec.suspend: %s on that ImagePolicy instead (imagebump reads a suspended policy as held)",
						im.Name, file, obj.Pos(), verb, suspend))
				}
			}
		}
		return usageError(err)
	case err != nil:
		return usageError(err)
	}
	if err := replaceFile(file, out); err != nil {
		return failure(err)
	}
	done := "held"
	if o.Release {
		done = "released"
	}
	_, err = fmt.Fprintf(stdout, "%s: %s %s; commit the file for the targets that read it\n", file, done, config.NormalizeName(o.Policy))
	return err
}

// replaceFile writes data over path atomically, keeping its mode; a new
// file gets 0644. A symbolic link is followed: the file it names is
// replaced and the link stays (a rename over the link replaced the link
// with a copy, and the file it named kept the old text).
func replaceFile(path string, data []byte) error {
	if real, err := filepath.EvalSymlinks(path); err == nil {
		path = real
	}
	mode := fs.FileMode(0o644)
	st, err := os.Stat(path)
	switch {
	case err == nil:
		mode = st.Mode().Perm()
	case !errors.Is(err, fs.ErrNotExist):
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".imagebump-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(mode); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
