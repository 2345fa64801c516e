package discover

import (
	kyaml "sigs.k8s.io/kustomize/kyaml/yaml"
)

// The helpers here read kyaml's nodes the way a YAML loader sees them:
// aliases stand for their anchored node, and a mapping's merge keys (<<)
// add the keys of the mappings they name, keys written in the mapping
// itself taking precedence. kyaml's RNode lookups follow neither.

// maxDepth bounds the recursion through nested (or aliased) collections.
const maxDepth = 64

// resolve follows aliases to the node they stand for.
func resolve(n *kyaml.Node) *kyaml.Node {
	for i := 0; n != nil && n.Kind == kyaml.AliasNode && i < maxDepth; i++ {
		n = n.Alias
	}
	if n != nil && n.Kind == kyaml.AliasNode {
		return nil
	}
	return n
}

// isMapping reports whether n (resolved) is a mapping.
func isMapping(n *kyaml.Node) bool {
	n = resolve(n)
	return n != nil && n.Kind == kyaml.MappingNode
}

// field returns the value of key in the mapping m (resolved), following
// merge keys; nil when m is no mapping or lacks key. The value is not
// resolved, so an alias shows where the value came from.
func field(m *kyaml.Node, key string) *kyaml.Node {
	return fieldIn(m, key, map[*kyaml.Node]bool{})
}

// fieldIn is field, visiting each mapping once: merge keys can name the
// same mapping many times over.
func fieldIn(m *kyaml.Node, key string, seen map[*kyaml.Node]bool) *kyaml.Node {
	m = resolve(m)
	if m == nil || m.Kind != kyaml.MappingNode || seen[m] {
		return nil
	}
	seen[m] = true
	var merges []*kyaml.Node
	for i := 0; i+1 < len(m.Content); i += 2 {
		k := m.Content[i]
		switch {
		case k.Kind == kyaml.ScalarNode && k.Value == key && k.Tag != kyaml.MergeTag:
			return m.Content[i+1]
		case k.Kind == kyaml.ScalarNode && k.Tag == kyaml.MergeTag:
			merges = append(merges, m.Content[i+1])
		}
	}
	for _, mv := range merges {
		mv = resolve(mv)
		if mv == nil {
			continue
		}
		srcs := []*kyaml.Node{mv}
		if mv.Kind == kyaml.SequenceNode {
			srcs = mv.Content
		}
		for _, s := range srcs {
			if v := fieldIn(s, key, seen); v != nil {
				return v
			}
		}
	}
	return nil
}

// pairs returns the keys and values of the mapping m (resolved), merged
// keys included after the mapping's own, each key once.
func pairs(m *kyaml.Node) (keys []string, values []*kyaml.Node) {
	seen := map[string]bool{}
	visited := map[*kyaml.Node]bool{}
	var add func(m *kyaml.Node)
	add = func(m *kyaml.Node) {
		m = resolve(m)
		if m == nil || m.Kind != kyaml.MappingNode || visited[m] {
			return
		}
		visited[m] = true
		var merges []*kyaml.Node
		for i := 0; i+1 < len(m.Content); i += 2 {
			k := m.Content[i]
			if k.Kind != kyaml.ScalarNode {
				continue
			}
			if k.Tag == kyaml.MergeTag {
				merges = append(merges, m.Content[i+1])
				continue
			}
			if !seen[k.Value] {
				seen[k.Value] = true
				keys = append(keys, k.Value)
				values = append(values, m.Content[i+1])
			}
		}
		for _, mv := range merges {
			mv = resolve(mv)
			if mv == nil {
				continue
			}
			if mv.Kind == kyaml.SequenceNode {
				for _, s := range mv.Content {
					add(s)
				}
				continue
			}
			add(mv)
		}
	}
	add(m)
	return keys, values
}

// lookup returns the value at the keys below m, or nil.
func lookup(m *kyaml.Node, keys ...string) *kyaml.Node {
	for _, k := range keys {
		m = field(m, k)
		if m == nil {
			return nil
		}
	}
	return m
}

// items returns the items of the sequence n (resolved), or nil.
func items(n *kyaml.Node) []*kyaml.Node {
	n = resolve(n)
	if n == nil || n.Kind != kyaml.SequenceNode {
		return nil
	}
	return n.Content
}

// scalar returns the scalar that n stands for, or nil.
func scalar(n *kyaml.Node) *kyaml.Node {
	n = resolve(n)
	if n == nil || n.Kind != kyaml.ScalarNode {
		return nil
	}
	return n
}

// str returns the value of the scalar n stands for, or "".
func str(n *kyaml.Node) string {
	if s := scalar(n); s != nil && s.Tag != "!!null" {
		return s.Value
	}
	return ""
}
