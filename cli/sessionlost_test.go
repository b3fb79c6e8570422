package cli

import (
	"strings"
	"testing"

	"github.com/vibeteam/vibeteam/core/state"
)

// claude 2.1.332's stream-json can end with system/session_writes_lost
// (the disk was full: the transcript was not saved) after a successful
// result, exiting 0.
const writesLost = `{"type":"system","subtype":"session_writes_lost","error_code":"ENOSPC","lost":3,"session_id":"sess-7"}` + "\n"

// A run whose session could not be saved is DONE (the work is there) but
// not quietly: a warning event and line say so, and the record keeps it.
func TestSessionWritesLostWarns(t *testing.T) {
	t.Parallel()
	p := structuredProject(t, "claude-stream-json")
	p.write("run.jsonl", `{"type":"system","subtype":"init","session_id":"sess-7"}
{"type":"result","subtype":"success","is_error":false,"result":"made it","session_id":"sess-7","usage":{"input_tokens":10,"output_tokens":2}}
`+writesLost)
	structuredWorkflow(p, "cat=run.jsonl")
	r := p.exec("run", "wf.yaml")
	wantCode(t, r, 0)
	s := p.only()
	rec := s.Tasks["t"]
	if s.TaskStatus["t"] != state.TaskDone || rec.Agent == nil || !strings.Contains(rec.Agent.SessionLost, "ENOSPC") {
		t.Fatalf("task %s, agent %+v", s.TaskStatus["t"], rec.Agent)
	}
	warned := false
	for _, e := range p.events(s.ID) {
		if w, _ := e.Fields()["warning"].(string); e.Kind() == "warning" && strings.Contains(w, "ENOSPC") && strings.Contains(w, "cannot be continued") {
			warned = true
		}
	}
	if !warned {
		t.Error("no warning event says the session was not saved")
	}
	if !strings.Contains(r.stderr, "warning: task t: claude could not save its session transcript (ENOSPC)") {
		t.Errorf("stderr does not warn:\n%s", r.stderr)
	}
}

// A session parked on a denial whose agent session was lost: resume
// --allow cannot continue that session, so it starts a fresh one (no
// --resume) with the task's prompt after a note, the tool still allowed,
// and a warning saying why.
func TestResumeOfALostSessionStartsFresh(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	continuingAdapter(p, true)
	p.write("run.jsonl", `{"type":"system","subtype":"init","session_id":"sess-7"}
{"type":"result","subtype":"success","is_error":false,"result":"denied","session_id":"sess-7","permission_denials":[{"tool_name":"Bash","tool_use_id":"toolu_1","tool_input":{"command":"touch denied.txt"}}]}
`+writesLost)
	p.write("continued.jsonl", `{"type":"result","subtype":"success","is_error":false,"result":"continued a lost session","session_id":"sess-7"}`+"\n")
	structuredWorkflow(p, "cat=run.jsonl")
	wantCode(t, p.exec("run", "wf.yaml"), 3)
	id := p.only().ID
	// The fresh run reads run.jsonl again: now a clean success.
	p.write("run.jsonl", `{"type":"system","subtype":"init","session_id":"sess-8"}
{"type":"result","subtype":"success","is_error":false,"result":"ran it afresh","session_id":"sess-8"}
`)
	r := p.exec("resume", id, "--allow", "Bash")
	wantCode(t, r, 0)
	s := p.only()
	rec := s.Tasks["t"]
	if s.TaskStatus["t"] != state.TaskDone || rec.Agent == nil || rec.Agent.Result != "ran it afresh" || rec.Agent.SessionLost != "" {
		t.Fatalf("after resume: %s %+v", s.TaskStatus["t"], rec.Agent)
	}
	var rec2 struct{ Argv []string }
	readJSON(t, p.path("argv.json"), &rec2)
	argv := strings.Join(rec2.Argv[1:], " ")
	if strings.Contains(argv, "--resume") || !strings.Contains(argv, "--allowedTools=Bash") ||
		!strings.Contains(argv, "session could not be saved") || !strings.HasSuffix(argv, "cat=run.jsonl") {
		t.Errorf("the fresh run's argv: %s", argv)
	}
	if !strings.Contains(r.stderr, "the agent session sess-7 of the last run was not saved") || !strings.Contains(r.stderr, "starting a fresh session") {
		t.Errorf("resume does not say it starts afresh:\n%s", r.stderr)
	}
}
