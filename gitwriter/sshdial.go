package gitwriter

import (
	"context"
	"errors"
	"net"
	"net/url"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/go-git/go-git/v5/plumbing/transport"
	"golang.org/x/net/proxy"
)

// go-git's SSH transport bounds only the TCP dial with ClientConfig.Timeout;
// the SSH handshake and the session run on the bare connection, without a
// deadline and without looking at the context until the session is set
// up, so a server that accepts and then stays silent hangs the operation
// for ever. The only hook go-git offers into its SSH dial is a proxy
// dialer, looked up by the proxy URL's scheme in x/net/proxy's registry.
// So each SSH operation passes a proxy URL of a private scheme that names
// the operation, and the dialer registered for that scheme connects
// directly and ties the connection to the operation's context: the
// connection gets the context's deadline and is closed when the context
// is done.

// connScheme is the private proxy scheme.
const connScheme = "imagebump-ssh-direct"

var (
	opContexts sync.Map // operation id -> context.Context
	opSeq      atomic.Uint64
)

// init registers the scheme before any goroutine can read x/net/proxy's
// registry, which has no lock.
func init() {
	proxy.RegisterDialerType(connScheme, newCtxDialer)
}

// sshProxy returns the proxy options that bind the SSH connections of one
// operation to ctx, and a function to call when the operation is over.
func sshProxy(ctx context.Context) (transport.ProxyOptions, func()) {
	id := strconv.FormatUint(opSeq.Add(1), 10)
	opContexts.Store(id, ctx)
	u := url.URL{Scheme: connScheme, Host: "op" + id}
	return transport.ProxyOptions{URL: u.String()}, func() { opContexts.Delete(id) }
}

// newCtxDialer is the x/net/proxy constructor for connScheme.
func newCtxDialer(u *url.URL, _ proxy.Dialer) (proxy.Dialer, error) {
	id := u.Host
	if len(id) > 2 {
		id = id[2:]
	}
	ctx, ok := opContexts.Load(id)
	if !ok {
		return nil, errors.New("ssh connection requested outside of an operation")
	}
	return &ctxDialer{ctx: ctx.(context.Context)}, nil
}

// ctxDialer connects directly, with connections bound to ctx.
type ctxDialer struct{ ctx context.Context }

var _ proxy.ContextDialer = (*ctxDialer)(nil)

// Dial implements proxy.Dialer.
func (d *ctxDialer) Dial(network, addr string) (net.Conn, error) {
	return d.DialContext(context.Background(), network, addr)
}

// DialContext implements proxy.ContextDialer. dialCtx bounds the dial
// only; the operation's context bounds the connection's whole life.
func (d *ctxDialer) DialContext(dialCtx context.Context, network, addr string) (net.Conn, error) {
	dctx, cancel := context.WithCancel(dialCtx)
	defer cancel()
	stopDial := context.AfterFunc(d.ctx, cancel)
	defer stopDial()
	var nd net.Dialer
	conn, err := nd.DialContext(dctx, network, addr)
	if err != nil {
		if d.ctx.Err() != nil {
			return nil, d.ctx.Err()
		}
		return nil, err
	}
	if deadline, ok := d.ctx.Deadline(); ok {
		if err := conn.SetDeadline(deadline); err != nil {
			_ = conn.Close()
			return nil, err
		}
	}
	stop := context.AfterFunc(d.ctx, func() { _ = conn.Close() })
	return &ctxConn{Conn: conn, stop: stop}, nil
}

// ctxConn is a connection closed when its operation's context is done.
type ctxConn struct {
	net.Conn
	stop func() bool
}

// Close implements net.Conn.
func (c *ctxConn) Close() error {
	c.stop()
	return c.Conn.Close()
}
