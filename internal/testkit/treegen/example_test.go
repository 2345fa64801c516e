package treegen_test

import (
	"fmt"
	"log"
	"os"
	"strings"

	"github.com/imagebump/imagebump/internal/testkit/treegen"
)

func ExampleGenerate() {
	dir, err := os.MkdirTemp("", "tree-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	opts := treegen.Options{Files: 400, Policies: 10, InvalidFiles: 2, RegistryHost: "127.0.0.1:5000", Seed: 1}
	st, err := treegen.Generate(dir, opts)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%d files, %d YAML, %d with markers, %d broken\n", st.Files, st.YAMLFiles, st.MarkedFiles, st.InvalidFiles)
	fmt.Printf("%d markers (%d image, %d tag, %d name, %d digest), %d to change\n",
		st.Markers, st.ImageMarkers, st.TagMarkers, st.NameMarkers, st.DigestMarkers, st.Changes)

	// The registry must serve these; the config names the same repositories.
	repos := treegen.Repositories(opts)
	fmt.Printf("%d repositories; %s has %d tags, the newest %s\n", len(repos), repos[0].Path, len(repos[0].Tags), repos[0].Latest)
	cfg := strings.SplitAfter(string(treegen.Config(opts)), "\n")
	fmt.Print(strings.Join(cfg[1:9], ""))
	// Output:
	// 400 files, 341 YAML, 34 with markers, 2 broken
	// 71 markers (26 image, 21 tag, 21 name, 3 digest), 62 to change
	// 10 repositories; fleet/app-000 has 21 tags, the newest 1.2.4
	// registries:
	//   - host: "127.0.0.1:5000"
	//     insecure: true
	// images:
	//   - name: team-00:app-000
	//     repository: "127.0.0.1:5000/fleet/app-000"
	//     policy: {semver: ">=1.0.0"}
	//     digest: always
}
