package commands

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/imagebump/imagebump/config"
	"github.com/imagebump/imagebump/cycle"
	"github.com/imagebump/imagebump/discover"
	"github.com/imagebump/imagebump/internal/printable"
	"github.com/imagebump/imagebump/internal/unidiff"
	"github.com/imagebump/imagebump/policy"
	"github.com/imagebump/imagebump/registry"
	"github.com/imagebump/imagebump/report"
	"github.com/imagebump/imagebump/setters"
)

// InitOptions are the inputs of `imagebump init`.
type InitOptions struct {
	global *globalOptions

	// Repo is the checkout to scan; "." by default.
	Repo string
	// Paths limits the scan to these paths below Repo.
	Paths []string
	// Output is text, json or diff.
	Output string
	// Write writes the config and the markers.
	Write bool
	// Insecure are registry hosts reached over plain HTTP.
	Insecure []string
}

// NewCmdInit builds `imagebump init`. runF replaces the run function in
// flag-parsing tests; nil means runInit.
func NewCmdInit(g *globalOptions, stdout io.Writer, runF func(context.Context, *InitOptions, io.Writer) error) *cobra.Command {
	o := &InitOptions{global: g}
	cmd := &cobra.Command{
		Use:   "init",
		Short: "Find the image references, propose policies, and insert the markers (a dry run unless --write)",
		Long: `Find every image reference in the checkout (Kubernetes workloads, kustomization
images entries, Helm values in HelmRelease and Argo CD Application objects and
values files, Argo CD kustomize images and .argocd-source files, docker-compose
services), group them by repository, and propose
one image policy per repository from the tags in use and the registry's tags,
showing what it would pick today. References that cannot be tracked are listed
with the reason; moving tags such as latest are a choice left to you.

Nothing is written unless --write: the proposed imagebump.yaml (or the entries
added to an existing one) and the marker comments are printed, the markers as
a unified diff. With --write, the config goes to imagebump.yaml in --repo (or
where -c says; an existing config is only appended to), and each marker is
added after its value, byte-minimally and verified as apply's edits are.
Running init again changes nothing. See docs/init.md.`,
		Example: `  imagebump init --repo .
  imagebump init --repo . -o diff | git apply
  imagebump init --repo . --paths clusters/prod --write && imagebump plan --repo .`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.Output != "text" && o.Output != "json" && o.Output != "diff" {
				return usageError(fmt.Errorf("-o %q: want text, json or diff", o.Output))
			}
			if runF != nil {
				return runF(cmd.Context(), o, stdout)
			}
			return runInit(cmd.Context(), o, stdout)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Repo, "repo", ".", "checkout to scan and mark")
	f.StringArrayVar(&o.Paths, "paths", nil, "file or folder below --repo to scan (repeatable; default: the whole checkout)")
	f.StringVarP(&o.Output, "output", "o", "text", "output format: text, json, or diff (a unified diff of the config and the markers that git apply accepts)")
	f.BoolVar(&o.Write, "write", false, "write the config and insert the markers")
	f.StringArrayVar(&o.Insecure, "insecure-registry", nil, "registry host reached over plain HTTP, such as localhost:5000 (repeatable); a new config gets it under registries")
	return cmd
}

// InitReport is the JSON document of `imagebump init -o json`.
type InitReport struct {
	Version int `json:"version"`
	// Repo is --repo; Config the config file written or extended.
	Repo   string `json:"repo"`
	Config string `json:"config"`
	// ConfigExists says whether the config existed before.
	ConfigExists bool `json:"configExists"`
	// Written is true with --write when everything was written.
	Written bool `json:"written"`
	// ConfigText is the new config, or the text added to the existing
	// one; "" when nothing is added.
	ConfigText string       `json:"configText"`
	Files      InitFiles    `json:"files"`
	Policies   []InitPolicy `json:"policies"`
	Untracked  []InitRef    `json:"untracked"`
	// Notes are what a reviewer should know of the scan as a whole (a
	// Flux Kustomization whose source cannot be told); omitted when there
	// are none.
	Notes   []string     `json:"notes,omitempty"`
	Markers []InitMarker `json:"markers"`
	// Problems are files that could not be read, registries that failed,
	// and writes that failed.
	Problems []report.Problem `json:"problems"`
}

// InitFiles counts the files looked at.
type InitFiles struct {
	Scanned        int      `json:"scanned"`
	ChartTemplates int      `json:"chartTemplates"`
	Changed        []string `json:"changed"`
}

// InitPolicy is one proposal.
type InitPolicy struct {
	Name       string   `json:"name"`
	Repository string   `json:"repository"`
	Kind       string   `json:"kind"`
	Rule       InitRule `json:"rule"`
	Existing   bool     `json:"existing"`
	Choice     bool     `json:"choice"`
	Reason     string   `json:"reason"`
	TagsInUse  []string `json:"tagsInUse"`
	// RegistryTags and Latest are the registry's answer: how many tags it
	// lists and what the rule picks today.
	RegistryTags int    `json:"registryTags"`
	Latest       string `json:"latest"`
	Error        string `json:"error,omitempty"`
	// NotApplied says which of its markers no target of the config
	// applies, and what to add; omitted when every one is applied.
	NotApplied string    `json:"notApplied,omitempty"`
	Notes      []string  `json:"notes"`
	Uses       []InitRef `json:"uses"`
	Unmarked   []InitRef `json:"unmarked"`
}

// InitRule is a policy's rule, as the config writes it.
type InitRule struct {
	SemVer       string          `json:"semver,omitempty"`
	Alphabetical string          `json:"alphabetical,omitempty"`
	Numerical    string          `json:"numerical,omitempty"`
	FilterTags   *InitFilterTags `json:"filterTags,omitempty"`
	Digest       string          `json:"digest,omitempty"`
}

// InitFilterTags is a rule's filterTags.
type InitFilterTags struct {
	Pattern string `json:"pattern"`
	Extract string `json:"extract,omitempty"`
}

// InitRef is a reference in a file.
type InitRef struct {
	File   string `json:"file"`
	Line   int    `json:"line"`
	Source string `json:"source"`
	Path   string `json:"path"`
	Value  string `json:"value"`
	Reason string `json:"reason,omitempty"`
}

// InitMarker is one marker insertion.
type InitMarker struct {
	File   string `json:"file"`
	Line   int    `json:"line"`
	Marker string `json:"marker"`
	Value  string `json:"value"`
	Status string `json:"status"`
	Reason string `json:"reason,omitempty"`
}

// initRun is what runInit works out before printing and writing.
type initRun struct {
	o          *InitOptions
	repo       string
	configPath string
	configData []byte // nil when the config does not exist
	cfg        *config.Config
	inv        *discover.Inventory
	props      []discover.Proposal
	marks      []discover.FileMarkers
	// configProps are the proposals the config gets: props but those
	// none of whose references can be marked.
	configProps []discover.Proposal
	newConfig   []byte // the config's new content; nil when unchanged
	configErr   error  // why the config cannot be extended
	problems    []report.Problem

	// With --write: whether the config's new content was written, and
	// the marked files that could not be, with why.
	wroteConfig bool
	failedFiles map[string]string
}

func runInit(ctx context.Context, o *InitOptions, stdout io.Writer) error {
	r := &initRun{o: o, repo: o.Repo}
	if r.repo == "" {
		r.repo = "."
	}
	if err := checkRepoFlag(r.repo); err != nil {
		return usageError(err)
	}
	r.configPath = filepath.Join(r.repo, "imagebump.yaml")
	if o.global.configSet {
		r.configPath = o.global.ConfigFile
	} else if err := insideRepo(r.repo, r.configPath); err != nil {
		// The checkout's own imagebump.yaml, a link out of it: as the
		// scan follows no such link, init neither reads nor extends it.
		return usageError(err)
	}
	if st, err := os.Stat(r.configPath); err == nil && st.IsDir() {
		return usageError(fmt.Errorf("-c %s is a folder: init writes one config file; name it, such as -c %s", r.configPath, filepath.Join(r.configPath, "imagebump.yaml")))
	}
	if err := folderOf("-c", r.configPath); err != nil {
		return usageError(err)
	}
	for _, p := range o.Paths {
		if err := checkInitPath(r.repo, p); err != nil {
			return usageError(err)
		}
	}
	data, err := os.ReadFile(r.configPath)
	switch {
	case err == nil:
		if isFluxSource(r.configPath) {
			return usageError(fmt.Errorf("-c %s holds Flux objects: init writes an imagebump.yaml; give its path with -c, and the Flux objects with --flux", r.configPath))
		}
		r.configData = data
	case !errors.Is(err, os.ErrNotExist):
		return usageError(fmt.Errorf("reading config: %w", err))
	}
	// The policies that exist already: the config's, and those of Flux
	// objects it (or --flux) names, so that none is proposed twice.
	if r.configData != nil || len(o.global.Flux) > 0 {
		g := *o.global
		g.ConfigFile, g.configSet = r.configPath, r.configData != nil
		cfg, err := loadConfig(&g)
		if err != nil {
			// Several mistakes are written a line each after the
			// prefix; one goes on its line.
			sep := " "
			if joins(err) {
				sep = "\n"
			}
			return usageError(fmt.Errorf("init extends %s, which is not valid; fix it first (imagebump validate -c %s):%s%w", r.configPath, r.configPath, sep, err))
		}
		r.cfg = cfg
	}

	ropts := cycle.RegistryOptions(r.cfg, o.global.logger)
	for _, h := range o.Insecure {
		ropts = insecureHost(ropts, h)
	}
	client, err := registry.New(ropts)
	if err != nil {
		return usageError(err)
	}

	r.inv, err = discover.Find(ctx, discover.FindOptions{Root: r.repo, Paths: o.Paths, MaxFileSize: r.cfg.FileSizeLimit(), Logger: o.global.logger})
	if err != nil {
		if ctx.Err() != nil {
			return failure(err)
		}
		return usageError(err)
	}
	if r.cfg != nil {
		for _, h := range o.Insecure {
			if !slices.ContainsFunc(r.cfg.Registries, func(reg config.Registry) bool { return reg.Host == h && reg.Insecure }) {
				o.global.logger.Warn("the config does not allow plain HTTP to this registry, so plan and run will not reach it: add it under registries with insecure: true", "host", h, "config", r.configPath)
			}
		}
	}
	tags, errs := map[string][]string{}, map[string]error{}
	for _, res := range client.Scan(ctx, r.inv.Repositories(), 0) {
		if res.Err != nil {
			errs[res.Repository] = res.Err
			continue
		}
		tags[res.Repository] = res.Tags
	}
	if err := ctx.Err(); err != nil {
		return failure(err)
	}
	var existing []discover.Existing
	var targets []config.Target
	if r.cfg != nil {
		for _, im := range r.cfg.Images {
			existing = append(existing, discover.Existing{Name: im.Name, Repository: im.Repository, Spec: im.Spec()})
		}
		targets = r.cfg.Targets()
	}
	r.props = discover.Propose(r.inv, discover.ProposeOptions{Tags: tags, Errors: errs, Existing: existing, Targets: targets})
	r.marks = discover.Markers(r.inv, r.props)
	r.planConfig()

	for _, p := range r.inv.Problems {
		r.problems = append(r.problems, report.Problem{File: p.File, Line: p.Line, Message: p.Error()})
	}
	regProblems := registryProblems(r.props)
	failed := len(regProblems) > 0
	r.problems = append(r.problems, regProblems...)
	for _, fm := range r.marks {
		if fm.Err != nil {
			r.problems = append(r.problems, report.Problem{File: fm.File, Message: fm.File + ": " + fm.Err.Error()})
		}
	}

	written := false
	if o.Write {
		if initBeforeWrite != nil {
			initBeforeWrite()
		}
		var werr error
		written, werr = r.write(ctx)
		if werr != nil {
			return werr
		}
		failed = failed || !written
	}

	switch o.Output {
	case "json":
		err = encodeJSON(stdout, r.report(written))
	case "diff":
		err = r.writeDiff(stdout)
		for _, p := range r.problems {
			o.global.logger.Error(p.Message)
		}
	default:
		err = r.writeText(stdout, written)
	}
	if err != nil {
		return err
	}
	if failed {
		return silentExit(ExitFailure)
	}
	return nil
}

// registryProblems reports the proposals whose registry failed, one
// problem per host: a registry that is down or refuses plain HTTP fails
// every repository on it the same way. A refused plain HTTP connection
// names init's own flag.
func registryProblems(props []discover.Proposal) []report.Problem {
	type group struct {
		host     string
		policies []string
		err      error
	}
	var groups []*group
	byHost := map[string]*group{}
	for _, p := range props {
		if p.RegistryErr == nil {
			continue
		}
		// Only what fails for the whole host is grouped: a missing
		// repository or refused credentials are each repository's own.
		var re *registry.Error
		key, host := "", ""
		if errors.As(p.RegistryErr, &re) && (re.Kind == registry.KindNetwork || re.Kind == registry.KindTimeout || re.Kind == registry.KindTLS) {
			key, host = re.Host+" "+re.Kind.String(), re.Host
		}
		if g := byHost[key]; g != nil && key != "" {
			g.policies = append(g.policies, p.Policy)
			continue
		}
		g := &group{host: host, policies: []string{p.Policy}, err: p.RegistryErr}
		groups = append(groups, g)
		if key != "" {
			byHost[key] = g
		}
	}
	out := make([]report.Problem, 0, len(groups))
	for _, g := range groups {
		msg := fmt.Sprintf("policy %s: %v", g.policies[0], g.err)
		if len(g.policies) > 1 {
			msg = fmt.Sprintf("policies %s (all on %s): %v", strings.Join(g.policies, ", "), g.host, g.err)
		}
		if host, ok := registry.PlainHTTPRefused(g.err); ok {
			msg += fmt.Sprintf("; if %s serves plain HTTP, run init again with --insecure-registry %s, which a new config keeps under registries:", host, host)
		}
		pr := report.Problem{Message: msg}
		if len(g.policies) == 1 {
			pr.Policy = g.policies[0]
		}
		out = append(out, pr)
	}
	return out
}

// initBeforeWrite, when set by a test, runs between init's scan and its
// writes: a file edited there is one the user changed meanwhile.
var initBeforeWrite func()

// folderOf refuses a file to write (named by flag) whose folder does not
// exist.
func folderOf(flag, file string) error {
	dir := filepath.Dir(file)
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return fmt.Errorf("%s %s: the folder %s does not exist; create it first (mkdir -p %s), or name a file in a folder that does", flag, file, dir, dir)
	}
	return nil
}

// checkInitPath refuses a --paths entry that is absolute or names nothing
// under the repository, before any registry is asked: a typo would
// otherwise leave init proposing nothing, and succeed.
func checkInitPath(repo, p string) error {
	if filepath.IsAbs(p) {
		return fmt.Errorf("--paths %s: absolute paths are refused; give it relative to --repo %s", p, repo)
	}
	if c := filepath.Clean(p); c == ".." || strings.HasPrefix(c, ".."+string(filepath.Separator)) {
		return fmt.Errorf("--paths %s: leads outside --repo %s; give a path inside it", p, repo)
	}
	if _, err := os.Lstat(filepath.Join(repo, p)); errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("--paths %s: no such file or folder under --repo %s", p, repo)
	}
	return nil
}

// insecureHost allows plain HTTP to host.
func insecureHost(opts registry.Options, host string) registry.Options {
	hosts := slices.Clone(opts.Hosts)
	for i := range hosts {
		if hosts[i].Host == host {
			hosts[i].Insecure = true
			opts.Hosts = hosts
			return opts
		}
	}
	opts.Hosts = append(hosts, registry.Host{Host: host, Insecure: true})
	return opts
}

// planConfig works out the config's new content. A proposed policy none
// of whose references can be marked is left out, with a note: it would be
// a policy no marker uses.
func (r *initRun) planConfig() {
	marked := map[string]bool{}
	for _, fm := range r.marks {
		for _, m := range fm.Marks {
			if m.Status == setters.Inserted || m.Status == setters.Present {
				marked[m.Policy] = true
			}
		}
	}
	props := make([]discover.Proposal, 0, len(r.props))
	for i := range r.props {
		p := &r.props[i]
		if p.Writes() && !marked[p.Policy] {
			p.Notes = append(p.Notes, "not added to the config: none of its references can be marked (see the markers not added); mark one by hand, or move the comment in the way, and run init again")
			continue
		}
		props = append(props, *p)
	}
	r.configProps = props
	writes := slices.ContainsFunc(props, func(p discover.Proposal) bool { return p.Writes() })
	switch {
	case r.configData == nil && writes:
		r.newConfig = discover.NewConfig(props, r.o.Insecure)
		if _, err := config.Parse(r.newConfig, r.configPath); err != nil {
			// A name taken from a marker may not be a valid policy name.
			r.configErr, r.newConfig = fmt.Errorf("the proposed config would not be valid: %w", err), nil
		}
	case r.configData != nil:
		out, err := discover.AppendImages(r.configData, r.configPath, props)
		if err != nil {
			r.configErr = err
			return
		}
		if !bytes.Equal(out, r.configData) {
			r.newConfig = out
		}
	}
}

// added returns the text added to the config: all of a new one.
func (r *initRun) added() string {
	if r.newConfig == nil {
		return ""
	}
	a, b := r.configData, r.newConfig
	pre := 0
	for pre < len(a) && pre < len(b) && a[pre] == b[pre] {
		pre++
	}
	suf := 0
	for suf < len(a)-pre && suf < len(b)-pre && a[len(a)-1-suf] == b[len(b)-1-suf] {
		suf++
	}
	return string(b[pre : len(b)-suf])
}

// manualEntries renders the entries to add by hand when the config cannot
// be extended.
func (r *initRun) manualEntries() string {
	return string(discover.NewConfig(r.configProps, nil))
}

// write writes the config and the markers. It reports whether everything
// was written; what failed is in r.problems.
func (r *initRun) write(ctx context.Context) (bool, error) {
	if r.configErr != nil {
		r.problems = append(r.problems, report.Problem{File: r.configPath, Message: fmt.Sprintf("%s: %v; nothing was written (the markers would name policies the config lacks)", r.configPath, r.configErr)})
		return false, nil
	}
	ok := true
	if r.newConfig != nil {
		dir, base := filepath.Split(r.configPath)
		if dir == "" {
			dir = "."
		}
		problems, err := setters.WriteFiles(ctx, dir, []setters.FileEdit{{File: base, Before: r.configData, After: r.newConfig}})
		if err != nil {
			return false, failure(err)
		}
		if len(problems) > 0 {
			for _, p := range problems {
				r.problems = append(r.problems, report.Problem{File: r.configPath, Message: r.configPath + ": " + p.Err.Error() + "; the markers were not written"})
			}
			return false, nil
		}
		r.wroteConfig = true
	}
	var edits []setters.FileEdit
	for _, fm := range r.marks {
		if fm.Changed() {
			edits = append(edits, setters.FileEdit{File: fm.File, Before: fm.Before, After: fm.After})
		}
	}
	if len(edits) > 0 {
		problems, err := setters.WriteFiles(ctx, r.repo, edits)
		if err != nil {
			return false, failure(err)
		}
		for _, p := range problems {
			ok = false
			if r.failedFiles == nil {
				r.failedFiles = map[string]string{}
			}
			r.failedFiles[p.File] = p.Err.Error()
			r.problems = append(r.problems, report.Problem{File: p.File, Message: p.Error()})
		}
	}
	return ok, nil
}

// configRel returns the config's path relative to the repository, for a
// diff, and false when it lies outside.
func (r *initRun) configRel() (string, bool) {
	repo, err1 := filepath.Abs(r.repo)
	cfg, err2 := filepath.Abs(r.configPath)
	if err1 != nil || err2 != nil {
		return "", false
	}
	rel, err := filepath.Rel(repo, cfg)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return "", false
	}
	return filepath.ToSlash(rel), true
}

// writeDiff writes the config and the markers as one unified diff.
func (r *initRun) writeDiff(w io.Writer) error {
	var b bytes.Buffer
	// Paths are from the top of the Git working tree, as plan's are.
	prefix := gitPrefix(r.o.Repo)
	if r.newConfig != nil {
		if rel, ok := r.configRel(); ok {
			writeFileDiff(&b, path.Join(prefix, rel), r.configData, r.newConfig)
		} else {
			r.o.global.logger.Warn("the config lies outside --repo, so the diff leaves it out; run with -o text to see it", "config", r.configPath)
		}
	}
	if r.configErr != nil {
		r.o.global.logger.Error(fmt.Sprintf("%s: %v; add these entries by hand:\n%s", r.configPath, r.configErr, r.manualEntries()))
	}
	for _, fm := range r.marks {
		if fm.Changed() {
			_ = unidiff.Write(&b, path.Join(prefix, fm.File), fm.Before, fm.After) // writes to memory cannot fail
		}
	}
	if b.Len() == 0 {
		// git apply refuses an empty patch ("No valid patches in
		// input"): say that there is nothing to apply.
		r.o.global.logger.Info("nothing to change: the diff is empty (git apply refuses an empty one)")
	}
	_, err := w.Write(b.Bytes())
	return err
}

// writeFileDiff writes a unified diff of one file; a nil before is a new
// file, written as git writes one so that git apply creates it.
func writeFileDiff(b *bytes.Buffer, file string, before, after []byte) {
	if before != nil {
		_ = unidiff.Write(b, file, before, after)
		return
	}
	var d bytes.Buffer
	_ = unidiff.Write(&d, file, nil, after)
	text := d.String()
	// unidiff names the file a/ and b/ in three header lines; a new file
	// has no a/ side.
	for range 3 {
		if i := strings.IndexByte(text, '\n'); i >= 0 {
			text = text[i+1:]
		}
	}
	q := unidiff.QuotePath
	fmt.Fprintf(b, "diff --git %s %s\nnew file mode 100644\n--- /dev/null\n+++ %s\n", q("a/"+file), q("b/"+file), q("b/"+file))
	b.WriteString(text)
}

// counts tallies the marker insertions.
// With --write, files that could not be written count for nothing.
func (r *initRun) counts() (inserted, present, refused, files int) {
	for _, fm := range r.marks {
		if _, failed := r.failedFiles[fm.File]; failed {
			continue
		}
		if fm.Changed() {
			files++
		}
		for _, m := range fm.Marks {
			switch m.Status {
			case setters.Inserted:
				inserted++
			case setters.Present:
				present++
			case setters.Refused:
				refused++
			}
		}
	}
	return
}

// markerRef writes a marker's reference with its field.
func markerRef(policy string, f setters.Field) string {
	if f == setters.FieldImage {
		return policy
	}
	return policy + ":" + string(f)
}

// latestText says what a proposal picks today.
func latestText(p discover.Proposal) string {
	switch {
	case p.RegistryErr != nil:
		return "(registry failed)"
	case p.Kind == discover.KindUnordered:
		return "-"
	case p.Latest == "":
		return "(nothing matches)"
	}
	return p.Latest
}

func (r *initRun) writeText(w io.Writer, written bool) error {
	var b strings.Builder
	ps := printable.String
	nUses := len(r.inv.Uses)
	fmt.Fprintf(&b, "Scanned %d YAML %s: %d image %s to %d %s",
		r.inv.FilesScanned, plural(r.inv.FilesScanned, "file", "files"),
		nUses, plural(nUses, "reference", "references"),
		len(r.props), plural(len(r.props), "repository", "repositories"))
	if n := len(r.inv.Untracked); n > 0 {
		fmt.Fprintf(&b, ", and %d more that cannot be tracked", n)
	}
	b.WriteString(".\n")
	if r.inv.ChartTemplates > 0 {
		fmt.Fprintf(&b, "Skipped %d Helm chart %s (not YAML until rendered).\n", r.inv.ChartTemplates, plural(r.inv.ChartTemplates, "template", "templates"))
	}

	var policies, choices []discover.Proposal
	for _, p := range r.props {
		if p.Choice {
			choices = append(choices, p)
		} else {
			policies = append(policies, p)
		}
	}
	if len(policies) > 0 {
		b.WriteString("\n")
		tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "POLICY\tREPOSITORY\tRULE\tIN USE\tPICKS TODAY")
		for _, p := range policies {
			name := p.Policy
			if p.Existing {
				name += " (in config)"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", ps(name), ps(p.Repository), ps(discover.Describe(p.Spec)), ps(inUse(p.TagsInUse)), ps(latestText(p)))
		}
		tw.Flush()
		var notes []string
		for _, p := range policies {
			if !p.Existing {
				notes = append(notes, p.Policy+": "+p.Reason)
			}
			for _, n := range p.Notes {
				notes = append(notes, p.Policy+": "+n)
			}
		}
		if len(notes) > 0 {
			b.WriteString("\nWhy, and notes:\n")
			for _, n := range notes {
				b.WriteString("  " + ps(n) + "\n")
			}
		}
	}
	if len(r.inv.Notes) > 0 {
		b.WriteString("\nNotes on the scan:\n")
		for _, n := range r.inv.Notes {
			b.WriteString("  " + printable.Message(n) + "\n")
		}
	}
	var unapplied []discover.Proposal
	for _, p := range policies {
		if p.Unapplied != "" {
			unapplied = append(unapplied, p)
		}
	}
	if len(unapplied) > 0 {
		b.WriteString("\nNot applied by any target of the config (plan and run would never move these markers):\n")
		for _, p := range unapplied {
			b.WriteString("  " + ps(p.Policy+": "+p.Unapplied) + "\n")
		}
	}
	if len(choices) > 0 {
		b.WriteString("\nChoices to make (nothing is written or marked for these):\n")
		for _, p := range choices {
			var where []string
			for _, u := range p.Uses {
				where = append(where, fmt.Sprintf("%s:%d", u.File, u.Line))
			}
			fmt.Fprintf(&b, "  %s (%s): %s\n", ps(p.Repository), ps(strings.Join(where, ", ")), ps(p.Reason))
			if p.Kind == discover.KindMoving {
				fmt.Fprintf(&b, "    rule: %s; today: %s\n", ps(discover.Describe(p.Spec)), ps(latestText(p)))
				// Ready to paste, for those who choose the pinned digest.
				chosen := p
				chosen.Choice, chosen.Existing = false, false
				b.WriteString("    to pin its digest, add this entry under images: and mark the value with # " + setters.FormatMarker(p.Policy, setters.FieldImage) + ":\n")
				for _, l := range strings.SplitAfter(string(discover.Entries([]discover.Proposal{chosen})), "\n") {
					if strings.TrimSpace(l) != "" && !strings.HasPrefix(strings.TrimSpace(l), "#") {
						b.WriteString("    " + ps(strings.TrimSuffix(l, "\n")) + "\n")
					}
				}
			}
			for _, n := range p.Notes {
				b.WriteString("    " + ps(n) + "\n")
			}
		}
	}
	untracked := append([]discover.Untracked(nil), r.inv.Untracked...)
	for _, p := range r.props {
		untracked = append(untracked, p.Unmarked...)
	}
	slices.SortStableFunc(untracked, func(a, b discover.Untracked) int {
		return cmp.Or(strings.Compare(a.File, b.File), cmp.Compare(a.Line, b.Line))
	})
	if len(untracked) > 0 {
		b.WriteString("\nNot tracked:\n")
		for _, u := range untracked {
			fmt.Fprintf(&b, "  %s:%d: %s (%s): %s\n", ps(u.File), u.Line, ps(u.Value), ps(u.Source), ps(u.Reason))
		}
	}
	inserted, present, refused, files := r.counts()
	if refused > 0 {
		b.WriteString("\nMarkers not added:\n")
		for _, fm := range r.marks {
			for _, m := range fm.Marks {
				if m.Status == setters.Refused {
					fmt.Fprintf(&b, "  %s:%d: %s (%s): %s\n", ps(m.File), m.EditorLine, ps(markerRef(m.Policy, m.Field)), ps(m.Source), printable.Message(m.Err.Error()))
				}
			}
		}
	}
	if len(r.problems) > 0 {
		b.WriteString("\nProblems:\n")
		for _, p := range r.problems {
			b.WriteString("  " + printable.Message(p.Message) + "\n")
		}
	}

	switch {
	case errors.Is(r.configErr, discover.ErrNotAppendable):
		fmt.Fprintf(&b, "\n%s: its images: is written in flow style (such as images: []), which cannot be extended by adding lines. "+
			"Write it as a block list and run init again, or add these items to it by hand:\n\n%s", ps(r.configPath), discover.Entries(r.configProps))
	case r.configErr != nil:
		fmt.Fprintf(&b, "\n%s cannot be written as proposed (%v). Add these entries by hand:\n\n%s", ps(r.configPath), printable.Message(r.configErr.Error()), r.manualEntries())
	case r.newConfig != nil && r.configData == nil:
		fmt.Fprintf(&b, "\nProposed %s (new file):\n\n%s", ps(r.configPath), r.added())
	case r.newConfig != nil:
		fmt.Fprintf(&b, "\nAdded to %s:\n\n%s", ps(r.configPath), r.added())
	}
	if inserted > 0 {
		fmt.Fprintf(&b, "\nMarkers:\n\n")
		for _, fm := range r.marks {
			if fm.Changed() {
				var d bytes.Buffer
				_ = unidiff.Write(&d, fm.File, fm.Before, fm.After)
				b.WriteString(printableDiff(d.String()))
			}
		}
	}

	b.WriteString("\n")
	if slices.ContainsFunc(r.props, func(p discover.Proposal) bool { return p.RegistryErr != nil }) {
		if r.o.Write {
			b.WriteString("Some registries failed (see the problems): their rules come from the tags in use alone, unchecked; review those entries in the config.\n")
		} else {
			b.WriteString("Some registries failed (see the problems): their rules come from the tags in use alone, unchecked; fix the access to them and run init again before --write.\n")
		}
	}
	switch {
	case len(r.inv.Uses) == 0 && r.newConfig == nil:
		fmt.Fprintf(&b, "No image reference to track under %s: nothing to propose.\n", ps(r.repo))
	case inserted == 0 && r.newConfig == nil && r.configErr == nil:
		fmt.Fprintf(&b, "Nothing to do: %d %s in place, and the config has every policy they name.\n", present, plural(present, "marker is", "markers are"))
	case written:
		cmd, fluxNote := r.planCommand()
		fmt.Fprintf(&b, "Wrote %s and %d %s in %d %s. Next: %s\n", r.writtenConfigText(), inserted, plural(inserted, "marker", "markers"), files, plural(files, "file", "files"), cmd)
		if fluxNote {
			b.WriteString("run and serve read Flux objects from the config's flux.paths: add them there (see docs/flux.md).\n")
		}
	case r.o.Write && (r.wroteConfig || files > 0):
		// Some of it went through: say what, and that running init
		// again finishes the rest (it adds only what is missing).
		fmt.Fprintf(&b, "Wrote %s and %d %s in %d %s; %d %s could not be written (see the problems): fix that and run init --write again, which adds only what is missing.\n",
			r.writtenConfigText(), inserted, plural(inserted, "marker", "markers"), files, plural(files, "file", "files"),
			len(r.failedFiles), plural(len(r.failedFiles), "file", "files"))
	case r.o.Write:
		b.WriteString("Nothing was written: see the problems above.\n")
	default:
		fmt.Fprintf(&b, "%d %s to insert in %d %s (%d in place already). Nothing was written: run again with --write.\n", inserted, plural(inserted, "marker", "markers"), files, plural(files, "file", "files"), present)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// planCommand is the plan command that shows what the new policies would
// bump: with -c when plan would not find the config from here.
// With the Flux objects of --flux that the config does not name in
// flux.paths: the markers may name their policies, which plan would not
// know without them (fluxNote, then). With -c only when a config is there
// to read: init writes none when Flux objects define every policy.
func (r *initRun) planCommand() (cmd string, fluxNote bool) {
	cmd = "imagebump plan --repo " + shellWord(r.repo)
	configThere := r.configData != nil || r.wroteConfig
	if configThere && filepath.Clean(r.configPath) != "imagebump.yaml" {
		cmd += " -c " + shellWord(r.configPath)
	}
	var named []string // flux.paths, as the config resolves them
	var secrets string
	if r.cfg != nil && r.cfg.Flux != nil {
		named, secrets = r.cfg.Flux.Paths, r.cfg.Flux.Secrets
	}
	for _, p := range r.o.global.Flux {
		// As the loader reads a path once when it is in one of them.
		if !slices.ContainsFunc(named, func(n string) bool { return inside(p, n) }) {
			cmd += " --flux " + shellWord(p)
			fluxNote = true
		}
	}
	if fluxNote && r.o.global.FluxSecrets != "" && !sameFile(secrets, r.o.global.FluxSecrets) {
		cmd += " --flux-secrets " + shellWord(r.o.global.FluxSecrets)
	}
	return cmd, fluxNote
}

// sameFile reports whether paths a and b name the same file or folder.
func sameFile(a, b string) bool {
	sa, err := os.Stat(a)
	if err != nil {
		return false
	}
	sb, err := os.Stat(b)
	return err == nil && os.SameFile(sa, sb)
}

// shellWord quotes s for a POSIX shell when it holds anything but the
// characters paths usually do.
func shellWord(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./:=+@%,") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// writtenConfigText names what was done to the config.
func (r *initRun) writtenConfigText() string {
	switch {
	case r.newConfig == nil, r.o.Write && !r.wroteConfig:
		return "no config entry"
	case r.configData == nil:
		return r.configPath
	}
	return "the new entries of " + r.configPath
}

// printableDiff escapes each line of a diff for the terminal, keeping its
// line breaks.
func printableDiff(d string) string {
	var b strings.Builder
	for _, l := range strings.SplitAfter(d, "\n") {
		if l == "" {
			continue
		}
		body := strings.TrimRight(l, "\r\n")
		b.WriteString(printable.String(body))
		b.WriteString(l[len(body):])
	}
	return b.String()
}

// inUse lists the tags in use.
func inUse(tags []string) string {
	out := make([]string, len(tags))
	for i, t := range tags {
		out[i] = t
		if t == "" {
			out[i] = "(no tag)"
		}
	}
	return strings.Join(out, ", ")
}

// report builds the JSON document.
func (r *initRun) report(written bool) InitReport {
	out := InitReport{
		Version: 1, Repo: r.repo, Config: r.configPath, ConfigExists: r.configData != nil, Written: written,
		ConfigText: r.added(),
		Files:      InitFiles{Scanned: r.inv.FilesScanned, ChartTemplates: r.inv.ChartTemplates, Changed: []string{}},
		Policies:   []InitPolicy{}, Untracked: []InitRef{}, Markers: []InitMarker{}, Problems: []report.Problem{},
	}
	if r.newConfig != nil && (!r.o.Write || r.wroteConfig) {
		if rel, ok := r.configRel(); ok {
			out.Files.Changed = append(out.Files.Changed, rel)
		}
	}
	for _, p := range r.props {
		ip := InitPolicy{
			Name: p.Policy, Repository: p.Repository, Kind: string(p.Kind), Rule: initRule(p.Spec),
			Existing: p.Existing, Choice: p.Choice, Reason: p.Reason, TagsInUse: append([]string{}, p.TagsInUse...),
			RegistryTags: p.RegistryTags, Latest: p.Latest, Notes: append([]string{}, p.Notes...),
			Uses: []InitRef{}, Unmarked: []InitRef{},
		}
		if p.RegistryErr != nil {
			ip.Error = p.RegistryErr.Error()
		}
		ip.NotApplied = p.Unapplied
		for _, u := range p.Uses {
			ip.Uses = append(ip.Uses, InitRef{File: u.File, Line: u.Line, Source: u.Source, Path: u.Path, Value: u.Values[0].Value})
		}
		for _, u := range p.Unmarked {
			ip.Unmarked = append(ip.Unmarked, InitRef(u))
		}
		out.Policies = append(out.Policies, ip)
	}
	for _, u := range r.inv.Untracked {
		out.Untracked = append(out.Untracked, InitRef(u))
	}
	out.Notes = append(out.Notes, r.inv.Notes...)
	for _, fm := range r.marks {
		why, failed := r.failedFiles[fm.File]
		if fm.Changed() && !failed {
			out.Files.Changed = append(out.Files.Changed, fm.File)
		}
		for _, m := range fm.Marks {
			im := InitMarker{File: m.File, Line: m.EditorLine, Marker: setters.FormatMarker(m.Policy, m.Field), Value: m.Value, Status: m.Status.String()}
			if m.Err != nil {
				im.Reason = m.Err.Error()
			}
			if failed && m.Status == setters.Inserted {
				im.Status, im.Reason = "failed", "the file could not be written: "+why
			}
			out.Markers = append(out.Markers, im)
		}
	}
	slices.Sort(out.Files.Changed)
	out.Problems = append(out.Problems, r.problems...)
	return out
}

// initRule writes a spec as the config does.
func initRule(s policy.Spec) InitRule {
	r := InitRule{SemVer: s.SemVer, Alphabetical: s.Alphabetical, Numerical: s.Numerical}
	if s.FilterPattern != "" {
		r.FilterTags = &InitFilterTags{Pattern: s.FilterPattern, Extract: s.FilterExtract}
	}
	if s.Digest == policy.DigestAlways || s.Digest == policy.DigestIfNotPresent {
		r.Digest = string(s.Digest)
	}
	return r
}

// insideRepo refuses path, in repo, when it is a symbolic link that leads
// outside repo; a path that does not exist passes.
func insideRepo(repo, path string) error {
	st, err := os.Lstat(path)
	if err != nil || st.Mode()&os.ModeSymlink == 0 {
		return nil
	}
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return nil // a dangling link: reading it fails as a missing file would
	}
	top, err := filepath.EvalSymlinks(repo)
	if err != nil {
		return nil
	}
	if rel, err := filepath.Rel(top, real); err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return fmt.Errorf("%s is a symbolic link to %s, outside the repository: init neither reads nor extends it, as no scan follows a link out; to extend that file, name it with -c", path, real)
	}
	return nil
}
