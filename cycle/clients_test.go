package cycle

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/imagebump/imagebump/config"
	"github.com/imagebump/imagebump/registry"
)

func TestRegistryOptionsProvider(t *testing.T) {
	cfg := &config.Config{Registries: []config.Registry{
		{Host: "123456789012.dkr.ecr.eu-west-1.amazonaws.com", Provider: "aws"},
		{Host: "ghcr.io", Auth: &config.RegistryAuth{TokenFile: "/t"}},
	}}
	var got []string
	for _, h := range RegistryOptions(cfg, nil).Hosts {
		got = append(got, h.Provider)
	}
	if diff := cmp.Diff(got, []string{registry.ProviderAWS, ""}); diff != "" {
		t.Errorf("providers (-got +want):\n%s", diff)
	}
}
