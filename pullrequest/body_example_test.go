package pullrequest_test

import (
	"fmt"

	"github.com/imagebump/imagebump/pullrequest"
)

func ExampleBody() {
	fmt.Print(pullrequest.Body([]pullrequest.Change{
		{File: "clusters/prod/app.yaml", Line: 12, Policy: "apps:app", Old: "ghcr.io/acme/app:1.4.2", New: "ghcr.io/acme/app:1.5.0"},
		{File: "clusters/prod/values.yaml", Line: 3, Policy: "apps:web:tag", Old: "2.0.0", New: "2.1.0"},
	}))
	// Output:
	// imagebump updates 2 image references in 2 files.
	//
	// | File | Policy | Old | New |
	// | --- | --- | --- | --- |
	// | `clusters/prod/app.yaml` | `apps:app` | `ghcr.io/acme/app:1.4.2` | `ghcr.io/acme/app:1.5.0` |
	// | `clusters/prod/values.yaml` | `apps:web:tag` | `2.0.0` | `2.1.0` |
	//
	// imagebump keeps this pull request current: a newer bump updates it. Closing it without merging stops these exact changes from being proposed again.
	//
	// <!-- imagebump:content=5f5d06420dc8e7f4bff1b86905f0ec5ebb3830c35a1b26ad0eb51b01ec7c66b6 -->
}

func ExampleParseRepoURL() {
	for _, u := range []string{
		"https://github.com/acme/fleet.git",
		"git@gitlab.com:acme/platform/fleet.git",
		"ssh://git@gitea.example.com:2222/acme/fleet.git",
	} {
		host, path, err := pullrequest.ParseRepoURL(u)
		if err != nil {
			fmt.Println(err)
			continue
		}
		fmt.Println(host, path)
	}
	// Output:
	// github.com acme/fleet
	// gitlab.com acme/platform/fleet
	// gitea.example.com acme/fleet
}
