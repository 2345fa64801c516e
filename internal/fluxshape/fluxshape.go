// Package fluxshape recognises Flux's spellings pasted into imagebump.yaml
// (semver: {range: ...}, alphabetical: {order: asc},
// digestReflectionPolicy: Always, exclusionList, a whole Flux object) and
// returns the native spelling, so that the config loader can answer with
// it rather than with "expected a string, got a mapping".
//
// The loader calls ForValue when a value fails to decode and ForKey on an
// unknown key; both return "" when the shape is not Flux's.
package fluxshape

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

var imagePath = regexp.MustCompile(`^images\[\d+\]$`)

// ForValue returns the native spelling of the value at key path p (such
// as images[0].policy.semver) when it is written in Flux's shape.
func ForValue(p string, n *yaml.Node) string {
	n = deref(n)
	if n == nil || n.Kind != yaml.MappingNode {
		return ""
	}
	parent, key := split(p)
	if !strings.HasSuffix(parent, ".policy") || !imagePath.MatchString(strings.TrimSuffix(parent, ".policy")) {
		return ""
	}
	switch key {
	case "semver":
		if r := field(n, "range"); r != nil && r.Kind == yaml.ScalarNode && len(n.Content) == 2 {
			return fmt.Sprintf("this is Flux's shape; imagebump writes semver: %s", quote(r.Value))
		}
	case "alphabetical", "numerical":
		order := "asc" // Flux's default
		if o := field(n, "order"); o != nil && o.Kind == yaml.ScalarNode {
			order = o.Value
		} else if len(n.Content) != 0 {
			return ""
		}
		if len(n.Content) > 2 {
			return ""
		}
		return fmt.Sprintf("this is Flux's shape; imagebump writes %s: %s", key, order)
	}
	return ""
}

// ForKey returns the native spelling for an unknown key of the mapping at
// key path parent ("" for the top level, images[0] for an image) when the
// key is Flux's.
func ForKey(parent, key string, value *yaml.Node) string {
	value = deref(value)
	switch {
	case parent == "" && (key == "apiVersion" || key == "kind" || key == "spec" || key == "metadata"):
		return "this looks like a Flux object: read Flux objects with --flux DIR, or turn them into imagebump.yaml with `imagebump flux export`"
	case !imagePath.MatchString(parent):
		return ""
	}
	switch key {
	case "digestReflectionPolicy":
		if value != nil && value.Kind == yaml.ScalarNode {
			switch value.Value {
			case "Always":
				return "Flux's key; imagebump writes digest: always"
			case "IfNotPresent":
				return "Flux's key; imagebump writes digest: ifNotPresent"
			case "Never":
				return "Flux's key; imagebump writes digest: never"
			}
		}
		return "Flux's key; imagebump writes digest: always, ifNotPresent or never"
	case "exclusionList":
		return "Flux's key (of ImageRepository); imagebump writes exclude:, which adds to the default exclusions; add excludeReplacesDefaults: true to replace them as Flux does"
	case "image":
		return "imagebump writes the image repository in repository:"
	case "imageRepositoryRef":
		return "imagebump has no ImageRepository: give the image in repository:"
	case "semver", "alphabetical", "numerical":
		return fmt.Sprintf("the rule goes under policy: (policy: {%s: ...})", key)
	case "interval", "suspend":
		return "imagebump has no per-image " + key + ": a target's schedule says when it runs"
	}
	return ""
}

func deref(n *yaml.Node) *yaml.Node {
	for n != nil && n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	return n
}

func field(n *yaml.Node, key string) *yaml.Node {
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return deref(n.Content[i+1])
		}
	}
	return nil
}

func split(p string) (parent, key string) {
	i := strings.LastIndex(p, ".")
	if i < 0 {
		return "", p
	}
	return p[:i], p[i+1:]
}

// quote writes a range quoted: ranges often start with > or *, which YAML
// reads otherwise.
func quote(s string) string {
	return strconv.Quote(s)
}
