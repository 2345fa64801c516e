package flux

import (
	"bytes"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"gopkg.in/yaml.v3"

	"github.com/imagebump/imagebump/config"
	"github.com/imagebump/imagebump/internal/fluxmsg"
	"github.com/imagebump/imagebump/policy"
)

// Exported is a native config written as Flux objects.
type Exported struct {
	// YAML holds the objects, one document each, in the current API
	// versions (an automation whose Flux message is of v1beta2 stays in
	// v1beta2, so that its template keeps .Updated).
	YAML []byte
	// Secrets maps the Secrets the objects name to the files the config
	// named: the Secrets to create in the cluster (kubectl create secret
	// generic NAME --from-file=KEY=FILE), and a mapping LoadSecrets-style
	// for reading the objects back.
	Secrets *Secrets
	// Notes say what the objects cannot express (Object names the native
	// entry: Kind is "image", "registry" or "target").
	Notes []Note
}

// exportInterval is the interval of objects whose native counterpart has
// none: ImageRepository, GitRepository.
const exportInterval = "5m"

// targetLabelPrefix prefixes the label an ImagePolicy gets for each target
// that applies it, when the target applies only some of its namespace's.
const targetLabelPrefix = "target.imagebump.io/"

// Export writes c, a loaded config, as Flux objects: an ImageRepository
// and an ImagePolicy per image, a GitRepository per target and an
// ImageUpdateAutomation per target, namespace of the policies it applies,
// and path. What Flux cannot express (pull requests, minimum age,
// verification, platform digests, rate limits, native message templates,
// cron schedules) is a note, never dropped silently.
func Export(c *config.Config) (*Exported, error) {
	e := &exporter{c: c, out: &Exported{Secrets: &Secrets{Keys: map[string]map[string]string{}}}}
	e.registries()
	e.targets()
	e.images()
	for _, s := range e.gits {
		e.docs = append(e.docs, s)
	}
	e.docs = append(e.docs, e.autos...)
	var b bytes.Buffer
	for i, d := range e.docs {
		if i > 0 {
			b.WriteString("---\n")
		}
		enc := yaml.NewEncoder(&b)
		enc.SetIndent(2)
		if err := enc.Encode(d); err != nil {
			return nil, fmt.Errorf("writing Flux objects: %w", err)
		}
		enc.Close()
	}
	e.out.YAML = b.Bytes()
	return e.out, nil
}

type exporter struct {
	c     *config.Config
	out   *Exported
	docs  []*yaml.Node
	gits  []*yaml.Node
	autos []*yaml.Node
	// registry settings by host, and their Secret names.
	hosts map[string]config.Registry
	// labels holds the target labels of each image.
	labels map[string][]string
}

// note records a setting Flux cannot express, once: a target's notes come
// from each automation written for it (one per namespace and path).
func (e *exporter) note(level Level, kind, name string, line int, format string, args ...any) {
	n := Note{Level: level, Object: Object{Kind: kind, Name: name, File: e.c.File, Line: line}, Line: line, Msg: fmt.Sprintf(format, args...)}
	if !slices.Contains(e.out.Notes, n) {
		e.out.Notes = append(e.out.Notes, n)
	}
}

func (e *exporter) secret(ns, name, key, file string) {
	k := ns + "/" + name
	if e.out.Secrets.Keys[k] == nil {
		e.out.Secrets.Keys[k] = map[string]string{}
	}
	e.out.Secrets.Keys[k][key] = file
}

var nameUnsafe = regexp.MustCompile(`[^a-z0-9.-]+`)

func dnsName(s string) string {
	return strings.Trim(nameUnsafe.ReplaceAllString(strings.ToLower(s), "-"), "-.")
}

func (e *exporter) registries() {
	e.hosts = map[string]config.Registry{}
	for _, r := range e.c.Registries {
		reg, err := name.NewRegistry(r.Host)
		host := r.Host
		if err == nil {
			host = reg.RegistryStr()
		}
		e.hosts[host] = r
		if r.Auth != nil && r.Auth.DockerConfig == "" {
			e.note(Warning, "registry", r.Host, r.Line, "credentials from files (usernameFile, tokenFile) have no Flux form: an ImageRepository's Secret is a Docker config; write one for %s", r.Host)
		}
		if r.RateLimit != nil || r.Concurrency != 0 {
			e.note(Info, "registry", r.Host, r.Line, "rateLimit and concurrency have no Flux form")
		}
		if r.Timeout != 0 || r.Retries != nil || r.MaxPages != 0 || r.MaxTags != 0 || r.RepositoryTimeout != 0 {
			e.note(Info, "registry", r.Host, r.Line, "timeout, retries, maxPages, maxTags and repositoryTimeout have no Flux form (an ImageRepository has only a timeout for its whole scan)")
		}
	}
}

func (e *exporter) images() {
	for _, im := range e.c.Images {
		ns, n, _ := strings.Cut(im.Name, ":")
		repoSpec := mapping("image", im.Repository, "interval", exportInterval)
		switch {
		case im.ExcludeReplacesDefaults && len(im.Exclude) > 0:
			repoSpec.Content = append(repoSpec.Content, scalar("exclusionList"), list(im.Exclude...))
		case im.ExcludeReplacesDefaults:
			// Flux has no empty list: its default excludes .sig.
			e.note(Warning, "image", im.Name, im.Line, "excludes nothing, which Flux cannot say: its default excludes ^.*\\.sig$")
		default:
			// imagebump's defaults are Flux's and cosign's other
			// attachments: written out, Flux excludes the same tags.
			repoSpec.Content = append(repoSpec.Content, scalar("exclusionList"), list(append(policy.DefaultExclusions(), im.Exclude...)...))
		}
		if r, err := name.NewRepository(im.Repository); err == nil {
			if reg, ok := e.hosts[r.RegistryStr()]; ok {
				if reg.Insecure {
					repoSpec.Content = append(repoSpec.Content, scalar("insecure"), boolNode(true))
				}
				switch reg.Provider {
				case "aws", "gcp", "azure":
					repoSpec.Content = append(repoSpec.Content, scalar("provider"), scalar(reg.Provider))
				case "auto":
					e.note(Warning, "registry", reg.Host, reg.Line, "provider auto has no Flux form: set aws, gcp or azure on the ImageRepository")
				}
				if reg.Auth != nil && reg.Auth.DockerConfig != "" {
					secret := dnsName(r.RegistryStr()) + "-auth"
					repoSpec.Content = append(repoSpec.Content, scalar("secretRef"), mapping("name", secret))
					e.secret(ns, secret, ".dockerconfigjson", reg.Auth.DockerConfig)
				}
				if reg.CAFile != "" {
					secret := dnsName(r.RegistryStr()) + "-ca"
					repoSpec.Content = append(repoSpec.Content, scalar("certSecretRef"), mapping("name", secret))
					e.secret(ns, secret, "ca.crt", reg.CAFile)
				}
			}
		}
		e.docs = append(e.docs, object("image.toolkit.fluxcd.io/v1", KindImageRepository, ns, n, nil, repoSpec))

		var rule *yaml.Node
		switch {
		case im.Rule.SemVer != "":
			rule = mapping("semver", mapping("range", im.Rule.SemVer))
		case im.Rule.Alphabetical != "":
			rule = mapping("alphabetical", mapping("order", im.Rule.Alphabetical))
		default:
			rule = mapping("numerical", mapping("order", im.Rule.Numerical))
		}
		polSpec := mapping("imageRepositoryRef", mapping("name", n), "policy", rule)
		if f := im.FilterTags; f != nil {
			ft := mapping("pattern", f.Pattern)
			if f.Extract != "" {
				ft.Content = append(ft.Content, scalar("extract"), scalar(f.Extract))
			}
			polSpec.Content = append(polSpec.Content, scalar("filterTags"), ft)
		}
		switch im.Digest {
		case policy.DigestAlways:
			// Flux's CRD wants an interval with Always.
			polSpec.Content = append(polSpec.Content, scalar("digestReflectionPolicy"), scalar("Always"), scalar("interval"), scalar("10m"))
		case policy.DigestIfNotPresent:
			polSpec.Content = append(polSpec.Content, scalar("digestReflectionPolicy"), scalar("IfNotPresent"))
		}
		if im.Platform != "" {
			e.note(Warning, "image", im.Name, im.Line, "platform %s has no Flux form: Flux pins the digest of the multi-platform index", im.Platform)
		}
		if im.MinAge != 0 {
			e.note(Warning, "image", im.Name, im.Line, "minAge %s has no Flux form: under Flux a tag is a candidate as soon as it is pushed", im.MinAge)
		}
		if im.Verify != nil {
			e.note(Warning, "image", im.Name, im.Line, "verify has no Flux form in ImagePolicy: under Flux an unsigned tag is a candidate (verify in the cluster with an admission policy instead)")
		}
		if im.Hold != nil {
			// A suspended ImagePolicy keeps its pick: the markers stay.
			polSpec.Content = append(polSpec.Content, scalar("suspend"), &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!bool", Value: "true"})
			if im.Hold.Until != "" {
				e.note(Warning, "image", im.Name, im.Line, "hold (%s) is exported as spec.suspend: true; its reason and its end (until %s) have no Flux form: resume the policy by hand then", im.Hold.Reason, im.Hold.Until)
			} else {
				e.note(Warning, "image", im.Name, im.Line, "hold (%s) is exported as spec.suspend: true; its reason has no Flux form", im.Hold.Reason)
			}
		}
		e.docs = append(e.docs, object("image.toolkit.fluxcd.io/v1", KindImagePolicy, ns, n, e.labels[im.Name], polSpec))
	}
}

func (e *exporter) targets() {
	e.labels = map[string][]string{}
	for _, t := range e.c.Targets() {
		byNS := map[string][]string{}
		for _, im := range e.c.Images {
			if t.Selects(im.Name) {
				ns, _, _ := strings.Cut(im.Name, ":")
				byNS[ns] = append(byNS[ns], im.Name)
			}
		}
		if len(byNS) == 0 {
			e.note(Warning, "target", t.Name, t.Line, "applies no image: no ImageUpdateAutomation is written")
			continue
		}
		namespaces := sortedKeys(byNS)
		if len(namespaces) > 1 {
			e.note(Info, "target", t.Name, t.Line, "applies policies of namespaces %s: a Flux automation applies its own namespace's, so each gets one", strings.Join(namespaces, ", "))
		}
		gitNS := namespaces[0]
		gitName := dnsName(t.Name)
		e.gits = append(e.gits, e.gitRepository(t, gitNS, gitName))
		paths := t.Git.Paths
		if len(paths) == 0 {
			paths = []string{""}
		}
		for _, ns := range namespaces {
			var all int
			for _, im := range e.c.Images {
				if strings.HasPrefix(im.Name, ns+":") {
					all++
				}
			}
			var selector *yaml.Node
			if len(byNS[ns]) < all {
				label := targetLabelPrefix + dnsName(t.Name)
				for _, im := range byNS[ns] {
					e.labels[im] = append(e.labels[im], label)
				}
				selector = mapping("matchLabels", mapping(label, "true"))
			}
			for i, p := range paths {
				name := dnsName(t.Name)
				if len(paths) > 1 {
					name = fmt.Sprintf("%s-%d", name, i+1)
				}
				e.autos = append(e.autos, e.automation(t, ns, name, gitNS, gitName, p, selector))
			}
		}
	}
}

func (e *exporter) gitRepository(t config.Target, ns, name string) *yaml.Node {
	spec := mapping("interval", exportInterval, "url", t.Git.URL)
	if t.Git.Branch != "" {
		spec.Content = append(spec.Content, scalar("ref"), mapping("branch", t.Git.Branch))
	}
	if a := t.Git.Auth; a != nil {
		secret := name + "-git"
		set := func(key, file string) {
			if file != "" {
				e.secret(ns, secret, key, file)
			}
		}
		set("username", a.UsernameFile)
		set("password", a.PasswordFile)
		set("bearerToken", a.TokenFile)
		set("identity", a.SSHKeyFile)
		set("password", a.SSHKeyPassphraseFile)
		set("known_hosts", a.KnownHostsFile)
		if a.InsecureIgnoreHostKey {
			e.note(Warning, "target", t.Name, t.Line, "insecureIgnoreHostKey has no Flux form: give the Secret a known_hosts key")
		}
		if a.TokenFile != "" {
			e.note(Info, "target", t.Name, t.Line, "the token becomes the Secret's bearerToken; forges that want basic authentication (GitHub) need username and password keys instead")
		}
		spec.Content = append(spec.Content, scalar("secretRef"), mapping("name", secret))
	}
	return object("source.toolkit.fluxcd.io/v1", KindGitRepository, ns, name, nil, spec)
}

func (e *exporter) automation(t config.Target, ns, name, gitNS, gitName, path string, selector *yaml.Node) *yaml.Node {
	apiVersion := fluxmsg.APIVersionV1
	source := mapping("kind", KindGitRepository, "name", gitName)
	if gitNS != ns {
		source.Content = append(source.Content, scalar("namespace"), scalar(gitNS))
	}
	interval := exportInterval
	switch s := t.Schedule; {
	case s == "":
	case strings.HasPrefix(s, "@every "):
		interval = strings.TrimPrefix(s, "@every ")
	default:
		if _, err := time.ParseDuration(s); err == nil {
			interval = s
		} else {
			e.note(Warning, "target", t.Name, t.Line, "schedule %q is a cron expression, which Flux does not take: the automation runs every %s", s, interval)
		}
	}
	commit := &yaml.Node{Kind: yaml.MappingNode}
	author := mapping("email", config.DefaultAuthorEmail, "name", config.DefaultAuthorName)
	if c := t.Commit; c != nil {
		author = mapping("email", orDefault(c.Author.Email, config.DefaultAuthorEmail), "name", orDefault(c.Author.Name, config.DefaultAuthorName))
	}
	commit.Content = append(commit.Content, scalar("author"), author)
	if c := t.Commit; c != nil {
		if c.SigningKeyFile != "" {
			secret := name + "-signing"
			e.secret(ns, secret, "git.asc", c.SigningKeyFile)
			if c.SigningPassphraseFile != "" {
				e.secret(ns, secret, "passphrase", c.SigningPassphraseFile)
			}
			commit.Content = append(commit.Content, scalar("signingKey"), mapping("secretRef", mapping("name", secret)))
		}
		if c.MessageTemplate != "" {
			e.note(Warning, "target", t.Name, t.Line, "commit.messageTemplate is written for imagebump's data, which Flux does not give: the automation keeps Flux's default message")
		}
		if fm := c.FluxMessage; fm != nil {
			if fm.APIVersion != "" {
				apiVersion = fm.APIVersion
			}
			if fm.Template != "" {
				commit.Content = append(commit.Content, scalar("messageTemplate"), literal(fm.Template))
			}
			if len(fm.Values) > 0 {
				v := &yaml.Node{Kind: yaml.MappingNode}
				for _, tv := range fm.Values {
					v.Content = append(v.Content, scalar(tv.Name), scalar(tv.Value))
				}
				commit.Content = append(commit.Content, scalar("messageTemplateValues"), v)
			}
		}
	}
	git := mapping("commit", commit)
	if t.Git.Branch != "" {
		git.Content = append([]*yaml.Node{scalar("checkout"), mapping("ref", mapping("branch", t.Git.Branch))}, git.Content...)
	}
	if p := t.Push; p != nil {
		push := &yaml.Node{Kind: yaml.MappingNode}
		if p.Branch != "" {
			push.Content = append(push.Content, scalar("branch"), scalar(p.Branch))
		}
		if p.Refspec != "" {
			push.Content = append(push.Content, scalar("refspec"), scalar(p.Refspec))
		}
		if len(p.Options) > 0 {
			opts := &yaml.Node{Kind: yaml.MappingNode}
			sorted := append([]string(nil), p.Options...)
			sort.Strings(sorted)
			for _, o := range sorted {
				k, v, _ := strings.Cut(o, "=")
				opts.Content = append(opts.Content, scalar(k), scalar(v))
			}
			push.Content = append(push.Content, scalar("options"), opts)
		}
		if len(push.Content) > 0 {
			git.Content = append(git.Content, scalar("push"), push)
		}
		if p.PullRequest != nil {
			e.note(Warning, "target", t.Name, t.Line, "Flux opens no pull requests: commits go to push.branch only (a refspec such as refs/heads/BRANCH:refs/for/MAIN opens one on Gitea or Gerrit, push options merge_request.create on GitLab)")
		}
	}
	spec := mapping("interval", interval, "sourceRef", source, "git", git)
	if selector != nil {
		spec.Content = append(spec.Content, scalar("policySelector"), selector)
	}
	update := mapping("strategy", "Setters")
	if path != "" {
		update.Content = append(update.Content, scalar("path"), scalar("./"+path))
	}
	spec.Content = append(spec.Content, scalar("update"), update)
	return object(apiVersion, KindImageUpdateAutomation, ns, name, nil, spec)
}

// object is a Kubernetes object with a spec.
func object(apiVersion, kind, ns, name string, labelKeys []string, spec *yaml.Node) *yaml.Node {
	meta := mapping("name", name, "namespace", ns)
	if len(labelKeys) > 0 {
		l := &yaml.Node{Kind: yaml.MappingNode}
		for _, k := range labelKeys {
			l.Content = append(l.Content, scalar(k), scalar("true"))
		}
		meta.Content = append(meta.Content, scalar("labels"), l)
	}
	return mapping("apiVersion", apiVersion, "kind", kind, "metadata", meta, "spec", spec)
}

// mapping builds a mapping from key, value pairs; a value is a string or
// a node.
func mapping(kv ...any) *yaml.Node {
	n := &yaml.Node{Kind: yaml.MappingNode}
	for i := 0; i+1 < len(kv); i += 2 {
		v, ok := kv[i+1].(*yaml.Node)
		if !ok {
			v = scalar(kv[i+1].(string))
		}
		n.Content = append(n.Content, scalar(kv[i].(string)), v)
	}
	return n
}

func scalar(s string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s} }

func literal(s string) *yaml.Node {
	n := scalar(s)
	if strings.Contains(s, "\n") {
		n.Style = yaml.LiteralStyle
	}
	return n
}

func boolNode(b bool) *yaml.Node {
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!bool", Value: fmt.Sprint(b)}
}

func list(items ...string) *yaml.Node {
	n := &yaml.Node{Kind: yaml.SequenceNode}
	for _, s := range items {
		n.Content = append(n.Content, scalar(s))
	}
	return n
}
