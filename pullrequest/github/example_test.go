package github_test

import (
	"context"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"

	"github.com/imagebump/imagebump/pullrequest"
	"github.com/imagebump/imagebump/pullrequest/github"
)

// Example plans a pull request on GitHub. A stand-in for api.github.com
// answers that acme/fleet has no pull request from imagebump/main yet; a
// real program leaves APIURL empty (or gives GitHub Enterprise Server's
// https://HOST/api/v3/) and reads the token from a file.
func Example() {
	standIn := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "[]")
	}))
	defer standIn.Close()

	p, err := github.New(github.Options{
		APIURL: standIn.URL,
		Token:  "github_pat_example",
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
	// Output: github opened
}
