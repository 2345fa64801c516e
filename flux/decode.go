package flux

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"time"

	automationv1 "github.com/fluxcd/image-automation-controller/api/v1"
	automationv1beta2 "github.com/fluxcd/image-automation-controller/api/v1beta2"
	reflectorv1 "github.com/fluxcd/image-reflector-controller/api/v1"
	reflectorv1beta2 "github.com/fluxcd/image-reflector-controller/api/v1beta2"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	sourcev1beta2 "github.com/fluxcd/source-controller/api/v1beta2"
	sjson "sigs.k8s.io/json"
	kyaml "sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/imagebump/imagebump/internal/yamlstream"
)

// API groups and versions.
const (
	groupImage  = "image.toolkit.fluxcd.io"
	groupSource = "source.toolkit.fluxcd.io"
	fluxDomain  = ".toolkit.fluxcd.io"
)

// source is where an object was read: its node, and how node lines map to
// file lines.
type source struct {
	obj   Object
	node  *kyaml.RNode
	doc   yamlstream.Doc
	built bool
}

// line returns the file line of the field at path (spec.policy.semver,
// spec.exclusionList[1]), or the object's line when the field is absent
// or the object was built by kustomize.
func (s *source) line(path string) int {
	if s.built || path == "" {
		return s.obj.Line
	}
	k, _ := lookup(s.node.YNode(), path)
	if k == nil {
		return s.obj.Line
	}
	return s.doc.FileLine(k.Line)
}

// has reports whether the field at path is written.
func (s *source) has(path string) bool {
	k, _ := lookup(s.node.YNode(), path)
	return k != nil
}

// scalar returns the scalar node at path, nil when absent or not a scalar.
func (s *source) scalar(path string) *kyaml.Node {
	_, v := lookup(s.node.YNode(), path)
	if v == nil || v.Kind != kyaml.ScalarNode {
		return nil
	}
	return v
}

// str returns the string scalar at path, or "".
func (s *source) str(path string) string {
	if v := s.scalar(path); v != nil {
		return v.Value
	}
	return ""
}

// labels returns metadata.labels, string values only.
func (s *source) labels() map[string]string {
	_, m := lookup(s.node.YNode(), "metadata.labels")
	if m == nil || m.Kind != kyaml.MappingNode {
		return nil
	}
	out := map[string]string{}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if v := deref(m.Content[i+1]); v != nil && v.Kind == kyaml.ScalarNode {
			out[m.Content[i].Value] = v.Value
		}
	}
	return out
}

// lookup returns the key node and value node of the field at path (for a
// path ending in an index, the item node twice), nils when absent.
func lookup(n *kyaml.Node, path string) (key, value *kyaml.Node) {
	n = deref(n)
	for _, part := range splitPath(path) {
		if n == nil {
			return nil, nil
		}
		switch n.Kind {
		case kyaml.SequenceNode:
			i, err := strconv.Atoi(part)
			if err != nil || i < 0 || i >= len(n.Content) {
				return nil, nil
			}
			key, n = n.Content[i], deref(n.Content[i])
		case kyaml.MappingNode:
			found := false
			for j := 0; j+1 < len(n.Content); j += 2 {
				if n.Content[j].Value == part {
					key, n, found = n.Content[j], deref(n.Content[j+1]), true
					break
				}
			}
			if !found {
				return nil, nil
			}
		default:
			return nil, nil
		}
	}
	return key, n
}

func deref(n *kyaml.Node) *kyaml.Node {
	for n != nil && n.Kind == kyaml.AliasNode {
		n = n.Alias
	}
	if n != nil && n.Kind == kyaml.DocumentNode && len(n.Content) > 0 {
		n = n.Content[0]
	}
	return n
}

// splitPath splits a.b[2].c into a, b, 2, c.
func splitPath(path string) []string {
	path = strings.ReplaceAll(path, "[", ".")
	path = strings.ReplaceAll(path, "]", "")
	return strings.Split(path, ".")
}

var durationRE = regexp.MustCompile(`^([0-9]+(\.[0-9]+)?(ms|s|m|h))+$`)

// checkDurations reports intervals and timeouts Flux's CRDs would refuse,
// with their line: the JSON decoder's error would not say where.
func checkDurations(s *source, p *problems) bool {
	ok := true
	for _, f := range []string{"spec.interval", "spec.timeout"} {
		if !s.has(f) {
			continue
		}
		v := s.scalar(f)
		if v == nil || v.Tag != "!!str" {
			continue // a number or mapping: the decoder says so, with the field
		}
		if _, err := time.ParseDuration(v.Value); err != nil || !durationRE.MatchString(v.Value) {
			p.fail(s.obj, f, s.line(f), nil, "%q is not a duration such as 5m, 1h or 30s", v.Value)
			ok = false
		}
	}
	return ok
}

var (
	typeErrorRE = regexp.MustCompile(`cannot unmarshal (.+) into Go struct field [A-Za-z0-9_]+\.(\S+) of type (\S+)`)
	yamlLineRE  = regexp.MustCompile(`line (\d+)`)
)

// decodeStrict decodes the object at s into v, a pointer to a Flux API
// type, refusing unknown and duplicate fields. Problems are recorded with
// their line; it returns false when there were any.
func decodeStrict(s *source, v any, p *problems) bool {
	if !checkDurations(s, p) {
		return false
	}
	data, err := s.node.MarshalJSON()
	if err != nil {
		line := s.obj.Line
		if m := yamlLineRE.FindStringSubmatch(err.Error()); m != nil && !s.built {
			n, _ := strconv.Atoi(m[1])
			line = s.doc.FileLine(n)
		}
		p.fail(s.obj, "", line, err, "invalid YAML")
		return false
	}
	strict, err := sjson.UnmarshalStrict(data, v)
	if err != nil {
		if m := typeErrorRE.FindStringSubmatch(err.Error()); m != nil {
			field := jsonPath(m[2])
			p.fail(s.obj, field, s.line(field), nil, "expected %s, got %s", jsonTypeName(m[3]), m[1])
		} else {
			p.fail(s.obj, "", s.obj.Line, err, "cannot decode")
		}
		return false
	}
	for _, e := range strict {
		var fe interface{ FieldPath() string }
		if !errors.As(e, &fe) {
			p.fail(s.obj, "", s.obj.Line, e, "cannot decode")
			continue
		}
		field := fe.FieldPath()
		if strings.HasPrefix(e.Error(), "duplicate field") {
			p.fail(s.obj, field, s.line(field), nil, "duplicate field")
			continue
		}
		msg := fmt.Sprintf("unknown field %q", lastPart(field))
		if hint := suggestField(reflect.TypeOf(v), field); hint != "" {
			msg += fmt.Sprintf(" (did you mean %q?)", hint)
		}
		msg += " in " + s.obj.APIVersion + " " + s.obj.Kind
		p.fail(s.obj, field, s.line(field), nil, "%s", msg)
	}
	return len(strict) == 0
}

// jsonPath drops the Go names of embedded structs that the decoder puts in
// a field path (ObjectMeta.metadata.name).
func jsonPath(p string) string {
	parts := strings.Split(p, ".")
	var out []string
	for _, part := range parts {
		if part != "" && part[0] >= 'A' && part[0] <= 'Z' {
			continue
		}
		out = append(out, part)
	}
	return strings.Join(out, ".")
}

func jsonTypeName(goType string) string {
	switch {
	case strings.HasPrefix(goType, "[]"):
		return "a list"
	case strings.HasPrefix(goType, "map["), strings.Contains(goType, "."):
		return "a mapping"
	case goType == "bool":
		return "a boolean (true or false)"
	case strings.HasPrefix(goType, "int"), strings.HasPrefix(goType, "float"):
		return "a number"
	}
	return "a string"
}

func lastPart(path string) string {
	parts := splitPath(path)
	return parts[len(parts)-1]
}

// suggestField returns the JSON field of t, at the level of path, closest
// to path's last part.
func suggestField(t reflect.Type, path string) string {
	parts := splitPath(path)
	for _, part := range parts[:len(parts)-1] {
		t = derefType(t)
		if _, err := strconv.Atoi(part); err == nil && (t.Kind() == reflect.Slice) {
			t = t.Elem()
			continue
		}
		if t.Kind() == reflect.Map {
			t = t.Elem()
			continue
		}
		if t.Kind() != reflect.Struct {
			return ""
		}
		f, ok := jsonFields(t)[part]
		if !ok {
			return ""
		}
		t = f
	}
	t = derefType(t)
	if t.Kind() != reflect.Struct {
		return ""
	}
	var names []string
	for n := range jsonFields(t) {
		names = append(names, n)
	}
	return closest(lastPart(path), names)
}

func derefType(t reflect.Type) reflect.Type {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t
}

// jsonFields maps the JSON names of t's fields, inlined structs flattened,
// to their types.
func jsonFields(t reflect.Type) map[string]reflect.Type {
	m := map[string]reflect.Type{}
	for i := range t.NumField() {
		f := t.Field(i)
		name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" || !f.IsExported() {
			continue
		}
		if name == "" && (f.Anonymous || strings.Contains(opts, "inline")) {
			for k, v := range jsonFields(derefType(f.Type)) {
				m[k] = v
			}
			continue
		}
		if name == "" {
			name = f.Name
		}
		m[name] = f.Type
	}
	return m
}

// decoded holds an object decoded into the current API version's type.
type decoded struct {
	src  *source
	repo *reflectorv1.ImageRepository
	pol  *reflectorv1.ImagePolicy
	auto *automationv1.ImageUpdateAutomation
	git  *sourcev1.GitRepository
}

// typeFor returns a new value of the Flux API type for apiVersion and
// kind, or nil when imagebump does not read that version.
func typeFor(apiVersion, kind string) any {
	switch apiVersion + " " + kind {
	case groupImage + "/v1 " + KindImageRepository:
		return &reflectorv1.ImageRepository{}
	case groupImage + "/v1beta2 " + KindImageRepository:
		return &reflectorv1beta2.ImageRepository{}
	case groupImage + "/v1 " + KindImagePolicy:
		return &reflectorv1.ImagePolicy{}
	case groupImage + "/v1beta2 " + KindImagePolicy:
		return &reflectorv1beta2.ImagePolicy{}
	case groupImage + "/v1 " + KindImageUpdateAutomation:
		return &automationv1.ImageUpdateAutomation{}
	case groupImage + "/v1beta2 " + KindImageUpdateAutomation:
		return &automationv1beta2.ImageUpdateAutomation{}
	case groupSource + "/v1 " + KindGitRepository:
		return &sourcev1.GitRepository{}
	case groupSource + "/v1beta2 " + KindGitRepository:
		return &sourcev1beta2.GitRepository{}
	}
	return nil
}

// apiVersionRE splits a Kubernetes API version: v1, v1beta2, v2alpha1.
var apiVersionRE = regexp.MustCompile(`^v([0-9]+)(?:(alpha|beta)([0-9]+))?$`)

// unreadVersion says why imagebump does not read kind in apiVersion, which
// typeFor does not know, and what to do: an older version is upgraded, and
// a newer one is not known yet.
func unreadVersion(kind, apiVersion string) string {
	group := groupImage
	if kind == KindGitRepository {
		group = groupSource
	}
	reads := fmt.Sprintf("imagebump reads %s as %s/v1 and %s/v1beta2", kind, group, group)
	// The loader passes only the kinds it reads, in their own group.
	_, version, _ := strings.Cut(apiVersion, "/")
	m := apiVersionRE.FindStringSubmatch(version)
	if m == nil {
		return fmt.Sprintf("%s, not %s, which is no Kubernetes API version", reads, apiVersion)
	}
	major, _ := strconv.Atoi(m[1])
	minor, _ := strconv.Atoi(m[3])
	// v1 and v1beta2 are read; what sorts below v1beta2 is older.
	older := major == 0 || (major == 1 && (m[2] == "alpha" || (m[2] == "beta" && minor < 2)))
	if older {
		return fmt.Sprintf("%s, not the older %s: upgrade the manifest to v1", reads, apiVersion)
	}
	return fmt.Sprintf("%s, not %s, which is newer than this imagebump knows: use an imagebump release that reads it, or write the object as v1 while Flux still serves that version", reads, apiVersion)
}

// decode decodes s strictly into its API version's type and converts it
// to the current version's. ok is false when s has problems (recorded).
func decode(s *source, p *problems) (d decoded, ok bool) {
	v := typeFor(s.obj.APIVersion, s.obj.Kind)
	if v == nil {
		p.fail(s.obj, "apiVersion", s.line("apiVersion"), nil, "%s", unreadVersion(s.obj.Kind, s.obj.APIVersion))
		return d, false
	}
	if !decodeStrict(s, v, p) {
		return d, false
	}
	d.src = s
	var target any
	switch s.obj.Kind {
	case KindImageRepository:
		d.repo = &reflectorv1.ImageRepository{}
		target = d.repo
	case KindImagePolicy:
		d.pol = &reflectorv1.ImagePolicy{}
		target = d.pol
	case KindImageUpdateAutomation:
		d.auto = &automationv1.ImageUpdateAutomation{}
		target = d.auto
	case KindGitRepository:
		d.git = &sourcev1.GitRepository{}
		target = d.git
	}
	// The previous beta's fields are a subset of the current version's, but
	// for GitRepository's gitImplementation and accessFrom, which notes
	// report; a JSON round trip moves the rest over.
	data, err := json.Marshal(v)
	if err == nil {
		err = json.Unmarshal(data, target)
	}
	if err != nil {
		p.fail(s.obj, "", s.obj.Line, err, "converting to the current API version")
		return d, false
	}
	return d, true
}
