package agentstream

import (
	"encoding/json"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/vibeteam/vibeteam/adapters"
)

// feedStream feeds a stream's lines (blank ones included: a parser must
// ignore them) and gathers the events.
func feedStream(p Parser, stream string) []Event {
	var evs []Event
	for l := range strings.SplitSeq(strings.TrimPrefix(stream, "\n"), "\n") {
		evs = append(evs, p.Feed([]byte(l))...)
	}
	return evs
}

// eventLines shows events one JSON a line, so a mismatch reads as a diff.
func eventLines(t *testing.T, evs []Event) string {
	t.Helper()
	var b strings.Builder
	for _, e := range evs {
		j, err := json.Marshal(e)
		if err != nil {
			t.Fatalf("marshal %+v: %v", e, err)
		}
		b.Write(j)
		b.WriteByte('\n')
	}
	return b.String()
}

func checkEvents(t *testing.T, got, want []Event) {
	t.Helper()
	if g, w := eventLines(t, got), eventLines(t, want); g != w {
		t.Errorf("events:\n got:\n%s want:\n%s", g, w)
	}
}

// checkSummary compares all of a summary but its cost, which is a float
// sum, within a rounding error.
func checkSummary(t *testing.T, got, want Summary) {
	t.Helper()
	if math.Abs(got.CostUSD-want.CostUSD) > 1e-12 {
		t.Errorf("CostUSD = %v, want %v", got.CostUSD, want.CostUSD)
	}
	got.CostUSD, want.CostUSD = 0, 0
	if !reflect.DeepEqual(got, want) {
		g, _ := json.Marshal(got)
		w, _ := json.Marshal(want)
		t.Errorf("summary:\n got  %s HasResult=%v\n want %s HasResult=%v", g, got.HasResult, w, want.HasResult)
	}
}

func rawJSON(s string) json.RawMessage { return json.RawMessage(s) }

func tokensOf(in, out, cr, cw int64) *Tokens {
	return &Tokens{Input: in, Output: out, CacheRead: cr, CacheWrite: cw}
}

type parserCase struct {
	name   string
	setup  func(Parser)
	stream string
	events []Event
	sum    Summary
}

func runParserCases(t *testing.T, f adapters.Output, cases []parserCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			p := New(f)
			if c.setup != nil {
				c.setup(p)
			}
			checkEvents(t, feedStream(p, c.stream), c.events)
			checkSummary(t, p.Summary(), c.sum)
		})
	}
}

const claudeInit = `{"type":"system","subtype":"init","cwd":"/w","session_id":"abc","tools":["Bash","Read"],"mcp_servers":[{"name":"ra","status":"connected"},{"name":"gh","status":"failed"}],"model":"claude-x","permissionMode":"default","slash_commands":["review"],"apiKeySource":"none","claude_code_version":"2.1.197","output_style":"default","agents":[],"skills":[],"plugins":[],"uuid":"u0"}`

func TestClaude(t *testing.T) {
	t.Parallel()
	initEv := Event{Kind: Init, SessionID: "abc", Model: "claude-x", MCPServers: []MCPServer{{"ra", "connected"}, {"gh", "failed"}}}
	runParserCases(t, adapters.OutputClaudeStreamJSON, []parserCase{
		{
			name: "run with tools",
			stream: claudeInit + `
{"type":"assistant","message":{"id":"msg_1","type":"message","role":"assistant","model":"claude-x","content":[{"type":"thinking","thinking":"Let me look.","signature":"c2ln"}],"stop_reason":null,"usage":{"input_tokens":10,"output_tokens":5,"cache_read_input_tokens":0,"cache_creation_input_tokens":0}},"parent_tool_use_id":null,"session_id":"abc","uuid":"u1"}
{"type":"assistant","message":{"id":"msg_1","type":"message","role":"assistant","model":"claude-x","content":[{"type":"text","text":"I'll list the files."},{"type":"tool_use","id":"toolu_1","name":"Bash","input":{"command":"ls", "description":"List files"}}],"stop_reason":null,"usage":{"input_tokens":10,"output_tokens":5,"cache_read_input_tokens":0,"cache_creation_input_tokens":0}},"parent_tool_use_id":null,"session_id":"abc","uuid":"u2"}
{"type":"user","message":{"role":"user","content":[{"tool_use_id":"toolu_1","type":"tool_result","content":"a\nb","is_error":false}]},"parent_tool_use_id":null,"session_id":"abc","uuid":"u3","tool_use_result":{"stdout":"a\nb","stderr":"","interrupted":false,"isImage":false}}
{"type":"assistant","message":{"id":"msg_2","type":"message","role":"assistant","model":"claude-x","content":[{"type":"tool_use","id":"toolu_2","name":"mcp__ra__echo","input":{"x":1}}],"usage":{"input_tokens":12,"output_tokens":4}},"parent_tool_use_id":null,"session_id":"abc","uuid":"u4"}
{"type":"user","message":{"role":"user","content":[{"tool_use_id":"toolu_2","type":"tool_result","content":[{"type":"text","text":"one"},{"type":"image","source":{"type":"base64","media_type":"image/png","data":"AA=="}},{"type":"text","text":"two"}]}]},"parent_tool_use_id":null,"session_id":"abc","uuid":"u5"}
{"type":"assistant","message":{"id":"msg_3","type":"message","role":"assistant","model":"claude-x","content":[{"type":"text","text":"Done."}],"usage":{"input_tokens":14,"output_tokens":2}},"parent_tool_use_id":null,"session_id":"abc","uuid":"u6"}
{"type":"result","subtype":"success","is_error":false,"duration_ms":1234,"duration_api_ms":1100,"num_turns":3,"result":"Done.","session_id":"abc","total_cost_usd":0.0123,"usage":{"input_tokens":246,"cache_creation_input_tokens":3,"cache_read_input_tokens":7,"output_tokens":20,"server_tool_use":{"web_search_requests":0},"service_tier":"standard"},"modelUsage":{"claude-x":{"inputTokens":246,"outputTokens":20}},"permission_denials":[],"uuid":"u7"}`,
			events: []Event{
				initEv,
				{Kind: Thinking, Text: "Let me look."},
				{Kind: Message, Text: "I'll list the files."},
				{Kind: ToolCall, ToolID: "toolu_1", Tool: "Bash", Input: rawJSON(`{"command":"ls","description":"List files"}`)},
				{Kind: ToolResult, ToolID: "toolu_1", Tool: "Bash", Output: "a\nb"},
				{Kind: ToolCall, ToolID: "toolu_2", Tool: "mcp__ra__echo", Input: rawJSON(`{"x":1}`)},
				{Kind: ToolResult, ToolID: "toolu_2", Tool: "mcp__ra__echo", Output: "one\ntwo"},
				{Kind: Message, Text: "Done."},
				{Kind: Usage, Tokens: tokensOf(246, 20, 7, 3)},
			},
			sum: Summary{SessionID: "abc", Result: "Done.", HasResult: true, Turns: 3, CostUSD: 0.0123, Tokens: *tokensOf(246, 20, 7, 3), ToolCalls: 2},
		},
		{
			name: "permission denial",
			stream: claudeInit + `
{"type":"assistant","message":{"id":"msg_1","role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"Bash","input":{"command":"touch denied.txt","description":"Create file"}}]},"session_id":"abc"}
{"type":"user","message":{"role":"user","content":[{"type":"tool_result","content":"This command requires approval","is_error":true,"tool_use_id":"toolu_1"}]},"session_id":"abc","tool_use_result":"Error: This command requires approval"}
{"type":"assistant","message":{"id":"msg_2","role":"assistant","content":[{"type":"text","text":"I need your approval to create denied.txt."}]},"session_id":"abc"}
{"type":"result","subtype":"success","is_error":false,"duration_ms":5000,"num_turns":2,"result":"I need your approval to create denied.txt.","session_id":"abc","total_cost_usd":0.02,"usage":{"input_tokens":50,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":30},"permission_denials":[{"tool_name":"Bash","tool_use_id":"toolu_1","tool_input":{"command":"touch denied.txt","description":"Create file"}}]}`,
			events: []Event{
				initEv,
				{Kind: ToolCall, ToolID: "toolu_1", Tool: "Bash", Input: rawJSON(`{"command":"touch denied.txt","description":"Create file"}`)},
				{Kind: ToolResult, ToolID: "toolu_1", Tool: "Bash", Output: "This command requires approval", IsError: true},
				{Kind: Message, Text: "I need your approval to create denied.txt."},
				{Kind: Usage, Tokens: tokensOf(50, 30, 0, 0)},
			},
			sum: Summary{
				SessionID: "abc", Result: "I need your approval to create denied.txt.", HasResult: true, Turns: 2, CostUSD: 0.02,
				Tokens: *tokensOf(50, 30, 0, 0), ToolCalls: 1,
				Denials: []Denial{{Tool: "Bash", ToolID: "toolu_1", Input: rawJSON(`{"command":"touch denied.txt","description":"Create file"}`), Message: "This command requires approval"}},
			},
		},
		{
			name: "API error",
			stream: claudeInit + `
{"type":"result","subtype":"success","is_error":true,"api_error_status":400,"duration_ms":300,"duration_api_ms":0,"num_turns":1,"result":"API Error: 400 {\"type\":\"error\",\"error\":{\"type\":\"invalid_request_error\",\"message\":\"bad model\"}}","session_id":"abc","total_cost_usd":0,"usage":{"input_tokens":0,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":0},"permission_denials":[]}`,
			events: []Event{initEv, {Kind: Usage, Tokens: tokensOf(0, 0, 0, 0)}},
			sum: Summary{
				SessionID: "abc", HasResult: true, IsError: true, Turns: 1,
				Result: `API Error: 400 {"type":"error","error":{"type":"invalid_request_error","message":"bad model"}}`,
				Error:  `API Error: 400 {"type":"error","error":{"type":"invalid_request_error","message":"bad model"}}`,
			},
		},
		{
			name:   "max turns",
			stream: `{"type":"result","subtype":"error_max_turns","is_error":true,"duration_ms":9000,"num_turns":5,"session_id":"abc","total_cost_usd":0.5,"usage":{"input_tokens":1,"output_tokens":2}}`,
			events: []Event{{Kind: Usage, Tokens: tokensOf(1, 2, 0, 0)}},
			sum:    Summary{SessionID: "abc", HasResult: true, IsError: true, Error: "error_max_turns", Turns: 5, CostUSD: 0.5, Tokens: *tokensOf(1, 2, 0, 0)},
		},
		{
			name:   "error during execution with errors",
			stream: `{"type":"result","subtype":"error_during_execution","is_error":false,"num_turns":1,"session_id":"abc","errors":["boom",7]}`,
			sum:    Summary{SessionID: "abc", HasResult: true, IsError: true, Error: "boom", Turns: 1},
		},
		{
			// Other system lines and replayed user prompts say nothing to
			// read; a session id still comes from them before init.
			name: "lines to skip",
			stream: `{"type":"system","subtype":"hook_response","session_id":"abc","output":{}}
{"type":"user","message":{"role":"user","content":"do it"},"session_id":"abc"}
{"type":"stream_event","event":{"type":"content_block_delta"},"session_id":"abc"}
{"type":"assistant","message":{"content":[{"type":"redacted_thinking","data":"x"}]},"session_id":"abc"}`,
			sum: Summary{SessionID: "abc"},
		},
	})
}

func TestClaudeBoundsToolOutput(t *testing.T) {
	t.Parallel()
	// One byte first puts the limit inside a 2-byte rune.
	long := "a" + strings.Repeat("é", OutputLimit)
	content, _ := json.Marshal(long)
	p := New(adapters.OutputClaudeStreamJSON)
	evs := p.Feed([]byte(`{"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":` + string(content) + `}]}}`))
	if len(evs) != 1 {
		t.Fatalf("events = %d, want 1", len(evs))
	}
	out := evs[0].Output
	if !strings.HasSuffix(out, "…") || len(out) > OutputLimit+len("…") || !utf8.ValidString(out) {
		t.Errorf("output of %d bytes, valid UTF-8 %v, ends %q", len(out), utf8.ValidString(out), out[len(out)-6:])
	}
}

func TestBoundToolOutput(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, in, want string
	}{
		{"short", "abc", "abc"},
		{"at the limit", strings.Repeat("a", OutputLimit), strings.Repeat("a", OutputLimit)},
		{"over", strings.Repeat("a", OutputLimit+1), strings.Repeat("a", OutputLimit) + "…"},
		{"rune across the limit", strings.Repeat("a", OutputLimit-1) + "€", strings.Repeat("a", OutputLimit-1) + "…"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			if got := boundToolOutput(c.in); got != c.want {
				t.Errorf("len %d ending %q, want len %d", len(got), got[max(len(got)-5, 0):], len(c.want))
			}
		})
	}
}

func TestNormToolInput(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		in, want string
	}{
		{`{"a": 1, "b": [1, 2]}`, `{"a":1,"b":[1,2]}`},
		{`"{\"command\": \"ls\"}"`, `{"command":"ls"}`},
		{`"not json"`, `"not json"`},
		{`"{broken"`, `"{broken"`},
		{`"42"`, `"42"`},
		{`null`, ``},
		{``, ``},
	} {
		if got := string(normToolInput(rawJSON(c.in))); got != c.want {
			t.Errorf("normToolInput(%s) = %s, want %s", c.in, got, c.want)
		}
	}
}

func TestCodex(t *testing.T) {
	t.Parallel()
	runParserCases(t, adapters.OutputCodexJSON, []parserCase{
		{
			name: "run with tools",
			stream: `{"type":"thread.started","thread_id":"th_1"}
{"type":"turn.started"}
{"type":"item.completed","item":{"id":"item_0","type":"reasoning","text":"**Listing files**"}}
{"type":"item.started","item":{"id":"item_1","type":"command_execution","command":"/bin/bash -lc ls","aggregated_output":"","exit_code":null,"status":"in_progress"}}
{"type":"item.completed","item":{"id":"item_1","type":"command_execution","command":"/bin/bash -lc ls","aggregated_output":"a\nb\n","exit_code":0,"status":"completed"}}
{"type":"item.completed","item":{"id":"item_2","type":"file_change","changes":[{"path":"/w/f.txt","kind":"add"},{"path":"/w/g.txt","kind":"update"}],"status":"completed"}}
{"type":"item.started","item":{"id":"item_3","type":"mcp_tool_call","server":"ra","tool":"echo","arguments":{"x":1},"result":null,"error":null,"status":"in_progress"}}
{"type":"item.completed","item":{"id":"item_3","type":"mcp_tool_call","server":"ra","tool":"echo","arguments":{"x":1},"result":{"content":[{"type":"text","text":"1"}],"structured_content":null},"error":null,"status":"completed"}}
{"type":"item.completed","item":{"id":"item_4","type":"mcp_tool_call","server":"ra","tool":"boom","arguments":"{\"y\": 2}","result":null,"error":{"message":"tool failed"},"status":"failed"}}
{"type":"item.started","item":{"id":"item_5","type":"todo_list","items":[{"text":"x","completed":false}]}}
{"type":"item.completed","item":{"id":"item_6","type":"agent_message","text":"All done"}}
{"type":"turn.completed","usage":{"input_tokens":100,"cached_input_tokens":40,"output_tokens":10,"reasoning_output_tokens":0}}`,
			events: []Event{
				{Kind: Init, SessionID: "th_1"},
				{Kind: Thinking, Text: "**Listing files**"},
				{Kind: ToolCall, ToolID: "item_1", Tool: "command_execution", Input: rawJSON(`{"command":"/bin/bash -lc ls"}`)},
				{Kind: ToolResult, ToolID: "item_1", Tool: "command_execution", Output: "a\nb\n"},
				{Kind: ToolCall, ToolID: "item_2", Tool: "file_change", Input: rawJSON(`{"changes":[{"path":"/w/f.txt","kind":"add"},{"path":"/w/g.txt","kind":"update"}]}`)},
				{Kind: ToolResult, ToolID: "item_2", Tool: "file_change", Output: "add /w/f.txt\nupdate /w/g.txt"},
				{Kind: ToolCall, ToolID: "item_3", Tool: "mcp__ra__echo", Input: rawJSON(`{"x":1}`)},
				{Kind: ToolResult, ToolID: "item_3", Tool: "mcp__ra__echo", Output: `{"content":[{"type":"text","text":"1"}],"structured_content":null}`},
				{Kind: ToolCall, ToolID: "item_4", Tool: "mcp__ra__boom", Input: rawJSON(`{"y":2}`)},
				{Kind: ToolResult, ToolID: "item_4", Tool: "mcp__ra__boom", Output: "tool failed", IsError: true},
				{Kind: Message, Text: "All done"},
				{Kind: Usage, Tokens: tokensOf(100, 10, 40, 0)},
			},
			sum: Summary{SessionID: "th_1", Result: "All done", HasResult: true, Turns: 1, Tokens: *tokensOf(100, 10, 40, 0), ToolCalls: 4},
		},
		{
			name: "read-only sandbox",
			stream: `{"type":"thread.started","thread_id":"th_2"}
{"type":"item.started","item":{"id":"item_1","type":"command_execution","command":"/bin/bash -lc 'touch x'","aggregated_output":"","exit_code":null,"status":"in_progress"}}
{"type":"item.completed","item":{"id":"item_1","type":"command_execution","command":"/bin/bash -lc 'touch x'","aggregated_output":"touch: cannot touch 'x': Read-only file system\n","exit_code":1,"status":"failed"}}
{"type":"item.completed","item":{"id":"item_2","type":"command_execution","command":"rm y","aggregated_output":"","exit_code":null,"status":"declined"}}
{"type":"item.completed","item":{"id":"item_3","type":"command_execution","command":"ls nope","aggregated_output":"ls: cannot access 'nope': No such file or directory\n","exit_code":2,"status":"failed"}}
{"type":"item.completed","item":{"id":"item_4","type":"agent_message","text":"The sandbox is read-only."}}
{"type":"turn.completed","usage":{"input_tokens":50,"cached_input_tokens":0,"output_tokens":5}}`,
			events: []Event{
				{Kind: Init, SessionID: "th_2"},
				{Kind: ToolCall, ToolID: "item_1", Tool: "command_execution", Input: rawJSON(`{"command":"/bin/bash -lc 'touch x'"}`)},
				{Kind: ToolResult, ToolID: "item_1", Tool: "command_execution", Output: "touch: cannot touch 'x': Read-only file system\n", IsError: true},
				{Kind: ToolCall, ToolID: "item_2", Tool: "command_execution", Input: rawJSON(`{"command":"rm y"}`)},
				{Kind: ToolResult, ToolID: "item_2", Tool: "command_execution", IsError: true},
				{Kind: ToolCall, ToolID: "item_3", Tool: "command_execution", Input: rawJSON(`{"command":"ls nope"}`)},
				{Kind: ToolResult, ToolID: "item_3", Tool: "command_execution", Output: "ls: cannot access 'nope': No such file or directory\n", IsError: true},
				{Kind: Message, Text: "The sandbox is read-only."},
				{Kind: Usage, Tokens: tokensOf(50, 5, 0, 0)},
			},
			sum: Summary{
				SessionID: "th_2", Result: "The sandbox is read-only.", HasResult: true, Turns: 1, Tokens: *tokensOf(50, 5, 0, 0), ToolCalls: 3,
				Denials: []Denial{
					{Tool: "command_execution", ToolID: "item_1", Input: rawJSON(`{"command":"/bin/bash -lc 'touch x'"}`), Message: "touch: cannot touch 'x': Read-only file system"},
					{Tool: "command_execution", ToolID: "item_2", Input: rawJSON(`{"command":"rm y"}`), Message: "declined"},
				},
			},
		},
		{
			name: "failed turn",
			stream: `{"type":"thread.started","thread_id":"th_3"}
{"type":"turn.started"}
{"type":"item.completed","item":{"id":"item_0","type":"error","message":"Model metadata for ` + "`gpt-fake`" + ` not found"}}
{"type":"error","message":"stream error: 400 Bad Request"}
{"type":"turn.failed","error":{"message":"unexpected status 400 Bad Request: model not supported"}}`,
			events: []Event{
				{Kind: Init, SessionID: "th_3"},
				{Kind: Error, Text: "Model metadata for `gpt-fake` not found"},
				{Kind: Error, Text: "stream error: 400 Bad Request"},
			},
			sum: Summary{SessionID: "th_3", Turns: 1, IsError: true, Error: "unexpected status 400 Bad Request: model not supported"},
		},
		{
			// A lone error item does not fail the run: codex goes on.
			name: "error item alone",
			stream: `{"type":"item.completed","item":{"type":"error","message":"Model metadata not found"}}
{"type":"item.completed","item":{"id":"item_1","type":"agent_message","text":"ok"}}
{"type":"turn.completed","usage":{"input_tokens":1,"cached_input_tokens":0,"output_tokens":1}}`,
			events: []Event{
				{Kind: Error, Text: "Model metadata not found"},
				{Kind: Message, Text: "ok"},
				{Kind: Usage, Tokens: tokensOf(1, 1, 0, 0)},
			},
			sum: Summary{Result: "ok", HasResult: true, Turns: 1, Tokens: *tokensOf(1, 1, 0, 0)},
		},
		{
			name:  "resumed thread with a baseline",
			setup: func(p Parser) { p.(*codexParser).SetBaseline(Tokens{Input: 100, Output: 10, CacheRead: 40}) },
			stream: `{"type":"thread.started","thread_id":"th_1"}
{"type":"turn.started"}
{"type":"item.completed","item":{"id":"item_0","type":"agent_message","text":"Again"}}
{"type":"turn.completed","usage":{"input_tokens":250,"cached_input_tokens":90,"output_tokens":25,"reasoning_output_tokens":0}}`,
			events: []Event{
				{Kind: Init, SessionID: "th_1"},
				{Kind: Message, Text: "Again"},
				{Kind: Usage, Tokens: tokensOf(250, 25, 90, 0)},
			},
			sum: Summary{SessionID: "th_1", Result: "Again", HasResult: true, Turns: 1, Tokens: *tokensOf(150, 15, 50, 0)},
		},
		{
			name: "cumulative reports are not added",
			stream: `{"type":"turn.completed","usage":{"input_tokens":100,"cached_input_tokens":40,"output_tokens":10}}
{"type":"turn.completed","usage":{"input_tokens":250,"cached_input_tokens":90,"output_tokens":25}}
{"type":"turn.completed","usage":{"input_tokens":80,"cached_input_tokens":0,"output_tokens":3}}`,
			events: []Event{
				{Kind: Usage, Tokens: tokensOf(100, 10, 40, 0)},
				{Kind: Usage, Tokens: tokensOf(250, 25, 90, 0)},
				{Kind: Usage, Tokens: tokensOf(80, 3, 0, 0)},
			},
			sum: Summary{Turns: 3, Tokens: *tokensOf(250, 25, 90, 0)},
		},
		{
			name:   "baseline never makes a field negative",
			setup:  func(p Parser) { p.(*codexParser).SetBaseline(Tokens{Input: 100, Output: 30, CacheRead: 40}) },
			stream: `{"type":"turn.completed","usage":{"input_tokens":120,"cached_input_tokens":50,"output_tokens":20}}`,
			events: []Event{{Kind: Usage, Tokens: tokensOf(120, 20, 50, 0)}},
			sum:    Summary{Turns: 1, Tokens: *tokensOf(20, 0, 10, 0)},
		},
		{
			// A report below the baseline is not the thread's total.
			name:   "report below the baseline",
			setup:  func(p Parser) { p.(*codexParser).SetBaseline(Tokens{Input: 1000, Output: 100}) },
			stream: `{"type":"turn.completed","usage":{"input_tokens":120,"cached_input_tokens":50,"output_tokens":20}}`,
			events: []Event{{Kind: Usage, Tokens: tokensOf(120, 20, 50, 0)}},
			sum:    Summary{Turns: 1, Tokens: *tokensOf(120, 20, 50, 0)},
		},
		{
			name: "older shapes",
			stream: `{"id":"0","msg":{"type":"session_configured","session_id":"s_old","model":"gpt-5"}}
{"id":"1","msg":{"type":"agent_reasoning","text":"hmm"}}
{"id":"1","msg":{"type":"agent_message","message":"Old done"}}
{"type":"item.completed","item":{"id":"item_9","item_type":"assistant_message","text":"Newer done"}}`,
			events: []Event{
				{Kind: Init, SessionID: "s_old", Model: "gpt-5"},
				{Kind: Thinking, Text: "hmm"},
				{Kind: Message, Text: "Old done"},
				{Kind: Message, Text: "Newer done"},
			},
			sum: Summary{SessionID: "s_old", Result: "Newer done", HasResult: true},
		},
	})
}

func TestGemini(t *testing.T) {
	t.Parallel()
	initEv := Event{Kind: Init, SessionID: "5f0c6a1e-1111-4222-8333-944455556666", Model: "gemini-2.5-pro"}
	const initLine = `{"type":"init","timestamp":"2026-01-02T10:00:00.000Z","session_id":"5f0c6a1e-1111-4222-8333-944455556666","model":"gemini-2.5-pro"}
{"type":"message","timestamp":"2026-01-02T10:00:00.010Z","role":"user","content":"create g1.txt"}`
	runParserCases(t, adapters.OutputGeminiStreamJSON, []parserCase{
		{
			name: "run with a tool",
			stream: initLine + `
{"type":"message","timestamp":"2026-01-02T10:00:01.000Z","role":"assistant","content":"I'll create","delta":true}
{"type":"message","timestamp":"2026-01-02T10:00:01.100Z","role":"assistant","content":" it.","delta":true}
{"type":"tool_use","timestamp":"2026-01-02T10:00:01.200Z","tool_name":"run_shell_command","tool_id":"run_shell_command-1-a1","parameters":{"command":"touch g1.txt","description":"Create g1.txt"}}
{"type":"tool_result","timestamp":"2026-01-02T10:00:01.500Z","tool_id":"run_shell_command-1-a1","status":"success","output":"ok"}
{"type":"message","timestamp":"2026-01-02T10:00:02.000Z","role":"assistant","content":"Created ","delta":true}
{"type":"message","timestamp":"2026-01-02T10:00:02.100Z","role":"assistant","content":"g1.txt.","delta":true}
{"type":"result","timestamp":"2026-01-02T10:00:02.200Z","status":"success","stats":{"total_tokens":30,"input_tokens":20,"output_tokens":10,"cached":5,"input":15,"duration_ms":900,"tool_calls":1}}`,
			events: []Event{
				initEv,
				{Kind: Message, Text: "I'll create", Delta: true},
				{Kind: Message, Text: " it.", Delta: true},
				{Kind: ToolCall, ToolID: "run_shell_command-1-a1", Tool: "run_shell_command", Input: rawJSON(`{"command":"touch g1.txt","description":"Create g1.txt"}`)},
				{Kind: ToolResult, ToolID: "run_shell_command-1-a1", Tool: "run_shell_command", Output: "ok"},
				{Kind: Message, Text: "Created ", Delta: true},
				{Kind: Message, Text: "g1.txt.", Delta: true},
				{Kind: Usage, Tokens: tokensOf(20, 10, 5, 0)},
			},
			sum: Summary{SessionID: initEv.SessionID, Result: "Created g1.txt.", HasResult: true, Tokens: *tokensOf(20, 10, 5, 0), ToolCalls: 1},
		},
		{
			name: "tool not registered",
			stream: initLine + `
{"type":"tool_use","timestamp":"2026-01-02T10:00:01.200Z","tool_name":"run_shell_command","tool_id":"t1","parameters":{"command":"touch g1.txt"}}
{"type":"tool_result","timestamp":"2026-01-02T10:00:01.300Z","tool_id":"t1","status":"error","output":"","error":{"type":"tool_not_registered","message":"Tool \"run_shell_command\" not found in registry."}}
{"type":"tool_use","timestamp":"2026-01-02T10:00:01.400Z","tool_name":"read_file","tool_id":"t2","parameters":{"absolute_path":"/w/nope"}}
{"type":"tool_result","timestamp":"2026-01-02T10:00:01.500Z","tool_id":"t2","status":"error","error":{"type":"file_not_found","message":"File not found: /w/nope"}}
{"type":"message","timestamp":"2026-01-02T10:00:02.000Z","role":"assistant","content":"I cannot run shell commands.","delta":false}
{"type":"result","timestamp":"2026-01-02T10:00:02.200Z","status":"success","stats":{"total_tokens":40,"input_tokens":30,"output_tokens":10,"duration_ms":1200,"tool_calls":2,"turns":3}}`,
			events: []Event{
				initEv,
				{Kind: ToolCall, ToolID: "t1", Tool: "run_shell_command", Input: rawJSON(`{"command":"touch g1.txt"}`)},
				{Kind: ToolResult, ToolID: "t1", Tool: "run_shell_command", Output: `Tool "run_shell_command" not found in registry.`, IsError: true},
				{Kind: ToolCall, ToolID: "t2", Tool: "read_file", Input: rawJSON(`{"absolute_path":"/w/nope"}`)},
				{Kind: ToolResult, ToolID: "t2", Tool: "read_file", Output: "File not found: /w/nope", IsError: true},
				{Kind: Message, Text: "I cannot run shell commands."},
				{Kind: Usage, Tokens: tokensOf(30, 10, 0, 0)},
			},
			sum: Summary{
				SessionID: initEv.SessionID, Result: "I cannot run shell commands.", HasResult: true, Turns: 3, Tokens: *tokensOf(30, 10, 0, 0), ToolCalls: 2,
				Denials: []Denial{{Tool: "run_shell_command", ToolID: "t1", Input: rawJSON(`{"command":"touch g1.txt"}`), Message: `Tool "run_shell_command" not found in registry.`}},
			},
		},
		{
			name: "status error",
			stream: initLine + `
{"type":"error","timestamp":"2026-01-02T10:00:01.000Z","severity":"error","message":"[API Error: 400 Bad Request]"}
{"type":"result","timestamp":"2026-01-02T10:00:01.100Z","status":"error","error":{"type":"api_error","message":"400 Bad Request: model not found"},"stats":{"total_tokens":0,"input_tokens":0,"output_tokens":0,"duration_ms":100,"tool_calls":0}}`,
			events: []Event{
				initEv,
				{Kind: Error, Text: "[API Error: 400 Bad Request]"},
				{Kind: Usage, Tokens: tokensOf(0, 0, 0, 0)},
			},
			sum: Summary{SessionID: initEv.SessionID, HasResult: true, IsError: true, Error: "400 Bad Request: model not found"},
		},
		{
			name:   "status error without a message",
			stream: `{"type":"result","status":"error"}`,
			sum:    Summary{HasResult: true, IsError: true, Error: "gemini reported an error"},
		},
	})
}

func TestOpencode(t *testing.T) {
	t.Parallel()
	const stepStart = `{"type":"step_start","timestamp":1700000000000,"sessionID":"ses_1","part":{"id":"prt_1","sessionID":"ses_1","messageID":"msg_1","type":"step-start","snapshot":"4b825dc"}}`
	runParserCases(t, adapters.OutputOpencodeJSON, []parserCase{
		{
			name: "two steps",
			stream: stepStart + `
{"type":"reasoning","timestamp":1700000000010,"sessionID":"ses_1","part":{"id":"prt_2","sessionID":"ses_1","messageID":"msg_1","type":"reasoning","text":"List first.","time":{"start":1,"end":2}}}
{"type":"tool_use","timestamp":1700000000300,"sessionID":"ses_1","part":{"id":"prt_3","sessionID":"ses_1","messageID":"msg_1","type":"tool","callID":"call_1","tool":"bash","state":{"status":"completed","input":{"command":"ls","description":"List files"},"output":"a\n","title":"ls","metadata":{"exit":0,"output":"a\n"},"time":{"start":1700000000000,"end":1700000000250}}}}
{"type":"step_finish","timestamp":1700000000400,"sessionID":"ses_1","part":{"id":"prt_4","sessionID":"ses_1","messageID":"msg_1","type":"step-finish","reason":"tool-calls","snapshot":"4b825dc","cost":0.001,"tokens":{"input":20,"output":10,"reasoning":0,"cache":{"read":3,"write":1}}}}
{"type":"step_start","timestamp":1700000000500,"sessionID":"ses_1","part":{"id":"prt_5","sessionID":"ses_1","messageID":"msg_2","type":"step-start"}}
{"type":"text","timestamp":1700000000600,"sessionID":"ses_1","part":{"id":"prt_6","sessionID":"ses_1","messageID":"msg_2","type":"text","text":"There is a.","time":{"start":1700000000550,"end":1700000000600}}}
{"type":"step_finish","timestamp":1700000000700,"sessionID":"ses_1","part":{"id":"prt_7","sessionID":"ses_1","messageID":"msg_2","type":"step-finish","reason":"stop","cost":0.002,"tokens":{"input":30,"output":5,"reasoning":2,"cache":{"read":20,"write":0}}}}`,
			events: []Event{
				{Kind: Init, SessionID: "ses_1"},
				{Kind: Thinking, Text: "List first."},
				{Kind: ToolCall, ToolID: "call_1", Tool: "bash", Input: rawJSON(`{"command":"ls","description":"List files"}`)},
				{Kind: ToolResult, ToolID: "call_1", Tool: "bash", Output: "a\n", DurationMS: 250},
				{Kind: Usage, Tokens: tokensOf(20, 10, 3, 1)},
				{Kind: Message, Text: "There is a."},
				{Kind: Usage, Tokens: tokensOf(30, 5, 20, 0)},
			},
			sum: Summary{SessionID: "ses_1", Result: "There is a.", HasResult: true, Turns: 2, Tokens: *tokensOf(50, 15, 23, 1), CostUSD: 0.003, ToolCalls: 1},
		},
		{
			name: "rejected tool and API error",
			stream: stepStart + `
{"type":"tool_use","timestamp":1700000000100,"sessionID":"ses_1","part":{"id":"prt_2","type":"tool","callID":"call_1","tool":"bash","state":{"status":"running","input":{"command":"rm -rf x"},"time":{"start":1700000000000}}}}
{"type":"tool_use","timestamp":1700000000300,"sessionID":"ses_1","part":{"id":"prt_2","type":"tool","callID":"call_1","tool":"bash","state":{"status":"error","input":{"command":"rm -rf x"},"error":"The user rejected permission to use this specific tool call.","time":{"start":1700000000000,"end":1700000000100}}}}
{"type":"tool_use","timestamp":1700000000400,"sessionID":"ses_1","part":{"id":"prt_3","type":"tool","callID":"call_2","tool":"read","state":{"status":"error","input":{"filePath":"/w/nope"},"output":"","error":"File not found: /w/nope","time":{"start":1700000000300,"end":1700000000310}}}}
{"type":"error","timestamp":1700000000500,"sessionID":"ses_1","error":{"name":"APIError","data":{"message":"Bad Request","statusCode":400,"isRetryable":false}}}`,
			events: []Event{
				{Kind: Init, SessionID: "ses_1"},
				{Kind: ToolCall, ToolID: "call_1", Tool: "bash", Input: rawJSON(`{"command":"rm -rf x"}`)},
				{Kind: ToolResult, ToolID: "call_1", Tool: "bash", Output: "The user rejected permission to use this specific tool call.", IsError: true, DurationMS: 100},
				{Kind: ToolCall, ToolID: "call_2", Tool: "read", Input: rawJSON(`{"filePath":"/w/nope"}`)},
				{Kind: ToolResult, ToolID: "call_2", Tool: "read", Output: "File not found: /w/nope", IsError: true, DurationMS: 10},
				{Kind: Error, Text: "Bad Request"},
			},
			sum: Summary{
				SessionID: "ses_1", Turns: 1, IsError: true, Error: "Bad Request", ToolCalls: 2,
				Denials: []Denial{{Tool: "bash", ToolID: "call_1", Input: rawJSON(`{"command":"rm -rf x"}`), Message: "The user rejected permission to use this specific tool call."}},
			},
		},
		{
			name:   "error with a name only",
			stream: `{"type":"error","timestamp":1,"sessionID":"ses_9","error":{"name":"ProviderAuthError","data":{"providerID":"x"}}}`,
			events: []Event{{Kind: Error, Text: "ProviderAuthError"}},
			sum:    Summary{SessionID: "ses_9", IsError: true, Error: "ProviderAuthError"},
		},
	})
}

// garbage is what no parser may read anything from: not JSON objects,
// truncated JSON, unknown types.
var garbage = []string{
	"",
	"   ",
	"not json at all",
	"Warning: something on stdout",
	"[1,2,3]",
	`"a string"`,
	"null",
	"42",
	"{",
	`{"type":`,
	`{"type":"result"`,
	`{"type":"result","result":"x"} trailing`,
	"\xff\xfe{\"type\":\"x\"}",
	`{"type":123}`,
	`{"type":"no_such_type"}`,
	`{"type":null}`,
	`{}`,
	strings.Repeat("[", 20000) + strings.Repeat("]", 20000),
	`{"a":` + strings.Repeat(`{"a":`, 20000) + `1` + strings.Repeat("}", 20001),
}

// oddLines are each format's own lines with a field of an unexpected type
// (a line of another format may well be valid: the formats share types).
var oddLines = map[adapters.Output][]string{
	adapters.OutputClaudeStreamJSON: {
		`{"type":"result","num_turns":"two","result":"x","is_error":true}`,
		`{"type":"result","usage":"lots","result":"x","is_error":true}`,
		`{"type":"result","result":{"text":"x"}}`,
		`{"type":"assistant","message":"hello"}`,
		`{"type":"assistant","message":{"content":[{"type":"tool_use","id":7,"name":"Bash"}]}}`,
		`{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t","is_error":"yes"}]}}`,
		`{"type":"system","subtype":"init","session_id":["x"]}`,
	},
	adapters.OutputCodexJSON: {
		`{"type":"thread.started","thread_id":5}`,
		`{"type":"item.completed","item":"agent_message"}`,
		`{"type":"item.completed","item":{"type":"agent_message","text":["x"]}}`,
		`{"type":"item.completed","item":{"type":"command_execution","exit_code":"one","status":"failed"}}`,
		`{"type":"turn.completed","usage":{"input_tokens":"many"}}`,
		`{"type":"turn.failed","error":"boom"}`,
		`{"type":"error","message":{"text":"x"}}`,
		`{"msg":"agent_message"}`,
		`{"msg":{"type":"agent_message","message":7}}`,
	},
	adapters.OutputGeminiStreamJSON: {
		`{"type":"init","session_id":{"id":1}}`,
		`{"type":"message","role":"assistant","content":["x"]}`,
		`{"type":"tool_use","tool_name":"x","tool_id":1}`,
		`{"type":"tool_result","tool_id":"t1","status":500}`,
		`{"type":"result","status":"error","stats":{"input_tokens":"x"}}`,
		`{"type":"result","status":["error"]}`,
	},
	adapters.OutputOpencodeJSON: {
		`{"type":"text","part":"hello"}`,
		`{"type":"step_finish","part":{"cost":"free"}}`,
		`{"type":"tool_use","part":{"type":"tool","callID":1,"state":{"status":"completed"}}}`,
		`{"type":"tool_use","part":{"type":"tool","callID":"c","state":{"status":"completed","time":{"start":"now"}}}}`,
		`{"type":"step_start","sessionID":42,"part":{}}`,
		`{"type":"error","sessionID":["s"],"error":{"name":"x"}}`,
	},
}

func TestGarbage(t *testing.T) {
	t.Parallel()
	for _, f := range adapters.Outputs[1:] {
		t.Run(string(f), func(t *testing.T) {
			t.Parallel()
			p := New(f)
			for _, l := range append(slices.Clone(garbage), oddLines[f]...) {
				if evs := p.Feed([]byte(l)); evs != nil {
					t.Errorf("Feed(%.60q) = %+v, want nil", l, evs)
				}
			}
			checkSummary(t, p.Summary(), Summary{})
		})
	}
}

// realLines are a few real lines of each format, for the truncation and
// fuzz tests.
func realLines() []string {
	return []string{
		claudeInit,
		`{"type":"assistant","message":{"id":"m","role":"assistant","content":[{"type":"text","text":"hi"},{"type":"thinking","thinking":"hmm"},{"type":"tool_use","id":"toolu_1","name":"Bash","input":{"command":"touch x","description":"d"}}],"usage":{"input_tokens":10,"output_tokens":5}},"session_id":"abc"}`,
		`{"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"output text","is_error":true}]},"session_id":"abc"}`,
		`{"type":"result","subtype":"success","is_error":false,"num_turns":2,"result":"Done.","session_id":"abc","total_cost_usd":0.0123,"usage":{"input_tokens":246,"output_tokens":20},"permission_denials":[{"tool_name":"Bash","tool_use_id":"toolu_1","tool_input":{"command":"touch denied.txt"}}]}`,
		`{"type":"item.completed","item":{"id":"item_1","type":"command_execution","command":"ls","aggregated_output":"a\n","exit_code":0,"status":"completed"}}`,
		`{"type":"item.completed","item":{"id":"i3","type":"mcp_tool_call","server":"ra","tool":"echo","arguments":{"x":1},"result":{"content":[]},"error":null,"status":"completed"}}`,
		`{"type":"turn.completed","usage":{"input_tokens":100,"cached_input_tokens":40,"output_tokens":10}}`,
		`{"type":"tool_result","tool_id":"t1","status":"error","output":"","error":{"type":"tool_not_registered","message":"not found in registry."}}`,
		`{"type":"result","status":"success","stats":{"input_tokens":20,"output_tokens":10,"cached":5}}`,
		`{"type":"tool_use","sessionID":"ses_1","part":{"type":"tool","tool":"bash","callID":"call_1","state":{"status":"completed","input":{"command":"ls"},"output":"a\n","time":{"start":1,"end":2}}}}`,
		`{"type":"step_finish","sessionID":"ses_1","part":{"type":"step-finish","cost":0.001,"tokens":{"input":20,"output":10,"cache":{"read":3,"write":1}}}}`,
		`{"type":"error","sessionID":"ses_1","error":{"name":"APIError","data":{"message":"Bad Request","statusCode":400}}}`,
	}
}

// TestTruncatedLines feeds every proper prefix of real lines, as a CLI
// killed mid-write leaves them: none is a JSON object, so none is read.
func TestTruncatedLines(t *testing.T) {
	t.Parallel()
	for _, f := range adapters.Outputs[1:] {
		t.Run(string(f), func(t *testing.T) {
			t.Parallel()
			p := New(f)
			for _, l := range realLines() {
				for i := range len(l) {
					if evs := p.Feed([]byte(l[:i])); evs != nil {
						t.Fatalf("Feed(%q) = %+v, want nil", l[:i], evs)
					}
				}
			}
			checkSummary(t, p.Summary(), Summary{})
		})
	}
}

func FuzzFeed(f *testing.F) {
	for _, l := range append(realLines(), garbage[:len(garbage)-2]...) {
		f.Add([]byte(l))
	}
	for _, ls := range oddLines {
		for _, l := range ls {
			f.Add([]byte(l))
		}
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		for _, format := range adapters.Outputs[1:] {
			p := New(format)
			p.Feed(line)
			p.Feed(line)
			_ = p.Summary()
		}
	})
}

// Summary must hand out a copy: a caller keeping one while the run goes
// on, or editing it, must not see or cause changes.
func TestSummaryIsACopy(t *testing.T) {
	t.Parallel()
	p := New(adapters.OutputClaudeStreamJSON)
	p.Feed([]byte(`{"type":"result","subtype":"success","result":"x","permission_denials":[{"tool_name":"Bash","tool_use_id":"t1"}]}`))
	s := p.Summary()
	s.Denials[0].Tool = "changed"
	if got := p.Summary().Denials[0].Tool; got != "Bash" {
		t.Errorf("denial tool = %q after editing a copy", got)
	}
}
