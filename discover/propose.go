package discover

import (
	"cmp"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/imagebump/imagebump/config"
	"github.com/imagebump/imagebump/policy"
)

// Existing is an image policy of the config being extended.
type Existing struct {
	// Name is NAMESPACE:NAME.
	Name string
	// Repository is the image repository it watches.
	Repository string
	// Spec is its rule.
	Spec policy.Spec
}

// ProposeOptions are what Propose knows besides the inventory.
type ProposeOptions struct {
	// Tags holds each repository's tags, as the registry lists them. A
	// repository missing here (and from Errors) was not asked.
	Tags map[string][]string
	// Errors holds why listing a repository's tags failed.
	Errors map[string]error
	// Existing are the image policies of the config being extended: a
	// repository one of them watches keeps it, and new names avoid theirs.
	Existing []Existing
	// Targets are the targets of the config being extended, nil when it
	// has none (or there is no config). A new policy is named in a
	// namespace that a target scanning its files applies, when the
	// namespace of its objects is not one; a proposal that no target
	// applies says so in Unapplied.
	Targets []config.Target
}

// Proposal is the policy proposed for one image repository.
type Proposal struct {
	// Policy is the policy's name, NAMESPACE:NAME.
	Policy string
	// Repository is the image repository, as the files write it.
	Repository string
	// Kind is the kind of rule.
	Kind Kind
	// Spec is the rule. It is the zero Spec for KindUnordered.
	Spec policy.Spec
	// Existing is set when the config has the policy already: nothing is
	// added to it, and only markers are proposed.
	Existing bool
	// Choice is set for moving and unordered tags: nothing is written and
	// nothing marked; the user decides (Reason says what the choice is).
	Choice bool
	// Reason explains the rule in one sentence.
	Reason string
	// TagsInUse are the tags the files use, sorted, each once; "" stands
	// for a reference without a tag.
	TagsInUse []string
	// Uses are the references the rule covers: they get markers (unless
	// Choice).
	Uses []Use
	// Unmarked are the repository's references whose tag the rule does
	// not cover; they are left alone, and Reason says why.
	Unmarked []Untracked
	// Notes are what a reviewer should know.
	Notes []string
	// RegistryTags is how many tags the registry listed.
	RegistryTags int
	// Latest is what the rule picks among the registry's tags today, ""
	// when nothing matches, the registry failed, or there is no rule.
	Latest string
	// RegistryErr is why the registry's tags are unknown.
	RegistryErr error
	// Unapplied says which uses no target of the config applies (none
	// scans the file, or those that do leave the policy out of their
	// policies) and what to add; "" when every use is applied, when the
	// config has no targets, and for choices.
	Unapplied string
}

// Writes reports whether the proposal adds a config entry: a new policy
// that is no choice to make.
func (p *Proposal) Writes() bool { return !p.Existing && !p.Choice }

// Marks reports whether the proposal's uses get markers.
func (p *Proposal) Marks() bool { return !p.Choice }

// Propose groups the inventory's uses by repository and proposes a policy
// for each, sorted by repository. Names are derived from the repository
// (its last path element), in the Kubernetes namespace of the objects that
// use it when they agree on one and default otherwise, and never collide
// with each other or with opts.Existing. A repository that a marker or an
// existing policy already covers keeps that policy. With opts.Targets, a
// new name is put in a namespace the targets apply, and a proposal no
// target applies says so in Unapplied.
func Propose(inv *Inventory, opts ProposeOptions) []Proposal {
	groups := map[string][]Use{}
	for _, u := range inv.Uses {
		groups[u.Repository] = append(groups[u.Repository], u)
	}
	existing := map[string]Existing{}
	byRepo := map[string]Existing{}
	for _, e := range opts.Existing {
		existing[e.Name] = e
		if _, dup := byRepo[e.Repository]; !dup {
			byRepo[e.Repository] = e
		}
	}
	var out []Proposal
	for _, repo := range inv.Repositories() {
		p := propose(repo, groups[repo], existing, byRepo, opts.Tags[repo])
		p.ask(opts.Tags, opts.Errors)
		out = append(out, p)
	}
	markedTwice(out)
	assignNames(out, opts.Existing, opts.Targets)
	for i := range out {
		checkApplied(&out[i], opts.Targets)
	}
	return out
}

// propose makes the proposal for one repository, without its name when it
// needs a new one.
func propose(repo string, uses []Use, existing, byRepo map[string]Existing, registryTags []string) Proposal {
	p := Proposal{Repository: repo}
	var tags []string
	for _, u := range uses {
		tags = append(tags, u.Tag)
	}
	slices.SortFunc(tags, naturalCompare)
	p.TagsInUse = slices.Compact(tags)

	// A marker already on the values, or a policy of the config, decides
	// the policy.
	counts := map[string]int{}
	for _, u := range uses {
		for _, v := range u.Values {
			if v.Marker != "" {
				counts[v.Marker]++
			}
		}
	}
	var named []string
	for n := range counts {
		named = append(named, n)
	}
	slices.SortFunc(named, func(a, b string) int { return cmp.Or(counts[b]-counts[a], strings.Compare(a, b)) })
	if len(named) > 1 {
		p.Notes = append(p.Notes, fmt.Sprintf("its values are marked for several policies (%s); the proposal follows %s", strings.Join(named, ", "), named[0]))
	}
	if len(named) > 0 {
		p.Policy = named[0]
	}
	e, ok := existing[p.Policy]
	if !ok && p.Policy == "" {
		e, ok = byRepo[repo]
	}
	if ok {
		p.Policy, p.Existing, p.Spec = e.Name, true, e.Spec
		p.Kind = kindOfSpec(e.Spec)
		p.Reason = fmt.Sprintf("the config's policy %s watches it already", e.Name)
		if e.Repository != repo {
			p.Notes = append(p.Notes, fmt.Sprintf("the config's policy %s watches %s, but these values hold %s: a bump writes %s's tags", e.Name, e.Repository, repo, e.Repository))
		}
		p.cover(uses, func(int) string { return "" })
		return p
	}
	if p.Policy != "" {
		p.Notes = append(p.Notes, fmt.Sprintf("its values are marked for %s already, which the config lacks: the entry is proposed under that name", p.Policy))
	}

	// The rule follows the shape most uses share.
	shapes := make([]shape, len(uses))
	byFamily := map[string][]int{}
	for i, u := range uses {
		shapes[i] = classify(u.Tag, registryTags)
		byFamily[shapes[i].family] = append(byFamily[shapes[i].family], i)
	}
	var families []string
	for f := range byFamily {
		families = append(families, f)
	}
	slices.SortFunc(families, func(a, b string) int {
		sa, sb := shapes[byFamily[a][0]], shapes[byFamily[b][0]]
		return cmp.Or(len(byFamily[b])-len(byFamily[a]), sa.kind.rank()-sb.kind.rank(), strings.Compare(a, b))
	})
	chosen := byFamily[families[0]]
	s := shapes[chosen[0]]
	p.Kind = s.kind
	var members []shape
	digests := 0
	for _, i := range chosen {
		members = append(members, shapes[i])
		if uses[i].Digest != "" {
			digests++
		}
	}
	switch s.kind {
	case KindSemVer:
		p.Spec, p.Reason = semverRule(members)
	case KindTimestamp:
		p.Spec = policy.Spec{Alphabetical: "asc", FilterPattern: s.pattern, FilterExtract: s.extract}
		p.Reason = "timestamps: the pattern extracts the timestamp, and the latest sorts last"
	case KindNumerical:
		p.Spec = policy.Spec{Numerical: "asc", FilterPattern: s.pattern, FilterExtract: s.extract}
		p.Reason = "build numbers: the pattern extracts the number, and the highest wins"
	case KindMoving:
		tag := uses[chosen[0]].Tag
		if tag == "" {
			tag = "latest"
		}
		p.Choice = true
		p.Spec = policy.Spec{Alphabetical: "asc", FilterPattern: "^" + regexp.QuoteMeta(tag) + "$", Digest: policy.DigestAlways}
		p.Reason = s.why + ": imagebump can pin its digest (the rule shown, with digest: always, writes " + tag + "@sha256:…), or you can switch to a version tag; a choice to make, so nothing is written for it"
	case KindUnordered:
		p.Choice = true
		p.Reason = s.why + "; nothing is written for it"
	}
	if digests > 0 && !p.Choice {
		p.Spec.Digest = policy.DigestAlways
		if digests < len(chosen) {
			p.Notes = append(p.Notes, "some uses pin a digest and some do not: digest: always pins the digest wherever the whole reference is marked")
		}
	}
	inFamily := map[int]bool{}
	for _, i := range chosen {
		inFamily[i] = true
	}
	p.cover(uses, func(i int) string {
		if inFamily[i] {
			return ""
		}
		return fmt.Sprintf("its tag %q is not of the form the rule follows (%s, not %s): left unmarked, so it keeps its tag; if it should follow the policy, mark it by hand, else give it a policy of its own", uses[i].Tag, describeShape(shapes[i]), describeShape(s))
	})
	return p
}

// cover sorts uses into those the rule covers and the rest. other returns
// a reason to leave a use alone, or "".
func (p *Proposal) cover(uses []Use, other func(i int) string) {
	var pol *policy.Policy
	if p.Kind != KindUnordered {
		pol, _ = policy.New(p.Spec)
	}
	var left []Use
	for i, u := range uses {
		why := other(i)
		if why == "" && u.NoDigest && (p.Spec.Digest == policy.DigestAlways || p.Spec.Digest == policy.DigestIfNotPresent) {
			why = fmt.Sprintf("the policy pins digests (digest %s), and a marker would write NAME:TAG@DIGEST here, which kustomize edit set image reads as an image named NAME:TAG; left unmarked: give it a policy of its own without digest, and mark it by hand", p.Spec.Digest)
		}
		if why == "" && pol != nil && !p.Choice {
			tag := u.Tag
			if r := pol.Select([]string{tag}); tag == "" || r.Latest != tag {
				why = fmt.Sprintf("its tag %q is outside the rule (%s): left unmarked, so it keeps its tag and does not jump to the policy's pick; if it should follow the policy, mark it by hand, else give it a policy of its own", tag, Describe(p.Spec))
			}
		}
		if why != "" {
			p.Unmarked = append(p.Unmarked, Untracked{File: u.File, Line: u.Line, Source: u.Source, Path: u.Path, Value: u.Values[0].Value, Reason: why})
			left = append(left, u)
			continue
		}
		p.Uses = append(p.Uses, u)
	}
	if len(p.TagsInUse) > 1 && !p.Choice {
		p.Notes = append(p.Notes, tagsNote(p.TagsInUse, p.Uses, left))
	}
}

// tagsNote says what becomes of the values of a repository used with the
// tags order: those the policy covers (marked) move to its pick once
// marked, and those left unmarked (left, which Unmarked lists with the
// reason) keep their tags.
func tagsNote(order []string, marked, left []Use) string {
	if len(left) == 0 {
		var parts []string
		for _, t := range tagsAt(order, marked) {
			parts = append(parts, orLatest(t.tag)+" in "+strings.Join(t.at, ", "))
		}
		return fmt.Sprintf("used with %d tags (%s): one policy, and every marked value moves to its pick", len(order), strings.Join(parts, "; "))
	}
	if len(marked) == 0 {
		return fmt.Sprintf("used with %d tags, but none of its values follows the policy: those with %s are left unmarked, and keep their tags whatever it picks (Not tracked says why, and how to have one follow it)",
			len(order), tagsList(order, left))
	}
	return fmt.Sprintf("used with %d tags, but not all its values follow the policy: those with %s move to its pick once marked; those with %s are left unmarked, and keep their tags whatever it picks (Not tracked says why, and how to have one follow it)",
		len(order), tagsList(order, marked), tagsList(order, left))
}

// tagUses is a tag and where it is used (file:line).
type tagUses struct {
	tag string
	at  []string
}

// tagsAt returns the tags of uses, in the order of order, each with where
// it is used.
func tagsAt(order []string, uses []Use) []tagUses {
	where := map[string][]string{}
	for _, u := range uses {
		at := fmt.Sprintf("%s:%d", u.File, u.Line)
		if !slices.Contains(where[u.Tag], at) {
			where[u.Tag] = append(where[u.Tag], at)
		}
	}
	var out []tagUses
	for _, t := range order {
		if where[t] != nil {
			out = append(out, tagUses{tag: t, at: where[t]})
		}
	}
	return out
}

// tagsList writes the tags of uses with where each is used, as "1.2.0
// (apps/web.yaml:11) or 1.3.0 (apps/a.yaml:9, apps/b.yaml:9)".
func tagsList(order []string, uses []Use) string {
	var parts []string
	for _, t := range tagsAt(order, uses) {
		parts = append(parts, orLatest(t.tag)+" ("+strings.Join(t.at, ", ")+")")
	}
	if len(parts) < 2 {
		return strings.Join(parts, "")
	}
	return strings.Join(parts[:len(parts)-1], ", ") + " or " + parts[len(parts)-1]
}

// orLatest names a missing tag.
func orLatest(tag string) string {
	if tag == "" {
		return "(no tag)"
	}
	return tag
}

// describeShape names the form of a tag, for a note.
func describeShape(s shape) string {
	switch s.kind {
	case KindSemVer:
		return "a version"
	case KindTimestamp:
		return "a timestamp"
	case KindNumerical:
		return "a build number"
	case KindMoving:
		return "a moving tag"
	}
	return "no order"
}

// semverRule makes the range for version tags of one family: the major in
// use (the highest, when several are), the minor for 0.x, no bound for
// CalVer; its floor is the lowest version in use within it.
func semverRule(members []shape) (policy.Spec, string) {
	s := members[0]
	top := members[0].version
	for _, m := range members[1:] {
		if cmpVersion(m.version, top) > 0 {
			top = m.version
		}
	}
	var floor [3]int
	first := true
	pre := false
	for _, m := range members {
		keep := m.calver || m.version[0] == top[0] && (top[0] != 0 || m.version[1] == top[1])
		if !keep {
			continue
		}
		if first || cmpVersion(m.version, floor) < 0 {
			floor, first = m.version, false
		}
		pre = pre || m.pre
	}
	low := fmt.Sprintf("%d.%d.%d", floor[0], floor[1], floor[2])
	var rng, why string
	switch {
	case s.calver:
		rng = ">=" + low
		why = "calendar versions: the year is no major to keep, so the range has no upper bound"
	case top[0] == 0:
		rng = fmt.Sprintf(">=%s <0.%d.0", low, top[1]+1)
		why = fmt.Sprintf("versions below 1.0, where each minor may break: the range keeps minor 0.%d", top[1])
	default:
		rng = fmt.Sprintf(">=%s <%d.0.0", low, top[0]+1)
		why = fmt.Sprintf("versions: the range keeps major %d, the highest in use", top[0])
	}
	if pre {
		// Masterminds admits prereleases only where the range has one.
		rng = strings.Replace(rng, low, low+"-0", 1)
		if i := strings.LastIndex(rng, "<"); i > 0 {
			rng += "-0"
		}
		why += "; a prerelease is in use, so the range admits prereleases"
	}
	spec := policy.Spec{SemVer: rng}
	switch {
	case s.parts == 2:
		spec.FilterPattern = "^" + regexp.QuoteMeta(s.prefix) + `(?P<major>[0-9]+)\.(?P<minor>[0-9]+)` + regexp.QuoteMeta(s.suffix) + "$"
		spec.FilterExtract = "${major}.${minor}.0"
		why += "; the tags have two parts, so the pattern reads them as MAJOR.MINOR.0"
	case s.suffix != "":
		spec.FilterPattern = "^" + regexp.QuoteMeta(s.prefix) + `(?P<version>[0-9]+\.[0-9]+\.[0-9]+)` + regexp.QuoteMeta(s.suffix) + "$"
		spec.FilterExtract = "$version"
		why += "; the pattern keeps the " + strings.TrimPrefix(s.suffix, "-") + " variant"
	}
	return spec, why
}

// cmpVersion compares two version cores.
func cmpVersion(a, b [3]int) int {
	return cmp.Or(cmp.Compare(a[0], b[0]), cmp.Compare(a[1], b[1]), cmp.Compare(a[2], b[2]))
}

// kindOfSpec names the kind of an existing policy.
func kindOfSpec(s policy.Spec) Kind {
	switch {
	case s.SemVer != "":
		return KindSemVer
	case s.Numerical != "":
		return KindNumerical
	}
	return KindTimestamp
}

// ask records the registry's answer: what the rule picks today.
func (p *Proposal) ask(tags map[string][]string, errs map[string]error) {
	if err := errs[p.Repository]; err != nil {
		p.RegistryErr = err
		return
	}
	list, asked := tags[p.Repository]
	if !asked {
		return
	}
	p.RegistryTags = len(list)
	missing := []string{}
	for _, t := range p.TagsInUse {
		if t != "" && !slices.Contains(list, t) {
			missing = append(missing, t)
		}
	}
	if len(missing) > 0 {
		p.Notes = append(p.Notes, fmt.Sprintf("the registry does not list %s, in use here: check the repository's name and the registry's credentials", strings.Join(missing, ", ")))
	}
	if p.Kind == KindUnordered {
		return
	}
	pol, err := policy.New(p.Spec)
	if err != nil {
		p.Notes = append(p.Notes, "the rule is refused: "+err.Error())
		return
	}
	r := pol.Select(list)
	p.Latest = r.Latest
	if r.Latest == "" {
		p.Notes = append(p.Notes, "today the rule picks nothing: "+r.Summary())
	}
}

// naturalCompare orders strings with their runs of digits compared as
// numbers: 1.9.0 before 1.10.0, build-9 before build-41.
func naturalCompare(a, b string) int {
	for a != "" && b != "" {
		da, db := digitsRE().FindStringIndex(a), digitsRE().FindStringIndex(b)
		if da == nil || db == nil || da[0] != 0 || db[0] != 0 {
			// Compare up to the next digit run.
			na, nb := len(a), len(b)
			if da != nil {
				na = da[0]
			}
			if db != nil {
				nb = db[0]
			}
			if na == 0 || nb == 0 {
				return strings.Compare(a, b)
			}
			if c := strings.Compare(a[:na], b[:nb]); c != 0 {
				return c
			}
			a, b = a[na:], b[nb:]
			continue
		}
		x, y := strings.TrimLeft(a[:da[1]], "0"), strings.TrimLeft(b[:db[1]], "0")
		if c := cmp.Or(cmp.Compare(len(x), len(y)), strings.Compare(x, y)); c != 0 {
			return c
		}
		a, b = a[da[1]:], b[db[1]:]
	}
	return cmp.Compare(len(a), len(b))
}

// Describe writes a rule in one line, as the config would hold it.
func Describe(s policy.Spec) string {
	var parts []string
	switch {
	case s.SemVer != "":
		parts = append(parts, "semver '"+s.SemVer+"'")
	case s.Numerical != "":
		parts = append(parts, "numerical "+s.Numerical)
	case s.Alphabetical != "":
		parts = append(parts, "alphabetical "+s.Alphabetical)
	default:
		return "none"
	}
	if s.FilterPattern != "" {
		parts = append(parts, "filter '"+s.FilterPattern+"'")
	}
	if s.FilterExtract != "" {
		parts = append(parts, "extract '"+s.FilterExtract+"'")
	}
	if s.Digest == policy.DigestAlways || s.Digest == policy.DigestIfNotPresent {
		parts = append(parts, "digest "+string(s.Digest))
	}
	return strings.Join(parts, ", ")
}

// nameRE keeps the characters a policy name may hold.
var nameRE = lazyRegexp(`[^a-z0-9]+`)

// sanitize turns text into a name Kubernetes' RFC 1123 rules accept.
func sanitize(s string) string {
	s = strings.Trim(nameRE().ReplaceAllString(strings.ToLower(s), "-"), "-")
	if len(s) > 63 {
		s = strings.Trim(s[:63], "-")
	}
	return s
}

// markedTwice settles a policy name that markers give to the values of
// two repositories or more, which the config lacks (a marker copied from
// another file, most likely): a policy watches one repository, and both
// entries would make the config invalid. The repository with the most
// values marked so keeps the name; each other is left for the user to
// decide, saying where its markers are, since a bump would otherwise
// write another repository's tags into its values.
func markedTwice(props []Proposal) {
	marked := func(p *Proposal) (n int, at []string) {
		for _, u := range p.Uses {
			for _, v := range u.Values {
				if v.Marker == p.Policy {
					n++
					at = append(at, fmt.Sprintf("%s:%d", u.File, v.Line))
				}
			}
		}
		return n, at
	}
	by := map[string][]int{}
	var names []string
	for i := range props {
		if p := &props[i]; !p.Existing && !p.Choice && p.Policy != "" {
			if by[p.Policy] == nil {
				names = append(names, p.Policy)
			}
			by[p.Policy] = append(by[p.Policy], i)
		}
	}
	for _, name := range names {
		idx := by[name]
		if len(idx) < 2 {
			continue
		}
		slices.SortStableFunc(idx, func(a, b int) int {
			na, _ := marked(&props[a])
			nb, _ := marked(&props[b])
			return cmp.Or(nb-na, strings.Compare(props[a].Repository, props[b].Repository))
		})
		keep := props[idx[0]].Repository
		for _, i := range idx[1:] {
			p := &props[i]
			_, at := marked(p)
			if len(at) > 3 {
				at = append(at[:3], "...")
			}
			p.Choice = true
			// The entry is not proposed after all.
			p.Notes = slices.DeleteFunc(p.Notes, func(n string) bool { return strings.HasPrefix(n, "its values are marked for "+name+" already") })
			p.Reason = fmt.Sprintf("its values are marked for %s, which the values of %s are marked for too: a policy watches one repository, and a bump would write %s's tags here; fix the markers at %s (give them a policy of their own), then run init again",
				name, keep, keep, strings.Join(at, ", "))
		}
	}
}

// assignNames names the proposals that have no name yet:
// NAMESPACE:NAME from the repository's last path element, then its last
// two, then a number, until no two proposals and no existing policy share
// a name. The order of the proposals (by repository) makes it stable. The
// namespace is one the targets apply, when the objects' is not (see
// fitNamespace).
func assignNames(props []Proposal, existing []Existing, targets []config.Target) {
	taken := map[string]string{} // name -> repository
	for _, e := range existing {
		taken[e.Name] = e.Repository
	}
	for _, p := range props {
		if p.Policy != "" {
			taken[config.NormalizeName(p.Policy)] = p.Repository
		}
	}
	type want struct {
		i         int
		ns, short string
		long      string
	}
	var wants []want
	for i := range props {
		if props[i].Policy != "" {
			continue
		}
		elems := strings.Split(props[i].Repository, "/")
		short := sanitize(elems[len(elems)-1])
		long := short
		if len(elems) > 1 {
			long = sanitize(elems[len(elems)-2] + "-" + elems[len(elems)-1])
		}
		if short == "" {
			short = "image"
		}
		if long == "" {
			long = short
		}
		before := len(props[i].Notes)
		ns := namespaceFor(&props[i])
		if fit, note := fitNamespace(props[i].Uses, ns, short, targets); fit != ns {
			// The note on where the objects' namespaces differ names
			// the namespace given up.
			ns, props[i].Notes = fit, append(props[i].Notes[:before], note)
		}
		wants = append(wants, want{i: i, ns: ns, short: short, long: long})
	}
	// Names several proposals want are qualified by the parent element.
	count := map[string]int{}
	for _, w := range wants {
		count[w.ns+":"+w.short]++
	}
	for _, w := range wants {
		base := w.short
		if n := w.ns + ":" + base; count[n] > 1 || (taken[n] != "" && taken[n] != props[w.i].Repository) {
			base = w.long
		}
		name := w.ns + ":" + base
		for k := 2; taken[name] != "" && taken[name] != props[w.i].Repository; k++ {
			name = fmt.Sprintf("%s:%s-%d", w.ns, base, k)
		}
		taken[name] = props[w.i].Repository
		props[w.i].Policy = name
	}
}

// namespaceFor picks a proposal's namespace: the Kubernetes namespace its
// objects share, or the default one, with a note when they differ.
func namespaceFor(p *Proposal) string {
	var nss []string
	for _, u := range p.Uses {
		if u.Namespace != "" {
			nss = append(nss, u.Namespace)
		}
	}
	slices.Sort(nss)
	nss = slices.Compact(nss)
	if len(nss) == 1 {
		return nss[0]
	}
	if len(nss) > 1 {
		p.Notes = append(p.Notes, fmt.Sprintf("used in the namespaces %s: the policy lives in %s", strings.Join(nss, ", "), config.DefaultNamespace))
	}
	return config.DefaultNamespace
}
