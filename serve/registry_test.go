package serve

import (
	"context"
	"encoding/pem"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	ggcrregistry "github.com/google/go-containerregistry/pkg/registry"

	"github.com/imagebump/imagebump/config"
	"github.com/imagebump/imagebump/internal/testkit/testregistry"
)

// TestReloadKeepsRegistryConnections: the registry client of each config
// loaded shares one base transport (and, for a host with a caFile, one
// transport per set of certificates), so that the tag listings after a
// reload go over the connections the cycles before it opened, rather
// than new ones beside them (which idled on for 90 s, a set per reload).
func TestReloadKeepsRegistryConnections(t *testing.T) {
	for _, tls := range []bool{false, true} {
		t.Run(map[bool]string{false: "insecure", true: "caFile"}[tls], func(t *testing.T) {
			// Connections that carried a request, by the client's
			// address: an insecure host's ping also tries TLS first, on
			// a connection of its own that reaches no handler.
			var mu sync.Mutex
			served := map[string]bool{}
			h := ggcrregistry.New(ggcrregistry.Logger(log.New(io.Discard, "", 0)))
			srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				served[r.RemoteAddr] = true
				mu.Unlock()
				h.ServeHTTP(w, r)
			}))
			var registries string
			if tls {
				srv.StartTLS()
				ca := filepath.Join(t.TempDir(), "ca.crt")
				if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600); err != nil {
					t.Fatal(err)
				}
				registries = fmt.Sprintf("[{host: %q, caFile: %q}]", strings.TrimPrefix(srv.URL, "https://"), ca)
			} else {
				srv.Start()
				registries = fmt.Sprintf("[{host: %q, insecure: true}]", strings.TrimPrefix(srv.URL, "http://"))
			}
			t.Cleanup(srv.Close)
			host := strings.TrimPrefix(strings.TrimPrefix(srv.URL, "http://"), "https://")
			reg := &testregistry.Server{Host: host, URL: srv.URL, Transport: srv.Client().Transport.(*http.Transport)}
			reg.Push(t, "team/app", "1.0.0")
			cfg, err := config.Parse([]byte("registries: "+registries+"\ngit: {url: https://example.com/fleet.git}\n"), "imagebump.yaml")
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
			mu.Lock()
			defer mu.Unlock()
			if n := len(served); n != 1 {
				t.Errorf("four configs' clients opened %d connections to the registry, want 1 kept", n)
			}
		})
	}
}
