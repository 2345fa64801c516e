package discover

import (
	"log/slog"
	"maps"
	"path"
	"slices"
	"strings"
)

// kbuild is a kustomization: a kustomization file, or a Flux
// Kustomization's spec. It builds the files and folders it names, and its
// images entries set the tag of the images they name in all of that.
type kbuild struct {
	// at names it in messages: its file, and a Flux Kustomization's name.
	at string
	// dir is the kustomization file's folder, whose files its entries are
	// taken to cover; "" for a Flux Kustomization.
	dir string
	// folder is dir when the file is one kustomize reads in its folder
	// (kustomization.yaml), so that another kustomization builds it by
	// naming the folder; "" otherwise.
	folder string
	// paths are the files and folders it names, relative to the root:
	// resources, bases and components, or a Flux Kustomization's
	// spec.path; none for a Flux Kustomization whose source is not this
	// repository (applySources).
	paths []string
	// entries are its images entries that set a tag.
	entries []imagesEntry
	// namespace is the namespace it puts every object it builds in:
	// kustomize's namespace, a Flux Kustomization's targetNamespace; ""
	// when it sets none.
	namespace string
	// flux is the source of a Flux Kustomization; nil for a
	// kustomization file.
	flux *fluxSource
}

// imagesEntry is a kustomization images entry that sets a tag: the image
// it names, and where it is (file:line).
type imagesEntry struct {
	name, where string
}

// sets reports whether b has an images entry for the image name.
func (b *kbuild) sets(name string) bool {
	return slices.ContainsFunc(b.entries, func(e imagesEntry) bool { return e.name == name })
}

// under reports whether file is dir, or lies below it.
func under(file, dir string) bool {
	return dir == "." || file == dir || strings.HasPrefix(file, dir+"/")
}

// asWritten reports whether b builds file with the tag of the image name
// as file writes it: along some chain of the kustomizations b names, down
// to file, none has an images entry for it. folders maps a folder to its
// kustomization file.
func (b *kbuild) asWritten(file, name string, folders map[string]*kbuild, seen map[*kbuild]bool) bool {
	if seen[b] || b.sets(name) {
		return false
	}
	seen[b] = true
	for _, p := range b.paths {
		c := folders[p]
		if c == nil && under(file, p) {
			c = nearest(folders, p, file)
			if c == nil {
				return true // a file named, or below a folder without a kustomization
			}
		}
		if c != nil && c != b && c.asWritten(file, name, folders, seen) {
			return true
		}
	}
	return false
}

// nearest returns the kustomization Flux builds file through when top, a
// folder it builds, has no kustomization.yaml: Flux builds such a folder
// as one that names each folder below it with a kustomization.yaml, the
// outermost on each way down (it descends no further there). nil when
// there is none between top and file.
func nearest(folders map[string]*kbuild, top, file string) *kbuild {
	var outermost *kbuild
	for d := path.Dir(file); d != top && under(d, top) && d != "."; d = path.Dir(d) {
		if k := folders[d]; k != nil {
			outermost = k
		}
	}
	return outermost
}

// applyOverrides moves to Untracked the workload references whose image a
// kustomization images entry sets, in what that kustomization builds, when
// every kustomization that builds them sets it: the entries are marked
// instead. A reference that some kustomization builds with its tag as
// written (an overlay without an entry for the image, beside one with) is
// kept, since that tag is deployed. Only kustomizations that no other
// kustomization names count on their own; one that another names is built
// as a part of it.
func (inv *Inventory) applyOverrides(builds []*kbuild, folders map[string]*kbuild, named map[*kbuild]bool, namers map[string][]*kbuild, log *slog.Logger) {
	if !slices.ContainsFunc(builds, func(b *kbuild) bool { return len(b.entries) > 0 }) {
		return
	}
	// The kustomizations whose entries cover a file (one in a
	// kustomization's folder or below what it names) and those that may
	// build it are found from its folders upward, not by asking every one
	// (quadratic on a fleet of thousands of overlays), then taken in
	// the order they were found in, as the messages name the first.
	covering := map[string][]*kbuild{}
	order := make(map[*kbuild]int, len(builds))
	for i, b := range builds {
		order[b] = i
		if len(b.entries) == 0 {
			continue
		}
		if b.dir != "" {
			covering[b.dir] = append(covering[b.dir], b)
		}
		for _, p := range b.paths {
			covering[p] = append(covering[p], b)
		}
	}
	inOrder := func(bs []*kbuild) []*kbuild {
		slices.SortFunc(bs, func(a, b *kbuild) int { return order[a] - order[b] })
		return slices.Compact(bs)
	}
	kept := inv.Uses[:0]
	for _, u := range inv.Uses {
		if !strings.HasSuffix(u.Path, ".image") || strings.HasPrefix(u.Source, "kustomization") {
			kept = append(kept, u)
			continue
		}
		var where []string
		for _, b := range inOrder(namersAbove(u.File, covering, nil)) {
			for _, e := range b.entries {
				if e.name == u.Repository {
					where = append(where, e.where)
				}
			}
		}
		if len(where) == 0 {
			kept = append(kept, u)
			continue
		}
		may := inOrder(buildersOf(u.File, namers))
		i := slices.IndexFunc(may, func(b *kbuild) bool {
			return !named[b] && b.asWritten(u.File, u.Repository, folders, map[*kbuild]bool{})
		})
		if i >= 0 {
			log.Debug("marking a reference that an images entry sets, as a kustomization builds it without one",
				"file", u.File, "line", u.Line, "entry", where[0], "kustomization", may[i].at)
			kept = append(kept, u)
			continue
		}
		reason := "a kustomization images entry (" + where[0] + ") sets this image's tag wherever this file is built, so the entry is marked instead"
		if len(where) > 1 {
			reason = "kustomization images entries (" + strings.Join(where, ", ") + ") set this image's tag wherever this file is built, so the entries are marked instead"
		}
		inv.Untracked = append(inv.Untracked, Untracked{
			File: u.File, Line: u.Line, Source: u.Source, Path: u.Path, Value: u.Values[0].Value, Reason: reason,
		})
	}
	inv.Uses = kept
}

// applyNamespaces gives each reference in a Kubernetes object the
// namespace the kustomizations that build its file put the object in, as
// kustomize and Flux do: the outermost namespace set along the way wins
// over those inside it and over the object's own. When the kustomizations
// that build the file (those no other names) disagree, or one builds it
// as written, the object's own namespace stays.
func (inv *Inventory) applyNamespaces(builds []*kbuild, folders map[string]*kbuild, named map[*kbuild]bool, namers map[string][]*kbuild) {
	if !slices.ContainsFunc(builds, func(b *kbuild) bool { return b.namespace != "" }) {
		return
	}
	// Those that can build a file are found from its folders upward
	// (buildersOf), not by asking every one (quadratic on a fleet of
	// thousands of kustomizations).
	for i := range inv.Uses {
		u := &inv.Uses[i]
		if !u.object {
			continue
		}
		got := map[string]bool{}
		for _, b := range buildersOf(u.File, namers) {
			if !named[b] {
				for ns := range b.namespacesOf(u.File, folders, map[*kbuild]bool{}) {
					got[ns] = true
				}
			}
		}
		if len(got) == 1 && !got[""] {
			for ns := range got {
				u.Namespace = ns
			}
		}
	}
}

// buildersOf returns the kustomizations that may build file: those that
// name it or a folder above it, and, up from each, those that name its
// folder or a folder above that. It may return more than build file, never
// fewer.
func buildersOf(file string, namers map[string][]*kbuild) []*kbuild {
	seen := map[*kbuild]bool{}
	var out []*kbuild
	queue := namersAbove(file, namers, nil)
	for len(queue) > 0 {
		b := queue[len(queue)-1]
		queue = queue[:len(queue)-1]
		if seen[b] {
			continue
		}
		seen[b] = true
		out = append(out, b)
		if b.folder != "" {
			queue = namersAbove(b.folder, namers, queue)
		}
	}
	return out
}

// namersAbove appends to out the kustomizations that name p or a folder
// above it, up to the root.
func namersAbove(p string, namers map[string][]*kbuild, out []*kbuild) []*kbuild {
	for {
		out = append(out, namers[p]...)
		if p == "." || p == "/" || p == "" {
			return out
		}
		p = path.Dir(p)
	}
}

// namespacesOf returns the namespaces b's build puts file's objects in,
// "" for as written: b's own when it sets one, else those of the
// kustomizations it names down to file. The set is empty when b does not
// build file. seen holds the kustomizations on the way, so that a cycle
// ends.
func (b *kbuild) namespacesOf(file string, folders map[string]*kbuild, seen map[*kbuild]bool) map[string]bool {
	out := map[string]bool{}
	if seen[b] {
		return out
	}
	seen[b] = true
	defer delete(seen, b)
	for _, p := range b.paths {
		if !under(file, p) {
			continue
		}
		c := folders[p]
		if c == nil {
			c = nearest(folders, p, file)
		}
		if c == nil || c == b {
			out[""] = true // a file named, or below a folder without a kustomization
			continue
		}
		for ns := range c.namespacesOf(file, folders, seen) {
			out[ns] = true
		}
	}
	if b.namespace != "" && len(out) > 0 {
		return map[string]bool{b.namespace: true}
	}
	return out
}

// graph maps each folder to the kustomization kustomize reads there (the
// first, when there are several), tells the kustomizations another names
// (those built as a part of it, not on their own), and maps each path
// named to the kustomizations that name it (namers, for buildersOf).
func graph(builds []*kbuild) (folders map[string]*kbuild, named map[*kbuild]bool, namers map[string][]*kbuild) {
	folders, namers = map[string]*kbuild{}, map[string][]*kbuild{}
	for _, b := range builds {
		for _, p := range b.paths {
			namers[p] = append(namers[p], b)
		}
		if _, dup := folders[b.folder]; b.folder != "" && !dup {
			folders[b.folder] = b
		}
	}
	named = map[*kbuild]bool{}
	sorted := slices.Sorted(maps.Keys(folders))
	for _, b := range builds {
		for _, p := range b.paths {
			if c := folders[p]; c != nil {
				if c != b {
					named[c] = true
				}
				continue
			}
			// A folder without a kustomization (a Flux path): Flux
			// builds the kustomizations below it as its parts.
			prefix := p + "/"
			if p == "." {
				prefix = ""
			}
			for i, _ := slices.BinarySearch(sorted, prefix); i < len(sorted) && strings.HasPrefix(sorted[i], prefix); i++ {
				if c := folders[sorted[i]]; c != b {
					named[c] = true
				}
			}
		}
	}
	return folders, named, namers
}
