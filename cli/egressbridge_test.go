package cli

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vibeteam/vibeteam/core/sandbox/egress"
)

// The hidden bridge subcommand: absent from --help, a usage error without
// its socket, its command's exit status, and a real bridge from loopback
// TCP to the egress proxy's unix socket.
func TestEgressBridgeCommand(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	if r := p.exec("--help"); strings.Contains(r.stdout, "egress") {
		t.Errorf("--help shows the hidden bridge:\n%s", r.stdout)
	}
	// The sandbox runs it as the first argument, with no global flag.
	bridge := func(args ...string) *exec.Cmd {
		return exec.Command(vibeteam, append([]string{egress.BridgeCommand}, args...)...)
	}
	wantUsage(t, []string{egress.BridgeCommand}, runResult(t, bridge()), "--socket is required")
	wantCode(t, runResult(t, bridge("--listen", "127.0.0.1:0", "--socket", "/nonexistent", "--", "sh", "-c", "exit 7")), 7)

	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "reached") }))
	defer up.Close()
	upURL, _ := url.Parse(up.URL)
	allow, _ := egress.ParseRules([]string{upURL.Host})
	proxy, err := egress.New(egress.Config{Allow: allow})
	if err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(t.TempDir(), "e.sock")
	if err := proxy.ListenUnix(sock); err != nil {
		t.Fatal(err)
	}
	defer proxy.Close()

	listen := freeLoopback(t)
	cmd := bridge("--listen", listen, "--socket", sock)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitListening(t, listen)
	c := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(&url.URL{Scheme: "http", Host: listen})}}
	resp, err := c.Get(up.URL)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(body) != "reached" {
		t.Errorf("through the bridge: %d %q", resp.StatusCode, body)
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	if err := cmd.Wait(); err != nil {
		t.Errorf("the bridge ended with %v on SIGTERM, want exit 0", err)
	}
}

func freeLoopback(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// waitListening waits until addr accepts a connection.
func waitListening(t *testing.T, addr string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("nothing listens on %s: %v", addr, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
