package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// An acp task starts the acp mode's own command (claude-agent-acp for
// claude), not the adapter's: validate, run and doctor check that one.
func TestACPTaskChecksItsACPCommand(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	p.write("script.json", `{"turns": [{"steps": [{"say": "done"}]}]}`)
	// The adapter's own command is missing, its ACP command is there: an
	// acp task runs.
	p.write(".vibeteam/adapters/viaacp.yaml", "command: "+p.path("no-such-base-cli")+`
modes:
  acp:
    command: `+fakeACP+`
    env: { FAKEACP_SCRIPT: `+p.path("script.json")+`, FAKEACP_STATE: `+p.dir+` }
`)
	// The adapter's own command is there, its ACP command is not.
	p.write(".vibeteam/adapters/noacp.yaml", "command: "+fakeACP+`
modes:
  acp:
    command: no-such-acp-agent-xyz
`)
	p.write("ok.yaml", "id: ok\nstages:\n  - id: s\n    tasks:\n      - { id: t, adapter: viaacp, executionMode: acp, prompt: go }\n")
	p.write("bad.yaml", "id: bad\nstages:\n  - id: s\n    tasks:\n      - { id: t, adapter: noacp, executionMode: acp, prompt: go }\n")

	wantCode(t, p.exec("validate", "ok.yaml"), 0)
	wantCode(t, p.exec("run", "ok.yaml"), 0)

	r := p.exec("validate", "bad.yaml")
	wantCode(t, r, 2)
	if !strings.Contains(r.stderr, `bad.yaml:5:`) || !strings.Contains(r.stderr, `acp command "no-such-acp-agent-xyz" of adapter "noacp" is not installed`) {
		t.Errorf("validate:\n%s", r.stderr)
	}
	wantCode(t, p.exec("validate", "bad.yaml", "--offline"), 0)
	r = p.exec("run", "bad.yaml")
	wantCode(t, r, 2)
	if !strings.Contains(r.stderr, `acp command "no-such-acp-agent-xyz"`) {
		t.Errorf("run:\n%s", r.stderr)
	}
	r = p.exec("doctor", "bad.yaml")
	wantCode(t, r, 1)
	if b := block(t, r.stdout, "noacp"); !strings.Contains(b, "✗ acp      no-such-acp-agent-xyz is not on PATH: the acp tasks cannot start") {
		t.Errorf("doctor:\n%s", r.stdout)
	}
	// Without an acp task, a missing ACP command is only noted.
	p.write("plain.yaml", "id: plain\nstages:\n  - id: s\n    tasks:\n      - { id: t, adapter: noacp, executionMode: interactive, prompt: go }\n")
	p.write(".vibeteam/adapters/noacp.yaml", "command: "+fakeACP+"\nmodes:\n  interactive: {}\n  acp:\n    command: no-such-acp-agent-xyz\n")
	wantCode(t, p.exec("doctor", "plain.yaml"), 0)
}

// MCP servers of an acp task go in session/new, which every ACP agent
// takes: an adapter without an mcp: key (how it gives them to its CLI in
// the other modes) is no reason to refuse them.
func TestACPTaskTakesMCPServers(t *testing.T) {
	t.Parallel()
	p := acpProject(t, `{"turns": [{"steps": [{"say": "done"}]}]}`)
	p.write("mcp.yaml", "id: m\nstages:\n  - id: s\n    tasks:\n      - { id: t, adapter: acpfake, executionMode: acp, prompt: go, mcp: { ra: { command: true } } }\n")
	r := p.exec("validate", "mcp.yaml")
	wantCode(t, r, 0)
	wantCode(t, p.exec("run", "mcp.yaml"), 0)
	n := p.acpReceived("session/new")
	if len(n) != 1 || !strings.Contains(n[0], `"name":"ra"`) {
		t.Errorf("session/new %q", n)
	}
	// The same adapter in another mode still cannot pass them.
	p.write(".vibeteam/adapters/acpfake.yaml", "command: "+fakeACP+"\nmodes:\n  headless: {}\n  acp: {}\n")
	p.write("mcp2.yaml", "id: m2\nstages:\n  - id: s\n    tasks:\n      - { id: t, adapter: acpfake, executionMode: headless, prompt: go, mcp: { ra: { command: true } } }\n")
	r = p.exec("validate", "mcp2.yaml")
	wantCode(t, r, 2)
	if !strings.Contains(r.stderr, "gives no MCP servers to its CLI") {
		t.Errorf("validate:\n%s", r.stderr)
	}
}

// doctor names opencode v2's binary (opencode2) when it is on PATH, its
// version, and that it is not tested.
func TestDoctorNamesOpencode2(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	bin := t.TempDir()
	if err := os.WriteFile(filepath.Join(bin, "opencode2"), []byte("#!/bin/sh\necho 2.0.3\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := p.command("doctor")
	cmd.Env = append(cmd.Env, "PATH="+bin)
	r := runResult(t, cmd)
	if b := block(t, r.stdout, "opencode"); !strings.Contains(b, "  next     opencode2 "+filepath.Join(bin, "opencode2")+" (2.0.3): @opencode/cli is installed, not tested: this adapter runs opencode, tested 1.18.33") {
		t.Errorf("doctor:\n%s", r.stdout)
	}
	cmd = p.command("doctor", "--json")
	cmd.Env = append(cmd.Env, "PATH="+bin)
	r = runResult(t, cmd)
	if !strings.Contains(r.stdout, `"next": {`) || !strings.Contains(r.stdout, `"command": "opencode2"`) || !strings.Contains(r.stdout, `"tested": false`) {
		t.Errorf("doctor --json:\n%s", r.stdout)
	}
	// Without it, nothing is said.
	cmd = p.command("doctor")
	cmd.Env = append(cmd.Env, "PATH="+t.TempDir())
	if r := runResult(t, cmd); strings.Contains(r.stdout, "opencode2") {
		t.Errorf("doctor without opencode2:\n%s", r.stdout)
	}
}

// With no API key set, doctor says why a Google login is no way out for
// Gemini CLI any more.
func TestDoctorGeminiPersonalAccounts(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	run := func(env ...string) string {
		cmd := p.command("doctor")
		var kept []string
		for _, kv := range cmd.Env {
			if k, _, _ := strings.Cut(kv, "="); k != "GEMINI_API_KEY" && k != "GOOGLE_API_KEY" && k != "GOOGLE_APPLICATION_CREDENTIALS" && k != "PATH" {
				kept = append(kept, kv)
			}
		}
		cmd.Env = append(append(kept, "PATH="+t.TempDir()), env...)
		return block(t, runResult(t, cmd).stdout, "gemini")
	}
	const gone = "Gemini CLI no longer serves personal Google accounts (since 2026-06-18): use an API key (GEMINI_API_KEY) or Vertex AI"
	if b := run(); !strings.Contains(b, "! auth     none of GEMINI_API_KEY, GOOGLE_API_KEY, GOOGLE_APPLICATION_CREDENTIALS is set; "+gone) {
		t.Errorf("no key:\n%s", b)
	}
	if b := run("GEMINI_API_KEY=k"); strings.Contains(b, "personal Google accounts") || !strings.Contains(b, "✓ auth     GEMINI_API_KEY set") {
		t.Errorf("a key:\n%s", b)
	}
}

// An agent that cannot load the session a parked task had (gemini keeps
// none whose only turn was cancelled at its permission question): resume
// --allow starts a fresh session with the task's prompt after a note,
// warns, and the tool allowed runs.
func TestACPResumeOfAnUnloadableSessionStartsFresh(t *testing.T) {
	t.Parallel()
	p := acpProject(t, acpAsk)
	wantCode(t, p.exec("run", "wf.yaml"), 3)
	// The agent forgets the session.
	if err := os.Remove(p.path("fakeacp-acp-2.json")); err != nil {
		t.Fatal(err)
	}
	r := p.exec("resume", p.only().ID, "--allow", "execute")
	wantCode(t, r, 0)
	if !p.exists("allowed") || !strings.Contains(r.stderr, "the agent could not load its session acp-2 (session not found: acp-2): starting a fresh session with the task's prompt") {
		t.Errorf("resume:\n%s", r.stderr)
	}
	if l, n := p.acpReceived("session/load"), p.acpReceived("session/new"); len(l) != 1 || len(n) != 2 {
		t.Errorf("session/load %q, session/new %q", l, n)
	}
	prompts := p.acpReceived("session/prompt")
	if len(prompts) != 2 || !strings.Contains(prompts[1], "could not be continued") || !strings.Contains(prompts[1], "make it") {
		t.Errorf("prompts %q", prompts)
	}
}
