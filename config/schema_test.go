package config

import (
	"encoding/json"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// schemaNode is the part of a JSON Schema the test compares with the Go
// types.
type schemaNode struct {
	Ref                  string                 `json:"$ref"`
	Type                 string                 `json:"type"`
	Enum                 []string               `json:"enum"`
	Properties           map[string]*schemaNode `json:"properties"`
	AdditionalProperties *bool                  `json:"additionalProperties"`
	Items                *schemaNode            `json:"items"`
	Defs                 map[string]*schemaNode `json:"$defs"`
}

// TestSchemaMatchesTypes walks the config types by their yaml tags and the
// schema's properties side by side: the keys, JSON types and enumerations
// must be the same, and every object must forbid other properties.
func TestSchemaMatchesTypes(t *testing.T) {
	var root schemaNode
	if err := json.Unmarshal(Schema, &root); err != nil {
		t.Fatalf("schema.json: %v", err)
	}
	var raw map[string]any
	if err := json.Unmarshal(Schema, &raw); err != nil {
		t.Fatal(err)
	}
	if got, want := raw["$schema"], "https://json-schema.org/draft/2020-12/schema"; got != want {
		t.Errorf("$schema = %v, want %v", got, want)
	}
	resolve := func(path string, n *schemaNode) *schemaNode {
		for n != nil && n.Ref != "" {
			name, ok := strings.CutPrefix(n.Ref, "#/$defs/")
			if !ok || root.Defs[name] == nil {
				t.Fatalf("%s: unresolvable $ref %q", path, n.Ref)
			}
			n = root.Defs[name]
		}
		return n
	}
	var walk func(path string, typ reflect.Type, n *schemaNode)
	walk = func(path string, typ reflect.Type, n *schemaNode) {
		n = resolve(path, n)
		if n == nil {
			t.Errorf("%s: missing from the schema", path)
			return
		}
		if typ.Kind() == reflect.Pointer {
			typ = typ.Elem()
		}
		if got, want := n.Type, jsonType(typ); got != want {
			t.Errorf("%s: schema type %q, Go type %s wants %q", path, got, typ, want)
		}
		switch typ.Kind() {
		case reflect.Slice:
			if n.Items == nil {
				t.Errorf("%s: array without items", path)
				return
			}
			walk(path+"[]", typ.Elem(), n.Items)
		case reflect.Struct:
			if n.AdditionalProperties == nil || *n.AdditionalProperties {
				t.Errorf("%s: object without additionalProperties: false", path)
			}
			fields := fieldsOf(typ)
			var goKeys, schemaKeys []string
			for k := range fields {
				goKeys = append(goKeys, k)
			}
			for k := range n.Properties {
				schemaKeys = append(schemaKeys, k)
			}
			sort.Strings(goKeys)
			sort.Strings(schemaKeys)
			if diff := cmp.Diff(schemaKeys, goKeys); diff != "" {
				t.Errorf("%s: keys differ (-schema +Go):\n%s", path, diff)
			}
			for k, f := range fields {
				sub := n.Properties[k]
				if sub == nil {
					continue
				}
				kp := joinPath(path, k)
				walk(kp, typ.Field(f.index).Type, sub)
				if got := resolve(kp, sub).Enum; !slices.Equal(got, f.enum) {
					t.Errorf("%s: schema enum %q, Go enum %q", kp, got, f.enum)
				}
			}
		}
	}
	walk("", reflect.TypeOf(Config{}), &root)
}

func jsonType(t reflect.Type) string {
	if t == durationType {
		return "string" // written as a Go duration: 30s
	}
	switch t.Kind() {
	case reflect.String:
		return "string"
	case reflect.Bool:
		return "boolean"
	case reflect.Int:
		return "integer"
	case reflect.Float64:
		return "number"
	case reflect.Slice:
		return "array"
	case reflect.Struct:
		return "object"
	}
	return "unsupported Go kind " + t.Kind().String()
}

// TestSchemaTestCatchesDrift checks that the comparison above is not
// vacuous: the Go side lists the keys the schema must have.
func TestSchemaTestCatchesDrift(t *testing.T) {
	got := fieldsOf(reflect.TypeOf(Image{}))
	for _, k := range []string{"name", "repository", "policy", "filterTags", "exclude", "digest", "platform"} {
		if _, ok := got[k]; !ok {
			t.Errorf("Image has no field for key %q", k)
		}
	}
	if _, ok := got["Line"]; ok {
		t.Error("Image.Line must not be a key")
	}
	if got, want := got["digest"].enum, []string{"always", "ifNotPresent", "never"}; !slices.Equal(got, want) {
		t.Errorf("digest enum = %q, want %q", got, want)
	}
}
