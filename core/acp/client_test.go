package acp

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vibeteam/vibeteam/core/agentstream"
)

const turnWithTool = `{"loadSession": true, "turns": [{"steps": [
	{"think": "let me "}, {"think": "look"},
	{"plan": [{"content": "make the file", "priority": "high", "status": "pending"}]},
	{"say": "I will "}, {"say": "touch it."},
	{"tool": "t1", "title": "touch a", "kind": "execute", "input": {"command": "touch a"}},
	{"update": "t1", "status": "in_progress"},
	{"touch": "a"},
	{"update": "t1", "status": "completed", "output": "done"},
	{"say": "Made "}, {"say": "a."}],
	"usage": {"inputTokens": 120, "outputTokens": 30, "cachedReadTokens": 7}}]}`

// A turn's chunks, thoughts, plan and tool call with its status changes
// become the headless parsers' events, in order; the final message is the
// result; usage is the prompt result's.
func TestPromptEventsAndResult(t *testing.T) {
	f := startFake(t, "", turnWithTool, Options{})
	f.session()
	res, err := f.client.Prompt(context.Background(), "make a")
	if err != nil {
		t.Fatal(err)
	}
	out := Judge(res, err, f.client.Parked(), time.Now())
	if out.Status != Done {
		t.Fatalf("outcome %+v, want done", out)
	}
	want := []string{"init", "thinking", "plan", "message:I will ", "message:touch it.",
		"tool_call:t1:pending", "tool_call:t1:in_progress", "tool_result:t1:completed",
		"message:Made ", "message:a.", "usage"}
	if got := f.kinds(); !slices.Equal(got, want) {
		t.Fatalf("events\n got %q\nwant %q", got, want)
	}
	sum := f.client.Summary()
	if sum.Result != "Made a." || !sum.HasResult || sum.ToolCalls != 1 || sum.Tokens.Input != 120 || sum.Tokens.Output != 30 || sum.Tokens.CacheRead != 7 {
		t.Fatalf("summary %+v", sum)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if ev := f.events[1]; ev.Text != "let me look" {
		t.Fatalf("one thinking event for the whole thought, got %q", ev.Text)
	}
	if ev := f.events[2]; len(ev.Plan) != 1 || ev.Plan[0].Content != "make the file" || ev.Plan[0].Status != "pending" {
		t.Fatalf("plan %+v", ev.Plan)
	}
	if ev := f.events[5]; ev.Tool != "execute" || string(ev.Input) != `{"command":"touch a"}` {
		t.Fatalf("tool call %+v", ev)
	}
	if ev := f.events[7]; ev.Output != "done" || ev.IsError {
		t.Fatalf("tool result %+v", ev)
	}
}

const askScript = `{"turns": [{"steps": [
	{"tool": "t1", "title": "touch b", "kind": "execute", "input": {"command": "touch b"}},
	{"ask": "t1", "options": [["no", "Yes (not really)", "reject_once"], ["always", "Always", "allow_always"], ["yes-once", "No", "allow_once"]],
	 "allowed": [{"touch": "b"}, {"update": "t1", "status": "completed"}, {"say": "made b"}],
	 "rejected": [{"update": "t1", "status": "failed"}, {"say": "not allowed"}]}]}]}`

// The policy answers by option kind: allow_once, whatever the options'
// order and names say.
func TestPermissionAnsweredByKind(t *testing.T) {
	f := startFake(t, "", askScript, Options{Decide: Policy{AutoApprove: true}.Decide})
	f.session()
	res, err := f.client.Prompt(context.Background(), "make b")
	if err != nil || res.StopReason != StopEndTurn {
		t.Fatalf("%+v %v", res, err)
	}
	answers := f.received("")
	if len(answers) != 1 || !strings.Contains(string(answers[0]), `"optionId":"yes-once"`) {
		t.Fatalf("answers %s", answers)
	}
	if !exists(filepath.Join(f.dir, "b")) {
		t.Fatal("the allowed tool did not run")
	}
}

// A person who rejects: rejected by kind, no file.
func TestPermissionRejected(t *testing.T) {
	var asked Permission
	ask := func(_ context.Context, p Permission) Decision { asked = p; return p.Reject() }
	f := startFake(t, "", askScript, Options{Decide: Policy{Ask: ask}.Decide})
	f.session()
	res, err := f.client.Prompt(context.Background(), "make b")
	if err != nil || res.StopReason != StopEndTurn {
		t.Fatalf("%+v %v", res, err)
	}
	if exists(filepath.Join(f.dir, "b")) {
		t.Fatal("a rejected tool ran")
	}
	if asked.Tool != "execute" || asked.Title != "touch b" || string(asked.Input) != `{"command":"touch b"}` || len(asked.Options) != 3 {
		t.Fatalf("the person was asked %+v", asked)
	}
	if a := f.received(""); len(a) != 1 || !strings.Contains(string(a[0]), `"optionId":"no"`) {
		t.Fatalf("answers %s", a)
	}
	if f.client.Summary().Result != "not allowed" {
		t.Fatalf("result %q", f.client.Summary().Result)
	}
}

// With no one to ask, the permission is parked: session/cancel, the
// request answered cancelled, the turn ends cancelled, and the outcome is
// parked with the denial to show.
func TestPermissionParked(t *testing.T) {
	f := startFake(t, "", askScript, Options{Decide: Policy{}.Decide})
	f.session()
	res, err := f.client.Prompt(context.Background(), "make b")
	out := Judge(res, err, f.client.Parked(), time.Now())
	if out.Status != Parked {
		t.Fatalf("outcome %+v (%v)", out, err)
	}
	if len(f.received("session/cancel")) != 1 {
		t.Fatal("no session/cancel")
	}
	if a := f.received(""); len(a) != 1 || !strings.Contains(string(a[0]), `"outcome":"cancelled"`) {
		t.Fatalf("answers %s", a)
	}
	d := f.client.Summary().Denials
	if len(d) != 1 || d[0].Tool != "execute" || d[0].ToolID != "t1" || !strings.Contains(d[0].Message, `"Always" (allow_always)`) {
		t.Fatalf("denials %+v", d)
	}
	if exists(filepath.Join(f.dir, "b")) {
		t.Fatal("a parked tool ran")
	}
}

// resume --allow: the tool a person allowed is allowed by the policy.
func TestPermissionAllowedTool(t *testing.T) {
	f := startFake(t, "", askScript, Options{Decide: Policy{Allowed: []string{"Execute"}}.Decide})
	f.session()
	if res, err := f.client.Prompt(context.Background(), "make b"); err != nil || res.StopReason != StopEndTurn {
		t.Fatalf("%+v %v", res, err)
	}
	if !exists(filepath.Join(f.dir, "b")) {
		t.Fatal("the allowed tool did not run")
	}
}

// Ctrl-C during a tool: session/cancel, the turn ends cancelled: stopped.
func TestCancelDuringTool(t *testing.T) {
	f := startFake(t, "", `{"turns": [{"steps": [
		{"tool": "t1", "title": "sleep", "kind": "execute", "status": "in_progress"}, {"waitCancel": true}]}]}`, Options{})
	f.session()
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		for !slices.Contains(f.kinds(), "tool_call:t1:in_progress") {
			time.Sleep(time.Millisecond)
		}
		cancel()
	}()
	res, err := f.client.Prompt(ctx, "sleep")
	out := Judge(res, err, f.client.Parked(), time.Now())
	if out.Status != Stopped || len(f.received("session/cancel")) != 1 {
		t.Fatalf("outcome %+v (%v)", out, err)
	}
}

// Cancel while a permission is pending (a person is being asked): the
// request is answered cancelled, and the person's late answer is not sent.
func TestCancelAtPermission(t *testing.T) {
	asking := make(chan struct{})
	ask := func(ctx context.Context, p Permission) Decision {
		close(asking)
		<-ctx.Done()
		return p.Allow()
	}
	f := startFake(t, "", askScript, Options{Decide: Policy{Ask: ask}.Decide})
	f.session()
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-asking; cancel() }()
	res, err := f.client.Prompt(ctx, "make b")
	if out := Judge(res, err, f.client.Parked(), time.Now()); out.Status != Stopped {
		t.Fatalf("outcome %+v", out)
	}
	if a := f.received(""); len(a) != 1 || !strings.Contains(string(a[0]), `"cancelled"`) {
		t.Fatalf("answers %s", a)
	}
	if exists(filepath.Join(f.dir, "b")) {
		t.Fatal("the tool ran")
	}
}

// After a restart, session/load continues the session: its history is not
// reported again, and the next prompt is the session's second turn.
func TestLoadAfterRestart(t *testing.T) {
	dir := t.TempDir()
	script := `{"loadSession": true, "sessionId": "keep-1", "turns": [
		{"steps": [{"say": "first"}]}, {"steps": [{"say": "second"}]}]}`
	f := startFake(t, dir, script, Options{})
	f.session()
	if _, err := f.client.Prompt(context.Background(), "one"); err != nil {
		t.Fatal(err)
	}
	_ = f.cmd.Process.Kill()
	g := startFake(t, dir, script, Options{})
	if _, err := g.client.Initialize(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := g.client.LoadSession(context.Background(), "keep-1", dir, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := g.client.Prompt(context.Background(), "two"); err != nil {
		t.Fatal(err)
	}
	if got, want := g.kinds(), []string{"init", "message:second"}; !slices.Equal(got, want) {
		t.Fatalf("events %q, want %q", got, want)
	}
	if g.client.Summary().Result != "second" || len(g.received("session/load")) != 1 {
		t.Fatalf("result %q", g.client.Summary().Result)
	}
}

// An agent without loadSession: a clear error, no fresh session.
func TestLoadRefusedWithoutCapability(t *testing.T) {
	f := startFake(t, "", `{}`, Options{Agent: "nolo"})
	if _, err := f.client.Initialize(context.Background()); err != nil {
		t.Fatal(err)
	}
	_, err := f.client.LoadSession(context.Background(), "x", f.dir, nil)
	if err == nil || !strings.Contains(err.Error(), "agent nolo cannot load a session") {
		t.Fatalf("err %v", err)
	}
}

// An agent that dies mid-turn: the prompt fails with the connection's end.
func TestAgentDiesMidTurn(t *testing.T) {
	f := startFake(t, "", `{"turns": [{"steps": [{"say": "half"}, {"die": 1}]}]}`, Options{})
	f.session()
	res, err := f.client.Prompt(context.Background(), "go")
	out := Judge(res, err, false, time.Now())
	if out.Status != Failed || !strings.Contains(out.Error, "the agent ended the connection") {
		t.Fatalf("outcome %+v", out)
	}
}

// An agent that never answers initialize: an error naming it, in time.
func TestInitializeTimeout(t *testing.T) {
	f := startFake(t, "", `{"init": "never"}`, Options{Agent: "mute (fakeacp)", InitTimeout: 200 * time.Millisecond})
	start := time.Now()
	_, err := f.client.Initialize(context.Background())
	if err == nil || !strings.Contains(err.Error(), "agent mute (fakeacp) did not answer initialize within 200ms") {
		t.Fatalf("err %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("took %s", d)
	}
}

// Stop reasons and errors, as outcomes.
func TestStopReasons(t *testing.T) {
	for _, tc := range []struct{ turn, status, reason, errText string }{
		{`{"stop": "max_tokens"}`, Failed, "max_tokens", "max_tokens"},
		{`{"stop": "max_turn_requests"}`, Failed, "max_turn_requests", "max_turn_requests"},
		{`{"stop": "refusal"}`, Failed, "refusal", "refusal"},
		{`{"error": {"code": -32603, "message": "model exploded"}}`, Failed, "error", "model exploded"},
		{`{"error": {"code": -32000, "message": "You've hit your usage limit. It will reset at 2031-01-02 03:04:05 UTC"}}`, Limited, "limit", "usage limit"},
	} {
		f := startFake(t, "", `{"turns": [`+tc.turn+`]}`, Options{})
		f.session()
		res, err := f.client.Prompt(context.Background(), "go")
		out := Judge(res, err, false, time.Now())
		if out.Status != tc.status || out.Reason != tc.reason || !strings.Contains(out.Error, tc.errText) {
			t.Errorf("%s: %+v", tc.turn, out)
		}
		if tc.status == Limited && (out.Limit == nil || out.Limit.ResetAt == nil || out.Limit.ResetAt.Year() != 2031) {
			t.Errorf("%s: limit %+v", tc.turn, out.Limit)
		}
	}
}

// A flood of updates reaches the consumer whole, in order.
func TestFloodLosesNothing(t *testing.T) {
	const n = 20000
	var count int
	f := startFake(t, "", `{"turns": [{"steps": [{"flood": 20000}, {"say": "end"}]}]}`, Options{})
	f.session()
	if _, err := f.client.Prompt(context.Background(), "go"); err != nil {
		t.Fatal(err)
	}
	for _, k := range f.kinds() {
		if k == "message:x" {
			count++
		}
	}
	if count != n || f.client.Summary().Result != strings.Repeat("x", n)+"end" {
		t.Fatalf("%d chunks of %d", count, n)
	}
}

// A message of any length is read in bounded memory: a long chunk comes
// with its text cut, and the turn goes on; a message too large to read
// even cut ends the run, saying so.
func TestLongLines(t *testing.T) {
	f := startFake(t, "", `{"turns": [{"steps": [{"line": 6000000}, {"say": "end"}]}, {"steps": [{"planEntries": 400000}]}]}`, Options{})
	f.session()
	if _, err := f.client.Prompt(context.Background(), "go"); err != nil {
		t.Fatal(err)
	}
	if k := f.kinds(); len(k) != 3 || !strings.Contains(k[1], "MB cut") || len(k[1]) > 200<<10 || k[2] != "message:end" {
		t.Fatalf("%d events", len(k))
	}
	_, err := f.client.Prompt(context.Background(), "go")
	if !errors.Is(err, ErrTooLong) || !strings.Contains(err.Error(), "more than 4 MiB even with its long strings cut") {
		t.Fatalf("err %v", err)
	}
}

// MCP servers by the agent's capabilities: stdio always; http only when
// advertised, else an error naming the agent.
func TestMCPServersByCapability(t *testing.T) {
	f := startFake(t, "", `{"http": true}`, Options{Agent: "fakey"})
	if _, err := f.client.Initialize(context.Background()); err != nil {
		t.Fatal(err)
	}
	servers := []MCPServer{{Name: "files", Command: "fs-server", Args: []string{"."}, Env: map[string]string{"K": "v"}},
		{Name: "web", Type: MCPHTTP, URL: "http://127.0.0.1:1/mcp", Headers: map[string]string{"A": "b"}}}
	if _, err := f.client.NewSession(context.Background(), f.dir, servers); err != nil {
		t.Fatal(err)
	}
	got := string(f.received("session/new")[0])
	for _, want := range []string{`{"args":["."],"command":"fs-server","env":[{"name":"K","value":"v"}],"name":"files"}`,
		`{"headers":[{"name":"A","value":"b"}],"name":"web","type":"http","url":"http://127.0.0.1:1/mcp"}`} {
		if !strings.Contains(got, want) {
			t.Fatalf("session/new %s lacks %s", got, want)
		}
	}
	_, err := f.client.NewSession(context.Background(), f.dir, []MCPServer{{Name: "ev", Type: MCPSSE, URL: "http://x"}})
	if err == nil || !strings.Contains(err.Error(), "agent fakey does not take sse MCP servers (its mcpCapabilities: stdio, http)") {
		t.Fatalf("err %v", err)
	}
}

// Usage as qwen (on an empty chunk's _meta) and gemini (the result's
// _meta.quota.token_count) report it.
func TestUsageInMeta(t *testing.T) {
	f := startFake(t, "", `{"resultMeta": {"quota": {"token_count": {"input_tokens": 40, "output_tokens": 4}}},
		"turns": [{"steps": [{"meta": {"usage": {"promptTokenCount": 11, "candidatesTokenCount": 2, "model": "q"}}}, {"cost": 0.25}]}]}`, Options{})
	f.session()
	if _, err := f.client.Prompt(context.Background(), "go"); err != nil {
		t.Fatal(err)
	}
	sum := f.client.Summary()
	if sum.Tokens.Input != 51 || sum.Tokens.Output != 6 || sum.CostUSD != 0.25 {
		t.Fatalf("summary %+v", sum)
	}
	var usage int
	for _, ev := range f.events {
		if ev.Kind == agentstream.Usage {
			usage++
		}
	}
	if usage != 2 {
		t.Fatalf("%d usage events", usage)
	}
}
