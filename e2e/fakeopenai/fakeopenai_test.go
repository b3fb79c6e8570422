package fakeopenai

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

var execTool = []map[string]any{{"type": "function", "name": "exec_command"}}

func post(t *testing.T, s *Server, path string, body any) *http.Response {
	t.Helper()
	b, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Post(s.URL()+path, "application/json", strings.NewReader(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// events reads server-sent events: each data line's JSON, in order.
func events(t *testing.T, r io.Reader) []map[string]any {
	t.Helper()
	var out []map[string]any
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok || line == "[DONE]" {
			continue
		}
		var d map[string]any
		if err := json.Unmarshal([]byte(line), &d); err != nil {
			t.Fatalf("data line %q: %v", line, err)
		}
		out = append(out, d)
	}
	return out
}

func userMsg(text string) map[string]any {
	return map[string]any{"type": "message", "role": "user", "content": []any{map[string]any{"type": "input_text", "text": text}}}
}

// The prompt gets the exec_command call; its output gets the done text;
// every reply is a complete Responses stream.
func TestResponsesCreateFile(t *testing.T) {
	s := New(t, CreateFile(true))
	resp := post(t, s, "/v1/responses", map[string]any{"model": "gpt-fake", "stream": true, "tools": execTool,
		"input": []any{userMsg("<environment_context>…</environment_context>"), userMsg("Please create the file x.")}})
	evs := events(t, resp.Body)
	var types []string
	var call map[string]any
	for _, e := range evs {
		types = append(types, e["type"].(string))
		if e["type"] == "response.output_item.done" {
			call = e["item"].(map[string]any)
		}
	}
	if types[0] != "response.created" || types[len(types)-1] != "response.completed" {
		t.Errorf("event types %v", types)
	}
	if call == nil || call["type"] != "function_call" || call["name"] != "exec_command" {
		t.Fatalf("output item %v, want an exec_command function_call", call)
	}
	var args map[string]any
	if err := json.Unmarshal([]byte(call["arguments"].(string)), &args); err != nil {
		t.Fatal(err)
	}
	if args["cmd"] != "touch "+CreatedFile || args["sandbox_permissions"] != "require_escalated" {
		t.Errorf("arguments %v", args)
	}

	resp = post(t, s, "/v1/responses", map[string]any{"model": "gpt-fake", "stream": true, "tools": execTool,
		"input": []any{userMsg("Please create the file x."),
			map[string]any{"type": "function_call", "call_id": call["call_id"], "name": "exec_command", "arguments": call["arguments"]},
			map[string]any{"type": "function_call_output", "call_id": call["call_id"], "output": "Process exited with code 0"}}})
	var text string
	for _, e := range events(t, resp.Body) {
		if e["type"] == "response.output_item.done" {
			item := e["item"].(map[string]any)
			text = item["content"].([]any)[0].(map[string]any)["text"].(string)
		}
	}
	if text != DoneText {
		t.Errorf("reply to the output %q, want %q", text, DoneText)
	}
	if at, ok := s.ReceivedUserText("Please create the file x."); !ok || at.IsZero() {
		t.Errorf("ReceivedUserText: %v %v", at, ok)
	}
	if n := len(s.MainRequests()); n != 2 {
		t.Errorf("%d main requests, want 2", n)
	}
}

// A structured-output side request (Codex's thread title) gets JSON of its
// schema, not a turn of the script, and is no main request.
func TestResponsesSideRequest(t *testing.T) {
	s := New(t, CreateFile(false))
	resp := post(t, s, "/v1/responses", map[string]any{"model": "gpt-fake", "stream": true,
		"input": []any{userMsg("Generate a title.\nUser prompt:\nPlease create the file x.")},
		"text": map[string]any{"format": map[string]any{"type": "json_schema", "name": "t", "strict": true,
			"schema": map[string]any{"type": "object", "properties": map[string]any{"title": map[string]any{"type": "string"}}}}}})
	var text string
	for _, e := range events(t, resp.Body) {
		if e["type"] == "response.output_text.done" {
			text = e["text"].(string)
		}
	}
	var v map[string]any
	if err := json.Unmarshal([]byte(text), &v); err != nil || v["title"] == "" {
		t.Errorf("side reply %q, want JSON with a title (%v)", text, err)
	}
	if _, ok := s.ReceivedUserText("Please create the file x."); ok {
		t.Errorf("a side request counted as the prompt received")
	}
}

// A chat completions request is read as the same items: the prompt gets
// the tool call as a streamed tool_calls delta; the tool message gets the
// done text; a non-streamed request gets one completion.
func TestChatCompletions(t *testing.T) {
	s := New(t, Sequence(CreateTrigger, DoneText, OtherText, Bash("touch "+CreatedFile)))
	tools := []any{map[string]any{"type": "function", "function": map[string]any{"name": "bash"}}}
	resp := post(t, s, "/v1/chat/completions", map[string]any{"model": "m", "stream": true, "tools": tools,
		"messages": []any{map[string]any{"role": "system", "content": "sys"}, map[string]any{"role": "user", "content": "Please create the file x."}}})
	var id, name, finish string
	for _, e := range events(t, resp.Body) {
		ch := e["choices"].([]any)[0].(map[string]any)
		if f, ok := ch["finish_reason"].(string); ok {
			finish = f
		}
		if tcs, ok := ch["delta"].(map[string]any)["tool_calls"].([]any); ok {
			tc := tcs[0].(map[string]any)
			id = tc["id"].(string)
			name = tc["function"].(map[string]any)["name"].(string)
		}
	}
	if name != "bash" || id == "" || finish != "tool_calls" {
		t.Fatalf("tool call %q %q, finish %q", name, id, finish)
	}
	resp = post(t, s, "/v1/chat/completions", map[string]any{"model": "m", "tools": tools, "messages": []any{
		map[string]any{"role": "user", "content": []any{map[string]any{"type": "text", "text": "Please create the file x."}}},
		map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{map[string]any{"id": id, "type": "function",
			"function": map[string]any{"name": "bash", "arguments": "{}"}}}},
		map[string]any{"role": "tool", "tool_call_id": id, "content": "(no output)"}}})
	var done struct {
		Choices []struct {
			Message struct {
				Content string `json:"content"`
			} `json:"message"`
		} `json:"choices"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&done); err != nil || len(done.Choices) != 1 || done.Choices[0].Message.Content != DoneText {
		t.Errorf("reply %+v (%v), want %q", done, err, DoneText)
	}
}

// A usage limit is the ChatGPT backend's 429 body (what Codex reads: the
// error type, the plan and resets_at), on both APIs; a quota refusal
// carries its status and message.
func TestScriptedLimitErrors(t *testing.T) {
	reset := time.Now().Add(2 * time.Hour).Truncate(time.Second)
	s := New(t, func(c Call) Reply {
		if c.N == 1 {
			return UsageLimit(reset)
		}
		return QuotaError(402, "You have reached your specified API usage limits.")
	})
	type body struct {
		Error struct {
			Type     string  `json:"type"`
			Code     *string `json:"code"`
			Message  string  `json:"message"`
			PlanType string  `json:"plan_type"`
			ResetsAt int64   `json:"resets_at"`
		} `json:"error"`
	}
	read := func(resp *http.Response) body {
		t.Helper()
		var b body
		if err := json.NewDecoder(resp.Body).Decode(&b); err != nil {
			t.Fatal(err)
		}
		return b
	}
	resp := post(t, s, "/v1/responses", map[string]any{"model": "gpt-fake", "stream": true, "input": []any{userMsg("hi")}})
	if b := read(resp); resp.StatusCode != 429 || b.Error.Type != "usage_limit_reached" || b.Error.PlanType != "plus" || b.Error.ResetsAt != reset.Unix() {
		t.Errorf("status %d, body %+v", resp.StatusCode, b)
	}
	resp = post(t, s, "/v1/chat/completions", map[string]any{"model": "m", "stream": true, "messages": []any{map[string]any{"role": "user", "content": "hi"}}})
	if b := read(resp); resp.StatusCode != 402 || b.Error.Type != "insufficient_quota" || b.Error.Code == nil || *b.Error.Code != "insufficient_quota" || b.Error.Message != "You have reached your specified API usage limits." {
		t.Errorf("status %d, body %+v", resp.StatusCode, b)
	}
	if got := s.Summary(); !strings.Contains(got, "-> 429") || !strings.Contains(got, "-> 402") {
		t.Errorf("the refusals are not recorded:\n%s", got)
	}
}
