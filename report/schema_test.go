package report

import (
	"encoding/json"
	"os"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// node is the part of a JSON Schema the tests read.
type node struct {
	Ref                  string           `json:"$ref"`
	Type                 string           `json:"type"`
	Required             []string         `json:"required"`
	Properties           map[string]*node `json:"properties"`
	AdditionalProperties *bool            `json:"additionalProperties"`
	Items                *node            `json:"items"`
	Defs                 map[string]*node `json:"$defs"`
}

func load(t *testing.T, data []byte) *node {
	t.Helper()
	var n node
	if err := json.Unmarshal(data, &n); err != nil {
		t.Fatal(err)
	}
	return &n
}

// TestSchemasMatchTypes walks each document type by its json tags and its
// schema side by side: the same keys, JSON types, and required keys (those
// without omitempty), and every object closed to other keys.
func TestSchemasMatchTypes(t *testing.T) {
	for _, tt := range []struct {
		name   string
		schema []byte
		typ    reflect.Type
	}{
		{"plan", PlanSchema, reflect.TypeFor[Plan]()},
		{"run", RunSchema, reflect.TypeFor[Run]()},
	} {
		t.Run(tt.name, func(t *testing.T) {
			root := load(t, tt.schema)
			compare(t, root, root, tt.typ, tt.name)
		})
	}
}

func compare(t *testing.T, root, n *node, typ reflect.Type, path string) {
	t.Helper()
	if n.Ref != "" {
		n = root.Defs[strings.TrimPrefix(n.Ref, "#/$defs/")]
		if n == nil {
			t.Fatalf("%s: unknown $ref", path)
		}
	}
	for typ.Kind() == reflect.Pointer {
		typ = typ.Elem()
	}
	want := map[reflect.Kind]string{reflect.String: "string", reflect.Int: "integer", reflect.Bool: "boolean",
		reflect.Slice: "array", reflect.Struct: "object"}[typ.Kind()]
	if n.Type != want {
		t.Errorf("%s: schema type %q, Go type %s", path, n.Type, typ)
		return
	}
	switch typ.Kind() {
	case reflect.Slice:
		compare(t, root, n.Items, typ.Elem(), path+"[]")
	case reflect.Struct:
		if n.AdditionalProperties == nil || *n.AdditionalProperties {
			t.Errorf("%s: the schema allows other properties", path)
		}
		var keys, required []string
		for f := range typ.Fields() {
			tag := f.Tag.Get("json")
			if tag == "" || tag == "-" {
				continue
			}
			name, opts, _ := strings.Cut(tag, ",")
			keys = append(keys, name)
			if !strings.Contains(opts, "omitempty") {
				required = append(required, name)
			}
			p, ok := n.Properties[name]
			if !ok {
				t.Errorf("%s.%s: in the Go type, not in the schema", path, name)
				continue
			}
			compare(t, root, p, f.Type, path+"."+name)
		}
		var schemaKeys []string
		for k := range n.Properties {
			schemaKeys = append(schemaKeys, k)
		}
		sort.Strings(keys)
		sort.Strings(schemaKeys)
		if diff := cmp.Diff(schemaKeys, keys); diff != "" {
			t.Errorf("%s: keys (-schema +Go):\n%s", path, diff)
		}
		sort.Strings(required)
		got := slices.Sorted(slices.Values(n.Required))
		if diff := cmp.Diff(got, required); diff != "" {
			t.Errorf("%s: required keys (-schema +Go):\n%s", path, diff)
		}
	}
}

// TestCLIDocsListEveryField checks that docs/cli.md's table of the plan
// document names exactly the schema's fields, so the docs match the
// output.
func TestCLIDocsListEveryField(t *testing.T) {
	data, err := os.ReadFile("../docs/cli.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(data)
	start := strings.Index(doc, "| `version` | int | schema version")
	if start < 0 {
		t.Fatal("docs/cli.md: the plan document's field table is missing")
	}
	table := doc[start:]
	if end := strings.Index(table, "\n\n"); end >= 0 {
		table = table[:end]
	}
	documented := map[string]bool{}
	cell := regexp.MustCompile("^\\| (`[^|]*`) \\|")
	name := regexp.MustCompile("`([^`]+)`")
	for _, line := range strings.Split(table, "\n") {
		m := cell.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		// A row may name several fields: `problems[].file`, `.line`.
		var prefix string
		for _, f := range name.FindAllStringSubmatch(m[1], -1) {
			field := f[1]
			if strings.HasPrefix(field, ".") {
				field = prefix + field
			} else if i := strings.LastIndex(field, "."); i >= 0 {
				prefix = field[:i]
			}
			documented[field] = true
		}
	}
	root := load(t, PlanSchema)
	var want []string
	var walk func(n *node, path string)
	walk = func(n *node, path string) {
		if n.Ref != "" {
			n = root.Defs[strings.TrimPrefix(n.Ref, "#/$defs/")]
		}
		if n.Items != nil {
			walk(n.Items, path+"[]")
			return
		}
		for k, p := range n.Properties {
			full := strings.TrimPrefix(path+"."+k, ".")
			if !hasChildren(root, p) || documented[full] {
				// A list or object is documented through its fields, and
				// may have a row of its own.
				want = append(want, full)
			}
			walk(p, full)
		}
	}
	walk(root, "")
	var got []string
	for f := range documented {
		got = append(got, f)
	}
	sort.Strings(want)
	sort.Strings(got)
	if diff := cmp.Diff(got, want); diff != "" {
		t.Errorf("docs/cli.md's plan table (-documented +schema):\n%s", diff)
	}
}

// hasChildren reports whether n is an object with properties, or a list of
// such objects.
func hasChildren(root, n *node) bool {
	if n.Ref != "" {
		n = root.Defs[strings.TrimPrefix(n.Ref, "#/$defs/")]
	}
	if n.Items != nil {
		return hasChildren(root, n.Items)
	}
	return len(n.Properties) > 0
}
