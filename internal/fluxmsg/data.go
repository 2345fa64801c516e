package fluxmsg

import (
	"cmp"
	"slices"

	"github.com/google/go-containerregistry/pkg/name"
	"k8s.io/apimachinery/pkg/types"
	kyaml "sigs.k8s.io/kustomize/kyaml/yaml"
)

// TemplateData is what a template of an image.toolkit.fluxcd.io/v1
// ImageUpdateAutomation sees, field for field as Flux gives it.
type TemplateData struct {
	// AutomationObject is the automation's namespace and name; it prints
	// as NAMESPACE/NAME.
	AutomationObject types.NamespacedName
	// Changed holds every change, by file and object.
	Changed Result
	// Values are the automation's messageTemplateValues.
	Values map[string]string
}

// LegacyTemplateData is what a template of an
// image.toolkit.fluxcd.io/v1beta2 ImageUpdateAutomation saw in the Flux
// releases that served that version as their newest: TemplateData plus the
// deprecated .Updated and .Changed.ImageResult.
type LegacyTemplateData struct {
	AutomationObject types.NamespacedName
	// Updated is the image-level result, deprecated in v1beta2 and removed
	// in v1.
	Updated ImageResult
	Changed LegacyResult
	Values  map[string]string
}

// ObjectIdentifier names the Kubernetes object a change was made in:
// apiVersion, kind, metadata.name and metadata.namespace as written in the
// file. A document without them (a Helm values file) has the zero value.
// It embeds kyaml's ResourceIdentifier, as Flux's does, so that templates
// printing it whole (toString, printf "%v") give the same text.
type ObjectIdentifier struct {
	kyaml.ResourceIdentifier
}

// Change is one changed scalar.
type Change struct {
	// OldValue and NewValue are the scalar before and after.
	OldValue string
	NewValue string
	// Setter is the marker's reference: NAMESPACE:NAME for a full image
	// reference, NAMESPACE:NAME:tag (name, digest) for a part.
	Setter string
}

// ObjectChanges maps each object to its changes, in file order.
type ObjectChanges map[ObjectIdentifier][]Change

// Result holds the changes by file, the file names relative to the
// automation's update path.
type Result struct {
	FileChanges map[string]ObjectChanges
}

// Changes returns every distinct change. Flux returns them in map order,
// which varies from run to run; here they come by file name, then object
// (as text/template orders map keys), then position in the file.
func (r Result) Changes() []Change { return allChanges(r.FileChanges) }

// Objects returns the changes by object, whatever file they are in. Flux
// keeps one file's changes when two files hold the same object, picked by
// map order; here the file that sorts last wins.
func (r Result) Objects() ObjectChanges { return objects(r.FileChanges) }

// LegacyResult is Result with the deprecated ImageResult.
type LegacyResult struct {
	ImageResult ImageResult
	FileChanges map[string]ObjectChanges
}

// Changes is Result.Changes.
func (r LegacyResult) Changes() []Change { return allChanges(r.FileChanges) }

// Objects is Result.Objects.
func (r LegacyResult) Objects() ObjectChanges { return objects(r.FileChanges) }

func allChanges(files map[string]ObjectChanges) []Change {
	var out []Change
	seen := map[Change]bool{}
	for _, f := range sortedKeys(files, cmp.Compare[string]) {
		objs := files[f]
		for _, o := range sortedKeys(objs, compareObjects) {
			for _, c := range objs[o] {
				if !seen[c] {
					seen[c] = true
					out = append(out, c)
				}
			}
		}
	}
	return out
}

func objects(files map[string]ObjectChanges) ObjectChanges {
	out := ObjectChanges{}
	for _, f := range sortedKeys(files, cmp.Compare[string]) {
		for o, cs := range files[f] {
			out[o] = cs
		}
	}
	return out
}

// compareObjects orders identifiers field by field, as text/template
// orders struct map keys.
func compareObjects(a, b ObjectIdentifier) int {
	return cmp.Or(
		cmp.Compare(a.APIVersion, b.APIVersion),
		cmp.Compare(a.Kind, b.Kind),
		cmp.Compare(a.Name, b.Name),
		cmp.Compare(a.Namespace, b.Namespace),
	)
}

func sortedKeys[K comparable, V any](m map[K]V, compare func(a, b K) int) []K {
	keys := make([]K, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, compare)
	return keys
}

// ImageRef is an image a policy set, as Flux's deprecated result gives it.
type ImageRef interface {
	// String is the reference as the policy resolved it:
	// ghcr.io/acme/app:1.2.3, with @sha256:... when a digest is pinned.
	String() string
	// Identifier is the tag, or the digest of a pinned reference.
	Identifier() string
	// Repository is the repository path with defaults: library/nginx.
	Repository() string
	// Registry is the registry host with defaults: index.docker.io.
	Registry() string
	// Name is the fully qualified reference:
	// index.docker.io/library/nginx:1.27.
	Name() string
	// Policy is the ImagePolicy's namespace and name.
	Policy() types.NamespacedName
}

type imageRef struct {
	name.Reference
	policy types.NamespacedName
}

func (r imageRef) Policy() types.NamespacedName { return r.policy }
func (r imageRef) Repository() string           { return r.Context().RepositoryStr() }
func (r imageRef) Registry() string             { return r.Context().RegistryStr() }

// ImageResult is Flux's deprecated result: images by file and object.
type ImageResult struct {
	Files map[string]FileResult
}

// FileResult holds the images set in one file, by object.
type FileResult struct {
	Objects map[ObjectIdentifier][]ImageRef
}

// Images returns every distinct image set, by file name and object
// (Flux: in map order).
func (r ImageResult) Images() []ImageRef {
	var out []ImageRef
	seen := map[ImageRef]bool{}
	for _, f := range sortedKeys(r.Files, cmp.Compare[string]) {
		objs := r.Files[f].Objects
		for _, o := range sortedKeys(objs, compareObjects) {
			for _, ref := range objs[o] {
				if !seen[ref] {
					seen[ref] = true
					out = append(out, ref)
				}
			}
		}
	}
	return out
}

// Objects returns the images by object, whatever file they are in.
func (r ImageResult) Objects() map[ObjectIdentifier][]ImageRef {
	out := map[ObjectIdentifier][]ImageRef{}
	for _, f := range sortedKeys(r.Files, cmp.Compare[string]) {
		for o, refs := range r.Files[f].Objects {
			out[o] = append(out[o], refs...)
		}
	}
	return out
}
