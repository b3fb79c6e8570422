package egress

import (
	"bufio"
	"net"
	"sync"
)

// localListener hands the proxy's server the connections that a CONNECT
// to the proxy itself opened (tunnelToSelf).
type localListener struct {
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
}

func newLocalListener() *localListener {
	return &localListener{conns: make(chan net.Conn), done: make(chan struct{})}
}

func (l *localListener) push(c net.Conn) {
	select {
	case l.conns <- c:
	case <-l.done:
		c.Close()
	}
}

func (l *localListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *localListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

func (l *localListener) Addr() net.Addr { return localAddr{} }

type localAddr struct{}

func (localAddr) Network() string { return "tunnel" }
func (localAddr) String() string  { return "vibeteam-egress" }

// bufferedConn reads first what the server's reader already holds of the
// tunnel (bytes the client sent right after its CONNECT).
type bufferedConn struct {
	net.Conn
	r   *bufio.Reader
	pol *policy // of the connection the tunnel came through
}

func (c *bufferedConn) Read(b []byte) (int, error) { return c.r.Read(b) }
