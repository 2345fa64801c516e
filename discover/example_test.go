package discover_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"strings"

	"github.com/imagebump/imagebump/discover"
)

func Example() {
	root, err := os.MkdirTemp("", "example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(root)
	manifest := `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: apps
spec:
  template:
    spec:
      containers:
        - name: web
          image: ghcr.io/acme/web:1.4.2
`
	if err := os.WriteFile(filepath.Join(root, "web.yaml"), []byte(manifest), 0o644); err != nil {
		log.Fatal(err)
	}

	inv, err := discover.Find(context.Background(), discover.FindOptions{Root: root})
	if err != nil {
		log.Fatal(err)
	}
	// The registry's tags, as a registry client would list them.
	tags := map[string][]string{"ghcr.io/acme/web": {"1.4.2", "1.5.0", "2.0.0"}}
	props := discover.Propose(inv, discover.ProposeOptions{Tags: tags})
	for _, p := range props {
		fmt.Printf("%s %s: %s, picks %s\n", p.Policy, p.Repository, discover.Describe(p.Spec), p.Latest)
	}
	for _, f := range discover.Markers(inv, props) {
		lines := strings.Split(strings.TrimSpace(string(f.After)), "\n")
		fmt.Println(strings.TrimSpace(lines[len(lines)-1]))
	}
	// Output:
	// apps:web ghcr.io/acme/web: semver '>=1.4.2 <2.0.0', picks 1.5.0
	// image: ghcr.io/acme/web:1.4.2 # {"$imagepolicy": "apps:web"}
}
