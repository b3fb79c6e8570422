// Package fakegemini is a scripted stand-in for the Gemini API
// (generativelanguage v1beta), enough for the Gemini CLI to run against it
// offline (GOOGLE_GEMINI_BASE_URL): POST /v1beta/models/M:generateContent
// (one JSON reply: the CLI's router and other side calls, which ask for
// JSON of a given schema) and POST /v1beta/models/M:streamGenerateContent
// (server-sent events: the agent's main loop). A Script decides each
// streamed reply from the last part of the last content; side calls get a
// JSON object filled in from the schema they ask for. Every request is
// recorded for assertions.
package fakegemini

import (
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

	"github.com/vibeteam/vibeteam/e2e/schemafill"
)

// Part is one part of a content: text, a function call the model made, or
// a function response the client sends back.
type Part struct {
	Text             string            `json:"text,omitempty"`
	FunctionCall     *FunctionCall     `json:"functionCall,omitempty"`
	FunctionResponse *FunctionResponse `json:"functionResponse,omitempty"`
}

// FunctionCall is a tool call.
type FunctionCall struct {
	Name string         `json:"name"`
	Args map[string]any `json:"args,omitempty"`
}

// FunctionResponse is a tool call's result.
type FunctionResponse struct {
	Name     string          `json:"name"`
	ID       string          `json:"id,omitempty"`
	Response json.RawMessage `json:"response,omitempty"`
}

// Content is one turn of the conversation.
type Content struct {
	Role  string `json:"role"`
	Parts []Part `json:"parts"`
}

// Text is the content's text parts, joined by newlines.
func (c Content) Text() string {
	var out []string
	for _, p := range c.Parts {
		if p.Text != "" {
			out = append(out, p.Text)
		}
	}
	return strings.Join(out, "\n")
}

// GenerationConfig is the part of a request's generationConfig the server
// reads.
type GenerationConfig struct {
	ResponseMimeType   string          `json:"responseMimeType,omitempty"`
	ResponseJSONSchema json.RawMessage `json:"responseJsonSchema,omitempty"`
	ResponseSchema     json.RawMessage `json:"responseSchema,omitempty"`
}

// ToolGroup is one entry of a request's tools.
type ToolGroup struct {
	FunctionDeclarations []struct {
		Name string `json:"name"`
	} `json:"functionDeclarations"`
}

// GenerateRequest is the part of a generateContent body the server reads.
type GenerateRequest struct {
	Contents         []Content        `json:"contents"`
	GenerationConfig GenerationConfig `json:"generationConfig"`
	Tools            []ToolGroup      `json:"tools"`
}

// ToolNames is every function the request declares.
func (r *GenerateRequest) ToolNames() []string {
	var out []string
	for _, g := range r.Tools {
		for _, d := range g.FunctionDeclarations {
			out = append(out, d.Name)
		}
	}
	return out
}

// HasTool reports whether the request declares a function of that name.
func (r *GenerateRequest) HasTool(name string) bool {
	for _, n := range r.ToolNames() {
		if n == name {
			return true
		}
	}
	return false
}

// LastPart is the last part of the last content: the new prompt or a
// function response.
func (r *GenerateRequest) LastPart() (Part, bool) {
	if len(r.Contents) == 0 {
		return Part{}, false
	}
	c := r.Contents[len(r.Contents)-1]
	if len(c.Parts) == 0 {
		return Part{}, false
	}
	return c.Parts[len(c.Parts)-1], true
}

// UserTexts is the text of every user content, oldest first.
func (r *GenerateRequest) UserTexts() []string {
	var out []string
	for _, c := range r.Contents {
		if c.Role == "user" {
			if t := c.Text(); t != "" {
				out = append(out, t)
			}
		}
	}
	return out
}

// FunctionResponses counts the function responses in the conversation.
func (r *GenerateRequest) FunctionResponses() int {
	n := 0
	for _, c := range r.Contents {
		for _, p := range c.Parts {
			if p.FunctionResponse != nil {
				n++
			}
		}
	}
	return n
}

// Reply is what the model answers on the main loop: text, or one function
// call.
type Reply struct {
	Text string
	Call *FunctionCall
	// Status, when not 0 or 200, answers with an API error of that HTTP status.
	Status int
	// RetryDelay, with Status 429, answers as the API does a spent quota:
	// RESOURCE_EXHAUSTED, "You exceeded your current quota … Please retry
	// in Ns.", with a QuotaFailure (a per-minute quota: a daily one reads
	// as exhausted for the day) and a RetryInfo of that delay. The Gemini
	// CLI waits a delay of up to 300 s and retries by itself; above that
	// it gives up at once.
	RetryDelay time.Duration
}

// Call is what a Script sees of one streamGenerateContent request.
type Call struct {
	N       int // 1 for the first streamed request
	Model   string
	Request *GenerateRequest
	Last    Part // LastPart
	HasLast bool
}

// Script decides the reply to one streamed (main loop) request.
type Script func(c Call) Reply

// Request is one recorded HTTP request and what it got.
type Request struct {
	Time     time.Time
	Method   string
	Path     string
	RawQuery string
	Header   http.Header
	Model    string // from the path
	Method2  string // generateContent, streamGenerateContent, countTokens, ...
	Body     []byte
	Generate *GenerateRequest // decoded bodies of generate calls
	Status   int
	Reply    *Reply // the scripted reply of a streamed call
	JSON     string // the JSON text answered to a side call
}

// Stream reports whether the request was the streamed main loop.
func (r Request) Stream() bool { return r.Method2 == "streamGenerateContent" }

// Server is a running fake.
type Server struct {
	script Script
	srv    *httptest.Server
	prefer map[string]any

	mu       sync.Mutex
	requests []Request
	calls    int
	changed  chan struct{}
}

// New starts a server on 127.0.0.1 and closes it when the test ends.
func New(tb testing.TB, script Script) *Server {
	tb.Helper()
	s := &Server{script: script, changed: make(chan struct{}), prefer: map[string]any{
		// The router picks the cheap model; the next-speaker check hands
		// the turn back to the user (otherwise the CLI continues by itself).
		"model_choice": "flash", "next_speaker": "user", "complexity_score": 10,
	}}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	tb.Cleanup(s.srv.Close)
	return s
}

// URL is the base URL, for GOOGLE_GEMINI_BASE_URL.
func (s *Server) URL() string { return s.srv.URL }

// Requests is a copy of every request so far, in arrival order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// MainRequests is the recorded requests of the main loop (streamed, and
// not asking for JSON).
func (s *Server) MainRequests() []Request {
	var out []Request
	for _, r := range s.Requests() {
		if r.Stream() && r.Generate != nil && r.JSON == "" {
			out = append(out, r)
		}
	}
	return out
}

// Changed is closed when the next request is recorded or answered.
func (s *Server) Changed() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.changed
}

func (s *Server) notifyLocked() {
	close(s.changed)
	s.changed = make(chan struct{})
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
		if g := r.Generate; g != nil {
			var roles []string
			for _, c := range g.Contents {
				roles = append(roles, fmt.Sprintf("%s(%d)", c.Role, len(c.Parts)))
			}
			last, _ := g.LastPart()
			fmt.Fprintf(&b, " tools=%d contents=%s last=%s", len(g.ToolNames()), strings.Join(roles, ","), describe(last))
		}
		if r.Reply != nil {
			fmt.Fprintf(&b, " reply=%s", describeReply(*r.Reply))
		}
		if r.JSON != "" {
			fmt.Fprintf(&b, " json=%s", clip(r.JSON, 100))
		}
		b.WriteByte('\n')
	}
	return b.String()
}

func describe(p Part) string {
	switch {
	case p.FunctionResponse != nil:
		return fmt.Sprintf("functionResponse(%s):%s", p.FunctionResponse.Name, clip(string(p.FunctionResponse.Response), 100))
	case p.FunctionCall != nil:
		a, _ := json.Marshal(p.FunctionCall.Args)
		return fmt.Sprintf("functionCall(%s%s)", p.FunctionCall.Name, a)
	}
	return fmt.Sprintf("text:%q", clip(p.Text, 100))
}

func describeReply(r Reply) string {
	s := fmt.Sprintf("%q", clip(r.Text, 40))
	if r.Call != nil {
		a, _ := json.Marshal(r.Call.Args)
		s += fmt.Sprintf("+%s%s", r.Call.Name, a)
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

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	rec := Request{Time: time.Now(), Method: r.Method, Path: r.URL.Path, RawQuery: r.URL.RawQuery, Header: r.Header.Clone(), Body: body}
	// /v1beta/models/<model>:<method>
	if rest, ok := strings.CutPrefix(r.URL.Path, "/v1beta/models/"); ok {
		rec.Model, rec.Method2, _ = strings.Cut(rest, ":")
	}
	switch {
	case r.Method == http.MethodPost && (rec.Method2 == "generateContent" || rec.Method2 == "streamGenerateContent"):
		s.generate(w, rec)
		return
	case r.Method == http.MethodPost && rec.Method2 == "countTokens":
		rec.Status = http.StatusOK
		writeJSON(w, map[string]any{"totalTokens": len(body)/4 + 1})
	case r.Method == http.MethodPost && rec.Method2 == "embedContent":
		rec.Status = http.StatusOK
		writeJSON(w, map[string]any{"embedding": map[string]any{"values": []float64{0.1, 0.2, 0.3}}})
	default:
		rec.Status = http.StatusNotFound
		apiError(w, rec.Status, "fakegemini: no route for "+r.Method+" "+r.URL.Path)
	}
	s.mu.Lock()
	s.requests = append(s.requests, rec)
	s.notifyLocked()
	s.mu.Unlock()
}

func (s *Server) generate(w http.ResponseWriter, rec Request) {
	var req GenerateRequest
	if err := json.Unmarshal(rec.Body, &req); err != nil {
		rec.Status = http.StatusBadRequest
		s.mu.Lock()
		s.requests = append(s.requests, rec)
		s.notifyLocked()
		s.mu.Unlock()
		apiError(w, rec.Status, "fakegemini: "+err.Error())
		return
	}
	rec.Generate = &req
	stream := rec.Stream()
	s.mu.Lock()
	n := 0
	if stream {
		s.calls++
		n = s.calls
	}
	idx := len(s.requests)
	s.requests = append(s.requests, rec)
	s.notifyLocked()
	s.mu.Unlock()

	usage := map[string]any{"promptTokenCount": len(rec.Body)/4 + 1, "candidatesTokenCount": 5, "totalTokenCount": len(rec.Body)/4 + 6}
	schema := req.GenerationConfig.ResponseJSONSchema
	if len(schema) == 0 {
		schema = req.GenerationConfig.ResponseSchema
	}
	if !stream || len(schema) > 0 || req.GenerationConfig.ResponseMimeType == "application/json" {
		s.sideReply(w, idx, rec, &req, schema, usage, stream)
		return
	}

	last, ok := req.LastPart()
	reply := s.script(Call{N: n, Model: rec.Model, Request: &req, Last: last, HasLast: ok})
	status := http.StatusOK
	if reply.Status != 0 {
		status = reply.Status
	}
	s.mu.Lock()
	s.requests[idx].Reply = &reply
	s.requests[idx].Status = status
	s.notifyLocked()
	s.mu.Unlock()
	if status == http.StatusTooManyRequests && reply.RetryDelay > 0 {
		quotaError(w, reply.RetryDelay)
		return
	}
	if status != http.StatusOK {
		apiError(w, status, "fakegemini: scripted error")
		return
	}
	var part map[string]any
	if reply.Call != nil {
		part = map[string]any{"functionCall": map[string]any{"name": reply.Call.Name, "args": reply.Call.Args}}
	} else {
		part = map[string]any{"text": reply.Text}
	}
	writeSSE(w, map[string]any{
		"candidates":    []any{map[string]any{"content": map[string]any{"role": "model", "parts": []any{part}}, "finishReason": "STOP", "index": 0}},
		"usageMetadata": usage,
		"modelVersion":  rec.Model,
	})
}

// sideReply answers a side call (router, next-speaker check, summaries,
// ...): JSON of the schema it asks for, or a short text.
func (s *Server) sideReply(w http.ResponseWriter, idx int, rec Request, req *GenerateRequest, schema json.RawMessage, usage map[string]any, stream bool) {
	text := "E2e side reply"
	if len(schema) > 0 || req.GenerationConfig.ResponseMimeType == "application/json" {
		b, _ := json.Marshal(schemafill.Fill(schema, s.prefer, ""))
		text = string(b)
	}
	s.mu.Lock()
	s.requests[idx].Status = http.StatusOK
	s.requests[idx].JSON = text
	s.notifyLocked()
	s.mu.Unlock()
	resp := map[string]any{
		"candidates":    []any{map[string]any{"content": map[string]any{"role": "model", "parts": []any{map[string]any{"text": text}}}, "finishReason": "STOP", "index": 0}},
		"usageMetadata": usage,
		"modelVersion":  rec.Model,
	}
	if stream {
		writeSSE(w, resp)
	} else {
		writeJSON(w, resp)
	}
}

// writeSSE answers with one server-sent event.
func writeSSE(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	b, _ := json.Marshal(v)
	fmt.Fprintf(w, "data: %s\n\n", b)
	if fl, ok := w.(http.Flusher); ok {
		fl.Flush()
	}
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

func apiError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"code": status, "message": msg, "status": "INVALID_ARGUMENT"}})
}

// quotaError answers as the Gemini API does a request over its quota.
func quotaError(w http.ResponseWriter, delay time.Duration) {
	secs := strconv.FormatFloat(delay.Seconds(), 'f', -1, 64) + "s"
	msg := "You exceeded your current quota, please check your plan and billing details. For more information on this error, head to: https://ai.google.dev/gemini-api/docs/rate-limits.\n" +
		"* Quota exceeded for metric: generativelanguage.googleapis.com/generate_content_paid_tier_input_token_count, limit: 1000000, model: gemini-2.5-pro\n" +
		"Please retry in " + secs + "."
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusTooManyRequests)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{
		"code": http.StatusTooManyRequests, "message": msg, "status": "RESOURCE_EXHAUSTED",
		"details": []any{
			map[string]any{"@type": "type.googleapis.com/google.rpc.QuotaFailure", "violations": []any{map[string]any{
				"quotaMetric":     "generativelanguage.googleapis.com/generate_content_paid_tier_input_token_count",
				"quotaId":         "GenerateContentPaidTierInputTokensPerModelPerMinute",
				"quotaDimensions": map[string]any{"location": "global", "model": "gemini-2.5-pro"}, "quotaValue": "1000000",
			}}},
			map[string]any{"@type": "type.googleapis.com/google.rpc.Help", "links": []any{map[string]any{
				"description": "Learn more about Gemini API quotas", "url": "https://ai.google.dev/gemini-api/docs/rate-limits",
			}}},
			map[string]any{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": secs},
		},
	}})
}
