package egress

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// fakeDNS resolves every name in names to 127.0.0.1, and nothing else.
func fakeDNS(names ...string) func(context.Context, string) ([]net.IPAddr, error) {
	return func(_ context.Context, host string) ([]net.IPAddr, error) {
		for _, n := range names {
			if host == n {
				return []net.IPAddr{{IP: net.IPv4(127, 0, 0, 1)}}, nil
			}
		}
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
}

// An allowed name that resolves to a loopback address does not reach the
// port there: allow rebound.test:PORT is not 127.0.0.1:PORT. The client
// gets 403 naming the host, an event reports it, the server sees nothing;
// over CONNECT and plain http alike.
func TestAnAllowedNameResolvingToLoopbackIsRefused(t *testing.T) {
	plain, secure := newUpstream(t, false), newUpstream(t, true)
	_, plainPort := plain.hostPort(t)
	_, securePort := secure.hostPort(t)
	proxyURL, ref := startProxy(t, Config{
		Allow:    rules(t, fmt.Sprintf("rebound.test:%d", plainPort), fmt.Sprintf("rebound.test:%d", securePort)),
		LookupIP: fakeDNS("rebound.test"),
	})
	proxyAddr := strings.TrimPrefix(proxyURL, "http://")

	target := fmt.Sprintf("rebound.test:%d", securePort)
	code, body := rawConnect(t, proxyAddr, target)
	if code != http.StatusForbidden || !strings.Contains(body, "host "+target+" resolves only to local addresses") {
		t.Errorf("CONNECT %s: %d %q, want 403 naming it", target, code, body)
	}
	if r := ref.next(t); r.Host != "rebound.test" || r.Port != securePort || r.Reason != ReasonLocalAddress {
		t.Errorf("refusal %+v", r)
	}

	c := viaProxy(t, proxyURL, nil)
	code, body = get(t, c, fmt.Sprintf("http://rebound.test:%d/x", plainPort))
	if code != http.StatusForbidden || !strings.Contains(body, "resolves only to local addresses") {
		t.Errorf("plain http: %d %q, want 403", code, body)
	}
	if r := ref.next(t); r.Host != "rebound.test" || r.Reason != ReasonLocalAddress {
		t.Errorf("refusal %+v", r)
	}
	if plain.hits() != 0 {
		t.Errorf("the loopback server was reached %d times through an allowed name", plain.hits())
	}
}

// The loopback address itself, allowed at that port, is reached: by its
// IP literal, and by a name that resolves to it.
func TestAnAllowedLoopbackAddressIsReached(t *testing.T) {
	plain, secure := newUpstream(t, false), newUpstream(t, true)
	plainHP, plainPort := plain.hostPort(t)
	secureHP, securePort := secure.hostPort(t)
	proxyURL, ref := startProxy(t, Config{
		Allow:    rules(t, plainHP, secureHP, fmt.Sprintf("named.test:%d", plainPort), fmt.Sprintf("named.test:%d", securePort)),
		LookupIP: fakeDNS("named.test"),
	})
	c := viaProxy(t, proxyURL, rootsOf(secure))
	if code, body := get(t, c, plain.URL+"/lit"); code != 200 || body != "hello from /lit" {
		t.Errorf("IP literal over http: %d %q", code, body)
	}
	if code, _ := get(t, c, fmt.Sprintf("http://named.test:%d/name", plainPort)); code != 200 {
		t.Errorf("a name resolving to an allowed address: %d", code)
	}
	proxyAddr := strings.TrimPrefix(proxyURL, "http://")
	if code, body := rawConnect(t, proxyAddr, fmt.Sprintf("named.test:%d", securePort)); code != 200 {
		t.Errorf("CONNECT by name: %d %q", code, body)
	}
	if plain.hits() != 2 {
		t.Errorf("hits %d, want 2", plain.hits())
	}
	ref.none(t)
}

// A socket with a policy of its own (a step's network and allow:) decides
// what comes in on it; the proxy's other sockets keep theirs.
func TestASocketsOwnPolicyDecidesItsConnections(t *testing.T) {
	up := newUpstream(t, false)
	hp, _ := up.hostPort(t)
	ref := make(refusals, 16)
	p, err := New(Config{Allow: rules(t, hp), OnRefused: ref.on})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	dir := t.TempDir()
	open, closed := dir+"/open.sock", dir+"/none.sock"
	if err := p.ListenUnix(open); err != nil {
		t.Fatal(err)
	}
	if err := p.ListenUnixWith(closed, ModeNone, nil); err != nil {
		t.Fatal(err)
	}
	via := func(sock string) *http.Client {
		tr := &http.Transport{Proxy: http.ProxyURL(&url.URL{Scheme: "http", Host: "proxy.sock"}), DisableKeepAlives: true,
			DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
				return (&net.Dialer{}).DialContext(ctx, "unix", sock)
			}}
		return &http.Client{Transport: tr}
	}
	if code, _ := get(t, via(open), up.URL+"/a"); code != 200 {
		t.Errorf("the session's socket: %d", code)
	}
	if code, body := get(t, via(closed), up.URL+"/b"); code != http.StatusForbidden || !strings.Contains(body, "network is none") {
		t.Errorf("the none socket: %d %q", code, body)
	}
	if r := ref.next(t); r.Reason != ReasonNetworkNone {
		t.Errorf("refusal %+v", r)
	}
	if up.hits() != 1 {
		t.Errorf("hits %d, want 1", up.hits())
	}
}
