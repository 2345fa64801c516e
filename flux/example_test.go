package flux_test

import (
	"context"
	"fmt"

	"github.com/imagebump/imagebump/flux"
)

func Example() {
	set, err := flux.Load(context.Background(), []string{"../testdata/flux/clusters"}, flux.LoadOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	secrets, err := flux.LoadSecrets("../testdata/flux/secrets.yaml")
	if err != nil {
		fmt.Println(err)
		return
	}
	n, err := set.Native(flux.NativeOptions{Secrets: secrets})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, im := range n.Config.Images {
		fmt.Println(im.Name, im.Repository, im.Spec().ExcludeReplacesDefaults)
	}
	for _, t := range n.Config.Targets() {
		fmt.Println(t.Name, t.Git.Branch, t.Git.Paths, t.Policies, t.Commit.FluxMessage.Automation)
	}
	fmt.Println(flux.SuggestPolicy("default:podinfo", []string{"flux-system:podinfo"}))
	// Output:
	// apps:minio registry.fleet.test/minio/minio true
	// apps:build registry.fleet.test/acme/build false
	// apps:web registry.fleet.test/acme/web false
	// flux-system:podinfo registry.fleet.test/stefanprodan/podinfo false
	// apps main [apps] [apps:*] apps/apps
	// flux-system main [apps/podinfo] [flux-system:*] flux-system/flux-system
	// did you mean "flux-system:podinfo"? A policy's namespace is part of its name
}
