package adapters

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// modes.acp: its keys, checked and located like the other modes'.
func TestACPModeErrors(t *testing.T) {
	for _, c := range []struct{ name, src, want string }{
		{"unknown key", "command: a\nmodes: { acp: { cmd: x } }\n", `x.yaml:2:17: modes.acp: unknown key "cmd" (known: command, args, env, sessionMode, autoApproveMode)`},
		{"empty command", "command: a\nmodes: { acp: { command: '' } }\n", "x.yaml:2:26: modes.acp.command: must not be empty"},
		{"args not a list", "command: a\nmodes: { acp: { args: --acp } }\n", "x.yaml:2:23: modes.acp.args: must be a list of strings"},
		{"bad path", "command: a\nmodes: { acp: { env: { X: '{path:}' } } }\n", `x.yaml:2:22: modes.acp.env.X: "{path:NAME}" needs a command name, e.g. "{path:claude}"; got "{path:}"`},
		{"not a mapping", "command: a\nmodes: { acp: 3 }\n", "x.yaml:2:15: modes.acp: must be a mapping such as { command: claude-agent-acp, args: [] }"},
		{"acp alone", "command: a\nmodes: { acp: { args: [--acp] } }\n", ""},
		{"acp null", "command: a\nmodes: { acp: }\n", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := parseDefinition("x.yaml", []byte(c.src))
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != c.want {
				t.Errorf("got  %q\nwant %q", got, c.want)
			}
		})
	}
}

// The ACP launch: its own command, args then extraArgs, env layered
// (adapter, modes.acp with {path:NAME} resolved, task), the session mode
// by --auto-approve, the session to load, and MCP servers for session/new.
func TestACPLaunchConfig(t *testing.T) {
	bin := t.TempDir()
	if err := os.WriteFile(filepath.Join(bin, "myclaude"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin)
	def, err := parseDefinition("x.yaml", []byte(`command: agent
env: { A: adapter, B: adapter }
modes:
  headless: {}
  acp:
    command: agent-acp
    args: [--stdio]
    env: { B: acp, C: acp, EXE: "{path:myclaude}", GONE: "{path:not-there}" }
    sessionMode: ask
    autoApproveMode: bypass
`))
	if err != nil {
		t.Fatal(err)
	}
	mcp := []MCPServer{{Name: "files", Command: "fs"}}
	a := newInstance(def, Options{Env: map[string]string{"C": "task"}, MCP: mcp, Continue: &Continuation{Session: "s-9", Allow: []string{"Bash"}}})
	lc, err := a.LaunchConfig(ACP, "do it", []string{"--model", "m"})
	if err != nil {
		t.Fatal(err)
	}
	if lc.Command != "agent-acp" || !reflect.DeepEqual(lc.Args, []string{"--stdio", "--model", "m"}) || lc.UsePTY || lc.Stdin != "" {
		t.Fatalf("launch %+v", lc)
	}
	want := map[string]string{"A": "adapter", "B": "acp", "C": "task", "EXE": filepath.Join(bin, "myclaude")}
	if !reflect.DeepEqual(lc.Env, want) {
		t.Fatalf("env %v, want %v", lc.Env, want)
	}
	w := &ACPLaunch{Prompt: "do it", SessionMode: "ask", Load: "s-9", Allow: []string{"Bash"}, MCP: mcp}
	if !reflect.DeepEqual(lc.ACP, w) {
		t.Fatalf("acp %+v, want %+v", lc.ACP, w)
	}
	lc, err = newInstance(def, Options{AutoApprove: true}).LaunchConfig(ACP, "x", nil)
	if err != nil || lc.ACP.SessionMode != "bypass" || !lc.ACP.AutoApprove || lc.ACP.Load != "" {
		t.Fatalf("auto-approve: %+v %v", lc.ACP, err)
	}
	if _, err := newInstance(def, Options{}).LaunchConfig(Interactive, "x", nil); err == nil || err.Error() != "adapter x has no interactive mode" {
		t.Fatalf("err %v", err)
	}
	shell := mustNew(t, NewRegistry(), "shell")
	if _, err := shell.LaunchConfig(ACP, "x", nil); err == nil || err.Error() != "adapter shell has no acp mode (its file has no modes.acp)" {
		t.Fatalf("err %v", err)
	}
}

// The built-ins' ACP commands, env and session modes, as the probe of the
// five agents ran them: claude and codex through their ACP adapters with
// the user's CLI, and a session mode that asks.
func TestBuiltinACP(t *testing.T) {
	bin := t.TempDir()
	for _, name := range []string{"claude", "codex"} {
		if err := os.WriteFile(filepath.Join(bin, name), []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("PATH", bin)
	for _, c := range []struct {
		adapter, mode string
		argv          []string
		env           map[string]string
	}{
		{"claude", "default", []string{"claude-agent-acp"}, map[string]string{"CLAUDE_CODE_EXECUTABLE": filepath.Join(bin, "claude")}},
		{"codex", "workspace-write", []string{"codex-acp"}, map[string]string{"CODEX_PATH": filepath.Join(bin, "codex")}},
		{"gemini", "default", []string{"gemini", "--acp"}, nil},
		{"opencode", "", []string{"opencode", "acp"}, map[string]string{"OPENCODE_CONFIG_CONTENT": `{"permission":{"edit":"ask","bash":"ask","webfetch":"ask"}}`}},
		{"qwen", "default", []string{"qwen", "--acp"}, nil},
	} {
		lc, err := mustNew(t, NewRegistry(), c.adapter).LaunchConfig(ACP, "hi", nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := append([]string{lc.Command}, lc.Args...); !reflect.DeepEqual(got, c.argv) || !reflect.DeepEqual(lc.Env, c.env) || lc.ACP.SessionMode != c.mode {
			t.Errorf("%s: %q env %v mode %q", c.adapter, got, lc.Env, lc.ACP.SessionMode)
		}
		if r := NewRegistry(); !r.HasMode(c.adapter, "acp") || r.ACPCommand(c.adapter) != c.argv[0] {
			t.Errorf("%s: HasMode acp %v, ACPCommand %q", c.adapter, r.HasMode(c.adapter, "acp"), r.ACPCommand(c.adapter))
		}
	}
}

// qwen's headless mode: stream-json (Claude Code's format), the prompt in
// --prompt=, resumed by --resume.
func TestBuiltinQwenHeadless(t *testing.T) {
	a, err := NewRegistry().New("qwen", Options{AutoApprove: true, Continue: &Continuation{Session: "q-1", Allow: []string{"run_shell_command"}}})
	if err != nil {
		t.Fatal(err)
	}
	lc, err := a.LaunchConfig(Headless, "hi", nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"qwen", "--output-format", "stream-json", "--approval-mode", "yolo", "--allowed-tools=run_shell_command", "--resume", "q-1", "--prompt=hi"}
	if got := append([]string{lc.Command}, lc.Args...); !reflect.DeepEqual(got, want) || lc.Output != OutputClaudeStreamJSON {
		t.Fatalf("%q %s", got, lc.Output)
	}
}

// The example adapter files of ACP agents load, each with an acp mode
// and marked as not run in e2e.
func TestExampleACPAdapters(t *testing.T) {
	paths, err := filepath.Glob("../examples/adapters/*.yaml")
	if err != nil || len(paths) < 7 {
		t.Fatalf("%d examples (%v)", len(paths), err)
	}
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		def, err := parseDefinition(p, data)
		if err != nil {
			t.Errorf("%v", err)
			continue
		}
		if def.acp == nil || len(def.modes) != 0 {
			t.Errorf("%s: want an acp mode alone", p)
		}
		if !strings.Contains(string(data), "Not run in e2e") || !strings.Contains(def.description, "not run in e2e") {
			t.Errorf("%s: not marked as not run in e2e", p)
		}
	}
}
