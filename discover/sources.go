package discover

import (
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"

	kyaml "sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/imagebump/imagebump/setters"
)

// podSpecPaths says where each workload kind keeps its pod spec, as the
// field specs of kustomize's images transformer do (spec/containers[]/image,
// spec/template/spec/..., spec/jobTemplate/spec/template/spec/...).
var podSpecPaths = map[string][]string{
	"Pod":                   {"spec"},
	"PodTemplate":           {"template", "spec"},
	"Deployment":            {"spec", "template", "spec"},
	"StatefulSet":           {"spec", "template", "spec"},
	"DaemonSet":             {"spec", "template", "spec"},
	"ReplicaSet":            {"spec", "template", "spec"},
	"ReplicationController": {"spec", "template", "spec"},
	"Job":                   {"spec", "template", "spec"},
	"CronJob":               {"spec", "jobTemplate", "spec", "template", "spec"},
}

// containerLists are the pod spec's lists of containers, with what each
// item is called in reports.
var containerLists = []struct{ key, item string }{
	{"containers", "container"},
	{"initContainers", "initContainer"},
	{"ephemeralContainers", "ephemeralContainer"},
}

// dnsLabel matches a Kubernetes namespace name.
var dnsLabel = lazyRegexp(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)

// namespaceOf returns ns if it is a usable namespace name, else "".
func namespaceOf(ns string) string {
	if len(ns) <= 63 && dnsLabel().MatchString(ns) {
		return ns
	}
	return ""
}

// object reads one Kubernetes object; prefix is its path from the
// document's root ("" or "[i].").
func (f *fileFinder) object(m *kyaml.Node, prefix string) {
	kind, apiVersion := str(field(m, "kind")), str(field(m, "apiVersion"))
	// kyaml reads the object's identity; a malformed metadata block still
	// leaves the raw fields.
	name, ns := str(lookup(m, "metadata", "name")), str(lookup(m, "metadata", "namespace"))
	if meta, err := kyaml.NewRNode(m).GetMeta(); err == nil {
		name, ns = meta.Name, meta.Namespace
	}
	group, _, _ := strings.Cut(apiVersion, "/")
	if !strings.Contains(apiVersion, "/") {
		group = ""
	}
	s := site{source: kind + " " + name, namespace: namespaceOf(ns)}
	isFluxKustomization := kind == "Kustomization" && group == "kustomize.toolkit.fluxcd.io"
	isKustomization := (kind == "Kustomization" || kind == "Component") && group == "kustomize.config.k8s.io"
	isGitRepository := kind == gitRepository && group == "source.toolkit.fluxcd.io"
	if f.buildsOnly && kind != "List" && !isFluxKustomization && !isKustomization && !isGitRepository {
		return
	}
	switch {
	case isGitRepository:
		// No images; its url tells whether it is this repository.
		f.gitRepos = append(f.gitRepos, gitRepo{ref: sourceRef{kind: gitRepository, namespace: ns, name: name}, url: str(lookup(m, "spec", "url"))})
	case kind == "List":
		for i, it := range items(field(m, "items")) {
			if im := resolve(it); im != nil && im.Kind == kyaml.MappingNode {
				f.object(im, fmt.Sprintf("%sitems[%d].", prefix, i))
			}
		}
	case kind == "CustomResourceDefinition":
		// Schemas, not workloads; kustomize skips them too.
	case kind == "HelmRelease" && group == "helm.toolkit.fluxcd.io":
		if t := namespaceOf(str(lookup(m, "spec", "targetNamespace"))); t != "" {
			s.namespace = t
		}
		s.source = "HelmRelease " + name + " values"
		f.helmValues(lookup(m, "spec", "values"), prefix+"spec.values", s, 0)
	case kind == "Application" && group == "argoproj.io":
		f.argoApplication(m, prefix, name, s)
	case isFluxKustomization:
		target := namespaceOf(str(lookup(m, "spec", "targetNamespace")))
		if target != "" {
			s.namespace = target
		}
		p := rootPath(str(lookup(m, "spec", "path")))
		b := &kbuild{at: f.file + " (Kustomization " + name + ")", paths: []string{p}, namespace: target,
			flux: fluxSourceOf(lookup(m, "spec"), name, ns, f.file, p)}
		f.builds = append(f.builds, b)
		f.kustomization(lookup(m, "spec"), prefix+"spec.", "Kustomization "+name, s.namespace, b)
	case isKustomization:
		f.kustomization(m, prefix, "kustomization", namespaceOf(str(field(m, "namespace"))), f.kustomizationFile(m))
	case podSpecPaths[kind] != nil:
		keys := podSpecPaths[kind]
		f.podSpec(lookup(m, keys...), prefix+strings.Join(keys, "."), kind+" "+name, s.namespace)
	default:
		// Other kinds (operators' workloads): every containers or
		// initContainers list, as kustomize's default images filter finds
		// them.
		f.containersAnywhere(m, strings.TrimSuffix(prefix, "."), kind+" "+name, s.namespace, 0)
	}
}

// podSpec reads the images of a pod spec.
func (f *fileFinder) podSpec(spec *kyaml.Node, p, owner, ns string) {
	if !isMapping(spec) {
		return
	}
	for _, l := range containerLists {
		f.containers(field(spec, l.key), join(p, l.key), l.item, owner, ns)
	}
	for i, v := range items(field(spec, "volumes")) {
		if ref := lookup(v, "image", "reference"); ref != nil {
			f.whole(ref, site{source: fmt.Sprintf("%s, volume %s", owner, str(field(v, "name"))), namespace: ns, object: true}, fmt.Sprintf("%s.volumes[%d].image.reference", p, i))
		}
	}
}

// containers reads the image of each container in a list.
func (f *fileFinder) containers(list *kyaml.Node, p, item, owner, ns string) {
	for i, c := range items(list) {
		img := field(c, "image")
		if img == nil {
			continue
		}
		f.whole(img, site{source: fmt.Sprintf("%s, %s %s", owner, item, str(field(c, "name"))), namespace: ns, object: true}, fmt.Sprintf("%s[%d].image", p, i))
	}
}

// containersAnywhere finds containers and initContainers lists at any
// depth of an object of a kind without known paths.
func (f *fileFinder) containersAnywhere(n *kyaml.Node, p, owner, ns string, depth int) {
	n = resolve(n)
	if n == nil || depth > maxDepth || f.visit(n) {
		return
	}
	switch n.Kind {
	case kyaml.MappingNode:
		keys, vals := pairs(n)
		for i, k := range keys {
			if k == "metadata" && depth == 0 {
				continue
			}
			if k == "containers" || k == "initContainers" {
				item := "container"
				if k == "initContainers" {
					item = "initContainer"
				}
				f.containers(vals[i], join(p, k), item, owner, ns)
				continue
			}
			f.containersAnywhere(vals[i], join(p, k), owner, ns, depth+1)
		}
	case kyaml.SequenceNode:
		for i, it := range n.Content {
			f.containersAnywhere(it, fmt.Sprintf("%s[%d]", p, i), owner, ns, depth+1)
		}
	}
}

// kustomization reads the images entries of a kustomization (or of a Flux
// Kustomization's spec) b.
func (f *fileFinder) kustomization(m *kyaml.Node, prefix, what, ns string, b *kbuild) {
	for i, e := range items(field(m, "images")) {
		p := fmt.Sprintf("%simages[%d]", prefix, i)
		nameN := scalar(field(e, "name"))
		if nameN == nil {
			continue
		}
		name := nameN.Value
		s := site{source: fmt.Sprintf("%s images[%s]", what, name), namespace: ns}
		newName, newTag, digest := scalar(field(e, "newName")), scalar(field(e, "newTag")), scalar(field(e, "digest"))
		repo, repoN := name, nameN
		if newName != nil && newName.Value != "" {
			repo, repoN = newName.Value, newName
		}
		if err := untrackable(repo); err != nil {
			f.untracked(repoN.Line, s, p, repo, err)
			continue
		}
		if err := checkRepository(repo); err != nil {
			f.untracked(repoN.Line, s, p, repo, err)
			continue
		}
		switch {
		case newTag == nil || newTag.Tag == "!!null" || newTag.Value == "":
			if digest != nil && digest.Value != "" {
				f.untracked(digest.Line, s, p+".digest", repo+"@"+digest.Value, errDigest)
			} else {
				f.untracked(nameN.Line, s, p, repo, fmt.Errorf("sets no newTag: the tag comes from the manifests the entry applies to, which are tracked there"))
			}
			continue
		case untrackable(newTag.Value) != nil:
			f.untracked(newTag.Line, s, p+".newTag", newTag.Value, untrackable(newTag.Value))
			continue
		case !tagRE().MatchString(newTag.Value):
			f.untracked(newTag.Line, s, p+".newTag", newTag.Value, fmt.Errorf("not an image reference: %q is not a tag", newTag.Value))
			continue
		}
		b.entries = append(b.entries, imagesEntry{name: name, where: fmt.Sprintf("%s:%d", f.file, f.line(nameN.Line))})
		u := Use{Line: newTag.Line, Source: s.source, Path: p + ".newTag", Namespace: ns, Repository: repo, Tag: newTag.Value,
			Values: []Value{value(newTag, setters.FieldTag)}}
		if newName != nil && newName.Value != "" {
			u.Values = append(u.Values, value(newName, setters.FieldName))
		}
		if digest != nil && digest.Value != "" {
			if !digestRE().MatchString(digest.Value) || untrackable(digest.Value) != nil {
				f.untracked(digest.Line, s, p+".digest", digest.Value, fmt.Errorf("not a digest: %q", digest.Value))
				continue
			}
			u.Digest = digest.Value
			u.Values = append(u.Values, value(digest, setters.FieldDigest))
		}
		f.use(u)
	}
}

// kustomizationFile records the kustomization m of this file: its folder,
// and the local resources, bases and components it names.
func (f *fileFinder) kustomizationFile(m *kyaml.Node) *kbuild {
	dir := path.Dir(f.file)
	b := &kbuild{at: f.file, dir: dir, namespace: namespaceOf(str(field(m, "namespace")))}
	if slices.Contains(kustomizationNames, path.Base(f.file)) {
		b.folder = dir
	}
	for _, key := range []string{"resources", "bases", "components"} {
		for _, it := range items(field(m, key)) {
			r := str(it)
			if r == "" || strings.Contains(r, "://") || strings.HasPrefix(r, "/") {
				continue
			}
			p := path.Clean(path.Join(dir, r))
			if p != ".." && !strings.HasPrefix(p, "../") {
				b.paths = append(b.paths, p)
			}
		}
	}
	f.builds = append(f.builds, b)
	return b
}

// rootPath cleans a path relative to the repository root, as Flux's
// spec.path is ("./apps", "apps/"); "." when it is empty or leaves.
func rootPath(p string) string {
	p = path.Clean("./" + strings.TrimPrefix(p, "/"))
	if p == ".." || strings.HasPrefix(p, "../") {
		return "."
	}
	return p
}

// errComposeBuild is why the image of a compose service that builds it is
// not tracked.
var errComposeBuild = fmt.Errorf("the service has build:, so image: names the image compose builds here, not one pulled from a registry; bump the base image in its Dockerfile instead")

// compose reads the images of docker-compose services. A service with
// build: names the image it builds, so it is listed, not tracked (Renovate
// skips those too).
func (f *fileFinder) compose(m *kyaml.Node) {
	keys, vals := pairs(field(m, "services"))
	for i, k := range keys {
		img := field(vals[i], "image")
		if img == nil {
			continue
		}
		s, p := site{source: "compose service " + k}, "services."+k+".image"
		if b := resolve(field(vals[i], "build")); b != nil && b.Tag != "!!null" {
			if sc := scalar(img); sc != nil && sc.Tag != "!!null" && sc.Value != "" {
				f.untracked(sc.Line, s, p, sc.Value, errComposeBuild)
			}
			continue
		}
		f.whole(img, s, p)
	}
}

// argoApplication reads the Helm values of an Argo CD Application's
// sources.
func (f *fileFinder) argoApplication(m *kyaml.Node, prefix, name string, s site) {
	if d := namespaceOf(str(lookup(m, "spec", "destination", "namespace"))); d != "" {
		s.namespace = d
	}
	if v := scalar(lookup(m, "metadata", "annotations", imageUpdaterList)); v != nil && v.Value != "" {
		f.untracked(v.Line, site{source: "Application " + name + " annotations", namespace: s.namespace}, prefix+"metadata.annotations."+imageUpdaterList, v.Value, errImageUpdater)
	}
	sources := map[string]*kyaml.Node{}
	var order []string
	if src := lookup(m, "spec", "source"); src != nil {
		sources[prefix+"spec.source"] = src
		order = append(order, prefix+"spec.source")
	}
	for i, src := range items(lookup(m, "spec", "sources")) {
		p := fmt.Sprintf("%sspec.sources[%d]", prefix, i)
		sources[p] = src
		order = append(order, p)
	}
	for _, p := range order {
		f.argoSource(sources[p], p+".", "Application "+name+" ", s.namespace)
	}
}

// argoSource reads the Helm values and parameters and the kustomize images
// of an Argo CD application source, at prefix p, or of the root of a
// .argocd-source file; what names their holder in sources.
func (f *fileFinder) argoSource(src *kyaml.Node, p, what, ns string) {
	if helm := field(src, "helm"); helm != nil {
		f.helmValues(field(helm, "valuesObject"), p+"helm.valuesObject", site{source: what + "helm valuesObject", namespace: ns}, 0)
		f.argoParameters(field(helm, "parameters"), p+"helm.parameters", site{source: what + "helm parameters", namespace: ns})
		if v := scalar(field(helm, "values")); v != nil && v.Value != "" {
			f.valuesString(v, p+"helm.values", site{source: what + "helm values", namespace: ns})
		}
	}
	f.kustomizeImages(lookup(src, "kustomize", "images"), p+"kustomize.images", site{source: what + "kustomize images", namespace: ns})
}

// imageUpdaterList is the annotation in which Argo CD Image Updater lists
// the images it keeps current.
const imageUpdaterList = "argocd-image-updater.argoproj.io/image-list"

// errImageUpdater is why Argo CD Image Updater's image list is listed.
var errImageUpdater = errors.New("Argo CD Image Updater's image list, which imagebump does not read: the policies proposed here come from the tags in use, not from its constraints and update strategies, so compare them; once imagebump keeps these images, remove Image Updater's annotations from the Application, or both tools write the same values (and Image Updater's git write-back rewrites .argocd-source-APP.yaml whole, dropping the markers)")

// argoSourceName matches the files in which Argo CD reads overrides of an
// application's source: .argocd-source.yaml for every application of the
// folder, and .argocd-source-APP.yaml for APP (Argo CD Image Updater's
// git write-back writes the latter).
var argoSourceName = lazyRegexp(`^\.argocd-source(?:-(.+))?\.yaml$`)

// Why strings of Argo CD's kustomize.images are not tracked.
var (
	errKustomizeRename = errors.New("kustomize's NAME=NEWNAME form: a marker replaces the whole string, so it would drop NAME= and leave kustomize no image to match (no marker owns a part of a string); set the image in the kustomization's images: (name, newName, newTag), which init tracks, or write NEWNAME:TAG here if the manifests use NEWNAME")
	errKustomizeDigest = errors.New("a tag with a digest: Argo CD hands the string to kustomize edit set image, which splits it at @ and takes NAME:TAG for the name, so kustomize would match no image; write NAME:TAG here, or set tag and digest in the kustomization's images: (newTag, digest), which init tracks")
)

// kustomizeImages reads Argo CD's kustomize.images: strings that Argo CD
// hands to kustomize edit set image, NAME[=NEWNAME][:TAG|@DIGEST]. A marker
// replaces a whole string, so only NAME:TAG is tracked, with a
// whole-reference marker: it writes the policy's repository, the NAME the
// string holds already, and the new tag.
func (f *fileFinder) kustomizeImages(list *kyaml.Node, p string, s site) {
	for i, it := range items(list) {
		ip := fmt.Sprintf("%s[%d]", p, i)
		sc := scalar(it)
		if sc == nil || sc.Tag == "!!null" || sc.Value == "" {
			continue
		}
		v := sc.Value
		if err := untrackable(v); err != nil {
			f.untracked(sc.Line, s, ip, v, err)
			continue
		}
		if strings.Contains(v, "=") {
			f.untracked(sc.Line, s, ip, v, errKustomizeRename)
			continue
		}
		repo, tag, digest, err := splitRef(v)
		switch {
		case err != nil:
			f.untracked(sc.Line, s, ip, v, err)
		case tag == "":
			f.untracked(sc.Line, s, ip, v, errors.New("names no tag, so there is no tag to keep current (kustomize edit set image, which Argo CD runs with the string, wants NAME:TAG, NAME@DIGEST or NAME=NEWNAME[:TAG])"))
		case digest != "":
			f.untracked(sc.Line, s, ip, v, errKustomizeDigest)
		default:
			f.use(Use{Line: sc.Line, Source: s.source, Path: ip, Namespace: s.namespace, Repository: repo, Tag: tag,
				Values: []Value{value(sc, setters.FieldImage)}, NoDigest: true})
		}
	}
}

// errInString is why references inside a values string are not tracked.
var errInString = fmt.Errorf("inside the helm.values string: a comment there is part of the string, which no tool reads as a marker; move these values to helm.valuesObject to track them")

// valuesString lists the references of Helm values written as a string
// (Argo CD's helm.values), which cannot be marked.
func (f *fileFinder) valuesString(v *kyaml.Node, p string, s site) {
	docs, err := parseStream([]byte(v.Value))
	if err != nil || len(docs) == 0 || len(docs[0].Content) == 0 {
		return
	}
	inner := &fileFinder{file: f.file, src: []byte(v.Value), inv: &Inventory{}, log: f.log}
	inner.helmValues(docs[0].Content[0], "", s, 0)
	// A block scalar's text starts on the line after its indicator.
	offset := v.Line
	if v.Style&(kyaml.LiteralStyle|kyaml.FoldedStyle) == 0 {
		offset = v.Line - 1
	}
	for _, u := range inner.inv.Uses {
		ref := u.Repository + ":" + u.Tag
		if u.Digest != "" {
			ref += "@" + u.Digest
		}
		f.untracked(offset+u.Line, s, p+" "+u.Path, ref, errInString)
	}
	for _, u := range inner.inv.Untracked {
		f.untracked(offset+u.Line, s, p+" "+u.Path, u.Value, errInString)
	}
}

// argoParameters reads helm.parameters entries named PREFIX.tag with a
// PREFIX.repository beside them, or a PREFIX.name (as Argo CD Image
// Updater writes image.name and image.tag), read as a repository; a bare
// name parameter beside a bare tag is too vague to be an image's.
func (f *fileFinder) argoParameters(list *kyaml.Node, p string, s site) {
	params := map[string]*kyaml.Node{}
	index := map[string]int{}
	for i, it := range items(list) {
		if n := str(field(it, "name")); n != "" {
			params[n] = scalar(field(it, "value"))
			index[n] = i
		}
	}
	for i, it := range items(list) {
		name := str(field(it, "name"))
		if name != "tag" && !strings.HasSuffix(name, ".tag") {
			continue
		}
		base := strings.TrimSuffix(name, "tag")
		tagN, repoN, regN := params[name], params[base+"repository"], params[base+"registry"]
		if tagN == nil {
			continue
		}
		if repoN == nil && base != "" {
			repoN = params[base+"name"]
		}
		tp := fmt.Sprintf("%s[%d].value", p, i)
		if repoN == nil {
			want := "repository"
			if base != "" {
				want = base + "repository (nor " + base + "name)"
			}
			f.untracked(tagN.Line, s, tp, tagN.Value, fmt.Errorf("parameter %s has no %s parameter beside it, so its image is unknown", name, want))
			continue
		}
		f.split(s, tp, repoN, regN, tagN, nil)
	}
}

// imageKey reports whether a Helm values key names an image.
func imageKey(k string) bool {
	return k == "image" || strings.HasSuffix(k, "Image")
}

// helmValues finds the references in Helm values: mappings with a
// repository (and tag), and image strings.
func (f *fileFinder) helmValues(n *kyaml.Node, p string, s site, depth int) {
	n = resolve(n)
	if n == nil || depth > maxDepth || f.visit(n) {
		return
	}
	switch n.Kind {
	case kyaml.MappingNode:
		// A chart for one image may keep repository and tag at the top
		// of its values.
		if depth == 0 && scalar(field(n, "repository")) != nil && field(n, "tag") != nil {
			f.split(s, join(p, "tag"), scalar(field(n, "repository")), scalar(field(n, "registry")), scalar(field(n, "tag")), scalar(field(n, "digest")))
		}
		keys, vals := pairs(n)
		for i, k := range keys {
			kp := join(p, k)
			v := resolve(vals[i])
			switch {
			case v == nil:
			case v.Kind == kyaml.MappingNode && scalar(field(v, "repository")) != nil && (field(v, "tag") != nil || imageKey(k)):
				f.split(s, kp+".tag", scalar(field(v, "repository")), scalar(field(v, "registry")), scalar(field(v, "tag")), scalar(field(v, "digest")))
			case imageKey(k) && v.Kind == kyaml.ScalarNode:
				f.whole(vals[i], s, kp)
			default:
				f.helmValues(vals[i], kp, s, depth+1)
			}
		}
	case kyaml.SequenceNode:
		for i, it := range n.Content {
			f.helmValues(it, fmt.Sprintf("%s[%d]", p, i), s, depth+1)
		}
	}
}

// split records a reference split over repository (with an optional
// registry), tag and digest scalars. The repository is marked :name only
// when it holds the whole name, without a registry beside it.
func (f *fileFinder) split(s site, p string, repoN, regN, tagN, digN *kyaml.Node) {
	repo := repoN.Value
	where := repoN.Line
	if tagN != nil {
		where = tagN.Line
	}
	for _, n := range []*kyaml.Node{repoN, regN, tagN, digN} {
		if n != nil {
			if err := untrackable(n.Value); err != nil {
				f.untracked(n.Line, s, p, n.Value, err)
				return
			}
		}
	}
	full := repo
	if regN != nil && regN.Value != "" {
		full = strings.TrimSuffix(regN.Value, "/") + "/" + repo
	}
	if repo == "" {
		return
	}
	if i := strings.LastIndexByte(repo, '/'); strings.ContainsAny(repo[i+1:], ":@") {
		f.untracked(repoN.Line, s, p, repo, fmt.Errorf("the repository value holds a tag or digest; write the repository alone to track it"))
		return
	}
	if err := checkRepository(full); err != nil {
		f.untracked(repoN.Line, s, p, full, err)
		return
	}
	hasDigest := digN != nil && digN.Tag != "!!null" && digN.Value != ""
	if tagN == nil || tagN.Tag == "!!null" || tagN.Value == "" {
		if hasDigest {
			f.untracked(digN.Line, s, p, full+"@"+digN.Value, errDigest)
		} else {
			f.untracked(where, s, p, full, fmt.Errorf("no tag: the chart's default (usually its appVersion) applies; write the tag in use to track it"))
		}
		return
	}
	if !tagRE().MatchString(tagN.Value) {
		f.untracked(tagN.Line, s, p, tagN.Value, fmt.Errorf("not an image reference: %q is not a tag", tagN.Value))
		return
	}
	u := Use{Line: tagN.Line, Source: s.source, Path: p, Namespace: s.namespace, Repository: full, Tag: tagN.Value,
		Values: []Value{value(tagN, setters.FieldTag)}}
	if regN == nil || regN.Value == "" {
		u.Values = append(u.Values, value(repoN, setters.FieldName))
	}
	if hasDigest {
		if !digestRE().MatchString(digN.Value) {
			f.untracked(digN.Line, s, p, digN.Value, fmt.Errorf("not a digest: %q", digN.Value))
			return
		}
		u.Digest = digN.Value
		u.Values = append(u.Values, value(digN, setters.FieldDigest))
	}
	f.use(u)
}
