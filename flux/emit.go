package flux

import (
	"bytes"
	"fmt"
	"reflect"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/imagebump/imagebump/config"
)

// emit writes c as imagebump.yaml text: the keys its fields' yaml tags
// name, zero values left out, and comments[path] above the entry at path
// (images[0], targets[1]).
func emit(c *config.Config, comments map[string]string) ([]byte, error) {
	root := node(reflect.ValueOf(c).Elem(), "", comments)
	if root == nil {
		root = &yaml.Node{Kind: yaml.MappingNode}
	}
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(root); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// node returns the YAML node of v, or nil when v is its zero value.
func node(v reflect.Value, path string, comments map[string]string) *yaml.Node {
	if d, ok := v.Interface().(time.Duration); ok {
		if d == 0 {
			return nil
		}
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: d.String()}
	}
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			return nil
		}
		if v.Elem().Kind() == reflect.Int {
			// A pointer says the value was given, zero included
			// (retries: 0).
			return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!int", Value: fmt.Sprint(v.Elem().Int())}
		}
		return node(v.Elem(), path, comments)
	case reflect.Struct:
		n := &yaml.Node{Kind: yaml.MappingNode, HeadComment: comments[path]}
		t := v.Type()
		for i := range t.NumField() {
			f := t.Field(i)
			key, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
			if key == "" || key == "-" || !f.IsExported() {
				continue
			}
			kp := key
			if path != "" {
				kp = path + "." + key
			}
			val := node(v.Field(i), kp, comments)
			if val == nil {
				continue
			}
			k := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: key}
			n.Content = append(n.Content, k, val)
		}
		if len(n.Content) == 0 {
			return nil
		}
		return n
	case reflect.Slice:
		if v.Len() == 0 {
			return nil
		}
		n := &yaml.Node{Kind: yaml.SequenceNode}
		for i := range v.Len() {
			item := node(v.Index(i), fmt.Sprintf("%s[%d]", path, i), comments)
			if item != nil {
				n.Content = append(n.Content, item)
			}
		}
		return n
	case reflect.String:
		if v.String() == "" {
			return nil
		}
		s := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: v.String()}
		if strings.Contains(v.String(), "\n") {
			s.Style = yaml.LiteralStyle
		}
		return s
	case reflect.Bool:
		if !v.Bool() {
			return nil
		}
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!bool", Value: "true"}
	case reflect.Int:
		if v.Int() == 0 {
			return nil
		}
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!int", Value: fmt.Sprint(v.Int())}
	case reflect.Float64:
		if v.Float() == 0 {
			return nil
		}
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!float", Value: fmt.Sprint(v.Float())}
	}
	panic(fmt.Sprintf("flux: cannot write %s", v.Type())) // a config type this file does not know
}
