package agentstream

import (
	"bytes"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/vibeteam/vibeteam/internal/excerpt"
)

// claudeParser reads claude -p --output-format stream-json --verbose.
type claudeParser struct {
	sum Summary
	// toolNames remembers each tool_use's name, since claude's tool_result
	// only carries the id.
	toolNames map[string]string
	// errTexts keeps what an erroring tool_result said: the result line's
	// permission_denials carry no message, the tool_result does.
	errTexts map[string]string
	// rejected is the last limit claude said refused a call (a
	// rate_limit_event, or the refused call's message): its reset time.
	rejected *claudeRateLimit
	// calls is the usage of each API call (by message id) so far: claude
	// repeats a call's usage on each of its content blocks' lines, and
	// only the result says the run's total, so the total until then is
	// their sum (a budget is checked on it while the run goes on).
	calls     map[string]Tokens
	callOrder []string
}

type claudeLine struct {
	Type    string `json:"type"`
	Subtype string `json:"subtype"`
	// session_writes_lost (2.1.332+): why the transcript was not saved
	// (ENOSPC, EDQUOT) and how much of it was lost.
	ErrorCode  string            `json:"error_code"`
	Lost       json.RawMessage   `json:"lost"`
	SessionID  string            `json:"session_id"`
	Model      string            `json:"model"`
	MCPServers []json.RawMessage `json:"mcp_servers"`
	Message    *struct {
		// A string when claude replays the user's prompt, blocks otherwise.
		Content json.RawMessage `json:"content"`
		ID      string          `json:"id"`
		Usage   *claudeUsage    `json:"usage"`
	} `json:"message"`

	IsError           bool              `json:"is_error"`
	Result            string            `json:"result"`
	NumTurns          int               `json:"num_turns"`
	TotalCostUSD      float64           `json:"total_cost_usd"`
	Usage             *claudeUsage      `json:"usage"`
	PermissionDenials []json.RawMessage `json:"permission_denials"`
	Errors            []json.RawMessage `json:"errors"`

	// A usage or rate limit: rate_limit_event's rate_limit_info; on the
	// refused call's assistant message and on the result, api_error
	// ("usage_limit_reached"), api_error_status (429), api_error_type
	// ("rate_limit_error") and api_error_params.rate_limit_info.
	RateLimitInfo  *claudeRateLimit `json:"rate_limit_info"`
	APIError       string           `json:"api_error"`
	APIErrorStatus int              `json:"api_error_status"`
	APIErrorType   string           `json:"api_error_type"`
	APIErrorParams *struct {
		RateLimitInfo *claudeRateLimit `json:"rate_limit_info"`
	} `json:"api_error_params"`
}

type claudeRateLimit struct {
	Status        string `json:"status"`   // allowed | allowed_warning | rejected
	ResetsAt      int64  `json:"resetsAt"` // unix seconds
	RateLimitType string `json:"rateLimitType"`
}

type claudeBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	Thinking  string          `json:"thinking"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"`
	IsError   bool            `json:"is_error"`
}

type claudeUsage struct {
	InputTokens              int64 `json:"input_tokens"`
	OutputTokens             int64 `json:"output_tokens"`
	CacheReadInputTokens     int64 `json:"cache_read_input_tokens"`
	CacheCreationInputTokens int64 `json:"cache_creation_input_tokens"`
}

type claudeDenial struct {
	ToolName  string          `json:"tool_name"`
	ToolUseID string          `json:"tool_use_id"`
	ToolInput json.RawMessage `json:"tool_input"`
}

func (p *claudeParser) Feed(line []byte) []Event {
	var l claudeLine
	if !unmarshalObjectLine(line, &l) {
		return nil
	}
	switch l.Type {
	case "system":
		if l.Subtype == "session_writes_lost" {
			return p.writesLost(l)
		}
		if l.Subtype != "init" {
			return nil
		}
		p.sum.SessionID = l.SessionID
		return []Event{{Kind: Init, SessionID: l.SessionID, Model: l.Model, MCPServers: decodeMCPServers(l.MCPServers)}}
	case "rate_limit_event":
		if r := l.RateLimitInfo; r != nil {
			if r.Status == "rejected" {
				p.rejected = r
			} else {
				p.rejected = nil // the limit is past: a later error is another
			}
		}
		return nil
	case "assistant":
		p.noteSession(l.SessionID)
		if l.APIErrorParams != nil && l.APIErrorParams.RateLimitInfo != nil {
			p.rejected = l.APIErrorParams.RateLimitInfo
		}
		return p.assistant(l)
	case "user":
		p.noteSession(l.SessionID)
		return p.user(l)
	case "result":
		return p.result(l)
	}
	return nil
}

func (p *claudeParser) noteSession(id string) {
	if p.sum.SessionID == "" {
		p.sum.SessionID = id
	}
}

func (p *claudeParser) blocks(l claudeLine) []claudeBlock {
	if l.Message == nil {
		return nil
	}
	var bs []claudeBlock
	if json.Unmarshal(l.Message.Content, &bs) != nil {
		return nil
	}
	return bs
}

func (p *claudeParser) assistant(l claudeLine) []Event {
	p.noteCall(l)
	var evs []Event
	for _, b := range p.blocks(l) {
		switch b.Type {
		case "text":
			evs = append(evs, Event{Kind: Message, Text: b.Text})
		case "thinking":
			evs = append(evs, Event{Kind: Thinking, Text: b.Thinking})
		case "tool_use", "server_tool_use":
			if p.toolNames == nil {
				p.toolNames = map[string]string{}
			}
			p.toolNames[b.ID] = b.Name
			p.sum.ToolCalls++
			evs = append(evs, Event{Kind: ToolCall, ToolID: b.ID, Tool: b.Name, Input: normToolInput(b.Input)})
		}
	}
	return evs
}

func (p *claudeParser) user(l claudeLine) []Event {
	var evs []Event
	for _, b := range p.blocks(l) {
		if b.Type != "tool_result" {
			continue
		}
		out := claudeResultText(b.Content)
		if b.IsError {
			if p.errTexts == nil {
				p.errTexts = map[string]string{}
			}
			p.errTexts[b.ToolUseID] = out
		}
		evs = append(evs, Event{
			Kind:    ToolResult,
			ToolID:  b.ToolUseID,
			Tool:    p.toolNames[b.ToolUseID],
			Output:  boundToolOutput(out),
			IsError: b.IsError,
		})
	}
	return evs
}

// claudeResultText reads a tool_result's content: a string, or blocks of
// which only the text ones say something readable.
func claudeResultText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var bs []claudeBlock
	if json.Unmarshal(raw, &bs) != nil {
		return ""
	}
	var texts []string
	for _, b := range bs {
		if b.Type == "text" {
			texts = append(texts, b.Text)
		}
	}
	return strings.Join(texts, "\n")
}

// writesLost: claude could not save the session's transcript (a full
// disk or quota), and says so as it exits, however the run went. The work
// may be done, but the session cannot be continued (--resume would find
// it incomplete or missing): a warning, and the summary remembers it.
func (p *claudeParser) writesLost(l claudeLine) []Event {
	why := l.ErrorCode
	if why == "" {
		why = "unknown error"
	}
	msg := "claude could not save its session transcript (" + why + ")"
	if lost := strings.TrimSpace(string(l.Lost)); lost != "" && lost != "null" {
		if len(lost) > 120 {
			lost = strings.ToValidUTF8(lost[:120], "") + "…"
		}
		msg += ", lost: " + strings.Join(strings.Fields(lost), " ")
	}
	msg += ": the session cannot be continued"
	p.sum.SessionLost = msg
	return []Event{{Kind: Warning, Text: msg}}
}

func (p *claudeParser) result(l claudeLine) []Event {
	if l.SessionID != "" {
		p.sum.SessionID = l.SessionID
	}
	p.sum.Result = l.Result
	p.sum.HasResult = true
	p.sum.Turns = l.NumTurns
	p.sum.CostUSD = l.TotalCostUSD
	// claude says is_error false on some error_* subtypes (a run cut by
	// --max-turns); the run did not finish, so it failed all the same.
	if l.IsError || strings.HasPrefix(l.Subtype, "error") {
		p.sum.IsError = true
		p.sum.Error = claudeErrorText(l)
		p.sum.Limit = p.limit(l)
	}
	for _, raw := range l.PermissionDenials {
		var d claudeDenial
		if json.Unmarshal(raw, &d) != nil {
			continue
		}
		p.sum.Denials = append(p.sum.Denials, Denial{
			Tool:    d.ToolName,
			ToolID:  d.ToolUseID,
			Input:   normToolInput(d.ToolInput),
			Message: p.errTexts[d.ToolUseID],
		})
	}
	if l.Usage == nil {
		return nil
	}
	// The result's usage is the whole run's, while each assistant message's
	// is one API call's: setting (not adding) counts each token once.
	t := Tokens{
		Input:      l.Usage.InputTokens,
		Output:     l.Usage.OutputTokens,
		CacheRead:  l.Usage.CacheReadInputTokens,
		CacheWrite: l.Usage.CacheCreationInputTokens,
	}
	p.sum.Tokens = t
	return []Event{{Kind: Usage, Tokens: &t}}
}

// limit is the usage or rate limit a failed run stopped on, nil if the
// failure was another.
func (p *claudeParser) limit(l claudeLine) *Limit {
	lim, ok := LimitText(p.sum.Error, time.Now())
	marked := l.APIError == "usage_limit_reached" || l.APIErrorStatus == 429 || l.APIErrorType == "rate_limit_error"
	if !ok && !marked {
		return nil
	}
	if lim == nil {
		lim = &Limit{Message: p.sum.Error}
	}
	if r := p.rejected; r != nil {
		lim.Kind = r.RateLimitType
		if r.ResetsAt > 0 {
			// claude's own number beats the time read from its words,
			// which it writes to the hour.
			t := time.Unix(r.ResetsAt, 0).UTC()
			lim.ResetAt = &t
		}
	}
	return lim
}

func claudeErrorText(l claudeLine) string {
	if l.Result != "" {
		return l.Result
	}
	var msgs []string
	for _, raw := range l.Errors {
		var s string
		if json.Unmarshal(raw, &s) == nil && s != "" {
			msgs = append(msgs, s)
		}
	}
	if len(msgs) > 0 {
		return strings.Join(msgs, "; ")
	}
	if l.Subtype != "" {
		return l.Subtype
	}
	return "claude reported an error"
}

func (p *claudeParser) Summary() Summary {
	s := cloneSummary(p.sum)
	if !p.sum.HasResult {
		for _, id := range p.callOrder {
			s.Tokens.Add(p.calls[id])
		}
	}
	return s
}

// noteCall keeps the usage of the API call an assistant line is part of;
// a later line of the same call says it again, or more.
func (p *claudeParser) noteCall(l claudeLine) {
	if l.Message == nil || l.Message.Usage == nil {
		return
	}
	id := l.Message.ID
	if id == "" {
		id = "line-" + strconv.Itoa(len(p.callOrder))
	}
	if p.calls == nil {
		p.calls = map[string]Tokens{}
	}
	if _, ok := p.calls[id]; !ok {
		p.callOrder = append(p.callOrder, id)
	}
	u := l.Message.Usage
	p.calls[id] = Tokens{Input: u.InputTokens, Output: u.OutputTokens, CacheRead: u.CacheReadInputTokens, CacheWrite: u.CacheCreationInputTokens}
}

// decodeMCPServers skips a server entry of an odd shape rather than the
// whole init line, which also carries the session id.
func decodeMCPServers(raws []json.RawMessage) []MCPServer {
	var out []MCPServer
	for _, raw := range raws {
		var s MCPServer
		if json.Unmarshal(raw, &s) == nil {
			out = append(out, s)
		}
	}
	return out
}

// The helpers below are shared by the four parsers.

// unmarshalObjectLine decodes a line that is a JSON object. Any other line
// (a CLI's warning, a truncated write) or a field of an unexpected type
// makes it false, so the caller skips the line instead of half reading it.
func unmarshalObjectLine(line []byte, v any) bool {
	line = bytes.TrimSpace(line)
	if len(line) == 0 || line[0] != '{' {
		return false
	}
	return json.Unmarshal(line, v) == nil
}

// boundToolOutput keeps events small: a tool may print megabytes.
func boundToolOutput(s string) string {
	return excerpt.Head(s, OutputLimit)
}

// normToolInput gives a tool's input as raw JSON of its own: compact (so
// events compare and print the same whatever the CLI's spacing) and not
// aliasing the caller's line buffer. OpenAI-style CLIs give arguments as a
// JSON string holding JSON; the object inside is what the tool got.
func normToolInput(raw json.RawMessage) json.RawMessage {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	var s string
	if raw[0] == '"' && json.Unmarshal(raw, &s) == nil {
		if inner := strings.TrimSpace(s); inner != "" && (inner[0] == '{' || inner[0] == '[') && json.Valid([]byte(inner)) {
			raw = json.RawMessage(inner)
		}
	}
	var buf bytes.Buffer
	if json.Compact(&buf, raw) != nil {
		return nil
	}
	return buf.Bytes()
}

// rawJSONText is a value the CLI may give as a string or as any JSON: the
// string itself, or else the compact JSON.
func rawJSONText(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	return string(normToolInput(raw))
}

// errorMessageText reads an error a CLI gives either as a string or as an
// object with a message; ok is false when there is no error (absent, null).
func errorMessageText(raw json.RawMessage) (msg string, ok bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return "", false
	}
	var o struct {
		Message string `json:"message"`
	}
	if raw[0] == '{' && json.Unmarshal(raw, &o) == nil && o.Message != "" {
		return o.Message, true
	}
	return rawJSONText(raw), true
}

// cloneSummary keeps a caller from altering the parser's denials.
func cloneSummary(s Summary) Summary {
	s.Denials = slices.Clone(s.Denials)
	return s
}
