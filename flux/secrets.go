package flux

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/imagebump/imagebump/internal/secretfile"
)

// Secrets says where the Kubernetes Secrets that Flux objects name are,
// since they are not in Git. A Secret is named NAMESPACE/NAME; each of its
// keys (.dockerconfigjson, username, password, bearerToken, identity,
// known_hosts, ca.crt, git.asc, passphrase) maps to a file, or, for keys
// holding a secret proper, to env:VARIABLE.
//
// Keys maps Secrets explicitly; Dir holds the others as a Secret mounted
// as a volume looks: DIR/NAMESPACE/NAME/KEY, one file per key (kubectl get
// secret -o json | jq can write them, and a Kubernetes volume mounts them
// so). Keys wins over Dir for a Secret it names.
type Secrets struct {
	// Keys maps NAMESPACE/NAME to the Secret's keys, each to a file path or
	// env:VARIABLE.
	Keys map[string]map[string]string
	// Dir is a folder of Secrets, DIR/NAMESPACE/NAME/KEY.
	Dir string
	// Assume, with Dir, takes a Secret whose folder does not exist to hold
	// the keys its use needs (for `flux export`, which writes the paths
	// to create). Without it, such a Secret is not mapped.
	Assume bool

	// relative holds the paths, made absolute, that were given relative:
	// by the mapping file (relative to its folder) or by a relative Dir.
	// Native writes them relative again, to the native config's folder.
	relative map[string]bool
}

// LoadSecrets reads a mapping file: NAMESPACE/NAME keys, each mapping the
// Secret's keys to a file (relative to the mapping file's folder) or to
// env:VARIABLE:
//
//	flux-system/registry-auth:
//	  .dockerconfigjson: /run/secrets/docker/config.json
//	flux-system/flux-system:
//	  username: env:GIT_USERNAME
//	  password: env:GIT_TOKEN
func LoadSecrets(path string) (*Secrets, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading the secrets mapping: %w", err)
	}
	dir, err := filepath.Abs(filepath.Dir(path))
	if err != nil {
		return nil, fmt.Errorf("reading the secrets mapping: %w", err)
	}
	m, errs := decodeSecrets(path, data)
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	relative := map[string]bool{}
	for name, keys := range m {
		for key, ref := range keys {
			if !secretfile.IsEnv(ref) && !filepath.IsAbs(ref) {
				m[name][key] = filepath.Join(dir, ref)
				relative[m[name][key]] = true
			}
		}
	}
	return &Secrets{Keys: m, relative: relative}, nil
}

// secretsShape is what a secrets mapping holds, said after each problem.
const secretsShape = "a secrets mapping is NAMESPACE/NAME: {KEY: FILE or env:VARIABLE}"

// decodeSecrets reads a secrets mapping from data, checking it by hand so
// that each problem is one error at its line (FILE:LINE: message), where
// the YAML decoder gives one multi-line error with lines only.
func decodeSecrets(file string, data []byte) (m map[string]map[string]string, errs []error) {
	bad := func(line int, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s:%d: %s", file, max(line, 1), fmt.Sprintf(format, args...)))
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		line, msg := 1, strings.TrimPrefix(err.Error(), "yaml: ")
		if sub := yamlLine.FindStringSubmatch(err.Error()); sub != nil {
			line, _ = strconv.Atoi(sub[1])
			msg = sub[2]
		}
		bad(line, "invalid YAML: %s", msg)
		return nil, errs
	}
	if len(doc.Content) == 0 {
		bad(1, "empty: %s", secretsShape)
		return nil, errs
	}
	root := resolve(doc.Content[0])
	if root.Kind != yaml.MappingNode {
		bad(root.Line, "%s, not %s", secretsShape, kindName(root))
		return nil, errs
	}
	m = map[string]map[string]string{}
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := resolve(root.Content[i]), resolve(root.Content[i+1])
		name := k.Value
		if ns, n, ok := strings.Cut(name, "/"); k.Kind != yaml.ScalarNode || !ok || ns == "" || n == "" || strings.Contains(n, "/") {
			bad(k.Line, "%q: name a Secret NAMESPACE/NAME", name)
			continue
		}
		if _, dup := m[name]; dup {
			bad(k.Line, "%s: mapped twice: keep one entry", name)
			continue
		}
		if v.Kind != yaml.MappingNode {
			bad(v.Line, "%s: its keys are a mapping {KEY: FILE or env:VARIABLE}, not %s", name, kindName(v))
			continue
		}
		keys := map[string]string{}
		m[name] = keys
		for j := 0; j+1 < len(v.Content); j += 2 {
			kk, kv := resolve(v.Content[j]), resolve(v.Content[j+1])
			key := kk.Value
			switch {
			case kk.Kind != yaml.ScalarNode:
				bad(kk.Line, "%s: a key is a name such as .dockerconfigjson or password, not %s", name, kindName(kk))
				continue
			case keys[key] != "":
				bad(kk.Line, "%s: key %q is mapped twice: keep one", name, key)
				continue
			case kv.Kind != yaml.ScalarNode:
				bad(kv.Line, "%s: key %q maps to %s: give a file path or env:VARIABLE", name, key, kindName(kv))
				continue
			case kv.Tag == "!!null" || kv.Value == "":
				bad(kv.Line, "%s: key %q maps to nothing: give a file path or env:VARIABLE", name, key)
				continue
			case secretfile.IsEnv(kv.Value):
				if err := secretfile.CheckRef(kv.Value); err != nil {
					bad(kv.Line, "%s: key %q: %v", name, key, err)
					continue
				}
			}
			keys[key] = kv.Value
		}
	}
	return m, errs
}

var yamlLine = regexp.MustCompile(`(?s)^yaml: line (\d+): (.*)$`)

// resolve follows an alias to the node it names.
func resolve(n *yaml.Node) *yaml.Node {
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	return n
}

// kindName names what a node holds, for messages.
func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	}
	if n.Tag == "!!null" {
		return "nothing"
	}
	return fmt.Sprintf("the value %q", n.Value)
}

// secretKeys returns the keys of Secret ns/name and where each is, or nil
// when the Secret is not mapped. assumed are the keys to assume when Dir
// has no folder for it and Assume is set.
func (s *Secrets) secretKeys(ns, name string, assumed []string) (keys map[string]string, wasAssumed bool) {
	if s == nil {
		return nil, false
	}
	if m, ok := s.Keys[ns+"/"+name]; ok {
		return m, false
	}
	if s.Dir == "" {
		return nil, false
	}
	dir := filepath.Join(s.Dir, ns, name)
	// A relative Dir is relative to the working directory; the native
	// config's paths are relative to its own folder, so they are made
	// absolute here and relative to that folder by Native.
	if !filepath.IsAbs(dir) {
		if abs, err := filepath.Abs(dir); err == nil {
			dir = abs
			if s.relative == nil {
				s.relative = map[string]bool{}
			}
		}
	}
	path := func(key string) string {
		p := filepath.Join(dir, key)
		if s.relative != nil && !filepath.IsAbs(s.Dir) {
			s.relative[p] = true
		}
		return p
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		if !s.Assume {
			return nil, false
		}
		keys = map[string]string{}
		for _, k := range assumed {
			keys[k] = path(k)
		}
		return keys, true
	}
	keys = map[string]string{}
	for _, e := range entries {
		// A mounted Secret's files are symbolic links to ..data/KEY; the
		// ..data folders themselves are not keys.
		if e.IsDir() || strings.HasPrefix(e.Name(), "..") {
			continue
		}
		keys[e.Name()] = path(e.Name())
	}
	return keys, false
}

// relativize rewrites, in v (a *config.Config), each path that was given
// relative as a path relative to base (an absolute folder): a native
// config written with it keeps the spelling the user chose, and reads the
// same files from its folder.
func (s *Secrets) relativize(v reflect.Value, base string) {
	if s == nil || len(s.relative) == 0 {
		return
	}
	switch v.Kind() {
	case reflect.Pointer:
		if !v.IsNil() {
			s.relativize(v.Elem(), base)
		}
	case reflect.Slice:
		for i := range v.Len() {
			s.relativize(v.Index(i), base)
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				s.relativize(v.Field(i), base)
			}
		}
	case reflect.String:
		if p := v.String(); s.relative[p] && v.CanSet() {
			if rel, err := filepath.Rel(base, p); err == nil {
				v.SetString(rel)
			}
		}
	}
}

func keyList(keys map[string]string) string {
	var names []string
	for k := range keys {
		names = append(names, k)
	}
	sort.Strings(names)
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}
