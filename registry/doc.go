// Package registry lists the tags of image repositories and resolves tag
// digests from OCI registries, with per-host auth, TLS, rate limits,
// concurrency limits and retries.
//
// A Client is built from Options, whose zero value works: anonymous or
// Docker-config credentials, verified TLS, no rate limit, four requests in
// flight per host, a 30 s timeout per request and four retries. Hosts lists
// settings per registry host; see Host for each.
//
// # Requests
//
// Every HTTP request to a host, including the ping that discovers how the
// registry authenticates, bearer token fetches and retries, goes through
// that host's limits: a Retry-After the host sent earlier, then a
// concurrency slot (held until the body is closed), then the token bucket.
// Only then does Options.Timeout start to count, and it covers reading the
// body too. Cancelling the context stops waits, requests and backoff sleeps
// at once.
//
// Failed requests are retried on HTTP 429, on 5xx other than 501, on
// timeouts, on connection errors and on truncated bodies, with exponential
// backoff and full jitter; a Retry-After header (seconds or HTTP date, capped
// at Options.MaxBackoff) replaces the backoff. Other failures, such as 401,
// 403, 404 or malformed JSON, are not retried.
//
// # Authentication
//
// The registry is pinged once per host and Client; a bearer token is
// fetched once per repository (with ggcr's transport package) and renewed
// when the registry refuses it. Credential files are read when used, so
// they may be rotated; their content never appears in an error or a log.
//
// # Transport security
//
// TLS is verified against the system roots plus Host.CAFile. Plain HTTP is
// used only for hosts marked Insecure, even for localhost, where ggcr alone
// would allow it. HTTPS_PROXY and NO_PROXY are honoured by the default
// transport.
//
// # Errors
//
// Every method returns *Error, whose Kind says why it failed (KindAuth,
// KindNotFound, KindRateLimited, ...) and whose text names the operation,
// the repository and the host. URLs in error text lose user information and
// query values that may carry tokens.
package registry
