package fakeopenai

import (
	"encoding/json"
	"fmt"
	"net/http"
	"time"
)

// chatRequest is the part of a /v1/chat/completions body the server reads.
type chatRequest struct {
	Model    string `json:"model"`
	Stream   bool   `json:"stream"`
	Messages []struct {
		Role       string          `json:"role"`
		Content    json.RawMessage `json:"content"`
		ToolCallID string          `json:"tool_call_id"`
		ToolCalls  []struct {
			ID       string `json:"id"`
			Function struct {
				Name      string `json:"name"`
				Arguments string `json:"arguments"`
			} `json:"function"`
		} `json:"tool_calls"`
	} `json:"messages"`
	Tools []struct {
		Type     string `json:"type"`
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	} `json:"tools"`
	ResponseFormat struct {
		Type       string `json:"type"`
		JSONSchema struct {
			Schema json.RawMessage `json:"schema"`
		} `json:"json_schema"`
	} `json:"response_format"`
}

// items reads a chat request as a Responses request: system and user
// messages as messages, an assistant's tool calls as function_call items,
// tool messages as function_call_output items.
func (c *chatRequest) items() *ResponsesRequest {
	r := &ResponsesRequest{Model: c.Model, Stream: c.Stream}
	for _, t := range c.Tools {
		r.Tools = append(r.Tools, Tool{Type: t.Type, Name: t.Function.Name})
	}
	if c.ResponseFormat.Type == "json_schema" {
		r.Text.Format.Type = "json_schema"
		r.Text.Format.Schema = c.ResponseFormat.JSONSchema.Schema
	}
	for _, m := range c.Messages {
		switch {
		case m.Role == "tool":
			r.Input = append(r.Input, Item{Type: "function_call_output", CallID: m.ToolCallID, Output: m.Content})
		case len(m.ToolCalls) > 0:
			if partsText(m.Content) != "" {
				r.Input = append(r.Input, Item{Type: "message", Role: m.Role, Content: m.Content})
			}
			for _, tc := range m.ToolCalls {
				r.Input = append(r.Input, Item{Type: "function_call", CallID: tc.ID, Name: tc.Function.Name, Arguments: tc.Function.Arguments})
			}
		default:
			r.Input = append(r.Input, Item{Type: "message", Role: m.Role, Content: m.Content})
		}
	}
	return r
}

func (s *Server) chatCompletions(w http.ResponseWriter, rec Request) {
	var c chatRequest
	if err := json.Unmarshal(rec.Body, &c); err != nil {
		s.badRequest(w, rec, err)
		return
	}
	req := c.items()
	reply, status := s.decide(&rec, req)
	if status != http.StatusOK {
		replyError(w, status, reply.Error)
		return
	}
	model := c.Model
	if model == "" {
		model = Model
	}
	id := s.nextID("chatcmpl")
	in, out := len(rec.Body)/4+1, outTokens(reply)
	usage := map[string]any{"prompt_tokens": in, "completion_tokens": out, "total_tokens": in + out}
	finish := "stop"
	msg := map[string]any{"role": "assistant", "content": reply.Text}
	var call map[string]any
	if reply.Call != nil {
		finish = "tool_calls"
		args := "{}"
		if reply.Call.Arguments != nil {
			b, _ := json.Marshal(reply.Call.Arguments)
			args = string(b)
		}
		call = map[string]any{"id": reply.Call.CallID, "type": "function", "function": map[string]any{"name": reply.Call.Name, "arguments": args}}
		msg["content"] = nil
		msg["tool_calls"] = []any{call}
	}
	created := time.Now().Unix()
	if !c.Stream {
		writeJSON(w, map[string]any{"id": id, "object": "chat.completion", "created": created, "model": model,
			"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish}}, "usage": usage})
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	fl, _ := w.(http.Flusher)
	chunk := func(delta map[string]any, finish any, usage any) {
		v := map[string]any{"id": id, "object": "chat.completion.chunk", "created": created, "model": model,
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}}
		if usage != nil {
			v["usage"] = usage
		}
		b, _ := json.Marshal(v)
		fmt.Fprintf(w, "data: %s\n\n", b)
		if fl != nil {
			fl.Flush()
		}
	}
	chunk(map[string]any{"role": "assistant", "content": ""}, nil, nil)
	if call != nil {
		call["index"] = 0
		chunk(map[string]any{"tool_calls": []any{call}}, nil, nil)
	} else {
		for _, part := range chunks(reply.Text, 24) {
			chunk(map[string]any{"content": part}, nil, nil)
		}
	}
	chunk(map[string]any{}, finish, usage)
	fmt.Fprint(w, "data: [DONE]\n\n")
	if fl != nil {
		fl.Flush()
	}
}
