// Package deps pins the module's planned dependencies in go.mod while the
// packages that use them are being written. It is removed once every
// dependency has a real importer.
package deps

import (
	_ "github.com/Masterminds/semver/v3"
	_ "github.com/google/go-cmp/cmp"
	_ "github.com/google/go-containerregistry/pkg/registry"
	_ "github.com/google/go-containerregistry/pkg/v1/remote"
	_ "github.com/spf13/cobra"
	_ "golang.org/x/time/rate"
	_ "gopkg.in/yaml.v3"
)
