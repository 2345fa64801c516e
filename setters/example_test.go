package setters_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/imagebump/imagebump/setters"
)

func Example() {
	root, err := os.MkdirTemp("", "example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(root)
	manifest := `spec:
  containers:
    - name: app
      image: ghcr.io/acme/app:1.4.2 # {"$imagepolicy": "apps:app"}
nightly:
  tag: 20231231 # {"$imagepolicy": "apps:nightly:tag"}
`
	if err := os.WriteFile(filepath.Join(root, "app.yaml"), []byte(manifest), 0o644); err != nil {
		log.Fatal(err)
	}

	res, err := setters.Apply(context.Background(), setters.Options{
		Root: root,
		Images: map[string]setters.Image{
			"apps:app":     {Repository: "ghcr.io/acme/app", Tag: "1.5.0"},
			"apps:nightly": {Repository: "ghcr.io/acme/nightly", Tag: "20240102"},
		},
		Write: true,
	})
	if err != nil {
		log.Fatal(err)
	}
	for _, c := range res.Changes {
		fmt.Printf("%s:%d %s: %s -> %s\n", c.File, c.Line, c.Policy, c.Old, c.New)
	}
	for _, p := range res.Problems {
		fmt.Println(p)
	}
	b, err := os.ReadFile(filepath.Join(root, "app.yaml"))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Print(string(b))
	// Tags that YAML would read as numbers are written quoted.

	// Output:
	// app.yaml:4 apps:app: ghcr.io/acme/app:1.4.2 -> ghcr.io/acme/app:1.5.0
	// app.yaml:6 apps:nightly: 20231231 -> 20240102
	// spec:
	//   containers:
	//     - name: app
	//       image: ghcr.io/acme/app:1.5.0 # {"$imagepolicy": "apps:app"}
	// nightly:
	//   tag: "20240102" # {"$imagepolicy": "apps:nightly:tag"}
}

func ExampleParseMarker() {
	policy, field, ok, err := setters.ParseMarker(`# {"$imagepolicy": "apps:app:tag"}`)
	fmt.Println(policy, field, ok, err)
	_, _, ok, err = setters.ParseMarker(`# {"$imagepolicy": "app"}`)
	fmt.Println(ok, err)
	// Output:
	// apps:app tag true <nil>
	// true malformed marker {"$imagepolicy": "app"}: reference "app" has no namespace (want NAMESPACE:NAME[:FIELD])
}
