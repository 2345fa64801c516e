package discover

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	kyaml "sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/imagebump/imagebump/setters"
)

// Value is one scalar that holds an image reference or a part of one.
type Value struct {
	// Line and Column locate the scalar as yaml.v3 counts them, at its
	// anchor when the reference reached it through an alias.
	Line, Column int
	// Value is the scalar's value.
	Value string
	// Field is the part of the reference the scalar holds.
	Field setters.Field
	// Marker is the policy reference of a marker already on the scalar,
	// "" when it has none; MarkerField is that marker's field.
	Marker      string
	MarkerField setters.Field
}

// Use is one place where an image is used: a whole reference in one
// scalar, or a reference split over several (repository, tag, digest).
type Use struct {
	// File is relative to the root, slash-separated.
	File string
	// Line is the 1-based line of the reference (its tag, when split).
	Line int
	// Source says what holds the reference, such as "Deployment web,
	// container app" or "kustomization images[app]".
	Source string
	// Path is the reference's path in its document, such as
	// spec.template.spec.containers[0].image.
	Path string
	// Namespace is the Kubernetes namespace of the object that holds the
	// reference, when it says; "" otherwise.
	Namespace string
	// Repository, Tag and Digest are the reference's parts as written.
	// Tag is "" for a reference without one (latest implied).
	Repository, Tag, Digest string
	// Values are the scalars that hold the reference.
	Values []Value
	// NoDigest is set for a whole reference that must not get a digest
	// (an Argo CD kustomize.images string, where kustomize would read
	// NAME:TAG@DIGEST as an image named NAME:TAG): under a policy that pins
	// digests it is left unmarked.
	NoDigest bool

	// object is set for a reference in a Kubernetes object's containers
	// or volumes, whose namespace the kustomizations that build its file
	// decide (applyNamespaces).
	object bool
}

// ref writes the reference as one string: the scalar that holds it
// whole, else its parts joined.
func (u Use) ref() string {
	if len(u.Values) == 1 && u.Values[0].Field == setters.FieldImage {
		return u.Values[0].Value
	}
	ref := u.Repository
	if u.Tag != "" {
		ref += ":" + u.Tag
	}
	if u.Digest != "" {
		ref += "@" + u.Digest
	}
	return ref
}

// Untracked is a reference that cannot be kept current, or one this tool
// leaves alone, and why.
type Untracked struct {
	// File is relative to the root, slash-separated.
	File string
	// Line is 1-based.
	Line int
	// Source and Path are as in Use.
	Source, Path string
	// Value is the reference as written.
	Value string
	// Reason says why it is not tracked.
	Reason string
}

// Inventory is what Find found.
type Inventory struct {
	// Uses are the trackable references, by file and line.
	Uses []Use
	// Untracked are the references that cannot be tracked, by file and
	// line.
	Untracked []Untracked
	// Problems are files that could not be read (invalid YAML, too large,
	// unreadable); they are skipped.
	Problems []setters.Problem
	// FilesScanned counts the YAML files read.
	FilesScanned int
	// ChartTemplates counts the files skipped as Helm chart templates
	// (files under a chart's templates folder, which are not YAML until
	// rendered).
	ChartTemplates int
	// Notes are what a reviewer should know of the scan as a whole, such
	// as Flux Kustomizations whose source cannot be told to be this
	// repository or another.
	Notes []string

	// src holds the bytes of the files with uses, for Markers.
	src map[string][]byte
}

// FindOptions configure Find.
type FindOptions struct {
	// Root is the repository root.
	Root string
	// Paths are files and folders below Root to scan; empty means all.
	Paths []string
	// MaxFileSize is the size in bytes above which a file is not read, as
	// setters.Options.MaxFileSize: the config's maxFileSize.
	MaxFileSize int64
	// Logger receives debug messages; nil discards.
	Logger *slog.Logger
}

// Find reads every YAML file under opts.Root (or opts.Paths) and returns
// the image references found. Files that do not parse are reported in
// Problems and skipped. The error is for a bad root or a cancelled ctx.
func Find(ctx context.Context, opts FindOptions) (*Inventory, error) {
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	root, err := filepath.Abs(opts.Root)
	if err != nil {
		return nil, fmt.Errorf("resolving repository root %s: %w", opts.Root, err)
	}
	if real, err := filepath.EvalSymlinks(root); err == nil {
		root = real
	}
	inv := &Inventory{src: map[string][]byte{}}
	var builds []*kbuild
	var repos []gitRepo
	problems, err := setters.Walk(ctx, setters.Options{Root: opts.Root, Paths: opts.Paths, MaxFileSize: opts.MaxFileSize, Logger: log}, func(file string, src []byte) error {
		inv.FilesScanned++
		if chartTemplate(root, file) {
			inv.ChartTemplates++
			return nil
		}
		// A file without the word image holds no image init finds; but
		// a kustomization without images entries still builds what the
		// others' entries apply to, so what it builds is read, and a
		// Flux GitRepository's url tells which Kustomizations build
		// this repository.
		buildsOnly := !bytes.Contains(src, []byte("image")) && !bytes.Contains(src, []byte("Image"))
		if buildsOnly && !slices.Contains(kustomizationNames, path.Base(file)) && !bytes.Contains(src, []byte("kustomize.toolkit.fluxcd.io")) && !bytes.Contains(src, []byte("source.toolkit.fluxcd.io")) {
			return nil
		}
		f := &fileFinder{file: file, src: src, inv: inv, log: log, generated: generatedHeader(src), buildsOnly: buildsOnly}
		f.run()
		builds = append(builds, f.builds...)
		repos = append(repos, f.gitRepos...)
		if f.used {
			inv.src[file] = bytes.Clone(src)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	inv.Problems = append(inv.Problems, problems...)
	inv.applySources(builds, repos, root, log)
	folders, named, namers := graph(builds)
	inv.applyOverrides(builds, folders, named, namers, log)
	inv.applyNamespaces(builds, folders, named, namers)
	inv.sort()
	return inv, nil
}

// sort orders uses and untracked references by file and line, and
// problems by file.
func (inv *Inventory) sort() {
	slices.SortStableFunc(inv.Uses, func(a, b Use) int {
		return cmp.Or(strings.Compare(a.File, b.File), cmp.Compare(a.Line, b.Line), strings.Compare(a.Path, b.Path))
	})
	slices.SortStableFunc(inv.Untracked, func(a, b Untracked) int {
		return cmp.Or(strings.Compare(a.File, b.File), cmp.Compare(a.Line, b.Line), strings.Compare(a.Path, b.Path))
	})
	inv.Untracked = slices.CompactFunc(inv.Untracked, func(a, b Untracked) bool {
		return a.File == b.File && a.Line == b.Line && a.Value == b.Value && a.Reason == b.Reason
	})
	slices.SortStableFunc(inv.Problems, func(a, b setters.Problem) int {
		return cmp.Or(strings.Compare(a.File, b.File), cmp.Compare(a.Line, b.Line))
	})
}

// Repositories returns the repositories the uses name, sorted, each once.
func (inv *Inventory) Repositories() []string {
	var out []string
	for _, u := range inv.Uses {
		out = append(out, u.Repository)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// Source returns the bytes Find read from file, for a file with uses.
func (inv *Inventory) Source(file string) ([]byte, bool) {
	b, ok := inv.src[file]
	return b, ok
}

// chartTemplate reports whether file sits in a Helm chart's templates
// folder: a folder named templates whose parent holds Chart.yaml.
func chartTemplate(root, file string) bool {
	parts := strings.Split(file, "/")
	for i := len(parts) - 2; i >= 0; i-- {
		if parts[i] != "templates" {
			continue
		}
		chart := filepath.Join(root, filepath.FromSlash(strings.Join(parts[:i], "/")), "Chart.yaml")
		if fi, err := os.Lstat(chart); err == nil && fi.Mode().IsRegular() {
			return true
		}
	}
	return false
}

// generatedLines is how many lines at the top of a file are searched for a
// header saying that the file is generated.
const generatedLines = 10

// generatedHeader returns the line of a comment saying that the file is
// generated and not to be edited ("DO NOT EDIT", in any case) among the
// comments that open the file, in its first generatedLines lines, and 0
// when there is none. flux bootstrap's gotk-components.yaml opens with
// "# This manifest was generated by flux. DO NOT EDIT.": flux rewrites it,
// and a marker there would be lost or fight the bootstrap.
func generatedHeader(src []byte) int {
	src = bytes.TrimPrefix(src, []byte("\ufeff"))
	for i, line := range bytes.SplitN(src, []byte("\n"), generatedLines+1) {
		if i == generatedLines {
			break
		}
		l := bytes.TrimSpace(line)
		if rest, ok := bytes.CutPrefix(l, []byte("---")); ok && (len(rest) == 0 || rest[0] == ' ' || rest[0] == '\t') {
			l = bytes.TrimSpace(rest) // a document start, maybe with a comment
		}
		switch {
		case len(l) == 0 || l[0] == '%': // a blank line, a directive
		case l[0] == '#':
			if bytes.Contains(bytes.ToUpper(l), []byte("DO NOT EDIT")) {
				return i + 1
			}
		default:
			return 0 // the document's content
		}
	}
	return 0
}

// yamlErrLine finds the line in a yaml.v3 error.
var yamlErrLine = lazyRegexp(`(?s)^line (\d+): (.*)$`)

// fileFinder finds the references in one file.
type fileFinder struct {
	file   string
	src    []byte
	inv    *Inventory
	builds []*kbuild
	// gitRepos are the Flux GitRepository objects of the file.
	gitRepos []gitRepo
	log      *slog.Logger
	used     bool
	// generated is the line of the header that says the file is
	// generated, not to be edited; 0 when it says nothing of the kind.
	// Its references are listed as not tracked.
	generated int
	// buildsOnly is set for a file without the word image: only what its
	// kustomizations build, and its Flux GitRepository objects, are read,
	// and a file that does not parse is skipped without a word.
	buildsOnly bool
	// odd is set when the file has line breaks that yaml.v3 counts and
	// editors do not (a lone CR, NEL, LS, PS).
	odd bool
	// visited holds the collections a walk went through: an anchored one
	// is walked once, however many aliases name it (and so a file of
	// nested aliases costs what its text does, not what it expands to).
	visited map[*kyaml.Node]bool
}

// visit records a collection node and reports whether it was visited
// before.
func (f *fileFinder) visit(n *kyaml.Node) bool {
	if n.Kind != kyaml.MappingNode && n.Kind != kyaml.SequenceNode {
		return false
	}
	if f.visited == nil {
		f.visited = map[*kyaml.Node]bool{}
	}
	if f.visited[n] {
		return true
	}
	f.visited[n] = true
	return false
}

// parseStream parses every document of src with kyaml's YAML parser.
// The parser has panicked on odd input; that is an error, not a crash.
func parseStream(src []byte) (docs []*kyaml.Node, err error) {
	defer func() {
		if r := recover(); r != nil {
			docs, err = nil, fmt.Errorf("the YAML parser failed: %v", r)
		}
	}()
	dec := kyaml.NewDecoder(bytes.NewReader(src))
	for {
		var n kyaml.Node
		err := dec.Decode(&n)
		if errors.Is(err, io.EOF) {
			return docs, nil
		}
		if err != nil {
			return nil, err
		}
		docs = append(docs, &n)
	}
}

func (f *fileFinder) run() {
	docs, err := parseStream(f.src)
	if err != nil && f.buildsOnly {
		return
	}
	if err != nil {
		line := 0
		msg := strings.TrimPrefix(err.Error(), "yaml: ")
		if m := yamlErrLine().FindStringSubmatch(msg); m != nil {
			line, _ = strconv.Atoi(m[1])
			msg = m[2]
		}
		f.inv.Problems = append(f.inv.Problems, setters.Problem{File: f.file, Line: line, Err: fmt.Errorf("invalid YAML, file skipped: %s", msg)})
		return
	}
	f.odd = bytes.ContainsAny(f.src, "\r\u0085\u2028\u2029") && !onlyCRLF(f.src)
	for _, d := range docs {
		if len(d.Content) == 0 {
			continue
		}
		root := resolve(d.Content[0])
		if root == nil {
			continue
		}
		switch root.Kind {
		case kyaml.MappingNode:
			f.document(root)
		case kyaml.SequenceNode:
			// A list at the root: of objects, as some tools write them.
			for i, it := range root.Content {
				if m := resolve(it); m != nil && m.Kind == kyaml.MappingNode && str(field(m, "kind")) != "" && str(field(m, "apiVersion")) != "" {
					f.object(m, fmt.Sprintf("[%d].", i))
				}
			}
		}
	}
}

// onlyCRLF reports whether every CR in src starts a CRLF.
func onlyCRLF(src []byte) bool {
	for i, c := range src {
		if c == '\r' && (i+1 >= len(src) || src[i+1] != '\n') {
			return false
		}
	}
	return !bytes.ContainsAny(src, "\u0085\u2028\u2029")
}

// line converts a yaml.v3 line to an editor's.
func (f *fileFinder) line(l int) int {
	if !f.odd {
		return l
	}
	return setters.EditorLine(f.src, l)
}

// kustomizationNames are the file names kustomize reads.
var kustomizationNames = []string{"kustomization.yaml", "kustomization.yml", "Kustomization"}

// valuesName matches Helm values file names: values.yaml, values-prod.yaml,
// values.prod.yaml, prod.values.yaml, prod-values.yaml.
var valuesName = lazyRegexp(`^(?:values(?:[.-][^/]*)?|[^/]*[.-]values)\.ya?ml$`)

// composeName matches docker-compose file names.
var composeName = lazyRegexp(`^(?:docker-)?compose(?:[.-][^/]*)?\.ya?ml$`)

// document reads one document whose root is a mapping.
func (f *fileFinder) document(m *kyaml.Node) {
	base := path.Base(f.file)
	kind, apiVersion := str(field(m, "kind")), str(field(m, "apiVersion"))
	switch {
	case slices.Contains(kustomizationNames, base) && (kind == "" || kind == "Kustomization" || kind == "Component"):
		f.kustomization(m, "", "kustomization", namespaceOf(str(field(m, "namespace"))), f.kustomizationFile(m))
	case kind != "" && apiVersion != "":
		f.object(m, "")
	case f.buildsOnly:
	case argoSourceName().MatchString(base):
		what := "Argo CD source overrides, "
		if app := argoSourceName().FindStringSubmatch(base)[1]; app != "" {
			what = "Argo CD source overrides of Application " + app + ", "
		}
		f.argoSource(m, "", what, "")
	case isMapping(field(m, "services")) && (composeName().MatchString(base) || composeLike(field(m, "services"))):
		f.compose(m)
	case valuesName().MatchString(base):
		f.helmValues(m, "", site{source: "Helm values"}, 0)
	}
}

// composeLike reports whether a services mapping looks like
// docker-compose's: some service has an image or a build.
func composeLike(services *kyaml.Node) bool {
	_, vals := pairs(services)
	for _, v := range vals {
		if field(v, "image") != nil || field(v, "build") != nil {
			return true
		}
	}
	return false
}

// site is where references are being read: what holds them and in which
// namespace.
type site struct {
	source    string
	namespace string
	// object is set for a Kubernetes object's containers and volumes.
	object bool
}

// use records a trackable reference, or, in a generated file, lists it
// as not tracked.
func (f *fileFinder) use(u Use) {
	u.File = f.file
	u.Line = f.line(u.Line)
	if f.generated > 0 {
		f.inv.Untracked = append(f.inv.Untracked, Untracked{File: u.File, Line: u.Line, Source: u.Source, Path: u.Path, Value: u.ref(),
			Reason: fmt.Sprintf("in a generated file (line %d says DO NOT EDIT): what generates it writes it again, dropping a marker or undoing a bump; keep the image current where the file is generated", f.generated)})
		return
	}
	f.inv.Uses = append(f.inv.Uses, u)
	f.used = true
}

// untracked records a reference that cannot be tracked.
func (f *fileFinder) untracked(line int, s site, p, value string, why error) {
	f.inv.Untracked = append(f.inv.Untracked, Untracked{File: f.file, Line: f.line(line), Source: s.source, Path: p, Value: value, Reason: why.Error()})
}

// value describes the scalar s as a Value holding field, with the marker
// it carries, if any.
func value(s *kyaml.Node, fieldOf setters.Field) Value {
	v := Value{Line: s.Line, Column: s.Column, Value: s.Value, Field: fieldOf}
	comment := s.LineComment
	if head := strings.TrimRight(s.HeadComment, "\n"); comment == "" && head != "" && !strings.Contains(head, "\n") {
		comment = head
	}
	if policy, fld, ok, err := setters.ParseMarker(comment); ok && err == nil {
		v.Marker, v.MarkerField = policy, fld
	}
	return v
}

// whole records the whole reference held by the node n (a scalar), or
// why it cannot be tracked.
func (f *fileFinder) whole(n *kyaml.Node, s site, p string) {
	sc := scalar(n)
	if sc == nil || sc.Tag == "!!null" {
		return
	}
	if sc.Tag != "!!str" && sc.Tag != "" {
		f.untracked(sc.Line, s, p, sc.Value, fmt.Errorf("not an image reference: a %s, not a string", strings.TrimPrefix(sc.Tag, "!!")))
		return
	}
	repo, tag, digest, err := splitRef(sc.Value)
	if errors.Is(err, errEmpty) {
		return
	}
	if err != nil {
		f.untracked(sc.Line, s, p, sc.Value, err)
		return
	}
	f.use(Use{Line: sc.Line, Source: s.source, Path: p, Namespace: s.namespace, Repository: repo, Tag: tag, Digest: digest,
		Values: []Value{value(sc, setters.FieldImage)}, object: s.object})
}

// join appends a key to a YAML path.
func join(p, key string) string {
	if p == "" || strings.HasSuffix(p, ".") {
		return p + key
	}
	return p + "." + key
}
