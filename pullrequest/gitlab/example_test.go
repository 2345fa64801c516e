package gitlab_test

import (
	"context"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"

	"github.com/imagebump/imagebump/pullrequest"
	"github.com/imagebump/imagebump/pullrequest/gitlab"
)

// Example plans a merge request on GitLab. A stand-in for gitlab.com
// answers that acme/fleet has no merge request from imagebump/main yet; a
// real program leaves APIURL empty (or gives its GitLab server, such as
// https://gitlab.example.com) and reads the token from a file.
func Example() {
	standIn := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "[]")
	}))
	defer standIn.Close()

	p, err := gitlab.New(gitlab.Options{
		APIURL:  standIn.URL,
		Token:   "glpat-example",
		Project: "acme/fleet",
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
	// Output: gitlab opened
}
