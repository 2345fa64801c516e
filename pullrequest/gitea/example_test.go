package gitea_test

import (
	"context"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"

	"github.com/imagebump/imagebump/pullrequest"
	"github.com/imagebump/imagebump/pullrequest/gitea"
)

// Example plans a pull request on Gitea or Forgejo. A stand-in for the
// server answers that acme/fleet has no pull request at all yet; a real
// program gives the server's URL, such as https://codeberg.org, and reads
// the token from a file.
func Example() {
	standIn := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "[]")
	}))
	defer standIn.Close()

	p, err := gitea.New(gitea.Options{
		APIURL: standIn.URL,
		Token:  "0123456789abcdef",
		Owner:  "acme",
		Repo:   "fleet",
	})
	if err != nil {
		log.Fatal(err)
	}
	res, err := pullrequest.Plan(context.Background(), p, pullrequest.Request{
		Head:  "imagebump/main",
		Base:  "main",
		Title: "Bump apps:app to 1.5.0",
		Changes: []pullrequest.Change{{
			File: "apps/app.yaml", Line: 12, Policy: "apps:app",
			Old: "ghcr.io/acme/app:1.4.2", New: "ghcr.io/acme/app:1.5.0",
		}},
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Provider, res.Outcome)
	// Output: gitea opened
}
