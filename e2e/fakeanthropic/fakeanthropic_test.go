package fakeanthropic

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"testing"
)

var bashTool = []map[string]any{{"name": "Bash", "input_schema": map[string]any{"type": "object"}}}

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

type sse struct {
	name string
	data map[string]any
}

func readSSE(t *testing.T, r io.Reader) []sse {
	t.Helper()
	var out []sse
	sc := bufio.NewScanner(r)
	var name string
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			var d map[string]any
			if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &d); err != nil {
				t.Fatalf("data line %q: %v", line, err)
			}
			if d["type"] != name {
				t.Errorf("event %q carries data of type %v", name, d["type"])
			}
			out = append(out, sse{name, d})
		case line == "":
		default:
			t.Errorf("unexpected SSE line %q", line)
		}
	}
	return out
}

// assembled is a streamed message put back together, as a client would.
type assembled struct {
	events     []string
	text       string
	toolName   string
	toolID     string
	toolInput  map[string]any
	stopReason string
	inTokens   float64
}

func assemble(t *testing.T, evs []sse) assembled {
	t.Helper()
	var a assembled
	var partial strings.Builder
	for _, e := range evs {
		a.events = append(a.events, e.name)
		switch e.name {
		case "message_start":
			m := e.data["message"].(map[string]any)
			a.inTokens = m["usage"].(map[string]any)["input_tokens"].(float64)
			if m["role"] != "assistant" || m["stop_reason"] != nil {
				t.Errorf("message_start %v", m)
			}
		case "content_block_start":
			cb := e.data["content_block"].(map[string]any)
			if cb["type"] == "tool_use" {
				a.toolName, a.toolID = cb["name"].(string), cb["id"].(string)
			}
		case "content_block_delta":
			d := e.data["delta"].(map[string]any)
			switch d["type"] {
			case "text_delta":
				a.text += d["text"].(string)
			case "input_json_delta":
				partial.WriteString(d["partial_json"].(string))
			default:
				t.Errorf("delta type %v", d["type"])
			}
		case "message_delta":
			a.stopReason, _ = e.data["delta"].(map[string]any)["stop_reason"].(string)
			if _, ok := e.data["usage"].(map[string]any)["output_tokens"]; !ok {
				t.Errorf("message_delta without usage.output_tokens: %v", e.data)
			}
		}
	}
	if partial.Len() > 0 {
		if err := json.Unmarshal([]byte(partial.String()), &a.toolInput); err != nil {
			t.Errorf("tool input %q: %v", partial.String(), err)
		}
	}
	return a
}

func userText(s string) map[string]any { return map[string]any{"role": "user", "content": s} }

func TestHeadProbe(t *testing.T) {
	s := New(t, CreateFile())
	resp, err := http.Head(s.URL() + "/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("HEAD / = %d", resp.StatusCode)
	}
	if rs := s.Requests(); len(rs) != 1 || rs[0].Method != "HEAD" || rs[0].Status != 200 {
		t.Errorf("recorded %+v", rs)
	}
}

func TestStreamToolUse(t *testing.T) {
	s := New(t, CreateFile())
	resp := post(t, s, "/v1/messages?beta=true", map[string]any{
		"model": "claude-x", "stream": true, "tools": bashTool,
		"messages": []any{
			// History, then the prompt in blocks, then a later system-like
			// message: the reply is decided by the last user block.
			map[string]any{"role": "user", "content": []any{
				map[string]any{"type": "text", "text": "<context>say hi</context>"},
				map[string]any{"type": "text", "text": "Please CREATE THE FILE now"},
			}},
			map[string]any{"role": "system", "content": "reminder"},
		},
	})
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Errorf("Content-Type %q", ct)
	}
	a := assemble(t, readSSE(t, resp.Body))
	want := []string{"message_start", "ping", "content_block_start", "content_block_delta", "content_block_stop", "message_delta", "message_stop"}
	if got := compact(a.events); !reflect.DeepEqual(got, want) {
		t.Errorf("events %v, want %v", got, want)
	}
	if a.toolName != "Bash" || a.stopReason != "tool_use" || a.toolID == "" {
		t.Errorf("got %+v", a)
	}
	if want := map[string]any{"command": "touch " + CreatedFile, "description": "Create a file"}; !reflect.DeepEqual(a.toolInput, want) {
		t.Errorf("tool input %v, want %v", a.toolInput, want)
	}
	if a.inTokens <= 0 {
		t.Errorf("input_tokens %v", a.inTokens)
	}
	rs := s.MessageRequests()
	if len(rs) != 1 || rs[0].RawQuery != "beta=true" || rs[0].Messages.Model != "claude-x" || rs[0].Reply.ToolUse == nil {
		t.Fatalf("recorded %+v", rs)
	}
	if last, _ := rs[0].Messages.LastUserBlock(); last.Text != "Please CREATE THE FILE now" {
		t.Errorf("last user block %+v", last)
	}
}

// compact drops repeated deltas: their number depends on the chunking.
func compact(evs []string) []string {
	var out []string
	for _, e := range evs {
		if e == "content_block_delta" && len(out) > 0 && out[len(out)-1] == e {
			continue
		}
		out = append(out, e)
	}
	return out
}

func TestStreamToolResultEndsTurn(t *testing.T) {
	s := New(t, CreateFile())
	resp := post(t, s, "/v1/messages", map[string]any{
		"stream": true, "tools": bashTool,
		"messages": []any{
			userText("create the file"),
			map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": map[string]any{}}}},
			map[string]any{"role": "user", "content": []any{
				map[string]any{"type": "tool_result", "tool_use_id": "toolu_1", "content": []any{map[string]any{"type": "text", "text": "ok"}}},
			}},
		},
	})
	a := assemble(t, readSSE(t, resp.Body))
	if a.text != DoneText || a.stopReason != "end_turn" || a.toolName != "" {
		t.Errorf("got %+v", a)
	}
	rs := s.MessageRequests()
	if last, _ := rs[0].Messages.LastUserBlock(); last.Type != "tool_result" || last.ResultText() != "ok" || last.ToolUseID != "toolu_1" {
		t.Errorf("last user block %+v", last)
	}
}

func TestSideRequestGetsText(t *testing.T) {
	s := New(t, CreateFile())
	// No tools: a title request, even though the prompt is quoted in it.
	resp := post(t, s, "/v1/messages", map[string]any{"stream": true, "messages": []any{userText("<session>create the file</session> Write a title")}})
	a := assemble(t, readSSE(t, resp.Body))
	if a.toolName != "" || a.stopReason != "end_turn" || a.text == "" {
		t.Errorf("got %+v", a)
	}
}

func TestOtherTextAndLongText(t *testing.T) {
	long := strings.Repeat("é日本", 40)
	s := New(t, func(c Call) Reply { return Text(long) })
	resp := post(t, s, "/v1/messages", map[string]any{"stream": true, "tools": bashTool, "messages": []any{userText("hello")}})
	if a := assemble(t, readSSE(t, resp.Body)); a.text != long {
		t.Errorf("text %q, want %q", a.text, long)
	}
}

func TestNonStreaming(t *testing.T) {
	s := New(t, CreateFile())
	resp := post(t, s, "/v1/messages", map[string]any{"stream": false, "tools": bashTool, "messages": []any{userText("create the file")}})
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type %q", ct)
	}
	var m struct {
		Type       string `json:"type"`
		Role       string `json:"role"`
		Model      string `json:"model"`
		StopReason string `json:"stop_reason"`
		Content    []struct {
			Type  string         `json:"type"`
			ID    string         `json:"id"`
			Name  string         `json:"name"`
			Input map[string]any `json:"input"`
		} `json:"content"`
		Usage map[string]int `json:"usage"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&m); err != nil {
		t.Fatal(err)
	}
	if m.Type != "message" || m.Role != "assistant" || m.Model != Model || m.StopReason != "tool_use" || len(m.Content) != 1 {
		t.Fatalf("got %+v", m)
	}
	if c := m.Content[0]; c.Type != "tool_use" || c.Name != "Bash" || c.Input["command"] != "touch "+CreatedFile || c.ID == "" {
		t.Errorf("content %+v", c)
	}
	if m.Usage["input_tokens"] <= 0 || m.Usage["output_tokens"] <= 0 {
		t.Errorf("usage %v", m.Usage)
	}
}

func TestCountTokens(t *testing.T) {
	s := New(t, CreateFile())
	resp := post(t, s, "/v1/messages/count_tokens?beta=true", map[string]any{"messages": []any{userText("hello")}})
	var m map[string]int
	if err := json.NewDecoder(resp.Body).Decode(&m); err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 || m["input_tokens"] <= 0 {
		t.Errorf("%d %v", resp.StatusCode, m)
	}
	if n := len(s.MessageRequests()); n != 0 {
		t.Errorf("count_tokens counted as a messages request (%d)", n)
	}
}

func TestUnknownPathAndBadBody(t *testing.T) {
	s := New(t, CreateFile())
	resp := post(t, s, "/v1/complete", map[string]any{})
	if resp.StatusCode != 404 {
		t.Errorf("unknown path: %d", resp.StatusCode)
	}
	resp, err := http.Post(s.URL()+"/v1/messages", "application/json", strings.NewReader("{"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 400 {
		t.Errorf("bad body: %d", resp.StatusCode)
	}
	rs := s.Requests()
	if len(rs) != 2 || rs[0].Path != "/v1/complete" || rs[0].Status != 404 || rs[1].Status != 400 {
		t.Errorf("recorded %+v", rs)
	}
	if !strings.Contains(s.Summary(), "/v1/complete -> 404") {
		t.Errorf("summary:\n%s", s.Summary())
	}
}

func TestScriptedError(t *testing.T) {
	s := New(t, func(Call) Reply { return Reply{Status: 529} })
	resp := post(t, s, "/v1/messages", map[string]any{"stream": true, "messages": []any{userText("x")}})
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 529 || !strings.Contains(string(b), `"type":"error"`) {
		t.Errorf("%d %s", resp.StatusCode, b)
	}
}

func TestSequence(t *testing.T) {
	script := Sequence("go", "fin", "other", "title",
		CallTool("Read", map[string]any{"file_path": "/x"}),
		Bash("ls", "list"),
	)
	req := func(msgs ...Message) Call {
		r := &MessagesRequest{Messages: msgs, Tools: []Tool{{Name: "Bash"}}}
		last, ok := r.LastUserBlock()
		return Call{Request: r, Last: last, HasLast: ok}
	}
	result := Message{Role: "user", Content: Content{{Type: "tool_result", ToolUseID: "t"}}}
	asst := Message{Role: "assistant", Content: Content{{Type: "tool_use"}}}
	prompt := Message{Role: "user", Content: Content{{Type: "text", Text: "please GO"}}}
	if r := script(req(prompt)); r.ToolUse == nil || r.ToolUse.Name != "Read" {
		t.Errorf("first: %+v", r)
	}
	if r := script(req(prompt, asst, result)); r.ToolUse == nil || r.ToolUse.Name != "Bash" {
		t.Errorf("second: %+v", r)
	}
	if r := script(req(prompt, asst, result, asst, result)); r.Text != "fin" || r.ToolUse != nil {
		t.Errorf("end: %+v", r)
	}
	if r := script(req(Message{Role: "user", Content: Content{{Type: "text", Text: "hm"}}})); r.Text != "other" {
		t.Errorf("other: %+v", r)
	}
	if r := script(Call{Request: &MessagesRequest{Messages: []Message{prompt}}}); r.Text != "title" {
		t.Errorf("side request: %+v", r)
	}
}

func TestContentDecoding(t *testing.T) {
	var r MessagesRequest
	body := `{"system":[{"type":"text","text":"a"},{"type":"text","text":"b"}],
	  "messages":[{"role":"user","content":"plain"},{"role":"user","content":[{"type":"tool_result","tool_use_id":"x","content":"str result","is_error":true}]}]}`
	if err := json.Unmarshal([]byte(body), &r); err != nil {
		t.Fatal(err)
	}
	if r.SystemText() != "a\nb" {
		t.Errorf("system %q", r.SystemText())
	}
	if r.Messages[0].Content[0].Text != "plain" {
		t.Errorf("string content %+v", r.Messages[0])
	}
	last, _ := r.LastUserBlock()
	if !last.IsError || last.ResultText() != "str result" {
		t.Errorf("last %+v %q", last, last.ResultText())
	}
}

// Concurrent conversations (parallel agents) each get their own tool id.
func TestConcurrentToolIDs(t *testing.T) {
	s := New(t, CreateFile())
	var wg sync.WaitGroup
	ids := make([]string, 8)
	for i := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			b, _ := json.Marshal(map[string]any{"stream": true, "tools": bashTool, "messages": []any{userText(fmt.Sprintf("create the file %d", i))}})
			resp, err := http.Post(s.URL()+"/v1/messages", "application/json", strings.NewReader(string(b)))
			if err != nil {
				t.Error(err)
				return
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			i0 := strings.Index(string(body), `"id":"toolu_`)
			if i0 < 0 {
				t.Errorf("no tool id in %s", body)
				return
			}
			ids[i] = string(body[i0 : i0+len(`"id":"toolu_fake0000"`)])
		}()
	}
	wg.Wait()
	seen := map[string]bool{}
	for _, id := range ids {
		if seen[id] {
			t.Errorf("tool id %s given twice: %v", id, ids)
		}
		seen[id] = true
	}
}

// Claude Code 2.1.331+ defers some tools (MCP ones among them): the request
// offers ToolSearch and names the tool in its text. The script loads it
// first, and the ToolSearch result (followed by a "Tool loaded." text block
// in the same message) neither counts as a call nor hides the tool_result.
func TestSequenceLoadsDeferredTools(t *testing.T) {
	script := Sequence("go", "fin", "other", "title", CallTool("mcp__ra__echo", map[string]any{"text": "hi"}), Bash("ls", "list"))
	tools := []Tool{{Name: "Bash"}, {Name: ToolSearch}}
	req := func(msgs ...Message) Call {
		r := &MessagesRequest{Messages: msgs, Tools: tools}
		last, ok := r.LastUserBlock()
		return Call{Request: r, Last: last, HasLast: ok}
	}
	prompt := Message{Role: "user", Content: Content{{Type: "text", Text: "deferred tools: mcp__ra__echo"}, {Type: "text", Text: "please go"}}}
	r := script(req(prompt))
	if r.ToolUse == nil || r.ToolUse.Name != ToolSearch || r.ToolUse.Input.(map[string]any)["query"] != "select:mcp__ra__echo" {
		t.Fatalf("first: %+v, want a ToolSearch loading the tool", r.ToolUse)
	}
	input, _ := json.Marshal(r.ToolUse.Input)
	search := Message{Role: "assistant", Content: Content{{Type: "tool_use", ID: "s1", Name: ToolSearch, Input: input}}}
	loaded := Message{Role: "user", Content: Content{{Type: "tool_result", ToolUseID: "s1"}, {Type: "text", Text: "Tool loaded."}}}
	c := req(prompt, search, loaded)
	if c.Last.Type != "tool_result" || c.Last.ToolUseID != "s1" {
		t.Errorf("last block %+v: want the ToolSearch result, not the text after it", c.Last)
	}
	if !Offers(c.Request, "mcp__ra__echo") || Offers(c.Request, "mcp__ra__other") {
		t.Error("Offers: want the deferred tool named in the text, only it")
	}
	if r := script(c); r.ToolUse == nil || r.ToolUse.Name != "mcp__ra__echo" {
		t.Fatalf("after loading: %+v, want the echo call", r.ToolUse)
	}
	echo := Message{Role: "assistant", Content: Content{{Type: "tool_use", ID: "e1", Name: "mcp__ra__echo"}}}
	echoed := Message{Role: "user", Content: Content{{Type: "tool_result", ToolUseID: "e1"}}}
	if r := script(req(prompt, search, loaded, echo, echoed)); r.ToolUse == nil || r.ToolUse.Name != "Bash" {
		t.Errorf("after the echo: %+v, want the next call (Bash)", r.ToolUse)
	}
	// A text after a tool_result that is not ToolSearch's (a resumed
	// session's new prompt) is the last block.
	resumed := Message{Role: "user", Content: Content{{Type: "tool_result", ToolUseID: "e1"}, {Type: "text", Text: "again"}}}
	if c := req(prompt, search, loaded, echo, resumed); c.Last.Type != "text" {
		t.Errorf("resumed prompt: last %+v", c.Last)
	}
}
