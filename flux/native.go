package flux

import (
	"errors"
	"fmt"
	"net/url"
	"path"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/Masterminds/semver/v3"
	reflectorv1 "github.com/fluxcd/image-reflector-controller/api/v1"
	"github.com/google/go-containerregistry/pkg/name"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/imagebump/imagebump/config"
	"github.com/imagebump/imagebump/internal/cloudhost"
	"github.com/imagebump/imagebump/internal/fluxmsg"
	"github.com/imagebump/imagebump/internal/secretfile"
	"github.com/imagebump/imagebump/policy"
)

// NativeOptions configures Set.Native.
type NativeOptions struct {
	// Secrets says where the Secrets the objects name are. Nil maps none:
	// registries use the default Docker keychain and Git goes without
	// credentials, each with a warning.
	Secrets *Secrets
	// File names the native config in its errors, and its folder is the
	// base of relative file paths. Empty means "imagebump.flux.yaml" in
	// the working directory.
	File string
	// NoGit says the config is for a command that neither clones nor
	// pushes (validate, plan and apply on a local checkout, flux export).
	// A GitRepository's Secret that is not mapped is then a warning that
	// says what run and serve will need, where an ssh URL makes it an
	// error otherwise; for an ssh URL the config names placeholder files
	// (UnmappedSecretDir/NAMESPACE/NAME/KEY) for the identity and
	// known_hosts, so that it still loads.
	NoGit bool
}

// UnmappedSecretDir is the folder, relative to the native config's, under
// which a config made with NoGit names the keys of a GitRepository's ssh
// Secret that is not mapped: placeholders, to replace by mapping the
// Secret (a file there is never created).
const UnmappedSecretDir = "unmapped-secret"

// Native is the imagebump config equivalent to a Set of Flux objects.
type Native struct {
	// Config is the config, loaded from YAML as imagebump.yaml is.
	Config *config.Config
	// YAML is its text: what `imagebump flux export` writes. Comments name
	// the Flux object each entry comes from.
	YAML []byte
	// Policies maps each image name (NAMESPACE:NAME) to its ImagePolicy.
	Policies map[string]Object
	// Targets maps each target name to its ImageUpdateAutomation.
	Targets map[string]Object
	// Report is the Set's report with the notes of the mapping added.
	Report Report
}

// Native maps the Flux objects to imagebump's model, with Flux's semantics
// where they differ from the native config's:
//
//   - each ImagePolicy is an image named NAMESPACE:NAME, which markers must
//     name with that namespace; its ImageRepository's exclusionList, when
//     given, replaces the default exclusions (excludeReplacesDefaults);
//   - each ImageUpdateAutomation is a target that applies the policies of
//     its namespace its policySelector selects, on its GitRepository's
//     branch (or git.checkout's), under update.path, pushing to
//     git.push.branch, then git.push.refspec, with git.push.options; its
//     messageTemplate is rendered as Flux renders it (commit.fluxMessage);
//   - registry settings (credentials, insecure, CA) come from the
//     ImageRepositories, host by host, and Secrets from opts.Secrets.
//
// What imagebump cannot honour is a note in Report, or, when it would
// change the bumps or their safety, an *Error with the Flux object's file
// and line. Errors are joined.
func (s *Set) Native(opts NativeOptions) (*Native, error) {
	m := &mapper{set: s, opts: opts, n: &Native{Policies: map[string]Object{}, Targets: map[string]Object{}}}
	if m.opts.File == "" {
		m.opts.File = "imagebump.flux.yaml"
	}
	m.index()
	m.images()
	m.targets()
	m.p.sortNotes()
	report := s.Report
	report.Notes = append(append([]Note(nil), s.Report.Notes...), m.p.notes...)
	m.n.Report = report
	if err := m.p.err(); err != nil {
		return nil, err
	}
	m.cfg.File = m.opts.File
	// Paths the user gave relative are written relative to the native
	// config's folder; the config is parsed as if it were there, so its
	// paths come out absolute, as config.Load makes them.
	base, err := filepath.Abs(filepath.Dir(m.opts.File))
	if err != nil {
		return nil, fmt.Errorf("resolving the native config's folder: %w", err)
	}
	m.opts.Secrets.relativize(reflect.ValueOf(&m.cfg), base)
	text, err := emit(&m.cfg, m.comments)
	if err != nil {
		return nil, fmt.Errorf("writing the native config: %w", err)
	}
	c, err := config.Parse(text, filepath.Join(base, filepath.Base(m.opts.File)))
	if err != nil {
		return nil, m.configError(err, m.sources)
	}
	c.File, c.FromFlux = m.opts.File, true
	m.n.Config, m.n.YAML = c, text
	return m.n, nil
}

// configError maps the native config's errors back to the Flux objects
// the entries came from.
func (m *mapper) configError(err error, sources map[string]Object) error {
	var out []error
	for _, e := range unjoin(err) {
		var ce *config.Error
		if !errors.As(e, &ce) {
			out = append(out, e)
			continue
		}
		o, ok := sourceOf(ce.Path, sources)
		if !ok {
			out = append(out, fmt.Errorf("the native config made from the Flux objects is invalid: %s: %s", ce.Path, ce.Msg))
			continue
		}
		if f := fluxField(ce.Path, o.Kind); f != "" {
			out = append(out, &Error{Object: o, Field: f, Line: o.Line, Msg: ce.Msg, Err: ce.Err})
			continue
		}
		out = append(out, &Error{Object: o, Line: o.Line, Msg: fmt.Sprintf("the native config made from it is invalid at %s: %s", ce.Path, ce.Msg), Err: ce.Err})
	}
	return errors.Join(out...)
}

// nativeToFlux maps the keys of a native entry to the fields of the Flux
// object it was made from, by the kind of that object.
var nativeToFlux = map[string]map[string]string{
	KindImagePolicy: {
		"policy": "spec.policy", "filterTags": "spec.filterTags", "digest": "spec.digestReflectionPolicy",
		"exclude": "spec.exclusionList (of its ImageRepository)", "repository": "spec.image (of its ImageRepository)",
	},
	KindImageUpdateAutomation: {
		"schedule": "spec.interval", "push": "spec.git.push", "commit": "spec.git.commit",
		"git.paths": "spec.update.path", "git.branch": "spec.git.checkout.ref.branch", "policies": "spec.policySelector",
	},
}

// fluxField returns the Flux field a native config's key path (such as
// targets[1].push.branch) was made from, or "" when it is not known.
func fluxField(path, kind string) string {
	_, rest, ok := strings.Cut(path, "].")
	if !ok {
		return ""
	}
	m := nativeToFlux[kind]
	for key := rest; key != ""; {
		if f, ok := m[key]; ok {
			return f + strings.TrimPrefix(rest, key)
		}
		i := strings.LastIndexByte(key, '.')
		if i < 0 {
			break
		}
		key = key[:i]
	}
	return ""
}

func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

// sourceOf returns the object of the closest entry above path.
func sourceOf(p string, sources map[string]Object) (Object, bool) {
	for {
		if o, ok := sources[p]; ok {
			return o, true
		}
		i := strings.LastIndexAny(p, ".[")
		if i < 0 {
			return Object{}, false
		}
		p = p[:i]
	}
}

type mapper struct {
	set      *Set
	opts     NativeOptions
	n        *Native
	p        problems
	cfg      config.Config
	comments map[string]string // config path → comment naming its source
	sources  map[string]Object
	repos    map[string]*ImageRepository // ns/name
	// usedRepos holds the ImageRepositories some ImagePolicy names.
	usedRepos map[string]bool
	gits      map[string]*GitRepository // ns/name
	hosts     map[string]*hostSettings
	// byNamespace lists the image names (NAMESPACE:NAME) of each namespace.
	byNamespace map[string][]*ImagePolicy
	// pushers holds, by GitRepository and push branch, the automation
	// that pushes there.
	pushers map[string]*ImageUpdateAutomation
}

// hostSettings are a registry's settings, and the repository that set
// each first.
type hostSettings struct {
	reg                            config.Registry
	authFrom, insecureFrom, caFrom *ImageRepository
	providerFrom                   *ImageRepository
	// secure are the repositories read before any insecure one: each
	// is warned about once one is, whatever the order of the objects.
	secure []*ImageRepository
	// anonymous are the repositories without a secretRef read before
	// any with one, warned about as secure are.
	anonymous []*ImageRepository
	// plainCloud is set once a cloud provider with plain HTTP to the
	// host was refused, so that it is refused once.
	plainCloud bool
}

func (m *mapper) index() {
	m.comments = map[string]string{}
	m.sources = map[string]Object{}
	m.repos = map[string]*ImageRepository{}
	m.usedRepos = map[string]bool{}
	m.gits = map[string]*GitRepository{}
	m.hosts = map[string]*hostSettings{}
	m.byNamespace = map[string][]*ImagePolicy{}
	for _, r := range m.set.Repositories {
		m.repos[r.Namespace+"/"+r.Name] = r
	}
	for _, g := range m.set.GitRepositories {
		m.gits[g.Namespace+"/"+g.Name] = g
	}
}

// refHint suggests the closest object name (NAMESPACE/NAME) to want.
func refHint[T any](want string, objs map[string]T) string {
	names := make([]string, 0, len(objs))
	for k := range objs {
		names = append(names, strings.Replace(k, "/", ":", 1))
	}
	hint := SuggestPolicy(strings.Replace(want, "/", ":", 1), names)
	return strings.ReplaceAll(strings.ReplaceAll(hint, ":", "/"), "A policy's namespace is part of its name", "the namespace defaults to the referring object's")
}

func (m *mapper) images() {
	for _, pol := range m.set.Policies {
		im, ok := m.image(pol)
		if !ok {
			continue
		}
		i := len(m.cfg.Images)
		m.cfg.Images = append(m.cfg.Images, im)
		m.comments[fmt.Sprintf("images[%d]", i)] = "from " + pol.String()
		m.sources[fmt.Sprintf("images[%d]", i)] = pol.Object
		m.n.Policies[im.Name] = pol.Object
		m.byNamespace[pol.Namespace] = append(m.byNamespace[pol.Namespace], pol)
	}
	for _, r := range m.set.Repositories {
		if !m.usedRepos[r.Namespace+"/"+r.Name] {
			m.p.note(Info, r.Object, "", r.Line, "no ImagePolicy uses it: nothing to do")
		}
	}
	for _, h := range sortedKeys(m.hosts) {
		i := len(m.cfg.Registries)
		m.cfg.Registries = append(m.cfg.Registries, m.hosts[h].reg)
		var from []string
		for _, r := range []*ImageRepository{m.hosts[h].authFrom, m.hosts[h].insecureFrom, m.hosts[h].caFrom, m.hosts[h].providerFrom} {
			if r != nil && !contains(from, r.String()) {
				from = append(from, r.String())
			}
		}
		if len(from) > 0 {
			m.comments[fmt.Sprintf("registries[%d]", i)] = "from " + strings.Join(from, ", ")
		}
		for _, r := range []*ImageRepository{m.hosts[h].authFrom, m.hosts[h].insecureFrom, m.hosts[h].caFrom, m.hosts[h].providerFrom} {
			if r != nil {
				m.sources[fmt.Sprintf("registries[%d]", i)] = r.Object
				break
			}
		}
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// image maps an ImagePolicy and its ImageRepository.
func (m *mapper) image(pol *ImagePolicy) (config.Image, bool) {
	src := pol.src
	spec := pol.Spec
	im := config.Image{Name: pol.Namespace + ":" + pol.Name}
	ref := spec.ImageRepositoryRef
	if ref.Name == "" {
		at := "spec.imageRepositoryRef"
		if !src.has(at) {
			at = "spec"
		}
		m.p.fail(pol.Object, "spec.imageRepositoryRef.name", src.line(at), nil, "missing: it names the ImageRepository whose tags the policy chooses from")
		return im, false
	}
	ns := ref.Namespace
	if ns == "" {
		ns = pol.Namespace
	}
	repo := m.repos[ns+"/"+ref.Name]
	m.usedRepos[ns+"/"+ref.Name] = true
	if repo == nil {
		msg := fmt.Sprintf("ImageRepository %s/%s is not among the objects read", ns, ref.Name)
		if h := refHint(ns+"/"+ref.Name, m.repos); h != "" {
			msg += " (" + h + ")"
		}
		m.p.fail(pol.Object, "spec.imageRepositoryRef", src.line("spec.imageRepositoryRef"), nil, "%s", msg)
		return im, false
	}
	if ns != pol.Namespace && repo.Spec.AccessFrom == nil {
		// Flux refuses a reference across namespaces unless the
		// ImageRepository's accessFrom lets the policy's namespace in.
		m.p.note(Warning, pol.Object, "spec.imageRepositoryRef", src.line("spec.imageRepositoryRef"),
			"%s is in another namespace and has no accessFrom, so Flux refuses this reference and never moves the policy's markers; imagebump does: add accessFrom to it (namespaceSelectors matching %s) to have both agree", repo.Object.Ref(), pol.Namespace)
	}
	if pol.Spec.Suspend || repo.Spec.Suspend {
		// Under Flux a suspended policy (or one whose repository is
		// suspended) keeps the pick it had, and its markers stay: a hold,
		// which still reports the policy.
		what, line := pol.Object, src.line("spec.suspend")
		if !pol.Spec.Suspend {
			what, line = repo.Object, repo.src.line("spec.suspend")
		}
		im.Hold = &config.Hold{Reason: what.Ref() + " is suspended in Flux"}
		m.p.note(Info, what, "spec.suspend", line,
			"suspended: policy %s is held, as imagebump hold does: its markers stay where they are and plan shows what it would pick; resume it (suspend: false) to let them move", im.Name)
	}
	ok := true
	im.Repository = repo.Spec.Image
	r, err := name.NewRepository(repo.Spec.Image)
	switch {
	case repo.Spec.Image == "":
		m.p.fail(repo.Object, "spec.image", repo.src.line("spec"), nil, "missing")
		return im, false
	case err != nil || strings.Contains(repo.Spec.Image, "@") || strings.Contains(path.Base(repo.Spec.Image), ":"):
		m.p.fail(repo.Object, "spec.image", repo.src.line("spec.image"), err, "%q is not an image repository without tag or digest%s", repo.Spec.Image, substituted(repo.Spec.Image))
		return im, false
	}
	m.registry(repo, r.RegistryStr())

	kinds := 0
	if p := spec.Policy.SemVer; p != nil {
		kinds++
		im.Rule.SemVer = p.Range
		if _, err := semver.NewConstraint(p.Range); err != nil {
			m.p.fail(pol.Object, "spec.policy.semver.range", src.line("spec.policy.semver.range"), err, "invalid semver range %q%s", p.Range, substituted(p.Range))
			ok = false
		}
	}
	if p := spec.Policy.Alphabetical; p != nil {
		kinds++
		im.Rule.Alphabetical = orDefault(p.Order, "asc")
	}
	if p := spec.Policy.Numerical; p != nil {
		kinds++
		im.Rule.Numerical = orDefault(p.Order, "asc")
	}
	for _, order := range []string{im.Rule.Alphabetical, im.Rule.Numerical} {
		if order != "" && order != "asc" && order != "desc" {
			m.p.fail(pol.Object, "spec.policy", src.line("spec.policy"), nil, "order %q is not asc or desc", order)
			ok = false
		}
	}
	if kinds != 1 {
		m.p.fail(pol.Object, "spec.policy", src.line("spec.policy"), nil, "set exactly one of semver, alphabetical, numerical (found %d)", kinds)
		ok = false
	}
	if f := spec.FilterTags; f != nil && (f.Pattern != "" || f.Extract != "") {
		if f.Pattern == "" {
			m.p.fail(pol.Object, "spec.filterTags.extract", src.line("spec.filterTags.extract"), nil, "extract needs a pattern (imagebump refuses what Flux would expand against an empty match)")
			ok = false
		} else if _, err := regexp.Compile(f.Pattern); err != nil {
			m.p.fail(pol.Object, "spec.filterTags.pattern", src.line("spec.filterTags.pattern"), err, "invalid pattern")
			ok = false
		}
		im.FilterTags = &config.FilterTags{Pattern: f.Pattern, Extract: f.Extract}
	}
	if list := repo.Spec.ExclusionList; len(list) > 0 {
		for i, e := range list {
			if _, err := regexp.Compile(e); err != nil {
				f := fmt.Sprintf("spec.exclusionList[%d]", i)
				m.p.fail(repo.Object, f, repo.src.line(f), err, "invalid pattern")
				ok = false
			}
		}
		// A list that starts with imagebump's defaults, as `flux
		// generate` writes them, adds the rest to the defaults: the
		// native config says so, and generate-then-export gives back the
		// config it started from.
		if d := policy.DefaultExclusions(); len(list) >= len(d) && slices.Equal(list[:len(d)], d) {
			im.Exclude = append([]string(nil), list[len(d):]...)
			if len(im.Exclude) == 0 {
				im.Exclude = nil
			}
		} else {
			im.Exclude = append([]string(nil), list...)
			im.ExcludeReplacesDefaults = true
		}
	}
	switch spec.DigestReflectionPolicy {
	case "", reflectorv1.ReflectNever:
	case reflectorv1.ReflectAlways:
		im.Digest = policy.DigestAlways
	case reflectorv1.ReflectIfNotPresent:
		im.Digest = policy.DigestIfNotPresent
	default:
		m.p.fail(pol.Object, "spec.digestReflectionPolicy", src.line("spec.digestReflectionPolicy"), nil, "%q is not Always, IfNotPresent or Never", spec.DigestReflectionPolicy)
		ok = false
	}
	// The CRD's rules, which the Kubernetes API server applies.
	switch always := spec.DigestReflectionPolicy == reflectorv1.ReflectAlways; {
	case spec.Interval != nil && !always:
		m.p.fail(pol.Object, "spec.interval", src.line("spec.interval"), nil, "only accepted with digestReflectionPolicy: Always (the Kubernetes API server refuses this ImagePolicy): remove it, or set digestReflectionPolicy: Always")
		ok = false
	case spec.Interval == nil && always:
		m.p.fail(pol.Object, "spec.digestReflectionPolicy", src.line("spec.digestReflectionPolicy"), nil, "Always needs an interval, such as interval: 10m (the Kubernetes API server refuses this ImagePolicy without one)")
		ok = false
	}
	return im, ok
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// secret names a Secret the objects refer to, in a message saying it is
// not mapped, with where its manifest is when one was read: imagebump
// takes Secrets from files (a mapping, a mounted folder), never from
// manifests, which are SOPS-encrypted more often than not.
func (m *mapper) secret(ns, name string) string {
	ref := "Secret " + ns + "/" + name
	sm, ok := m.set.secretManifests[ns+"/"+name]
	switch {
	case !ok:
		return ref
	case sm.sops:
		return fmt.Sprintf("%s (its manifest, SOPS-encrypted, is in %s: imagebump reads no Secret manifest; decrypt its keys to files and map those)", ref, sm.obj.Pos())
	}
	return fmt.Sprintf("%s (its manifest is in %s: imagebump reads no Secret manifest; write its keys to files and map those)", ref, sm.obj.Pos())
}

// registry merges an ImageRepository's registry settings into its host's.
func (m *mapper) registry(repo *ImageRepository, host string) {
	h := m.hosts[host]
	if h == nil {
		h = &hostSettings{reg: config.Registry{Host: host}}
		m.hosts[host] = h
	}
	src := repo.src
	cloud := false
	switch p := repo.Spec.Provider; p {
	case "", "generic":
	case "aws", "gcp", "azure":
		// The same clouds, and the same credential sources: the
		// workload's identity (IRSA, workload identity, managed identity).
		cloud = true
		if why := cloudhost.Mismatch(p, host); why != "" {
			// Flux refuses it too: the cloud's token goes to its own
			// registries only.
			m.p.fail(repo.Object, "spec.provider", src.line("spec.provider"), nil, "%s", why)
		}
		if h.reg.Provider != "" && h.reg.Provider != p {
			m.p.fail(repo.Object, "spec.provider", src.line("spec.provider"), nil,
				"%s uses provider %q for %s: imagebump has one per registry host", h.providerFrom.Ref(), h.reg.Provider, host)
		}
		if h.authFrom != nil {
			m.p.fail(repo.Object, "spec.provider", src.line("spec.provider"), nil,
				"provider %s gives credentials for %s, and the Secret of %s gives others: imagebump has one source of credentials per registry host; drop that secretRef, or this provider", p, host, h.authFrom.Ref())
		}
		h.reg.Provider, h.providerFrom = p, repo
	default:
		m.p.fail(repo.Object, "spec.provider", src.line("spec.provider"), nil,
			"%q is not generic, aws, azure or gcp (the Kubernetes API server refuses it)", p)
	}
	plainToo := func(r *ImageRepository) {
		m.p.note(Warning, r.Object, "spec.insecure", r.src.line("spec"),
			"%s allows plain HTTP to %s: imagebump's settings are per host, so this repository is reached the same way", h.insecureFrom.Ref(), host)
	}
	switch {
	case repo.Spec.Insecure:
		if h.insecureFrom == nil {
			h.insecureFrom = repo
			for _, r := range h.secure {
				plainToo(r)
			}
			h.secure = nil
		}
		h.reg.Insecure = true
	case h.insecureFrom != nil:
		plainToo(repo)
	default:
		h.secure = append(h.secure, repo)
	}
	if h.reg.Insecure && h.providerFrom != nil && !h.plainCloud {
		// A cloud's registry never serves plain HTTP, and the
		// workload's token would cross the network in the clear.
		h.plainCloud = true
		field := "spec.provider"
		if repo.Spec.Insecure {
			field = "spec.insecure"
		}
		m.p.fail(repo.Object, field, src.line(field), nil,
			"provider %s with plain HTTP to %s (spec.insecure of %s): a cloud's registry never serves plain HTTP, and the workload's cloud token would cross the network in the clear; remove spec.insecure",
			h.reg.Provider, host, h.insecureFrom.Ref())
	}
	// Credentials are per host too: a repository without a Secret is
	// read with those of another on its host.
	sharedAuth := func(r *ImageRepository) {
		m.p.note(Warning, r.Object, "spec.secretRef", r.src.line("spec"),
			"no secretRef, but %s gives credentials for %s: imagebump's credentials are per host, so this repository is read with them too, where Flux reads it anonymously", h.authFrom.Ref(), host)
	}
	if repo.Spec.SecretRef == nil && !cloud {
		if h.authFrom != nil {
			sharedAuth(repo)
		} else {
			h.anonymous = append(h.anonymous, repo)
		}
	}
	if ref := repo.Spec.SecretRef; ref != nil && cloud {
		m.p.note(Warning, repo.Object, "spec.secretRef", src.line("spec.secretRef"),
			"Secret %s/%s is not used: with provider %s, credentials come from the cloud's own identity, as the registry host has one source of credentials in imagebump", repo.Namespace, ref.Name, repo.Spec.Provider)
	} else if ref != nil {
		keys, assumed := m.opts.Secrets.secretKeys(repo.Namespace, ref.Name, []string{".dockerconfigjson"})
		f := keys[".dockerconfigjson"]
		switch {
		case keys == nil:
			m.p.note(Warning, repo.Object, "spec.secretRef", src.line("spec.secretRef"),
				"%s is not mapped: %s is read with the default Docker keychain; map the Secret's .dockerconfigjson to a file (see docs/flux.md)", m.secret(repo.Namespace, ref.Name), host)
		case f == "":
			m.p.fail(repo.Object, "spec.secretRef", src.line("spec.secretRef"), nil,
				"Secret %s/%s has no .dockerconfigjson key (it has %s): an ImageRepository's Secret is a Docker config", repo.Namespace, ref.Name, keyList(keys))
		case secretfile.IsEnv(f):
			m.p.fail(repo.Object, "spec.secretRef", src.line("spec.secretRef"), nil,
				"Secret %s/%s: .dockerconfigjson must map to a file, not %s", repo.Namespace, ref.Name, f)
		case h.providerFrom != nil:
			m.p.fail(repo.Object, "spec.secretRef", src.line("spec.secretRef"), nil,
				"Secret %s/%s gives credentials for %s, which %s reads with provider %s: imagebump has one source of credentials per registry host; drop this secretRef, or that provider", repo.Namespace, ref.Name, host, h.providerFrom.Ref(), h.reg.Provider)
		case h.reg.Auth != nil && h.reg.Auth.DockerConfig != f:
			m.p.fail(repo.Object, "spec.secretRef", src.line("spec.secretRef"), nil,
				"%s holds other credentials for %s (%s): imagebump has one set per registry host; map both Secrets to one Docker config holding the auths both need", h.authFrom, host, h.reg.Auth.DockerConfig)
		default:
			if h.reg.Auth == nil {
				h.reg.Auth = &config.RegistryAuth{DockerConfig: f}
				h.authFrom = repo
				for _, r := range h.anonymous {
					sharedAuth(r)
				}
				h.anonymous = nil
			}
			if assumed {
				m.p.note(Info, repo.Object, "spec.secretRef", src.line("spec.secretRef"), "Secret %s/%s: its folder does not exist; the config names %s, to create", repo.Namespace, ref.Name, f)
			}
		}
	}
	if ref := repo.Spec.CertSecretRef; ref != nil {
		keys, _ := m.opts.Secrets.secretKeys(repo.Namespace, ref.Name, []string{"ca.crt"})
		ca := keys["ca.crt"]
		if ca == "" {
			ca = keys["caFile"]
		}
		switch {
		case keys == nil:
			m.p.note(Warning, repo.Object, "spec.certSecretRef", src.line("spec.certSecretRef"),
				"%s is not mapped: %s is trusted with the system's CAs only; map its ca.crt", m.secret(repo.Namespace, ref.Name), host)
		case ca != "" && secretfile.IsEnv(ca):
			m.p.fail(repo.Object, "spec.certSecretRef", src.line("spec.certSecretRef"), nil, "Secret %s/%s: ca.crt must map to a file, not %s", repo.Namespace, ref.Name, ca)
		case ca != "" && h.reg.CAFile != "" && h.reg.CAFile != ca:
			m.p.fail(repo.Object, "spec.certSecretRef", src.line("spec.certSecretRef"), nil, "%s trusts another CA for %s: imagebump has one per registry host", h.caFrom, host)
		case ca != "":
			h.reg.CAFile, h.caFrom = ca, repo
		}
		if keys["tls.crt"] != "" || keys["tls.key"] != "" {
			m.p.note(Warning, repo.Object, "spec.certSecretRef", src.line("spec.certSecretRef"),
				"Secret %s/%s holds a client certificate (tls.crt, tls.key), which imagebump does not present: a registry that requires it will refuse imagebump", repo.Namespace, ref.Name)
		}
	}
}

func (m *mapper) targets() {
	used := map[string]bool{}
	for _, a := range m.set.Automations {
		used[targetName(a, m.set.Automations)] = true
		t, ok := m.target(a)
		if !ok {
			continue
		}
		i := len(m.cfg.TargetList)
		m.cfg.TargetList = append(m.cfg.TargetList, t)
		m.comments[fmt.Sprintf("targets[%d]", i)] = "from " + a.String()
		m.sources[fmt.Sprintf("targets[%d]", i)] = a.Object
		m.n.Targets[t.Name] = a.Object
	}
	// Say which policies no automation applies, as Flux would leave their
	// markers alone.
	automated := map[string]bool{}
	for _, a := range m.set.Automations {
		if !a.Spec.Suspend {
			automated[a.Namespace] = true
		}
	}
	for _, ns := range sortedKeys(m.byNamespace) {
		if automated[ns] {
			continue
		}
		for _, pol := range m.byNamespace[ns] {
			m.p.note(Info, pol.Object, "", pol.Line, "no ImageUpdateAutomation in namespace %s applies it: its markers are checked but not moved, as in Flux", ns)
		}
	}
	for _, g := range m.set.GitRepositories {
		// Said of every GitRepository, used or not, as ImageRepositories'
		// fields are: nothing is dropped without a word.
		switch p := g.Spec.Provider; p {
		case "", "generic":
		default:
			m.p.note(Warning, g.Object, "spec.provider", g.src.line("spec.provider"),
				"provider %q needs cloud or app authentication, which imagebump does not have yet: map a token in secretRef's Secret (bearerToken or username and password)", p)
		}
		referenced := false
		for _, a := range m.set.Automations {
			if sourceKey(a) == g.Namespace+"/"+g.Name {
				referenced = true
			}
		}
		if !referenced {
			m.p.note(Info, g.Object, "", g.Line, "no ImageUpdateAutomation uses it: nothing to do")
		}
	}
}

func sourceKey(a *ImageUpdateAutomation) string {
	ns := a.Spec.SourceRef.Namespace
	if ns == "" {
		ns = a.Namespace
	}
	return ns + "/" + a.Spec.SourceRef.Name
}

var labelUnsafe = regexp.MustCompile(`[^a-z0-9-]+`)

// targetName is the automation's name when it is a valid target name
// unique among the automations, else NAMESPACE-NAME.
func targetName(a *ImageUpdateAutomation, all []*ImageUpdateAutomation) string {
	clean := func(s string) string {
		s = strings.Trim(labelUnsafe.ReplaceAllString(strings.ToLower(s), "-"), "-")
		if len(s) > 63 {
			s = strings.TrimRight(s[:63], "-")
		}
		return s
	}
	unique := true
	for _, b := range all {
		if b != a && b.Name == a.Name {
			unique = false
		}
	}
	if n := clean(a.Name); unique && n == a.Name {
		return n
	}
	return clean(a.Namespace + "-" + a.Name)
}

// target maps an ImageUpdateAutomation and its GitRepository.
func (m *mapper) target(a *ImageUpdateAutomation) (config.Target, bool) {
	src := a.src
	spec := a.Spec
	t := config.Target{Name: targetName(a, m.set.Automations)}
	if t.Name != a.Name {
		m.p.note(Info, a.Object, "metadata.name", src.line("metadata.name"), "its target is named %q (target names are unique lowercase labels)", t.Name)
	}
	if spec.Suspend {
		m.p.note(Warning, a.Object, "spec.suspend", src.line("spec.suspend"), "suspended: no target is made for it, so its policies' markers are not moved")
		return t, false
	}
	if spec.SourceRef.Kind != "" && spec.SourceRef.Kind != KindGitRepository {
		m.p.fail(a.Object, "spec.sourceRef.kind", src.line("spec.sourceRef.kind"), nil, "%q: only GitRepository sources are supported (as in Flux)", spec.SourceRef.Kind)
		return t, false
	}
	if spec.SourceRef.Name == "" {
		at := "spec.sourceRef"
		if !src.has(at) {
			at = "spec"
		}
		m.p.fail(a.Object, "spec.sourceRef.name", src.line(at), nil, "missing: it names the GitRepository to update")
		return t, false
	}
	g := m.gits[sourceKey(a)]
	if g == nil {
		msg := fmt.Sprintf("GitRepository %s is not among the objects read", sourceKey(a))
		if h := refHint(sourceKey(a), m.gits); h != "" {
			msg += " (" + h + ")"
		}
		m.p.fail(a.Object, "spec.sourceRef", src.line("spec.sourceRef"), nil, "%s", msg)
		return t, false
	}
	if spec.GitSpec == nil {
		m.p.fail(a.Object, "spec.git", src.line("spec"), nil, "missing: it says how to commit (Flux refuses the automation too)")
		return t, false
	}
	gitCfg, ok := m.git(a, g)
	if !ok {
		return t, false
	}
	t.Git = gitCfg
	if u := spec.Update; u != nil {
		if u.Strategy != "" && u.Strategy != "Setters" {
			m.p.fail(a.Object, "spec.update.strategy", src.line("spec.update.strategy"), nil, "%q: only Setters is supported (as in Flux)", u.Strategy)
			return t, false
		}
		p := path.Clean("/" + u.Path)[1:]
		if p != "" {
			t.Git.Paths = []string{p}
		}
	}
	if spec.Interval.Duration <= 0 {
		m.p.fail(a.Object, "spec.interval", src.line("spec.interval"), nil, "missing or not positive: Flux requires an interval, such as 10m, and it is the target's schedule")
		return t, false
	}
	t.Schedule = spec.Interval.Duration.String()
	if v := src.scalar("spec.interval"); v != nil {
		t.Schedule = v.Value
	}
	policies, ok := m.selectPolicies(a)
	if !ok {
		return t, false
	}
	t.Policies = policies
	commit, ok := m.commit(a)
	if !ok {
		return t, false
	}
	t.Commit = commit
	t.Push = m.push(a, t.Git.Branch)
	if t.Push != nil && t.Push.Branch != "" {
		k := sourceKey(a) + "\x00" + t.Push.Branch
		if other, ok := m.pushers[k]; ok {
			m.p.fail(a.Object, "spec.git.push.branch", src.line("spec.git.push.branch"), nil,
				"%q is also the push branch of %s (%s) on GitRepository %s: imagebump rebuilds its push branch from the checkout branch at each bump with one automation's updates, so each would drop the other's (Flux adds commits on top instead); give each automation a push branch of its own",
				t.Push.Branch, other.Object.Ref(), other.Object.Pos(), sourceKey(a))
			return t, false
		}
		if m.pushers == nil {
			m.pushers = map[string]*ImageUpdateAutomation{}
		}
		m.pushers[k] = a
	}
	return t, true
}

// git maps the GitRepository and the automation's checkout.
func (m *mapper) git(a *ImageUpdateAutomation, g *GitRepository) (*config.Git, bool) {
	out := &config.Git{URL: g.Spec.URL}
	u, err := url.Parse(g.Spec.URL)
	if err != nil || u.Scheme == "" {
		m.p.fail(g.Object, "spec.url", g.src.line("spec.url"), nil, "not a URL (Flux takes http://, https:// or ssh://)")
		return nil, false
	}
	// The branch: the automation's checkout, else the GitRepository's ref.
	ref, owner, field := g.Spec.Reference, g.Object, "spec.ref"
	refSrc := g.src
	if co := a.Spec.GitSpec.Checkout; co != nil {
		r := co.Reference
		ref, owner, field, refSrc = &r, a.Object, "spec.git.checkout.ref", a.src
	}
	if ref != nil {
		switch {
		case ref.Commit != "" || ref.SemVer != "" || ref.Tag != "":
			m.p.fail(owner, field, refSrc.line(field), nil, "imagebump commits on a branch: give a branch, not a tag, semver or commit")
			return nil, false
		case ref.Name != "":
			b, ok := strings.CutPrefix(ref.Name, "refs/heads/")
			if !ok {
				m.p.fail(owner, field+".name", refSrc.line(field+".name"), nil, "%q is not a branch (refs/heads/...): imagebump commits on a branch", ref.Name)
				return nil, false
			}
			out.Branch = b
		default:
			out.Branch = ref.Branch
		}
	}
	if out.Branch == "" {
		// Flux's Git client checks out master when it is given no
		// reference, whatever the remote's default branch is.
		out.Branch = "master"
		m.p.note(Warning, a.Object, "spec.git.checkout", a.src.line("spec.git"), "no branch given: Flux checks out master then, whatever the remote's default branch, and so does imagebump; set spec.ref.branch on %s to say which", g.Object.Ref())
	}
	if g.Spec.SecretRef == nil {
		if u.Scheme == "ssh" {
			m.p.fail(g.Object, "spec.url", g.src.line("spec.url"), nil, "an ssh URL needs a secretRef with identity and known_hosts")
			return nil, false
		}
		return out, true
	}
	return out, m.gitAuth(g, u.Scheme, out)
}

// gitAuth maps a GitRepository's Secret.
func (m *mapper) gitAuth(g *GitRepository, scheme string, out *config.Git) bool {
	name := g.Spec.SecretRef.Name
	line := g.src.line("spec.secretRef")
	assume := []string{"username", "password"}
	if scheme == "ssh" {
		assume = []string{"identity", "known_hosts"}
	}
	keys, assumed := m.opts.Secrets.secretKeys(g.Namespace, name, assume)
	switch {
	case keys == nil && scheme == "ssh" && m.opts.NoGit:
		// Nothing here clones or pushes, so the keys are not needed
		// yet; the placeholders keep the config loadable (an ssh URL
		// needs a knownHostsFile), and run fails on them, not on a
		// missing host key check.
		dir := path.Join(UnmappedSecretDir, g.Namespace, name)
		out.Auth = &config.GitAuth{SSHKeyFile: path.Join(dir, "identity"), KnownHostsFile: path.Join(dir, "known_hosts")}
		m.p.note(Warning, g.Object, "spec.secretRef", line, "%s is not mapped: not needed here, as Git is not used, but run and serve need its identity and known_hosts (the config names %s/ in their place): map them with --flux-secrets (see docs/flux.md)", m.secret(g.Namespace, name), dir)
		return true
	case keys == nil && scheme == "ssh":
		m.p.fail(g.Object, "spec.secretRef", line, nil, "%s is not mapped, and an ssh URL needs its identity and known_hosts: map them (see docs/flux.md)", m.secret(g.Namespace, name))
		return false
	case keys == nil && m.opts.NoGit:
		m.p.note(Warning, g.Object, "spec.secretRef", line, "%s is not mapped: not needed here, as Git is not used, but run and serve would use Git without credentials; map its keys with --flux-secrets (see docs/flux.md)", m.secret(g.Namespace, name))
		return true
	case keys == nil:
		m.p.note(Warning, g.Object, "spec.secretRef", line, "%s is not mapped: Git is used without credentials; map its keys (see docs/flux.md)", m.secret(g.Namespace, name))
		return true
	}
	if assumed {
		m.p.note(Info, g.Object, "spec.secretRef", line, "Secret %s/%s: its folder does not exist; the config names its %s files, to create", g.Namespace, name, strings.Join(assume, " and "))
	}
	auth := &config.GitAuth{}
	if scheme == "ssh" {
		auth.SSHKeyFile = keys["identity"]
		auth.SSHKeyPassphraseFile = keys["password"]
		auth.KnownHostsFile = keys["known_hosts"]
		switch {
		case auth.SSHKeyFile == "":
			m.p.fail(g.Object, "spec.secretRef", line, nil, "Secret %s/%s has no identity key (it has %s): an ssh URL needs one", g.Namespace, name, keyList(keys))
			return false
		case auth.KnownHostsFile == "":
			m.p.fail(g.Object, "spec.secretRef", line, nil, "Secret %s/%s has no known_hosts key (it has %s): imagebump checks the host key, as Flux does", g.Namespace, name, keyList(keys))
			return false
		case secretfile.IsEnv(auth.KnownHostsFile):
			m.p.fail(g.Object, "spec.secretRef", line, nil, "Secret %s/%s: known_hosts must map to a file, not %s", g.Namespace, name, auth.KnownHostsFile)
			return false
		}
	} else {
		switch {
		case keys["bearerToken"] != "":
			auth.TokenFile = keys["bearerToken"]
		case keys["username"] != "" && keys["password"] != "":
			auth.UsernameFile, auth.PasswordFile = keys["username"], keys["password"]
		case keys["password"] != "":
			// Flux sends basic auth with an empty user; a token as
			// password works with the forges.
			auth.TokenFile = keys["password"]
			m.p.note(Info, g.Object, "spec.secretRef", line, "Secret %s/%s has a password and no username: it is used as a token", g.Namespace, name)
		default:
			m.p.fail(g.Object, "spec.secretRef", line, nil, "Secret %s/%s has neither bearerToken nor username and password (it has %s)", g.Namespace, name, keyList(keys))
			return false
		}
	}
	for _, k := range []string{"ca.crt", "caFile", "tls.crt", "tls.key"} {
		if keys[k] != "" {
			m.p.note(Warning, g.Object, "spec.secretRef", line, "Secret %s/%s: key %s is not used: imagebump has no custom CA or client certificate for Git yet (the system's CAs are trusted)", g.Namespace, name, k)
		}
	}
	out.Auth = auth
	return true
}

// selectPolicies returns the target's policy globs: every policy of the
// automation's namespace, or those its policySelector selects.
func (m *mapper) selectPolicies(a *ImageUpdateAutomation) ([]string, bool) {
	sel := a.Spec.PolicySelector
	if sel == nil || (len(sel.MatchLabels) == 0 && len(sel.MatchExpressions) == 0) {
		return []string{a.Namespace + ":*"}, true
	}
	s, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		m.p.fail(a.Object, "spec.policySelector", a.src.line("spec.policySelector"), err, "invalid selector")
		return nil, false
	}
	var names []string
	for _, pol := range m.byNamespace[a.Namespace] {
		if s.Matches(labels.Set(pol.Labels)) {
			names = append(names, pol.Namespace+":"+pol.Name)
		}
	}
	sort.Strings(names)
	if len(names) == 0 {
		m.p.note(Warning, a.Object, "spec.policySelector", a.src.line("spec.policySelector"), "selects no ImagePolicy of namespace %s: no target is made for it", a.Namespace)
		return nil, false
	}
	m.p.note(Info, a.Object, "spec.policySelector", a.src.line("spec.policySelector"), "selects %s now; the target lists them by name", strings.Join(names, ", "))
	return names, true
}

// commit maps git.commit.
func (m *mapper) commit(a *ImageUpdateAutomation) (*config.Commit, bool) {
	c := a.Spec.GitSpec.Commit
	src := a.src
	out := &config.Commit{Author: config.Author{Name: c.Author.Name, Email: c.Author.Email}}
	if c.Author.Name == "" {
		m.p.note(Info, a.Object, "spec.git.commit.author.name", src.line("spec.git.commit.author"), "not set: commits are authored as %q", config.DefaultAuthorName)
	}
	ok := true
	if c.Author.Email == "" {
		// The CRD requires commit.author.email: the Kubernetes API
		// server refuses the automation without it.
		at := "spec.git.commit.author"
		if !src.has(at) {
			at = "spec.git"
		}
		m.p.fail(a.Object, "spec.git.commit.author.email", src.line(at), nil, "missing: Flux requires the commit author's email (the Kubernetes API server refuses this automation without it)")
		ok = false
	}
	if sk := c.SigningKey; sk != nil {
		line := src.line("spec.git.commit.signingKey")
		switch sk.Type {
		case "", "gpg":
			keys, _ := m.opts.Secrets.secretKeys(a.Namespace, sk.SecretRef.Name, []string{"git.asc"})
			switch {
			case keys == nil:
				m.p.fail(a.Object, "spec.git.commit.signingKey", line, nil, "%s is not mapped: map its git.asc (and passphrase), or imagebump would commit unsigned", m.secret(a.Namespace, sk.SecretRef.Name))
				ok = false
			case keys["git.asc"] == "":
				m.p.fail(a.Object, "spec.git.commit.signingKey", line, nil, "Secret %s/%s has no git.asc key (it has %s)", a.Namespace, sk.SecretRef.Name, keyList(keys))
				ok = false
			default:
				out.SigningKeyFile, out.SigningPassphraseFile = keys["git.asc"], keys["passphrase"]
			}
		default:
			m.p.fail(a.Object, "spec.git.commit.signingKey.type", src.line("spec.git.commit.signingKey.type"), nil, "%q signing is not supported yet: imagebump signs with OpenPGP keys (type gpg)", sk.Type)
			ok = false
		}
	}
	fm := &config.FluxMessage{Automation: a.Namespace + "/" + a.Name, APIVersion: a.APIVersion, Template: c.MessageTemplate}
	if fm.APIVersion == fluxmsg.APIVersionV1 {
		fm.APIVersion = "" // the default
	}
	if err := fluxmsg.Check(a.APIVersion, c.MessageTemplate); err != nil {
		m.p.fail(a.Object, "spec.git.commit.messageTemplate", src.line("spec.git.commit.messageTemplate"), err, "invalid template")
		ok = false
	}
	if c.MessageTemplate == "" {
		m.p.note(Info, a.Object, "spec.git.commit.messageTemplate", src.line("spec.git.commit"), "not set: commits keep Flux's message %q; drop commit.fluxMessage from an exported config for imagebump's, which lists the bumps", fluxmsg.DefaultTemplate)
	}
	for _, k := range sortedKeys(c.MessageTemplateValues) {
		v := c.MessageTemplateValues[k]
		if v == "" {
			m.p.note(Warning, a.Object, "spec.git.commit.messageTemplateValues."+k, src.line("spec.git.commit.messageTemplateValues."+k), "empty: left out, so {{ .Values.%s }} prints <no value>", k)
			continue
		}
		fm.Values = append(fm.Values, config.TemplateValue{Name: k, Value: v})
	}
	out.FluxMessage = fm
	return out, ok
}

// push maps git.push.
func (m *mapper) push(a *ImageUpdateAutomation, branch string) *config.Push {
	p := a.Spec.GitSpec.Push
	if p == nil {
		return nil
	}
	out := &config.Push{Refspec: p.Refspec}
	if p.Branch != branch {
		out.Branch = p.Branch
	}
	for _, k := range sortedKeys(p.Options) {
		if v := p.Options[k]; v != "" {
			out.Options = append(out.Options, k+"="+v)
		} else {
			out.Options = append(out.Options, k)
		}
	}
	if out.Branch == "" && out.Refspec == "" && len(out.Options) == 0 {
		return nil
	}
	return out
}
