package setters

import (
	"fmt"

	"gopkg.in/yaml.v3"
)

// verify parses the edited bytes and checks that they read as the original
// documents but for the edited scalars, which must now read as their new
// values, as strings. It returns the parsed documents.
func verify(old []*yaml.Node, newSrc []byte, edits []edit) ([]*yaml.Node, error) {
	docs, err := parseDocs(newSrc)
	if err != nil {
		return nil, err
	}
	if len(docs) != len(old) {
		return nil, fmt.Errorf("%d documents instead of %d", len(docs), len(old))
	}
	changed := make(map[*yaml.Node]string, len(edits))
	lines := make(map[int]bool, len(edits))
	for _, ed := range edits {
		changed[ed.node] = ed.change.New
		lines[ed.node.Line] = true
	}
	for i := range docs {
		if err := sameNode(old[i], docs[i], changed, lines); err != nil {
			return nil, err
		}
	}
	return docs, nil
}

// sameNode compares two trees. Nodes in changed must read as their new
// value, as strings; every other node must be equal in kind, style, tag,
// value, anchor, comments and position (columns on changed lines may move).
func sameNode(a, b *yaml.Node, changed map[*yaml.Node]string, lines map[int]bool) error {
	if a.Kind != b.Kind {
		return fmt.Errorf("line %d: the node changed kind", a.Line)
	}
	if a.Line != b.Line {
		return fmt.Errorf("line %d: a node moved to line %d", a.Line, b.Line)
	}
	if a.Anchor != b.Anchor || a.HeadComment != b.HeadComment || a.LineComment != b.LineComment || a.FootComment != b.FootComment {
		return fmt.Errorf("line %d: an anchor or comment changed", a.Line)
	}
	if v, ok := changed[a]; ok {
		switch {
		case b.Value != v:
			return fmt.Errorf("line %d: the new value reads as %q, not %q", a.Line, b.Value, v)
		case b.Tag != "!!str":
			return fmt.Errorf("line %d: the new value %q reads as %s, not as a string", a.Line, v, b.Tag)
		case a.Column != b.Column:
			return fmt.Errorf("line %d: the scalar moved from column %d to %d", a.Line, a.Column, b.Column)
		}
		return nil
	}
	switch {
	case a.Value != b.Value:
		return fmt.Errorf("line %d: the value %q changed to %q", a.Line, a.Value, b.Value)
	case a.Tag != b.Tag:
		return fmt.Errorf("line %d: the tag %s changed to %s", a.Line, a.Tag, b.Tag)
	case a.Style != b.Style:
		return fmt.Errorf("line %d: the style of a node changed", a.Line)
	case a.Column != b.Column && !lines[a.Line]:
		return fmt.Errorf("line %d: a node moved from column %d to %d", a.Line, a.Column, b.Column)
	case len(a.Content) != len(b.Content):
		return fmt.Errorf("line %d: a collection changed size from %d to %d", a.Line, len(a.Content), len(b.Content))
	}
	for i := range a.Content {
		if err := sameNode(a.Content[i], b.Content[i], changed, lines); err != nil {
			return err
		}
	}
	return nil
}
