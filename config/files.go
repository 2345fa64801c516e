package config

import (
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/imagebump/imagebump/internal/secretfile"
)

// FileRef is a file the config names: a credential, a CA, a key.
type FileRef struct {
	// Key is the key's path in the config, such as
	// registries[0].auth.dockerConfig.
	Key string
	// Path is the file, made relative to the config's folder when it
	// was written relative.
	Path string
	// Line is the key's line, else that of the entry the key is in (the
	// registry, image or target), or 0 when unknown (a config made from
	// Flux objects).
	Line int
	// Secret is set for a key that holds a secret (tagged
	// config:"secret"): its Path may be the secret pasted in by mistake,
	// so messages show it through secretfile.Shown.
	Secret bool
}

// Files returns the files the config names, in key order; references to
// environment variables (env:NAME) and the folders of Flux objects are
// left out.
func (c *Config) Files() []FileRef { return c.refs(false) }

// EnvRefs returns the keys that name an environment variable (env:NAME)
// instead of a file, in key order, as FileRefs whose Path is the
// variable's name.
func (c *Config) EnvRefs() []FileRef { return c.refs(true) }

// refs returns the string path and secret keys that name a file, or with
// env an environment variable, each at its line.
func (c *Config) refs(env bool) []FileRef {
	var out []FileRef
	eachPathField(reflect.ValueOf(c).Elem(), "", func(kp, _ string, f field, fv reflect.Value) {
		if fv.Kind() != reflect.String {
			return // flux.paths: folders of Flux objects
		}
		ref := fv.String()
		if ref == "" || secretfile.IsEnv(ref) != env {
			return
		}
		line := c.keyLines[kp]
		if line == 0 {
			line = c.entryLine(kp)
		}
		out = append(out, FileRef{Key: kp, Path: strings.TrimPrefix(ref, secretfile.EnvPrefix), Line: line, Secret: f.secret})
	})
	return out
}

// eachPathField calls fn for every field below rv tagged config:"path"
// or config:"secret" (a string, or a list of strings such as flux.paths),
// with its key path, such as registries[0].auth.dockerConfig, and its key,
// in key order.
func eachPathField(rv reflect.Value, p string, fn func(keyPath, key string, f field, fv reflect.Value)) {
	switch rv.Kind() {
	case reflect.Pointer:
		if !rv.IsNil() {
			eachPathField(rv.Elem(), p, fn)
		}
	case reflect.Slice:
		if !composite(rv.Type().Elem().Kind()) {
			return
		}
		for i := range rv.Len() {
			eachPathField(rv.Index(i), fmt.Sprintf("%s[%d]", p, i), fn)
		}
	case reflect.Struct:
		fields := fieldsOf(rv.Type())
		keys := make([]string, 0, len(fields))
		for k := range fields {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, key := range keys {
			f, fv := fields[key], rv.Field(fields[key].index)
			switch {
			case f.path:
				fn(joinPath(p, key), key, f, fv)
			case composite(fv.Kind()):
				eachPathField(fv, joinPath(p, key), fn)
			}
		}
	}
}

// entryLine returns the line of the list entry a key path is in, such as
// registries[2] for registries[2].auth.dockerConfig, or 0.
func (c *Config) entryLine(key string) int {
	var i int
	switch {
	case scan(key, "registries[%d]", &i) && i < len(c.Registries):
		return c.Registries[i].Line
	case scan(key, "images[%d]", &i) && i < len(c.Images):
		return c.Images[i].Line
	case scan(key, "targets[%d]", &i) && i < len(c.TargetList):
		return c.TargetList[i].Line
	case strings.HasPrefix(key, "git."):
		return c.keyLines["git"]
	}
	return 0
}

// scan reads the index of a key path's first element.
func scan(key, format string, i *int) bool {
	_, err := fmt.Sscanf(key, format, i)
	return err == nil
}
