package commands

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/imagebump/imagebump/config"
	"github.com/imagebump/imagebump/flux"
	"github.com/imagebump/imagebump/report"
)

// loadConfigIfAny loads the config named by -c, or ./imagebump.yaml when it
// exists. Without -c and without that file it returns nil: commands such as
// `tags` work without a config.
func loadConfigIfAny(g *globalOptions) (*config.Config, error) {
	if !g.configSet && !fileExists(g.ConfigFile) && len(g.Flux) == 0 {
		return nil, nil
	}
	cfg, err := loadConfig(g)
	if err != nil {
		return nil, usageError(err)
	}
	return cfg, nil
}

// gitUse says whether a command clones or pushes the targets'
// repositories with the config it loads. A Flux GitRepository's Secret
// that is not mapped is an error for an ssh URL when Git is used, and a
// warning saying what run and serve will need when it is not.
type gitUse bool

const (
	usesGit gitUse = true  // run, serve, plan without --repo
	noGit   gitUse = false // validate, plan and apply with --repo, flux export
)

// loadConfig loads the config for a command that uses Git: see
// loadConfigFor.
func loadConfig(g *globalOptions) (*config.Config, error) {
	return loadConfigFor(g, usesGit)
}

// loadConfigFor loads the config: imagebump.yaml (-c, ./imagebump.yaml by
// default), Flux objects (-c naming a folder or a file of Flux objects,
// --flux, or the config's flux.paths), or both, merged. A missing default
// file gets an error that says how to name another. The Flux objects read
// and what imagebump does differently with them are written to stderr;
// use says whether the command uses Git.
func loadConfigFor(g *globalOptions, use gitUse) (*config.Config, error) {
	fluxPaths := append([]string(nil), g.Flux...)
	secrets := g.FluxSecrets
	var native *config.Config
	// A config that is not a file (-c /dev/stdin, -c <(...)) can be read
	// once only: it is read here, and parsed from memory.
	piped, err := readIfNotFile(g.ConfigFile)
	if err != nil {
		return nil, err
	}
	switch {
	case piped != nil:
		if hasFluxObjects(piped) {
			return nil, fmt.Errorf("%s holds Kubernetes objects, and imagebump reads Flux objects from files or folders only: write them to a file and pass -c FILE (or --flux FILE)", g.ConfigFile)
		}
		cwd, err := os.Getwd()
		if err != nil {
			return nil, err
		}
		if native, err = config.ParseDir(piped, g.ConfigFile, cwd); err != nil {
			return nil, err
		}
	case g.configSet && isFluxSource(g.ConfigFile):
		fluxPaths = append([]string{g.ConfigFile}, fluxPaths...)
		if native := filepath.Join(g.ConfigFile, "imagebump.yaml"); fileExists(native) {
			g.logger.Warn("the folder holds an imagebump.yaml, which is not read: with -c DIR the Flux objects are the whole config; to read both, pass -c "+native+" --flux "+g.ConfigFile, "file", native)
		}
	case !g.configSet && !fileExists(g.ConfigFile) && len(fluxPaths) > 0:
		// --flux alone: no imagebump.yaml needed.
	case !g.configSet && !fileExists(g.ConfigFile):
		return nil, fmt.Errorf("no config: %s does not exist in the current directory; pass -c FILE (docs/config.md describes the file), or -c DIR / --flux DIR for Flux objects", g.ConfigFile)
	case g.configSet && missing(g.ConfigFile):
		return nil, fmt.Errorf("no config: -c %s names no file or folder here; check the path (docs/config.md describes the file)", g.ConfigFile)
	default:
		if native, err = config.Load(g.ConfigFile); err != nil {
			return nil, err
		}
	}
	if native != nil && native.Flux != nil {
		fluxPaths = append(fluxPaths, native.Flux.Paths...)
		if secrets == "" {
			secrets = native.Flux.Secrets
		}
	}
	if len(fluxPaths) == 0 {
		return native, nil
	}
	// A file or folder named twice (--flux and the config's flux.paths,
	// say), or inside a folder named too, is read once: read twice, each
	// of its objects would be defined twice.
	var kept []string
	for _, p := range fluxPaths {
		if slices.ContainsFunc(kept, func(q string) bool { return inside(p, q) }) {
			continue
		}
		kept = append(slices.DeleteFunc(kept, func(q string) bool { return inside(q, p) }), p)
	}
	fluxPaths = kept
	fromFlux, err := loadFlux(context.Background(), g, fluxPaths, secrets, use)
	if err != nil {
		return nil, err
	}
	if native == nil {
		return fromFlux, nil
	}
	return config.Merge(native, fromFlux)
}

// loadFlux reads Flux objects and returns them as a native config, writing
// the report of what was read to stderr, as log records when the logs are
// JSON.
func loadFlux(ctx context.Context, g *globalOptions, paths []string, secretsPath string, use gitUse) (*config.Config, error) {
	set, err := flux.Load(ctx, paths, flux.LoadOptions{Logger: g.logger})
	if err != nil {
		return nil, err
	}
	var secrets *flux.Secrets
	if secretsPath != "" {
		if st, err := os.Stat(secretsPath); err == nil && st.IsDir() {
			secrets = &flux.Secrets{Dir: secretsPath}
		} else if secrets, err = flux.LoadSecrets(secretsPath); err != nil {
			return nil, err
		}
	}
	native, err := set.Native(flux.NativeOptions{Secrets: secrets, File: paths[0], NoGit: use == noGit})
	if err != nil {
		return nil, err
	}
	switch {
	case g.jsonLogs && g.logger != nil:
		native.Report.Log(g.logger)
	case g.stderr != nil:
		var b bytes.Buffer
		if err := native.Report.WriteText(&b); err == nil && b.Len() > 0 {
			g.stderr.Write(b.Bytes())
		}
	}
	if g.fluxPolicies == nil {
		g.fluxPolicies = map[string]flux.Object{}
	}
	for name, o := range native.Policies {
		g.fluxPolicies[name] = o
	}
	for _, n := range native.Report.Notes {
		if n.Level != flux.Warning {
			continue
		}
		msg := n.Msg
		if n.Field != "" {
			msg = n.Field + ": " + msg
		}
		if n.Object.Kind != "" {
			msg = n.Object.Ref() + ": " + msg
		}
		g.fluxWarnings = append(g.fluxWarnings, report.Problem{File: n.Object.File, Line: n.Line, Message: msg})
	}
	if len(native.Config.Images) == 0 && len(native.Config.Targets()) == 0 {
		return nil, fmt.Errorf("no ImagePolicy and no ImageUpdateAutomation found in %s", strings.Join(paths, ", "))
	}
	return native.Config, nil
}

// isFluxSource reports whether path is a folder, or a file whose documents
// have apiVersion keys (Kubernetes objects): a native config has none.
func isFluxSource(path string) bool {
	st, err := os.Stat(path)
	if err != nil {
		return false
	}
	if st.IsDir() {
		return true
	}
	data, err := os.ReadFile(path)
	return err == nil && hasFluxObjects(data)
}

// readIfNotFile reads path whole when it names something that is neither
// a regular file nor a folder (a pipe, a terminal), which can be read only
// once, and returns nil for anything else (a missing path included: the
// loader says what is missing).
func readIfNotFile(path string) ([]byte, error) {
	st, err := os.Stat(path)
	if err != nil || st.Mode().IsRegular() || st.IsDir() {
		return nil, nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading config: %w", err)
	}
	if len(data) == 0 {
		// Read already (serve's reload reads -c again), or empty: either
		// way there is no config to take.
		return nil, fmt.Errorf("reading config: %s gave nothing to read; a pipe can be read once, so a config that serve reloads must be a file", path)
	}
	return data, nil
}

// hasFluxObjects reports whether data has a document with an apiVersion
// key (a Kubernetes object): a native config has none.
func hasFluxObjects(data []byte) bool {
	if !bytes.Contains(data, []byte("apiVersion")) {
		return false
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	for {
		var doc map[string]any
		if err := dec.Decode(&doc); err != nil {
			return false
		}
		if _, ok := doc["apiVersion"]; ok {
			return true
		}
	}
}

// policyPos says where image policy im is defined: its ImagePolicy's file
// and line when it came from Flux objects (the native config made of them
// is written nowhere), else its line in the config file.
func (g *globalOptions) policyPos(cfg *config.Config, im config.Image) (file string, line int, pos string) {
	if o, ok := g.fluxPolicies[im.Name]; ok {
		return o.File, o.Line, o.Pos()
	}
	return cfg.File, im.Line, fmt.Sprintf("%s:%d", cfg.File, im.Line)
}

// inside reports whether path p lies inside folder dir, or is it, their
// symbolic links resolved.
func inside(p, dir string) bool {
	real := func(s string) string {
		abs, err := filepath.Abs(s)
		if err != nil {
			return s
		}
		if r, err := filepath.EvalSymlinks(abs); err == nil {
			return r
		}
		return abs
	}
	rel, err := filepath.Rel(real(dir), real(p))
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// missing reports whether nothing, not even a broken symbolic link, is at
// path.
func missing(path string) bool {
	_, err := os.Lstat(path)
	return errors.Is(err, fs.ErrNotExist)
}
