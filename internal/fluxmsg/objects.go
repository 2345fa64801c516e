package fluxmsg

import (
	"fmt"
	"io/fs"
	"path"
	"sort"

	kyaml "sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/imagebump/imagebump/internal/yamlstream"
)

// span is the object that starts at a line of a file.
type span struct {
	line int
	id   ObjectIdentifier
}

// objectFinder finds the object holding a line of a file, reading each
// file once.
type objectFinder struct {
	files fs.FS
	cache map[string][]span
}

// at returns the identifier of the object holding line of file, as Flux
// reads it: the document's apiVersion, kind, metadata.name and
// metadata.namespace, or those of the item of a List document.
func (f *objectFinder) at(file string, line int) (ObjectIdentifier, error) {
	spans, ok := f.cache[file]
	if !ok {
		if f.files == nil {
			return ObjectIdentifier{}, errNoFiles
		}
		data, err := fs.ReadFile(f.files, path.Clean(file))
		if err != nil {
			return ObjectIdentifier{}, fmt.Errorf("reading %s to name the objects changed: %w", file, err)
		}
		spans = objectSpans(data)
		f.cache[file] = spans
	}
	i := sort.Search(len(spans), func(i int) bool { return spans[i].line > line }) - 1
	if i < 0 {
		return ObjectIdentifier{}, nil
	}
	return spans[i].id, nil
}

// objectSpans returns where each object of a YAML stream starts. A
// document that does not parse, or has no metadata, is the zero
// identifier, as Flux records it.
func objectSpans(data []byte) []span {
	docs, err := yamlstream.Split(data)
	if err != nil {
		return nil
	}
	var out []span
	for _, d := range docs {
		n, err := parse(d.Text)
		if err != nil || n.YNode() == nil || n.YNode().Kind != kyaml.MappingNode {
			out = append(out, span{line: d.Line})
			continue
		}
		// kyaml unwraps a List when it is the stream's only document.
		if len(docs) == 1 {
			if items := listItems(n); items != nil {
				out = append(out, span{line: d.Line})
				for _, it := range items {
					out = append(out, span{line: d.FileLine(it.YNode().Line), id: identify(it)})
				}
				continue
			}
		}
		out = append(out, span{line: d.Line, id: identify(n)})
	}
	return out
}

func parse(text string) (n *kyaml.RNode, err error) {
	defer func() {
		if r := recover(); r != nil {
			n, err = nil, fmt.Errorf("kyaml failed: %v", r)
		}
	}()
	return kyaml.Parse(text)
}

func listItems(n *kyaml.RNode) []*kyaml.RNode {
	kind := n.Field("kind")
	if kind == nil || (kind.Value.YNode().Value != "List" && kind.Value.YNode().Value != "ResourceList") {
		return nil
	}
	items := n.Field("items")
	if items == nil || items.Value.YNode().Kind != kyaml.SequenceNode {
		return nil
	}
	var out []*kyaml.RNode
	for _, c := range items.Value.Content() {
		out = append(out, kyaml.NewRNode(c))
	}
	return out
}

func identify(n *kyaml.RNode) (id ObjectIdentifier) {
	// kyaml panics on some malformed metadata (a list): such a document
	// names no object.
	defer func() {
		if recover() != nil {
			id = ObjectIdentifier{}
		}
	}()
	if n.YNode().Kind != kyaml.MappingNode {
		return ObjectIdentifier{}
	}
	m, _ := n.GetMeta() // a missing metadata is the zero identifier
	return ObjectIdentifier{m.GetIdentifier()}
}
