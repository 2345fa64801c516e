// Package cloudhost recognises the registry host names of the cloud
// providers (AWS ECR, Google Artifact Registry and Container Registry,
// Azure Container Registry) and what they say: the AWS account and region of
// an ECR registry, the Azure cloud of an ACR registry. It has no
// dependencies, so that config can check a `provider:` against its host
// without loading any cloud SDK.
package cloudhost

import (
	"fmt"
	"regexp"
	"strings"
)

// The providers, as written in registries[].provider.
const (
	Generic = "generic" // no cloud: the host's auth, or the Docker keychain
	Auto    = "auto"    // detected from the host name
	AWS     = "aws"     // Amazon ECR (private and public)
	GCP     = "gcp"     // Google Artifact Registry and Container Registry
	Azure   = "azure"   // Azure Container Registry
)

// Providers lists the values registries[].provider may take.
var Providers = []string{Generic, Auto, AWS, GCP, Azure}

// Valid reports whether p is a provider name, or empty.
func Valid(p string) bool {
	if p == "" {
		return true
	}
	for _, q := range Providers {
		if p == q {
			return true
		}
	}
	return false
}

// Host is what a registry host name says about its cloud.
type Host struct {
	// Provider is AWS, GCP or Azure, or Generic for a host no cloud
	// provider is known to serve.
	Provider string

	// For AWS: Account is the 12-digit registry (account) id and Region
	// the region of a private ECR registry; Public is set for
	// public.ecr.aws, whose API lives in us-east-1. FIPS is set for the
	// dkr.ecr-fips host names.
	Account string
	Region  string
	Public  bool
	FIPS    bool

	// For Azure: Cloud is "public", "china" or "usgov".
	Cloud string
}

// ecrPrivate matches ACCOUNT.dkr.ecr.REGION.amazonaws.com and its FIPS,
// China, dual-stack and isolated-partition forms.
var ecrPrivate = regexp.MustCompile(`^([0-9]{12})\.dkr[.-]ecr(-fips)?\.([a-z0-9-]+)\.(amazonaws\.com|amazonaws\.com\.cn|on\.aws|sc2s\.sgov\.gov|c2s\.ic\.gov|cloud\.adc-e\.uk|csp\.hci\.ic\.gov)$`)

// Parse returns what host (a host name with an optional port) says about
// its cloud. A host that matches no provider's names has Provider Generic.
func Parse(host string) Host {
	h := strings.ToLower(host)
	if i := strings.LastIndexByte(h, ':'); i >= 0 && !strings.Contains(h[i:], "]") {
		h = h[:i]
	}
	h = strings.TrimSuffix(h, ".")
	if m := ecrPrivate.FindStringSubmatch(h); m != nil {
		return Host{Provider: AWS, Account: m[1], FIPS: m[2] != "", Region: m[3]}
	}
	switch {
	case h == "public.ecr.aws":
		return Host{Provider: AWS, Public: true, Region: "us-east-1"}
	case h == "gcr.io", strings.HasSuffix(h, ".gcr.io"), strings.HasSuffix(h, ".pkg.dev"):
		return Host{Provider: GCP}
	case strings.HasSuffix(h, ".azurecr.io"):
		return Host{Provider: Azure, Cloud: "public"}
	case strings.HasSuffix(h, ".azurecr.cn"):
		return Host{Provider: Azure, Cloud: "china"}
	case strings.HasSuffix(h, ".azurecr.us"):
		return Host{Provider: Azure, Cloud: "usgov"}
	}
	return Host{Provider: Generic}
}

// Resolve returns the provider that provider stands for on host: auto
// becomes the host's cloud (or generic), empty becomes generic, and any
// other value stays as it is.
func Resolve(provider, host string) string {
	switch provider {
	case "", Generic:
		return Generic
	case Auto:
		return Parse(host).Provider
	}
	return provider
}

// Mismatch says why a cloud provider may not be used for host, or ""
// when it may: each cloud's credentials go to its own registry host names
// only, as Flux's image-reflector-controller checks. aws needs an ECR
// host name, which also gives the account and region; gcp a Container
// Registry or Artifact Registry one; azure an ACR one. Anything else
// would hand the workload's cloud token to whatever answers there.
func Mismatch(provider, host string) string {
	if host == "" || (provider != AWS && provider != GCP && provider != Azure) || Parse(host).Provider == provider {
		return ""
	}
	switch provider {
	case AWS:
		return fmt.Sprintf("provider aws needs an ECR host name (ACCOUNT.dkr.ecr.REGION.amazonaws.com or public.ecr.aws), which gives the account and region; %q is not one", host)
	case GCP:
		return fmt.Sprintf("provider gcp needs a Google host name (gcr.io, *.gcr.io or *-docker.pkg.dev): the workload's Google token goes to Google's registries only; %q is not one", host)
	}
	return fmt.Sprintf("provider azure needs an ACR host name (*.azurecr.io, *.azurecr.cn or *.azurecr.us): the workload's Entra ID token goes to Azure's registries only; %q is not one", host)
}

// Describe names the registry a cloud provider runs, for messages.
func Describe(provider string) string {
	switch provider {
	case AWS:
		return "an AWS ECR registry"
	case GCP:
		return "a Google Artifact Registry or Container Registry host"
	case Azure:
		return "an Azure Container Registry"
	}
	return "a registry"
}
