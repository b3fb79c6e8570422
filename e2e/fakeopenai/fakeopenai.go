// Package fakeopenai is a scripted stand-in for the OpenAI API, enough for
// the Codex CLI (a custom model provider with wire_api = "responses") and
// opencode (an OpenAI-compatible provider) to run against it offline:
// POST /v1/responses and POST /v1/chat/completions, answered as
// server-sent events (or as one JSON body when the request does not ask for
// a stream). A chat request is read as the same input items as a Responses
// one, so one Script serves both: it decides each reply from the request's
// latest input item. Every request is recorded for assertions.
package fakeopenai

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vibeteam/vibeteam/e2e/schemafill"
)

// Model is the model name the server reports when a request names none.
const Model = "gpt-fake"

// Item is one input (or output) item of a Responses request: a message, a
// function_call the model made, or a function_call_output the client sends
// back. Only the fields the scripts look at are decoded; Raw keeps the rest.
type Item struct {
	Type      string          `json:"type"`
	Role      string          `json:"role,omitempty"`
	Content   json.RawMessage `json:"content,omitempty"` // a string or content parts
	Name      string          `json:"name,omitempty"`
	Namespace string          `json:"namespace,omitempty"`
	Arguments string          `json:"arguments,omitempty"`
	CallID    string          `json:"call_id,omitempty"`
	Output    json.RawMessage `json:"output,omitempty"` // a string or content parts
	Raw       json.RawMessage `json:"-"`
}

// UnmarshalJSON keeps the raw item too.
func (it *Item) UnmarshalJSON(data []byte) error {
	type plain Item
	var p plain
	if err := json.Unmarshal(data, &p); err != nil {
		return err
	}
	*it = Item(p)
	it.Raw = append(json.RawMessage(nil), data...)
	return nil
}

// partsText is the text of a string or of an array of content parts
// ({"type":"input_text"|"output_text"|"text","text":...}), joined by
// newlines.
func partsText(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return ""
	}
	if raw[0] == '"' {
		var s string
		_ = json.Unmarshal(raw, &s)
		return s
	}
	var parts []struct {
		Text string `json:"text"`
	}
	if err := json.Unmarshal(raw, &parts); err != nil {
		return string(raw)
	}
	var out []string
	for _, p := range parts {
		if p.Text != "" {
			out = append(out, p.Text)
		}
	}
	return strings.Join(out, "\n")
}

// Text is a message's text.
func (it Item) Text() string { return partsText(it.Content) }

// OutputText is a function_call_output's output as text.
func (it Item) OutputText() string { return partsText(it.Output) }

// IsUserMessage reports whether the item is a message from the user.
func (it Item) IsUserMessage() bool {
	return (it.Type == "message" || it.Type == "") && it.Role == "user"
}

// IsCallOutput reports whether the item carries a tool call's result back.
func (it Item) IsCallOutput() bool {
	return it.Type == "function_call_output" || it.Type == "custom_tool_call_output"
}

// Tool is one tool a request offers (a function, or a namespace of them).
type Tool struct {
	Type string `json:"type"`
	Name string `json:"name"`
}

// ResponsesRequest is the part of a /v1/responses body the server reads.
type ResponsesRequest struct {
	Model        string `json:"model"`
	Instructions string `json:"instructions"`
	Input        []Item `json:"input"`
	Tools        []Tool `json:"tools"`
	Stream       bool   `json:"stream"`
	Text         struct {
		Format struct {
			Type   string          `json:"type"`
			Schema json.RawMessage `json:"schema"`
		} `json:"format"`
	} `json:"text"`
}

// IsSideRequest reports whether the request is a side request (a thread
// title, ...) rather than the agent's main loop: it asks for structured
// output, or offers no tools.
func (r *ResponsesRequest) IsSideRequest() bool {
	return r.Text.Format.Type == "json_schema" || len(r.Tools) == 0
}

// Last is the latest input item: what the client just added (the new
// prompt, or a tool call's output).
func (r *ResponsesRequest) Last() (Item, bool) {
	if len(r.Input) == 0 {
		return Item{}, false
	}
	return r.Input[len(r.Input)-1], true
}

// UserTexts is the text of every user message, oldest first (Codex sends
// its environment context and instructions as user messages too).
func (r *ResponsesRequest) UserTexts() []string {
	var out []string
	for _, it := range r.Input {
		if it.IsUserMessage() {
			out = append(out, it.Text())
		}
	}
	return out
}

// HasTool reports whether the request offers a tool of that name.
func (r *ResponsesRequest) HasTool(name string) bool {
	for _, t := range r.Tools {
		if t.Name == name {
			return true
		}
	}
	return false
}

// CallOutputs counts the tool call outputs in the request's input.
func (r *ResponsesRequest) CallOutputs() int {
	n := 0
	for _, it := range r.Input {
		if it.IsCallOutput() {
			n++
		}
	}
	return n
}

// FunctionCall is a tool call in a reply.
type FunctionCall struct {
	CallID    string // generated when empty
	Name      string
	Namespace string // a tool of a namespace (codex's MCP servers: mcp__NAME)
	Arguments any    // marshalled to a JSON string
}

// Reply is what the model answers: text, or one function call.
type Reply struct {
	Text string
	Call *FunctionCall
	// Status, when not 0 or 200, answers with an API error of that HTTP status.
	Status int
	// Error, with Status, is that API error's body (default: an
	// invalid_request_error "fakeopenai: scripted error").
	Error *APIError
}

// APIError is the body of an error answer: {"error": {...}}.
type APIError struct {
	Type    string
	Code    string // null when empty
	Message string
	// PlanType and ResetsAt are the fields a usage_limit_reached error of
	// the ChatGPT backend adds, which Codex reads (ResetsAt as Unix
	// seconds; left out when zero).
	PlanType string
	ResetsAt time.Time
}

// Call is what a Script sees of one /v1/responses request.
type Call struct {
	N       int // 1 for the first /v1/responses request
	Request *ResponsesRequest
	Last    Item // the latest input item
	HasLast bool
}

// Script decides the reply to one request.
type Script func(c Call) Reply

// Request is one recorded HTTP request and what it got.
type Request struct {
	Time      time.Time // when it arrived
	Method    string
	Path      string
	RawQuery  string
	Header    http.Header
	Body      []byte
	Responses *ResponsesRequest // decoded bodies (a chat request as its items)
	Status    int               // the response's status code; 0 while the script runs
	Reply     *Reply            // the scripted reply; nil while the script runs
	JSON      string            // the structured output answered to a side request
}

// Server is a running fake.
type Server struct {
	script Script
	srv    *httptest.Server

	mu       sync.Mutex
	requests []Request
	calls    int
	ids      int
	changed  chan struct{} // closed and replaced on every recorded request
}

// New starts a server on 127.0.0.1 and closes it when the test ends.
func New(tb testing.TB, script Script) *Server {
	tb.Helper()
	s := &Server{script: script, changed: make(chan struct{})}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	tb.Cleanup(s.srv.Close)
	return s
}

// URL is the base URL (http://127.0.0.1:port); the provider's base_url is
// URL()+"/v1".
func (s *Server) URL() string { return s.srv.URL }

// Close stops the server (it is also closed when the test ends).
func (s *Server) Close() { s.srv.Close() }

// Requests is a copy of every request so far, in arrival order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// ResponsesRequests is the recorded, decoded model requests.
func (s *Server) ResponsesRequests() []Request {
	var out []Request
	for _, r := range s.Requests() {
		if r.Responses != nil {
			out = append(out, r)
		}
	}
	return out
}

// Changed is closed when the next request is recorded or answered: wait on
// it instead of polling.
func (s *Server) Changed() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.changed
}

func (s *Server) notifyLocked() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// MainRequests is the recorded requests of the agent's main loop (side
// requests left out).
func (s *Server) MainRequests() []Request {
	var out []Request
	for _, r := range s.ResponsesRequests() {
		if !r.Responses.IsSideRequest() {
			out = append(out, r)
		}
	}
	return out
}

// ReceivedUserText reports whether some main-loop request carried a user
// message containing text, and when the first such request arrived. (A
// side request may quote the prompt too: it does not count.)
func (s *Server) ReceivedUserText(text string) (time.Time, bool) {
	for _, r := range s.MainRequests() {
		for _, u := range r.Responses.UserTexts() {
			if strings.Contains(u, text) {
				return r.Time, true
			}
		}
	}
	return time.Time{}, false
}

// Summary is one line per request, for failure output.
func (s *Server) Summary() string {
	var b strings.Builder
	for i, r := range s.Requests() {
		fmt.Fprintf(&b, "%2d %s %s %s", i+1, r.Time.Format("15:04:05.000"), r.Method, r.Path)
		if r.RawQuery != "" {
			fmt.Fprintf(&b, "?%s", r.RawQuery)
		}
		fmt.Fprintf(&b, " -> %d", r.Status)
		if q := r.Responses; q != nil {
			var kinds []string
			for _, it := range q.Input {
				k := it.Type
				if it.Role != "" {
					k += "/" + it.Role
				}
				kinds = append(kinds, k)
			}
			last, _ := q.Last()
			fmt.Fprintf(&b, " stream=%v tools=%d input=[%s] last=%s", q.Stream, len(q.Tools), strings.Join(kinds, ","), Describe(last))
		}
		if r.JSON != "" {
			fmt.Fprintf(&b, " json=%s", clip(r.JSON, 100))
		} else if r.Reply != nil {
			fmt.Fprintf(&b, " reply=%s", describeReply(*r.Reply))
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// Describe is a short form of an item, for logs.
func Describe(it Item) string {
	switch {
	case it.IsUserMessage():
		return fmt.Sprintf("user:%q", clip(it.Text(), 100))
	case it.IsCallOutput():
		return fmt.Sprintf("%s(%s):%q", it.Type, it.CallID, clip(it.OutputText(), 100))
	case it.Type == "function_call":
		return fmt.Sprintf("function_call(%s %s %s)", it.CallID, it.Name, clip(it.Arguments, 80))
	case it.Type == "message":
		return fmt.Sprintf("%s:%q", it.Role, clip(it.Text(), 60))
	}
	return it.Type
}

func describeReply(r Reply) string {
	s := fmt.Sprintf("%q", clip(r.Text, 40))
	if r.Call != nil {
		a, _ := json.Marshal(r.Call.Arguments)
		s += fmt.Sprintf("+%s(%s)%s", r.Call.Name, r.Call.CallID, a)
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

func (s *Server) nextID(prefix string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ids++
	return fmt.Sprintf("%s_fake%04d", prefix, s.ids)
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	rec := Request{Time: time.Now(), Method: r.Method, Path: r.URL.Path, RawQuery: r.URL.RawQuery, Header: r.Header.Clone(), Body: body}
	if r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/responses") {
		s.responses(w, rec)
		return
	}
	if r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/chat/completions") {
		s.chatCompletions(w, rec)
		return
	}
	switch {
	case r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/models"):
		// Codex may list the provider's models; an empty list is fine.
		rec.Status = http.StatusOK
		writeJSON(w, map[string]any{"object": "list", "data": []any{}, "models": []any{}})
	case r.URL.Path == "/" || r.Method == http.MethodHead:
		rec.Status = http.StatusOK
		w.WriteHeader(http.StatusOK)
	default:
		rec.Status = http.StatusNotFound
		apiError(w, rec.Status, "fakeopenai: no route for "+r.Method+" "+r.URL.Path)
	}
	s.mu.Lock()
	s.requests = append(s.requests, rec)
	s.notifyLocked()
	s.mu.Unlock()
}

func (s *Server) responses(w http.ResponseWriter, rec Request) {
	var req ResponsesRequest
	if err := json.Unmarshal(rec.Body, &req); err != nil {
		s.badRequest(w, rec, err)
		return
	}
	reply, status := s.decide(&rec, &req)
	if status != http.StatusOK {
		replyError(w, status, reply.Error)
		return
	}
	model := req.Model
	if model == "" {
		model = Model
	}
	item := s.outputItem(reply)
	in, out := len(rec.Body)/4+1, outTokens(reply)
	usage := map[string]any{
		"input_tokens": in, "input_tokens_details": map[string]any{"cached_tokens": 0},
		"output_tokens": out, "output_tokens_details": map[string]any{"reasoning_tokens": 0},
		"total_tokens": in + out,
	}
	resp := map[string]any{
		"id": s.nextID("resp"), "object": "response", "created_at": time.Now().Unix(), "model": model,
		"status": "completed", "output": []any{item}, "usage": usage,
	}
	if !req.Stream {
		writeJSON(w, resp)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	fl, _ := w.(http.Flusher)
	seq := 0
	event := func(typ string, data map[string]any) {
		data["type"] = typ
		data["sequence_number"] = seq
		seq++
		b, _ := json.Marshal(data)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", typ, b)
		if fl != nil {
			fl.Flush()
		}
	}
	created := map[string]any{}
	for k, v := range resp {
		created[k] = v
	}
	created["status"] = "in_progress"
	created["output"] = []any{}
	delete(created, "usage")
	event("response.created", map[string]any{"response": created})
	event("response.in_progress", map[string]any{"response": created})
	if reply.Call == nil {
		id := item["id"]
		added := map[string]any{"id": id, "type": "message", "role": "assistant", "status": "in_progress", "content": []any{}}
		event("response.output_item.added", map[string]any{"output_index": 0, "item": added})
		event("response.content_part.added", map[string]any{"item_id": id, "output_index": 0, "content_index": 0,
			"part": map[string]any{"type": "output_text", "text": "", "annotations": []any{}}})
		for _, part := range chunks(reply.Text, 24) {
			event("response.output_text.delta", map[string]any{"item_id": id, "output_index": 0, "content_index": 0, "delta": part})
		}
		event("response.output_text.done", map[string]any{"item_id": id, "output_index": 0, "content_index": 0, "text": reply.Text})
		event("response.content_part.done", map[string]any{"item_id": id, "output_index": 0, "content_index": 0,
			"part": map[string]any{"type": "output_text", "text": reply.Text, "annotations": []any{}}})
	} else {
		added := map[string]any{}
		for k, v := range item {
			added[k] = v
		}
		added["status"] = "in_progress"
		added["arguments"] = ""
		event("response.output_item.added", map[string]any{"output_index": 0, "item": added})
		event("response.function_call_arguments.delta", map[string]any{"item_id": item["id"], "output_index": 0, "delta": item["arguments"]})
		event("response.function_call_arguments.done", map[string]any{"item_id": item["id"], "output_index": 0, "arguments": item["arguments"]})
	}
	event("response.output_item.done", map[string]any{"output_index": 0, "item": item})
	event("response.completed", map[string]any{"response": resp})
}

func (s *Server) badRequest(w http.ResponseWriter, rec Request, err error) {
	rec.Status = http.StatusBadRequest
	s.mu.Lock()
	s.requests = append(s.requests, rec)
	s.notifyLocked()
	s.mu.Unlock()
	apiError(w, rec.Status, "fakeopenai: "+err.Error())
}

// decide records the request and returns its reply: structured output for
// a request that asks for a JSON schema (a title), else the script's turn.
func (s *Server) decide(rec *Request, req *ResponsesRequest) (Reply, int) {
	rec.Responses = req
	// Recorded before the script runs (a script may take its time, and the
	// request should show while it does) and completed after.
	s.mu.Lock()
	s.calls++
	n := s.calls
	idx := len(s.requests)
	s.requests = append(s.requests, *rec)
	s.notifyLocked()
	s.mu.Unlock()
	var reply Reply
	var structured string
	if req.Text.Format.Type == "json_schema" {
		b, _ := json.Marshal(schemafill.Fill(req.Text.Format.Schema, map[string]any{"title": "Create a file"}, ""))
		structured = string(b)
		reply = Text(structured)
	} else {
		last, ok := req.Last()
		reply = s.script(Call{N: n, Request: req, Last: last, HasLast: ok})
	}
	if reply.Call != nil {
		// Scripts share their replies between calls: give this one its own
		// call id.
		c := *reply.Call
		if c.CallID == "" {
			c.CallID = s.nextID("call")
		}
		reply.Call = &c
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
	s.requests[idx].JSON = structured
	s.notifyLocked()
	s.mu.Unlock()
	return reply, status
}

// outputItem is the reply as one Responses output item.
func (s *Server) outputItem(reply Reply) map[string]any {
	if c := reply.Call; c != nil {
		args := "{}"
		if c.Arguments != nil {
			if str, ok := c.Arguments.(string); ok {
				args = str
			} else {
				b, _ := json.Marshal(c.Arguments)
				args = string(b)
			}
		}
		item := map[string]any{"id": s.nextID("fc"), "type": "function_call", "status": "completed",
			"call_id": c.CallID, "name": c.Name, "arguments": args}
		if c.Namespace != "" {
			item["namespace"] = c.Namespace
		}
		return item
	}
	return map[string]any{"id": s.nextID("msg"), "type": "message", "role": "assistant", "status": "completed",
		"content": []any{map[string]any{"type": "output_text", "text": reply.Text, "annotations": []any{}}}}
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

func outTokens(r Reply) int {
	n := len(r.Text)/4 + 1
	if r.Call != nil {
		a, _ := json.Marshal(r.Call.Arguments)
		n += len(a)/4 + 5
	}
	return n
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

// replyError answers a scripted error: e's body, or the default one.
func replyError(w http.ResponseWriter, status int, e *APIError) {
	if e == nil {
		apiError(w, status, "fakeopenai: scripted error")
		return
	}
	body := map[string]any{"type": e.Type, "message": e.Message, "code": nil}
	if e.Code != "" {
		body["code"] = e.Code
	}
	if e.PlanType != "" {
		body["plan_type"] = e.PlanType
	}
	if !e.ResetsAt.IsZero() {
		body["resets_at"] = e.ResetsAt.Unix()
		body["resets_in_seconds"] = max(int64(time.Until(e.ResetsAt).Seconds()), 0)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": body})
}

func apiError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"type": "invalid_request_error", "message": msg, "code": nil}})
}
