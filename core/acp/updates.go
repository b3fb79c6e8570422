package acp

import (
	"encoding/json"
	"strings"

	"github.com/vibeteam/vibeteam/core/agentstream"
	"github.com/vibeteam/vibeteam/internal/excerpt"
)

// Bounds of what a turn keeps while it streams.
const (
	maxResult  = 1 << 20  // the final message, as a headless run's result
	maxThought = 16 << 10 // one thought, as one agent.thinking event
)

// Tool call statuses.
const (
	statusCompleted = "completed"
	statusFailed    = "failed"
)

// toolInfo is what a tool call said so far.
type toolInfo struct {
	name, title, status string
	input               json.RawMessage
	done                bool // its result was reported
}

// turnState turns session/update into events and keeps the run's summary.
type turnState struct {
	sum     agentstream.Summary
	tools   map[string]*toolInfo
	msg     strings.Builder // the message being streamed (since the last tool call)
	last    string          // the turn's last whole message
	thought strings.Builder // a thought being streamed, reported once it ends
}

func (t *turnState) init() { t.tools = map[string]*toolInfo{} }

// begin starts a turn: its final message is its own.
func (t *turnState) begin() {
	t.msg.Reset()
	t.last = ""
}

func (t *turnState) summary() agentstream.Summary {
	s := t.sum
	s.Denials = append([]agentstream.Denial(nil), t.sum.Denials...)
	return s
}

// apply maps one update to events.
func (t *turnState) apply(u *update) []agentstream.Event {
	var evs []agentstream.Event
	if u.Kind != "agent_thought_chunk" {
		evs = t.endThought(evs)
	}
	switch u.Kind {
	case "agent_message_chunk":
		text := blockText(u.Content)
		if text == "" {
			// qwen reports each model call's usage on an empty chunk.
			if tok := metaTokens(u.Meta, "usage"); tok != nil {
				t.sum.Tokens.Add(*tok)
				evs = append(evs, agentstream.Event{Kind: agentstream.Usage, Tokens: tok})
			}
			return evs
		}
		if t.msg.Len()+len(text) <= maxResult {
			t.msg.WriteString(text)
		}
		return append(evs, agentstream.Event{Kind: agentstream.Message, Text: text, Delta: true})
	case "agent_thought_chunk":
		if text := blockText(u.Content); t.thought.Len()+len(text) <= maxThought {
			t.thought.WriteString(text)
		}
	case "tool_call":
		t.endMessage()
		return t.toolCall(u, evs)
	case "tool_call_update":
		return t.toolUpdate(u, evs)
	case "plan":
		return append(evs, agentstream.Event{Kind: agentstream.Plan, Plan: append([]agentstream.PlanEntry{}, u.Entries...)})
	case "usage_update":
		// The session's cost so far (claude): the run's spend.
		if u.Cost != nil && (u.Cost.Currency == "" || strings.EqualFold(u.Cost.Currency, "USD")) {
			t.sum.CostUSD = u.Cost.Amount
		}
	}
	return evs
}

func (t *turnState) endThought(evs []agentstream.Event) []agentstream.Event {
	if t.thought.Len() == 0 {
		return evs
	}
	text := t.thought.String()
	t.thought.Reset()
	return append(evs, agentstream.Event{Kind: agentstream.Thinking, Text: text})
}

func (t *turnState) endMessage() {
	if t.msg.Len() > 0 {
		t.last = t.msg.String()
		t.msg.Reset()
	}
}

func (t *turnState) toolCall(u *update, evs []agentstream.Event) []agentstream.Event {
	info := &toolInfo{name: toolName(u.Meta, u.ToolKind, u.Title), title: u.Title, status: u.Status, input: normInput(u.RawInput)}
	t.tools[u.ToolCallID] = info
	t.sum.ToolCalls++
	evs = append(evs, agentstream.Event{Kind: agentstream.ToolCall, ToolID: u.ToolCallID, Tool: info.name, Input: info.input, Status: u.Status})
	if u.Status == statusCompleted || u.Status == statusFailed {
		evs = append(evs, t.result(u.ToolCallID, info, u))
	}
	return evs
}

// toolUpdate reports a status change: the call again while it is pending
// or running, its result once it completed or failed. An update of a call
// never announced (gemini asks permission first) announces it.
func (t *turnState) toolUpdate(u *update, evs []agentstream.Event) []agentstream.Event {
	info := t.tools[u.ToolCallID]
	if info == nil {
		t.endMessage()
		return t.toolCall(u, evs)
	}
	if u.Title != "" {
		info.title = u.Title
	}
	if in := normInput(u.RawInput); len(in) > 0 {
		info.input = in
	}
	if u.Status == "" || u.Status == info.status || info.done {
		return evs
	}
	info.status = u.Status
	if u.Status == statusCompleted || u.Status == statusFailed {
		return append(evs, t.result(u.ToolCallID, info, u))
	}
	return append(evs, agentstream.Event{Kind: agentstream.ToolCall, ToolID: u.ToolCallID, Tool: info.name, Input: info.input, Status: u.Status})
}

func (t *turnState) result(id string, info *toolInfo, u *update) agentstream.Event {
	info.done = true
	return agentstream.Event{
		Kind: agentstream.ToolResult, ToolID: id, Tool: info.name, Status: u.Status,
		Output: excerpt.Cut(toolOutput(u.Content, u.RawOutput), agentstream.OutputLimit), IsError: u.Status == statusFailed,
	}
}

// endTurn takes the prompt's result: the turn's final message and usage.
func (t *turnState) endTurn(res PromptResult) []agentstream.Event {
	evs := t.endThought(nil)
	t.endMessage()
	t.sum.Turns++
	if res.StopReason == StopEndTurn {
		t.sum.Result, t.sum.HasResult = t.last, true
	}
	var tok *agentstream.Tokens
	if u := res.Usage; u != nil {
		tok = &agentstream.Tokens{Input: u.InputTokens, Output: u.OutputTokens, CacheRead: u.CachedReadTokens, CacheWrite: u.CachedWriteTokens}
	} else if q := metaTokens(res.Meta, "quota", "token_count"); q != nil {
		tok = q // gemini
	}
	if tok != nil {
		t.sum.Tokens.Add(*tok)
		evs = append(evs, agentstream.Event{Kind: agentstream.Usage, Tokens: tok})
	}
	return evs
}

// blockText is a content block's text ("" for other blocks).
func blockText(raw json.RawMessage) string {
	var b struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &b) != nil || b.Type != "text" {
		return ""
	}
	return b.Text
}

// toolOutput is what a tool call produced, as text: its content's text
// blocks and diffs, else its raw output.
func toolOutput(content, rawOutput json.RawMessage) string {
	var items []struct {
		Type    string          `json:"type"`
		Content json.RawMessage `json:"content"`
		Path    string          `json:"path"`
	}
	var parts []string
	if json.Unmarshal(content, &items) == nil {
		for _, it := range items {
			switch it.Type {
			case "content":
				if s := blockText(it.Content); s != "" {
					parts = append(parts, s)
				}
			case "diff":
				parts = append(parts, "diff "+it.Path)
			}
		}
	}
	if len(parts) > 0 {
		return strings.Join(parts, "\n")
	}
	var s string
	if json.Unmarshal(rawOutput, &s) == nil {
		return s
	}
	var o struct {
		Output string `json:"output"`
		Stdout string `json:"stdout"`
	}
	if json.Unmarshal(rawOutput, &o) == nil && o.Output+o.Stdout != "" {
		return o.Output + o.Stdout
	}
	if len(rawOutput) > 0 && string(rawOutput) != "null" {
		return string(rawOutput)
	}
	return ""
}

// metaTokens reads token counts under _meta's path, in the spellings
// the agents use (ACP's, the APIs' snake case, Gemini's usage metadata).
func metaTokens(meta json.RawMessage, path ...string) *agentstream.Tokens {
	raw := meta
	for _, key := range path {
		var m map[string]json.RawMessage
		if len(raw) == 0 || json.Unmarshal(raw, &m) != nil {
			return nil
		}
		raw = m[key]
	}
	var c map[string]json.RawMessage
	if len(raw) == 0 || json.Unmarshal(raw, &c) != nil {
		return nil
	}
	first := func(keys ...string) int64 {
		for _, k := range keys {
			var v float64
			if json.Unmarshal(c[k], &v) == nil {
				return int64(v)
			}
		}
		return 0
	}
	tok := agentstream.Tokens{
		Input:      first("inputTokens", "input_tokens", "promptTokenCount", "prompt_tokens", "input"),
		Output:     first("outputTokens", "output_tokens", "candidatesTokenCount", "completion_tokens", "output"),
		CacheRead:  first("cachedReadTokens", "cache_read_tokens", "cachedContentTokenCount", "cached_tokens"),
		CacheWrite: first("cachedWriteTokens", "cache_write_tokens"),
	}
	if tok == (agentstream.Tokens{}) {
		return nil
	}
	return &tok
}

// normInput is a tool's input as JSON, nil when there is none.
func normInput(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	return append(json.RawMessage(nil), raw...)
}
