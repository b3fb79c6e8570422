package egress

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"
)

// keyCase is an agent's request as its CLI makes it: the key variable
// sent in its header to a path under the base URL variable.
type keyCase struct {
	adapter            string
	hostEnv            func(upstreamURL string) []string
	baseVar, keyVar    string
	path, header, pre  string
	wantPath, wantAuth string
}

var keyCases = []keyCase{
	{adapter: "claude", hostEnv: func(u string) []string {
		return []string{"ANTHROPIC_API_KEY=sk-ant-REAL", "ANTHROPIC_BASE_URL=" + u}
	}, baseVar: "ANTHROPIC_BASE_URL", keyVar: "ANTHROPIC_API_KEY", path: "/v1/messages", header: "x-api-key",
		wantPath: "/v1/messages", wantAuth: "sk-ant-REAL"},
	{adapter: "claude", hostEnv: func(u string) []string {
		return []string{"CLAUDE_CODE_OAUTH_TOKEN=sk-ant-oat-REAL", "ANTHROPIC_BASE_URL=" + u}
	}, baseVar: "ANTHROPIC_BASE_URL", keyVar: "CLAUDE_CODE_OAUTH_TOKEN", path: "/v1/messages", header: "Authorization", pre: "Bearer ",
		wantPath: "/v1/messages", wantAuth: "Bearer sk-ant-oat-REAL"},
	{adapter: "codex", hostEnv: func(u string) []string {
		return []string{"OPENAI_API_KEY=sk-REAL", "OPENAI_BASE_URL=" + u + "/v1"}
	}, baseVar: "OPENAI_BASE_URL", keyVar: "OPENAI_API_KEY", path: "/responses", header: "Authorization", pre: "Bearer ",
		wantPath: "/v1/responses", wantAuth: "Bearer sk-REAL"},
	{adapter: "gemini", hostEnv: func(u string) []string {
		return []string{"GEMINI_API_KEY=AIza-REAL", "GOOGLE_GEMINI_BASE_URL=" + u}
	}, baseVar: "GOOGLE_GEMINI_BASE_URL", keyVar: "GEMINI_API_KEY", path: "/v1beta/models/m:streamGenerateContent?alt=sse", header: "x-goog-api-key",
		wantPath: "/v1beta/models/m:streamGenerateContent", wantAuth: "AIza-REAL"},
	{adapter: "opencode", hostEnv: func(u string) []string {
		return []string{"ANTHROPIC_API_KEY=sk-ant-REAL", "ANTHROPIC_BASE_URL=" + u + "/v1"}
	}, baseVar: "ANTHROPIC_BASE_URL", keyVar: "ANTHROPIC_API_KEY", path: "/messages", header: "x-api-key",
		wantPath: "/v1/messages", wantAuth: "sk-ant-REAL"},
	{adapter: "opencode", hostEnv: func(u string) []string {
		return []string{"OPENAI_API_KEY=sk-REAL", "OPENAI_BASE_URL=" + u + "/v1"}
	}, baseVar: "OPENAI_BASE_URL", keyVar: "OPENAI_API_KEY", path: "/chat/completions", header: "Authorization", pre: "Bearer ",
		wantPath: "/v1/chat/completions", wantAuth: "Bearer sk-REAL"},
}

// The agent inside holds a placeholder and a base URL at the proxy; the
// fake model server receives the real key, at the path the agent asked.
// Both ways a client reaches the base URL are covered: directly (NO_PROXY
// honoured) and as an absolute URI through HTTP_PROXY (NO_PROXY ignored).
func TestKeysStayOutside(t *testing.T) {
	for _, kc := range keyCases {
		t.Run(kc.adapter+"/"+kc.keyVar, func(t *testing.T) {
			up := newUpstream(t, false)
			hostEnv := kc.hostEnv(up.URL)
			// A session's proxy runs first; each task's routes join it.
			proxy, proxyURL, ref := startProxyP(t, Config{Mode: ModeNone})
			api, ok := ForAdapter(kc.adapter, hostEnv, proxyURL)
			if !ok {
				t.Fatal("adapter unknown")
			}
			if err := proxy.AddRoutes(api.Routes...); err != nil {
				t.Fatal(err)
			}
			for _, kv := range api.Env {
				if strings.Contains(kv, "REAL") {
					t.Fatalf("the inside environment holds the key: %s", kv)
				}
			}
			key := envValue(api.Env, kc.keyVar)
			if key != Placeholder {
				t.Fatalf("%s inside = %q, want the placeholder", kc.keyVar, key)
			}
			for i, c := range []*http.Client{{}, viaProxy(t, proxyURL, nil)} {
				req, _ := http.NewRequest("POST", envValue(api.Env, kc.baseVar)+kc.path, strings.NewReader("{}"))
				req.Header.Set(kc.header, kc.pre+key)
				resp, err := c.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				got := up.last(t)
				if resp.StatusCode != 200 || got.URL.Path != kc.wantPath || got.Header.Get(kc.header) != kc.wantAuth {
					t.Errorf("client %d: status %d; the server got %s with %s=%q, want %s with %q",
						i, resp.StatusCode, got.URL.Path, kc.header, got.Header.Get(kc.header), kc.wantPath, kc.wantAuth)
				}
			}
			ref.none(t)
		})
	}
}

func TestForAdapterDefaults(t *testing.T) {
	api, ok := ForAdapter("claude", []string{"ANTHROPIC_API_KEY=k", "AWS_SECRET_ACCESS_KEY=x"}, "http://127.0.0.1:39281")
	if !ok || len(api.Routes) != 1 || api.Routes[0].Upstream != "https://api.anthropic.com" || api.Routes[0].Key != "k" {
		t.Fatalf("claude: %+v", api)
	}
	if got := envValue(api.Env, "ANTHROPIC_BASE_URL"); got != "http://127.0.0.1:39281/vibeteam/model/claude" {
		t.Errorf("base URL inside %q", got)
	}
	if strings.Contains(api.Routes[0].String(), "k)") || strings.Contains(api.Routes[0].GoString(), `"k"`) {
		t.Errorf("the route prints its key: %s", api.Routes[0])
	}
	// No key (an OAuth login): no route, no variable, and the hosts to allow.
	api, _ = ForAdapter("gemini", []string{"GOOGLE_GEMINI_BASE_URL=http://127.0.0.1:9/"}, "http://x")
	if len(api.Routes) != 0 || len(api.Env) != 0 || strings.Join(api.Hosts, " ") != "generativelanguage.googleapis.com:443 127.0.0.1:9" {
		t.Errorf("gemini without a key: %+v", api)
	}
	// opencode's anthropic base URL keeps /v1 inside, for SDKs that add it.
	api, _ = ForAdapter("opencode", []string{"ANTHROPIC_API_KEY=k"}, "http://x")
	if api.Routes[0].Upstream != "https://api.anthropic.com" || envValue(api.Env, "ANTHROPIC_BASE_URL") != "http://x/vibeteam/model/opencode-anthropic/v1" {
		t.Errorf("opencode: %+v", api)
	}
	// codex takes its base URL on the command line.
	api, _ = ForAdapter("codex", []string{"CODEX_API_KEY=k"}, "http://x")
	if strings.Join(api.Args, " ") != `-c openai_base_url="http://x/vibeteam/model/codex"` || envValue(api.Env, "CODEX_API_KEY") != Placeholder || api.Routes[0].Key != "k" {
		t.Errorf("codex: %+v", api)
	}
	if _, ok := ForAdapter("shell", nil, "http://x"); ok {
		t.Error("shell has no model API")
	}
}

// A streamed answer reaches the client chunk by chunk: the client reads
// the first event while the server still holds back the last one.
func TestStreamingIsNotBuffered(t *testing.T) {
	for _, ctype := range []string{"text/event-stream", "application/x-ndjson"} {
		t.Run(ctype, func(t *testing.T) {
			release := make(chan struct{})
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", ctype)
				io.WriteString(w, "data: first\n\n")
				w.(http.Flusher).Flush()
				<-release
				io.WriteString(w, "data: last\n\n")
			}))
			t.Cleanup(srv.Close)
			t.Cleanup(func() {
				select {
				case <-release:
				default:
					close(release)
				}
			})
			routes := []Route{{Name: "m", Upstream: srv.URL, Header: "x-api-key", Key: "real"}}
			proxyURL, _ := startProxy(t, Config{Routes: routes})
			resp, err := http.Post(proxyURL+RoutePrefix+"m/v1/messages", "application/json", strings.NewReader("{}"))
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			br := bufio.NewReader(resp.Body)
			first := make(chan string, 1)
			go func() {
				line, _ := br.ReadString('\n')
				first <- line
			}()
			select {
			case line := <-first:
				if line != "data: first\n" {
					t.Fatalf("first line %q", line)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("the first chunk did not arrive before the last was sent: the proxy buffers")
			}
			close(release)
			rest, err := io.ReadAll(br)
			if string(rest) != "\ndata: last\n\n" {
				t.Errorf("rest %q (%v)", rest, err)
			}
		})
	}
}

// Routes join a running proxy; the same route again is kept, another one
// under the same name is refused.
func TestAddRoutes(t *testing.T) {
	up := newUpstream(t, false)
	p, proxyURL, _ := startProxyP(t, Config{})
	r := Route{Name: "m", Upstream: up.URL, Header: "x-api-key", Key: "real"}
	if err := p.AddRoutes(r, r); err != nil {
		t.Fatal(err)
	}
	if err := p.AddRoutes(r); err != nil {
		t.Errorf("the same route again: %v", err)
	}
	other := r
	other.Key = "another"
	if err := p.AddRoutes(other); err == nil || !strings.Contains(err.Error(), "given twice") {
		t.Errorf("a different route under the same name: %v", err)
	}
	if code, body := get(t, http.DefaultClient, proxyURL+RoutePrefix+"m/x"); code != 200 || body != "hello from /x" || up.last(t).Header.Get("x-api-key") != "real" {
		t.Errorf("%d %q", code, body)
	}
	for _, bad := range []Route{{Name: "a/b", Upstream: up.URL, Header: "h", Key: "k"}, {Name: "n", Upstream: "ftp://x", Header: "h", Key: "k"}, {Name: "n", Upstream: up.URL, Header: "h"}} {
		if err := p.AddRoutes(bad); err == nil {
			t.Errorf("accepted %v", bad)
		}
	}
	env := InsideEnv("http://127.0.0.1:1", ModelAPI{Env: []string{"OPENAI_API_KEY=" + Placeholder}})
	if env["HTTPS_PROXY"] != "http://127.0.0.1:1" || env["OPENAI_API_KEY"] != Placeholder || env["NO_PROXY"] == "" {
		t.Errorf("InsideEnv %v", env)
	}
}

// A client that tunnels even its plain-http base URL through HTTPS_PROXY
// (undici's ProxyAgent, as Gemini CLI installs it, ignores NO_PROXY and
// always sends CONNECT) reaches its route: a CONNECT to the bridge's own
// address is served by the proxy itself. Another loopback port is still
// refused.
func TestConnectToTheBridgeReachesTheRoute(t *testing.T) {
	up := newUpstream(t, false)
	hostEnv := []string{"GEMINI_API_KEY=AIza-REAL", "GOOGLE_GEMINI_BASE_URL=" + up.URL}
	inside := InsideURL(DefaultBridgeListen)
	api, _ := ForAdapter("gemini", hostEnv, inside)
	proxyURL, ref := startProxy(t, Config{Routes: api.Routes})
	proxyAddr := strings.TrimPrefix(proxyURL, "http://")

	c, err := net.Dial("tcp", proxyAddr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	base, _ := url.Parse(envValue(api.Env, "GOOGLE_GEMINI_BASE_URL"))
	fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", base.Host, base.Host)
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("CONNECT to the bridge: %v %v", resp, err)
	}
	fmt.Fprintf(c, "POST %s/v1beta/models/m:generateContent HTTP/1.1\r\nHost: %s\r\nx-goog-api-key: %s\r\nContent-Length: 2\r\n\r\n{}",
		base.Path, base.Host, envValue(api.Env, "GEMINI_API_KEY"))
	resp, err = http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(body) != "hello from /v1beta/models/m:generateContent" || up.last(t).Header.Get("x-goog-api-key") != "AIza-REAL" {
		t.Errorf("through the tunnel to the bridge: %d %q", resp.StatusCode, body)
	}
	if code, _ := rawConnect(t, proxyAddr, "127.0.0.1:39282"); code != http.StatusForbidden {
		t.Errorf("CONNECT to another loopback port: %d", code)
	}
	if r := ref.next(t); r.Port != 39282 {
		t.Errorf("refusal %+v", r)
	}
}
