package cycle

import (
	"log/slog"

	"github.com/imagebump/imagebump/config"
	"github.com/imagebump/imagebump/registry"
)

// RegistryOptions turns the config's `registries:` into registry client
// options. A nil config gives the defaults: anonymous or Docker keychain auth,
// verified TLS, no rate limit.
func RegistryOptions(cfg *config.Config, logger *slog.Logger) registry.Options {
	opts := registry.Options{Logger: logger}
	if cfg == nil {
		return opts
	}
	for _, r := range cfg.Registries {
		h := registry.Host{
			Host:        r.Host,
			Insecure:    r.Insecure,
			CAFile:      r.CAFile,
			Concurrency: r.Concurrency,
		}
		if r.Auth != nil {
			h.DockerConfig = r.Auth.DockerConfig
			h.UsernameFile = r.Auth.UsernameFile
			h.PasswordFile = r.Auth.PasswordFile
			h.TokenFile = r.Auth.TokenFile
		}
		if r.RateLimit != nil {
			h.RequestsPerSecond = r.RateLimit.RequestsPerSecond
			h.Burst = r.RateLimit.Burst
		}
		opts.Hosts = append(opts.Hosts, h)
	}
	return opts
}
