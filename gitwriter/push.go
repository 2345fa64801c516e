package gitwriter

import (
	"context"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp/capability"
	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-git/go-git/v5/plumbing/transport/client"

	"github.com/imagebump/imagebump/internal/printable"
	"github.com/imagebump/imagebump/internal/redact"
)

// Pushes speak the receive-pack protocol through go-git's transports, but
// choose the objects to send themselves. go-git's Remote.Push works out
// what the remote lacks by walking every object reachable from the
// remote's refs, which reads every tree of the repository: seconds on a
// large one, for a commit of a few files. A commit that imagebump made has
// the remote's head as its parent, and the objects it adds are exactly
// the ones it wrote (Repo.written): those are sent, nothing is walked.

// The pack holds each object whole, without deltas against the others.
// A delta window of 10 (git's default) saved 3% of the pack of a policy
// move (92 objects, 100 against 104 kB) for 17 ms more of encoding, and
// 25% of a first run's (8,041 objects, 2.2 against 2.9 MB) for a second
// more: a push only gains from it on a link slower than 1.6 Mbit/s (the
// policy move) to 6 Mbit/s (the first run).
// Git saves far more by sending deltas against the objects the remote
// already has (a thin pack); go-git's encoder cannot.

// maxAncestorWalk bounds the walk that checks a push is a fast-forward.
const maxAncestorWalk = 1000

// push updates ref dst on the remote to commit, sending the objects the
// last commit wrote. Without a lease the update must be a fast-forward
// (or create dst); with one, dst must hold lease.Hash (zero: must not
// exist) and is then forced. A remote already at commit is a success.
func (r *Repo) push(ctx context.Context, branch string, dst plumbing.ReferenceName, commit plumbing.Hash, lease *git.ForceWithLease) error {
	if r.beforePush != nil {
		r.beforePush()
	}
	objects := r.written
	started := time.Now()
	err := r.network(ctx, "pushing to", branch, func(ctx context.Context, o netOpts) error {
		ep, err := transport.NewEndpoint(r.url)
		if err != nil {
			return err
		}
		ep.Proxy = o.proxy
		tr, err := client.NewClient(ep)
		if err != nil {
			return err
		}
		sess, err := tr.NewReceivePackSession(ep, o.auth)
		if err != nil {
			return err
		}
		defer sess.Close()
		ar, err := sess.AdvertisedReferencesContext(ctx)
		if err != nil {
			return err
		}
		old := ar.References[dst.String()]
		if old == commit {
			return nil
		}
		switch {
		case lease != nil && old != lease.Hash:
			return fmt.Errorf("non-fast-forward update: %s moved on the remote since it was read", dst)
		case lease == nil && !old.IsZero() && !r.isAncestor(old, commit):
			return fmt.Errorf("%w: %s", git.ErrNonFastForwardUpdate, dst)
		}
		req := packp.NewReferenceUpdateRequestFromCapabilities(ar.Capabilities)
		if len(r.pushOptions) > 0 && ar.Capabilities.Supports(capability.PushOptions) {
			_ = req.Capabilities.Set(capability.PushOptions)
			for k, v := range r.pushOptions {
				req.Options = append(req.Options, &packp.Option{Key: k, Value: v})
			}
		}
		req.Commands = []*packp.Command{{Name: dst, Old: old, New: commit}}
		// What the server says on the side band (a hook's reason for
		// refusing the push, "protected branch") goes into the error.
		said := remoteText{secrets: &r.secrets}
		switch {
		case ar.Capabilities.Supports(capability.Sideband64k):
			_ = req.Capabilities.Set(capability.Sideband64k)
		case ar.Capabilities.Supports(capability.Sideband):
			_ = req.Capabilities.Set(capability.Sideband)
		}
		if ar.Capabilities.Supports(capability.Quiet) {
			_ = req.Capabilities.Set(capability.Quiet)
		}
		req.Progress = &said
		rs, err := r.sendPack(ctx, sess, req, objects)
		if err == nil && rs != nil {
			err = rs.Error()
		}
		if err != nil {
			return r.refused(dst, said.wrap(err))
		}
		// A hook may say something worth reading on a push it accepts (a
		// repository moving, a deprecation).
		if lines := said.lines(); len(lines) > 0 {
			r.log.Info("the server said, accepting the push", "ref", dst.String(), "text", strings.Join(lines, " / "))
		}
		return nil
	})
	if err != nil {
		return err
	}
	// Record where the remote branch is now, as a fetch would, once no
	// ref can name an object not yet stored, or not yet durable.
	if dst.IsBranch() && r.waitStored(false) == nil {
		_ = r.setRefLater(plumbing.NewHashReference(r.trackingRef(dst.Short()), commit))
	}
	r.log.Debug("push accepted", "push_branch", branch, "ref", dst.String(), "objects", len(objects), "duration", time.Since(started).Round(time.Millisecond))
	return nil
}

// refused adds to err, a push's to dst, what to do when the server
// refused to update the tracked branch (go-git's report: "command error
// on REF: ..."): most often it is protected, and takes changes by review.
func (r *Repo) refused(dst plumbing.ReferenceName, err error) error {
	if dst != plumbing.NewBranchReferenceName(r.branch) || !strings.Contains(err.Error(), "command error on "+dst.String()+": ") {
		return err
	}
	return fmt.Errorf("%w; if %s is protected, have imagebump push to a branch of its own and open a pull request there (push.branch with push.pullRequest: docs/pull-requests.md)", err, r.branch)
}

// sendPack sends req with a pack of objects and returns the remote's
// report.
func (r *Repo) sendPack(ctx context.Context, sess transport.ReceivePackSession, req *packp.ReferenceUpdateRequest, objects []newObject) (*packp.ReportStatus, error) {
	rd, wr := io.Pipe()
	req.Packfile = rd
	done := make(chan error, 1)
	go func() {
		// Ends when the pack is written or the reader is closed below.
		// Without deltas, the kind of delta the remote takes is moot.
		err := writePack(wr, objects)
		_ = wr.CloseWithError(err)
		done <- err
	}()
	rs, err := sess.ReceivePack(ctx, req)
	if err != nil {
		_ = rd.CloseWithError(err)
		<-done
		return nil, err
	}
	if err := <-done; err != nil && !errors.Is(err, io.ErrClosedPipe) {
		return nil, err
	}
	return rs, nil
}

// isAncestor reports whether commit anc is commit c or one of its
// ancestors in the local store, within maxAncestorWalk commits. A shallow
// history ends the walk where the local store ends.
func (r *Repo) isAncestor(anc, c plumbing.Hash) bool {
	found := false
	r.walkAncestors([]plumbing.Hash{c}, func(h plumbing.Hash, _ func() []plumbing.Hash) bool {
		found = found || h == anc
		return found
	})
	return found
}

// maxRemoteText bounds what is kept of the server's side band: its end,
// where a refusal's reason comes.
const maxRemoteText = 8 << 10

// remoteText keeps what a server writes on the side band while a push
// runs: git's progress, which the quiet capability turns off where it is
// offered, and the output of its hooks, which explains a refusal.
type remoteText struct {
	b   []byte
	cut bool // the start was dropped
	// secrets are removed by value before anything is cut.
	secrets *redact.Secrets
}

func (t *remoteText) Write(p []byte) (int, error) {
	t.b = append(t.b, p...)
	if over := len(t.b) - maxRemoteText; over > 0 {
		t.b, t.cut = t.b[over:], true
	}
	return len(p), nil
}

// progressLine matches the progress lines git servers write.
var progressLine = regexp.MustCompile(`^(Resolving deltas|Counting objects|Compressing objects|Writing objects|Enumerating objects|Total \d+|Processing changes|Checking connectivity|Unpacking objects)\b`)

// redactTokens replaces each word of line that looks like it may be a
// credential with redact.Placeholder. A hook is the server's code: it may
// print any secret the server knows, the forge's token or a registry's
// password among them, which this package does not hold to remove by
// value. A word of 12 or more characters (quotes and brackets aside) goes
// when it has a digit, a character other than letters and - . / :, a
// change of case inside it, or 24 characters and no slash. Words of prose,
// branch names, paths without digits and short hashes stay; a credential
// of letters alone, shorter than 24 and of one case, is not caught.
func redactTokens(line string) string {
	words := strings.Fields(line)
	for i, w := range words {
		if credentialShaped(strings.Trim(w, `"'()[]{}<>,;`)) {
			words[i] = redact.Placeholder
		}
	}
	return strings.Join(words, " ")
}

func credentialShaped(w string) bool {
	if utf8.RuneCountInString(w) < 12 {
		return false
	}
	mixed := false
	for i, r := range w {
		switch {
		case unicode.IsDigit(r):
			return true
		case !unicode.IsLetter(r) && !strings.ContainsRune("-./:", r):
			return true
		case i > 0 && unicode.IsUpper(r) && unicode.IsLower(rune(w[i-1])):
			mixed = true
		}
	}
	return mixed || len(w) >= 24 && !strings.Contains(w, "/")
}

// lines returns what the server said, without progress and blank lines,
// with the secrets removed by value and every word shaped like a
// credential redacted: at most 10 lines of at most 200 bytes.
func (t *remoteText) lines() []string {
	text := string(t.b)
	if t.cut {
		// The first line lost its start, which may hold part of a secret.
		_, text, _ = strings.Cut(text, "\n")
	}
	text = t.secrets.Text(text)
	var out []string
	for _, l := range strings.FieldsFunc(text, func(r rune) bool { return r == '\n' || r == '\r' }) {
		l = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(l), "remote:"))
		if l == "" || progressLine.MatchString(l) {
			continue
		}
		l = redactTokens(l)
		l = printable.Cut(l, 200)
		out = append(out, l)
	}
	// The end says why.
	return out[max(0, len(out)-10):]
}

// wrap adds what the server said to err, a failed push. A server's error
// on the side band's error channel, which go-git puts in err itself
// ("unexpected error: ..."), gets its credential-shaped words redacted too.
func (t *remoteText) wrap(err error) error {
	if err == nil {
		return nil
	}
	if strings.Contains(err.Error(), "unexpected error: ") {
		err = &serverError{err: err}
	}
	lines := t.lines()
	if len(lines) == 0 {
		return err
	}
	return fmt.Errorf("%w; the server said: %s", err, strings.Join(lines, " / "))
}

// serverError is an error holding text a server wrote, shown with its
// credential-shaped words redacted.
type serverError struct{ err error }

func (e *serverError) Error() string { return redactTokens(e.err.Error()) }
func (e *serverError) Unwrap() error { return e.err }
