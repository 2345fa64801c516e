package discover

import (
	"fmt"
	"log/slog"
	"slices"
	"strings"

	kyaml "sigs.k8s.io/kustomize/kyaml/yaml"
)

// A Flux Kustomization builds spec.path of the source its spec.sourceRef
// names, which may be another repository: a fleet repository often holds
// Kustomizations of app teams' repositories. Only one whose source is this
// repository builds this repository's folders, so only its spec.path is
// read as one (for the namespaces and images entries it applies).
//
// This repository is a GitRepository: the contents of an OCIRepository or
// a Bucket are laid out by whatever packed them, so their paths are not
// this repository's folders. Which GitRepository it is, is told by the
// Kustomizations that sync it, as flux bootstrap writes them: one named
// flux-system, or one whose spec.path (other than the root) holds its own
// file. When none is scanned and the Kustomizations use one GitRepository
// only, that one is taken for this repository, as init did before; with
// several, init cannot tell, and reads none of their paths, saying so.

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

// homeSources returns the GitRepository sources that are this repository:
// those of the Kustomizations that sync it, else the only GitRepository
// the Kustomizations use. used lists every GitRepository they use; home
// is nil when it cannot be told.
func homeSources(fluxes []*kbuild) (home, used []sourceRef) {
	for _, b := range fluxes {
		if r := b.flux.ref; r.kind == gitRepository {
			used = addRef(used, r)
			if b.flux.sync {
				home = addRef(home, r)
			}
		}
	}
	if home == nil && len(used) == 1 {
		home = used
	}
	return home, used
}

// maxListed bounds the Kustomizations a note names.
const maxListed = 5

// applySources drops the paths of the Flux Kustomizations whose source is
// not this repository, so that nothing they build is read as its files:
// their targetNamespace and images entries then apply to none of them.
// When it cannot be told which GitRepository is this repository, the
// paths of those that use one are dropped too, and a note says so.
func (inv *Inventory) applySources(builds []*kbuild, log *slog.Logger) {
	var fluxes []*kbuild
	for _, b := range builds {
		if b.flux != nil {
			fluxes = append(fluxes, b)
		}
	}
	if len(fluxes) == 0 {
		return
	}
	home, used := homeSources(fluxes)
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
	inv.Notes = append(inv.Notes, fmt.Sprintf("cannot tell which GitRepository is this repository: the Flux Kustomizations use %d (%s), and none that syncs the repository it is in (named flux-system, or whose spec.path holds its own file, as flux bootstrap writes it) uses one; so the spec.path of %s is not read as a folder here, and their targetNamespace and images entries apply to none of its files. If one of those sources is this repository, scan its flux-system Kustomization too (flux bootstrap's gotk-sync.yaml)",
		len(used), strings.Join(names, ", "), listed))
}
