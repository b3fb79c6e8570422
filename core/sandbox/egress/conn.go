package egress

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"
)

// A socket may have a policy of its own (ListenUnixWith): its connections
// carry it, and the server's ConnContext puts it in each request's context.

type policyKey struct{}

type policyListener struct {
	net.Listener
	pol *policy
}

func (l policyListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &policyConn{Conn: c, pol: l.pol}, nil
}

type policyConn struct {
	net.Conn
	pol *policy
}

// withConnPolicy is the server's ConnContext: the policy of the socket the
// connection came in on (or of the tunnel it came through).
func withConnPolicy(ctx context.Context, c net.Conn) context.Context {
	switch c := c.(type) {
	case *policyConn:
		return context.WithValue(ctx, policyKey{}, c.pol)
	case *bufferedConn:
		if c.pol != nil {
			return context.WithValue(ctx, policyKey{}, c.pol)
		}
	}
	return ctx
}

// connPolicy is the policy ctx carries; nil: the proxy's own.
func connPolicy(ctx context.Context) *policy {
	pol, _ := ctx.Value(policyKey{}).(*policy)
	return pol
}

// policyOf is the policy that decides a request made in ctx.
func (p *Proxy) policyOf(ctx context.Context) policy {
	if pol := connPolicy(ctx); pol != nil {
		return *pol
	}
	return p.policy
}

// localAddressError is a dial refused because the allowed name resolved
// only to local addresses.
type localAddressError struct {
	host string
	port int
}

func (e *localAddressError) Error() string {
	return fmt.Sprintf("%s resolves only to local addresses", net.JoinHostPort(e.host, strconv.Itoa(e.port)))
}

// dialChecked dials addr as the allowlist admitted it: a rule names a host
// and a port, and what is dialled is the address the name resolves to now.
// A name that resolves to a loopback, link-local or unspecified address
// (DNS pointed at the host's own services, or at a cloud's metadata
// service) does not reach it unless a rule names that address itself at
// that port: allow api.example.com:443 must not open 127.0.0.1:443. The
// addresses checked are the ones dialled (no second lookup to rebind). An
// IP literal is what its rule named; localhost is the user's own choice.
func (p *Proxy) dialChecked(ctx context.Context, network, addr string) (net.Conn, error) {
	host, portStr, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	pol := p.policyOf(ctx)
	h := normHost(host)
	if pol.mode == ModeAll || net.ParseIP(h) != nil || h == "localhost" || strings.HasSuffix(h, ".localhost") {
		return p.dialer.DialContext(ctx, network, addr)
	}
	port, _ := strconv.Atoi(portStr)
	ips, err := p.lookupIP(ctx, host)
	if err != nil {
		return nil, err
	}
	var firstErr error
	tried := false
	for _, ip := range ips {
		if localIP(ip.IP) && pol.refuses(ip.IP.String(), port) != "" {
			continue
		}
		tried = true
		c, err := p.dialer.DialContext(ctx, network, net.JoinHostPort(ip.String(), portStr))
		if err == nil {
			return c, nil
		}
		if firstErr == nil {
			firstErr = err
		}
	}
	if !tried {
		return nil, &localAddressError{host: h, port: port}
	}
	return nil, firstErr
}

// localIP: loopback, unspecified, link-local (169.254.169.254, the cloud
// metadata service, is one).
func localIP(ip net.IP) bool {
	return ip.IsLoopback() || ip.IsUnspecified() || ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast() || ip.IsInterfaceLocalMulticast()
}
