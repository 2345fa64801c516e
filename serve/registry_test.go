package serve

import (
	"context"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	ggcrregistry "github.com/google/go-containerregistry/pkg/registry"

	"github.com/imagebump/imagebump/config"
	"github.com/imagebump/imagebump/internal/testkit/testregistry"
)

// TestReloadKeepsRegistryConnections: the registry client of each config
// loaded shares one base transport, so that the tag listings after a
// reload go over the connections the cycles before it opened, rather
// than new ones beside them (which idled on for 90 s, a set per reload).
func TestReloadKeepsRegistryConnections(t *testing.T) {
	// Connections that carried a request, by the client's address: an
	// insecure host's ping also tries TLS first, on a connection of its
	// own that reaches no handler.
	var mu sync.Mutex
	served := map[string]bool{}
	dials := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(served)
	}
	h := ggcrregistry.New(ggcrregistry.Logger(log.New(io.Discard, "", 0)))
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		served[r.RemoteAddr] = true
		mu.Unlock()
		h.ServeHTTP(w, r)
	}))
	srv.Start()
	t.Cleanup(srv.Close)
	reg := &testregistry.Server{Host: strings.TrimPrefix(srv.URL, "http://"), URL: srv.URL, Transport: http.DefaultTransport.(*http.Transport).Clone()}
	reg.Push(t, "team/app", "1.0.0")
	text := fmt.Sprintf("registries: [{host: %q, insecure: true}]\ngit: {url: https://example.com/fleet.git}\n", reg.Host)
	cfg, err := config.Parse([]byte(text), "imagebump.yaml")
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(Options{Config: cfg, Workdir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	clear(served)
	mu.Unlock()
	for reload := range 4 {
		client, err := s.newRegistry(cfg)
		if err != nil {
			t.Fatal(err)
		}
		res := client.Scan(context.Background(), []string{reg.Repo("team/app")}, 1)
		if len(res) != 1 || res[0].Err != nil || len(res[0].Tags) != 1 {
			t.Fatalf("reload %d: listing: %+v", reload, res)
		}
	}
	if n := dials(); n != 1 {
		t.Errorf("four configs' clients opened %d connections to the registry, want 1 kept", n)
	}
}
