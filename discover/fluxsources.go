package discover

import (
	"fmt"
	"log/slog"
	"slices"
	"strings"

	kyaml "sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/imagebump/imagebump/internal/redact"
)

// A Flux Kustomization builds spec.path of the source its spec.sourceRef
// names, which may be another repository: a fleet repository often holds
// Kustomizations of app teams' repositories. Only one whose source is this
// repository builds this repository's folders, so only its spec.path is
// read as one (for the namespaces and images entries it applies).
//
// This repository is a GitRepository: the contents of an OCIRepository or
// a Bucket are laid out by whatever packed them, so their paths are not
// this repository's folders. Which GitRepository it is, is told by:
//
//   - the Kustomizations that sync it, as flux bootstrap writes them: one
//     named flux-system, or one whose spec.path (other than the root)
//     holds its own file. Their source is this repository whatever its
//     url says: the checkout may be a mirror's, or a fork's;
//   - the GitRepository objects whose spec.url names the repository one
//     of the checkout's Git remotes names (readCheckout, sameRepository),
//     whatever their ref. These are this repository too, beside the
//     syncing Kustomizations' source: a Flux user takes a source of the
//     repository's URL for the repository, and in a multi-tenant fleet
//     each tenant's namespace holds a GitRepository of it of its own;
//   - when neither tells any, and the Kustomizations use one GitRepository
//     only, that one (nothing says otherwise when a Kustomization's
//     GitRepository is left out of the scan, or the folder is not a
//     checkout); unless its spec.url is known and names another
//     repository than every remote of the checkout, which tells it is
//     another.
//
// Otherwise init cannot tell, and reads none of their paths, saying so and
// showing the urls and remotes it compared.

// sourceRef is a Flux Kustomization's spec.sourceRef, its namespace
// defaulting to the Kustomization's own.
type sourceRef struct {
	kind, namespace, name string
}

// fluxSource is what a Flux Kustomization builds from.
type fluxSource struct {
	ref sourceRef
	// sync is set for a Kustomization that syncs the repository it is
	// in, as flux bootstrap's does: one named flux-system, or one whose
	// spec.path, other than the root, holds its own file.
	sync bool
}

// gitRepository is the kind of a Flux source that can be this repository.
const gitRepository = "GitRepository"

// fluxSourceOf reads the source of a Flux Kustomization, of spec spec,
// called name in namespace ns, found in file, that builds path p (cleaned
// by rootPath).
func fluxSourceOf(spec *kyaml.Node, name, ns, file, p string) *fluxSource {
	ref := sourceRef{
		kind:      str(lookup(spec, "sourceRef", "kind")),
		namespace: str(lookup(spec, "sourceRef", "namespace")),
		name:      str(lookup(spec, "sourceRef", "name")),
	}
	if ref.namespace == "" {
		ref.namespace = ns
	}
	return &fluxSource{ref: ref, sync: name == "flux-system" || p != "." && under(file, p)}
}

// none reports whether the Kustomization names no source at all (Flux
// refuses it): it is read as building this repository, as nothing says
// otherwise.
func (r sourceRef) none() bool { return r.kind == "" && r.name == "" }

// same reports whether r and o name the same source; a namespace that is
// unknown on either side (a Kustomization without one) matches any.
func (r sourceRef) same(o sourceRef) bool {
	return r.kind == o.kind && r.name == o.name && (r.namespace == o.namespace || r.namespace == "" || o.namespace == "")
}

// id writes the source's namespace and name, as kubectl does:
// flux-system/fleet.
func (r sourceRef) id() string {
	if r.namespace == "" {
		return r.name
	}
	return r.namespace + "/" + r.name
}

// addRef appends r to refs unless one of them is the same source.
func addRef(refs []sourceRef, r sourceRef) []sourceRef {
	if hasRef(refs, r) {
		return refs
	}
	return append(refs, r)
}

// hasRef reports whether refs holds the source r.
func hasRef(refs []sourceRef, r sourceRef) bool {
	return slices.ContainsFunc(refs, r.same)
}

// gitRepo is a Flux GitRepository object of the scanned files.
type gitRepo struct {
	// ref is its kind, metadata.namespace and name.
	ref sourceRef
	// url is its spec.url as written.
	url string
}

// urlsOf returns the spec.url of every GitRepository object of repos that
// is the source r, each once.
func urlsOf(repos []gitRepo, r sourceRef) []string {
	var urls []string
	for _, g := range repos {
		if g.ref.same(r) && g.url != "" && !slices.Contains(urls, g.url) {
			urls = append(urls, g.url)
		}
	}
	return urls
}

// homeSources returns the GitRepository sources that are this repository
// (see the comment at the top of the file): those of the Kustomizations
// that sync it, and those whose spec.url names the repository of a remote
// of the checkout co; else the only GitRepository the Kustomizations use,
// unless its url names another. used lists every GitRepository they use;
// home is nil when it cannot be told.
func homeSources(fluxes []*kbuild, repos []gitRepo, co checkout, log *slog.Logger) (home, used []sourceRef) {
	for _, b := range fluxes {
		if r := b.flux.ref; r.kind == gitRepository {
			used = addRef(used, r)
			if b.flux.sync {
				home = addRef(home, r)
			}
		}
	}
	for _, r := range used {
		for _, u := range urlsOf(repos, r) {
			if rem, ok := co.named(u); ok {
				log.Debug("a GitRepository's url names the repository of a remote of the checkout: its Kustomizations' spec.path is read as a folder here", "source", r.id(), "url", redact.String(u), "remote", rem.name)
				home = addRef(home, r)
				break
			}
		}
	}
	if home == nil && len(used) == 1 && !elsewhere(urlsOf(repos, used[0]), co) {
		home = used
	}
	return home, used
}

// elsewhere reports whether urls, those of a source none of which names a
// remote of the checkout co, tell the source is another repository: one of
// them names a repository, and so does a remote.
func elsewhere(urls []string, co checkout) bool {
	return co.comparable() && slices.ContainsFunc(urls, func(u string) bool {
		_, ok := repoKeyOf(u)
		return ok
	})
}

// maxListed bounds the Kustomizations a note names.
const maxListed = 5

// applySources drops the paths of the Flux Kustomizations whose source is
// not this repository, so that nothing they build is read as its files:
// their targetNamespace and images entries then apply to none of them.
// repos are the GitRepository objects found, and root is the checkout's
// folder, whose remotes their urls are compared with. When it cannot be
// told which GitRepository is this repository, the paths of those that
// use one are dropped too, and a note says so.
func (inv *Inventory) applySources(builds []*kbuild, repos []gitRepo, root string, log *slog.Logger) {
	var fluxes []*kbuild
	gitSources := false
	for _, b := range builds {
		if b.flux != nil {
			fluxes = append(fluxes, b)
			gitSources = gitSources || b.flux.ref.kind == gitRepository
		}
	}
	if len(fluxes) == 0 {
		return
	}
	var co checkout
	if gitSources {
		co = readCheckout(root, log)
	}
	home, used := homeSources(fluxes, repos, co, log)
	var unknown []string
	for _, b := range fluxes {
		r := b.flux.ref
		switch {
		case r.none():
			continue
		case r.kind == gitRepository && home == nil:
			unknown = append(unknown, b.at)
		case r.kind == gitRepository && hasRef(home, r):
			continue
		default:
			log.Debug("a Flux Kustomization builds another source: its spec.path is not read as a folder of this repository", "kustomization", b.at, "source", r.kind+" "+r.id(), "path", strings.Join(b.paths, ", "))
		}
		b.paths = nil
	}
	if len(unknown) == 0 {
		return
	}
	var names []string
	for _, r := range used {
		names = append(names, r.id())
	}
	slices.Sort(names)
	slices.Sort(unknown)
	listed := strings.Join(unknown, ", ")
	if len(unknown) > maxListed {
		listed = fmt.Sprintf("%s and %d more", strings.Join(unknown[:maxListed], ", "), len(unknown)-maxListed)
	}
	inv.Notes = append(inv.Notes, fmt.Sprintf("cannot tell which GitRepository is this repository: the Flux Kustomizations use %d (%s), none that syncs the repository it is in (named flux-system, or whose spec.path holds its own file, as flux bootstrap writes it) uses one, and no spec.url of theirs names the repository of a remote of the checkout; so the spec.path of %s is not read as a folder here, and their targetNamespace and images entries apply to none of its files. %s. If one of those sources is this repository, scan its flux-system Kustomization too (flux bootstrap's gotk-sync.yaml), or its GitRepository, with a spec.url naming a remote of the checkout",
		len(used), strings.Join(names, ", "), listed, urlsCompared(used, repos, co)))
}

// urlsCompared says, for a note, what the urls of the GitRepository
// sources used were compared with: each source's spec.url, and the
// remotes of the checkout co, redacted.
func urlsCompared(used []sourceRef, repos []gitRepo, co checkout) string {
	var known, unknown []string
	for _, r := range used {
		urls := urlsOf(repos, r)
		if len(urls) == 0 {
			unknown = append(unknown, r.id())
			continue
		}
		for i := range urls {
			urls[i] = redact.String(urls[i])
		}
		known = append(known, r.id()+" "+strings.Join(urls, " and "))
	}
	slices.Sort(known)
	slices.Sort(unknown)
	var parts []string
	if len(known) > 0 {
		parts = append(parts, "their spec.url: "+strings.Join(known, ", "))
	}
	if len(unknown) > 0 {
		parts = append(parts, "no GitRepository object is scanned for "+strings.Join(unknown, ", "))
	}
	var remotes []string
	for _, r := range co.remotes {
		remotes = append(remotes, r.String())
	}
	switch {
	case !co.found:
		parts = append(parts, "the folder scanned is in no Git checkout")
	case co.err != "":
		parts = append(parts, "the remotes of the Git checkout cannot be read ("+co.err+")")
	case len(remotes) == 0:
		parts = append(parts, "the Git checkout has no remote")
	default:
		parts = append(parts, "the remotes of the checkout: "+strings.Join(remotes, ", "))
	}
	s := strings.Join(parts, "; ")
	return strings.ToUpper(s[:1]) + s[1:]
}
