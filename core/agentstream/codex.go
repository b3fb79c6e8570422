package agentstream

import (
	"encoding/json"
	"strings"
	"time"
)

// codexParser reads codex exec --json.
type codexParser struct {
	sum Summary
	// announced holds the items whose item.started made a ToolCall, so their
	// item.completed neither repeats nor recounts it.
	announced map[string]bool
	// reported is the largest usage codex reported; baseline is what the
	// caller says the thread had used before this run.
	reported, baseline Tokens
}

type codexLine struct {
	Type     string      `json:"type"`
	ThreadID string      `json:"thread_id"`
	Item     *codexItem  `json:"item"`
	Usage    *codexUsage `json:"usage"`
	Message  string      `json:"message"`
	Error    *struct {
		Message string `json:"message"`
	} `json:"error"`
	// Codex before the thread/item events wrapped each event in msg.
	Msg *struct {
		Type      string `json:"type"`
		Message   string `json:"message"`
		Text      string `json:"text"`
		SessionID string `json:"session_id"`
		Model     string `json:"model"`
	} `json:"msg"`
}

type codexItem struct {
	ID string `json:"id"`
	// The first releases of the item events named the type item_type.
	Type             string          `json:"type"`
	ItemType         string          `json:"item_type"`
	Status           string          `json:"status"`
	Command          json.RawMessage `json:"command"`
	AggregatedOutput string          `json:"aggregated_output"`
	ExitCode         *int64          `json:"exit_code"`
	Changes          json.RawMessage `json:"changes"`
	Server           string          `json:"server"`
	Tool             string          `json:"tool"`
	Arguments        json.RawMessage `json:"arguments"`
	Result           json.RawMessage `json:"result"`
	Error            json.RawMessage `json:"error"`
	Query            string          `json:"query"`
	Text             string          `json:"text"`
	Message          string          `json:"message"`
}

type codexUsage struct {
	InputTokens       int64 `json:"input_tokens"`
	CachedInputTokens int64 `json:"cached_input_tokens"`
	OutputTokens      int64 `json:"output_tokens"`
}

// SetBaseline says how many tokens the thread had used before this run.
// Codex reports a resumed thread's usage as the thread's running total, so
// the engine passes the total it recorded last time, and Summary().Tokens
// becomes this run's share.
func (p *codexParser) SetBaseline(t Tokens) { p.baseline = t }

func (p *codexParser) Feed(line []byte) []Event {
	var l codexLine
	if !unmarshalObjectLine(line, &l) {
		return nil
	}
	switch l.Type {
	case "thread.started":
		p.sum.SessionID = l.ThreadID
		return []Event{{Kind: Init, SessionID: l.ThreadID}}
	case "item.started":
		if l.Item != nil {
			return p.itemStarted(l.Item)
		}
	case "item.completed":
		if l.Item != nil {
			return p.itemCompleted(l.Item)
		}
	case "turn.completed":
		p.sum.Turns++
		if l.Usage == nil {
			return nil
		}
		t := Tokens{Input: l.Usage.InputTokens, Output: l.Usage.OutputTokens, CacheRead: l.Usage.CachedInputTokens}
		// Within a run a later report that is not smaller is the running
		// total (codex's usage is cumulative over the thread); one that
		// shrank cannot be a newer total, so the largest report is kept.
		if t.Input >= p.reported.Input {
			p.reported = t
		}
		return []Event{{Kind: Usage, Tokens: &t}}
	case "turn.failed":
		p.sum.Turns++
		p.sum.IsError = true
		p.sum.Error = "turn failed"
		if l.Error != nil && l.Error.Message != "" {
			p.sum.Error = l.Error.Message
		}
		if lim, ok := LimitText(p.sum.Error, time.Now()); ok {
			p.sum.Limit = lim
		}
	case "error":
		return []Event{{Kind: Error, Text: l.Message}}
	case "":
		if l.Msg != nil {
			return p.oldMsg(l)
		}
	}
	return nil
}

func (p *codexParser) oldMsg(l codexLine) []Event {
	switch l.Msg.Type {
	case "session_configured":
		p.sum.SessionID = l.Msg.SessionID
		return []Event{{Kind: Init, SessionID: l.Msg.SessionID, Model: l.Msg.Model}}
	case "agent_message":
		p.sum.Result = l.Msg.Message
		p.sum.HasResult = true
		return []Event{{Kind: Message, Text: l.Msg.Message}}
	case "agent_reasoning":
		return []Event{{Kind: Thinking, Text: l.Msg.Text}}
	case "error":
		return []Event{{Kind: Error, Text: l.Msg.Message}}
	}
	return nil
}

func (it *codexItem) kind() string {
	if it.Type != "" {
		return it.Type
	}
	return it.ItemType
}

// call is the ToolCall of a tool-like item; ok is false for other items.
func (it *codexItem) call() (ev Event, ok bool) {
	ev = Event{Kind: ToolCall, ToolID: it.ID, Tool: it.kind()}
	switch it.kind() {
	case "command_execution":
		ev.Input = codexObject("command", it.Command)
	case "file_change":
		ev.Input = codexObject("changes", it.Changes)
	case "mcp_tool_call":
		ev.Tool = "mcp__" + it.Server + "__" + it.Tool
		ev.Input = normToolInput(it.Arguments)
	case "web_search":
		q, _ := json.Marshal(it.Query)
		ev.Input = codexObject("query", q)
	default:
		return Event{}, false
	}
	return ev, true
}

// codexObject is {"key": value}, or nothing when codex gave no value.
func codexObject(key string, value json.RawMessage) json.RawMessage {
	value = normToolInput(value)
	if value == nil {
		return nil
	}
	b, err := json.Marshal(map[string]json.RawMessage{key: value})
	if err != nil {
		return nil
	}
	return b
}

func (p *codexParser) itemStarted(it *codexItem) []Event {
	ev, ok := it.call()
	if !ok || p.announced[it.ID] {
		return nil
	}
	if p.announced == nil {
		p.announced = map[string]bool{}
	}
	p.announced[it.ID] = true
	p.sum.ToolCalls++
	return []Event{ev}
}

func (p *codexParser) itemCompleted(it *codexItem) []Event {
	switch it.kind() {
	case "agent_message", "assistant_message":
		p.sum.Result = it.Text
		p.sum.HasResult = true
		return []Event{{Kind: Message, Text: it.Text}}
	case "reasoning":
		return []Event{{Kind: Thinking, Text: it.Text}}
	case "error":
		return []Event{{Kind: Error, Text: it.Message}}
	}
	call, ok := it.call()
	if !ok {
		return nil
	}
	var evs []Event
	if !p.announced[it.ID] {
		p.sum.ToolCalls++
		evs = append(evs, call)
	}
	// An id is announced once: a later item reusing it is another call.
	delete(p.announced, it.ID)
	res := Event{Kind: ToolResult, ToolID: it.ID, Tool: call.Tool, IsError: it.Status == "failed"}
	switch it.kind() {
	case "command_execution":
		res.Output = it.AggregatedOutput
		res.IsError = res.IsError || it.Status == "declined" || (it.ExitCode != nil && *it.ExitCode != 0)
		if msg, denied := codexDenied(it, res.IsError); denied {
			p.sum.Denials = append(p.sum.Denials, Denial{Tool: call.Tool, ToolID: it.ID, Input: call.Input, Message: msg})
		}
	case "file_change":
		res.Output = codexChangesText(it.Changes)
	case "mcp_tool_call":
		if msg, failed := errorMessageText(it.Error); failed {
			res.IsError = true
			res.Output = msg
		} else {
			res.Output = rawJSONText(it.Result)
		}
	}
	res.Output = boundToolOutput(res.Output)
	return append(evs, res)
}

// codexDenialMarks are what a command says when codex's sandbox stopped it
// (a read-only workspace, a blocked syscall): the agent did not fail at its
// task, it was not allowed to do it.
var codexDenialMarks = []string{"Read-only file system", "Operation not permitted"}

func codexDenied(it *codexItem, failed bool) (msg string, denied bool) {
	out := it.AggregatedOutput
	if it.Status != "declined" {
		if !failed {
			return "", false
		}
		marked := false
		for _, m := range codexDenialMarks {
			if strings.Contains(out, m) {
				marked = true
				break
			}
		}
		if !marked {
			return "", false
		}
	}
	// The line naming the sandbox's refusal explains the denial better than
	// whatever the command printed before it.
	var first string
	for l := range strings.Lines(out) {
		l = strings.TrimSpace(l)
		if l == "" {
			continue
		}
		for _, m := range codexDenialMarks {
			if strings.Contains(l, m) {
				return l, true
			}
		}
		if first == "" {
			first = l
		}
	}
	if first != "" {
		return first, true
	}
	return it.Status, true
}

// codexChangesText says what a file_change did, one "kind path" a line, as
// codex gives no output for it.
func codexChangesText(raw json.RawMessage) string {
	var cs []struct {
		Path string `json:"path"`
		Kind string `json:"kind"`
	}
	if json.Unmarshal(raw, &cs) != nil {
		return ""
	}
	lines := make([]string, 0, len(cs))
	for _, c := range cs {
		lines = append(lines, strings.TrimSpace(c.Kind+" "+c.Path))
	}
	return strings.Join(lines, "\n")
}

func (p *codexParser) Summary() Summary {
	s := cloneSummary(p.sum)
	s.Tokens = p.reported
	// A report below the baseline cannot be the thread's running total (a
	// total does not shrink): it is already this run's own usage.
	if p.reported.Input >= p.baseline.Input {
		s.Tokens = Tokens{
			Input:      max(p.reported.Input-p.baseline.Input, 0),
			Output:     max(p.reported.Output-p.baseline.Output, 0),
			CacheRead:  max(p.reported.CacheRead-p.baseline.CacheRead, 0),
			CacheWrite: max(p.reported.CacheWrite-p.baseline.CacheWrite, 0),
		}
	}
	return s
}
