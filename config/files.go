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
	// Line is the line of the entry the key is in (the registry, image or
	// target), or 0 when unknown.
	Line int
}

// Files returns the files the config names, in key order; references to
// environment variables (env:NAME) and the folders of Flux objects are
// left out.
func (c *Config) Files() []FileRef {
	var out []FileRef
	var walk func(rv reflect.Value, p string)
	walk = func(rv reflect.Value, p string) {
		switch rv.Kind() {
		case reflect.Pointer:
			if !rv.IsNil() {
				walk(rv.Elem(), p)
			}
		case reflect.Slice:
			if !composite(rv.Type().Elem().Kind()) {
				return
			}
			for i := range rv.Len() {
				walk(rv.Index(i), fmt.Sprintf("%s[%d]", p, i))
			}
		case reflect.Struct:
			fields := fieldsOf(rv.Type())
			keys := make([]string, 0, len(fields))
			for k := range fields {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			for _, key := range keys {
				f := fields[key]
				fv := rv.Field(f.index)
				kp := key
				if p != "" {
					kp = p + "." + key
				}
				switch {
				case f.path && fv.Kind() == reflect.String:
					if ref := fv.String(); ref != "" && !secretfile.IsEnv(ref) {
						out = append(out, FileRef{Key: kp, Path: ref})
					}
				case composite(fv.Kind()):
					walk(fv, kp)
				}
			}
		}
	}
	walk(reflect.ValueOf(c).Elem(), "")
	for i := range out {
		out[i].Line = c.entryLine(out[i].Key)
	}
	return out
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
		return c.topGitLine
	}
	return 0
}

// scan reads the index of a key path's first element.
func scan(key, format string, i *int) bool {
	_, err := fmt.Sscanf(key, format, i)
	return err == nil
}
