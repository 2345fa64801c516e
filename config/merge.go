package config

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
)

// Merge returns a config with the registries, images, targets and webhooks
// of a and b together, as when imagebump.yaml is read with Flux objects
// (--flux). Neither is changed. A name given in both (an image, a target,
// a webhook) or a
// registry host given in both with different settings is an error naming
// both files: one source must own it. The result's targets are all in
// TargetList; its File and its flux source (flux:, which says where b may
// have come from) are a's.
func Merge(a, b *Config) (*Config, error) {
	c := &Config{File: a.File, Flux: a.Flux, images: map[string]int{}}
	var errs []error
	for _, src := range []*Config{b, a} {
		if src.MaxFileSize != "" {
			c.MaxFileSize = src.MaxFileSize
		}
	}

	hosts := map[string]Registry{}
	for _, src := range []*Config{a, b} {
		for _, r := range src.Registries {
			if prev, ok := hosts[r.Host]; ok {
				if !sameRegistry(prev, r) {
					errs = append(errs, fmt.Errorf("registry %s is set in %s and, differently (%s), in %s: keep one",
						r.Host, at(a.File, prev.Line), strings.Join(registryDiff(prev, r), ", "), b.File))
				}
				continue
			}
			hosts[r.Host] = r
			c.Registries = append(c.Registries, r)
		}
	}
	for _, src := range []*Config{a, b} {
		for _, im := range src.Images {
			if _, dup := c.images[im.Name]; dup {
				errs = append(errs, fmt.Errorf("image policy %s is in both %s and %s: keep one", im.Name, at(a.File, c.Images[c.images[im.Name]].Line), b.File))
				continue
			}
			c.images[im.Name] = len(c.Images)
			c.Images = append(c.Images, im)
		}
	}
	hooks := map[string]bool{}
	for _, src := range []*Config{a, b} {
		for _, h := range src.Webhooks {
			if hooks[h.Name] {
				errs = append(errs, fmt.Errorf("webhook %s is in both %s and %s: keep one", h.Name, a.File, b.File))
				continue
			}
			hooks[h.Name] = true
			c.Webhooks = append(c.Webhooks, h)
		}
	}
	names := map[string]bool{}
	for _, src := range []*Config{a, b} {
		for _, t := range src.Targets() {
			if names[t.Name] {
				errs = append(errs, fmt.Errorf("target %s is in both %s and %s: rename one", t.Name, a.File, b.File))
				continue
			}
			names[t.Name] = true
			c.TargetList = append(c.TargetList, t)
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return c, nil
}

// at is "file:line", or file where the line is not known.
func at(file string, line int) string {
	if line <= 0 {
		return file
	}
	return fmt.Sprintf("%s:%d", file, line)
}

// registryDiff names the keys in which two entries for one host differ.
func registryDiff(a, b Registry) []string {
	va, vb := reflect.ValueOf(a), reflect.ValueOf(b)
	var keys []string
	for i := range va.NumField() {
		f := va.Type().Field(i)
		key, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if key == "" || key == "-" {
			continue
		}
		if !reflect.DeepEqual(va.Field(i).Interface(), vb.Field(i).Interface()) {
			keys = append(keys, key)
		}
	}
	return keys
}

// sameRegistry reports whether two registry entries say the same.
func sameRegistry(a, b Registry) bool {
	a.Line, b.Line = 0, 0
	eqAuth := (a.Auth == nil && b.Auth == nil) || (a.Auth != nil && b.Auth != nil && *a.Auth == *b.Auth)
	eqRate := (a.RateLimit == nil && b.RateLimit == nil) || (a.RateLimit != nil && b.RateLimit != nil && *a.RateLimit == *b.RateLimit)
	eqRetries := (a.Retries == nil && b.Retries == nil) || (a.Retries != nil && b.Retries != nil && *a.Retries == *b.Retries)
	a.Auth, b.Auth, a.RateLimit, b.RateLimit, a.Retries, b.Retries = nil, nil, nil, nil, nil, nil
	return eqAuth && eqRate && eqRetries && a == b
}
