package serve_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"

	"github.com/imagebump/imagebump/config"
	"github.com/imagebump/imagebump/serve"
)

// A Server is built from a loaded config and run with Run; its endpoints
// can also be served by the caller's own HTTP server through Handler.
func Example() {
	cfg, err := config.Parse([]byte(`
images:
  - {name: apps:web, repository: ghcr.io/acme/web, policy: {semver: ">=1.0.0"}}
git: {url: "https://github.com/acme/fleet.git", branch: main}
schedule: 10m
`), "imagebump.yaml")
	if err != nil {
		fmt.Println(err)
		return
	}
	workdir, _ := os.MkdirTemp("", "imagebump-example-")
	defer os.RemoveAll(workdir)
	s, err := serve.New(serve.Options{Config: cfg, Workdir: workdir})
	if err != nil {
		fmt.Println(err)
		return
	}
	// s.Run(ctx) would schedule the cycles; here only the endpoints.
	rec := httptest.NewRecorder()
	s.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/healthz", nil))
	body, _ := io.ReadAll(rec.Body)
	fmt.Print(rec.Code, " ", string(body))
	st := s.Status()
	fmt.Println(st.Targets[0].Name, st.Targets[0].Schedule, st.Ready)
	// Output:
	// 200 ok
	// default 10m true
}
