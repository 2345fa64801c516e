// Package registry lists the tags of image repositories and resolves tag
// digests from OCI registries, with per-host auth, TLS, rate limits,
// concurrency limits, retries and caps, treating every registry as
// untrusted.
//
// A Client is built from Options, whose zero value works: anonymous or
// Docker-config credentials, verified TLS, no rate limit, four requests in
// flight per host, a 30 s timeout per request and four retries. Hosts lists
// settings per registry host; see Host for each.
//
// # Cycles
//
// A Client lives as long as the process: for a `plan` a few seconds, for
// `serve` days. The work of one cycle (list the repositories of the
// policies a target uses, then resolve the digests it needs) goes through
// one Cycle, made with Client.Cycle and dropped at the end of the cycle.
// Client.Tags, Digest and Scan each run in a Cycle of their own.
//
// A Cycle remembers, per host, whether the host still answers. A request
// that gets no answer at all (connection refused, reset or unreachable,
// name not found, or nothing within the host's Timeout) is retried, with
// backoff, only while the host's first unanswered request of the cycle was
// sent less than one Timeout ago, and at most MaxRetries times. After that
// the host is held down until the Cycle ends: every other request to it
// fails at once with the error that put it down ("not tried: HOST stopped
// answering earlier in this cycle: ..."), with the same Kind. So a host
// that refuses connections or swallows them costs a cycle about one
// Timeout, however many repositories it serves; before, each repository
// waited through every retry of its own (twenty repositories behind a
// silent host took twenty times five timeouts). A host that has answered
// in the cycle is not judged on one hanging request: that request gets all
// its retries, and only when they are spent is the host held down. Errors
// that come with an answer (any HTTP status, a bad body, a TLS refusal)
// never hold a host down.
//
// Why a per-cycle view rather than a circuit breaker whose trip expires
// after some time: the question "is it worth asking this host again?" has
// a natural answer per cycle, and none in wall-clock time. A cooldown long
// enough to spare one cycle would skip the host in the next one, or in
// another target's cycle that starts a second later, without ever trying
// it; one short enough not to would let a long cycle ask again. A Cycle
// never outlives its cycle, needs no clock to reason about, and two
// targets' cycles running at once judge a host each on their own.
//
// # Requests
//
// Every HTTP request to a host, including the ping that discovers how the
// registry authenticates, bearer token fetches and retries, goes through
// that host's limits: a Retry-After the host sent earlier, then a
// concurrency slot (held until the body is closed), then the token bucket.
// Only then does the host's Timeout start to count, and it covers reading
// the body too. Cancelling the context stops waits, requests and backoff
// sleeps at once.
//
// Failed requests are retried on HTTP 429, on 5xx other than 501, on
// timeouts, on connection errors and on truncated bodies, with exponential
// backoff and full jitter (within what the Cycle allows a host that does
// not answer); a Retry-After header (seconds or HTTP date, capped at
// Options.MaxBackoff) replaces the backoff. A host that rate-limits is
// waited for only within one Timeout of its first 429 or Retry-After in
// a Cycle, and held down once a wait would reach past that, or one
// request has used its retries on 429s; a host that has served no
// repository in the Cycle gets server errors retried within one Timeout
// of its first (see Cycle). Other failures, such
// as 401, 403, 404 or malformed JSON, are not retried.
//
// # Caps
//
// No registry can hold a cycle forever. Each operation on a repository
// (listing its tags, resolving one digest) ends at the host's
// RepositoryTimeout (default 5m); a listing ends after MaxPages pages
// (default 1000) or MaxTags tags (default 500,000, or 128 bytes per tag);
// bodies are read up to fixed sizes. Going past a cap fails that operation
// alone with KindLimit, naming the setting to raise. Tags are returned as
// the registry sent them: package policy refuses those that are not valid
// OCI tags. Digests a registry sends are checked (sha256 or sha512, exact
// lowercase hex) before they are returned or put in a URL.
//
// # Authentication
//
// The registry is pinged once per host and Client; a bearer token is
// fetched once per repository (with ggcr's transport package) and renewed
// when the registry refuses it. Credential files are read when used, so
// they may be rotated; their content never appears in an error or a log.
//
// A host whose Provider is a cloud (ProviderAWS, ProviderGCP, ProviderAzure,
// or ProviderAuto on an ECR, Artifact Registry, GCR or ACR host name) gets
// its credentials from that cloud, with the process's own identity,
// through package cloudauth: tokens are cached until shortly before they
// expire and renewed as a long-running Client goes, and a token the
// registry refuses is replaced at the next request. Hosts without an entry
// are generic: a cloud is never asked unless a Host names it.
//
// # Secrets
//
// The Client keeps every credential it reads and every token it gets in
// one redact.Secrets. Error response bodies are cut to 64 KiB and cleaned
// of those secrets, and of the Authorization header the request carried,
// in the host's transport, before anyone reads them; Error's text is
// cleaned again, cut to 600 bytes, and its control characters escaped.
//
// # Transport security
//
// TLS is verified against the system roots plus Host.CAFile. Plain HTTP is
// used only for hosts marked Insecure, even for localhost, where ggcr alone
// would allow it. Insecure allows plain HTTP to the host itself only: a
// token realm (or any request carrying credentials) on another host name
// over plain HTTP is refused, unless that host is listed as insecure too.
// HTTPS_PROXY and NO_PROXY are honoured by the default transport.
//
// # Errors
//
// Every method returns *Error, whose Kind says why it failed (KindAuth,
// KindNotFound, KindRateLimited, KindLimit, ...) and whose text names the
// operation, the repository and the host. URLs in error text lose user
// information and query values that may carry tokens.
package registry
