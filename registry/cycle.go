package registry

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// Cycle is one pass of a Client over its registries: the repositories a
// cycle (a plan, a run, one tick of serve) lists and resolves. It has the
// Client's methods and shares its caches (challenges, tokens, rate limits),
// and it adds one thing: it remembers, per host, whether the host has
// stopped answering, so that a host that is down costs the cycle about one
// timeout, not one timeout per repository and retry.
//
// Make one with Client.Cycle at the start of each cycle and drop it at the
// end; the next cycle's Cycle tries every host afresh. The Client's own
// Tags, Digest and Scan each run in a Cycle of their own. A Cycle is safe
// for concurrent use.
type Cycle struct {
	c *Client

	mu       sync.Mutex
	breakers map[*host]*breaker
}

// Cycle returns a new Cycle of c.
func (c *Client) Cycle() *Cycle {
	return &Cycle{c: c, breakers: map[*host]*breaker{}}
}

func (y *Cycle) breaker(h *host) *breaker {
	y.mu.Lock()
	defer y.mu.Unlock()
	b, ok := y.breakers[h]
	if !ok {
		b = &breaker{host: h.name, budget: h.timeout}
		y.breakers[h] = b
	}
	return b
}

// breaker is what a Cycle knows about one host: whether it has answered
// any request in the cycle, since when it has not been answering, and,
// once it is held down, the error every request to it now fails with.
//
// A request that gets no answer (connection refused, reset or
// unreachable, name not found, no response within the timeout) is
// retried, with backoff, only while the host's first unanswered request
// of the cycle was sent less than one timeout ago, and within MaxRetries.
// After that the host is held down for the rest of the cycle. A host that
// has answered earlier in the cycle is not judged on one slow request: its
// requests get all their retries, and it is held down only once one of
// them has used them all. Errors that come with an answer (HTTP statuses,
// bad bodies, TLS refusals) never hold a host down, with two exceptions:
// a host that asks to be left alone, and one that serves nothing.
//
// A host that answers 429, or sends a Retry-After, is waited for as it
// asks only within one timeout of its first such answer in the cycle. A
// wait that would end later is not waited: the host is held down, its
// remaining repositories fail at once, and the next cycle tries again.
// So a registry that rate-limits costs the other registries' bumps about
// one timeout, as one that is down does, where waiting out every
// Retry-After of every repository would hold them back for minutes.
//
// Server errors (5xx) are retried as usual on a host that has served a
// repository in the cycle: one repository may be broken on its side. On
// a host that has served none, they are retried only within one timeout
// of its first server error, after which it is held down: a registry
// whose storage is failing would otherwise cost each of its repositories
// its whole backoff.
type breaker struct {
	host   string
	budget time.Duration // the host's timeout

	mu         sync.Mutex
	alive      bool      // the host answered a request in this cycle
	served     bool      // the host served a repository in this cycle (its tags, a manifest, or a 404)
	firstMiss  time.Time // when the first unanswered request was sent; zero: none pending
	firstLimit time.Time // when the host first asked to wait in this cycle; zero: never
	firstFail  time.Time // when the host first answered with a server error in this cycle; zero: never
	down       error     // set: every request fails with it
}

// check returns the error requests to a host held down fail with, or nil.
func (b *breaker) check() error {
	if b == nil {
		return nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.down
}

// answered records that the host answered a request.
func (b *breaker) answered() {
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.alive = true
	b.firstMiss = time.Time{}
}

// missed records that a request sent at sent got no answer, and reports
// whether it may be retried after delay; last says the request has no
// retries left. When it may not, the host is held down with err, unless
// another request already did that.
func (b *breaker) missed(sent time.Time, delay time.Duration, last bool, err error) bool {
	if b == nil {
		return !last
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.down != nil {
		return false
	}
	if b.firstMiss.IsZero() || sent.Before(b.firstMiss) {
		b.firstMiss = sent
	}
	outOfTime := !b.alive && time.Since(b.firstMiss)+delay >= b.budget
	if !last && !outOfTime {
		return true
	}
	b.down = &hostDownError{host: b.host, err: err}
	return false
}

// serve records that the host served a repository: it is not failing,
// and a rate limit it sets from now on counts afresh.
func (b *breaker) serve() {
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.served = true
	b.firstLimit = time.Time{}
}

// failing records that a request failed with a server error, err, and
// reports whether it may be retried after delay. When it may not, the
// host is held down with err.
func (b *breaker) failing(delay time.Duration, err error) bool {
	if b == nil {
		return true
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.down != nil {
		return false
	}
	if b.served {
		return true
	}
	if b.firstFail.IsZero() {
		b.firstFail = time.Now()
	}
	if time.Since(b.firstFail)+delay >= b.budget {
		b.down = &hostDownError{host: b.host, err: err, why: downFailing, since: b.budget}
		return false
	}
	return true
}

// limited records that a request's failure, err, came with a request to
// wait delay before the next (asked: the host's Retry-After; otherwise
// the backoff after a 429), and reports whether the request may be
// retried after delay; last says a rate-limited request has no retries
// left. When it may not, the host is held down, and notWaited is the
// error to report instead of err, or nil when err says enough (no retries
// were left, or another request put the host down first). The budget
// counts from the first refusal since the host last served a repository:
// a 429 now and then in a long cycle is waited for each time.
func (b *breaker) limited(delay time.Duration, asked, last bool, err error) (ok bool, notWaited error) {
	if b == nil {
		return !last, nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.down != nil {
		return false, nil
	}
	if b.firstLimit.IsZero() {
		b.firstLimit = time.Now()
	}
	if last {
		b.down = &hostDownError{host: b.host, err: err, why: downLimited}
		return false, nil
	}
	if left := b.budget - time.Since(b.firstLimit); delay >= left {
		nw := &notWaitedError{host: b.host, wait: delay, asked: asked, budget: b.budget, spent: time.Since(b.firstLimit), err: err}
		b.down = &hostDownError{host: b.host, err: nw, why: downLimited}
		return false, nw
	}
	return true, nil
}

// pause reports whether a request may wait d for the host's Retry-After
// pause to end, as limited does; when it may not, it returns the error
// the request fails with, unsent.
func (b *breaker) pause(d time.Duration) error {
	if b == nil {
		return nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.down != nil {
		return b.down
	}
	if b.firstLimit.IsZero() {
		b.firstLimit = time.Now()
	}
	if left := b.budget - time.Since(b.firstLimit); d >= left {
		b.down = &hostDownError{host: b.host, err: &notWaitedError{host: b.host, wait: d, asked: true, budget: b.budget, spent: time.Since(b.firstLimit)}, why: downLimited}
		return b.down
	}
	return nil
}

// hostDownError is what requests to a host held down fail with: the error
// that put it down, unsent, and why it did.
type hostDownError struct {
	host  string
	err   error
	why   downReason
	since time.Duration // for downFailing: how long it failed
}

// downReason is why a breaker holds its host down.
type downReason int

const (
	downSilent  downReason = iota // it stopped answering
	downLimited                   // it asked to be left alone (429, Retry-After)
	downFailing                   // it answered with nothing but server errors
)

func (e *hostDownError) Error() string {
	switch e.why {
	case downLimited:
		return fmt.Sprintf("not tried: %s asked to be left alone: %v", e.host, e.err)
	case downFailing:
		return fmt.Sprintf("not tried: %s has answered nothing but server errors in this cycle, and the %v a cycle gives it (registries[].timeout) is spent; its last answer: %v", e.host, e.since, e.err)
	}
	return fmt.Sprintf("not tried: %s stopped answering earlier in this cycle: %v", e.host, e.err)
}

func (e *hostDownError) Unwrap() error { return e.err }

// notWaitedError is a host's request to wait (a Retry-After, or the
// pause it set) that reached past what a cycle waits for one host: the
// wait, err the answer that asked for it (nil: an earlier answer did).
type notWaitedError struct {
	host   string
	wait   time.Duration
	asked  bool // by a Retry-After; otherwise the backoff after 429s
	budget time.Duration
	spent  time.Duration // since the host's first refusal
	err    error
}

func (e *notWaitedError) Error() string {
	round := func(d time.Duration) time.Duration {
		if d >= time.Second {
			return d.Round(time.Second)
		}
		return d.Round(time.Millisecond)
	}
	var s string
	switch {
	case e.asked && e.spent >= time.Second:
		s = fmt.Sprintf("%s asked to wait %v more (Retry-After, at most the host's backoff cap) after %v of refusals, longer together than a cycle waits for one registry (%v, its registries[].timeout), so it was not waited for", e.host, round(e.wait), round(e.spent), e.budget)
	case e.asked:
		s = fmt.Sprintf("%s asked to wait %v (Retry-After, at most the host's backoff cap), longer than a cycle waits for one registry (%v, its registries[].timeout), so it was not waited for", e.host, round(e.wait), e.budget)
	default:
		s = fmt.Sprintf("%s kept answering 429 Too Many Requests for longer than a cycle waits for one registry (%v, its registries[].timeout), so it was not asked again", e.host, e.budget)
	}
	if e.err != nil {
		s += ": " + e.err.Error()
	}
	return s
}

func (e *notWaitedError) Unwrap() error { return e.err }

// noAnswerError marks a request that got no response at all: the
// connection failed or no response came within the timeout.
type noAnswerError struct{ err error }

func (e *noAnswerError) Error() string { return e.err.Error() }
func (e *noAnswerError) Unwrap() error { return e.err }

// Timeout passes on whether the request timed out: net/http's url.Error
// asks its cause directly, and a TLS handshake that timed out (net/http's
// own 10 s limit) would otherwise look like a TLS failure.
func (e *noAnswerError) Timeout() bool {
	var t interface{ Timeout() bool }
	return errors.As(e.err, &t) && t.Timeout()
}

type breakerKey struct{}

// withBreaker returns ctx carrying b, for the host's transport to report
// answers to.
func withBreaker(ctx context.Context, b *breaker) context.Context {
	return context.WithValue(ctx, breakerKey{}, b)
}

// breakerFrom returns the breaker ctx carries, or nil.
func breakerFrom(ctx context.Context) *breaker {
	b, _ := ctx.Value(breakerKey{}).(*breaker)
	return b
}
