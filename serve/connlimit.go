package serve

import (
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"
)

// connLimit bounds the HTTP connections open at once, as
// netutil.LimitListener does, so that clients holding connections cannot
// take every file descriptor the cycles need. Unlike it, a new connection
// at the cap does not wait for one to close by itself: once it has been
// accepted, the connection that has waited longest without a request (a
// keep-alive left idle, or one that has not sent a whole request header
// within newGrace) is
// closed to make room. Otherwise 512 idle keep-alives, from a pooling
// client or on purpose, would hold /healthz and the webhooks unanswered
// until their idle timeout, and a liveness probe would restart the pod.
//
// The server's ConnState hook (track) says which connections are idle. A
// connection whose request is being read or served is never chosen; with
// none to choose, the new connection waits for a slot, and chooses again
// each time a connection goes idle.
type connLimit struct {
	net.Listener
	sem  chan struct{}
	done chan struct{}
	log  *slog.Logger

	closeOnce sync.Once
	mu        sync.Mutex
	conns     map[net.Conn]connState // connections with no request in flight
	idle      chan struct{}          // signalled when a connection goes idle
	warned    time.Time              // the last warning that the cap was reached
}

// connState is when a connection entered its state, and whether that is
// StateIdle (else StateNew: accepted, no request read yet).
type connState struct {
	since time.Time
	idle  bool
}

// newGrace is how long a new connection may go without a whole request
// header before it may be closed to make room: a client sends its request
// at once. (net/http counts a connection active from its first header
// read whole.)
const newGrace = 2 * time.Second

func newConnLimit(ln net.Listener, n int, log *slog.Logger) *connLimit {
	return &connLimit{
		Listener: ln,
		sem:      make(chan struct{}, n),
		done:     make(chan struct{}),
		log:      log,
		conns:    map[net.Conn]connState{},
		idle:     make(chan struct{}, 1),
	}
}

// Accept accepts a connection, then takes a slot for it, making one if
// every slot is taken.
func (l *connLimit) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	warned := false
	for {
		select {
		case l.sem <- struct{}{}:
			return l.limited(c), nil
		default:
		}
		if !warned {
			warned = true
			l.warn()
		}
		if l.evict() {
			continue
		}
		// Nothing to close: wait for a slot, or for a connection that
		// goes idle (or a new one's grace to end).
		select {
		case l.sem <- struct{}{}:
			return l.limited(c), nil
		case <-l.idle:
		case <-time.After(newGrace / 2):
		case <-l.done:
			c.Close()
			return nil, net.ErrClosed
		}
	}
}

// limited wraps c, which holds a slot, to free it when closed.
func (l *connLimit) limited(c net.Conn) net.Conn {
	lc := &limitedConn{Conn: c}
	lc.release = sync.OnceFunc(func() {
		l.forget(lc)
		<-l.sem
	})
	return lc
}

// Close closes the listener and ends the wait of a blocked Accept.
func (l *connLimit) Close() error {
	err := l.Listener.Close()
	l.closeOnce.Do(func() { close(l.done) })
	return err
}

// warn logs, at most once a minute, that the cap was reached.
func (l *connLimit) warn() {
	l.mu.Lock()
	now := time.Now()
	warn := now.Sub(l.warned) > time.Minute
	if warn {
		l.warned = now
	}
	l.mu.Unlock()
	if warn {
		l.log.Warn("HTTP connections at their cap; closing the one idle longest for each new one (a client keeping many connections open?)",
			"component", "http", "cap", cap(l.sem))
	}
}

// evict closes the connection idle longest, a keep-alive or a new one
// silent for newGrace, and reports whether there was one; its slot is free
// when evict returns.
func (l *connLimit) evict() bool {
	now := time.Now()
	l.mu.Lock()
	var (
		oldest net.Conn
		since  time.Time
	)
	for c, st := range l.conns {
		if !st.idle && now.Sub(st.since) < newGrace {
			continue
		}
		if oldest == nil || st.since.Before(since) {
			oldest, since = c, st.since
		}
	}
	delete(l.conns, oldest)
	l.mu.Unlock()
	if oldest == nil {
		return false
	}
	_ = oldest.Close() // releases its slot (limitedConn)
	return true
}

// track is the server's ConnState hook: it keeps the connections that
// have no request in flight.
func (l *connLimit) track(c net.Conn, st http.ConnState) {
	switch st {
	case http.StateNew, http.StateIdle:
		l.mu.Lock()
		l.conns[c] = connState{since: time.Now(), idle: st == http.StateIdle}
		l.mu.Unlock()
		if st == http.StateIdle {
			select {
			case l.idle <- struct{}{}:
			default:
			}
		}
	default: // active, hijacked, closed
		l.forget(c)
	}
}

func (l *connLimit) forget(c net.Conn) {
	l.mu.Lock()
	delete(l.conns, c)
	l.mu.Unlock()
}

// limitedConn frees its slot when it is closed, once.
type limitedConn struct {
	net.Conn
	release func()
}

func (c *limitedConn) Close() error {
	err := c.Conn.Close()
	c.release()
	return err
}
