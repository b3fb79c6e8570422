package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vibeteam/vibeteam/core/state"
)

// acpProject is a project with an adapter "acpfake" whose acp mode runs
// testdata/fakeacp with the script given, and a workflow of one acp task.
func acpProject(t *testing.T, script string) *project {
	t.Helper()
	p := newProject(t)
	p.write("script.json", script)
	p.write(".vibeteam/adapters/acpfake.yaml", "command: "+fakeACP+`
modes:
  acp:
    env: { FAKEACP_SCRIPT: `+p.path("script.json")+`, FAKEACP_LOG: `+p.path("acp.log")+`, FAKEACP_STATE: `+p.dir+` }
    sessionMode: ask
`)
	p.write("wf.yaml", "id: wf\nstages:\n  - id: s\n    tasks:\n      - { id: t, adapter: acpfake, executionMode: acp, prompt: make it }\n")
	return p
}

// received are the messages of method the fake agent got (its log).
func (p *project) acpReceived(method string) []string {
	data, _ := os.ReadFile(p.path("acp.log"))
	var out []string
	for _, line := range strings.Split(string(data), "\n") {
		var m struct {
			Method string          `json:"method"`
			Params json.RawMessage `json:"params"`
			Result json.RawMessage `json:"result"`
		}
		if json.Unmarshal([]byte(line), &m) != nil {
			continue
		}
		if m.Method == method && method != "" {
			out = append(out, string(m.Params))
		}
		if method == "" && m.Method == "" && m.Result != nil {
			out = append(out, string(m.Result))
		}
	}
	return out
}

const acpTurn = `{"loadSession": true, "sessionId": "acp-1", "modes": ["auto", "ask"], "turns": [{"steps": [
	{"plan": [{"content": "make it", "status": "in_progress"}]},
	{"say": "Making "}, {"say": "it."},
	{"tool": "t1", "title": "touch made", "kind": "execute", "input": {"command": "touch made"}},
	{"update": "t1", "status": "in_progress"}, {"touch": "made"},
	{"update": "t1", "status": "completed", "output": "ok"},
	{"say": "Done: made."}],
	"usage": {"inputTokens": 300, "outputTokens": 40}}]}`

// An acp task: session/new in its cwd, the adapter's session mode, the
// prompt; DONE on end_turn, with the agent's events, its session id
// journaled, and its usage counted.
func TestACPTaskDone(t *testing.T) {
	t.Parallel()
	p := acpProject(t, acpTurn)
	r := p.exec("run", "wf.yaml", "--events", p.path("events.jsonl"))
	wantCode(t, r, 0)
	s := p.only()
	rec := s.Tasks["t"]
	if s.TaskStatus["t"] != state.TaskDone || rec.Reason != "end_turn" || rec.Agent == nil || rec.Agent.SessionID != "acp-1" ||
		rec.Agent.Result != "Done: made." || rec.Agent.Tokens.Input != 300 || !p.exists("made") {
		t.Fatalf("task %s %q %+v", s.TaskStatus["t"], rec.Reason, rec.Agent)
	}
	if m := p.acpReceived("session/set_mode"); len(m) != 1 || !strings.Contains(m[0], `"modeId":"ask"`) {
		t.Errorf("set_mode %q", m)
	}
	if n := p.acpReceived("session/new"); len(n) != 1 || !strings.Contains(n[0], `"cwd":"`+p.dir+`"`) {
		t.Errorf("session/new %q", n)
	}
	events := p.read("events.jsonl")
	for _, want := range []string{`"event":"agent.plan"`, `"event":"agent.message"`, `"status":"in_progress","tool":"execute","tool_id":"t1"`,
		`"event":"agent.tool_result"`, `"event":"agent.usage"`, `"input_tokens":300`, `"event":"agent.init"`} {
		if !strings.Contains(events, want) {
			t.Errorf("--events lacks %s", want)
		}
	}
	r = p.exec("show", s.ID)
	log := p.read(strings.TrimPrefix(rec.LogPath, p.dir+"/"))
	for _, want := range []string{"· plan:", "[~] make it", "▸ execute", "Done: made."} {
		if !strings.Contains(log, want) {
			t.Errorf("the task's log lacks %q:\n%s", want, log)
		}
	}
	if !strings.Contains(r.stdout, "session acp-1") || !strings.Contains(r.stdout, "Done: made.") {
		t.Errorf("show:\n%s", r.stdout)
	}
}

// The protocol's stop reasons and errors: failed with the reason.
func TestACPTaskFails(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ turn, reason, msg string }{
		{`{"stop": "max_tokens"}`, "max_tokens", "the agent stopped: max_tokens"},
		{`{"stop": "refusal"}`, "refusal", "refusal"},
		{`{"error": {"code": -32603, "message": "model exploded"}}`, "acp_error", "model exploded"},
		{`{"steps": [{"say": "half"}, {"die": 4}]}`, "acp_error", "the agent ended the connection"},
	} {
		p := acpProject(t, `{"turns": [`+c.turn+`]}`)
		r := p.exec("run", "wf.yaml")
		wantCode(t, r, 1)
		rec := p.only().Tasks["t"]
		if string(rec.Reason) != c.reason || !strings.Contains(rec.Error, c.msg) {
			t.Errorf("%s: %q %q", c.turn, rec.Reason, rec.Error)
		}
	}
}

const acpAsk = `{"loadSession": true, "sessionId": "acp-2", "turns": [
	{"steps": [{"tool": "t1", "title": "touch allowed", "kind": "execute", "input": {"command": "touch allowed"}},
		{"ask": "t1", "options": [["ok", "Allow", "allow_once"], ["no", "Reject", "reject_once"]], "allowed": [{"touch": "allowed"}]}]},
	{"steps": [{"tool": "t2", "title": "touch allowed", "kind": "execute", "input": {"command": "touch allowed"}},
		{"ask": "t2", "options": [["no", "Reject", "reject_once"], ["ok", "Allow", "allow_once"]], "allowed": [{"touch": "allowed"}, {"say": "made it"}]}]}]}`

// Without a terminal, a permission request parks the session (exit 3)
// with the question in show; resume --allow loads the same ACP session
// (session/load) and the tool runs; DONE.
func TestACPParkThenResumeAllow(t *testing.T) {
	t.Parallel()
	p := acpProject(t, acpAsk)
	r := p.exec("run", "wf.yaml")
	wantCode(t, r, 3)
	s := p.only()
	if s.TaskStatus["t"] != state.TaskWaitingForUser || p.exists("allowed") || !strings.Contains(r.stderr, "--allow execute") {
		t.Fatalf("task %s, stderr:\n%s", s.TaskStatus["t"], r.stderr)
	}
	if a := p.acpReceived(""); len(a) != 1 || !strings.Contains(a[0], `"cancelled"`) || len(p.acpReceived("session/cancel")) != 1 {
		t.Errorf("answers %q", a)
	}
	show := p.exec("show", s.ID).stdout
	if !strings.Contains(show, "touch allowed") {
		t.Errorf("show lacks the question:\n%s", show)
	}
	r = p.exec("resume", s.ID, "--allow", "execute")
	wantCode(t, r, 0)
	s = p.only()
	if s.TaskStatus["t"] != state.TaskDone || !p.exists("allowed") || s.Tasks["t"].Agent.Result != "made it" {
		t.Fatalf("after resume: %s %+v", s.TaskStatus["t"], s.Tasks["t"].Agent)
	}
	if l := p.acpReceived("session/load"); len(l) != 1 || !strings.Contains(l[0], `"sessionId":"acp-2"`) || len(p.acpReceived("session/new")) != 1 {
		t.Errorf("session/load %q, session/new %d", l, len(p.acpReceived("session/new")))
	}
	if a := p.acpReceived(""); len(a) != 2 || !strings.Contains(a[1], `"optionId":"ok"`) {
		t.Errorf("answers %q", a)
	}
}

// --auto-approve: the policy answers by option kind, never by position.
func TestACPAutoApprove(t *testing.T) {
	t.Parallel()
	p := acpProject(t, acpAsk)
	wantCode(t, p.exec("run", "wf.yaml", "--auto-approve"), 0)
	if a := p.acpReceived(""); len(a) != 1 || !strings.Contains(a[0], `"optionId":"ok"`) || !p.exists("allowed") {
		t.Errorf("answers %q", a)
	}
}

// Ctrl-C during a tool: session/cancel, the turn ends cancelled, the task
// is stopped with its session recorded; resume loads that session.
func TestACPInterruptThenResumeLoads(t *testing.T) {
	t.Parallel()
	p := acpProject(t, `{"loadSession": true, "sessionId": "acp-3", "turns": [
		{"steps": [{"tool": "t1", "title": "sleep", "kind": "execute", "status": "in_progress"}, {"touch": "started"}, {"waitCancel": true}]},
		{"steps": [{"say": "went on"}]}]}`)
	cmd := p.command("run", "wf.yaml")
	var errb bytes.Buffer
	cmd.Stderr = &errb
	// Started here, not in a goroutine: cmd.Process is written by Start.
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return p.exists("started") })
	_ = cmd.Process.Signal(syscall.SIGINT)
	_ = cmd.Wait()
	if cmd.ProcessState.ExitCode() == 0 {
		t.Fatalf("exit 0 after Ctrl-C:\n%s", errb.String())
	}
	if len(p.acpReceived("session/cancel")) != 1 {
		t.Errorf("no session/cancel")
	}
	s := p.only()
	if rec := s.Tasks["t"]; rec.Agent == nil || rec.Agent.SessionID != "acp-3" {
		t.Fatalf("the session id is not recorded: %+v", rec.Agent)
	}
	wantCode(t, p.exec("resume", s.ID), 0)
	if l := p.acpReceived("session/load"); len(l) != 1 || p.only().Tasks["t"].Agent.Result != "went on" {
		t.Errorf("session/load %q", l)
	}
}

// A turn that ended done makes the task DONE at once, while its agent,
// stdin closed, takes its time to exit: the DONE event comes before the
// agent's exit, yet the next stage starts only after it (the attempt
// still owns the process), and what the agent writes on its way out
// still reaches the task's log.
func TestACPDoneAtTheTurnsEndNotTheExit(t *testing.T) {
	t.Parallel()
	p := acpProject(t, `{"exitDelayMs": 2500, "turns": [{"steps": [{"say": "done"}]}]}`)
	p.write(".vibeteam/adapters/acpfake.yaml", "command: "+fakeACP+`
modes:
  acp:
    env: { FAKEACP_SCRIPT: `+p.path("script.json")+`, FAKEACP_TIMES: `+p.path("times.log")+`, FAKEACP_STATE: `+p.dir+` }
`)
	p.write("wf.yaml", "id: wf\nstages:\n  - id: a\n    tasks:\n      - { id: first, adapter: acpfake, executionMode: acp, prompt: go }\n"+
		"  - id: b\n    tasks:\n      - { id: second, adapter: acpfake, executionMode: acp, prompt: go }\n")
	r := p.exec("run", "wf.yaml", "--events", p.path("events.jsonl"))
	wantCode(t, r, 0)
	var exits []time.Time
	for _, line := range strings.Split(p.read("times.log"), "\n") {
		if v, ok := strings.CutPrefix(line, "exit_ns "); ok {
			ns, _ := strconv.ParseInt(v, 10, 64)
			exits = append(exits, time.Unix(0, ns))
		}
	}
	at := map[string]time.Time{}
	for _, line := range strings.Split(p.read("events.jsonl"), "\n") {
		var e struct {
			Time                time.Time
			Event, Task, Status string
		}
		if json.Unmarshal([]byte(line), &e) == nil && e.Event == "task_status" {
			at[e.Task+" "+e.Status] = e.Time
		}
	}
	done, next := at["first DONE"], at["second RUNNING"]
	if len(exits) != 2 || done.IsZero() || next.IsZero() {
		t.Fatalf("exits %v, events %v", exits, at)
	}
	if !done.Before(exits[0]) {
		t.Errorf("first DONE at %s, after its agent's exit at %s: the turn's end was not enough", done.Format(time.StampMicro), exits[0].Format(time.StampMicro))
	}
	if !next.After(exits[0]) {
		t.Errorf("the second stage started at %s, before the first agent's exit at %s", next.Format(time.StampMicro), exits[0].Format(time.StampMicro))
	}
	s := p.only()
	rec := s.Tasks["first"]
	if s.TaskStatus["first"] != state.TaskDone || rec.Reason != "end_turn" || rec.ExitCode != nil {
		t.Errorf("first: %s %q exit %v (none is known when DONE is recorded)", s.TaskStatus["first"], rec.Reason, rec.ExitCode)
	}
	if log := p.read(strings.TrimPrefix(rec.LogPath, p.dir+"/")); !strings.Contains(log, "fakeacp: exiting late") {
		t.Errorf("the task's log lacks what the agent said on its way out:\n%s", log)
	}
}
