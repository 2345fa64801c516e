package gitwriter

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/transport"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
)

// ErrBranchNotFound is wrapped by the error of Open and Update when the
// tracked branch does not exist on the remote.
var ErrBranchNotFound = errors.New("branch not found")

// ErrConflict is wrapped by the error of Update when the remote branch kept
// moving while Update tried to push, and Update.MaxAttempts ran out.
var ErrConflict = errors.New("remote branch kept moving")

// ForeignCommitError is returned by Update when the push branch on the
// remote ends in a commit imagebump did not make: someone pushed to it
// (a reviewer's fix, a forge's "update branch"), or a branch of that name
// existed before imagebump. imagebump rebuilds its push branch on the
// tracked branch at every bump, which would drop that commit, so the
// branch is left as it is and nothing is pushed.
type ForeignCommitError struct {
	// Remote is the remote URL with any credential removed.
	Remote string
	// Branch is the push branch; Commit its tip, abbreviated, and Hash
	// in full.
	Branch, Commit, Hash string
	// Why says how the commit is not imagebump's: "committed by NAME
	// <EMAIL>", "a merge commit, by ...".
	Why string
	// Subject is the first line of the commit's message.
	Subject string
}

// Error names the commit and says what to do.
func (e *ForeignCommitError) Error() string {
	return fmt.Sprintf("not pushed: %s branch %q ends in commit %s (%q), which imagebump did not make (%s); "+
		"imagebump rebuilds its push branch on every bump, which would drop that commit, so it leaves the branch, and any pull request from it, as they are. "+
		"Keep that commit where it belongs (merge the pull request, when one is open; else put the commit on another branch, or drop it), then delete the branch "+
		"(the next bump makes it again; GitHub, GitLab and Gitea can delete a merged branch by themselves), "+
		"or give push.branch a name that only imagebump pushes to. "+
		"Deleting the branch of an open pull request closes it on GitHub and Gitea, and imagebump does not propose a closed pull request's bumps again until they change",
		e.Remote, e.Branch, e.Commit, e.Subject, e.Why)
}

// AuthError reports that the remote refused the credentials, or that none
// were given where the remote requires them.
type AuthError struct {
	// Remote is the remote URL with any credential removed.
	Remote string
	// Sent says which credentials were offered, by their files, never
	// their content: "a token from /run/secrets/git-token", say.
	Sent string
	// RedirectedTo is the URL the remote redirected the operation to, if
	// it did; OtherOrigin is true when that is another host or port, where
	// the credentials were not sent.
	RedirectedTo string
	OtherOrigin  bool
	// Err is the underlying error.
	Err error
	// SSHUser is the user an ssh remote is reached as; "" over http(s).
	SSHUser string
}

// Error says what was sent and what to check; the error wrapping it names
// the remote and the operation.
func (e *AuthError) Error() string {
	sent := e.Sent
	if sent == "" {
		sent = "no credentials"
	}
	if e.OtherOrigin {
		return "credentials not sent: the remote redirected to " + e.RedirectedTo + ", another host or port, and credentials never follow a redirect there; " +
			"if the repository is there now, set git.url to it: " + e.Err.Error()
	}
	if e.RedirectedTo != "" {
		sent += " to " + e.RedirectedTo + ", where the remote redirected (set git.url to it)"
	}
	if e.SSHUser != "" {
		return "credentials refused or missing: sent " + sent + " as the user " + e.SSHUser + "; check that the server takes that key for that user (a deploy key with write access on GitHub, GitLab and Gitea, whose user is git; another user goes in the URL, as ssh://USER@host/path) and that the URL is right: " + e.Err.Error()
	}
	return "credentials refused or missing: sent " + sent + "; check that the file holds a current credential with write access to this repository (GitHub: contents read and write; GitLab: write_repository; Gitea: repository write), that it has not expired, and that the URL is right: " + e.Err.Error()
}

// Unwrap returns the underlying error.
func (e *AuthError) Unwrap() error { return e.Err }

// HostKeyError reports that the SSH server's host key was not accepted:
// either the host is not in the known_hosts file, or it is there with
// another key (the key changed, or someone is in the middle).
type HostKeyError struct {
	// Remote is the remote URL with any credential removed.
	Remote string
	// Host is the host and port the key was checked for.
	Host string
	// Unknown is true when the known_hosts file has no key for Host, false
	// when it has a different one.
	Unknown bool
	// File is the known_hosts file.
	File string
	// KnownTypes and ServerTypes are set when the server offered no host
	// key of a type the known_hosts file has for it: the types the file
	// lets it use, and those it offered.
	KnownTypes, ServerTypes []string
	// Err is the underlying error.
	Err error
}

// Error names the host and says what to do; the error wrapping it names
// the remote and the operation.
func (e *HostKeyError) Error() string {
	file := "the known hosts file"
	if e.File != "" {
		file += " " + e.File
	}
	if len(e.ServerTypes) > 0 {
		// Err says the same in the SSH package's words.
		return "ssh host key of " + e.Host + ": " + file + " accepts only " + strings.Join(e.KnownTypes, ", ") + " for it, and the server offers only " + strings.Join(e.ServerTypes, ", ") +
			" (it may have dropped that key type, or it may not be the server you expect); check the server's published fingerprints and replace its line there (" + keyscan(e.Host) + " prints its keys)"
	}
	if e.Unknown {
		return "ssh host key of " + e.Host + " is not in " + file + "; add the server's key to it (" + keyscan(e.Host) + " prints it; a host on another port than 22 is written [host]:port there): " + e.Err.Error()
	}
	return "ssh host key of " + e.Host + " does not match the key in " + file + "; " +
		"if the server's key really changed, replace it there (" + keyscan(e.Host) + "): " + e.Err.Error()
}

// keyscan is the ssh-keyscan command line that prints the keys of
// hostport (host:port).
func keyscan(hostport string) string {
	host, port, err := net.SplitHostPort(hostport)
	if err != nil {
		return "ssh-keyscan " + hostport
	}
	if port == "22" {
		return "ssh-keyscan " + host
	}
	return "ssh-keyscan -p " + port + " " + host
}

// Unwrap returns the underlying error.
func (e *HostKeyError) Unwrap() error { return e.Err }

// netError turns an error of a network operation (op, such as "cloning",
// bounded by limit) on the remote into one that names the remote
// (redacted) and the branch,
// with a type callers can branch on where it matters.
func (r *Repo) netError(ctx context.Context, op, branch string, limit time.Duration, err error) error {
	if err == nil {
		return nil
	}
	err = r.secrets.Error(err)
	if errors.Is(err, transport.ErrAuthenticationRequired) || errors.Is(err, transport.ErrAuthorizationFailed) || errors.Is(err, transport.ErrRepositoryNotFound) {
		// go-git put the whole body of the HTTP answer in the message.
		err = &shortError{msg: shortAnswer(err.Error()), err: err}
	}
	var hk *HostKeyError
	var ue *plumbing.UnexpectedError
	var he *githttp.Err
	switch {
	case r.unwritable(err):
		// Writing the working copy failed (a full disk, a folder the
		// process may not write): the remote is not at fault.
		return fmt.Errorf("%s %s (branch %q): %s; the remote is not at fault: %w", op, r.remote, branch, r.unwritableHint(err), err)
	case errors.As(err, &ue) && errors.As(ue.Err, &he) && he.StatusCode() >= 500:
		return fmt.Errorf("%s %s (branch %q): the server failed on its side (HTTP %d); the next cycle (or run) tries again: %w", op, r.remote, branch, he.StatusCode(), err)
	case errors.As(err, &hk):
		return fmt.Errorf("%s %s: %w", op, r.remote, err)
	case isAuthError(err):
		ae := &AuthError{Remote: r.remote, Sent: r.opts.Auth.describe(r.kind), SSHUser: r.sshUser, Err: err}
		var rd *redirectedError
		if errors.As(err, &rd) {
			ae.RedirectedTo, ae.OtherOrigin = rd.to, rd.otherOrigin
		}
		return fmt.Errorf("%s %s (branch %q): %w", op, r.remote, branch, ae)
	case isBranchMissing(err):
		return fmt.Errorf("%s %s: remote has no branch %q (check git.branch, or whether the branch was renamed or deleted): %w", op, r.remote, branch, ErrBranchNotFound)
	case errors.Is(err, transport.ErrRepositoryNotFound):
		why := "no repository at that URL, or the credential may not see it (forges answer 404 for a repository a token cannot read)"
		if strings.HasPrefix(op, "pushing") {
			why = "no repository at that URL, or the credential may read but not write it (some forges answer 404 then): check that it may push"
		}
		return fmt.Errorf("%s %s (branch %q): %s: %w", op, r.remote, branch, why, err)
	case errors.Is(err, transport.ErrEmptyRemoteRepository):
		return fmt.Errorf("%s %s: the remote repository is empty, branch %q does not exist: %w", op, r.remote, branch, ErrBranchNotFound)
	case ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("%s %s (branch %q): timed out after %v (git.timeout raises it): %w", op, r.remote, branch, limit, err)
	case ctx.Err() == nil && isUnreachable(err):
		return fmt.Errorf("%s %s (branch %q): %w; check that the server is reachable from here (name, port, firewall, HTTPS_PROXY/NO_PROXY) and up; the next cycle (or run) tries again", op, r.remote, branch, err)
	}
	return fmt.Errorf("%s %s (branch %q): %w", op, r.remote, branch, err)
}

// unwritable reports whether err is the failure of a file operation in
// the working copy's folder: a full disk, a file size limit, a folder
// this user may not write. Nothing is damaged, and the remote is not at
// fault: the cycle fails, and the next one tries again.
func (r *Repo) unwritable(err error) bool {
	var pe *fs.PathError
	return errors.As(err, &pe) && r.dir != "" && strings.HasPrefix(filepath.Clean(pe.Path), filepath.Clean(r.dir)+string(filepath.Separator))
}

// unwritableHint says, for an error unwritable reports, what failed and
// what to do.
func (r *Repo) unwritableHint(err error) string {
	what := "free space, or let this user write it"
	if errors.Is(err, syscall.EFBIG) {
		what = "a file size limit (ulimit -f) stopped a write: raise it"
	}
	where := "see --workdir"
	if r.tempDir {
		where = "it is a temporary folder: free space under TMPDIR, or set TMPDIR to a folder with room"
	}
	return fmt.Sprintf("the working copy in %s could not be written (%s; %s)", r.dir, what, where)
}

// isUnreachable reports an error of the connection to the remote: refused,
// reset, cut before an answer (EOF), a name that does not resolve, a host
// or network that cannot be reached.
func isUnreachable(err error) bool {
	var (
		dns    *net.DNSError
		op     *net.OpError
		alert  tls.AlertError
		record tls.RecordHeaderError
		verify *tls.CertificateVerificationError
		ca     x509.UnknownAuthorityError
		host   x509.HostnameError
	)
	if errors.As(err, &alert) || errors.As(err, &record) || errors.As(err, &verify) || errors.As(err, &ca) || errors.As(err, &host) {
		return false // reached, and refused on TLS
	}
	return errors.As(err, &dns) || errors.As(err, &op) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, syscall.EHOSTUNREACH) || errors.Is(err, syscall.ENETUNREACH) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
}

// shortError is an error whose text is cut (see shortAnswer), keeping the
// original for errors.Is and errors.As.
type shortError struct {
	msg string
	err error
}

func (e *shortError) Error() string { return e.msg }
func (e *shortError) Unwrap() error { return e.err }

// maxAnswer bounds the first line of an error that repeats a server's
// answer.
const maxAnswer = 400

// htmlStart finds where an HTML page begins in a message.
var htmlStart = regexp.MustCompile(`(?i)<(!doctype|html|head|body)\b`)

// htmlTitle finds an HTML page's title.
var htmlTitle = regexp.MustCompile(`(?is)<title[^>]*>(.*?)</title>`)

// shortAnswer cuts what a server answered (go-git puts the whole body of
// an HTTP error in its message: a proxy's or a firewall's HTML page, many
// kilobytes) to its first line, at most maxAnswer bytes, and an HTML page
// to its title.
func shortAnswer(msg string) string {
	if i := htmlStart.FindStringIndex(msg); i != nil {
		page := "an HTML page"
		if m := htmlTitle.FindStringSubmatch(msg[i[0]:]); m != nil {
			page += ": " + strings.Join(strings.Fields(m[1]), " ")
		}
		msg = strings.TrimRight(msg[:i[0]], " :\n") + ": " + page
	}
	msg = strings.TrimSpace(msg)
	head, rest, cut := strings.Cut(msg, "\n")
	if cut {
		rest = strings.TrimSpace(rest)
		cut = rest != ""
	}
	if len(head) > maxAnswer {
		head, cut = strings.ToValidUTF8(head[:maxAnswer], ""), true
	}
	if cut {
		head += " (cut)"
	}
	return head
}

// isAuthError reports whether err says the remote refused or wanted
// credentials. The SSH package has no typed error for a refused key, so
// its message is matched.
func isAuthError(err error) bool {
	if errors.Is(err, transport.ErrAuthenticationRequired) || errors.Is(err, transport.ErrAuthorizationFailed) {
		return true
	}
	return strings.Contains(err.Error(), "ssh: unable to authenticate")
}

func isBranchMissing(err error) bool {
	var nm git.NoMatchingRefSpecError
	return errors.As(err, &nm) || errors.Is(err, plumbing.ErrReferenceNotFound)
}
