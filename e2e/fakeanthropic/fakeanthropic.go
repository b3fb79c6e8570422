// Package fakeanthropic is a scripted stand-in for the Anthropic Messages
// API, enough for Claude Code to run against it offline: a connectivity
// probe (HEAD /), POST /v1/messages (streamed as server-sent events, or as
// one JSON message), and POST /v1/messages/count_tokens. A Script decides
// each reply; every request is recorded for assertions.
package fakeanthropic

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Model is the model name the server reports when a request names none.
const Model = "claude-fake-e2e"

// Message is one message of a request.
type Message struct {
	Role    string  `json:"role"`
	Content Content `json:"content"`
}

// Content is a message's content: a plain string is decoded as one text block.
type Content []Block

// UnmarshalJSON accepts a string or an array of blocks.
func (c *Content) UnmarshalJSON(data []byte) error {
	data = bytes.TrimSpace(data)
	if len(data) > 0 && data[0] == '"' {
		var s string
		if err := json.Unmarshal(data, &s); err != nil {
			return err
		}
		*c = Content{{Type: "text", Text: s}}
		return nil
	}
	var blocks []Block
	if err := json.Unmarshal(data, &blocks); err != nil {
		return err
	}
	*c = blocks
	return nil
}

// Block is one content block. Only the fields the scripts look at are
// decoded; Raw keeps the whole block.
type Block struct {
	Type      string          `json:"type"`
	Text      string          `json:"text,omitempty"`
	ID        string          `json:"id,omitempty"`
	Name      string          `json:"name,omitempty"`
	Input     json.RawMessage `json:"input,omitempty"`
	ToolUseID string          `json:"tool_use_id,omitempty"`
	Content   json.RawMessage `json:"content,omitempty"` // tool_result: a string or blocks
	IsError   bool            `json:"is_error,omitempty"`
}

// ResultText is the text of a tool_result block's content.
func (b Block) ResultText() string {
	if len(b.Content) == 0 {
		return ""
	}
	var c Content
	if err := json.Unmarshal(b.Content, &c); err != nil {
		return string(b.Content)
	}
	var parts []string
	for _, x := range c {
		if x.Text != "" {
			parts = append(parts, x.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// Tool is one tool a request offers.
type Tool struct {
	Name string `json:"name"`
}

// MessagesRequest is the part of a /v1/messages body the server reads.
type MessagesRequest struct {
	Model     string          `json:"model"`
	MaxTokens int             `json:"max_tokens"`
	Stream    bool            `json:"stream"`
	System    json.RawMessage `json:"system,omitempty"` // a string or text blocks
	Messages  []Message       `json:"messages"`
	Tools     []Tool          `json:"tools,omitempty"`
}

// SystemText is the system prompt as one string.
func (r *MessagesRequest) SystemText() string {
	if len(r.System) == 0 {
		return ""
	}
	var c Content
	if err := json.Unmarshal(r.System, &c); err != nil {
		return string(r.System)
	}
	var parts []string
	for _, b := range c {
		parts = append(parts, b.Text)
	}
	return strings.Join(parts, "\n")
}

// LastUserBlock is the last content block of the last message whose role is
// "user": the new prompt or tool_result. Earlier blocks repeat history, and
// a later message may carry other (system-like) content. Claude Code
// 2.1.331+ follows a ToolSearch tool_result with a text block ("Tool
// loaded.") in the same message: then the tool_result is what answers.
func (r *MessagesRequest) LastUserBlock() (Block, bool) {
	for i := len(r.Messages) - 1; i >= 0; i-- {
		m := r.Messages[i]
		if m.Role != "user" || len(m.Content) == 0 {
			continue
		}
		last := m.Content[len(m.Content)-1]
		if last.Type == "text" {
			for j := len(m.Content) - 2; j >= 0; j-- {
				if b := m.Content[j]; b.Type == "tool_result" {
					if r.ToolUseName(b.ToolUseID) == ToolSearch {
						return b, true
					}
					break
				}
			}
		}
		return last, true
	}
	return Block{}, false
}

// ToolSearch is the tool Claude Code 2.1.331+ offers to load deferred tools
// (MCP tools among them) before they can be called.
const ToolSearch = "ToolSearch"

// ToolUseName is the tool name of the assistant's tool_use block with id
// ("" when the conversation has none).
func (r *MessagesRequest) ToolUseName(id string) string {
	for _, m := range r.Messages {
		if m.Role != "assistant" {
			continue
		}
		for _, b := range m.Content {
			if b.Type == "tool_use" && b.ID == id {
				return b.Name
			}
		}
	}
	return ""
}

// HasTool reports whether the request offers a tool of that name.
func (r *MessagesRequest) HasTool(name string) bool {
	for _, t := range r.Tools {
		if t.Name == name {
			return true
		}
	}
	return false
}

// ToolUse is a tool call in a reply.
type ToolUse struct {
	ID    string // generated when empty
	Name  string
	Input any // marshalled to JSON
}

// Reply is what the model answers: text, then optionally one tool call.
type Reply struct {
	Text       string
	ToolUse    *ToolUse
	StopReason string // default: tool_use with a ToolUse, else end_turn
	// Status, when not 0 or 200, answers with an API error of that HTTP status.
	Status int
	// LimitReset, with Status 429, answers as the API does a subscription
	// whose five-hour usage limit is spent: a rate_limit_error with the
	// anthropic-ratelimit-unified-* headers, which Claude Code reads (with
	// an OAuth token) as "You've hit your 5-hour limit", its reset time
	// in a rate_limit_event, and does not retry.
	LimitReset time.Time
}

// Call is what a Script sees of one /v1/messages request.
type Call struct {
	N       int // 1 for the first /v1/messages request
	Request *MessagesRequest
	Last    Block // LastUserBlock
	HasLast bool
}

// Script decides the reply to one request.
type Script func(c Call) Reply

// Request is one recorded HTTP request and what it got.
type Request struct {
	Method   string
	Path     string
	RawQuery string
	Header   http.Header
	Body     []byte
	Messages *MessagesRequest // decoded /v1/messages bodies
	Status   int              // the response's status code; 0 while the script runs
	Reply    *Reply           // the scripted reply, for /v1/messages; nil while the script runs
}

// Server is a running fake.
type Server struct {
	tb     testing.TB
	script Script
	srv    *httptest.Server

	mu       sync.Mutex
	requests []Request
	calls    int
	ids      int
}

// New starts a server on 127.0.0.1 and closes it when the test ends.
func New(tb testing.TB, script Script) *Server {
	tb.Helper()
	s := &Server{tb: tb, script: script}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	tb.Cleanup(s.srv.Close)
	return s
}

// URL is the base URL (http://127.0.0.1:port), for ANTHROPIC_BASE_URL.
func (s *Server) URL() string { return s.srv.URL }

// Close stops the server (it is also closed when the test ends).
func (s *Server) Close() { s.srv.Close() }

// Requests is a copy of every request so far, in arrival order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// MessageRequests is the recorded /v1/messages requests.
func (s *Server) MessageRequests() []Request {
	var out []Request
	for _, r := range s.Requests() {
		if r.Messages != nil && r.Path == "/v1/messages" {
			out = append(out, r)
		}
	}
	return out
}

// Summary is one line per request, for failure output.
func (s *Server) Summary() string {
	var b strings.Builder
	for i, r := range s.Requests() {
		fmt.Fprintf(&b, "%2d %s %s", i+1, r.Method, r.Path)
		if r.RawQuery != "" {
			fmt.Fprintf(&b, "?%s", r.RawQuery)
		}
		fmt.Fprintf(&b, " -> %d", r.Status)
		if m := r.Messages; m != nil {
			last, _ := m.LastUserBlock()
			roles := make([]string, len(m.Messages))
			for i, msg := range m.Messages {
				roles[i] = fmt.Sprintf("%s(%d)", msg.Role, len(msg.Content))
			}
			fmt.Fprintf(&b, " stream=%v tools=%d msgs=%s last=%s", m.Stream, len(m.Tools), strings.Join(roles, ","), describe(last))
		}
		if r.Reply != nil {
			fmt.Fprintf(&b, " reply=%s", describeReply(*r.Reply))
		}
		b.WriteByte('\n')
	}
	return b.String()
}

func describe(b Block) string {
	switch b.Type {
	case "text":
		return fmt.Sprintf("text:%q", clip(b.Text, 80))
	case "tool_result":
		return fmt.Sprintf("tool_result(%s,err=%v):%q", b.ToolUseID, b.IsError, clip(b.ResultText(), 80))
	}
	return b.Type
}

func describeReply(r Reply) string {
	s := fmt.Sprintf("%q", clip(r.Text, 40))
	if r.ToolUse != nil {
		in, _ := json.Marshal(r.ToolUse.Input)
		s += fmt.Sprintf("+%s%s", r.ToolUse.Name, in)
	}
	if r.Status != 0 {
		s += fmt.Sprintf(" status=%d", r.Status)
	}
	return s
}

func clip(s string, n int) string {
	s = strings.ReplaceAll(s, "\n", " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}

func (s *Server) record(r Request) {
	s.mu.Lock()
	s.requests = append(s.requests, r)
	s.mu.Unlock()
}

func (s *Server) nextID(prefix string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ids++
	return fmt.Sprintf("%s_fake%04d", prefix, s.ids)
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	rec := Request{Method: r.Method, Path: r.URL.Path, RawQuery: r.URL.RawQuery, Header: r.Header.Clone(), Body: body}
	switch {
	case r.URL.Path == "/" && (r.Method == http.MethodHead || r.Method == http.MethodGet):
		rec.Status = http.StatusOK
		w.WriteHeader(http.StatusOK)
	case r.URL.Path == "/v1/messages" && r.Method == http.MethodPost:
		s.messages(w, &rec)
		return
	case r.URL.Path == "/v1/messages/count_tokens" && r.Method == http.MethodPost:
		var req MessagesRequest
		if err := json.Unmarshal(body, &req); err != nil {
			rec.Status = http.StatusBadRequest
			apiError(w, rec.Status, "invalid_request_error", err.Error())
			break
		}
		rec.Messages = &req
		rec.Status = http.StatusOK
		writeJSON(w, map[string]any{"input_tokens": tokens(body)})
	default:
		rec.Status = http.StatusNotFound
		apiError(w, rec.Status, "not_found_error", "fakeanthropic: no route for "+r.Method+" "+r.URL.Path)
	}
	s.record(rec)
}

func (s *Server) messages(w http.ResponseWriter, rec *Request) {
	var req MessagesRequest
	if err := json.Unmarshal(rec.Body, &req); err != nil {
		rec.Status = http.StatusBadRequest
		s.record(*rec)
		apiError(w, rec.Status, "invalid_request_error", "fakeanthropic: "+err.Error())
		return
	}
	rec.Messages = &req
	// Recorded before the script runs (a script may take its time, and the
	// request should show while it does) and completed after.
	s.mu.Lock()
	s.calls++
	n := s.calls
	idx := len(s.requests)
	s.requests = append(s.requests, *rec)
	s.mu.Unlock()
	last, ok := req.LastUserBlock()
	reply := s.script(Call{N: n, Request: &req, Last: last, HasLast: ok})
	if reply.ToolUse != nil {
		// Scripts share their replies between calls: give this one its own
		// tool call (and id).
		tu := *reply.ToolUse
		if tu.ID == "" {
			tu.ID = s.nextID("toolu")
		}
		reply.ToolUse = &tu
	}
	status := http.StatusOK
	if reply.Status != 0 {
		status = reply.Status
	}
	// Completed before answering: a client may send its next request as
	// soon as it has read this reply.
	s.mu.Lock()
	s.requests[idx].Reply = &reply
	s.requests[idx].Status = status
	s.mu.Unlock()
	if status == http.StatusTooManyRequests && !reply.LimitReset.IsZero() {
		h := w.Header()
		h.Set("anthropic-ratelimit-unified-status", "rejected")
		h.Set("anthropic-ratelimit-unified-reset", strconv.FormatInt(reply.LimitReset.Unix(), 10))
		h.Set("anthropic-ratelimit-unified-representative-claim", "five_hour")
		apiError(w, status, "rate_limit_error", "This request would exceed your account's rate limit. Please try again later.")
		return
	}
	if status != http.StatusOK {
		apiError(w, status, "api_error", "fakeanthropic: scripted error")
		return
	}
	model := req.Model
	if model == "" {
		model = Model
	}
	msg := s.message(model, reply, tokens(rec.Body))
	if !req.Stream {
		writeJSON(w, msg)
		return
	}
	s.stream(w, msg, reply)
}

// message is the complete reply in the non-streaming shape.
func (s *Server) message(model string, reply Reply, inTokens int) map[string]any {
	var content []map[string]any
	if reply.Text != "" || reply.ToolUse == nil {
		content = append(content, map[string]any{"type": "text", "text": reply.Text})
	}
	if tu := reply.ToolUse; tu != nil {
		input := tu.Input
		if input == nil {
			input = map[string]any{}
		}
		content = append(content, map[string]any{"type": "tool_use", "id": tu.ID, "name": tu.Name, "input": input})
	}
	stop := reply.StopReason
	if stop == "" {
		stop = "end_turn"
		if reply.ToolUse != nil {
			stop = "tool_use"
		}
	}
	return map[string]any{
		"id": s.nextID("msg"), "type": "message", "role": "assistant", "model": model,
		"content": content, "stop_reason": stop, "stop_sequence": nil,
		"usage": map[string]any{
			"input_tokens": inTokens, "output_tokens": outTokens(reply),
			"cache_creation_input_tokens": 0, "cache_read_input_tokens": 0,
		},
	}
}

// stream writes msg as the Messages API's server-sent events.
func (s *Server) stream(w http.ResponseWriter, msg map[string]any, reply Reply) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.Header().Set("request-id", s.nextID("req"))
	w.WriteHeader(http.StatusOK)
	fl, _ := w.(http.Flusher)
	event := func(name string, data any) {
		b, _ := json.Marshal(data)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", name, b)
		if fl != nil {
			fl.Flush()
		}
	}
	usage := msg["usage"].(map[string]any)
	start := map[string]any{}
	for k, v := range msg {
		start[k] = v
	}
	start["content"] = []any{}
	start["stop_reason"] = nil
	start["usage"] = map[string]any{
		"input_tokens": usage["input_tokens"], "output_tokens": 1,
		"cache_creation_input_tokens": 0, "cache_read_input_tokens": 0,
	}
	event("message_start", map[string]any{"type": "message_start", "message": start})
	event("ping", map[string]any{"type": "ping"})
	for i, c := range msg["content"].([]map[string]any) {
		switch c["type"] {
		case "text":
			event("content_block_start", map[string]any{"type": "content_block_start", "index": i,
				"content_block": map[string]any{"type": "text", "text": ""}})
			for _, part := range chunks(c["text"].(string), 24) {
				event("content_block_delta", map[string]any{"type": "content_block_delta", "index": i,
					"delta": map[string]any{"type": "text_delta", "text": part}})
			}
		case "tool_use":
			event("content_block_start", map[string]any{"type": "content_block_start", "index": i,
				"content_block": map[string]any{"type": "tool_use", "id": c["id"], "name": c["name"], "input": map[string]any{}}})
			in, _ := json.Marshal(c["input"])
			for _, part := range chunks(string(in), 16) {
				event("content_block_delta", map[string]any{"type": "content_block_delta", "index": i,
					"delta": map[string]any{"type": "input_json_delta", "partial_json": part}})
			}
		}
		event("content_block_stop", map[string]any{"type": "content_block_stop", "index": i})
	}
	event("message_delta", map[string]any{"type": "message_delta",
		"delta": map[string]any{"stop_reason": msg["stop_reason"], "stop_sequence": nil},
		"usage": map[string]any{"output_tokens": usage["output_tokens"]}})
	event("message_stop", map[string]any{"type": "message_stop"})
}

// chunks splits s into pieces of at most n bytes (never inside a UTF-8
// sequence); an empty s is one empty piece.
func chunks(s string, n int) []string {
	if s == "" {
		return []string{""}
	}
	var out []string
	for len(s) > 0 {
		i := n
		if i >= len(s) {
			i = len(s)
		} else {
			for i > 0 && s[i]&0xC0 == 0x80 {
				i--
			}
			if i == 0 {
				i = n
			}
		}
		out = append(out, s[:i])
		s = s[i:]
	}
	return out
}

// tokens is a stable, rough token count of a body: one per 4 bytes.
func tokens(body []byte) int { return len(body)/4 + 1 }

func outTokens(r Reply) int {
	n := len(r.Text)/4 + 1
	if r.ToolUse != nil {
		in, _ := json.Marshal(r.ToolUse.Input)
		n += len(in)/4 + 5
	}
	return n
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

func apiError(w http.ResponseWriter, status int, typ, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"type": "error", "error": map[string]any{"type": typ, "message": msg}})
}
