package testregistry_test

import (
	"fmt"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/imagebump/imagebump/internal/testkit/testregistry"
)

// This is how a test uses the package: start a registry, push tags, and
// point the code under test at it with the server's transport and
// credentials. (Start needs a testing.TB, so this example only compiles.)
func ExampleStart() {
	testListsTags := func(t *testing.T) {
		s := testregistry.Start(t, testregistry.Options{Version: testregistry.V3, Htpasswd: true, TLS: true})
		s.Push(t, "team/app", "1.0.0", "1.1.0", "latest")

		repo, err := name.NewRepository(s.Repo("team/app"))
		if err != nil {
			t.Fatal(err)
		}
		tags, err := remote.List(repo, s.RemoteOptions(t.Context())...)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Println(tags)
	}
	_ = testListsTags
}

func ExampleServer_Repo() {
	s := &testregistry.Server{Host: "127.0.0.1:5000"}
	fmt.Println(s.Repo("team/app"))
	// Output: 127.0.0.1:5000/team/app
}
