package flux

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	automationv1 "github.com/fluxcd/image-automation-controller/api/v1"
	reflectorv1 "github.com/fluxcd/image-reflector-controller/api/v1"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/kustomize/api/krusty"
	kustypes "sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/kio"
	kyaml "sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/imagebump/imagebump/internal/printable"
	"github.com/imagebump/imagebump/internal/secretfile"
	"github.com/imagebump/imagebump/internal/yamlstream"
)

// DefaultNamespace is the namespace of an object whose manifest has none,
// as kubectl would apply it.
const DefaultNamespace = "default"

// LoadOptions configures Load. The zero value is ready to use.
type LoadOptions struct {
	// NoKustomize reads the files of a folder holding a kustomization as
	// they are written, instead of building the kustomization first.
	NoKustomize bool
	// Logger receives debug messages about files skipped. Nil discards.
	Logger *slog.Logger
}

// ImageRepository is a Flux ImageRepository, in the current API version.
type ImageRepository struct {
	Object
	Labels map[string]string
	Spec   reflectorv1.ImageRepositorySpec
	src    *source
}

// ImagePolicy is a Flux ImagePolicy, in the current API version.
type ImagePolicy struct {
	Object
	Labels map[string]string
	Spec   reflectorv1.ImagePolicySpec
	src    *source
}

// ImageUpdateAutomation is a Flux ImageUpdateAutomation, in the current API
// version.
type ImageUpdateAutomation struct {
	Object
	Labels map[string]string
	Spec   automationv1.ImageUpdateAutomationSpec
	src    *source
}

// GitRepository is a Flux GitRepository, in the current API version.
type GitRepository struct {
	Object
	Labels map[string]string
	Spec   sourcev1.GitRepositorySpec
	src    *source
}

// Set holds the Flux objects Load read.
type Set struct {
	Repositories    []*ImageRepository
	Policies        []*ImagePolicy
	Automations     []*ImageUpdateAutomation
	GitRepositories []*GitRepository
	// Report lists the objects read, the Flux objects ignored and the notes
	// of the reading (Native adds its own).
	Report Report
	// Files are the files read, the kustomizations a build read included,
	// each once, in the order read.
	Files []string

	// secretManifests are the Secret manifests met among the files, by
	// namespace/name: not read, but named when a Secret is not mapped.
	secretManifests map[string]secretManifest
}

// secretManifest is where a Secret's manifest was met.
type secretManifest struct {
	obj  Object
	sops bool // encrypted with SOPS: it has a sops key
}

// Load reads the Flux objects in paths: files (with one or more YAML
// documents, or a List) and folders, searched recursively for *.yaml and
// *.yml files. A folder holding a kustomization (kustomization.yaml,
// kustomization.yml or Kustomization) is built with kustomize first, as
// Flux's kustomize-controller would, and its objects are read from the
// result; its files are not read one by one.
//
// Each ImageRepository, ImagePolicy, ImageUpdateAutomation (current
// version v1 and previous beta v1beta2 of image.toolkit.fluxcd.io) and
// GitRepository (source.toolkit.fluxcd.io v1, v1beta2) is decoded strictly
// into Flux's own API type: an unknown or duplicate field, a value of the
// wrong type, an unread API version is an *Error with file, line and
// field. Objects of other Flux kinds are listed in Report.Ignored; other
// objects (the fleet's own manifests) are skipped without a word, as are
// files that are not YAML, unless they mention toolkit.fluxcd.io.
//
// Errors are *Error values joined, ordered by file and line; Load returns
// every problem found at once.
func Load(ctx context.Context, paths []string, opts LoadOptions) (*Set, error) {
	l := &loader{opts: opts, log: opts.Logger, set: &Set{}}
	if l.log == nil {
		l.log = slog.New(slog.DiscardHandler)
	}
	for _, p := range paths {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		info, err := os.Stat(p)
		switch {
		case errors.Is(err, fs.ErrNotExist) && strings.ContainsAny(p, "*?["):
			return nil, fmt.Errorf("reading Flux objects: %s: globs are not expanded; name the folder that holds the objects (its subfolders are read too)", p)
		case errors.Is(err, fs.ErrNotExist):
			return nil, fmt.Errorf("reading Flux objects: %s does not exist (a --flux path is relative to the current folder, one in flux.paths to the config's)", p)
		case err != nil:
			return nil, fmt.Errorf("reading Flux objects: %w", err)
		}
		if info.IsDir() {
			if err := l.dir(ctx, p); err != nil {
				return nil, err
			}
			continue
		}
		if !info.Mode().IsRegular() && info.Mode()&fs.ModeNamedPipe == 0 {
			return nil, fmt.Errorf("reading Flux objects: %s is not a regular file (%s): name a file or a folder", p, secretfile.FileType(info.Mode()))
		}
		// A named pipe named here is read, as <(kubectl get ... -o yaml)
		// is: what writes to it is the caller's.
		if k := kustomizationIn(filepath.Dir(p)); k != "" && !isKustomization(filepath.Base(p)) && !opts.NoKustomize {
			// Flux builds the folder: its kustomization may set the
			// file's namespace or patch it.
			l.p.note(Warning, Object{File: p, Line: 1}, "", 1, "read as written, though %s builds its folder (it may set a namespace or patch these objects, as Flux would): pass the folder to read them as Flux does", k)
		}
		if err := l.file(p, true); err != nil {
			return nil, err
		}
	}
	l.p.sortNotes()
	l.set.Report.Notes = l.p.notes
	if err := l.p.err(); err != nil {
		return nil, err
	}
	return l.set, nil
}

type loader struct {
	opts LoadOptions
	log  *slog.Logger
	set  *Set
	p    problems
	seen map[string]Object // Kind ns/name of each object read
	// files are set.Files, to add each once.
	files map[string]bool
}

func isKustomization(name string) bool {
	return name == "kustomization.yaml" || name == "kustomization.yml" || name == "Kustomization"
}

// kustomizationIn returns the kustomization file of dir, or "".
func kustomizationIn(dir string) string {
	for _, n := range []string{"kustomization.yaml", "kustomization.yml", "Kustomization"} {
		if _, err := os.Stat(filepath.Join(dir, n)); err == nil {
			return filepath.Join(dir, n)
		}
	}
	return ""
}

// dir reads a folder: built when it holds a kustomization, else file by
// file and folder by folder.
func (l *loader) dir(ctx context.Context, dir string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if k := kustomizationIn(dir); k != "" && !l.opts.NoKustomize {
		if file, line, why := unbuildable(dir); why != "" {
			at := 1
			if file == k {
				at = line
			} else {
				why = file + " " + why
			}
			l.p.note(Warning, Object{File: k, Line: 1}, "", at, "not built with kustomize (%s): its files are read as written, so patches are not applied", why)
		} else {
			return l.build(dir, k)
		}
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("reading Flux objects: %w", err)
	}
	for _, e := range entries {
		p := filepath.Join(dir, e.Name())
		switch {
		case strings.HasPrefix(e.Name(), "."):
			// .git and other hidden folders and files are not manifests.
		case e.IsDir() && e.Name() == "templates" && fileExists(filepath.Join(dir, "Chart.yaml")):
			// A Helm chart's templates are not YAML until rendered.
			l.log.Debug("skipping a Helm chart's templates", "folder", p)
		case e.IsDir():
			if err := l.dir(ctx, p); err != nil {
				return err
			}
		case isKustomization(e.Name()):
			// Read as written when not built: it holds no Flux object.
		case !strings.HasSuffix(e.Name(), ".yaml") && !strings.HasSuffix(e.Name(), ".yml"):
		case e.Type()&fs.ModeSymlink != 0:
			// It may lead out of the repository: Flux objects in a folder
			// are read from its own files.
			l.p.note(Warning, Object{File: p, Line: 1}, "", 1, "not read: a symbolic link; Flux objects in a folder are read from its regular files only (name the file it leads to, to read it)")
		case !e.Type().IsRegular():
			// A named pipe would block the read.
			l.p.note(Warning, Object{File: p, Line: 1}, "", 1, "not read: not a regular file (%s)", secretfile.FileType(e.Type()))
		default:
			if err := l.file(p, false); err != nil {
				return err
			}
		}
	}
	return nil
}

// read records a file read, once.
func (l *loader) read(name string) {
	if !l.files[name] {
		if l.files == nil {
			l.files = map[string]bool{}
		}
		l.files[name] = true
		l.set.Files = append(l.set.Files, name)
	}
}

// file reads the objects of one file. explicit is true for a file named
// by the caller, whose YAML errors are always reported.
func (l *loader) file(name string, explicit bool) error {
	l.read(name)
	data, err := os.ReadFile(name)
	if err != nil {
		return fmt.Errorf("reading Flux objects: %w", err)
	}
	// A file that does not mention Flux holds none of its objects: a
	// chart template or a broken manifest there is none of our business.
	// One that holds a Secret is read for where it is, to name it when
	// the Secret is not mapped.
	mentionsFlux := bytes.Contains(data, []byte(fluxDomain))
	if !mentionsFlux && !explicit && !bytes.Contains(data, []byte("kind: Secret")) && !mayMisspell(data) {
		return nil
	}
	docs, err := yamlstream.Split(data)
	if err != nil && !mentionsFlux {
		// Read only in case it held a misspelt object (mayMisspell).
		l.log.Debug("skipping a file that is not a YAML stream", "file", name, "error", err)
		return nil
	}
	if err != nil {
		l.p.fail(Object{File: name, Line: 1}, "", 1, err, "invalid YAML stream")
		return nil
	}
	for _, d := range docs {
		nodes, err := readDoc(d, len(docs) > 1)
		if err != nil {
			if !mentionsFlux {
				l.log.Debug("skipping a document that is not YAML", "file", name, "line", d.Line, "error", err)
				continue
			}
			line := d.Line
			if m := yamlLineRE.FindStringSubmatch(err.Error()); m != nil {
				var n int
				fmt.Sscan(m[1], &n)
				line = d.FileLine(n)
			}
			l.p.fail(Object{File: name, Line: line}, "", line, nil, "invalid YAML: %s", strings.TrimPrefix(err.Error(), "MalformedYAMLError: "))
			continue
		}
		for _, n := range nodes {
			if y := n.YNode(); y == nil || y.Kind != kyaml.MappingNode || len(y.Content)%2 != 0 {
				continue // not an object
			}
			l.object(&source{node: n, doc: d, obj: Object{File: name, Line: d.FileLine(n.YNode().Line)}})
		}
	}
	return nil
}

// mayMisspell reports whether data, which does not mention Flux's API
// domain, may hold an object of a kind imagebump reads with its group
// misspelt or its apiVersion missing (misspeltGroup).
func mayMisspell(data []byte) bool {
	return bytes.Contains(data, []byte("fluxcd")) || bytes.Contains(data, []byte("kind: Image")) || bytes.Contains(data, []byte("kind: GitRepository"))
}

// readDoc parses one document with kyaml. kyaml has panicked on odd
// input (a flow sequence followed by a scalar): a bad file must be an
// error, never a crash.
func readDoc(d yamlstream.Doc, noUnwrap bool) (nodes []*kyaml.RNode, err error) {
	defer func() {
		if r := recover(); r != nil {
			nodes, err = nil, fmt.Errorf("kyaml failed on this document: %v", r)
		}
	}()
	rdr := &kio.ByteReader{
		Reader:                strings.NewReader(d.Text),
		OmitReaderAnnotations: true,
		DisableUnwrapping:     noUnwrap,
	}
	return rdr.Read()
}

// build reads the objects of a kustomization, built with kustomize.
func (l *loader) build(dir, kfile string) error {
	// As Flux's kustomize-controller builds: files anywhere in the
	// repository, no plugins.
	opts := krusty.MakeDefaultOptions()
	opts.LoadRestrictions = kustypes.LoadRestrictionsNone
	opts.PluginConfig = kustypes.DisabledPluginConfig()
	fsys, err := newRootedFS(dir)
	if err != nil {
		return fmt.Errorf("reading Flux objects: %w", err)
	}
	rm, err := krusty.MakeKustomizer(opts).Run(fsys, dir)
	if err != nil {
		l.p.fail(Object{File: kfile, Line: 1}, "", 1, err, "kustomize build failed: fix the kustomization, or read the folder as written with flux export --no-kustomize")
		return nil
	}
	// Find where each object was written before the build, to point at
	// it: in the files kustomize read (a base in another folder too), by
	// kind and name, and by namespace where several match (a
	// kustomization's namespace: may have changed it).
	type origin struct {
		obj Object
		ns  string
	}
	origins := map[string][]origin{}
	// kustomize names the files by their absolute paths: they are shown
	// from the folder as given, as the files read one by one are.
	base, _ := filepath.Abs(dir)
	if real, err := filepath.EvalSymlinks(base); err == nil {
		base = real
	}
	for _, p := range fsys.read {
		l.read(p)
		data := fsys.objects[p] // the bytes kustomize read, when they mention Flux
		if data == nil || !(strings.HasSuffix(p, ".yaml") || strings.HasSuffix(p, ".yml")) || isKustomization(filepath.Base(p)) {
			continue
		}
		docs, err := yamlstream.Split(data)
		if err != nil {
			continue
		}
		for _, d := range docs {
			nodes, err := readDoc(d, true)
			if err != nil || len(nodes) != 1 {
				continue
			}
			src := &source{node: nodes[0]}
			key := src.str("kind") + " " + src.str("metadata.name")
			shown := p
			if rel, err := filepath.Rel(base, p); err == nil {
				shown = filepath.Join(dir, rel)
			}
			origins[key] = append(origins[key], origin{Object{File: shown, Line: d.FileLine(nodes[0].YNode().Line)}, src.str("metadata.namespace")})
		}
	}
	for _, n := range rm.ToRNodeSlice() {
		obj := Object{File: kfile, Line: 1, Kustomization: kfile}
		src := &source{node: n}
		cands := origins[src.str("kind")+" "+src.str("metadata.name")]
		// Else the first read: kustomize reads resources before the
		// patches that name them (a kustomization's namespace: changes
		// every candidate's).
		if i := slices.IndexFunc(cands, func(o origin) bool { return o.ns == src.str("metadata.namespace") }); i >= 0 {
			obj.File, obj.Line = cands[i].obj.File, cands[i].obj.Line
		} else if len(cands) > 0 {
			obj.File, obj.Line = cands[0].obj.File, cands[0].obj.Line
		}
		l.object(&source{node: n, obj: obj, built: true})
	}
	return nil
}

// unbuildable says why the kustomization of dir (or one below it) cannot
// be built here: a remote resource, which kustomize would fetch by
// running git, or a Helm chart, which needs helm: the kustomization file,
// the line of the field or entry, and the reason. why is "" when it can be
// built.
func unbuildable(dir string) (file string, line int, why string) {
	_ = filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() || !isKustomization(e.Name()) || why != "" {
			return nil
		}
		// Followed, as kustomize follows it: a kustomization that is a
		// symbolic link is built too. A named pipe is not read.
		if fi, err := os.Stat(p); err != nil || !fi.Mode().IsRegular() {
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return nil
		}
		doc := yamlstream.Doc{Text: string(data), Line: 1}
		nodes, err := readDoc(doc, true)
		if err != nil || len(nodes) != 1 {
			return nil
		}
		k := &source{node: nodes[0], doc: doc, obj: Object{Line: 1}}
		for _, f := range []string{"helmCharts", "helmChartInflationGenerator"} {
			if k.has(f) {
				file, line, why = p, k.line(f), fmt.Sprintf("uses %s, which needs helm", f)
				return nil
			}
		}
		for _, f := range []string{"resources", "bases", "components"} {
			_, list := lookup(k.node.YNode(), f)
			if list == nil || list.Kind != kyaml.SequenceNode {
				continue
			}
			for _, it := range list.Content {
				r := it.Value
				if strings.Contains(r, "://") || strings.HasPrefix(r, "github.com/") || strings.HasPrefix(r, "git@") || strings.HasPrefix(r, "gitlab.com/") {
					file, line, why = p, doc.FileLine(it.Line), fmt.Sprintf("names the remote resource %q, which is not fetched", r)
					return nil
				}
			}
		}
		return nil
	})
	return file, line, why
}

// ignoredKinds says why imagebump has no use for other Flux kinds.
var ignoredKinds = map[string]string{
	"Kustomization":  "applies manifests to a cluster; imagebump only edits Git",
	"HelmRelease":    "installs a chart in a cluster; imagebump only edits Git (markers in its values work)",
	"Receiver":       "a cluster webhook; `imagebump serve` has its own webhooks",
	"Alert":          "cluster notifications; imagebump logs and exposes metrics",
	"Provider":       "cluster notifications; imagebump logs and exposes metrics",
	"OCIRepository":  "a source for the cluster; imagebump reads GitRepository only",
	"HelmRepository": "a source for the cluster; imagebump reads GitRepository only",
	"HelmChart":      "a source for the cluster; imagebump reads GitRepository only",
	"Bucket":         "a source for the cluster; imagebump reads GitRepository only",
}

// readKinds are the kinds imagebump reads, by API group: all of the image
// group's, and one of the source group's.
var readKinds = map[string][]string{
	groupImage:  {KindImageRepository, KindImagePolicy, KindImageUpdateAutomation},
	groupSource: {KindGitRepository},
}

// misspeltGroup reports an object of a kind imagebump reads whose
// apiVersion is missing, or names a group near one of Flux's: written so,
// it was skipped without a word, as another project's object, and its
// policy was then unknown to the markers that name it.
func (l *loader) misspeltGroup(s *source, apiVersion, group, kind string) {
	g := groupOf(kind)
	if g == "" {
		return
	}
	obj := s.obj
	obj.APIVersion, obj.Kind = apiVersion, kind
	obj.Name, obj.Namespace = printable.String(s.str("metadata.name")), printable.String(orDefault(s.str("metadata.namespace"), DefaultNamespace))
	switch {
	case !s.has("apiVersion") && s.has("apiversion"):
		l.p.fail(obj, "apiVersion", obj.Line, nil, "missing: the key is written apiversion; Flux's %s is apiVersion: %s/v1", kind, g)
	case !s.has("apiVersion"):
		l.p.fail(obj, "apiVersion", obj.Line, nil, "missing: Flux's %s is apiVersion: %s/v1", kind, g)
	case apiVersion == "":
		// Not a string: a template (Helm's {{ ... }}), say.
	case closest(group, []string{g}) != "":
		l.p.fail(obj, "apiVersion", obj.Line, nil, "%q: the group is misspelt (did you mean %s/v1?)", printable.Cut(apiVersion, 80), g)
	}
}

// groupOf returns the API group of a kind imagebump reads, or "".
func groupOf(kind string) string {
	for g, kinds := range readKinds {
		if slices.Contains(kinds, kind) {
			return g
		}
	}
	return ""
}

// unread takes a Flux object of a kind imagebump does not read in its
// group: a kind it reads written in another of Flux's groups, or one the
// image group does not have (or near GitRepository in the source group),
// is an error, as Flux's API server would refuse it; a list of objects
// kubectl dumped is a warning; anything else is listed as ignored.
func (l *loader) unread(s *source, apiVersion, group, kind string) {
	if g := groupOf(kind); g != "" {
		// images.toolkit.fluxcd.io, from the CRD's name, say.
		l.p.fail(s.obj, "apiVersion", s.obj.Line, nil, "%q: %s is in group %s (apiVersion: %s/v1)", printable.Cut(apiVersion, 80), kind, g, g)
		return
	}
	if listOf, ok := strings.CutSuffix(kind, "List"); ok && groupOf(listOf) == group {
		l.p.note(Warning, s.obj, "", s.obj.Line, "a %s is not read: its items are, written as a kind: List (kubectl get -o yaml writes that)", kind)
		return
	}
	if group == groupImage || group == groupSource && ignoredKinds[kind] == "" {
		if want := closest(kind, readKinds[group]); want != "" || group == groupImage {
			hint := ""
			if want != "" {
				hint = fmt.Sprintf(" (did you mean %s?)", want)
			}
			l.p.fail(s.obj, "kind", s.obj.Line, nil, "%q is no kind of %s%s: it has %s", kind, group, hint, strings.Join(readKinds[group], ", "))
			return
		}
	}
	why := ignoredKinds[kind]
	if why == "" {
		why = "not part of image automation"
	}
	l.set.Report.Ignored = append(l.set.Report.Ignored, Ignored{Object: s.obj, Reason: why})
}

// object takes one node read: a Flux object of a kind imagebump reads is
// decoded, another Flux object listed as ignored, anything else skipped.
func (l *loader) object(s *source) {
	apiVersion, kind := s.str("apiVersion"), s.str("kind")
	group, _, _ := strings.Cut(apiVersion, "/")
	if apiVersion == "v1" && kind == "Secret" {
		ns := orDefault(s.str("metadata.namespace"), DefaultNamespace)
		if l.set.secretManifests == nil {
			l.set.secretManifests = map[string]secretManifest{}
		}
		obj := s.obj
		obj.Kind, obj.Name, obj.Namespace = kind, s.str("metadata.name"), ns
		l.set.secretManifests[ns+"/"+obj.Name] = secretManifest{obj: obj, sops: s.node.Field("sops") != nil}
		return
	}
	if !strings.HasSuffix(group, fluxDomain) {
		l.misspeltGroup(s, apiVersion, group, kind)
		return
	}
	s.obj.APIVersion, s.obj.Kind = apiVersion, kind
	// Names reach every report and error: one that is no Kubernetes name
	// (a line break, a terminal escape) is shown escaped, and refused
	// below for the kinds read.
	rawName, rawNamespace := s.str("metadata.name"), s.str("metadata.namespace")
	s.obj.Name, s.obj.Namespace = printable.String(rawName), printable.String(rawNamespace)
	if kind == "" {
		l.p.fail(s.obj, "kind", s.obj.Line, nil, "missing: a Kubernetes object names its kind beside its apiVersion %s (ImageRepository, ImagePolicy, ImageUpdateAutomation, GitRepository...)", apiVersion)
		return
	}
	known := slices.Contains(readKinds[group], kind)
	if s.obj.Namespace == "" {
		s.obj.Namespace = DefaultNamespace
		if known {
			l.p.note(Info, s.obj, "metadata.namespace", s.obj.Line, "not set: read in namespace %q, as kubectl applies it (a Flux Kustomization's targetNamespace would change it)", DefaultNamespace)
		}
	}
	if tn := s.str("spec.targetNamespace"); kind == "Kustomization" && strings.HasPrefix(group, "kustomize.") && tn != "" {
		// The namespace of what it applies changes under Flux, not in
		// the files imagebump reads.
		l.p.note(Warning, s.obj, "spec.targetNamespace", s.line("spec.targetNamespace"),
			"%s: Flux puts the objects of %s in namespace %s, whatever their files say; imagebump reads them as their files say, so image policies there are named after those namespaces: set metadata.namespace: %s in them (or a kustomization's namespace:) so that markers name the same policies under both",
			tn, orDefault(s.str("spec.path"), "its path"), tn, tn)
	}
	if !known {
		l.unread(s, apiVersion, group, kind)
		return
	}
	if s.obj.Name == "" {
		l.p.fail(s.obj, "metadata.name", s.obj.Line, nil, "missing")
		return
	}
	if errs := validation.IsDNS1123Subdomain(rawName); len(errs) > 0 {
		l.p.fail(s.obj, "metadata.name", s.obj.Line, nil, "%q is not a Kubernetes object name (the API server refuses it): %s", printable.Cut(rawName, 80), errs[0])
		return
	}
	if errs := validation.IsDNS1123Label(rawNamespace); rawNamespace != "" && len(errs) > 0 {
		l.p.fail(s.obj, "metadata.namespace", s.obj.Line, nil, "%q is not a namespace name (the API server refuses it): %s", printable.Cut(rawNamespace, 80), errs[0])
		return
	}
	key := s.obj.Ref()
	if l.seen == nil {
		l.seen = map[string]Object{}
	}
	if first, dup := l.seen[key]; dup {
		l.p.fail(s.obj, "", s.obj.Line, nil, "defined twice (first at %s)", first.Pos())
		return
	}
	l.seen[key] = s.obj
	d, ok := decode(s, &l.p)
	if !ok {
		return
	}
	l.set.Report.Objects = append(l.set.Report.Objects, s.obj)
	noteFields(s, &l.p)
	labels := s.labels()
	switch kind {
	case KindImageRepository:
		l.set.Repositories = append(l.set.Repositories, &ImageRepository{Object: s.obj, Labels: labels, Spec: d.repo.Spec, src: s})
	case KindImagePolicy:
		l.set.Policies = append(l.set.Policies, &ImagePolicy{Object: s.obj, Labels: labels, Spec: d.pol.Spec, src: s})
	case KindImageUpdateAutomation:
		l.set.Automations = append(l.set.Automations, &ImageUpdateAutomation{Object: s.obj, Labels: labels, Spec: d.auto.Spec, src: s})
	case KindGitRepository:
		l.set.GitRepositories = append(l.set.GitRepositories, &GitRepository{Object: s.obj, Labels: labels, Spec: d.git.Spec, src: s})
	}
}

// sortedKeys returns m's keys in order.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// fileExists reports whether path names something.
func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
