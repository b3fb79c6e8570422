package egress

import (
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
)

// startUnixProxy serves cfg on a unix socket in a fresh directory.
func startUnixProxy(t *testing.T, cfg Config) (string, refusals) {
	t.Helper()
	ref := make(refusals, 16)
	cfg.OnRefused = ref.on
	p, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(shortTempDir(t), "egress.sock")
	if err := p.ListenUnix(sock); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return sock, ref
}

// shortTempDir is a directory whose socket paths fit the 108 bytes of a
// unix socket address (t.TempDir's may not, with a long test name).
func shortTempDir(t *testing.T) string {
	t.Helper()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if len(dir) < 80 {
		return dir
	}
	return t.TempDir()
}

// The whole way out: a client inside talks TCP to the bridge, the bridge
// copies to the proxy's unix socket, the proxy reaches the upstream. An
// allowed host over CONNECT, a refused one, and a model route with its key.
func TestBridgeEndToEnd(t *testing.T) {
	secure, other, model := newUpstream(t, true), newUpstream(t, false), newUpstream(t, false)
	secureHP, _ := secure.hostPort(t)
	otherHP, _ := other.hostPort(t)
	hostEnv := []string{"ANTHROPIC_API_KEY=sk-ant-REAL", "ANTHROPIC_BASE_URL=" + model.URL}
	pre, _ := ForAdapter("claude", hostEnv, "http://unused")
	sock, ref := startUnixProxy(t, Config{Allow: rules(t, secureHP), Routes: pre.Routes})

	b, err := ListenBridge("127.0.0.1:0", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	inside := InsideURL(b.Addr().String())
	api, _ := ForAdapter("claude", hostEnv, inside)

	c := viaProxy(t, envValue(ProxyEnv(inside), "HTTPS_PROXY"), rootsOf(secure))
	if code, body := get(t, c, secure.URL+"/tls"); code != 200 || body != "hello from /tls" {
		t.Errorf("allowed over the bridge: %d %q", code, body)
	}
	if code, body := get(t, c, "http://"+otherHP+"/x"); code != http.StatusForbidden || !strings.Contains(body, "add it under sandbox.allow") {
		t.Errorf("refused over the bridge: %d %q", code, body)
	}
	if r := ref.next(t); r.Host != "127.0.0.1" || other.hits() != 0 {
		t.Errorf("refusal %+v, other hit %d times", r, other.hits())
	}
	req, _ := http.NewRequest("POST", envValue(api.Env, "ANTHROPIC_BASE_URL")+"/v1/messages", strings.NewReader("{}"))
	req.Header.Set("x-api-key", envValue(api.Env, "ANTHROPIC_API_KEY"))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got := model.last(t).Header.Get("x-api-key"); resp.StatusCode != 200 || got != "sk-ant-REAL" {
		t.Errorf("model route over the bridge: %d, key %q", resp.StatusCode, got)
	}
}

// Close ends open tunnels and connections and returns (no goroutine left
// waiting on a client that stays silent).
func TestCloseEndsOpenTunnels(t *testing.T) {
	up := newUpstream(t, true)
	hp, _ := up.hostPort(t)
	p, err := New(Config{Allow: rules(t, hp)})
	if err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(shortTempDir(t), "p.sock")
	if err := p.ListenUnix(sock); err != nil {
		t.Fatal(err)
	}
	b, err := ListenBridge("127.0.0.1:0", sock)
	if err != nil {
		t.Fatal(err)
	}
	code, _ := rawConnect(t, b.Addr().String(), hp) // closes its own end
	if code != 200 {
		t.Fatalf("CONNECT: %d", code)
	}
	c, err := net.Dial("tcp", b.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write([]byte("CONNECT " + hp + " HTTP/1.1\r\nHost: " + hp + "\r\n\r\n")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 64)
	if _, err := c.Read(buf); err != nil {
		t.Fatal(err)
	}
	// The tunnel is open and idle: both closes must still return.
	if err := b.Close(); err != nil {
		t.Error(err)
	}
	if err := p.Close(); err != nil {
		t.Error(err)
	}
	if _, err := net.Dial("unix", sock); err == nil {
		t.Error("the socket still accepts after Close")
	}
}

func TestLongSocketPath(t *testing.T) {
	_, err := Start(Config{}, "/tmp/"+strings.Repeat("d", 120)+"/e.sock")
	if err == nil || !strings.Contains(err.Error(), "more than the 103 a unix socket takes") {
		t.Errorf("a socket path too long: %v", err)
	}
}

func TestParseBridgeArgs(t *testing.T) {
	o, err := ParseBridgeArgs([]string{"--listen", "127.0.0.1:5", "--socket", "/s", "--", "claude", "-p", "--x"})
	if err != nil || o.Listen != "127.0.0.1:5" || o.Socket != "/s" || strings.Join(o.Command, " ") != "claude -p --x" {
		t.Fatalf("%+v %v", o, err)
	}
	if got := BridgeArgv("/bin/vibeteam", o); strings.Join(got, " ") != "/bin/vibeteam __egress-bridge --listen 127.0.0.1:5 --socket /s -- claude -p --x" {
		t.Errorf("argv %q", got)
	}
	if _, err := ParseBridgeArgs([]string{"--listen", "x"}); err == nil || !strings.Contains(err.Error(), "--socket") {
		t.Errorf("no socket: %v", err)
	}
	if _, err := ParseBridgeArgs([]string{"--bogus"}); err == nil {
		t.Error("a bad flag is accepted")
	}
}
