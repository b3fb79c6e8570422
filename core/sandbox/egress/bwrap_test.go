package egress

import (
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// sandboxClient is the agent inside the bubblewrap test: each argument is
// a probe, and each probe prints one line of what it saw.
//
//	proxy=URL   a GET through HTTP_PROXY (loopback included)
//	direct=URL  a GET with no proxy at all
//	route       POST $ANTHROPIC_BASE_URL/v1/messages with x-api-key
//	            $ANTHROPIC_API_KEY, as Claude Code does (NO_PROXY honoured)
func sandboxClient(args []string) int {
	proxy, err := url.Parse(os.Getenv("HTTP_PROXY"))
	if err != nil {
		fmt.Println("bad HTTP_PROXY:", err)
		return 1
	}
	clients := map[string]*http.Client{
		"proxy":  {Transport: &http.Transport{Proxy: http.ProxyURL(proxy)}, Timeout: 10 * time.Second},
		"direct": {Transport: &http.Transport{}, Timeout: 10 * time.Second},
		"route":  {Transport: &http.Transport{Proxy: http.ProxyFromEnvironment}, Timeout: 10 * time.Second},
	}
	for _, a := range args {
		kind, u, _ := strings.Cut(a, "=")
		req, _ := http.NewRequest("GET", u, nil)
		if kind == "route" {
			req, _ = http.NewRequest("POST", os.Getenv("ANTHROPIC_BASE_URL")+"/v1/messages", strings.NewReader("{}"))
			req.Header.Set("x-api-key", os.Getenv("ANTHROPIC_API_KEY"))
		}
		resp, err := clients[kind].Do(req)
		if err != nil {
			fmt.Printf("%s error\n", kind)
			continue
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		fmt.Printf("%s %d %s\n", kind, resp.StatusCode, strings.TrimSpace(string(b)))
	}
	fmt.Printf("key %s\n", os.Getenv("ANTHROPIC_API_KEY"))
	return 0
}

// needBwrap skips when bubblewrap is missing or cannot make a network
// namespace here.
func needBwrap(t *testing.T) string {
	t.Helper()
	bwrap, err := exec.LookPath("bwrap")
	if err != nil {
		t.Skip("bubblewrap is not installed (apt-get install bubblewrap): the in-sandbox bridge is not tested")
	}
	if out, err := exec.Command(bwrap, "--ro-bind", "/", "/", "--unshare-net", "--", "true").CombinedOutput(); err != nil {
		t.Skipf("bwrap cannot make a network namespace here: %v %s", err, out)
	}
	return bwrap
}

// The bridge inside a real `bwrap --unshare-net`: the agent reaches an
// allowed host and the model route (with the real key added outside), a
// host that is not allowed is refused, and the direct way out does not
// exist.
func TestBridgeInsideBubblewrap(t *testing.T) {
	bwrap := needBwrap(t)
	allowed, other, model := newUpstream(t, false), newUpstream(t, false), newUpstream(t, false)
	allowedHP, _ := allowed.hostPort(t)
	hostEnv := []string{"ANTHROPIC_API_KEY=sk-ant-REAL", "ANTHROPIC_BASE_URL=" + model.URL}
	pre, _ := ForAdapter("claude", hostEnv, "http://unused")
	sock, ref := startUnixProxy(t, Config{Allow: rules(t, allowedHP), Routes: pre.Routes})

	inside := InsideURL(DefaultBridgeListen)
	api, _ := ForAdapter("claude", hostEnv, inside)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	client := []string{"/usr/bin/env", "EGRESS_TEST_MODE=client", self,
		"proxy=" + allowed.URL + "/in", "proxy=" + other.URL + "/out", "direct=" + allowed.URL + "/direct", "route"}
	argv := append([]string{bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
		"--bind", filepath.Dir(sock), filepath.Dir(sock), "--unshare-net", "--unshare-pid", "--die-with-parent", "--"},
		append(BridgeWrap(self, DefaultBridgeListen, sock), client...)...)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(append([]string{"EGRESS_TEST_MODE=bridge", "PATH=" + os.Getenv("PATH")}, ProxyEnv(inside)...), api.Env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("bwrap: %v\n%s", err, out)
	}
	want := []string{
		"proxy 200 hello from /in",
		"proxy 403 vibeteam sandbox: host " + strings.TrimPrefix(other.URL, "http://") + " is not allowed; add it under sandbox.allow",
		"direct error",
		"route 200 hello from /v1/messages",
		"key " + Placeholder,
	}
	if got := strings.TrimSpace(string(out)); got != strings.Join(want, "\n") {
		t.Errorf("inside the sandbox:\n%s\nwant:\n%s", got, strings.Join(want, "\n"))
	}
	if k := model.last(t).Header.Get("x-api-key"); k != "sk-ant-REAL" {
		t.Errorf("the model server got key %q", k)
	}
	if other.hits() != 0 || allowed.hits() != 1 {
		t.Errorf("hits: other %d, allowed %d", other.hits(), allowed.hits())
	}
	ref.next(t)
}
