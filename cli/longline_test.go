//go:build unix

package cli

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/vibeteam/vibeteam/core/state"
)

// claudeResultLine is a claude stream-json result line whose result is
// long: more than the 4 MiB a line is kept whole.
func claudeResultLine(t *testing.T, isError bool, result string) string {
	t.Helper()
	b, err := json.Marshal(map[string]any{
		"type": "result", "subtype": "success", "is_error": isError, "result": result,
		"session_id": "sess-long", "num_turns": 3, "total_cost_usd": 12.5,
		"usage":              map[string]any{"input_tokens": 500000, "output_tokens": 1234},
		"permission_denials": []any{},
	})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// The case: a result line of more than 4 MiB that says the run
// failed, with its cost and tokens, was dropped and the task ended DONE
// with tokens 0. It is read: the task fails on the agent's word, and what
// it cost is counted. The same line saying success is DONE with its
// tokens, and the end of its result (where an agent step's JSON is) kept.
func TestOverlongResultLineIsRead(t *testing.T) {
	t.Parallel()
	long := "START " + strings.Repeat("a long report line\n", 300000) + "THE END"
	for _, c := range []struct {
		name    string
		isError bool
		code    int
		status  state.TaskStatus
	}{
		{"is_error", true, 1, state.TaskError},
		{"success", false, 0, state.TaskDone},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			p := structuredProject(t, "claude-stream-json")
			p.write("run.jsonl", `{"type":"system","subtype":"init","session_id":"sess-long"}`+"\n"+claudeResultLine(t, c.isError, long)+"\n")
			structuredWorkflow(p, "cat=run.jsonl")
			r := p.exec("run", "wf.yaml")
			wantCode(t, r, c.code)
			s := p.only()
			rec := s.Tasks["t"]
			if s.TaskStatus["t"] != c.status || rec.Agent == nil {
				t.Fatalf("task %s, agent %+v\n%s", s.TaskStatus["t"], rec.Agent, r.stderr)
			}
			if rec.Agent.Tokens.Input != 500000 || rec.Agent.CostUSD != 12.5 || s.Agents == nil || s.Agents.Tokens.Input != 500000 || s.Agents.CostUSD != 12.5 {
				t.Errorf("what the run cost is not counted: record %+v, session %+v", rec.Agent, s.Agents)
			}
			if !strings.HasSuffix(rec.Agent.Result, "THE END") {
				t.Errorf("the result's end is lost: …%q", rec.Agent.Result[max(0, len(rec.Agent.Result)-40):])
			}
			if c.isError && (rec.Reason != "agent_error" || !strings.Contains(rec.Error, "START a long report line")) {
				t.Errorf("reason %q, error %.80q", rec.Reason, rec.Error)
			}
		})
	}
}

// A line that cannot be read even cut (a JSON document of millions of
// elements) fails the task, saying so: what it said is unknown, and a DONE
// needs a result that was read.
func TestUnreadableLineFailsTheTask(t *testing.T) {
	t.Parallel()
	p := structuredProject(t, "claude-stream-json")
	huge := `{"type":"result","is_error":true,"n":[` + strings.Repeat("1,", 3<<20) + `1]}`
	p.write("run.jsonl", huge+"\n"+`{"type":"result","subtype":"success","is_error":false,"result":"ok","session_id":"s","usage":{"input_tokens":10,"output_tokens":1}}`+"\n")
	structuredWorkflow(p, "cat=run.jsonl")
	r := p.exec("run", "wf.yaml")
	wantCode(t, r, 1)
	rec := p.only().Tasks["t"]
	if rec.Reason != "unreadable_output" || !strings.Contains(rec.Error, "the agent's result could not be read (6.0 MB line") {
		t.Errorf("reason %q, error %q", rec.Reason, rec.Error)
	}
	if !strings.Contains(r.stderr, "could not be read") {
		t.Errorf("stderr does not say it:\n%s", r.stderr)
	}
}

// A flood agent (lines of 50 MB, NULs, 200,000 short lines) in a
// structured stream neither hangs vibeteam nor takes its memory: the
// lines are read cut, and the result after them counts.
func TestFloodAgentStaysBounded(t *testing.T) {
	t.Parallel()
	p := structuredProject(t, "claude-stream-json")
	p.write("result.jsonl", `{"type":"result","subtype":"success","is_error":false,"result":"survived","session_id":"s","usage":{"input_tokens":7,"output_tokens":1}}`+"\n")
	structuredWorkflow(p, "hostile=50 cat=result.jsonl")
	maxRSS := int64(100 << 20)
	if raceEnabled {
		maxRSS *= 4
	}
	r, rss := p.execBounded(3*time.Minute, "run", "wf.yaml")
	wantCode(t, r, 0)
	if rss > maxRSS {
		t.Errorf("peak RSS %d MB, want at most %d MB", rss>>20, maxRSS>>20)
	}
	t.Logf("peak RSS %d MB", rss>>20)
	s := p.only()
	rec := s.Tasks["t"]
	if s.TaskStatus["t"] != state.TaskDone || rec.Agent == nil || rec.Agent.Result != "survived" || rec.Agent.Tokens.Input != 7 {
		t.Fatalf("task %s, agent %+v", s.TaskStatus["t"], rec.Agent)
	}
	log := p.read(strings.TrimPrefix(rec.LogPath, p.dir+"/"))
	if !strings.Contains(log, "(a line of 50.0 MB, cut)") || !strings.Contains(log, "short line 199999") || strings.Contains(log, "\x00") {
		t.Errorf("the log (%d bytes) does not show the flood cut", len(log))
	}
}
