package commands

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/Masterminds/semver/v3"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/spf13/cobra"

	"github.com/imagebump/imagebump/config"
	"github.com/imagebump/imagebump/cycle"
	"github.com/imagebump/imagebump/flux"
	"github.com/imagebump/imagebump/internal/printable"
	"github.com/imagebump/imagebump/policy"
	"github.com/imagebump/imagebump/registry"
	"github.com/imagebump/imagebump/report"
)

// TagsOptions are the inputs of `imagebump tags`.
type TagsOptions struct {
	global *globalOptions

	// Target is a repository (ghcr.io/acme/app) or a policy name from the
	// config (apps:app or app).
	Target string

	SemVer        string
	Alphabetical  string
	Numerical     string
	FilterPattern string
	FilterExtract string
	Exclude       []string
	Digest        bool
	Platform      string
	Output        string
	// Insecure allows plain HTTP to the repository's registry, as
	// `insecure: true` in the config would.
	Insecure bool
	// Explain walks one tag through every step: valid, excluded,
	// filtered, range, signature, age, hold.
	Explain string
}

// NewCmdTags builds `imagebump tags`. runF replaces the run function in
// flag-parsing tests; nil means runTags.
func NewCmdTags(g *globalOptions, stdout io.Writer, runF func(context.Context, *TagsOptions, io.Writer) error) *cobra.Command {
	o := &TagsOptions{global: g}
	cmd := &cobra.Command{
		Use:   "tags REPOSITORY|POLICY",
		Short: "List a repository's tags and show what a policy would pick",
		Long: `List every tag of a repository and show which tags a policy excludes, filters
out or skips, and which tag it picks.

With a policy name from the config (apps:web, or web for default:web) the
policy and the registry settings come from the config; policy flags given on
the command line replace the config's. With a repository, the policy comes
from the flags; with no policy flag the tags are only listed.`,
		Example: `  imagebump tags ghcr.io/acme/app --semver '>=1.0.0 <2'
  imagebump tags quay.io/minio/minio --filter-pattern '^RELEASE\.(?P<ts>.*)Z$' --filter-extract '$ts' --alphabetical asc
  imagebump tags apps:web -c imagebump.yaml -o json --digest`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Target = args[0]
			if o.Output != "text" && o.Output != "json" {
				return usageError(fmt.Errorf("-o %q: want text or json", o.Output))
			}
			if o.Platform != "" && !o.Digest {
				return usageError(errors.New("--platform says which digest --digest resolves: give --digest too"))
			}
			if runF != nil {
				return runF(cmd.Context(), o, stdout)
			}
			return runTags(cmd.Context(), o, stdout)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.SemVer, "semver", "", "semver range, such as '>=1.0.0 <2'")
	f.StringVar(&o.Alphabetical, "alphabetical", "", "alphabetical order: asc or desc")
	f.StringVar(&o.Numerical, "numerical", "", "numerical order: asc or desc")
	f.StringVar(&o.FilterPattern, "filter-pattern", "", "RE2 pattern tags must match (unanchored)")
	f.StringVar(&o.FilterExtract, "filter-extract", "", "template the policy orders by, such as '$ts'")
	f.StringArrayVar(&o.Exclude, "exclude", nil, "RE2 pattern of tags to drop (repeatable)")
	f.BoolVar(&o.Digest, "digest", false, "also resolve the digest of the picked tag (needs a policy: a rule flag, or a policy name)")
	f.StringVar(&o.Platform, "platform", "", "with --digest: resolve this platform's digest (os/arch[/variant]) instead of the index digest")
	f.StringVarP(&o.Output, "output", "o", "text", "output format: text or json")
	f.StringVar(&o.Explain, "explain", "", "walk this tag through every step (valid, excluded, filtered, range, rank, age, signature, hold) and say where it stops")
	f.BoolVar(&o.Insecure, "insecure", false, "allow plain HTTP to the registry (a local or test registry without TLS)")
	cmd.MarkFlagsMutuallyExclusive("semver", "alphabetical", "numerical")
	return cmd
}

// TagsReport is the JSON document `imagebump tags -o json` prints.
type TagsReport struct {
	Repository string   `json:"repository"`
	Policy     string   `json:"policy,omitempty"`
	Rule       string   `json:"rule,omitempty"`
	Tags       []string `json:"tags"`
	Excluded   []string `json:"excluded"`
	Filtered   []string `json:"filtered"`
	Skipped    []string `json:"skipped"`
	// Invalid are the tags that break the OCI tag grammar; they are never
	// picked, whatever the policy.
	Invalid    []string `json:"invalid"`
	Candidates []string `json:"candidates"`
	Latest     string   `json:"latest"`
	Digest     string   `json:"digest,omitempty"`
	Summary    string   `json:"summary,omitempty"`
	// Note says what was made of the argument: a tag or digest given with
	// the repository is dropped, as every tag is listed.
	Note string `json:"note,omitempty"`
	// HeldBack are the tags, better by the rule than Latest, that a gate
	// of the config's policy (verify, minAge) held back.
	HeldBack []report.HeldBack `json:"heldBack,omitempty"`
	// Held is the config's policy's active hold: its markers stay put.
	Held *report.Hold `json:"held,omitempty"`
	// Explain walks the tag that --explain names through every step.
	Explain  []ExplainStep `json:"explain,omitempty"`
	Warnings []string      `json:"warnings,omitempty"`
	// Error says why the command failed: the tags could not be listed, a
	// gate could not be checked, the digest not resolved (exit 1); or the
	// config, the argument or the rule was refused (exit 64), the other
	// fields then empty.
	Error string `json:"error,omitempty"`
}

func runTags(ctx context.Context, o *TagsOptions, stdout io.Writer) error {
	// Refused before asking the registry (the config, the argument, the
	// rule).
	return jsonOnFailure(ctx, listTags(ctx, o, stdout), o.Output, true, stdout, func(msg string, _ error) error {
		rep := TagsReport{Error: msg}
		if strings.Contains(o.Target, ":") && !strings.Contains(o.Target, "/") {
			rep.Policy = o.Target // NAMESPACE:NAME, a policy's name
		} else {
			rep.Repository = o.Target
		}
		return writeTags(stdout, o.Output, rep)
	})
}

// listTags is tags: the listing, the pick, and the report.
func listTags(ctx context.Context, o *TagsOptions, stdout io.Writer) error {
	cfg, err := loadConfigIfAny(o.global)
	if err != nil {
		return err
	}

	rep := TagsReport{}
	var spec policy.Spec
	hasPolicy := false
	platform := o.Platform
	img, fromConfig := lookupImage(cfg, o.Target)
	if fromConfig {
		rep.Repository = img.Repository
		rep.Policy = img.Name
		spec = img.Spec()
		hasPolicy = true
		if platform == "" {
			platform = img.Platform
		}
	} else {
		if ns, _, ok := strings.Cut(o.Target, ":"); ok && cfg != nil && !strings.ContainsAny(o.Target, "/@") && hasNamespace(cfg, ns) {
			// apps:wbe, a policy's name mistyped, would list the tags of
			// docker.io/library/apps; redis:7.2 may mean that repository.
			if near := didYouMean(cfg, o.Target); near != "" {
				return usageError(fmt.Errorf("%q is no image policy in %s%s; to list a repository's tags, give it with its registry (for Docker Hub, docker.io/library/%s)",
					o.Target, configName(o.global, cfg), near, ns))
			}
		}
		if err := config.CheckUserInfo(o.Target); err != nil {
			return usageError(fmt.Errorf("the repository given %w", err))
		}
		repo, dropped := splitReference(o.Target)
		if err := config.CheckRepository(repo); err != nil {
			msg := fmt.Errorf("%q is neither a repository nor a policy in %s: %w", o.Target, configName(o.global, cfg), err)
			return usageError(msg)
		}
		rep.Repository = repo
		if dropped != "" {
			rep.Note = fmt.Sprintf("%s was dropped: tags lists every tag of the repository %s", dropped, repo)
		}
	}
	if o.SemVer != "" || o.Alphabetical != "" || o.Numerical != "" {
		spec.SemVer, spec.Alphabetical, spec.Numerical = o.SemVer, o.Alphabetical, o.Numerical
		hasPolicy = true
	}
	if o.FilterPattern != "" || o.FilterExtract != "" {
		spec.FilterPattern, spec.FilterExtract = o.FilterPattern, o.FilterExtract
	}
	spec.Exclude = append(spec.Exclude, o.Exclude...)
	if !hasPolicy && (spec.FilterPattern != "" || spec.FilterExtract != "" || len(o.Exclude) > 0) {
		// Filters without an ordering still show what they keep; order
		// alphabetically so the output says which tag would sort last.
		spec.Alphabetical = "asc"
		hasPolicy = true
	}
	if o.Digest && !hasPolicy {
		return usageError(errors.New("--digest resolves the digest of the tag a policy picks: give a rule (--semver, --alphabetical or --numerical), or a policy name from the config"))
	}
	var pol *policy.Policy
	if hasPolicy {
		pol, err = policy.New(spec)
		if err != nil {
			return usageError(fmt.Errorf("policy for %s: %w", rep.Repository, err))
		}
		rep.Rule = describeSpec(spec)
	}

	ropts := cycle.RegistryOptions(cfg, o.global.logger)
	if o.Insecure {
		ropts = withInsecure(ropts, rep.Repository)
	}
	client, err := registry.New(ropts)
	if err != nil {
		return usageError(err)
	}
	tags, err := client.Tags(ctx, rep.Repository)
	if err != nil {
		if host, ok := registry.PlainHTTPRefused(err); ok && !o.Insecure {
			err = fmt.Errorf("%w (or, for tags alone, pass --insecure to allow plain HTTP to %s)", err, host)
		}
		if !fromConfig {
			if hint := readAsRepository(cfg, o.Target, rep.Repository, configName(o.global, cfg)); hint != "" {
				err = fmt.Errorf("%w (%s)", err, hint)
			}
		}
		// A JSON reader gets the document, with the error, too.
		if o.Output == "json" {
			rep.Error = err.Error()
			if werr := writeTags(stdout, o.Output, rep); werr != nil {
				return werr
			}
		}
		return failure(err)
	}
	sort.Strings(tags)
	rep.Tags = tags

	var gateErr error // a gate could not be checked
	rulePick := ""    // the rule's pick, before any gate
	if pol != nil {
		res, err := pol.SelectContext(ctx, tags)
		if err != nil {
			return failure(err)
		}
		rep.Excluded, rep.Filtered, rep.Skipped, rep.Invalid = res.Excluded, res.Filtered, res.Skipped, res.Invalid
		rep.Candidates, rep.Latest, rep.Warnings = res.Candidates, res.Latest, res.Warnings
		rep.Summary = res.Summary()
		rulePick = res.Latest
		if fromConfig && (img.MinAge > 0 || img.Verify != nil) && res.Latest != "" {
			// The config's gates hold back tags the rule would pick.
			gates := cycle.NewGates(nil, o.global.logger)
			picked, held, err := gates.Pick(ctx, client, img.WithPolicy(pol), res, tags)
			for _, h := range held {
				rep.HeldBack = append(rep.HeldBack, report.HeldBack{Tag: h.Tag, Digest: h.Digest, Gate: string(h.Gate), Detail: h.Detail, Until: report.Time(h.Until)})
			}
			switch {
			case err != nil:
				// As plan and run do: no tag is picked when a gate could
				// not be checked.
				gateErr = err
				rep.Latest = ""
				rep.Summary = fmt.Sprintf("no tag picked: %v", err)
			case picked.Latest == "":
				rep.Latest = ""
				rep.Summary = fmt.Sprintf("no tag matches: %s (%s)", cycle.HeldBackSummary(len(held)), cycle.DescribeHeld(held))
			default:
				rep.Latest = picked.Latest
				res.Latest = picked.Latest
				rep.Summary = res.Summary()
				if len(held) > 0 {
					rep.Summary += fmt.Sprintf("; %d better %s held back", len(held), plural(len(held), "tag", "tags"))
				}
			}
		}
		if fromConfig && img.Hold.Active(time.Now()) {
			rep.Held = &report.Hold{Reason: img.Hold.Reason, Until: report.Time(img.Hold.UntilTime())}
		}
	}
	if o.Explain != "" {
		var gated *config.Image
		if fromConfig {
			gated = img.WithPolicy(pol)
		}
		rep.Explain = explainTag(ctx, o.Explain, rep, spec, rulePick, gated, client, o.global.logger)
	}
	if gateErr != nil {
		rep.Error = gateErr.Error()
		if err := writeTags(stdout, o.Output, rep); err != nil {
			return err
		}
		return failure(gateErr)
	}
	if o.Digest {
		tag := rep.Latest
		if pol == nil && len(tags) > 0 {
			tag = ""
		}
		if tag != "" {
			d, err := client.Digest(ctx, rep.Repository, tag, platform)
			if err != nil {
				rep.Error = err.Error()
				if werr := writeTags(stdout, o.Output, rep); werr != nil {
					return werr
				}
				return failure(err)
			}
			rep.Digest = d
		}
	}
	if pol != nil && rep.Latest == "" {
		rep.Error = rep.Summary
	}
	if err := writeTags(stdout, o.Output, rep); err != nil {
		return err
	}
	if pol != nil && rep.Latest == "" {
		return failure(errors.New(rep.Summary))
	}
	return nil
}

func writeTags(w io.Writer, format string, rep TagsReport) error {
	if format == "json" {
		for _, s := range []*[]string{&rep.Tags, &rep.Excluded, &rep.Filtered, &rep.Skipped, &rep.Invalid, &rep.Candidates} {
			if *s == nil {
				*s = []string{}
			}
		}
		return encodeJSON(w, rep)
	}
	status := map[string]string{}
	for _, t := range rep.Excluded {
		status[t] = "excluded"
	}
	for _, t := range rep.Filtered {
		status[t] = "filtered out"
	}
	for _, t := range rep.Skipped {
		status[t] = "skipped"
	}
	for _, t := range rep.Invalid {
		status[t] = "invalid (not an OCI tag; never picked)"
	}
	for _, t := range rep.Candidates {
		status[t] = "candidate"
	}
	for _, h := range rep.HeldBack {
		status[h.Tag] = "held back: " + h.Gate
	}
	if rep.Latest != "" {
		status[rep.Latest] = "LATEST"
	}
	var b strings.Builder
	if rep.Note != "" {
		fmt.Fprintf(&b, "note:       %s\n", printable.String(rep.Note))
	}
	fmt.Fprintf(&b, "repository: %s\n", printable.String(rep.Repository))
	if rep.Policy != "" {
		fmt.Fprintf(&b, "policy:     %s\n", printable.String(rep.Policy))
	}
	if rep.Rule != "" {
		fmt.Fprintf(&b, "rule:       %s\n", printable.String(rep.Rule))
	}
	fmt.Fprintf(&b, "tags:       %d\n\n", len(rep.Tags))
	tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TAG\tSTATUS")
	for _, t := range rep.Tags {
		s := status[t]
		if s == "" && rep.Rule == "" {
			s = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\n", printable.String(t), s)
	}
	tw.Flush()
	for _, w := range rep.Warnings {
		fmt.Fprintf(&b, "warning: %s\n", printable.String(w))
	}
	if rep.Summary != "" {
		fmt.Fprintf(&b, "\n%s\n", printable.Message(rep.Summary))
	}
	if rep.Latest != "" {
		fmt.Fprintf(&b, "latest: %s\n", printable.String(rep.Latest))
	}
	if rep.Digest != "" {
		fmt.Fprintf(&b, "digest: %s\n", printable.String(rep.Digest))
	}
	for _, h := range rep.HeldBack {
		fmt.Fprintf(&b, "held back: %s (%s): %s\n", printable.String(h.Tag), h.Gate, printable.String(h.Detail))
	}
	if rep.Held != nil {
		until := "until released"
		if rep.Held.Until != "" {
			until = "until " + rep.Held.Until
		}
		fmt.Fprintf(&b, "held: the policy's markers stay where they are, %s: %s\n", until, printable.String(rep.Held.Reason))
	}
	if len(rep.Explain) > 0 {
		b.WriteString("\nexplain:\n")
		etw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
		for _, e := range rep.Explain {
			fmt.Fprintf(etw, "  %s\t%s\t%s\n", e.Step, e.Result, printable.String(e.Detail))
		}
		etw.Flush()
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// describeSpec renders a policy spec the way a user would write it.
func describeSpec(s policy.Spec) string {
	var parts []string
	switch {
	case s.SemVer != "":
		parts = append(parts, fmt.Sprintf("semver %q", s.SemVer))
	case s.Alphabetical != "":
		parts = append(parts, "alphabetical "+s.Alphabetical)
	case s.Numerical != "":
		parts = append(parts, "numerical "+s.Numerical)
	}
	if s.FilterPattern != "" {
		parts = append(parts, fmt.Sprintf("pattern %q", s.FilterPattern))
	}
	if s.FilterExtract != "" {
		parts = append(parts, fmt.Sprintf("extract %q", s.FilterExtract))
	}
	for _, e := range s.Exclude {
		parts = append(parts, fmt.Sprintf("exclude %q", e))
	}
	return strings.Join(parts, ", ")
}

func lookupImage(cfg *config.Config, name string) (*config.Image, bool) {
	if cfg == nil {
		return nil, false
	}
	return cfg.Image(name)
}

// hasNamespace reports whether a policy of cfg is in namespace ns.
func hasNamespace(cfg *config.Config, ns string) bool {
	for _, im := range cfg.Images {
		if n, _, ok := strings.Cut(im.Name, ":"); ok && n == ns {
			return true
		}
	}
	return false
}

// didYouMean names the policy of cfg nearest to name, as markers naming
// no policy get it (flux.SuggestPolicy), in parentheses after a space;
// "" when none is near.
func didYouMean(cfg *config.Config, name string) string {
	names := make([]string, len(cfg.Images))
	for i, im := range cfg.Images {
		names[i] = im.Name
	}
	if hint := flux.SuggestPolicy(name, names); hint != "" {
		return " (" + hint + ")"
	}
	return ""
}

func configName(g *globalOptions, cfg *config.Config) string {
	if cfg == nil {
		return "the config (none loaded)"
	}
	return g.ConfigFile
}

// splitReference takes a tag (:1.2) or digest (@sha256:...) off an image
// reference and says what it took off, for a user who pasted the whole
// reference.
func splitReference(ref string) (repository, dropped string) {
	repository = ref
	if i := strings.Index(repository, "@"); i >= 0 {
		repository, dropped = repository[:i], "the digest "+repository[i+1:]
	}
	if i := strings.LastIndex(repository, ":"); i > strings.LastIndex(repository, "/") {
		tag := repository[i+1:]
		repository = repository[:i]
		if dropped == "" {
			dropped = "the tag " + tag
		} else {
			dropped = "the tag " + tag + " and " + dropped
		}
	}
	return repository, dropped
}

// withInsecure returns opts with plain HTTP allowed to repository's
// registry.
func withInsecure(opts registry.Options, repository string) registry.Options {
	r, err := name.NewRepository(repository, name.Insecure)
	if err != nil {
		return opts
	}
	host := r.RegistryStr()
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

// ExplainStep is one step of `tags --explain TAG`.
type ExplainStep struct {
	// Step is valid, excluded, filtered, range, rank, signature, age or
	// hold.
	Step string `json:"step"`
	// Result is pass, stop or skip (a step that does not apply).
	Result string `json:"result"`
	Detail string `json:"detail,omitempty"`
}

// explainTag walks tag through the steps that decide whether it is picked,
// from the selection already made (rep, whose Latest is the pick past the
// gates, and rulePick, the rule's own) and, for a config policy, its
// gates (im, nil without a config policy).
func explainTag(ctx context.Context, tag string, rep TagsReport, spec policy.Spec, rulePick string, im *config.Image, reg cycle.GateRegistry, logger *slog.Logger) []ExplainStep {
	var out []ExplainStep
	add := func(step, result, detail string) {
		out = append(out, ExplainStep{Step: step, Result: result, Detail: detail})
	}
	if !slices.Contains(rep.Tags, tag) {
		add("listed", "stop", "the registry does not list this tag")
		return out
	}
	in := func(list []string) bool { return slices.Contains(list, tag) }
	switch {
	case !policy.ValidTag(tag) || in(rep.Invalid):
		add("valid", "stop", "not an OCI tag ([A-Za-z0-9_][A-Za-z0-9._-]{0,127}): never picked")
		return out
	default:
		add("valid", "pass", "an OCI tag")
	}
	if rep.Rule == "" {
		add("rule", "skip", "no policy: give one, or a policy name from the config")
		return out
	}
	if in(rep.Excluded) {
		add("excluded", "stop", "matches an exclusion (the defaults .sig, .att, .sbom, or exclude)")
		return out
	}
	add("excluded", "pass", "matches no exclusion")
	if in(rep.Filtered) {
		add("filtered", "stop", "does not match filterTags.pattern")
		return out
	}
	if spec.FilterPattern == "" {
		add("filtered", "pass", "no filterTags")
	} else {
		add("filtered", "pass", "matches filterTags.pattern")
	}
	if in(rep.Skipped) {
		// A version the range leaves out is not one the rule cannot
		// order.
		if v, err := semver.NewVersion(tag); err == nil && spec.SemVer != "" && spec.FilterExtract == "" {
			// A range without a prerelease in it admits none, whatever
			// the version's numbers: say so, where "outside" misleads.
			if c, err := semver.NewConstraint(spec.SemVer); err == nil && v.Prerelease() != "" {
				if core, err := v.SetPrerelease(""); err == nil && c.Check(&core) {
					add("range", "stop", fmt.Sprintf("a prerelease, which the range %q does not admit: a range admits prereleases only when it names one, as >=1.0.0-0 does", spec.SemVer))
					return out
				}
			}
			add("range", "stop", fmt.Sprintf("a version, outside the range %q", spec.SemVer))
			return out
		}
		add("range", "stop", "the rule cannot order it: "+rep.Rule)
		return out
	}
	add("range", "pass", rep.Rule)
	held := map[string]report.HeldBack{}
	for _, h := range rep.HeldBack {
		held[h.Tag] = h
	}
	switch h, ok := held[tag]; {
	case rep.Latest != "" && tag == rep.Latest:
		add("rank", "pass", "the best candidate that passes the gates")
	case ok && rep.Latest != "":
		add("rank", "pass", fmt.Sprintf("better than the pick %q, but held back: %s", rep.Latest, h.Gate))
	case ok:
		add("rank", "pass", "ranked high, but held back: "+string(h.Gate)+"; no candidate passes the gates")
	case tag == rulePick:
		add("rank", "pass", "the rule's pick; the gates decide whether it is picked")
	default:
		above := rep.Latest
		if above == "" {
			above = rulePick
		}
		add("rank", "stop", "a candidate, but the rule ranks "+above+" above it")
	}
	if im == nil {
		add("age", "skip", "no minAge: in a config policy")
		add("signature", "skip", "no verify: in a config policy")
		add("hold", "skip", "")
		return out
	}
	gates := cycle.NewGates(nil, logger)
	if im.Verify == nil && im.MinAge == 0 {
		add("age", "skip", "the policy has no minAge")
		add("signature", "skip", "the policy has no verify")
	} else {
		hb, err := gates.Check(ctx, reg, im, tag)
		switch {
		case err != nil:
			add("gates", "stop", "could not be checked: "+err.Error())
			return out // the walk ends at its first stop
		case hb == nil:
			if im.MinAge > 0 {
				add("age", "pass", "at least "+im.MinAge.String()+" old")
			}
			if im.Verify != nil {
				add("signature", "pass", "a valid signature")
			}
		case hb.Gate == cycle.GateAge:
			add("age", "stop", hb.Detail)
			return out
		default:
			if im.MinAge > 0 {
				add("age", "pass", "at least "+im.MinAge.String()+" old")
			}
			add("signature", "stop", string(hb.Gate)+": "+hb.Detail)
			return out
		}
	}
	if im.Hold.Active(time.Now()) {
		add("hold", "stop", "the policy is held ("+im.Hold.Reason+"): its markers stay where they are")
	} else {
		add("hold", "pass", "not held")
	}
	return out
}

// readAsRepository says, for an argument that names a namespace of the
// config's policies but no policy (apps:nope, far from every name), that
// it was read as a repository, and names that namespace's policies; "" for
// any other argument. A listing that then fails is most likely a policy's
// name mistyped.
func readAsRepository(cfg *config.Config, arg, repo, cfgName string) string {
	if strings.ContainsAny(arg, "/@") {
		return ""
	}
	if cfg == nil {
		if _, _, ok := strings.Cut(arg, ":"); ok {
			// apps:web with no config: a policy's name, read as Docker
			// Hub's repository apps and its tag web.
			return fmt.Sprintf("no config was loaded, so %q was read as the Docker Hub repository %s; if it names a policy, pass -c FILE", arg, repo)
		}
		return ""
	}
	ns, _, ok := strings.Cut(arg, ":")
	if !ok {
		// minoi, a policy of namespace default mistyped, went to
		// Docker Hub.
		if near := didYouMean(cfg, config.NormalizeName(arg)); near != "" {
			return fmt.Sprintf("%q is no image policy in %s, so it was read as the repository %s%s", arg, cfgName, repo, near)
		}
		return ""
	}
	if !hasNamespace(cfg, ns) {
		return ""
	}
	return fmt.Sprintf("%q is no image policy in %s, so it was read as the repository %s; the policies of namespace %s: %s",
		arg, cfgName, repo, ns, strings.Join(namespacePolicies(cfg, ns), ", "))
}

// namespacePolicies names the config's image policies in namespace ns,
// at most 10.
func namespacePolicies(cfg *config.Config, ns string) []string {
	var out []string
	for _, im := range cfg.Images {
		if strings.HasPrefix(im.Name, ns+":") {
			if len(out) == 10 {
				return append(out, "...")
			}
			out = append(out, im.Name)
		}
	}
	return out
}
