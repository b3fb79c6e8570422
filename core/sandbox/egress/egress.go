// Package egress is the only way out of a vibeteam sandbox: an HTTP proxy
// that vibeteam runs itself for a session, with an allowlist, and routes
// to the model APIs that add the real API key on the way out, so that the
// agent inside never holds it.
//
// # Integration (what the sandbox calls)
//
//	// Once per session, outside the sandbox:
//	rules, err := egress.ParseRules(cfg.Allow)        // host:port, *.domain:port, host:*
//	mode, err := egress.ParseMode(cfg.Network)        // allow (default), none, all
//	p, err := egress.Start(egress.Config{
//		Mode: mode, Allow: rules,
//		OnRefused: func(r egress.Refusal) { … },      // emit an event; must not block
//	}, stateDir+"/egress.sock")
//	defer p.Close()                                   // ends every connection, waits
//
//	// Per sandboxed process of an adapter:
//	inside := egress.InsideURL(egress.DefaultBridgeListen)
//	api, _ := egress.ForAdapter(adapter, os.Environ(), inside)
//	err = p.AddRoutes(api.Routes...)                  // the real keys stay in the proxy
//	env := egress.InsideEnv(inside, api)              // set inside, over the filtered env
//	args = append(args, api.Args...)                  // codex: -c openai_base_url=…
//	argv = append(egress.BridgeWrap(self, egress.DefaultBridgeListen, socket), argv...)
//	// bwrap … --unshare-net --bind socket socket … -- argv
//
// api.Keys names the host variables the proxy now holds (never pass their
// real values in); api.Hosts are the vendor's host:port, for the
// allowlist of an agent logged in by OAuth (no key in the environment).
//
// # The proxy (outside the sandbox)
//
// The proxy speaks CONNECT (for TLS; it never sees inside the tunnel) and
// absolute-URI forwarding (plain http), on a unix socket (ListenUnix, or
// Start) and, for tests, on loopback TCP (ListenTCP). It dials directly,
// never through the host's own HTTP_PROXY: what was checked is what is
// reached. A destination that is not allowed gets 403 with the body
// "vibeteam sandbox: host X:443 is not allowed; add it under
// sandbox.allow", and OnRefused receives a Refusal (host, port, why).
// Requests in origin form (POST /vibeteam/model/NAME/…) go to the route
// NAME, whatever the mode; so do absolute-URI requests to a loopback host
// with that path, which is what a client that ignores NO_PROXY sends, and
// requests inside a CONNECT tunnel to the bridge's own address
// (Config.Self), which is what undici's ProxyAgent sends (Gemini CLI). A
// route replaces every credential header the client sent by the real key,
// and streams the answer as it comes (server-sent events).
//
// # The bridge (inside the sandbox)
//
// A sandbox with its own network namespace has only a loopback interface.
// The vibeteam binary is its own bridge there:
//
//	vibeteam __egress-bridge --listen 127.0.0.1:39281 --socket /path/egress.sock -- AGENT ARGS…
//
// (BridgeWrap builds the part before AGENT) listens on the loopback port,
// starts the command once it listens, copies each TCP connection to the
// unix socket, and exits with the command's status (128+N for signal N).
// Without "-- COMMAND" it serves until SIGINT, SIGTERM or SIGHUP. The
// command shares the bridge's process group and gets signals from there:
// the bridge forwards none (a second SIGTERM means "quit now" to some
// programs), ignores them while the command runs, and kills the command
// if it dies itself (Linux's parent-death signal).
//
// # The environment inside
//
// ProxyEnv gives HTTP_PROXY, HTTPS_PROXY, their lower-case forms, NO_PROXY
// (loopback) and NODE_USE_ENV_PROXY=1, all pointing at the bridge.
// ForAdapter gives, for the built-in adapters claude, codex, gemini and
// opencode, the variables that replace the API keys by Placeholder and
// point the base URLs at the bridge, and the Routes that hold the real
// keys; an adapter without a key in the environment gets no route.
package egress

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Reasons of a Refusal.
const (
	ReasonNotAllowed  = "not in sandbox.allow"
	ReasonNetworkNone = "sandbox network is none"
	ReasonBadTarget   = "no host:port in the request"
	// ReasonLocalAddress: an allowed name resolved only to a loopback,
	// link-local or unspecified address (a name pointed at the host's own
	// services, or at a cloud's metadata service).
	ReasonLocalAddress = "resolves to a local address"
)

// Refusal is a connection the proxy refused.
type Refusal struct {
	Host   string
	Port   int
	Reason string // one of the Reason constants
	Method string // CONNECT, or the method of a forwarded http request
}

// Config is a proxy's policy.
type Config struct {
	Mode   Mode
	Allow  []Rule
	Routes []Route
	// OnRefused is called, from the connection's goroutine, for every
	// refused connection. It must not block for long.
	OnRefused func(Refusal)
	// DialTimeout bounds a connection to a destination (default 30s).
	DialTimeout time.Duration
	// Self are the loopback host:port the proxy is known as inside the
	// sandbox (the bridge's address; default DefaultBridgeListen and its
	// localhost form). A CONNECT to one of them is served by the proxy
	// itself: a client that tunnels even a plain-http base URL through
	// HTTPS_PROXY, ignoring NO_PROXY (undici's ProxyAgent, which Gemini
	// CLI installs), reaches its model route that way.
	Self []string
	// LookupIP resolves a host name the allowlist admitted (default: the
	// system's resolver); see dialChecked.
	LookupIP func(ctx context.Context, host string) ([]net.IPAddr, error)
}

// Proxy is a running egress proxy. It owns the goroutines of its listeners
// and connections; Close ends them all and waits for them.
type Proxy struct {
	policy    policy
	self      map[string]bool
	local     *localListener
	onRefused func(Refusal)
	lookupIP  func(ctx context.Context, host string) ([]net.IPAddr, error)
	dialer    net.Dialer
	forward   *httputil.ReverseProxy
	srv       *http.Server

	routeTransport *http.Transport

	mu      sync.Mutex
	routes  map[string]*routeProxy
	closed  bool
	tunnels map[net.Conn]struct{}
	sockets []string
	// namespaces are the network namespaces ListenNetns made, held open.
	namespaces []*os.File
	// wg holds the Serve goroutines, handlers the requests being served
	// (http.Server.Close does not wait for those, nor know of tunnels).
	wg       sync.WaitGroup
	handlers sync.WaitGroup
}

var discardLog = log.New(io.Discard, "", 0)

// copyBuffers are the proxies' copy buffers: 64 KB, twice ReverseProxy's
// own, for fewer writes per streamed megabyte.
var copyBuffers = &bufferPool{sync.Pool{New: func() any { b := make([]byte, 64<<10); return &b }}}

type bufferPool struct{ sync.Pool }

func (p *bufferPool) Get() []byte  { return *p.Pool.Get().(*[]byte) }
func (p *bufferPool) Put(b []byte) { p.Pool.Put(&b) }

// New makes a proxy; it serves nothing until ListenUnix, ListenTCP or Serve.
func New(cfg Config) (*Proxy, error) {
	mode := cfg.Mode
	if mode == "" {
		mode = ModeAllowList
	}
	if _, err := ParseMode(string(mode)); err != nil {
		return nil, err
	}
	p := &Proxy{
		policy:    policy{mode: mode, rules: cfg.Allow},
		onRefused: cfg.OnRefused,
		lookupIP:  cfg.LookupIP,
		tunnels:   map[net.Conn]struct{}{},
		routes:    map[string]*routeProxy{},
	}
	if p.lookupIP == nil {
		p.lookupIP = net.DefaultResolver.LookupIPAddr
	}
	p.dialer.Timeout = cfg.DialTimeout
	if p.dialer.Timeout == 0 {
		p.dialer.Timeout = 30 * time.Second
	}
	p.self = map[string]bool{}
	self := cfg.Self
	if self == nil {
		_, port, _ := net.SplitHostPort(DefaultBridgeListen)
		self = []string{DefaultBridgeListen, net.JoinHostPort("localhost", port)}
	}
	for _, hp := range self {
		if host, port, ok := splitTarget(hp, ""); ok {
			p.self[net.JoinHostPort(host, strconv.Itoa(port))] = true
		}
	}
	p.routeTransport = p.transport()
	if err := p.AddRoutes(cfg.Routes...); err != nil {
		return nil, err
	}
	p.forward = &httputil.ReverseProxy{
		// The request already holds its absolute target; only the
		// hop-by-hop headers go (ReverseProxy drops those itself).
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.Out.Header.Del("Proxy-Authorization")
			pr.Out.Header.Del("Proxy-Connection")
		},
		Transport:     p.transport(),
		FlushInterval: -1,
		BufferPool:    copyBuffers,
		ErrorHandler:  p.forwardFailed,
		ErrorLog:      discardLog,
	}
	p.forward.Transport.(*http.Transport).DialContext = p.dialChecked
	p.srv = &http.Server{
		Handler:           p,
		ReadHeaderTimeout: time.Minute,
		ErrorLog:          discardLog,
		ConnContext:       withConnPolicy,
	}
	p.local = newLocalListener()
	if err := p.Serve(p.local); err != nil {
		return nil, err
	}
	return p, nil
}

// transport dials directly (never through the host's own HTTP_PROXY:
// what was checked is what is reached).
func (p *Proxy) transport() *http.Transport {
	return &http.Transport{
		Proxy:                 nil,
		DialContext:           p.dialer.DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConnsPerHost:   16,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   15 * time.Second,
		ExpectContinueTimeout: time.Second,
		// A streamed answer is read in large pieces: the default 4 KB
		// costs a system call (and a goroutine switch) per 4 KB.
		ReadBufferSize:  64 << 10,
		WriteBufferSize: 64 << 10,
	}
}

// maxSocketPath is the longest unix socket path (sun_path less its NUL;
// macOS allows 103).
const maxSocketPath = 103

// Start is New, then ListenUnix(socket): a session's proxy.
func Start(cfg Config, socket string) (*Proxy, error) {
	p, err := New(cfg)
	if err != nil {
		return nil, err
	}
	if err := p.ListenUnix(socket); err != nil {
		p.Close()
		return nil, err
	}
	return p, nil
}

// ListenUnix serves on a unix socket at path (a stale one is replaced),
// readable and writable by its owner only.
func (p *Proxy) ListenUnix(path string) error { return p.listenUnix(path, nil) }

// ListenUnixWith is ListenUnix with a policy of its own for what comes in
// on this socket (a step's own network and allow:); the model routes are
// the proxy's.
func (p *Proxy) ListenUnixWith(path string, mode Mode, allow []Rule) error {
	if mode == "" {
		mode = ModeAllowList
	}
	if _, err := ParseMode(string(mode)); err != nil {
		return err
	}
	return p.listenUnix(path, &policy{mode: mode, rules: allow})
}

func (p *Proxy) listenUnix(path string, pol *policy) error {
	// The kernel's limit (sun_path) would only say "invalid argument".
	if len(path) > maxSocketPath {
		return fmt.Errorf("egress proxy: socket path %s is %d bytes, more than the %d a unix socket takes; use a shorter directory (os.MkdirTemp)", path, len(path), maxSocketPath)
	}
	if fi, err := os.Lstat(path); err == nil && fi.Mode()&os.ModeSocket != 0 {
		_ = os.Remove(path)
	}
	l, err := net.Listen("unix", path)
	if err != nil {
		return fmt.Errorf("egress proxy: %w", err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		l.Close()
		return fmt.Errorf("egress proxy: %w", err)
	}
	p.mu.Lock()
	p.sockets = append(p.sockets, path)
	p.mu.Unlock()
	if pol != nil {
		l = policyListener{Listener: l, pol: pol}
	}
	return p.Serve(l)
}

// ListenTCP serves on a TCP address ("127.0.0.1:0" for any port) and
// returns the address it listens on.
func (p *Proxy) ListenTCP(addr string) (net.Addr, error) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("egress proxy: %w", err)
	}
	return l.Addr(), p.Serve(l)
}

// Serve serves on l until Close, in a goroutine the proxy owns.
func (p *Proxy) Serve(l net.Listener) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		l.Close()
		return net.ErrClosed
	}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		_ = p.srv.Serve(l)
	}()
	return nil
}

// Close stops the listeners, ends every connection (tunnels included),
// removes the unix sockets it made and waits for its goroutines.
func (p *Proxy) Close() error {
	p.mu.Lock()
	p.closed = true
	for c := range p.tunnels {
		c.Close()
	}
	sockets, namespaces := p.sockets, p.namespaces
	p.mu.Unlock()
	err := p.srv.Close()
	p.local.Close()
	p.wg.Wait()
	p.handlers.Wait()
	for _, ns := range namespaces {
		ns.Close()
	}
	for _, s := range sockets {
		_ = os.Remove(s)
	}
	return err
}

// ServeHTTP dispatches: CONNECT tunnels, absolute-URI forwarding, and the
// model routes.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		http.Error(w, "vibeteam sandbox: the proxy is closing", http.StatusServiceUnavailable)
		return
	}
	p.handlers.Add(1)
	p.mu.Unlock()
	defer p.handlers.Done()
	if r.Method == http.MethodConnect {
		p.connect(w, r)
		return
	}
	// The upstream's answer may start before the request's body has all
	// gone out (a model API answers as soon as it has read it, while the
	// transport still waits for the body's EOF): without full duplex, the
	// server closes the body as the answer's headers go, the transport's
	// write fails, and it drops the upstream connection mid-stream.
	_ = http.NewResponseController(w).EnableFullDuplex()
	if rp := p.routeFor(r); rp != nil {
		rp.ServeHTTP(w, r)
		return
	}
	if r.URL.Host == "" {
		http.Error(w, "vibeteam sandbox: no route for "+r.URL.Path+" (this is a proxy: send absolute URIs or CONNECT)", http.StatusNotFound)
		return
	}
	host, port, ok := splitTarget(r.URL.Host, r.URL.Scheme)
	if !ok || (r.URL.Scheme != "http" && r.URL.Scheme != "") {
		p.refuse(w, r.Method, host, port, ReasonBadTarget)
		return
	}
	if why := p.policyOf(r.Context()).refuses(host, port); why != "" {
		p.refuse(w, r.Method, host, port, why)
		return
	}
	p.forward.ServeHTTP(w, r)
}

// connect checks the target, then splices the client to it.
func (p *Proxy) connect(w http.ResponseWriter, r *http.Request) {
	host, port, ok := splitTarget(r.Host, "https")
	if !ok {
		p.refuse(w, r.Method, host, port, ReasonBadTarget)
		return
	}
	if p.self[net.JoinHostPort(host, strconv.Itoa(port))] {
		p.tunnelToSelf(w, r)
		return
	}
	if why := p.policyOf(r.Context()).refuses(host, port); why != "" {
		p.refuse(w, r.Method, host, port, why)
		return
	}
	up, err := p.dialChecked(r.Context(), "tcp", net.JoinHostPort(host, strconv.Itoa(port)))
	var local *localAddressError
	if errors.As(err, &local) {
		p.refuse(w, r.Method, host, port, ReasonLocalAddress)
		return
	}
	if err != nil {
		http.Error(w, fmt.Sprintf("vibeteam sandbox: cannot reach %s:%d: %v", host, port, err), http.StatusBadGateway)
		return
	}
	client, rw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		up.Close()
		http.Error(w, "vibeteam sandbox: cannot tunnel: "+err.Error(), http.StatusInternalServerError)
		return
	}
	if !p.track(client, up) {
		client.Close()
		up.Close()
		return
	}
	defer p.untrack(client, up)
	if _, err := io.WriteString(client, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		return
	}
	// Bytes the client sent after its CONNECT, already buffered.
	if n := rw.Reader.Buffered(); n > 0 {
		b, _ := rw.Reader.Peek(n)
		if _, err := up.Write(b); err != nil {
			return
		}
	}
	splice(client, up)
}

// tunnelToSelf answers a CONNECT to the proxy's own inside address, then
// serves what comes through the tunnel as a connection of its own.
func (p *Proxy) tunnelToSelf(w http.ResponseWriter, r *http.Request) {
	client, rw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		http.Error(w, "vibeteam sandbox: cannot tunnel: "+err.Error(), http.StatusInternalServerError)
		return
	}
	if _, err := io.WriteString(client, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		client.Close()
		return
	}
	p.local.push(&bufferedConn{Conn: client, r: rw.Reader, pol: connPolicy(r.Context())})
}

// track registers a hijacked tunnel so that Close ends it; false once the
// proxy is closed.
func (p *Proxy) track(conns ...net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	for _, c := range conns {
		p.tunnels[c] = struct{}{}
	}
	return true
}

func (p *Proxy) untrack(conns ...net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range conns {
		c.Close()
		delete(p.tunnels, c)
	}
}

// refuse answers 403 with the sentence the agent will show, and reports
// the refusal.
func (p *Proxy) refuse(w http.ResponseWriter, method, host string, port int, why string) {
	if p.onRefused != nil {
		p.onRefused(Refusal{Host: host, Port: port, Reason: why, Method: method})
	}
	http.Error(w, RefusalMessage(host, port, why), http.StatusForbidden)
}

// RefusalMessage is the sentence a refused client receives.
func RefusalMessage(host string, port int, why string) string {
	target := net.JoinHostPort(host, strconv.Itoa(port))
	switch why {
	case ReasonNetworkNone:
		return fmt.Sprintf("vibeteam sandbox: host %s is not allowed: the sandbox's network is none; set sandbox.network, or add it under sandbox.allow", target)
	case ReasonBadTarget:
		return fmt.Sprintf("vibeteam sandbox: %q is not a host:port this proxy forwards to", target)
	case ReasonLocalAddress:
		return fmt.Sprintf("vibeteam sandbox: host %s resolves only to local addresses (loopback, link-local), which an allowed name does not open; add the address itself under sandbox.allow (127.0.0.1:PORT) if it is meant", target)
	}
	return fmt.Sprintf("vibeteam sandbox: host %s is not allowed; add it under sandbox.allow", target)
}

// splitTarget reads "host:port" (or "host", with the scheme's port).
func splitTarget(hostport, scheme string) (string, int, bool) {
	host, portStr, err := net.SplitHostPort(hostport)
	if err != nil {
		host, portStr = strings.Trim(hostport, "[]"), ""
	}
	if portStr == "" {
		switch scheme {
		case "https":
			portStr = "443"
		case "http", "":
			portStr = "80"
		}
	}
	port, err := strconv.Atoi(portStr)
	if err != nil || port < 1 || port > 65535 || host == "" {
		return host, port, false
	}
	return normHost(host), port, true
}

// splice copies both ways until both directions end; a direction that
// ends half-closes its destination so that the other side sees EOF.
func splice(a, b net.Conn) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		copyHalf(b, a)
	}()
	copyHalf(a, b)
	<-done
}

func copyHalf(dst, src net.Conn) {
	_, err := io.Copy(dst, src)
	if cw, ok := dst.(interface{ CloseWrite() error }); ok && err == nil {
		_ = cw.CloseWrite()
		return
	}
	// An error (or no half-close): end both, so that the other copy ends.
	dst.Close()
	src.Close()
}

// forwardFailed answers a plain-http request the proxy could not forward:
// a refusal when its name resolved only to local addresses.
func (p *Proxy) forwardFailed(w http.ResponseWriter, r *http.Request, err error) {
	var local *localAddressError
	if errors.As(err, &local) {
		p.refuse(w, r.Method, local.host, local.port, ReasonLocalAddress)
		return
	}
	badGateway(w, r, err)
}

func badGateway(w http.ResponseWriter, r *http.Request, err error) {
	if errors.Is(err, context.Canceled) {
		return
	}
	http.Error(w, fmt.Sprintf("vibeteam sandbox: cannot reach %s: %v", r.URL.Host, err), http.StatusBadGateway)
}
