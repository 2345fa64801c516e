package discover

import (
	"bytes"
	"errors"
	"fmt"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/imagebump/imagebump/config"
	"github.com/imagebump/imagebump/policy"
)

// This file writes the config: a new imagebump.yaml, or image entries
// appended to an existing one. An existing file is only ever added to:
// out is src with one block of text inserted, never a byte changed, and
// the result is proved by parsing both.

// ErrNotAppendable reports a config whose images cannot be extended by
// adding text alone (images: [] in flow style, say); the entries must be
// added by hand.
var ErrNotAppendable = errors.New("the config's images cannot be extended by adding lines (is it a flow sequence such as images: []?); add the entries by hand")

// header opens a config that init writes.
const header = `# imagebump.yaml, proposed by imagebump init: one image policy per image
# repository, named by the markers in the files. Review each rule (see
# docs/policies.md), then add the repository to keep current (git:, see
# docs/config.md), or see what they would bump with imagebump plan --repo
# DIR -c FILE (run where this file is, plan --repo DIR alone).
`

// NewConfig returns a new imagebump.yaml holding the proposals that write
// an entry, and a registries section allowing plain HTTP to the insecure
// hosts. Each entry has a comment with its reason.
func NewConfig(props []Proposal, insecure []string) []byte {
	var b bytes.Buffer
	b.WriteString(header)
	if len(insecure) > 0 {
		b.WriteString("registries:\n")
		for _, h := range insecure {
			fmt.Fprintf(&b, "  - host: %s\n    insecure: true\n", plain(h))
		}
	}
	entries := renderEntries(props, 2, 4, "\n")
	if entries != "" {
		b.WriteString("images:\n")
		b.WriteString(entries)
	}
	return b.Bytes()
}

// Entries returns the images entries of the proposals that write one, as
// items of a block list indented by two spaces, for a user to add by hand
// to a config that cannot be extended (ErrNotAppendable).
func Entries(props []Proposal) []byte {
	return []byte(renderEntries(props, 2, 4, "\n"))
}

// plain writes a string as YAML would, quoted when it must be.
func plain(s string) string {
	out, err := yaml.Marshal(s)
	if err != nil {
		return `""`
	}
	return strings.TrimSuffix(string(out), "\n")
}

// entryNode builds an images entry for a proposal.
func entryNode(p Proposal) *yaml.Node {
	str := func(v string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: v} }
	m := &yaml.Node{Kind: yaml.MappingNode}
	add := func(k string, v *yaml.Node) { m.Content = append(m.Content, str(k), v) }
	add("name", str(p.Policy))
	add("repository", str(p.Repository))
	rule := &yaml.Node{Kind: yaml.MappingNode}
	switch {
	case p.Spec.SemVer != "":
		rule.Content = append(rule.Content, str("semver"), str(p.Spec.SemVer))
	case p.Spec.Numerical != "":
		rule.Content = append(rule.Content, str("numerical"), str(p.Spec.Numerical))
	default:
		rule.Content = append(rule.Content, str("alphabetical"), str(p.Spec.Alphabetical))
	}
	add("policy", rule)
	if p.Spec.FilterPattern != "" {
		ft := &yaml.Node{Kind: yaml.MappingNode}
		ft.Content = append(ft.Content, str("pattern"), str(p.Spec.FilterPattern))
		if p.Spec.FilterExtract != "" {
			ft.Content = append(ft.Content, str("extract"), str(p.Spec.FilterExtract))
		}
		add("filterTags", ft)
	}
	if p.Spec.Digest == policy.DigestAlways || p.Spec.Digest == policy.DigestIfNotPresent {
		add("digest", str(string(p.Spec.Digest)))
	}
	return m
}

// renderEntries writes the entries of the proposals that write one, as
// block sequence items whose dash is at column dash and keys at column
// key (0-based), with the given line ending.
func renderEntries(props []Proposal, dash, key int, eol string) string {
	var b strings.Builder
	for _, p := range props {
		if !p.Writes() {
			continue
		}
		var buf bytes.Buffer
		enc := yaml.NewEncoder(&buf)
		enc.SetIndent(2)
		_ = enc.Encode(entryNode(p)) // a tree of strings always encodes
		_ = enc.Close()
		pad := strings.Repeat(" ", dash)
		for _, c := range commentLines(p) {
			b.WriteString(pad + "# " + c + eol)
		}
		lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
		for i, l := range lines {
			if i == 0 {
				b.WriteString(pad + "-" + strings.Repeat(" ", max(key-dash-1, 1)) + l + eol)
				continue
			}
			b.WriteString(strings.Repeat(" ", max(key, dash+2)) + l + eol)
		}
	}
	return b.String()
}

// commentLines is the comment above an entry: its reason, wrapped.
func commentLines(p Proposal) []string {
	text := p.Reason
	if text != "" {
		text = strings.ToUpper(text[:1]) + text[1:]
	}
	if len(p.TagsInUse) > 0 {
		tags := make([]string, len(p.TagsInUse))
		for i, t := range p.TagsInUse {
			tags[i] = orLatest(t)
		}
		text = "in use: " + strings.Join(tags, ", ") + ". " + text
	}
	if !strings.HasSuffix(text, ".") {
		text += "."
	}
	var out []string
	line := ""
	for _, w := range strings.Fields(text) {
		if line != "" && len(line)+1+len(w) > 76 {
			out = append(out, line)
			line = ""
		}
		if line != "" {
			line += " "
		}
		line += w
	}
	if line != "" {
		out = append(out, line)
	}
	return out
}

// AppendImages returns the config src (named file, for errors) with
// entries for the proposals that write one added to its images, and
// nothing else changed: the entries go after the last item of a block
// images sequence, in its indentation, or, without an images key, in a
// new images section at the end of the file. src itself is returned when
// there is nothing to add.
//
// The result is proved: it is src with one block of text inserted, it
// parses as a valid config holding src's images followed by the new ones,
// and every other key reads as before. A config that cannot be extended
// so returns ErrNotAppendable (or the proof's error).
func AppendImages(src []byte, file string, props []Proposal) ([]byte, error) {
	var adds []Proposal
	for _, p := range props {
		if p.Writes() {
			adds = append(adds, p)
		}
	}
	if len(adds) == 0 {
		return src, nil
	}
	if len(bytes.TrimSpace(src)) == 0 {
		out := append(bytes.Clone(src), NewConfig(adds, nil)...)
		return out, proveAppend(src, out, file, adds)
	}
	eol := "\n"
	if bytes.Contains(src, []byte("\r\n")) {
		eol = "\r\n"
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(src, &doc); err != nil {
		return nil, fmt.Errorf("reading %s: %w", file, err)
	}
	if len(doc.Content) != 1 || doc.Content[0].Kind != yaml.MappingNode || doc.Content[0].Style&yaml.FlowStyle != 0 {
		return nil, ErrNotAppendable
	}
	root := doc.Content[0]
	var keyN, images *yaml.Node
	next := 0 // line of the key after images, 0 when images is last
	for i := 0; i+1 < len(root.Content); i += 2 {
		if keyN != nil && next == 0 {
			next = root.Content[i].Line
		}
		if root.Content[i].Value == "images" {
			keyN, images = root.Content[i], root.Content[i+1]
		}
	}
	lines := splitKeep(src)
	// What follows a document end (--- or ...) at the end of the file is
	// another document to a YAML reader: the entries go before it.
	body := docLines(lines)
	var at int
	var text string
	switch {
	case keyN == nil:
		// A new section at the end of the document.
		at = offsetAfter(lines, body)
		if at > 0 && src[at-1] != '\n' {
			text = eol
		}
		text += "images:" + eol + renderEntries(adds, 2, 4, eol)
	case images.Kind == yaml.SequenceNode && images.Style&yaml.FlowStyle == 0 && len(images.Content) > 0:
		last := lastLine(images)
		if next > 0 && last >= next || last > len(lines) {
			return nil, ErrNotAppendable
		}
		if next == 0 {
			next = body + 1
		}
		at = offsetAfter(lines, endOfBlock(lines, last, next))
		if at == len(src) && len(src) > 0 && src[len(src)-1] != '\n' {
			text = eol
		}
		first := images.Content[0]
		text += renderEntries(adds, images.Column-1, first.Column-1, eol)
	default:
		return nil, ErrNotAppendable
	}
	out := make([]byte, 0, len(src)+len(text))
	out = append(out, src[:at]...)
	out = append(out, text...)
	out = append(out, src[at:]...)
	if err := proveAppend(src, out, file, adds); err != nil {
		return nil, err
	}
	return out, nil
}

// docLines returns how many of lines come before the document end markers
// (--- or ...) that end the file, with the blank lines and comments among
// and after them; len(lines) when the file ends with no marker.
func docLines(lines [][]byte) int {
	n := len(lines)
	for i := len(lines) - 1; i >= 0; i-- {
		t := bytes.TrimSpace(lines[i])
		switch {
		case len(t) == 0 || t[0] == '#':
		case isDocMarker(bytes.TrimRight(lines[i], " \t\r\n")):
			// At the line's start only: indented, it is a block
			// scalar's text.
			n = i
		default:
			return n
		}
	}
	return n
}

// isDocMarker reports whether the trimmed line t is a document marker,
// --- or ..., alone or before a comment.
func isDocMarker(t []byte) bool {
	for _, m := range []string{"---", "..."} {
		if rest, ok := bytes.CutPrefix(t, []byte(m)); ok && (len(rest) == 0 || rest[0] == ' ' || rest[0] == '\t') {
			rest = bytes.TrimSpace(rest)
			return len(rest) == 0 || rest[0] == '#'
		}
	}
	return false
}

// splitKeep cuts src into lines that keep their line breaks.
func splitKeep(src []byte) [][]byte {
	var out [][]byte
	for len(src) > 0 {
		i := bytes.IndexByte(src, '\n')
		if i < 0 {
			out = append(out, src)
			break
		}
		out = append(out, src[:i+1])
		src = src[i+1:]
	}
	return out
}

// offsetAfter returns the offset just after the 1-based line.
func offsetAfter(lines [][]byte, line int) int {
	n := 0
	for i := 0; i < line && i < len(lines); i++ {
		n += len(lines[i])
	}
	return n
}

// lastLine returns the line of the last node in n's tree.
func lastLine(n *yaml.Node) int {
	last := n.Line
	for _, c := range n.Content {
		last = max(last, lastLine(c))
	}
	return last
}

// endOfBlock returns the last line of the block that ends before line
// next (0: the end of the file) and holds line last: the last line at or
// after last that is neither blank nor a comment alone. Comments after it
// belong to what follows.
func endOfBlock(lines [][]byte, last, next int) int {
	end := len(lines)
	if next > 0 {
		end = next - 1
	}
	for end > last {
		t := bytes.TrimSpace(lines[end-1])
		if len(t) > 0 && t[0] != '#' {
			break
		}
		end--
	}
	return end
}

// proveAppend checks that out parses as a valid config whose images are
// src's followed by the added ones, and whose other keys read as src's.
func proveAppend(src, out []byte, file string, adds []Proposal) error {
	fail := func(err error) error {
		return fmt.Errorf("extending %s would not give the intended config, so it is left as it is: %w", file, err)
	}
	newCfg, err := config.Parse(out, file)
	if err != nil {
		return fail(err)
	}
	var oldImages []config.Image
	if len(bytes.TrimSpace(src)) > 0 {
		oldCfg, err := config.Parse(src, file)
		if err != nil {
			// The old config was invalid: then at least the new entries
			// must be there and parse.
			return fail(fmt.Errorf("the config is not valid as it is: %w", err))
		}
		oldImages = oldCfg.Images
	}
	if len(newCfg.Images) != len(oldImages)+len(adds) {
		return fail(fmt.Errorf("%d images instead of %d", len(newCfg.Images), len(oldImages)+len(adds)))
	}
	for i, im := range oldImages {
		got := newCfg.Images[i]
		if got.Name != im.Name || got.Repository != im.Repository || Describe(got.Spec()) != Describe(im.Spec()) {
			return fail(fmt.Errorf("image %s changed", im.Name))
		}
	}
	for i, p := range adds {
		got := newCfg.Images[len(oldImages)+i]
		if got.Name != config.NormalizeName(p.Policy) || got.Repository != p.Repository || Describe(got.Spec()) != Describe(p.Spec) {
			return fail(fmt.Errorf("the new entry for %s reads as %s %s (%s)", p.Policy, got.Name, got.Repository, Describe(got.Spec())))
		}
	}
	// Every key but images reads as it did.
	var a, b yaml.Node
	if err := yaml.Unmarshal(src, &a); err != nil {
		return fail(err)
	}
	if err := yaml.Unmarshal(out, &b); err != nil {
		return fail(err)
	}
	if len(a.Content) == 0 {
		return nil
	}
	am, bm := a.Content[0], b.Content[0]
	if am.Kind != yaml.MappingNode || bm.Kind != yaml.MappingNode {
		return fail(errors.New("the root is no longer a mapping"))
	}
	// The other keys read as they did, and the old images come first,
	// as they were.
	others := func(m *yaml.Node) (out []*yaml.Node, images []*yaml.Node) {
		for i := 0; i+1 < len(m.Content); i += 2 {
			k, v := m.Content[i], m.Content[i+1]
			switch {
			case k.Value != "images":
				out = append(out, k, v)
			case v.Kind == yaml.SequenceNode:
				images = v.Content
			}
		}
		return out, images
	}
	ao, ai := others(am)
	bo, bi := others(bm)
	if len(ao) != len(bo) || len(bi) < len(ai) {
		return fail(errors.New("the config's other keys changed"))
	}
	for i := range ao {
		if !sameContent(ao[i], bo[i]) {
			return fail(fmt.Errorf("the key at line %d reads differently", ao[i].Line))
		}
	}
	for i := range ai {
		if !sameContent(ai[i], bi[i]) {
			return fail(fmt.Errorf("the image at line %d reads differently", ai[i].Line))
		}
	}
	return nil
}

// sameContent compares two trees in kind, tag, value and anchors, not in
// position or comments.
func sameContent(a, b *yaml.Node) bool {
	if a.Kind != b.Kind || a.Tag != b.Tag || a.Value != b.Value || a.Anchor != b.Anchor || len(a.Content) != len(b.Content) {
		return false
	}
	if a.Kind == yaml.AliasNode {
		return a.Value == b.Value
	}
	for i := range a.Content {
		if !sameContent(a.Content[i], b.Content[i]) {
			return false
		}
	}
	return true
}
