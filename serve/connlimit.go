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
// take every file descriptor the cycles need. Unlike it, a connection
// wanted at the cap does not wait for one to close by itself: the
// connection that has waited longest without a request in flight (a
// keep-alive left idle, or one that never sent its request) is closed to
// make room. Otherwise 512 idle keep-alives, from a pooling client or on
// purpose, would hold /healthz and the webhooks unanswered until their
// idle timeout, and a liveness probe would restart the pod.
//
// The server's ConnState hook (track) tells it which connections are
// idle; a request in flight is never cut.
type connLimit struct {
	net.Listener
	sem  chan struct{}
	done chan struct{}
	log  *slog.Logger

	closeOnce sync.Once
	mu        sync.Mutex
	waiting   map[net.Conn]time.Time // connections with no request in flight, since when
	warned    time.Time              // the last warning that the cap was reached
}

func newConnLimit(ln net.Listener, n int, log *slog.Logger) *connLimit {
	return &connLimit{
		Listener: ln,
		sem:      make(chan struct{}, n),
		done:     make(chan struct{}),
		log:      log,
		waiting:  map[net.Conn]time.Time{},
	}
}

// Accept waits for a free slot, making one if every slot is taken, then
// accepts a connection.
func (l *connLimit) Accept() (net.Conn, error) {
	select {
	case l.sem <- struct{}{}:
	default:
		l.evict()
		select {
		case l.sem <- struct{}{}:
		case <-l.done:
			return nil, net.ErrClosed
		}
	}
	c, err := l.Listener.Accept()
	if err != nil {
		<-l.sem
		return nil, err
	}
	lc := &limitedConn{Conn: c}
	lc.release = sync.OnceFunc(func() {
		l.forget(lc)
		<-l.sem
	})
	return lc, nil
}

// Close closes the listener and ends the wait of a blocked Accept.
func (l *connLimit) Close() error {
	err := l.Listener.Close()
	l.closeOnce.Do(func() { close(l.done) })
	return err
}

// evict closes the connection that has been waiting longest for a
// request, if any; its slot frees as the server lets it go.
func (l *connLimit) evict() {
	l.mu.Lock()
	var (
		oldest net.Conn
		since  time.Time
	)
	for c, t := range l.waiting {
		if oldest == nil || t.Before(since) {
			oldest, since = c, t
		}
	}
	delete(l.waiting, oldest)
	now := time.Now()
	warn := now.Sub(l.warned) > time.Minute
	if warn {
		l.warned = now
	}
	l.mu.Unlock()
	if warn {
		l.log.Warn("HTTP connections at their cap; closing the one idle longest for each new one (a client keeping many connections open?)",
			"component", "http", "cap", cap(l.sem), "idle", oldest != nil)
	}
	if oldest != nil {
		_ = oldest.Close()
	}
}

// track is the server's ConnState hook: it keeps the connections that
// have no request in flight.
func (l *connLimit) track(c net.Conn, st http.ConnState) {
	switch st {
	case http.StateNew, http.StateIdle:
		l.mu.Lock()
		l.waiting[c] = time.Now()
		l.mu.Unlock()
	default: // active, hijacked, closed
		l.forget(c)
	}
}

func (l *connLimit) forget(c net.Conn) {
	l.mu.Lock()
	delete(l.waiting, c)
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
