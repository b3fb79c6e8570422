//go:build e2e

package e2e

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vibeteam/vibeteam/core/sandbox"
	"github.com/vibeteam/vibeteam/core/sandbox/egress"
	"github.com/vibeteam/vibeteam/e2e/fakeanthropic"
	"github.com/vibeteam/vibeteam/e2e/fakegemini"
	"github.com/vibeteam/vibeteam/e2e/fakeopenai"
)

// sandboxRealKey is the key vibeteam's environment holds in the sandbox
// tests: only the proxy outside may send it to the fake model server.
const sandboxRealKey = "sk-real-e2e-sandbox-0123456789"

// sandboxCase is one real CLI in the sandbox: its world, whose fake model
// answers the create prompt with the shell command cmd, and the keys the
// fake model server received on the model's requests.
type sandboxCase struct {
	agent string
	world func(t *testing.T, cmd string) *world
	keys  func(w *world) []string
}

var sandboxCases = []sandboxCase{
	{"claude", sandboxClaudeWorld, func(w *world) []string {
		var keys []string
		for _, r := range w.server.MessageRequests() {
			keys = append(keys, r.Header.Get("x-api-key"))
		}
		return keys
	}},
	{"codex", sandboxCodexWorld, openaiKeys},
	{"gemini", sandboxGeminiWorld, func(w *world) []string {
		var keys []string
		for _, r := range w.gemini.MainRequests() {
			keys = append(keys, r.Header.Get("x-goog-api-key"))
		}
		return keys
	}},
	{"opencode", sandboxOpencodeWorld, openaiKeys},
}

func openaiKeys(w *world) []string {
	var keys []string
	// Every /v1/responses request: codex's main loop on its built-in
	// provider offers no tools field, which MainRequests takes for a side
	// request.
	for _, r := range w.openai.ResponsesRequests() {
		keys = append(keys, strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer "))
	}
	return keys
}

// Each real CLI, headless with --auto-approve in vibeteam's sandbox, its
// model requests going through the session's egress proxy to a fake
// model server: the model has it run a command that creates the file,
// prints its environment and tries to reach a second server on another
// loopback port, directly and through the proxy. The file is in the
// project; the fake server received the real key while the agent's
// environment held only the placeholder; the second server was never
// reached.
func TestSandboxedAgents(t *testing.T) {
	if _, err := sandbox.Find(); err != nil {
		t.Skipf("no sandbox here (%v): the real agents in the sandbox are not tested", err)
	}
	for _, c := range sandboxCases {
		t.Run(c.agent, func(t *testing.T) {
			needAgent(t, c.agent)
			var otherHits atomic.Int32
			other := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
				otherHits.Add(1)
				fmt.Fprintln(rw, "reached the other server")
			}))
			defer other.Close()
			cmd := fmt.Sprintf(`touch %s; env > sandbox-env.txt; { curl -sS -m 20 %[2]s/direct; echo; curl -sS -m 20 --noproxy '' -x "$HTTP_PROXY" %[2]s/proxied; echo; } > sandbox-net.txt 2>&1; true`, createdFile, other.URL)
			w := c.world(t, cmd)
			w.timeout = 5 * time.Minute // a real CLI on a loaded machine
			r := w.run("run", w.workflow("headless"), "--base-dir", w.project, "--auto-approve", "--headless", "--sandbox")
			if r.code != 0 {
				t.Errorf("%s, want 0\nstderr:\n%s", r, clipTail(r.stderr, 3000))
			}
			w.assertDone(w.only())
			if _, err := os.Stat(filepath.Join(w.project, createdFile)); err != nil {
				t.Errorf("the agent did not create %s in the project: %v", createdFile, err)
			}
			env, err := os.ReadFile(filepath.Join(w.project, "sandbox-env.txt"))
			if err != nil {
				t.Fatalf("the agent's command did not print its environment: %v", err)
			}
			if strings.Contains(string(env), sandboxRealKey) {
				t.Errorf("the real key is in the agent's environment:\n%s", env)
			}
			if !strings.Contains(string(env), "="+egress.Placeholder) {
				t.Errorf("no variable holds the placeholder key in the agent's environment:\n%s", env)
			}
			keys := c.keys(w)
			if len(keys) == 0 {
				t.Errorf("the fake model server received no model request")
			}
			for _, k := range keys {
				if k != sandboxRealKey {
					t.Errorf("the fake model server received key %q, want the real one", k)
				}
			}
			net, err := os.ReadFile(filepath.Join(w.project, "sandbox-net.txt"))
			if err != nil {
				t.Errorf("the agent's command did not try the other server: %v", err)
			}
			if n := otherHits.Load(); n != 0 || strings.Contains(string(net), "reached the other server") {
				t.Errorf("the other server was reached %d times; the command saw:\n%s", n, net)
			}
			refused := "vibeteam sandbox: host " + strings.TrimPrefix(other.URL, "http://") + " is not allowed"
			if !strings.Contains(string(net), refused) || !strings.Contains(string(net), "Failed to connect") {
				t.Errorf("the other server was not refused both directly (Failed to connect) and by the proxy (%s); the command saw:\n%s", refused, net)
			}
		})
	}
}

func sandboxClaudeWorld(t *testing.T, cmd string) *world {
	w := newWorldIn(t, worldRoot(t), worldOptions{script: fakeanthropic.ToolScript(fakeanthropic.CreateTrigger,
		fakeanthropic.Bash(cmd, "Create a file"), fakeanthropic.DoneText, "OK.", "Create a file")})
	w.env = replaceEnv(w.env, "ANTHROPIC_API_KEY", sandboxRealKey)
	return w
}

func sandboxGeminiWorld(t *testing.T, cmd string) *world {
	w := newGeminiWorld(t, fakegemini.Sequence(fakegemini.CreateTrigger, fakegemini.DoneText, fakegemini.OtherText, fakegemini.Shell(cmd)))
	w.env = replaceEnv(w.env, "GEMINI_API_KEY", sandboxRealKey)
	return w
}

// sandboxCodexWorld is codex on its built-in openai provider, whose base
// URL (OPENAI_BASE_URL outside) and key the proxy holds: a provider of the
// config's own, with its base_url, would go around the proxy's routes.
func sandboxCodexWorld(t *testing.T, cmd string) *world {
	needCodex(t)
	w := newBareWorld(t, "codex", worldRoot(t))
	// On its built-in provider codex (0.171) sends its tools in an input
	// item, not in tools, and a configuration_update item after the
	// prompt: the trigger is looked for in every user message.
	w.openai = fakeopenai.New(t, func(c fakeopenai.Call) fakeopenai.Reply {
		if c.HasLast && c.Last.IsCallOutput() {
			return fakeopenai.Text(fakeopenai.DoneText)
		}
		for _, text := range c.Request.UserTexts() {
			if strings.Contains(strings.ToLower(text), fakeopenai.CreateTrigger) {
				return fakeopenai.Exec(cmd, false)
			}
		}
		return fakeopenai.Text(fakeopenai.OtherText)
	})
	codexHome := filepath.Join(w.root, "codex-home")
	w.write(filepath.Join(codexHome, "config.toml"), "model = \"gpt-fake\"\n")
	// There, as on a machine where codex ran before: codex writes it even
	// with its CODEX_HOME elsewhere, and the session gets a copy.
	if err := os.MkdirAll(filepath.Join(w.home, ".codex"), 0o755); err != nil {
		t.Fatal(err)
	}
	w.env = []string{"CODEX_HOME=" + codexHome, "OPENAI_API_KEY=" + sandboxRealKey, "OPENAI_BASE_URL=" + w.openai.URL() + "/v1"}
	return w
}

// sandboxOpencodeWorld is opencode on its built-in openai provider (the
// key and base URL from the environment, which the proxy holds).
func sandboxOpencodeWorld(t *testing.T, cmd string) *world {
	needOpencode(t)
	w := newBareWorld(t, "opencode", worldRoot(t))
	w.openai = fakeopenai.New(t, fakeopenai.Sequence(createTrigger, fakeopenai.DoneText, fakeopenai.OtherText, fakeopenai.Bash(cmd)))
	cfg := filepath.Join(w.root, "opencode.json")
	w.write(cfg, `{"model":"openai/gpt-fake","provider":{"openai":{"models":{"gpt-fake":{"name":"Fake Model","tool_call":true}}}}}`+"\n")
	w.env = []string{"OPENCODE_CONFIG=" + cfg, "OPENCODE_DISABLE_MODELS_FETCH=1", "OPENCODE_DISABLE_AUTOUPDATE=1",
		"OPENAI_API_KEY=" + sandboxRealKey, "OPENAI_BASE_URL=" + w.openai.URL() + "/v1"}
	for _, x := range []string{"CONFIG", "DATA", "CACHE", "STATE"} {
		dir := filepath.Join(w.root, "xdg", strings.ToLower(x))
		w.env = append(w.env, "XDG_"+x+"_HOME="+dir)
		// There, as on a machine where opencode ran before: the sandbox
		// gives the session a copy of what is there.
		if err := os.MkdirAll(filepath.Join(dir, "opencode"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return w
}

// replaceEnv is env with name set to value.
func replaceEnv(env []string, name, value string) []string {
	out := []string{name + "=" + value}
	for _, kv := range env {
		if !strings.HasPrefix(kv, name+"=") {
			out = append(out, kv)
		}
	}
	return out
}
