//go:build e2e

package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vibeteam/vibeteam/e2e/fakeanthropic"
	"github.com/vibeteam/vibeteam/e2e/fakegemini"
	"github.com/vibeteam/vibeteam/e2e/fakeopenai"
)

// fakeMCP builds testdata/fakemcp (a stdio MCP server with an echo tool)
// into the world, and returns its path and the file its calls go to.
func fakeMCP(t *testing.T, w *world) (bin, log string) {
	t.Helper()
	bin = filepath.Join(w.root, "fakemcp")
	build := exec.Command("go", "build", "-o", bin, "../testdata/fakemcp")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build fakemcp: %v\n%s", err, out)
	}
	return bin, filepath.Join(w.root, "mcp-calls.jsonl")
}

// mcpWorkflow is a one-task headless workflow whose task has the MCP
// server ra (the fake), logging to log.
func mcpWorkflow(w *world, bin, log string) string {
	path := filepath.Join(w.root, "wf.yaml")
	w.write(path, fmt.Sprintf(`id: e2e-mcp
mcp:
  ra: { command: %q, env: { FAKEMCP_LOG: %q } }
stages:
  - id: only
    tasks:
      - id: agent
        adapter: %s
        executionMode: headless
        timeout: 100s
        prompt: "Use the echo tool with the text hello."
`, bin, log, w.agent))
	return path
}

// The echo tool was really called through MCP.
func assertEchoCalled(t *testing.T, log string) {
	t.Helper()
	data, err := os.ReadFile(log)
	if err != nil || !strings.Contains(string(data), `"method":"tools/call"`) || !strings.Contains(string(data), "hello") {
		t.Errorf("the MCP server saw no tools/call with the text (%v):\n%s", err, data)
	}
}

// claude gets the task's MCP server (--mcp-config=… --strict-mcp-config),
// reports it connected, and with --auto-approve may call its tool.
func TestClaudeMCPServer(t *testing.T) {
	tool := "mcp__ra__echo"
	// Bash first, then the MCP tool: --auto-approve's Bash stays allowed
	// next to the MCP tools (two --allowedTools= elements).
	script := func(c fakeanthropic.Call) fakeanthropic.Reply {
		switch {
		case fakeanthropic.IsSideRequest(c.Request):
			return fakeanthropic.Text("Echo")
		case c.HasLast && c.Last.Type == "tool_result" && strings.Contains(c.Last.ResultText(), "echo:"):
			return fakeanthropic.Text("The tool said: " + c.Last.ResultText())
		case c.HasLast && c.Last.Type == "tool_result" && fakeanthropic.Offers(c.Request, tool):
			// Deferred (2.1.331+): loaded through ToolSearch first.
			return fakeanthropic.Deferred(c.Request, fakeanthropic.Reply{ToolUse: &fakeanthropic.ToolUse{Name: tool, Input: map[string]any{"text": "hello"}}})
		case fakeanthropic.Offers(c.Request, tool):
			return fakeanthropic.Bash("touch "+fakeanthropic.CreatedFile, "Create a file")
		}
		return fakeanthropic.Text("no echo tool was offered")
	}
	w := newWorld(t, worldOptions{approveKey: true, script: script})
	bin, log := fakeMCP(t, w)
	r := w.run("run", mcpWorkflow(w, bin, log), "--base-dir", w.project, "--auto-approve", "--headless")
	if r.code != 0 {
		t.Fatalf("%s, want 0", r)
	}
	assertEchoCalled(t, log)
	w.assertCreated()
	s := w.only()
	rec := s.Tasks["agent"]
	if rec.Agent == nil || !strings.Contains(rec.Agent.Result, "echo: hello") {
		t.Errorf("the agent's result: %+v", rec.Agent)
	}
	connected := false
	for _, e := range w.events(s.ID) {
		if e.str("event") == "agent.init" && strings.Contains(e.str("mcp_servers"), "ra") && strings.Contains(e.str("mcp_servers"), "connected") {
			connected = true
		}
	}
	if !connected {
		t.Error("no agent.init event reporting the server connected")
	}
}

// codex gets the server as -c mcp_servers.ra.*, approved for exec with
// --auto-approve, and calls its tool.
func TestCodexMCPServer(t *testing.T) {
	script := func(c fakeopenai.Call) fakeopenai.Reply {
		switch {
		case c.HasLast && c.Last.Type == "function_call_output":
			return fakeopenai.Text("The tool said: " + string(c.Last.Output))
		case c.Request.HasTool("mcp__ra"):
			return fakeopenai.Reply{Call: &fakeopenai.FunctionCall{Namespace: "mcp__ra", Name: "echo", Arguments: map[string]any{"text": "hello"}}}
		}
		return fakeopenai.Text("no echo tool was offered")
	}
	w := newCodexWorld(t, script)
	bin, log := fakeMCP(t, w)
	r := w.run("run", mcpWorkflow(w, bin, log), "--base-dir", w.project, "--auto-approve", "--headless")
	if r.code != 0 {
		t.Fatalf("%s, want 0", r)
	}
	assertEchoCalled(t, log)
	rec := w.only().Tasks["agent"]
	if rec.Agent == nil || !strings.Contains(rec.Agent.Result, "echo: hello") || rec.Agent.ToolCalls == 0 {
		t.Errorf("the agent's report: %+v", rec.Agent)
	}
}

// A server whose command is not there is a warning, and with --strict
// the task's failure, before any agent starts.
func TestMCPMissingCommand(t *testing.T) {
	w := newWorld(t, worldOptions{approveKey: true})
	wf := mcpWorkflow(w, filepath.Join(w.root, "no-such-server"), filepath.Join(w.root, "log"))
	r := w.run("run", wf, "--base-dir", w.project, "--auto-approve", "--headless", "--strict")
	if r.code != 1 || !strings.Contains(r.stderr, "MCP server ra") {
		t.Errorf("%s, want 1 naming the server", r)
	}
	if n := len(w.server.MessageRequests()); n != 0 {
		t.Errorf("the agent ran (%d requests) although --strict failed its task", n)
	}
}

// gemini gets the server in a settings file (GEMINI_CLI_SYSTEM_SETTINGS_PATH,
// trusted with --auto-approve) and calls its tool, mcp_ra_echo.
func TestGeminiMCPServer(t *testing.T) {
	tool := "mcp_ra_echo"
	script := func(c fakegemini.Call) fakegemini.Reply {
		switch {
		case c.HasLast && c.Last.FunctionResponse != nil:
			return fakegemini.Text("The tool said: " + string(c.Last.FunctionResponse.Response))
		case c.Request.HasTool(tool):
			return fakegemini.Reply{Call: &fakegemini.FunctionCall{Name: tool, Args: map[string]any{"text": "hello"}}}
		}
		return fakegemini.Text("no echo tool was offered")
	}
	w := newGeminiWorld(t, script)
	bin, log := fakeMCP(t, w)
	settings := filepath.Join(w.home, ".gemini", "settings.json")
	before, _ := os.ReadFile(settings)
	r := w.run("run", mcpWorkflow(w, bin, log), "--base-dir", w.project, "--auto-approve", "--headless")
	if r.code != 0 {
		t.Fatalf("%s, want 0", r)
	}
	assertEchoCalled(t, log)
	if after, _ := os.ReadFile(settings); string(after) != string(before) {
		t.Errorf("the user's gemini settings changed:\n%s", after)
	}
	if rec := w.only().Tasks["agent"]; rec.Agent == nil || !strings.Contains(rec.Agent.Result, "echo: hello") {
		t.Errorf("the agent's report: %+v", rec.Agent)
	}
}

// opencode gets the server in OPENCODE_CONFIG_CONTENT and calls its tool,
// ra_echo.
func TestOpencodeMCPServer(t *testing.T) {
	tool := "ra_echo"
	script := func(c fakeopenai.Call) fakeopenai.Reply {
		switch {
		case c.HasLast && c.Last.Type == "function_call_output":
			return fakeopenai.Text("The tool said: " + string(c.Last.Output))
		case c.Request.HasTool(tool):
			return fakeopenai.Reply{Call: &fakeopenai.FunctionCall{Name: tool, Arguments: map[string]any{"text": "hello"}}}
		}
		return fakeopenai.Text("no echo tool was offered")
	}
	w := newOpencodeWorld(t, script)
	bin, log := fakeMCP(t, w)
	r := w.run("run", mcpWorkflow(w, bin, log), "--base-dir", w.project, "--auto-approve", "--headless")
	if r.code != 0 {
		t.Fatalf("%s, want 0", r)
	}
	assertEchoCalled(t, log)
	if rec := w.only().Tasks["agent"]; rec.Agent == nil || !strings.Contains(rec.Agent.Result, "echo: hello") {
		t.Errorf("the agent's report: %+v", rec.Agent)
	}
}
