package registry

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/google/go-containerregistry/pkg/v1/remote/transport"

	"github.com/imagebump/imagebump/internal/cloudhost"
	"github.com/imagebump/imagebump/internal/printable"
	"github.com/imagebump/imagebump/internal/redact"
	"github.com/imagebump/imagebump/internal/secretfile"
	"github.com/imagebump/imagebump/registry/cloudauth"
)

// Kind classifies why a registry operation failed, so that callers can
// decide what to tell the user without parsing error text.
type Kind int

// The kinds of failure. KindUnknown is the zero value and never set by this
// package on an *Error it returns.
const (
	KindUnknown     Kind = iota
	KindAuth             // credentials missing, unreadable or refused (HTTP 401, 403)
	KindNotFound         // no such repository, tag or platform (HTTP 404, NAME_UNKNOWN, MANIFEST_UNKNOWN)
	KindRateLimited      // HTTP 429 or TOOMANYREQUESTS, after all retries
	KindNetwork          // dial, DNS, connection reset or closed, after all retries
	KindTimeout          // a request exceeded Options.Timeout, or ctx's deadline passed
	KindServer           // HTTP 5xx, after all retries where retrying makes sense
	KindBadResponse      // malformed JSON, truncated or oversized body, unexpected status
	KindCanceled         // ctx was canceled
	KindTLS              // certificate not trusted, TLS handshake failed, plain HTTP refused
	KindInvalid          // the repository, tag or platform given is malformed
	KindLimit            // the repository went past MaxPages, MaxTags or RepositoryTimeout
)

var kindNames = map[Kind]string{
	KindUnknown:     "unknown",
	KindAuth:        "auth",
	KindNotFound:    "not found",
	KindRateLimited: "rate limited",
	KindNetwork:     "network",
	KindTimeout:     "timeout",
	KindServer:      "server",
	KindBadResponse: "bad response",
	KindCanceled:    "canceled",
	KindTLS:         "tls",
	KindInvalid:     "invalid",
	KindLimit:       "limit",
}

// String returns the kind in lowercase words, such as "rate limited".
func (k Kind) String() string {
	if s, ok := kindNames[k]; ok {
		return s
	}
	return fmt.Sprintf("kind(%d)", int(k))
}

// The operations named in Error.Op.
const (
	OpListTags      = "list tags"
	OpResolveDigest = "resolve digest"
)

// Error is the error returned by every Client method. Its text names the
// operation, the repository and the registry host, says what went wrong in
// words and, where this package can tell, what to do about it (the setting
// of imagebump's config to check). It never contains a credential: URLs in
// it lose their user information and any query value that may be a token.
type Error struct {
	Op         string // OpListTags or OpResolveDigest
	Repository string // as the caller gave it, such as "ghcr.io/acme/app"
	Tag        string // for OpResolveDigest
	Platform   string // for OpResolveDigest with a platform
	Host       string // the registry host, such as "ghcr.io"
	Kind       Kind
	Status     int // the last HTTP status seen, or 0
	Attempts   int // how many times the failing request was sent, or 0
	Err        error

	// authKey is the registries[].auth key that gives the host's
	// credentials ("usernameFile", "tokenFile", "dockerConfig"), or "" for
	// Options.Keychain, where docker login is the way to add them.
	authKey string

	// provider is the cloud the host's credentials come from (aws, gcp,
	// azure), or "" for a generic host.
	provider string

	// fluxTerms words the hints for a config made from Flux objects.
	fluxTerms bool

	// secrets are the Client's, removed from the text of Err.
	secrets *redact.Secrets
}

// maxCauseLen bounds how much of the underlying error's text Error repeats:
// a proxy's HTML error page can be tens of kilobytes.
const maxCauseLen = 600

// Error returns, for example, "list tags for ghcr.io/acme/app:
// rate-limited by ghcr.io (HTTP 429) after 5 attempts: ...; set a lower
// registries[].rateLimit for ghcr.io, or try again later". The text ends
// with what to do where this package can tell.
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.Op)
	b.WriteString(" for ")
	b.WriteString(e.Repository)
	if e.Tag != "" {
		if strings.Contains(e.Tag, ":") {
			b.WriteString("@") // a digest, not a tag
		} else {
			b.WriteString(":")
		}
		b.WriteString(e.Tag)
	}
	if e.Platform != "" {
		b.WriteString(" (platform ")
		b.WriteString(e.Platform)
		b.WriteString(")")
	}
	b.WriteString(": ")
	var (
		cred     *credentialError
		cloud    *cloudauth.Error
		notFound *notFoundError
		caFile   *caFileError
	)
	switch {
	case errors.As(e.Err, &notFound):
		// The registry answered, with an image that lacks what was asked
		// (a platform, a creation time): "not found at HOST" would read
		// as a missing image. The message says what is missing.
		b.WriteString(e.cutCause(notFound.Error()))
	case errors.As(e.Err, &caFile):
		b.WriteString(e.cutCause(caFile.Error()))
		return b.String()
	case e.Kind == KindAuth && errors.As(e.Err, &cred):
		// No request was sent: the file, not the registry, is the news.
		b.WriteString(e.cutCause(cred.Error()))
	case e.Kind == KindAuth && errors.As(e.Err, &cloud):
		// Nor here: the cloud's answer is, and it says what to do.
		b.WriteString(escapeControl(e.secrets.Text(cloud.Error())))
		return b.String()
	default:
		b.WriteString(e.summary())
		if e.Status != 0 {
			fmt.Fprintf(&b, " (HTTP %d)", e.Status)
		}
		if e.Attempts > 1 {
			fmt.Fprintf(&b, " after %d attempts", e.Attempts)
		}
		if e.Err != nil {
			cause := e.cutCause(e.Err.Error())
			if down := (*hostDownError)(nil); e.Attempts > 0 && errors.As(e.Err, &down) {
				// Tried, then held back with the others: "not tried"
				// is the others' word.
				cause = strings.Replace(cause, "not tried: ", "no more tries: ", 1)
			}
			b.WriteString(": ")
			b.WriteString(cause)
		}
	}
	if h := e.hint(); h != "" {
		b.WriteString("; ")
		b.WriteString(h)
	}
	return b.String()
}

// cutCause redacts an underlying error's text (URL credentials and every
// secret the Client holds) and bounds its length. Registry text is quoted
// as Go would quote it, less the quotes, so that no control character
// (a terminal escape, a forged line) leaves this package.
func (e *Error) cutCause(s string) string {
	// A body's closing line break ("down\n") would read as an escape
	// before the hint.
	return escapeControl(strings.TrimSpace(printable.Cut(e.secrets.Text(readableDiagnostics(e.Err, s)), maxCauseLen)))
}

// readableDiagnostics rewrites, in s (err's text), the registry's error
// diagnostics as go-containerregistry prints them, whose details are Go
// values ("NAME_UNKNOWN: ...; map[name:acme/app]"), with their details as
// JSON ("NAME_UNKNOWN: ... (detail: {"name":"acme/app"})").
func readableDiagnostics(err error, s string) string {
	var te *transport.Error
	if !errors.As(err, &te) || len(te.Errors) == 0 {
		return s
	}
	for _, d := range te.Errors {
		if d.Detail == nil {
			continue
		}
		detail, jerr := json.Marshal(d.Detail)
		if jerr != nil {
			continue
		}
		s = strings.Replace(s, d.String(), fmt.Sprintf("%s: %s (detail: %s)", d.Code, d.Message, printable.Cut(string(detail), 200)), 1)
	}
	return s
}

// escapeControl replaces control characters and invalid UTF-8 in s with
// Go escapes such as \n and \x1b.
func escapeControl(s string) string {
	if !strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f || r == utf8.RuneError || (r >= 0x80 && r < 0xa0) }) {
		return s
	}
	q := strconv.QuoteToGraphic(s)
	return strings.ReplaceAll(q[1:len(q)-1], `\"`, `"`)
}

func (e *Error) summary() string {
	h := e.failedHost()
	switch e.Kind {
	case KindAuth:
		if e.Status == http.StatusForbidden {
			return "access denied by " + h
		}
		return "authentication failed at " + h
	case KindNotFound:
		return "not found at " + h
	case KindRateLimited:
		return "rate-limited by " + h
	case KindNetwork:
		return "cannot reach " + h
	case KindTimeout:
		return "timed out talking to " + h
	case KindServer:
		return "server error at " + h
	case KindBadResponse:
		return "bad response from " + h
	case KindCanceled:
		return "canceled"
	case KindTLS:
		return "insecure or failed connection to " + h
	case KindInvalid:
		return "invalid request"
	case KindLimit:
		return "too much from " + h
	default:
		return "failed at " + h
	}
}

// failedHost names the host that did not answer: the registry, or, for a
// token request that could not reach its token service on another host,
// that service.
func (e *Error) failedHost() string {
	var te *tokenError
	if (e.Kind == KindNetwork || e.Kind == KindTimeout || e.Kind == KindServer) && errors.As(e.Err, &te) &&
		te.realmHost != "" && !strings.EqualFold(te.realmHost, e.Host) {
		return te.realmHost + " (the token service of " + e.Host + ")"
	}
	return e.Host
}

// hint says what the user can do about the failure, naming the setting of
// imagebump's config to change, or returns "" when there is nothing more
// specific to say than the error itself.
func (e *Error) hint() string {
	h := e.Host
	var cred *credentialError
	if e.Kind == KindAuth && errors.As(e.Err, &cred) && cred.helper != "" {
		// A config.json copied from a workstation often names a helper
		// (credsStore "desktop", "osxkeychain") for every host.
		return fmt.Sprintf("the docker config names the credential helper %s, which is not installed here: "+
			"write the credentials for %s under \"auths\" in that file instead of copying a workstation's config.json "+
			"(docs/deploy.md#registry-credentials), or install the helper", cred.helper, h)
	}
	if e.fluxTerms {
		if fh := e.fluxHint(); fh != "" {
			return fh
		}
	}
	switch e.Kind {
	case KindAuth:
		if errors.As(e.Err, &cred) && cred.key != "" {
			return fmt.Sprintf("check registries[].auth.%s for %s", cred.key, h)
		}
		if ch := e.cloudHint(); ch != "" {
			if e.provider != "" {
				return ch
			}
			return fmt.Sprintf("check registries[].auth for %s (or docker login %s), or: %s", h, h, ch)
		}
		if e.authKey != "" {
			return fmt.Sprintf("check registries[].auth for %s", h)
		}
		return fmt.Sprintf("check registries[].auth for %s (or docker login %s)", h, h)
	case KindNotFound:
		var nf *notFoundError
		if errors.As(e.Err, &nf) {
			if e.Op == OpCreated {
				return "give the image an " + createdAnnotation + " annotation or a created time in its config, or remove minAge from the policy"
			}
			return "" // the registry has the tag; its text says what is missing
		}
		if e.Op == OpResolveDigest {
			return fmt.Sprintf("the repository or tag does not exist, or the credentials for %s cannot see it", h)
		}
		return fmt.Sprintf("the repository does not exist, or the credentials for %s cannot see it", h)
	case KindRateLimited:
		return fmt.Sprintf("set a lower registries[].rateLimit for %s, or try again later", h)
	case KindNetwork:
		return fmt.Sprintf("check that %s is reachable from here (name, port, firewall, HTTPS_PROXY/NO_PROXY)", e.failedHost())
	case KindTimeout:
		return fmt.Sprintf("%s did not answer in time: it may be overloaded or unreachable; try again later", e.failedHost())
	case KindServer:
		return fmt.Sprintf("%s is failing on its side; try again later", e.failedHost())
	case KindBadResponse:
		var le *linkError
		if msg := e.Err.Error(); strings.Contains(msg, "invalid realm in www-authenticate") {
			// go-containerregistry's check of the token service's
			// address (the realm of the registry's challenge).
			if strings.Contains(msg, "private or link-local") {
				return fmt.Sprintf("%s names a token service (realm) at a private or link-local IP address on another host or port than its own, which is refused (it could reach a cloud's metadata service): give the token service a DNS name in the registry's own token settings (distribution's auth.token.realm, say), or serve it on the registry's own host and port", h)
			}
			return fmt.Sprintf("%s names a token service (realm) that is refused: serve it over HTTPS (plain HTTP only for a registry with insecure: true)", h)
		}
		if errors.As(e.Err, &le) {
			return fmt.Sprintf("the tag list of %s continues on pages imagebump cannot follow, and a partial list could move markers back; fix the address the registry (or a proxy in front of it) writes in its Link headers", h)
		}
		return fmt.Sprintf("%s sent something that is not a registry API answer; check that it is an OCI registry (and any proxy in between)", h)
	case KindLimit:
		var le *limitError
		if errors.As(e.Err, &le) {
			return fmt.Sprintf("raise registries[].%s for %s if the repository really is that large or slow; a registry that never stops listing is broken", le.setting, h)
		}
	case KindTLS:
		var (
			unknownCA x509.UnknownAuthorityError
			realm     *realmError
		)
		switch {
		case errors.As(e.Err, &realm):
			return fmt.Sprintf("serve the token realm over HTTPS, or add {host: %s, insecure: true} under registries: if plain HTTP to it is intended", realm.realmHost())
		case errors.As(e.Err, &unknownCA):
			return fmt.Sprintf("set registries[].caFile for %s", h)
		case e.plainHTTPRefused():
			return fmt.Sprintf("add {host: %s, insecure: true} under registries: to allow plain HTTP", h)
		}
	}
	return ""
}

// fluxHint is the hint in the words of Flux objects, for the settings
// they carry (an ImageRepository's insecure, secretRef, provider), or ""
// where the native hint fits as well.
func (e *Error) fluxHint() string {
	h := e.Host
	switch e.Kind {
	case KindTLS:
		if e.plainHTTPRefused() {
			return fmt.Sprintf("set spec.insecure: true on the ImageRepository objects of %s to allow plain HTTP", h)
		}
	case KindAuth:
		if e.provider != "" && e.provider != ProviderGeneric {
			return ""
		}
		if detected := cloudhost.Parse(h).Provider; detected != cloudhost.Generic && e.authKey == "" {
			return fmt.Sprintf("%s is %s: set spec.provider: %s on its ImageRepository objects to use this process's %s credentials, or a secretRef", h, cloudhost.Describe(detected), detected, detected)
		}
		return fmt.Sprintf("check the secretRef of the ImageRepository objects of %s and where the secrets mapping (--flux-secrets) puts that Secret", h)
	}
	return ""
}

// Unwrap returns the underlying error.
func (e *Error) Unwrap() error { return e.Err }

// KindOf returns the Kind of the first *Error in err's chain, or KindUnknown.
func KindOf(err error) Kind {
	var e *Error
	if errors.As(err, &e) {
		return e.Kind
	}
	return KindUnknown
}

// PlainHTTPRefused reports whether err is a request this client refused to
// send over plain HTTP because the host is not configured as insecure (or
// a registry that answered HTTPS with plain HTTP), and returns the host.
// init, which has a flag for it, says so in its own words.
func PlainHTTPRefused(err error) (host string, ok bool) {
	var e *Error
	if !errors.As(err, &e) || !e.plainHTTPRefused() {
		return "", false
	}
	return e.Host, true
}

// plainHTTPRefused reports a plain HTTP connection to the host itself that
// was refused (or HTTPS answered in plain HTTP), which insecure allows; a
// token realm elsewhere refused over plain HTTP is not one.
func (e *Error) plainHTTPRefused() bool {
	if e.Kind != KindTLS {
		return false
	}
	var (
		plain     *plainHTTPError
		recordErr tls.RecordHeaderError
		realm     *realmError
	)
	return !errors.As(e.Err, &realm) && (errors.As(e.Err, &plain) || errors.As(e.Err, &recordErr))
}

// credentialError reports a credential that could not be loaded. It names
// the file, never its content.
// caFileError is a host's caFile that cannot be read, or holds no PEM
// certificate: the host's requests fail, none sent, until it can be used.
type caFileError struct {
	host string // the registry
	path string
	err  error // nil: the file holds no PEM certificate
}

func (e *caFileError) Error() string {
	host := ""
	if e.host != "" {
		host = " of " + e.host
	}
	return fmt.Sprintf("no request sent: the caFile %s%s %s; put there the PEM certificate of the CA that signed the registry's certificate (a mounted Secret?), or remove caFile from its registries entry", e.path, host, e.problem())
}

// problem says what is wrong with the file: "cannot be read: no such
// file or directory", "holds no PEM certificate".
func (e *caFileError) problem() string {
	if e.err == nil {
		return "holds no PEM certificate"
	}
	cause := e.err
	// os's errors repeat the path.
	if pe, ok := cause.(*fs.PathError); ok && pe.Path == e.path {
		cause = pe.Err
	}
	return "cannot be read: " + cause.Error()
}

type credentialError struct {
	key  string // the registries[].auth key naming the file, such as "passwordFile"; "" for Options.Keychain
	path string // the file; for Options.Keychain, the registry host
	err  error

	// helper is the credential helper program the Docker config names
	// that is not installed, such as "docker-credential-desktop", or "".
	helper string
}

func (e *credentialError) Error() string {
	if e.key == "" {
		return fmt.Sprintf("cannot get credentials for %s from the docker keychain: %v", e.path, e.err)
	}
	what, path := "secret file", secretfile.Shown(e.path)
	if e.key == "dockerConfig" {
		what, path = "docker config", e.path
	}
	cause := e.err
	// os's errors repeat the path.
	if pe, ok := cause.(*fs.PathError); ok && pe.Path == path {
		cause = pe.Err
	}
	if cause == nil {
		return fmt.Sprintf("cannot read the %s %s", what, path)
	}
	return fmt.Sprintf("cannot read the %s %s: %v", what, path, cause)
}

// invalidError reports input this package refuses before any request.
type invalidError struct{ msg string }

func (e *invalidError) Error() string { return e.msg }

// badResponseError reports a response that could not be understood.
type badResponseError struct {
	what string
	err  error
}

func (e *badResponseError) Error() string {
	if e.err == nil {
		return e.what
	}
	return fmt.Sprintf("%s: %v", e.what, e.err)
}

func (e *badResponseError) Unwrap() error { return e.err }

// notFoundError reports something the registry has but not in the form
// asked, such as a platform missing from an index. Error gives its message
// without the "not found at HOST" of a 404.
type notFoundError struct{ msg string }

func (e *notFoundError) Error() string { return e.msg }

// timeoutError marks a request that ran past Options.Timeout while the
// caller's context was still live, so it is retried as a timeout and not
// mistaken for a cancellation.
type timeoutError struct {
	err   error
	after time.Duration // the host's timeout; 0 when unknown
}

func (e *timeoutError) Error() string {
	if e.after > 0 {
		return fmt.Sprintf("request timed out after %v (registries[].timeout): %v", e.after, e.err)
	}
	return fmt.Sprintf("request timed out: %v", e.err)
}

func (e *timeoutError) Unwrap() error { return e.err }

// Timeout reports true, for net/http's url.Error that wraps it.
func (e *timeoutError) Timeout() bool { return true }

// limitError reports a repository that went past one of the host's caps
// (MaxPages, MaxTags, RepositoryTimeout). setting is its config key.
type limitError struct {
	setting string
	msg     string
}

func (e *limitError) Error() string { return e.msg }

// realmError refuses to send credentials over plain HTTP to a token realm
// (or any URL) on another host than the registry's.
type realmError struct {
	realm string // redacted URL
	host  string // the registry
}

func (e *realmError) Error() string {
	return fmt.Sprintf("refusing to send credentials over plain HTTP to %s, which is not on %s: only the registry's own host is allowed plain HTTP by insecure", e.realm, e.host)
}

func (e *realmError) realmHost() string {
	if h := realmHost(e.realm); h != "" {
		return h
	}
	return e.realm
}

// plainHTTPError refuses a plain HTTP request to a host not marked insecure.
type plainHTTPError struct{ host string }

func (e *plainHTTPError) Error() string {
	return fmt.Sprintf("refusing plain HTTP to %s: the host is not configured as insecure", e.host)
}

// verdict is what classify decides about an error.
type verdict struct {
	kind   Kind
	status int
	retry  bool
}

// classify decides an error's Kind and whether a retry may help. parent is
// the caller's context, which tells a cancellation from a per-request
// timeout.
func classify(parent context.Context, err error) verdict {
	if err == nil {
		return verdict{}
	}
	switch {
	case errors.Is(parent.Err(), context.Canceled):
		return verdict{kind: KindCanceled}
	case parent.Err() != nil:
		return verdict{kind: KindTimeout}
	}
	if v, ok := classifyStatus(err); ok {
		return v
	}
	var (
		credErr   *credentialError
		invalid   *invalidError
		notFound  *notFoundError
		bad       *badResponseError
		timeout   *timeoutError
		plain     *plainHTTPError
		netErr    net.Error
		dnsErr    *net.DNSError
		opErr     *net.OpError
		recordErr tls.RecordHeaderError
		unknownCA x509.UnknownAuthorityError
		hostErr   x509.HostnameError
		certErr   x509.CertificateInvalidError
		verifyErr *tls.CertificateVerificationError
		alertErr  tls.AlertError
		echErr    *tls.ECHRejectionError
	)
	var (
		limit  *limitError
		realm  *realmError
		cloud  *cloudauth.Error
		caFile *caFileError
	)
	var notWaited *notWaitedError
	switch {
	case errors.As(err, &notWaited) && notWaited.err == nil:
		return verdict{kind: KindRateLimited}
	case errors.As(err, &cloud):
		return verdict{kind: KindAuth}
	case errors.As(err, &caFile):
		return verdict{kind: KindTLS}
	case errors.As(err, &limit):
		return verdict{kind: KindLimit}
	case errors.As(err, &realm):
		return verdict{kind: KindTLS}
	case errors.As(err, &credErr):
		return verdict{kind: KindAuth}
	case errors.As(err, &invalid):
		return verdict{kind: KindInvalid}
	case errors.As(err, &notFound):
		return verdict{kind: KindNotFound}
	case errors.Is(err, io.ErrUnexpectedEOF):
		// The body ended before its declared length: a dropped connection
		// or a broken proxy. Another try may well get all of it.
		return verdict{kind: KindBadResponse, retry: true}
	case errors.As(err, &bad):
		return verdict{kind: KindBadResponse}
	case errors.As(err, &recordErr),
		errors.As(err, &unknownCA),
		errors.As(err, &hostErr),
		errors.As(err, &certErr),
		errors.As(err, &verifyErr),
		errors.As(err, &alertErr),
		errors.As(err, &echErr):
		return verdict{kind: KindTLS}
	case errors.As(err, &timeout),
		errors.Is(err, context.DeadlineExceeded),
		errors.As(err, &netErr) && netErr.Timeout():
		return verdict{kind: KindTimeout, retry: true}
	case errors.As(err, &dnsErr):
		return verdict{kind: KindNetwork, retry: !dnsErr.IsNotFound}
	case errors.Is(err, syscall.ECONNRESET),
		errors.Is(err, syscall.ECONNREFUSED),
		errors.Is(err, syscall.ECONNABORTED),
		errors.Is(err, syscall.EPIPE),
		errors.Is(err, syscall.EHOSTUNREACH),
		errors.Is(err, syscall.ENETUNREACH),
		errors.Is(err, io.EOF),
		errors.As(err, &opErr):
		return verdict{kind: KindNetwork, retry: true}
	case errors.Is(err, context.Canceled):
		// Canceled from below while parent is live: an http.Client gave
		// up on its own, which only a broken connection causes.
		return verdict{kind: KindNetwork, retry: true}
	case errors.As(err, &plain):
		// Checked last: ggcr's ping of a loopback registry also tries
		// plain HTTP, and when HTTPS failed for a reason of its own
		// (refused, timed out), that reason is the one to report.
		return verdict{kind: KindTLS}
	}
	return verdict{kind: KindBadResponse}
}

// classifyStatus classifies an HTTP error response, as ggcr's transport
// reports it for every request this package sends.
func classifyStatus(err error) (verdict, bool) {
	var te *transport.Error
	if !errors.As(err, &te) {
		return verdict{}, false
	}
	v := verdict{status: te.StatusCode}
	for _, d := range te.Errors {
		switch d.Code {
		case transport.NameUnknownErrorCode, transport.ManifestUnknownErrorCode:
			v.kind = KindNotFound
			return v, true
		case transport.TooManyRequestsErrorCode:
			v.kind, v.retry = KindRateLimited, true
			return v, true
		case transport.UnauthorizedErrorCode, transport.DeniedErrorCode:
			v.kind = KindAuth
			return v, true
		}
	}
	switch code := te.StatusCode; {
	case code == http.StatusUnauthorized, code == http.StatusForbidden:
		v.kind = KindAuth
	case code == http.StatusNotFound:
		v.kind = KindNotFound
	case code == http.StatusTooManyRequests:
		v.kind, v.retry = KindRateLimited, true
	case code == http.StatusNotImplemented:
		v.kind = KindServer
	case code >= 500 && code <= 599:
		v.kind, v.retry = KindServer, true
	default:
		v.kind = KindBadResponse
	}
	return v, true
}
