package flux

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
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
	var m map[string]map[string]string
	relative := map[string]bool{}
	dec := yaml.NewDecoder(strings.NewReader(string(data)))
	dec.KnownFields(true)
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("%s: a secrets mapping is NAMESPACE/NAME: {KEY: FILE or env:VARIABLE}: %w", path, err)
	}
	dir, err := filepath.Abs(filepath.Dir(path))
	if err != nil {
		return nil, fmt.Errorf("reading the secrets mapping: %w", err)
	}
	for _, name := range sortedKeys(m) {
		if ns, n, ok := strings.Cut(name, "/"); !ok || ns == "" || n == "" || strings.Contains(n, "/") {
			return nil, fmt.Errorf("%s: %q: name a Secret NAMESPACE/NAME", path, name)
		}
		for _, key := range sortedKeys(m[name]) {
			ref := m[name][key]
			switch {
			case ref == "":
				return nil, fmt.Errorf("%s: %s: key %q maps to nothing", path, name, key)
			case secretfile.IsEnv(ref):
				if err := secretfile.CheckRef(ref); err != nil {
					return nil, fmt.Errorf("%s: %s: key %q: %w", path, name, key, err)
				}
			case !filepath.IsAbs(ref):
				m[name][key] = filepath.Join(dir, ref)
				relative[m[name][key]] = true
			}
		}
	}
	return &Secrets{Keys: m, relative: relative}, nil
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
