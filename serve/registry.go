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

// registryOptions are the config's registry options with serve's hooks,
// which count requests by host and status code and rate-limit waits, and a
// base transport that keeps connections between cycles and reloads.
func (s *Server) registryOptions(cfg *config.Config) registry.Options {
	opts := cycle.RegistryOptions(cfg, s.log.With("component", "registry"))
	s.transportOnce.Do(func() {
		base := s.opts.RegistryTransport
		if base == nil {
			base = http.DefaultTransport.(*http.Transport)
		}
		s.transport = base.Clone()
		// A scan keeps several requests in flight per host, cycle after
		// cycle: keep their connections instead of dialling (and shaking
		// hands) anew each time.
		s.transport.MaxIdleConnsPerHost = 16
	})
	opts.Transport = s.transport
	opts.OnRequest = s.metrics.request
	opts.OnWait = s.metrics.rateLimitWait
	return opts
}

// logDiscard is a logger that drops everything.
var logDiscard = slog.New(slog.DiscardHandler)
