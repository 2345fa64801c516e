package config

import (
	"errors"
	"fmt"
	"net/mail"
	"net/url"
	"path"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"

	"github.com/imagebump/imagebump/internal/cloudhost"
	"github.com/imagebump/imagebump/internal/fluxmsg"
	"github.com/imagebump/imagebump/internal/msgtemplate"
	"github.com/imagebump/imagebump/internal/scpurl"
	"github.com/imagebump/imagebump/internal/secretfile"
	"github.com/imagebump/imagebump/policy"
)

// validator checks the rules the types cannot express and applies defaults.
// It works on whatever the decoder could decode, and decides whether a key
// was given by the decoder's record of positions, so that a value that
// failed to decode is not also reported as missing.
type validator struct {
	*decoder
	c *Config
}

func (v *validator) validate() {
	v.registries()
	v.images()
	v.topLevel()
	v.targets()
	v.webhooks()
	if v.c.MaxFileSize != "" {
		if _, err := ParseByteSize(v.c.MaxFileSize); err != nil {
			v.add(v.at("maxFileSize"), "maxFileSize", "%v", err)
		}
	}
	v.secretRefs()
}

// has reports whether the key at path was written.
func (v *validator) has(path string) bool {
	_, ok := v.keys[path]
	return ok
}

// at returns the position of the value at path or, when it was not written,
// of the closest enclosing value.
func (v *validator) at(path string) pos {
	for {
		if p, ok := v.values[path]; ok {
			return p
		}
		i := strings.LastIndexAny(path, ".[")
		if i < 0 {
			return pos{line: 1, col: 1}
		}
		path = path[:i]
	}
}

// useAt returns the position of the value at path, or, when path or one
// of its parents is an alias, of the nearest alias: where this use of the
// value is written. Duplicates are reported there, since an aliased entry
// would otherwise be placed at the entry it repeats.
func (v *validator) useAt(path string) pos {
	for p := path; ; {
		if a, ok := v.aliases[p]; ok {
			return a
		}
		i := strings.LastIndexAny(p, ".[")
		if i < 0 {
			return v.at(path)
		}
		p = p[:i]
	}
}

// keyAt returns the position of the key at path, or of its value.
func (v *validator) keyAt(path string) pos {
	if p, ok := v.keys[path]; ok {
		return p
	}
	return v.at(path)
}

// good reports whether the key at path was written and its value decoded.
func (v *validator) good(path string) bool {
	return v.has(path) && !v.bad[path]
}

// require reports a missing key; it returns whether the key is there. A key
// under a value that failed to decode is not reported again.
func (v *validator) require(parent, key string) bool {
	if v.has(joinPath(parent, key)) {
		return true
	}
	if !v.bad[parent] {
		v.add(v.at(parent), parent, "missing required key %q", key)
	}
	return false
}

// hasErrorsUnder reports whether a problem was found at path or below it.
func (v *validator) hasErrorsUnder(path string) bool {
	for _, e := range v.errs {
		if e.Path == path || strings.HasPrefix(e.Path, path+".") || strings.HasPrefix(e.Path, path+"[") {
			return true
		}
	}
	return false
}

func (v *validator) registries() {
	first := map[string]int{}
	for i := range v.c.Registries {
		r := &v.c.Registries[i]
		p := fmt.Sprintf("registries[%d]", i)
		r.Line = v.at(p).line
		if v.require(p, "host") && r.Host != "" {
			if err := checkHost(r.Host); err != nil {
				v.add(v.at(p+".host"), p+".host", "%v", err)
			} else {
				reg, err := name.NewRegistry(r.Host)
				if err != nil {
					v.wrap(v.at(p+".host"), p+".host", err, "invalid host")
				} else if line, dup := first[strings.ToLower(reg.RegistryStr())]; dup {
					// Host names are case-insensitive, as the registry
					// client matches them.
					v.add(v.useAt(p+".host"), p+".host", "duplicate registry %q (first at line %d)%s", r.Host, line, caseNote(r.Host))
				} else {
					first[strings.ToLower(reg.RegistryStr())] = v.useAt(p + ".host").line
				}
			}
		}
		if v.good(p + ".auth") {
			v.registryAuth(p + ".auth")
		}
		v.registryProvider(p, r)
		if v.good(p + ".rateLimit") {
			rp := p + ".rateLimit"
			if v.require(rp, "requestsPerSecond") && v.good(rp+".requestsPerSecond") && r.RateLimit.RequestsPerSecond < minRequestsPerSecond {
				v.add(v.at(rp+".requestsPerSecond"), rp+".requestsPerSecond", "must be at least %v (one request every %v seconds), got %v: slower, a repository's listing outlasts its repositoryTimeout", minRequestsPerSecond, 1/minRequestsPerSecond, r.RateLimit.RequestsPerSecond)
			}
			if v.good(rp+".burst") && r.RateLimit.Burst < 1 {
				v.add(v.at(rp+".burst"), rp+".burst", "must be at least 1, got %d", r.RateLimit.Burst)
			}
		}
		for key, n := range map[string]int{"maxPages": r.MaxPages, "maxTags": r.MaxTags} {
			if v.has(p+"."+key) && v.good(p+"."+key) && n < 1 {
				v.add(v.at(p+"."+key), p+"."+key, "must be at least 1, got %d", n)
			}
		}
		// A request needs a round trip and more: shorter bounds fail every
		// request and blame the registry.
		for key, d := range map[string]time.Duration{"timeout": r.Timeout, "repositoryTimeout": r.RepositoryTimeout} {
			if d != 0 && d < time.Second {
				v.add(v.at(p+"."+key), p+"."+key, "must be at least 1s, got %v", d)
			}
		}
		if r.Retries != nil && *r.Retries < 0 {
			v.add(v.at(p+".retries"), p+".retries", "must be 0 or more, got %d", *r.Retries)
		}
		if v.good(p+".concurrency") && r.Concurrency < 1 {
			v.add(v.at(p+".concurrency"), p+".concurrency", "must be at least 1, got %d", r.Concurrency)
		}
	}
}

// registryProvider checks registries[].provider against the host and auth:
// a cloud provider takes no auth, and needs a host name of its cloud.
func (v *validator) registryProvider(p string, r *Registry) {
	pp := p + ".provider"
	if !v.good(pp) || r.Provider == "" || r.Provider == cloudhost.Generic {
		return
	}
	if v.has(p + ".auth") {
		v.add(v.keyAt(pp), pp, "provider %s and auth both give credentials; keep one (provider: generic uses auth)", r.Provider)
	}
	if why := cloudhost.Mismatch(r.Provider, r.Host); why != "" {
		v.add(v.at(pp), pp, "%s", why)
	}
	if r.Insecure && cloudhost.Resolve(r.Provider, r.Host) != cloudhost.Generic {
		ip := p + ".insecure"
		v.add(v.at(ip), ip, "insecure with provider %s: a cloud's registry never serves plain HTTP, and the workload's cloud token would cross the network in the clear; remove insecure", r.Provider)
	}
}

// minRequestsPerSecond is the slowest rate limit: one request every 100
// seconds.
const minRequestsPerSecond = 0.01

// caseNote explains a duplicate host written with capitals.
func caseNote(h string) string {
	if h != strings.ToLower(h) {
		return "; host names do not depend on case"
	}
	return ""
}

// ErrUserInfo is the error of a registry host or repository with a user
// name or password before its host (USER:PASSWORD@HOST), which it does
// not quote: what is there may be a secret.
var ErrUserInfo = errors.New("holds a user name or password before the host (USER:PASSWORD@HOST), not shown here; give the host alone, and the credentials in the registry's auth (usernameFile with passwordFile, or tokenFile)")

// CheckUserInfo returns ErrUserInfo when the image reference or
// repository s has an @ that does not start a digest: a user name or
// password before its host, which no message may quote.
func CheckUserInfo(s string) error {
	if i := strings.LastIndex(s, "@"); i >= 0 && !digestRE.MatchString(s[i+1:]) {
		return ErrUserInfo
	}
	return nil
}

// digestRE matches what follows the @ of a reference with a digest:
// ALGORITHM:HEX, as sha256:0f3e...
var digestRE = regexp.MustCompile(`^[a-z0-9]+([+._-][a-z0-9]+)*:[a-zA-Z0-9=_-]+$`)

// checkHost checks a registry host: a host name or address with an optional
// port, no scheme, no path.
func checkHost(h string) error {
	if strings.Contains(h, "@") {
		return ErrUserInfo
	}
	if strings.Contains(h, "://") {
		return fmt.Errorf("%q has a scheme; give the host only (set insecure: true for plain HTTP)", h)
	}
	if strings.ContainsAny(h, "/?#") {
		return fmt.Errorf("%q has a path; give the host only", h)
	}
	u, err := url.Parse("//" + h)
	if err != nil || u.Host != h || u.User != nil {
		return fmt.Errorf("%q is not a host[:port]", h)
	}
	if strings.HasSuffix(h, ":") {
		return fmt.Errorf("%q ends with ':' and no port; give the port, or leave out the ':'", h)
	}
	if port := u.Port(); port != "" {
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			return fmt.Errorf("%q: port %s is not between 1 and 65535", h, port)
		}
	}
	return nil
}

func (v *validator) registryAuth(p string) {
	methods := v.authMethods(p, []string{"dockerConfig", "tokenFile"})
	if len(methods) == 0 && !v.has(p+".usernameFile") && !v.has(p+".passwordFile") && !v.unknown[p] {
		v.add(v.at(p), p, "set one of dockerConfig, usernameFile with passwordFile, tokenFile (or remove auth for the default Docker keychain)")
	}
}

// authMethods checks the credential keys of the auth mapping at p: the
// usernameFile/passwordFile pair and the given single-key methods. It reports
// a pair given by half and more than one method, and returns the methods
// given.
func (v *validator) authMethods(p string, single []string) []string {
	type method struct{ key, name string }
	var given []method
	for _, k := range single {
		if v.has(p + "." + k) {
			given = append(given, method{k, k})
		}
	}
	user, pass := v.has(p+".usernameFile"), v.has(p+".passwordFile")
	switch {
	case user && !pass:
		v.add(v.keyAt(p+".usernameFile"), p, "usernameFile needs passwordFile")
	case pass && !user:
		v.add(v.keyAt(p+".passwordFile"), p, "passwordFile needs usernameFile")
	case user && pass:
		given = append(given, method{"usernameFile", "usernameFile with passwordFile"})
	}
	// Report at the key that comes last in the file: the one that clashes.
	for i := 1; i < len(given); i++ {
		a, b := given[0], given[i]
		pa, pb := v.keyAt(p+"."+a.key), v.keyAt(p+"."+b.key)
		if pb.line < pa.line || (pb.line == pa.line && pb.col < pa.col) {
			a, b, pb = b, a, pa
		}
		v.add(pb, p, "more than one auth method: %s and %s; keep one", a.name, b.name)
	}
	names := make([]string, len(given))
	for i, m := range given {
		names[i] = m.key
	}
	return names
}

var (
	dnsLabelRE     = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)
	dnsSubdomainRE = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)
)

// checkImageName checks NAME or NAMESPACE:NAME, with Kubernetes' rules: the
// namespace is a lowercase RFC 1123 label, the name an RFC 1123 subdomain.
func checkImageName(s string) error {
	ns, n, found := strings.Cut(s, ":")
	if !found {
		ns, n = DefaultNamespace, s
	}
	if len(ns) > 63 || !dnsLabelRE.MatchString(ns) {
		return fmt.Errorf("namespace %q must be a lowercase RFC 1123 label (a-z, 0-9, '-', at most 63 characters, starting and ending alphanumeric)", ns)
	}
	if len(n) > 253 || !dnsSubdomainRE.MatchString(n) {
		return fmt.Errorf("name %q must be a lowercase RFC 1123 subdomain (a-z, 0-9, '-', '.', at most 253 characters, starting and ending alphanumeric); write NAME or NAMESPACE:NAME", n)
	}
	return nil
}

// CheckRepository checks an image repository without tag or digest, as an
// image's repository field is checked: its registry's port must be a port.
func CheckRepository(s string) error {
	if err := CheckUserInfo(s); err != nil {
		return err
	}
	if strings.Contains(s, "@") {
		return fmt.Errorf("%q has a digest; give the repository only", s)
	}
	if i := strings.LastIndex(s, "/"); strings.Contains(s[i+1:], ":") {
		return fmt.Errorf("%q has a tag; give the repository only", s)
	}
	if strings.Contains(s, "://") {
		return fmt.Errorf("%q has a scheme; give the repository only, such as ghcr.io/acme/app", s)
	}
	r, err := name.NewRepository(s)
	if err != nil {
		return fmt.Errorf("invalid repository %q: %w", s, err)
	}
	// go-containerregistry takes any number for a port; the dial then
	// fails each cycle, as if the network did.
	if host := r.RegistryStr(); strings.Contains(s, host) {
		if err := checkHost(host); err != nil {
			return fmt.Errorf("repository %q: registry %w", s, err)
		}
	}
	return nil
}

var platformPartRE = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]*$`)

// checkPlatform checks os/arch[/variant].
func checkPlatform(s string) error {
	parts := strings.Split(s, "/")
	if len(parts) < 2 || len(parts) > 3 {
		return fmt.Errorf("%q is not os/arch[/variant], such as linux/amd64 or linux/arm/v7", s)
	}
	for _, part := range parts {
		if !platformPartRE.MatchString(part) {
			return fmt.Errorf("%q is not os/arch[/variant]: %q is not a lowercase os, architecture or variant", s, part)
		}
	}
	return nil
}

func (v *validator) images() {
	v.c.images = map[string]int{}
	first := map[string]int{}
	for i := range v.c.Images {
		im := &v.c.Images[i]
		p := fmt.Sprintf("images[%d]", i)
		im.Line = v.at(p).line
		if v.require(p, "name") && im.Name != "" {
			if err := checkImageName(im.Name); err != nil {
				v.add(v.at(p+".name"), p+".name", "%v", err)
			} else {
				im.Name = NormalizeName(im.Name)
				if line, dup := first[im.Name]; dup {
					v.add(v.useAt(p+".name"), p+".name", "duplicate image %q (first at line %d)", im.Name, line)
				} else {
					first[im.Name] = v.useAt(p + ".name").line
					v.c.images[im.Name] = i
				}
			}
		}
		if v.require(p, "repository") && im.Repository != "" {
			if err := CheckRepository(im.Repository); err != nil {
				v.add(v.at(p+".repository"), p+".repository", "%v", err)
			}
		}
		v.rule(im, p)
		if v.good(p + ".filterTags") {
			v.filterTags(im.FilterTags, p+".filterTags")
		}
		if im.Digest == "" {
			im.Digest = policy.DigestNever
		}
		if im.Platform != "" {
			if err := checkPlatform(im.Platform); err != nil {
				v.add(v.at(p+".platform"), p+".platform", "%v", err)
			} else if im.Digest == policy.DigestNever && !v.bad[p+".digest"] {
				// platform chooses which digest is pinned; with no digest
				// it would do nothing.
				v.add(v.at(p+".platform"), p+".platform", "only used with digest: always or ifNotPresent (it chooses which platform's digest is pinned); set digest, or remove platform")
			}
		}
		if vf := im.Verify; vf != nil && v.good(p+".verify") {
			if err := vf.Options().Validate(); err != nil {
				v.wrap(v.keyAt(p+".verify"), p+".verify", err, "invalid signature policy")
			}
		}
		if h := im.Hold; h != nil && v.good(p+".hold") {
			hp := p + ".hold"
			v.require(hp, "reason")
			if h.Until != "" {
				t, err := ParseHoldTime(h.Until)
				if err != nil {
					v.add(v.at(hp+".until"), hp+".until", "%v", err)
				}
				h.until = t
			}
		}
		if v.hasErrorsUnder(p) {
			v.ruleErrors(im, p)
			v.filterErrors(im, p)
			continue
		}
		pol, err := policy.New(im.Spec())
		if err != nil {
			// policy.New stops at its first error: the filters' are
			// looked for one by one, so that every error shows at once.
			if !isFilterError(err) {
				v.policyError(p, err)
			}
			v.filterErrors(im, p)
			continue
		}
		im.policy = pol
	}
}

// ruleErrors reports the error of an image's rule (a semver range that
// is none, an order that is neither asc nor desc) when another of the
// entry's keys keeps its policy from being compiled (a bad name, say), so
// that every error shows at once: the rule is checked alone.
func (v *validator) ruleErrors(im *Image, p string) {
	if !v.has(p+".policy") || v.hasErrorsUnder(p+".policy") {
		return
	}
	full := im.Spec()
	s := policy.Spec{SemVer: full.SemVer, Alphabetical: full.Alphabetical, Numerical: full.Numerical, Digest: policy.DigestNever}
	if _, err := policy.New(s); err != nil && !isFilterError(err) {
		v.policyError(p, err)
	}
}

// filterErrors reports the errors of an image's filterTags and of each of
// its exclude patterns when another keeps its policy from being compiled
// (a bad rule, say), so that every error shows at once: each is checked
// alone, with a stand-in rule.
func (v *validator) filterErrors(im *Image, p string) {
	full := im.Spec()
	base := policy.Spec{Alphabetical: "asc", Digest: policy.DigestNever}
	var specs []policy.Spec
	if !v.hasErrorsUnder(p + ".filterTags") {
		s := base
		s.FilterPattern, s.FilterExtract = full.FilterPattern, full.FilterExtract
		specs = append(specs, s)
	}
	if !v.hasErrorsUnder(p + ".exclude") {
		for i, pattern := range full.Exclude {
			// Empty patterns before it keep the index in the error.
			s := base
			s.Exclude = make([]string, i+1)
			s.Exclude[i] = pattern
			specs = append(specs, s)
		}
	}
	for _, s := range specs {
		if _, err := policy.New(s); isFilterError(err) {
			v.policyError(p, err)
		}
	}
}

// isFilterError reports whether err is policy.New's about a filterTags or
// exclude field.
func isFilterError(err error) bool {
	var se *policy.SpecError
	return errors.As(err, &se) && (strings.HasPrefix(se.Field, "filterTags.") || strings.HasPrefix(se.Field, "exclude["))
}

// policyError reports an error of policy.New for the image at p, at the
// key it names. Package policy owns the rules of a policy (ranges, patterns,
// extract groups, digest modes): config checks only the shape of the YAML
// and maps policy's verdict to a file position, so the two never disagree.
func (v *validator) policyError(p string, err error) {
	var se *policy.SpecError
	if !errors.As(err, &se) {
		v.wrap(v.keyAt(p+".policy"), p+".policy", err, "invalid policy")
		return
	}
	fp := p + "." + se.Field
	switch se.Field {
	case "semver", "alphabetical", "numerical":
		fp = p + ".policy." + se.Field
	}
	// policy's message reads `FIELD: invalid range "x": why`; the position
	// and key path already name the field.
	v.add(v.at(fp), fp, "%s", strings.TrimPrefix(se.Error(), se.Field+": "))
}

// rule checks that exactly one selection rule is set, and its value.
func (v *validator) rule(im *Image, p string) {
	rp := p + ".policy"
	if !v.require(p, "policy") {
		return
	}
	var kinds []string
	for _, k := range []string{"semver", "alphabetical", "numerical"} {
		if v.has(rp + "." + k) {
			kinds = append(kinds, k)
		}
	}
	switch len(kinds) {
	case 0:
		// A misspelt kind is reported as an unknown key already.
		if !v.bad[rp] && !v.unknown[rp] {
			v.add(v.at(rp), rp, "set exactly one of semver, alphabetical, numerical")
		}
	case 1:
	default:
		for _, k := range kinds[1:] {
			v.add(v.keyAt(rp+"."+k), rp, "set exactly one of semver, alphabetical, numerical; found %s and %s", kinds[0], k)
		}
	}
}

func (v *validator) filterTags(f *FilterTags, p string) {
	if !v.has(p + ".pattern") {
		if v.has(p + ".extract") {
			v.add(v.keyAt(p+".extract"), p, "extract needs pattern")
		} else {
			v.add(v.at(p), p, "missing required key %q", "pattern")
		}
		return
	}
}

// topLevel checks the top-level target keys.
func (v *validator) topLevel() {
	if v.has("targets") {
		for _, k := range []string{"git", "commit", "push", "schedule"} {
			if v.has(k) {
				v.add(v.keyAt(k), k, "not allowed with targets; move it into each target")
			}
		}
		return
	}
	if !v.has("git") {
		for _, k := range []string{"commit", "push", "schedule"} {
			if v.has(k) {
				v.add(v.keyAt(k), k, "needs git: the repository it applies to")
			}
		}
		return
	}
	v.target("", v.c.Git, &v.c.Commit, v.c.Push, v.c.Schedule)
}

func (v *validator) targets() {
	if v.has("targets") && len(v.c.TargetList) == 0 {
		v.add(v.at("targets"), "targets", "empty list; add a target or remove the key")
	}
	first := map[string]int{}
	for i := range v.c.TargetList {
		t := &v.c.TargetList[i]
		p := fmt.Sprintf("targets[%d]", i)
		t.Line = v.at(p).line
		v.uniqueLabel(p, t.Name, "target", "", first)
		v.require(p, "git")
		v.target(p, t.Git, &t.Commit, t.Push, t.Schedule)
		if v.has(p+".policies") && len(t.Policies) == 0 {
			// Left out, the key means every policy; an empty list
			// reads as none.
			v.add(v.at(p+".policies"), p+".policies", "empty list; remove the key to apply every image policy, or list the policies (globs such as apps:*)")
		}
		for j, g := range t.Policies {
			gp := fmt.Sprintf("%s.policies[%d]", p, j)
			if g == "" {
				continue
			}
			if _, err := path.Match(NormalizeName(g), ""); err != nil {
				v.wrap(v.at(gp), gp, err, "invalid glob %q", g)
			}
		}
	}
	v.sharedPushBranches()
}

// sharedPushBranches refuses two targets that push one branch of one
// repository: each cycle rebuilds the branch on git.branch with its own
// target's bumps only, so each would drop the other's.
func (v *validator) sharedPushBranches() {
	first := map[string]int{}
	for i := range v.c.TargetList {
		t := &v.c.TargetList[i]
		if t.Git == nil || t.Push == nil || t.Push.Branch == "" || t.Git.URL == "" {
			continue
		}
		k := repositoryKey(t.Git.URL) + "\x00" + t.Push.Branch
		j, dup := first[k]
		if !dup {
			first[k] = i
			continue
		}
		p := fmt.Sprintf("targets[%d].push.branch", i)
		other := v.c.TargetList[j]
		v.add(v.useAt(p), p, "push.branch %q of this repository is also pushed by target %q (line %d): each cycle rebuilds the branch with its own target's bumps only, so each target would drop the other's; give each target its own push.branch, or make them one target",
			t.Push.Branch, other.Name, v.useAt(fmt.Sprintf("targets[%d].push.branch", j)).line)
	}
}

// repositoryKey is what two Git URLs of one repository share: the host
// name and the path, without scheme, user, port, trailing slash or .git,
// so that the https:// and the ssh:// (or scp-like) URL of a repository
// are the same.
func repositoryKey(raw string) string {
	s := raw
	if u, err := url.Parse(raw); err == nil && u.Host != "" {
		s = strings.ToLower(u.Hostname()) + "/" + strings.TrimPrefix(u.Path, "/")
	} else if a, ok := scpurl.Parse(raw); ok {
		s = strings.ToLower(a.Host) + "/" + strings.TrimPrefix(a.Path, "/")
	}
	return strings.TrimSuffix(strings.TrimSuffix(s, "/"), ".git")
}

// uniqueLabel checks the required name of the entry at p: a lowercase RFC
// 1123 label, not taken by an earlier entry of the same kind (first maps
// names to the line that took them). why ends the label message.
func (v *validator) uniqueLabel(p, name, kind, why string, first map[string]int) {
	if !v.require(p, "name") || name == "" {
		return
	}
	switch line, dup := first[name]; {
	case len(name) > 63 || !dnsLabelRE.MatchString(name):
		v.add(v.at(p+".name"), p+".name", "%q must be a lowercase RFC 1123 label (a-z, 0-9, '-', at most 63 characters, starting and ending alphanumeric)%s", name, why)
	case dup:
		v.add(v.useAt(p+".name"), p+".name", "duplicate %s %q (first at line %d)", kind, name, line)
	default:
		first[name] = v.useAt(p + ".name").line
	}
}

// webhooks checks the webhook endpoints: unique names that fit in a URL
// path and a label, and one way to authenticate each.
func (v *validator) webhooks() {
	first := map[string]int{}
	for i := range v.c.Webhooks {
		h := &v.c.Webhooks[i]
		p := fmt.Sprintf("webhooks[%d]", i)
		h.Line = v.at(p).line
		v.uniqueLabel(p, h.Name, "webhook", ": it is the last element of the path /hook/NAME", first)
		secret, token := v.has(p+".secretFile"), v.has(p+".tokenFile")
		switch {
		case secret && token:
			v.add(v.keyAt(p+".tokenFile"), p, "secretFile and tokenFile: keep one (secretFile for senders that sign the body, tokenFile for a bearer token)")
		case !secret && !token && !v.bad[p] && !v.unknown[p]:
			v.add(v.at(p), p, "set secretFile (HMAC-SHA256 of the body, X-Hub-Signature-256) or tokenFile (Authorization: Bearer): a webhook is never open to anyone")
		}
		if h.TokenInQuery && !token {
			v.add(v.keyAt(p+".tokenInQuery"), p+".tokenInQuery", "needs tokenFile: only a bearer token can travel in the query")
		}
	}
}

// target checks the keys of one target, at key path p ("" for the top
// level), and fills in the default commit author.
func (v *validator) target(p string, g *Git, commit **Commit, push *Push, schedule string) {
	if v.good(joinPath(p, "git")) {
		v.git(g, joinPath(p, "git"))
	}
	if *commit == nil {
		*commit = &Commit{}
	}
	v.commit(*commit, joinPath(p, "commit"))
	if v.good(joinPath(p, "push")) {
		v.push(push, g, joinPath(p, "push"))
	}
	if schedule != "" {
		if _, err := ParseSchedule(schedule); err != nil {
			sp := joinPath(p, "schedule")
			v.wrap(v.at(sp), sp, err, "invalid schedule %q", schedule)
		}
	}
}

// gitScheme returns the transport of a Git URL: https, http, ssh or file;
// scp-like addresses (git@host:path) are ssh. It reports URLs with a password.
func gitScheme(s string) (string, error) {
	if a, ok := scpurl.Parse(s); ok && a.Plain() {
		if strings.Contains(a.Host, ":") {
			// go-git reads "[" as the host of git@[::1]:path.
			user := a.User
			if user == "" {
				user = "git"
			}
			return "", fmt.Errorf("an IPv6 address is not read in the user@host:path form: write ssh://%s@%s/%s", user, a.HostPort(), strings.TrimPrefix(a.Path, "/"))
		}
		return "ssh", nil
	}
	u, err := url.Parse(s)
	if err != nil || u.Scheme == "" || u.Opaque != "" {
		// url.Parse errors echo the URL, which may hold a password; an
		// opaque one (user:password@host:path) has no "//" at all.
		return "", errors.New("not a Git URL: use https://, http://, ssh://, file:// or user@host:path")
	}
	if _, hasPassword := u.User.Password(); hasPassword {
		return "", errors.New("the URL holds a password; put credentials in auth (tokenFile, usernameFile and passwordFile)")
	}
	if u.User != nil && (u.Scheme == "https" || u.Scheme == "http") {
		// https://TOKEN@host/... is a common way to pass a token. imagebump
		// takes no credential from a URL (it would land in logs and in
		// .git/config), and dropping it quietly would fail later as "auth
		// required": say so now.
		return "", errors.New("the URL holds a user name or token before '@'; imagebump takes no credentials from URLs: remove it and put the token in a file named by auth.tokenFile (or the user name in auth.usernameFile)")
	}
	if u.RawQuery != "" || u.Fragment != "" {
		// ?private_token=... is a token, and Git sends no query: the
		// clone failed later with a misleading redirect error.
		return "", errors.New("the URL has a query or a fragment (after ? or #), which Git does not send, and which may hold a token; give the repository's URL alone and credentials in auth (tokenFile)")
	}
	switch u.Scheme {
	case "https", "http", "ssh":
		if u.Host == "" {
			return "", fmt.Errorf("a %s URL needs a host", u.Scheme)
		}
	case "file":
		// file://../x and file://x read ".." and "x" as a host: Git
		// takes no host there, and the path would be elsewhere.
		if u.Host != "" && u.Host != "localhost" {
			return "", fmt.Errorf("a file URL takes an absolute path after three slashes, and %q reads %q as a host: write file:///ABSOLUTE/PATH", u.String(), u.Host)
		}
		if u.Path == "" {
			return "", errors.New("a file URL needs a path: write file:///ABSOLUTE/PATH")
		}
	default:
		return "", fmt.Errorf("scheme %q is not supported: use https, http, ssh, file or user@host:path", u.Scheme)
	}
	return u.Scheme, nil
}

// globRE matches the glob patterns a path may be written with by mistake:
// *, ? and a [...] class. A lone '[' may be part of a folder's name.
var globRE = regexp.MustCompile(`[*?]|\[[^/\]]+\]`)

func (v *validator) git(g *Git, p string) {
	if g.Timeout != 0 && g.Timeout < 5*time.Second {
		v.add(v.at(p+".timeout"), p+".timeout", "must be at least 5s, got %v: a fetch needs round trips and more", g.Timeout)
	}
	scheme := ""
	if v.require(p, "url") && g.URL != "" {
		s, err := gitScheme(g.URL)
		if err != nil {
			v.add(v.at(p+".url"), p+".url", "%v", err)
		} else {
			scheme = s
		}
	}
	if g.Branch != "" {
		if err := checkBranch(g.Branch); err != nil {
			v.add(v.at(p+".branch"), p+".branch", "%v", err)
		}
	}
	for i, gp := range g.Paths {
		pp := fmt.Sprintf("%s.paths[%d]", p, i)
		if gp == "" {
			continue
		}
		clean := path.Clean(strings.ReplaceAll(gp, `\`, "/"))
		if path.IsAbs(clean) || clean == ".." || strings.HasPrefix(clean, "../") || filepath.IsAbs(gp) {
			v.add(v.at(pp), pp, "%q must be relative to the repository root and stay inside it", gp)
			continue
		}
		if globRE.MatchString(gp) {
			v.add(v.at(pp), pp, "%q: globs are not expanded: each path is a folder or a file relative to the repository root (apps, apps/web.yaml); list them, or give the folder that holds them", gp)
			continue
		}
		g.Paths[i] = clean
	}
	if v.good(p + ".auth") {
		v.gitAuth(g.Auth, scheme, p+".auth")
	}
	// An SSH remote's host key must be checked against keys the user
	// trusts; imagebump does not fall back to ~/.ssh/known_hosts, which a
	// container rarely has and a user rarely means.
	if scheme == "ssh" && (g.Auth == nil || (g.Auth.KnownHostsFile == "" && !g.Auth.InsecureIgnoreHostKey)) {
		where := p + ".url"
		if g.Auth != nil {
			where = p + ".auth"
		}
		v.add(v.at(where), where, "an SSH URL needs auth.knownHostsFile (the host keys to trust, e.g. from ssh-keyscan), or auth.insecureIgnoreHostKey: true to skip the check")
	}
}

func (v *validator) gitAuth(a *GitAuth, scheme, p string) {
	methods := v.authMethods(p, []string{"tokenFile", "sshKeyFile"})
	http := scheme == "https" || scheme == "http"
	for _, m := range methods {
		switch {
		case m == "sshKeyFile" && scheme != "" && scheme != "ssh":
			v.add(v.keyAt(p+".sshKeyFile"), p+".sshKeyFile", "needs an ssh:// or user@host:path URL, not %s", scheme)
		case m != "sshKeyFile" && scheme != "" && !http:
			v.add(v.keyAt(p+"."+m), p+"."+m, "needs an https:// or http:// URL, not %s", scheme)
		}
	}
	if v.has(p+".sshKeyPassphraseFile") && !v.has(p+".sshKeyFile") {
		v.add(v.keyAt(p+".sshKeyPassphraseFile"), p, "sshKeyPassphraseFile needs sshKeyFile")
	}
	if a.KnownHostsFile != "" && a.InsecureIgnoreHostKey {
		v.add(v.keyAt(p+".insecureIgnoreHostKey"), p, "knownHostsFile and insecureIgnoreHostKey: true exclude each other; keep one")
	}
	if scheme != "" && scheme != "ssh" {
		for _, k := range []string{"knownHostsFile", "insecureIgnoreHostKey"} {
			if v.has(p + "." + k) {
				v.add(v.keyAt(p+"."+k), p+"."+k, "applies to SSH URLs only, not %s", scheme)
			}
		}
	}
}

// checkBranch checks a branch name against Git's rules for ref names.
func checkBranch(b string) error {
	bad := func(why string) error { return fmt.Errorf("%q is not a valid branch name: %s", b, why) }
	switch {
	case strings.HasPrefix(b, "refs/"):
		return bad("give the branch name without refs/heads/")
	case strings.HasPrefix(b, "-"):
		return bad("it starts with '-'")
	case b == "@":
		return bad(`"@" is not a branch`)
	case strings.Contains(b, ".."), strings.Contains(b, "@{"), strings.Contains(b, "//"):
		return bad(`it contains "..", "@{" or "//"`)
	case strings.HasPrefix(b, "/"), strings.HasSuffix(b, "/"), strings.HasSuffix(b, "."):
		return bad("it starts or ends with '/', or ends with '.'")
	}
	for _, r := range b {
		if r < 0x20 || r == 0x7f || strings.ContainsRune(" ~^:?*[\\", r) {
			return bad(fmt.Sprintf("it contains %q", r))
		}
	}
	for _, part := range strings.Split(b, "/") {
		if strings.HasPrefix(part, ".") || strings.HasSuffix(part, ".lock") {
			return bad("a component starts with '.' or ends with \".lock\"")
		}
	}
	return nil
}

func (v *validator) commit(c *Commit, p string) {
	if c.Author.Name == "" {
		c.Author.Name = DefaultAuthorName
	}
	if c.Author.Email == "" {
		c.Author.Email = DefaultAuthorEmail
	} else if a, err := mail.ParseAddress(c.Author.Email); err != nil || a.Address != c.Author.Email {
		v.add(v.at(p+".author.email"), p+".author.email", "%q is not an email address (write the address only, such as bot@example.com)", c.Author.Email)
	}
	if c.MessageTemplate != "" {
		v.template(c.MessageTemplate, p+".messageTemplate")
	}
	if fm := c.FluxMessage; fm != nil && v.good(p+".fluxMessage") {
		fp := p + ".fluxMessage"
		if c.MessageTemplate != "" {
			v.add(v.keyAt(fp), fp, "excludes messageTemplate: a commit message is either imagebump's template or Flux's")
		}
		if ns, name, ok := strings.Cut(fm.Automation, "/"); fm.Automation != "" && (!ok || ns == "" || name == "" || strings.Contains(name, "/")) {
			v.add(v.at(fp+".automation"), fp+".automation", "%q is not NAMESPACE/NAME (the ImageUpdateAutomation the template was written for)", fm.Automation)
		}
		apiVersion := fm.APIVersion
		if apiVersion == "" {
			apiVersion = fluxmsg.APIVersionV1
		}
		if fm.Template != "" {
			if err := fluxmsg.Check(apiVersion, fm.Template); err != nil {
				v.wrap(v.at(fp+".template"), fp+".template", err, "invalid Flux template")
			}
		}
	}
	if v.has(p+".signingPassphraseFile") && !v.has(p+".signingKeyFile") {
		v.add(v.keyAt(p+".signingPassphraseFile"), p, "signingPassphraseFile needs signingKeyFile")
	}
}

// template checks that s parses as a Go text/template with the standard
// functions only.
func (v *validator) template(s, p string) {
	if err := msgtemplate.Check(p, s); err != nil {
		v.wrap(v.at(p), p, err, "invalid template")
	}
}

func (v *validator) push(push *Push, g *Git, p string) {
	if push.Branch != "" {
		if err := checkBranch(push.Branch); err != nil {
			v.add(v.at(p+".branch"), p+".branch", "%v", err)
		}
	}
	if rs := push.Refspec; rs != "" {
		src, dst, ok := strings.Cut(rs, ":")
		switch {
		case strings.HasPrefix(rs, "+"):
			v.add(v.at(p+".refspec"), p+".refspec", "%q forces the push; imagebump never force-pushes a refspec (remove the +)", rs)
		case !ok || src == "" || dst == "" || strings.Contains(dst, ":"):
			v.add(v.at(p+".refspec"), p+".refspec", "%q is not SRC:DST, such as refs/heads/auto:refs/for/main", rs)
		case g != nil && g.Branch != "":
			// The source must name the commit imagebump makes: known
			// here once git.branch is (without it, the remote's
			// default branch is only known at the clone).
			switch strings.TrimPrefix(src, "refs/heads/") {
			case "HEAD", "@", push.Branch, g.Branch:
			default:
				names := "HEAD or branch " + strconv.Quote(g.Branch)
				if push.Branch != "" {
					names = "HEAD, branch " + strconv.Quote(push.Branch) + " or " + strconv.Quote(g.Branch)
				}
				v.add(v.at(p+".refspec"), p+".refspec", "%q: the source must name the commit imagebump makes (%s), which is what the refspec sends", rs, names)
			}
		}
	}
	for i, o := range push.Options {
		op := fmt.Sprintf("%s.options[%d]", p, i)
		if k, _, _ := strings.Cut(o, "="); strings.TrimSpace(k) == "" || strings.ContainsAny(o, "\n\r\x00") {
			v.add(v.at(op), op, "%q is not a push option: write KEY or KEY=VALUE, such as merge_request.create", o)
		}
	}
	pr := push.PullRequest
	prp := p + ".pullRequest"
	if !v.good(prp) {
		return
	}
	v.require(prp, "provider")
	switch {
	case push.Branch == "":
		v.add(v.keyAt(prp), prp, "needs push.branch: the branch the pull request is opened from")
	case g != nil && push.Branch == g.Branch:
		v.add(v.keyAt(prp), prp, "push.branch %q is git.branch; a pull request needs another branch", push.Branch)
	}
	if pr.APIURL != "" {
		u, err := url.Parse(pr.APIURL)
		switch {
		case err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "":
			v.add(v.at(prp+".apiURL"), prp+".apiURL", "not an http:// or https:// URL")
		case u.User != nil:
			v.add(v.at(prp+".apiURL"), prp+".apiURL", "the URL holds credentials; use tokenFile")
		}
	}
	if !v.has(prp+".tokenFile") && (g == nil || g.Auth == nil || g.Auth.TokenFile == "") {
		v.add(v.keyAt(prp), prp, "needs tokenFile (or git.auth.tokenFile) for the %s API", orDefault(pr.Provider, "forge"))
	}
	if g != nil && strings.HasPrefix(strings.ToLower(g.URL), "file://") {
		v.add(v.keyAt(prp), prp, "a file:// repository has no forge to open pull requests on; remove pullRequest or use the forge's https:// or ssh:// URL")
	}
	if pr.Title != "" {
		v.template(pr.Title, prp+".title")
	}
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// resolvePaths makes the relative file paths in v (fields tagged
// config:"path") relative to dir instead.
func resolvePaths(v reflect.Value, dir string) {
	eachPathField(v, "", func(_, _ string, f field, fv reflect.Value) {
		switch {
		case fv.Kind() == reflect.String:
			// env:NAME names an environment variable, not a file.
			if p := fv.String(); p != "" && !filepath.IsAbs(p) && !(f.secret && secretfile.IsEnv(p)) {
				fv.SetString(filepath.Join(dir, p))
			}
		case fv.Kind() == reflect.Slice && fv.Type().Elem().Kind() == reflect.String:
			for i := range fv.Len() {
				if p := fv.Index(i).String(); p != "" && !filepath.IsAbs(p) {
					fv.Index(i).SetString(filepath.Join(dir, p))
				}
			}
		}
	})
}

// composite reports whether a value of kind k can hold struct fields.
func composite(k reflect.Kind) bool {
	return k == reflect.Pointer || k == reflect.Slice || k == reflect.Struct
}

// secretRefs checks every file reference of the config: env:NAME is
// allowed only on secret keys, and must name a variable properly.
func (v *validator) secretRefs() {
	eachPathField(reflect.ValueOf(v.c).Elem(), "", func(kp, key string, f field, fv reflect.Value) {
		if fv.Kind() != reflect.String {
			return
		}
		ref := fv.String()
		switch {
		case f.secret && secretfile.LooksInline(ref):
			// Shown as a path (missing, unreadable), it would reach
			// every log and report.
			v.add(v.at(kp), kp, "the value looks like the secret itself, not the path of a file holding it (the value is not shown here): secrets are never written in the config; put it in a file and give that file's path, or env:NAME")
		case !secretfile.IsEnv(ref):
		case !f.secret:
			v.add(v.at(kp), kp, "%q: env:NAME is only for secrets; %s takes a file path", ref, key)
		default:
			if err := secretfile.CheckRef(ref); err != nil {
				v.add(v.at(kp), kp, "%v", err)
			}
		}
	})
}
