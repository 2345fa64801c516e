package registry

import (
	"fmt"

	"github.com/imagebump/imagebump/internal/cloudhost"
	"github.com/imagebump/imagebump/registry/cloudauth"
)

// The values of Host.Provider.
const (
	ProviderGeneric = cloudhost.Generic // the host's files, or Options.Keychain
	ProviderAuto    = cloudhost.Auto    // the cloud the host name belongs to, or generic
	ProviderAWS     = cloudhost.AWS     // Amazon ECR, private and public
	ProviderGCP     = cloudhost.GCP     // Google Artifact Registry and Container Registry
	ProviderAzure   = cloudhost.Azure   // Azure Container Registry
)

// checkProvider reports a Host.Provider this package does not know, or one
// given with credential files.
func checkProvider(hc Host) error {
	if !cloudhost.Valid(hc.Provider) {
		return fmt.Errorf("unknown provider %q: want generic, auto, aws, gcp or azure", hc.Provider)
	}
	if hc.Provider != "" && hc.Provider != ProviderGeneric && authKey(hc) != "" {
		return fmt.Errorf("provider %s and %s both give credentials; keep one", hc.Provider, authKey(hc))
	}
	return nil
}

// cloudAuth returns the authenticator of a host whose provider is a cloud,
// or nil for a generic host.
func (c *Client) cloudAuth(hc Host, h *host) (*cloudauth.Authenticator, error) {
	p := cloudhost.Resolve(hc.Provider, hc.Host)
	if p == cloudhost.Generic {
		return nil, nil
	}
	return cloudauth.New(cloudauth.Options{
		Host:              hc.Host,
		Provider:          p,
		Transport:         c.base,
		RegistryTransport: h.rt,
		Insecure:          hc.Insecure,
		Timeout:           h.timeout,
		Secrets:           c.secrets,
		Logger:            c.log,
	})
}

// cloudHint is the hint for a registry that refused credentials (or got
// none) on a host whose name belongs to a cloud: for a generic host, how
// to use the cloud's; for a cloud host, what its identity may lack.
func (e *Error) cloudHint() string {
	detected := cloudhost.Parse(e.Host).Provider
	switch {
	case e.provider == "" || e.provider == ProviderGeneric:
		if detected == cloudhost.Generic || e.authKey != "" {
			return ""
		}
		return fmt.Sprintf("%s is %s: add {host: %s, provider: %s} under registries: to use this process's %s credentials",
			e.Host, cloudhost.Describe(detected), e.Host, detected, detected)
	default:
		return fmt.Sprintf("the %s identity this process runs as may not read this repository: check its permissions on %s", e.provider, e.Host)
	}
}
