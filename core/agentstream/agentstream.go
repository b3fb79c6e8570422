// Package agentstream reads the structured output of agent CLIs in their
// headless modes, line by line as it streams, into events (messages, tool
// calls and results, usage) and a summary of the run (the agent's session
// id, its final result, whether it failed, tokens, cost, permission
// denials). One parser per output format; the formats are named in adapter
// files (modes.headless.output, adapters.Output).
package agentstream

import (
	"encoding/json"
	"slices"

	"github.com/vibeteam/vibeteam/adapters"
)

// Kind is the kind of an Event.
type Kind string

const (
	Init       Kind = "init"        // SessionID, Model, MCPServers
	Message    Kind = "message"     // Text: an assistant message (whole, or a delta when Delta)
	Thinking   Kind = "thinking"    // Text
	ToolCall   Kind = "tool_call"   // ToolID, Tool, Input
	ToolResult Kind = "tool_result" // ToolID, Tool (when known), Output (bounded), IsError, DurationMS
	Usage      Kind = "usage"       // Tokens: this turn's or the run's, as the CLI reports it
	Error      Kind = "error"       // Text: an error the CLI reported
	Plan       Kind = "plan"        // Plan: the agent's plan, whole (ACP)
	Warning    Kind = "warning"     // Text: something the CLI warned about that does not fail the run
)

// OutputLimit bounds a tool result's Output in an Event.
const OutputLimit = 2048

// Event is one thing the agent did, as the stream says it.
type Event struct {
	Kind       Kind            `json:"kind"`
	Text       string          `json:"text,omitempty"`
	Delta      bool            `json:"delta,omitempty"`
	ToolID     string          `json:"tool_id,omitempty"`
	Tool       string          `json:"tool,omitempty"`
	Input      json.RawMessage `json:"input,omitempty"`
	Output     string          `json:"output,omitempty"`
	IsError    bool            `json:"is_error,omitempty"`
	DurationMS int64           `json:"duration_ms,omitempty"`
	SessionID  string          `json:"session_id,omitempty"`
	Model      string          `json:"model,omitempty"`
	MCPServers []MCPServer     `json:"mcp_servers,omitempty"`
	Tokens     *Tokens         `json:"tokens,omitempty"`
	// Status is a tool call's, where the agent reports it (ACP: pending,
	// in_progress; a tool call event is sent again on each change).
	Status string      `json:"status,omitempty"`
	Plan   []PlanEntry `json:"plan,omitempty"`
}

// PlanEntry is one entry of an agent's plan.
type PlanEntry struct {
	Content  string `json:"content"`
	Priority string `json:"priority,omitempty"` // high | medium | low
	Status   string `json:"status,omitempty"`   // pending | in_progress | completed
}

// Mark shows the entry's progress at a glance: [x] completed, [~] in
// progress, [ ] pending.
func (e PlanEntry) Mark() string {
	switch e.Status {
	case "completed":
		return "[x]"
	case "in_progress":
		return "[~]"
	}
	return "[ ]"
}

// MCPServer is an MCP server the agent reports, with its status
// ("connected", "failed", ...).
type MCPServer struct {
	Name   string `json:"name"`
	Status string `json:"status"`
}

// Tokens are token counts.
type Tokens struct {
	Input      int64 `json:"input"`
	Output     int64 `json:"output"`
	CacheRead  int64 `json:"cache_read,omitempty"`
	CacheWrite int64 `json:"cache_write,omitempty"`
}

// Add adds o to t.
func (t *Tokens) Add(o Tokens) {
	t.Input += o.Input
	t.Output += o.Output
	t.CacheRead += o.CacheRead
	t.CacheWrite += o.CacheWrite
}

// Denial is a tool call the agent was not allowed to make: claude's
// permission_denials, a codex command that failed in its sandbox, a gemini
// tool not registered in its approval mode.
type Denial struct {
	Tool    string          `json:"tool"`
	ToolID  string          `json:"tool_id,omitempty"`
	Input   json.RawMessage `json:"input,omitempty"`
	Message string          `json:"message,omitempty"` // what the CLI said, when it said something
}

// Summary is what a run's stream says about the run as a whole.
type Summary struct {
	SessionID string   `json:"session_id,omitempty"` // the agent's own session or thread id, to resume it
	Result    string   `json:"result,omitempty"`     // the final message
	HasResult bool     `json:"-"`                    // a result (or final message) was seen
	IsError   bool     `json:"is_error,omitempty"`   // the CLI says the run failed
	Error     string   `json:"error,omitempty"`      // its message (an API error, turn.failed, ...)
	Turns     int      `json:"turns,omitempty"`
	Tokens    Tokens   `json:"tokens"`
	CostUSD   float64  `json:"cost_usd,omitempty"`
	ToolCalls int      `json:"tool_calls,omitempty"`
	Denials   []Denial `json:"denials,omitempty"`
	// Limit is set when the run stopped on a usage or rate limit (IsError
	// is then set too): the run is not a failure of the task, it waits.
	Limit *Limit `json:"limit,omitempty"`
	// SessionLost says why the agent's session could not be saved (claude's
	// session_writes_lost): SessionID then names a session that cannot be
	// continued.
	SessionLost string `json:"session_lost,omitempty"`
}

// DeniedTools are the names of the tools the run was denied, each once.
func (s Summary) DeniedTools() []string {
	var tools []string
	for _, d := range s.Denials {
		if d.Tool != "" && !slices.Contains(tools, d.Tool) {
			tools = append(tools, d.Tool)
		}
	}
	return tools
}

// Parser reads one run's stream. Feed takes whole lines, in order, without
// their newline; lines that are not the format's JSON are ignored (CLIs
// print warnings among them). Not safe for concurrent use.
type Parser interface {
	Feed(line []byte) []Event
	Summary() Summary
}

// New is the parser of format f; nil for text (and formats it does not
// know, which an adapter file cannot name).
func New(f adapters.Output) Parser {
	switch f {
	case adapters.OutputClaudeStreamJSON:
		return &claudeParser{}
	case adapters.OutputCodexJSON:
		return &codexParser{}
	case adapters.OutputGeminiStreamJSON:
		return &geminiParser{}
	case adapters.OutputOpencodeJSON:
		return &opencodeParser{}
	}
	return nil
}
