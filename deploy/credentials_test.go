package deploy_test

import (
	"context"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	ggcrregistry "github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/imagebump/imagebump/registry"
)

// TestDocumentedRegistryCredentials runs the shell block of deploy.md's
// "Registry credentials" section, which writes docker-config.json with a
// user and token in "auths", and lists tags with that file as a host's
// dockerConfig from go-containerregistry's in-memory registry behind basic
// auth: the documented way to write the file is one imagebump reads. The
// token holds a colon and shell-special characters, as tokens may.
func TestDocumentedRegistryCredentials(t *testing.T) {
	const user, token = "robot$fleet", `to:ken"with'quotes`
	reg := ggcrregistry.New(ggcrregistry.Logger(log.New(io.Discard, "", 0)))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u, p, ok := r.BasicAuth(); !ok || u != user || p != token {
			w.Header().Set("WWW-Authenticate", `Basic realm="test"`)
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		reg.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	host := strings.TrimPrefix(srv.URL, "http://")
	img, err := random.Image(64, 1)
	if err != nil {
		t.Fatal(err)
	}
	ref, err := name.ParseReference(host+"/acme/app:1.2.3", name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(ref, img, remote.WithAuth(&authn.Basic{Username: user, Password: token})); err != nil {
		t.Fatal(err)
	}

	blocks := codeBlocks(section(t, "docs/deploy.md", "## Registry credentials"), "sh")
	if len(blocks) != 1 || !strings.Contains(blocks[0], "ghcr.io") {
		t.Fatalf("deploy.md's registry credentials section has %d sh blocks, want one writing ghcr.io's credentials", len(blocks))
	}
	script := strings.ReplaceAll(blocks[0], "ghcr.io", host)
	dir := t.TempDir()
	cmd := exec.Command("sh", "-eu", "-c", script)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "REGISTRY_USER="+user, "REGISTRY_TOKEN="+token)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("the documented commands: %v\n%s", err, out)
	}
	cfg := filepath.Join(dir, "docker-config.json")
	c, err := registry.New(registry.Options{Hosts: []registry.Host{{Host: host, Insecure: true, DockerConfig: cfg}}})
	if err != nil {
		t.Fatal(err)
	}
	tags, err := c.Tags(context.Background(), host+"/acme/app")
	if err != nil {
		b, _ := os.ReadFile(cfg)
		t.Fatalf("Tags with the documented docker-config.json: %v\n%s", err, b)
	}
	if !slices.Equal(tags, []string{"1.2.3"}) {
		t.Errorf("tags %q, want [1.2.3]", tags)
	}
}
