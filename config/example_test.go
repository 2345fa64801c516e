package config_test

import (
	"fmt"

	"github.com/imagebump/imagebump/config"
)

func ExampleParse() {
	data := []byte(`
images:
  - name: app
    repository: ghcr.io/acme/app
    policy: {semver: ">=1.0.0 <2"}
git:
  url: https://github.com/acme/fleet.git
  branch: main
  auth: {tokenFile: secrets/token}
`)
	c, err := config.Parse(data, "/etc/imagebump/imagebump.yaml")
	if err != nil {
		fmt.Println(err)
		return
	}
	im, _ := c.Image("default:app")
	fmt.Println(im.Name, im.Repository, im.Digest, im.Line)
	for _, t := range c.Targets() {
		fmt.Println(t.Name, t.Git.URL, t.Git.Auth.TokenFile, t.Commit.Author.Name)
	}

	_, err = config.Parse([]byte("images:\n  - name: app\n    repository: nginx\n    policy: {semvar: '>=1'}\n"), "imagebump.yaml")
	fmt.Println(err)
	// Output:
	// default:app ghcr.io/acme/app never 3
	// default https://github.com/acme/fleet.git /etc/imagebump/secrets/token imagebump
	// imagebump.yaml:4:14: images[0].policy: unknown key "semvar" (did you mean "semver"?)
}
