package egress

import (
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestMain lets the test binary be the bridge and the agent inside a real
// bubblewrap sandbox (bwrap_test.go).
func TestMain(m *testing.M) {
	switch os.Getenv("EGRESS_TEST_MODE") {
	case "bridge":
		args := os.Args[1:]
		if len(args) > 0 && args[0] == BridgeCommand {
			args = args[1:]
		}
		o, err := ParseBridgeArgs(args)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		code, err := RunBridge(o)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
		}
		os.Exit(code)
	case "client":
		os.Exit(sandboxClient(os.Args[1:]))
	}
	os.Exit(m.Run())
}

// upstream is a real HTTP server on loopback that records what reached it.
type upstream struct {
	*httptest.Server
	mu   sync.Mutex
	reqs []*http.Request
}

func newUpstream(t *testing.T, tls bool) *upstream {
	t.Helper()
	u := &upstream{}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u.mu.Lock()
		u.reqs = append(u.reqs, r.Clone(r.Context()))
		u.mu.Unlock()
		fmt.Fprintf(w, "hello from %s", r.URL.Path)
	})
	u.Server = httptest.NewUnstartedServer(h)
	u.Listener.Close()
	u.Listener = notTheBridgePort(t)
	// A tunnel the test closes unused is a handshake error, not news.
	u.Config.ErrorLog = discardLog
	if tls {
		u.StartTLS()
	} else {
		u.Start()
	}
	t.Cleanup(u.Close)
	return u
}

// notTheBridgePort is a loopback listener on any port but the bridge's
// (DefaultBridgeListen): the proxy takes a CONNECT to that address for a
// tunnel to itself, as it is inside a sandbox, so an upstream the kernel
// happened to put there would be the proxy, not the server (CI, once).
func notTheBridgePort(t *testing.T) net.Listener {
	t.Helper()
	_, bridgePort, _ := net.SplitHostPort(DefaultBridgeListen)
	for {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		if _, port, _ := net.SplitHostPort(l.Addr().String()); port != bridgePort {
			return l
		}
		defer l.Close() // held until a free port other than this one is found
	}
}

func (u *upstream) hits() int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return len(u.reqs)
}

func (u *upstream) last(t *testing.T) *http.Request {
	t.Helper()
	u.mu.Lock()
	defer u.mu.Unlock()
	if len(u.reqs) == 0 {
		t.Fatal("the upstream received no request")
	}
	return u.reqs[len(u.reqs)-1]
}

// hostPort is the server's "127.0.0.1:PORT" and its port.
func (u *upstream) hostPort(t *testing.T) (string, int) {
	t.Helper()
	return splitHP(t, u.Listener.Addr().String())
}

func splitHP(t *testing.T, hp string) (string, int) {
	t.Helper()
	_, p, err := net.SplitHostPort(hp)
	if err != nil {
		t.Fatal(err)
	}
	n, _ := strconv.Atoi(p)
	return hp, n
}

type refusals chan Refusal

func (r refusals) on(x Refusal) { r <- x }

// next is the next refusal, or a failure if there is none within the
// deadline (the proxy reports before it answers, so it is already there).
func (r refusals) next(t *testing.T) Refusal {
	t.Helper()
	select {
	case x := <-r:
		return x
	case <-time.After(10 * time.Second):
		t.Fatal("no refusal event")
	}
	return Refusal{}
}

func (r refusals) none(t *testing.T) {
	t.Helper()
	select {
	case x := <-r:
		t.Fatalf("unexpected refusal %+v", x)
	default:
	}
}

// startProxy serves cfg on a loopback TCP port; refusals arrive on the
// returned channel.
func startProxy(t *testing.T, cfg Config) (string, refusals) {
	t.Helper()
	_, u, ref := startProxyP(t, cfg)
	return u, ref
}

// startProxyP is startProxy that also returns the proxy.
func startProxyP(t *testing.T, cfg Config) (*Proxy, string, refusals) {
	t.Helper()
	ref := make(refusals, 16)
	cfg.OnRefused = ref.on
	p, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	addr, err := p.ListenTCP("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p, "http://" + addr.String(), ref
}

func rules(t *testing.T, entries ...string) []Rule {
	t.Helper()
	r, err := ParseRules(entries)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// viaProxy is an HTTP client that sends everything (loopback included)
// through proxyURL, trusting roots for TLS.
func viaProxy(t *testing.T, proxyURL string, roots *x509.CertPool) *http.Client {
	t.Helper()
	pu, err := url.Parse(proxyURL)
	if err != nil {
		t.Fatal(err)
	}
	tr := &http.Transport{Proxy: http.ProxyURL(pu), DisableKeepAlives: true}
	if roots != nil {
		tr.TLSClientConfig = tlsConfig(roots)
	}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: 20 * time.Second}
}

// get returns the status and body of a GET through c.
func get(t *testing.T, c *http.Client, u string) (int, string) {
	t.Helper()
	resp, err := c.Get(u)
	if err != nil {
		t.Fatalf("GET %s: %v", u, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// getErr is a GET whose failure is expected (a refused CONNECT makes the
// client's request fail with the proxy's status in the error).
func getErr(c *http.Client, u string) (int, string, error) {
	resp, err := c.Get(u)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), nil
}

func envValue(env []string, name string) string {
	for _, kv := range env {
		if k, v, ok := strings.Cut(kv, "="); ok && k == name {
			return v
		}
	}
	return ""
}
