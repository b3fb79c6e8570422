package agentstream

import (
	"encoding/json"
	"strings"
	"time"
)

// geminiParser reads gemini -p --output-format stream-json.
type geminiParser struct {
	sum Summary
	// text is the assistant's text since the last tool call: gemini streams
	// its answer as deltas and has no final message of its own.
	text string
	// calls remembers each tool_use, since tool_result carries only the id
	// and a denial names the tool and its input.
	calls map[string]geminiCall
	// replied: the model said something in this run (a message, a tool
	// call).
	replied bool
}

type geminiCall struct {
	tool  string
	input json.RawMessage
}

type geminiLine struct {
	Type       string          `json:"type"`
	SessionID  string          `json:"session_id"`
	Model      string          `json:"model"`
	Role       string          `json:"role"`
	Content    string          `json:"content"`
	Delta      bool            `json:"delta"`
	ToolName   string          `json:"tool_name"`
	ToolID     string          `json:"tool_id"`
	Parameters json.RawMessage `json:"parameters"`
	Status     string          `json:"status"`
	Output     json.RawMessage `json:"output"`
	Error      json.RawMessage `json:"error"`
	Message    string          `json:"message"`
	Stats      *struct {
		InputTokens  int64 `json:"input_tokens"`
		OutputTokens int64 `json:"output_tokens"`
		Cached       int64 `json:"cached"`
		Turns        *int  `json:"turns"`
	} `json:"stats"`
}

func (p *geminiParser) Feed(line []byte) []Event {
	var l geminiLine
	if !unmarshalObjectLine(line, &l) {
		return nil
	}
	switch l.Type {
	case "init":
		p.sum.SessionID = l.SessionID
		return []Event{{Kind: Init, SessionID: l.SessionID, Model: l.Model}}
	case "message":
		if l.Role != "assistant" {
			return nil
		}
		if !l.Delta {
			p.text = ""
		}
		p.text += l.Content
		p.replied = true
		return []Event{{Kind: Message, Text: l.Content, Delta: l.Delta}}
	case "tool_use":
		p.text = ""
		input := normToolInput(l.Parameters)
		if p.calls == nil {
			p.calls = map[string]geminiCall{}
		}
		p.calls[l.ToolID] = geminiCall{tool: l.ToolName, input: input}
		p.sum.ToolCalls++
		p.replied = true
		return []Event{{Kind: ToolCall, ToolID: l.ToolID, Tool: l.ToolName, Input: input}}
	case "tool_result":
		return p.toolResult(l)
	case "error":
		return []Event{{Kind: Error, Text: l.Message}}
	case "result":
		return p.result(l)
	}
	return nil
}

func (p *geminiParser) toolResult(l geminiLine) []Event {
	call := p.calls[l.ToolID]
	ev := Event{Kind: ToolResult, ToolID: l.ToolID, Tool: call.tool, Output: rawJSONText(l.Output), IsError: l.Status == "error"}
	msg, hasErr := errorMessageText(l.Error)
	if ev.Output == "" {
		ev.Output = msg
	}
	ev.Output = boundToolOutput(ev.Output)
	if hasErr && geminiDenied(l.Error, msg) {
		p.sum.Denials = append(p.sum.Denials, Denial{Tool: call.tool, ToolID: l.ToolID, Input: call.input, Message: msg})
	}
	return []Event{ev}
}

// geminiDenied tells a tool the approval mode kept from the agent (gemini
// leaves such tools out of its registry) from a tool that ran and failed.
func geminiDenied(raw json.RawMessage, msg string) bool {
	var e struct {
		Type string `json:"type"`
	}
	_ = json.Unmarshal(raw, &e) // an error given as a string has no type
	typ := strings.ToLower(e.Type)
	return typ == "tool_not_registered" ||
		strings.Contains(msg, "not found in registry") ||
		strings.Contains(typ, "permission") ||
		strings.Contains(typ, "denied")
}

func (p *geminiParser) result(l geminiLine) []Event {
	p.sum.HasResult = true
	if l.Status == "error" {
		p.sum.IsError = true
		p.sum.Error = "gemini reported an error"
		if msg, ok := errorMessageText(l.Error); ok && msg != "" {
			p.sum.Error = msg
		}
		if lim, ok := LimitText(p.sum.Error, time.Now()); ok {
			// Gemini takes the refused turn back out of its session.
			lim.RolledBack = !p.replied
			p.sum.Limit = lim
		}
	}
	if l.Stats == nil {
		return nil
	}
	// Gemini does not say how many turns it took unless stats does; a count
	// made up from tool calls would be wrong as often as right.
	if l.Stats.Turns != nil {
		p.sum.Turns = *l.Stats.Turns
	}
	t := Tokens{Input: l.Stats.InputTokens, Output: l.Stats.OutputTokens, CacheRead: l.Stats.Cached}
	p.sum.Tokens = t
	return []Event{{Kind: Usage, Tokens: &t}}
}

func (p *geminiParser) Summary() Summary {
	s := cloneSummary(p.sum)
	s.Result = p.text
	return s
}
