package testgit_test

import (
	"fmt"
	"testing"

	"github.com/imagebump/imagebump/internal/testkit/testgit"
)

// This is how a test uses the package: make a bare repository, serve it
// over smart HTTP with basic auth (or over SSH), point the code under test
// at the server's URL and credentials, and inspect the result with the git
// CLI helpers. (The helpers need a testing.TB, so this example only
// compiles.)
func ExampleStartHTTP() {
	testPushes := func(t *testing.T) {
		bare := testgit.NewBare(t, map[string]string{"clusters/prod/app.yaml": "image: app:1.0.0\n"})
		s := testgit.StartHTTP(t, bare, true)
		_ = s.URL // clone and push with s.Username and s.Password

		// Someone else pushes meanwhile.
		testgit.Commit(t, bare, "main", map[string]string{"other.yaml": "x\n"}, nil, "elsewhere")

		fmt.Println(testgit.Log(t, bare, "main"))
		fmt.Println(testgit.Refs(t, bare)["refs/heads/main"])
	}
	_ = testPushes
}

func ExampleStartSSH() {
	testSSH := func(t *testing.T) {
		bare := testgit.NewBare(t, map[string]string{"a.yaml": "a\n"})
		s := testgit.StartSSH(t, bare)
		// Clients log in with s.KeyFile (or s.EncryptedKeyFile and
		// s.KeyPassphraseFile) and check the host with s.KnownHostsFile;
		// s.WrongKnownHostsFile must make them refuse the server.
		fmt.Println(s.URL)
	}
	_ = testSSH
}
