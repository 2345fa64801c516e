package serve

import (
	"fmt"
	"log/slog"
	"net/http"

	"github.com/imagebump/imagebump/config"
	"github.com/imagebump/imagebump/cycle"
	"github.com/imagebump/imagebump/registry"
)

// newRegistry builds the registry client of a config, shared by every
// target's cycles until the next reload: its caches (the registry's auth
// challenge per host, a bearer token per repository) make a cycle with
// nothing new cost only the tag listings.
func (s *Server) newRegistry(cfg *config.Config) (*registry.Client, error) {
	client, err := registry.New(s.registryOptions(cfg))
	if err != nil {
		return nil, fmt.Errorf("registries in %s: %w", cfg.File, err)
	}
	return client, nil
}

// registryOptions are the config's registry options with serve's base
// transport, which counts requests by host and status code.
func (s *Server) registryOptions(cfg *config.Config) registry.Options {
	opts := cycle.RegistryOptions(cfg, s.log.With("component", "registry"))
	base := http.DefaultTransport.(*http.Transport).Clone()
	// A scan keeps several requests in flight per host, cycle after
	// cycle: keep their connections instead of dialling (and shaking
	// hands) anew each time.
	base.MaxIdleConnsPerHost = 16
	for _, h := range opts.Hosts {
		if h.CAFile != "" {
			// The registry client adds a host's CA to a clone of its base
			// transport, which must be an *http.Transport for that.
			s.log.Warn("registry request metrics are off while a registry has a caFile", "host", h.Host)
			opts.Transport = base
			return opts
		}
	}
	opts.Transport = &countingTransport{inner: base, m: s.metrics}
	return opts
}

// logDiscard is a logger that drops everything.
var logDiscard = slog.New(slog.DiscardHandler)
