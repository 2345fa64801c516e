// Package cloudauth gets registry credentials from the cloud a registry
// belongs to, with the identity the process runs as: Amazon ECR (private
// and public) through the AWS SDK's default credential chain and
// GetAuthorizationToken; Google Artifact Registry and Container Registry
// through Application Default Credentials (golang.org/x/oauth2/google);
// Azure Container Registry through azidentity (workload identity, a service
// principal, managed identity) and the registry's /oauth2/exchange.
//
// An Authenticator serves one registry host. It fetches a token when first
// asked, caches it in memory until shortly before it expires
// (DefaultRefreshBefore, or a quarter of a short token's life), and renews
// it then; when a renewal fails while the cached token is still good, it
// logs a warning and keeps using it. Errors (*Error) name the provider, the
// host, the step that failed and the credential source tried, and say what
// to do; every token fetched is registered in Options.Secrets, and no error
// or log record carries one.
//
// The package sends nothing to a cloud metadata endpoint unless an
// Authenticator for that cloud is asked for credentials: the registry
// package makes one only for hosts configured with a provider.
//
// Why not go-containerregistry's k8schain (with NewNoClient) or the
// per-cloud helpers it bundles: their keychains turn every failure into
// anonymous access, so a missing credential surfaces as a bare 401; the
// ECR helper keeps a file cache in the home directory; the ACR helper is
// built on the retired ADAL library; and k8schain links the Kubernetes
// client. The SDKs below them are used directly instead, with the same
// token flows.
package cloudauth
