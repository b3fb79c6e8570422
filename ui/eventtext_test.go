package ui

import (
	"bufio"
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/vibeteam/vibeteam/core"
	"github.com/vibeteam/vibeteam/core/agentstream"
	"github.com/vibeteam/vibeteam/core/events"
)

// acpTurnEvents is an ACP agent's turn as its events say it, between a task's
// start and its end.
func acpTurnEvents() []core.Event {
	at := time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)
	var evs []core.Event
	add := func(task string, p events.Payload) {
		at = at.Add(time.Second)
		evs = append(evs, core.Event{Time: at, Session: "5e55", Task: task, Payload: p})
	}
	add("coder", events.TaskStart{Name: "Coder", Adapter: "claude-acp", Mode: "acp", Pid: 42})
	add("coder", events.AgentStart{SessionID: "s-1", Model: "sonnet"})
	add("coder", events.Plan{Entries: []agentstream.PlanEntry{{Content: "read the code", Status: "completed"}, {Content: "fix the bug", Status: "in_progress"}}})
	add("coder", events.AgentThought{Text: "the test fails\nbecause of x"})
	add("coder", events.ToolCall{Tool: "Read", ToolID: "t1", Input: json.RawMessage(`{ "path": "a.go" }`), Status: "pending"})
	add("coder", events.ToolResult{Tool: "Read", ToolID: "t1", Output: "package a\n", DurationMS: 20})
	add("coder", events.AgentSaid{Text: "I fixed ", Delta: true})
	add("coder", events.AgentSaid{Text: "the bug.\x1b[2J\nAll tests pass.", Delta: true})
	add("coder", events.Usage{InputTokens: 1200, OutputTokens: 300, CacheReadTokens: 1000})
	add("coder", events.TaskEnd{Status: "DONE", Reason: "end_turn"})
	return evs
}

// What an ACP agent did reads the same in the live display (--verbose, no
// terminal) and in `vibeteam log`: one line per thing it did, a streamed
// message whole, nothing from the agent that drives the terminal.
func TestDisplayAndLogSayTheSame(t *testing.T) {
	want := []string{
		"task Coder (coder) started (claude-acp, acp, pid 42)",
		"task Coder (coder): agent session s-1 (sonnet)",
		"task Coder (coder) plan:",
		"  [x] read the code",
		"  [~] fix the bug",
		"task Coder (coder) thinks: the test fails …",
		`task Coder (coder) ▸ Read {"path":"a.go"} [pending]`,
		"task Coder (coder) ⎿ Read after 20ms: package a",
		`task Coder (coder) says: I fixed the bug.\x1b[2J`,
		"  | All tests pass.",
		"task Coder (coder) used 1200 input and 300 output tokens (cache: 1000 read, 0 written)",
		"✓ task Coder (coder) DONE (end_turn) after 9s",
	}

	var errb bytes.Buffer
	d := NewDisplay(Streams{Err: &errb}, true)
	defer d.Close()
	for _, e := range acpTurnEvents() {
		d.Handle(e)
	}
	d.Close()
	var shown []string
	for _, l := range strings.Split(strings.TrimSuffix(errb.String(), "\n"), "\n") {
		// The display's time column is "15:04:05.000 ".
		if len(l) > 13 && l[2] == ':' && l[12] == ' ' {
			l = l[13:]
		}
		shown = append(shown, l)
	}

	var outb bytes.Buffer
	w := bufio.NewWriter(&outb)
	p := NewLogPrinter(w)
	for _, e := range acpTurnEvents() {
		p.event(e)
	}
	p.Idle()
	logged := strings.Split(untimed(t, outb.String()), "\n")
	logged = logged[:len(logged)-1]

	if strings.Join(shown, "\n") != strings.Join(want, "\n") {
		t.Errorf("the Display showed:\n%s\nwant:\n%s", strings.Join(shown, "\n"), strings.Join(want, "\n"))
	}
	if strings.Join(logged, "\n") != strings.Join(want, "\n") {
		t.Errorf("log printed:\n%s\nwant:\n%s", strings.Join(logged, "\n"), strings.Join(want, "\n"))
	}
}

// untimed drops the time column of log's text output.
func untimed(t *testing.T, out string) string {
	t.Helper()
	var b strings.Builder
	for _, l := range strings.SplitAfter(out, "\n") {
		if l == "" {
			continue
		}
		if len(l) < 9 || l[2] != ':' && l[:9] != logNoStamp {
			t.Fatalf("line without a time column: %q", l)
		}
		b.WriteString(l[9:])
	}
	return b.String()
}
