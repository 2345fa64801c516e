package commands

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/spf13/cobra"

	"github.com/imagebump/imagebump/config"
	"github.com/imagebump/imagebump/cycle"
	"github.com/imagebump/imagebump/internal/printable"
	"github.com/imagebump/imagebump/policy"
	"github.com/imagebump/imagebump/registry"
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
	f.BoolVar(&o.Digest, "digest", false, "also resolve the digest of the picked tag")
	f.StringVar(&o.Platform, "platform", "", "resolve this platform's digest (os/arch[/variant]) instead of the index digest")
	f.StringVarP(&o.Output, "output", "o", "text", "output format: text or json")
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
	Note     string   `json:"note,omitempty"`
	Warnings []string `json:"warnings,omitempty"`
}

func runTags(ctx context.Context, o *TagsOptions, stdout io.Writer) error {
	cfg, err := loadConfigIfAny(o.global)
	if err != nil {
		return err
	}

	rep := TagsReport{}
	var spec policy.Spec
	hasPolicy := false
	platform := o.Platform
	if img, ok := lookupImage(cfg, o.Target); ok {
		rep.Repository = img.Repository
		rep.Policy = img.Name
		spec = img.Spec()
		hasPolicy = true
		if platform == "" {
			platform = img.Platform
		}
	} else {
		repo, dropped := splitReference(o.Target)
		if _, err := name.NewRepository(repo); err != nil {
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
		return failure(err)
	}
	sort.Strings(tags)
	rep.Tags = tags

	if pol != nil {
		res, err := pol.SelectContext(ctx, tags)
		if err != nil {
			return failure(err)
		}
		rep.Excluded, rep.Filtered, rep.Skipped, rep.Invalid = res.Excluded, res.Filtered, res.Skipped, res.Invalid
		rep.Candidates, rep.Latest, rep.Warnings = res.Candidates, res.Latest, res.Warnings
		rep.Summary = res.Summary()
	}
	if o.Digest {
		tag := rep.Latest
		if pol == nil && len(tags) > 0 {
			tag = ""
		}
		if tag != "" {
			d, err := client.Digest(ctx, rep.Repository, tag, platform)
			if err != nil {
				if werr := writeTags(stdout, o.Output, rep); werr != nil {
					return werr
				}
				return failure(err)
			}
			rep.Digest = d
		}
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
		fmt.Fprintf(&b, "\n%s\n", printable.String(rep.Summary))
	}
	if rep.Latest != "" {
		fmt.Fprintf(&b, "latest: %s\n", printable.String(rep.Latest))
	}
	if rep.Digest != "" {
		fmt.Fprintf(&b, "digest: %s\n", printable.String(rep.Digest))
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
