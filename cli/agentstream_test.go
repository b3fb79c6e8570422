package cli

import (
	"fmt"
	"strings"
	"testing"

	"github.com/vibeteam/vibeteam/core/state"
)

// structuredProject has an adapter "structured" whose headless mode is the
// fake agent printing a file of JSON lines (cat=FILE) in the given output
// format, then exiting with the code asked (exit=N).
func structuredProject(t *testing.T, format string) *project {
	t.Helper()
	p := newProject(t)
	p.write(".vibeteam/adapters/structured.yaml", fmt.Sprintf(`name: structured
command: %s
modes:
  headless:
    args: []
    output: %s
    prompt: { position: arg }
`, fakeAgent, format))
	return p
}

// continuingAdapter is the adapter "structured" as a CLI that can continue
// its session: claude stream-json, argv recorded to argv.json, and the
// continuation (its resume args) printing continued.jsonl; allow says
// whether it can allow tools.
func continuingAdapter(p *project, allow bool) {
	p.t.Helper()
	allowLine := ""
	if allow {
		allowLine = "    allow: [\"--allowedTools={tools}\"]\n"
	}
	p.write(".vibeteam/adapters/structured.yaml", fmt.Sprintf(`name: structured
command: %s
modes:
  headless:
    args: [record=argv.json]
    output: claude-stream-json
    resume: [--resume, "{session}", cat=continued.jsonl]
%s    prompt: { position: arg, separator: "--" }
`, fakeAgent, allowLine))
}

func structuredWorkflow(p *project, prompt string) {
	p.write("wf.yaml", `id: structured
stages:
  - id: s
    tasks:
      - { id: t, adapter: structured, executionMode: headless, prompt: "`+prompt+`" }
`)
}

const claudeToolRun = `{"type":"system","subtype":"init","session_id":"sess-42","model":"claude-fake","mcp_servers":[{"name":"ra","status":"connected"}]}
{"type":"assistant","message":{"role":"assistant","content":[{"type":"text","text":"I will create the file."},{"type":"tool_use","id":"toolu_1","name":"Bash","input":{"command":"touch x.txt","description":"Create a file"}}]},"session_id":"sess-42"}
{"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"","is_error":false}]},"session_id":"sess-42"}
{"type":"assistant","message":{"role":"assistant","content":[{"type":"text","text":"Created x.txt."}]},"session_id":"sess-42"}
{"type":"result","subtype":"success","is_error":false,"num_turns":2,"result":"Created x.txt.","session_id":"sess-42","total_cost_usd":0.0123,"usage":{"input_tokens":246,"output_tokens":20,"cache_creation_input_tokens":3,"cache_read_input_tokens":7},"permission_denials":[]}
`

// A headless agent's structured output becomes events as it streams, a
// readable log, and the run's report in the session: session id, tokens,
// cost, tool calls; show prints them.
func TestStructuredOutputIsReadAndRecorded(t *testing.T) {
	t.Parallel()
	p := structuredProject(t, "claude-stream-json")
	p.write("run.jsonl", claudeToolRun)
	structuredWorkflow(p, "cat=run.jsonl")
	r := p.exec("run", "wf.yaml")
	wantCode(t, r, 0)
	s := p.only()
	rec := s.Tasks["t"]
	if s.TaskStatus["t"] != state.TaskDone || rec.Agent == nil {
		t.Fatalf("status %s, agent %+v", s.TaskStatus["t"], rec.Agent)
	}
	a := rec.Agent
	if s.Agents == nil || s.Agents.Tokens.Input != 246 || s.Agents.CostUSD != 0.0123 || s.Agents.ToolCalls != 1 || s.Agents.Runs != 1 {
		t.Errorf("the session's totals: %+v", s.Agents)
	}
	if a.SessionID != "sess-42" || a.Tokens.Input != 246 || a.Tokens.Output != 20 || a.Tokens.CacheRead != 7 || a.Tokens.CacheWrite != 3 || a.CostUSD != 0.0123 || a.ToolCalls != 1 || a.Turns != 2 || a.Result != "Created x.txt." {
		t.Errorf("the record: %+v", a)
	}
	kinds := map[string]int{}
	for _, e := range p.events(s.ID) {
		kinds[e.Kind()]++
		switch e.Kind() {
		case "agent.tool_call":
			if e.Fields()["tool"] != "Bash" || !strings.Contains(fmt.Sprint(e.Fields()["input"]), "touch x.txt") {
				t.Errorf("tool call event: %v", e.Fields())
			}
		case "agent.usage":
			if fmt.Sprint(e.Fields()["input_tokens"]) != "246" {
				t.Errorf("usage event: %v", e.Fields())
			}
		case "agent.init":
			if e.Fields()["session_id"] != "sess-42" || !strings.Contains(fmt.Sprint(e.Fields()["mcp_servers"]), "connected") {
				t.Errorf("init event: %v", e.Fields())
			}
		case "session_finished":
			if !strings.Contains(fmt.Sprint(e.Fields()["agents"]), "246") {
				t.Errorf("no totals at the end: %v", e.Fields())
			}
		}
	}
	for _, k := range []string{"agent.init", "agent.message", "agent.tool_call", "agent.tool_result", "agent.usage"} {
		if kinds[k] == 0 {
			t.Errorf("no %s event (have %v)", k, kinds)
		}
	}
	log := p.read(strings.TrimPrefix(rec.LogPath, p.dir+"/"))
	if strings.Contains(log, `{"type"`) || !strings.Contains(log, "▸ Bash") || !strings.Contains(log, "touch x.txt") || !strings.Contains(log, "Created x.txt.") {
		t.Errorf("the task's log is not the readable run:\n%s", log)
	}
	r = p.exec("show", s.ID)
	wantCode(t, r, 0)
	for _, want := range []string{"agent: 246 in, 20 out tokens, 1 tool call(s), $0.0123, 2 turn(s), session sess-42", "agents    246 in, 20 out"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("show lacks %q:\n%s", want, r.stdout)
		}
	}
}

// A run the agent itself reports as failed is never DONE, whatever its
// exit code, and the failure names the agent's message.
func TestAgentReportedErrorFailsTheTask(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		format, lines, exit, want string
	}{
		{"claude-stream-json", `{"type":"result","subtype":"success","is_error":true,"api_error_status":400,"result":"API Error: 400 invalid model","session_id":"s1"}`, "0", "API Error: 400 invalid model"},
		{"claude-stream-json", `{"type":"result","subtype":"success","is_error":true,"api_error_status":400,"result":"API Error: 400 invalid model","session_id":"s1"}`, "1", "API Error: 400 invalid model"},
		{"codex-json", `{"type":"thread.started","thread_id":"th1"}` + "\n" + `{"type":"turn.failed","error":{"message":"unexpected status 400 Bad Request"}}`, "1", "unexpected status 400 Bad Request"},
		{"gemini-stream-json", `{"type":"init","session_id":"g1","model":"m"}` + "\n" + `{"type":"result","status":"error","error":{"type":"api_error","message":"[API Error: 400 quota]"}}`, "144", "[API Error: 400 quota]"},
		{"opencode-json", `{"type":"error","sessionID":"o1","error":{"name":"APIError","data":{"message":"Bad Request","statusCode":400}}}`, "0", "Bad Request"},
	} {
		t.Run(c.format+"/exit"+c.exit, func(t *testing.T) {
			t.Parallel()
			p := structuredProject(t, c.format)
			p.write("run.jsonl", c.lines+"\n")
			structuredWorkflow(p, "cat=run.jsonl exit="+c.exit)
			r := p.exec("run", "wf.yaml")
			wantCode(t, r, 1)
			rec := p.only().Tasks["t"]
			if rec.Reason != "agent_error" || !strings.Contains(rec.Error, c.want) {
				t.Errorf("reason %q error %q, want agent_error naming %q", rec.Reason, rec.Error, c.want)
			}
			if !strings.Contains(r.stderr, c.want) {
				t.Errorf("stderr does not name the agent's error:\n%s", r.stderr)
			}
		})
	}
}

// A tool call the agent was refused is never a silent success: without a
// terminal the session parks (exit 3) with the denial, and says how to
// allow it.
func TestDenialParksWithoutATerminal(t *testing.T) {
	t.Parallel()
	p := structuredProject(t, "claude-stream-json")
	p.write("run.jsonl", `{"type":"system","subtype":"init","session_id":"sess-7"}
{"type":"assistant","message":{"content":[{"type":"tool_use","id":"toolu_1","name":"Bash","input":{"command":"touch denied.txt"}}]}}
{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"This command requires approval","is_error":true}]}}
{"type":"result","subtype":"success","is_error":false,"num_turns":2,"result":"I could not run it.","session_id":"sess-7","permission_denials":[{"tool_name":"Bash","tool_use_id":"toolu_1","tool_input":{"command":"touch denied.txt"}}]}
`)
	structuredWorkflow(p, "cat=run.jsonl")
	r := p.exec("run", "wf.yaml")
	wantCode(t, r, 3)
	s := p.only()
	rec := s.Tasks["t"]
	if s.Status != state.StatusWaiting || s.TaskStatus["t"] != state.TaskWaitingForUser || rec.Reason != "permission_denied" {
		t.Fatalf("session %s, task %s (%s)", s.Status, s.TaskStatus["t"], rec.Reason)
	}
	for _, want := range []string{"Bash", "touch denied.txt", "This command requires approval"} {
		if !strings.Contains(rec.Excerpt, want) {
			t.Errorf("the excerpt lacks %q: %q", want, rec.Excerpt)
		}
	}
	if !strings.Contains(r.stderr, "--allow Bash") {
		t.Errorf("no way out is given:\n%s", r.stderr)
	}
	denied := false
	for _, e := range p.events(s.ID) {
		if e.Kind() == "agent.denied" && e.Fields()["tool"] == "Bash" {
			denied = true
		}
	}
	if !denied {
		t.Error("no agent.denied event")
	}
	// --on-interaction=fail fails it instead.
	r = p.exec("run", "wf.yaml", "--on-interaction", "fail")
	wantCode(t, r, 1)
}

// resume --allow continues the denied agent's own session with the tool
// allowed and a message saying so; the task is then DONE on the agent's
// word.
func TestResumeAllowContinuesTheAgentsSession(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	// The fake agent runs its arguments as commands: record= keeps argv,
	// and the resume args print the continued run's stream.
	continuingAdapter(p, true)
	p.write("run.jsonl", `{"type":"system","subtype":"init","session_id":"sess-7"}
{"type":"result","subtype":"success","is_error":false,"result":"denied","session_id":"sess-7","usage":{"input_tokens":100,"output_tokens":5},"permission_denials":[{"tool_name":"Bash","tool_use_id":"toolu_1","tool_input":{"command":"touch denied.txt"}}]}
`)
	p.write("continued.jsonl", `{"type":"system","subtype":"init","session_id":"sess-7"}
{"type":"result","subtype":"success","is_error":false,"result":"ran it","session_id":"sess-7","usage":{"input_tokens":50,"output_tokens":7},"permission_denials":[]}
`)
	structuredWorkflow(p, "cat=run.jsonl")
	wantCode(t, p.exec("run", "wf.yaml"), 3)
	id := p.only().ID
	r := p.exec("resume", id, "--allow", "Bash", "--allow", "Bash(npm test:*)")
	wantCode(t, r, 0)
	s := p.only()
	rec := s.Tasks["t"]
	if s.TaskStatus["t"] != state.TaskDone || rec.Agent == nil || rec.Agent.Result != "ran it" || rec.Attempts != 2 {
		t.Fatalf("after --allow: %s %+v attempts %d", s.TaskStatus["t"], rec.Agent, rec.Attempts)
	}
	if strings.Join(rec.Allowed, "|") != "Bash|Bash(npm test:*)" {
		t.Errorf("allowed: %q", rec.Allowed)
	}
	var rec2 struct{ Argv []string }
	readJSON(t, p.path("argv.json"), &rec2)
	argv := strings.Join(rec2.Argv[1:], " ")
	want := "record=argv.json --allowedTools=Bash Bash(npm test:*) --resume sess-7 cat=continued.jsonl -- Permission granted: you may now use Bash, Bash(npm test:*)."
	if !strings.HasPrefix(argv, want) {
		t.Errorf("the continued run's argv:\n%s\nwant it to begin with\n%s", argv, want)
	}
	// Nothing was denied in this one: --allow has nothing to do.
	r = p.exec("resume", id, "--allow", "Bash")
	wantCode(t, r, 0) // completed already
	p2 := structuredProject(t, "claude-stream-json")
	p2.write("run.jsonl", `{"type":"result","subtype":"success","is_error":false,"result":"ok","session_id":"s"}`+"\n")
	p2.write("wf.yaml", "id: w\nstages:\n  - id: s\n    tasks:\n      - { id: t, adapter: structured, executionMode: headless, prompt: \"cat=run.jsonl exit=1\" }\n")
	wantCode(t, p2.exec("run", "wf.yaml"), 1)
	r = p2.exec("resume", p2.only().ID, "--allow", "Bash")
	wantCode(t, r, 2)
	if !strings.Contains(r.stderr, "no agent of it was denied a tool") {
		t.Errorf("--allow without a denial:\n%s", r.stderr)
	}
}

func TestAdapterOutputFormatIsChecked(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	p.write(".vibeteam/adapters/bad.yaml", "name: bad\ncommand: true\nmodes:\n  headless:\n    output: claude-stream-jsn\n  interactive:\n    output: claude-stream-json\n")
	p.write("wf.yaml", "id: w\nstages:\n  - id: s\n    tasks:\n      - { id: t, adapter: bad, prompt: hi }\n")
	r := p.exec("validate", "wf.yaml")
	wantCode(t, r, 2)
	if !strings.Contains(r.stderr, "bad.yaml:5:13") || !strings.Contains(r.stderr, `did you mean "claude-stream-json"`) {
		t.Errorf("validate:\n%s", r.stderr)
	}
	r = p.exec("adapters")
	for _, want := range []string{"bad.yaml:5:13", `did you mean "claude-stream-json"`, "bad.yaml:7:13", "only for headless"} {
		if !strings.Contains(r.stdout+r.stderr, want) {
			t.Errorf("vibeteam adapters lacks %q:\n%s%s", want, r.stdout, r.stderr)
		}
	}
}

// At a terminal, a denial is a question: allow once, allow for the run,
// deny, or later. Allowing continues the agent's own session at once.
func TestDenialAskedAtTheTerminal(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		key     string
		code    int
		status  state.TaskStatus
		allowed string
	}{
		{"o", 0, state.TaskDone, ""},
		{"a", 0, state.TaskDone, "Bash"},
		{"d", 1, state.TaskError, ""},
		{"l", 3, state.TaskWaitingForUser, ""},
	} {
		t.Run(tc.key, func(t *testing.T) {
			t.Parallel()
			p := newProject(t)
			continuingAdapter(p, true)
			p.write("run.jsonl", `{"type":"system","subtype":"init","session_id":"sess-9"}
{"type":"result","subtype":"success","is_error":false,"result":"denied","session_id":"sess-9","permission_denials":[{"tool_name":"Bash","tool_use_id":"toolu_1","tool_input":{"command":"touch asked.txt"}}]}
`)
			p.write("continued.jsonl", `{"type":"result","subtype":"success","is_error":false,"result":"ran it","session_id":"sess-9"}`+"\n")
			structuredWorkflow(p, "cat=run.jsonl")
			c, cmd, screen := terminalSession(t, p, "run", "wf.yaml")
			expectAll(t, c, screen, "permission: task t (structured) was denied", `Bash {"command":"touch asked.txt"}`, "a: allow Bash for the run", "permission › ")
			_, _ = c.SendLine(tc.key)
			if code := waitExit(t, cmd, screen); code != tc.code {
				t.Fatalf("exit %d, want %d\n%s", code, tc.code, screen.String())
			}
			s := p.only()
			rec := s.Tasks["t"]
			if s.TaskStatus["t"] != tc.status || strings.Join(rec.Allowed, ",") != tc.allowed {
				t.Fatalf("task %s allowed %q, want %s %q", s.TaskStatus["t"], rec.Allowed, tc.status, tc.allowed)
			}
			if tc.code == 0 {
				var got struct{ Argv []string }
				readJSON(t, p.path("argv.json"), &got)
				if argv := strings.Join(got.Argv, " "); !strings.Contains(argv, "--allowedTools=Bash --resume sess-9") || rec.Agent.Result != "ran it" {
					t.Errorf("not continued: argv %s, result %q", argv, rec.Agent.Result)
				}
			}
			if tc.key == "d" && (rec.Reason != "permission_denied" || !strings.Contains(rec.Error, "touch asked.txt")) {
				t.Errorf("deny: %s %q", rec.Reason, rec.Error)
			}
		})
	}
}

// questionProject: the agent's first run ends with a question; its
// continuation (the resume args) prints continued.jsonl.
func questionProject(t *testing.T) *project {
	t.Helper()
	p := newProject(t)
	continuingAdapter(p, false)
	p.write("run.jsonl", `{"type":"system","subtype":"init","session_id":"sess-q"}
{"type":"result","subtype":"success","is_error":false,"result":"Two ways to store it.\n\nWhich database should I use?\n1. Postgres\n2. SQLite","session_id":"sess-q"}
`)
	p.write("continued.jsonl", `{"type":"result","subtype":"success","is_error":false,"result":"Used SQLite. Done.","session_id":"sess-q"}`+"\n")
	structuredWorkflow(p, "cat=run.jsonl")
	return p
}

// A final message that asks the person something is not DONE: without a
// terminal the session parks with the question and its options, and
// resume --answer continues the agent's own session with the answer.
func TestQuestionParksThenAnswer(t *testing.T) {
	t.Parallel()
	p := questionProject(t)
	r := p.exec("run", "wf.yaml")
	wantCode(t, r, 3)
	s := p.only()
	rec := s.Tasks["t"]
	if rec.Reason != "question" || rec.Question == nil || rec.Question.Kind != "choice" || strings.Join(rec.Question.Options, "|") != "Postgres|SQLite" {
		t.Fatalf("record: reason %q question %+v", rec.Reason, rec.Question)
	}
	if !strings.Contains(r.stderr, "Which database should I use?") || !strings.Contains(r.stderr, "--answer TEXT") {
		t.Errorf("the question and the way on are not said:\n%s", r.stderr)
	}
	r = p.exec("show", s.ID)
	if !strings.Contains(r.stdout, "asks: Which database should I use? [Postgres | SQLite]") {
		t.Errorf("show lacks the question:\n%s", r.stdout)
	}
	wantCode(t, p.exec("resume", s.ID, "--allow", "Bash"), 2) // not a denial
	r = p.exec("resume", s.ID, "--answer", "SQLite, please")
	wantCode(t, r, 0)
	s = p.only()
	rec = s.Tasks["t"]
	if s.TaskStatus["t"] != state.TaskDone || rec.Agent.Result != "Used SQLite. Done." {
		t.Fatalf("after the answer: %s %+v", s.TaskStatus["t"], rec.Agent)
	}
	var got struct{ Argv []string }
	readJSON(t, p.path("argv.json"), &got)
	if argv := strings.Join(got.Argv[1:], " "); argv != "record=argv.json --resume sess-q cat=continued.jsonl -- SQLite, please" {
		t.Errorf("the continued run's argv: %s", argv)
	}
}

// At a terminal the person answers at once: an option by its number.
func TestQuestionAnsweredAtTheTerminal(t *testing.T) {
	t.Parallel()
	p := questionProject(t)
	c, cmd, screen := terminalSession(t, p, "run", "wf.yaml")
	expectAll(t, c, screen, "question from task t (structured)", "Which database should I use?", "2. SQLite", "answer › ")
	_, _ = c.SendLine("2")
	if code := waitExit(t, cmd, screen); code != 0 {
		t.Fatalf("exit %d\n%s", code, screen.String())
	}
	var got struct{ Argv []string }
	readJSON(t, p.path("argv.json"), &got)
	if argv := strings.Join(got.Argv, " "); !strings.HasSuffix(argv, "--resume sess-q cat=continued.jsonl -- SQLite") {
		t.Errorf("the continued run's argv: %s", argv)
	}
}

// A task's MCP servers reach its agent CLI in the adapter's format; a
// server whose command is missing is a warning (the agent runs without
// it), or with --strict the task's failure.
func TestMCPServersReachTheAgent(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	p.write(".vibeteam/adapters/mcpagent.yaml", fmt.Sprintf(`name: mcpagent
command: %s
mcp: codex
modes:
  headless:
    args: [record=argv.json]
    prompt: { position: arg, separator: "--" }
`, fakeAgent))
	p.write("wf.yaml", `id: m
mcp:
  ra: { command: sh, args: [-c, "exit 0"] }
  gone: { command: no-such-mcp-server }
stages:
  - id: s
    tasks:
      - { id: t, adapter: mcpagent, executionMode: headless, prompt: hi, mcp: { ra: { command: true } } }
`)
	r := p.exec("run", "wf.yaml")
	wantCode(t, r, 0)
	if !strings.Contains(r.stderr, "MCP server gone: command no-such-mcp-server is not on PATH") {
		t.Errorf("no warning for the missing server:\n%s", r.stderr)
	}
	var got struct{ Argv []string }
	readJSON(t, p.path("argv.json"), &got)
	argv := strings.Join(got.Argv, " ")
	if !strings.Contains(argv, `-c mcp_servers.gone.command="no-such-mcp-server"`) || !strings.Contains(argv, `-c mcp_servers.ra.command="true"`) || strings.Contains(argv, `"sh"`) {
		t.Errorf("argv (the task's ra wins over the workflow's): %s", argv)
	}
	r = p.exec("run", "wf.yaml", "--strict")
	wantCode(t, r, 1)
	// An adapter that cannot take MCP servers is an error before anything
	// runs, not a silent drop.
	p.write("wf2.yaml", "id: m2\nmcp: { ra: { command: true } }\nstages:\n  - id: s\n    tasks:\n      - { id: t, adapter: shell, executionMode: headless, prompt: \"true\" }\n")
	for _, cmd := range []string{"validate", "run"} {
		r = p.exec(cmd, "wf2.yaml")
		wantCode(t, r, 2)
		if !strings.Contains(r.stderr, `wf2.yaml:6:27: stages[0].tasks[0].adapter: adapter "shell" gives no MCP servers to its CLI`) {
			t.Errorf("%s, shell with MCP servers:\n%s", cmd, r.stderr)
		}
	}
	p.write("g.yaml", "name: g\nsteps:\n  - name: a\n    type: agent\n    adapter: shell\n    spell: \"x\\n\"\n    mcp: { ra: { command: true } }\n")
	r = p.exec("validate", "g.yaml")
	wantCode(t, r, 2)
	if !strings.Contains(r.stderr, `g.yaml:7:10: steps[0].mcp: adapter "shell" gives no MCP servers`) {
		t.Errorf("agent step:\n%s", r.stderr)
	}
}

// "Allow for the run" holds for the tasks after it: a later denial of the
// same tool continues at once, without asking again.
func TestAllowForTheRunAsksOnce(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	continuingAdapter(p, true)
	p.write("run.jsonl", `{"type":"system","subtype":"init","session_id":"sess-r"}
{"type":"result","subtype":"success","is_error":false,"result":"denied","session_id":"sess-r","permission_denials":[{"tool_name":"Bash","tool_use_id":"t1","tool_input":{"command":"make"}}]}
`)
	p.write("continued.jsonl", `{"type":"result","subtype":"success","is_error":false,"result":"ran it","session_id":"sess-r"}`+"\n")
	p.write("wf.yaml", `id: twice
stages:
  - id: one
    tasks: [{ id: a, adapter: structured, executionMode: headless, prompt: "cat=run.jsonl" }]
  - id: two
    tasks: [{ id: b, adapter: structured, executionMode: headless, prompt: "cat=run.jsonl" }]
`)
	c, cmd, screen := terminalSession(t, p, "run", "wf.yaml")
	expectAll(t, c, screen, "permission: task a (structured) was denied", "permission › ")
	_, _ = c.SendLine("a")
	if code := waitExit(t, cmd, screen); code != 0 {
		t.Fatalf("exit %d\n%s", code, screen.String())
	}
	if n := strings.Count(screen.String(), "was denied ──"); n != 1 {
		t.Errorf("asked %d times, want once:\n%s", n, screen.String())
	}
	s := p.only()
	for _, id := range []string{"a", "b"} {
		if s.TaskStatus[id] != state.TaskDone || s.Tasks[id].Agent.Result != "ran it" {
			t.Errorf("task %s: %s %+v", id, s.TaskStatus[id], s.Tasks[id].Agent)
		}
	}
}
