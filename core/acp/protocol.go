package acp

import (
	"encoding/json"

	"github.com/vibeteam/vibeteam/core/agentstream"
)

// ProtocolVersion is the ACP version this client speaks.
const ProtocolVersion = 1

// Methods of the protocol.
const (
	methodInitialize        = "initialize"
	methodSessionNew        = "session/new"
	methodSessionLoad       = "session/load"
	methodSessionSetMode    = "session/set_mode"
	methodSessionPrompt     = "session/prompt"
	methodSessionCancel     = "session/cancel"
	methodSessionUpdate     = "session/update"
	methodRequestPermission = "session/request_permission"
)

// Stop reasons of session/prompt.
const (
	StopEndTurn         = "end_turn"
	StopMaxTokens       = "max_tokens"
	StopMaxTurnRequests = "max_turn_requests"
	StopRefusal         = "refusal"
	StopCancelled       = "cancelled"
)

// Permission option kinds.
const (
	AllowOnce    = "allow_once"
	AllowAlways  = "allow_always"
	RejectOnce   = "reject_once"
	RejectAlways = "reject_always"
)

type initializeParams struct {
	ProtocolVersion    int                `json:"protocolVersion"`
	ClientCapabilities clientCapabilities `json:"clientCapabilities"`
	ClientInfo         implementation     `json:"clientInfo"`
}

// clientCapabilities: vibeteam reads and writes no files and runs no
// terminals for the agent; the agent uses its own tools.
type clientCapabilities struct {
	FS       fsCapabilities `json:"fs"`
	Terminal bool           `json:"terminal"`
}

type fsCapabilities struct {
	ReadTextFile  bool `json:"readTextFile"`
	WriteTextFile bool `json:"writeTextFile"`
}

type implementation struct {
	Name    string `json:"name"`
	Version string `json:"version"` // required by the schema
	Title   string `json:"title,omitempty"`
}

// AgentInfo is what the agent said of itself in its initialize answer.
type AgentInfo struct {
	ProtocolVersion   int               `json:"protocolVersion"`
	AgentCapabilities AgentCapabilities `json:"agentCapabilities"`
	AuthMethods       []AuthMethod      `json:"authMethods,omitempty"`
	AgentInfo         *implementation   `json:"agentInfo,omitempty"`
}

// AgentCapabilities are the agent's advertised capabilities.
type AgentCapabilities struct {
	LoadSession        bool               `json:"loadSession"`
	PromptCapabilities PromptCapabilities `json:"promptCapabilities"`
	MCPCapabilities    MCPCapabilities    `json:"mcpCapabilities"`
}

// PromptCapabilities say what a prompt may hold besides text.
type PromptCapabilities struct {
	Image           bool `json:"image"`
	Audio           bool `json:"audio"`
	EmbeddedContext bool `json:"embeddedContext"`
}

// MCPCapabilities say which MCP transports the agent connects to besides
// stdio, which every agent takes.
type MCPCapabilities struct {
	HTTP bool `json:"http"`
	SSE  bool `json:"sse"`
}

// AuthMethod is a way the agent can authenticate.
type AuthMethod struct {
	ID   string `json:"id"`
	Name string `json:"name"`
}

// Name is the agent's name and version as it gave them, or "".
func (a AgentInfo) Name() string {
	if a.AgentInfo == nil {
		return ""
	}
	if a.AgentInfo.Version != "" {
		return a.AgentInfo.Name + " " + a.AgentInfo.Version
	}
	return a.AgentInfo.Name
}

type nameValue struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

type newSessionParams struct {
	Cwd        string `json:"cwd"`
	MCPServers []any  `json:"mcpServers"`
}

type loadSessionParams struct {
	SessionID  string `json:"sessionId"`
	Cwd        string `json:"cwd"`
	MCPServers []any  `json:"mcpServers"`
}

// Session is a session the agent made or loaded.
type Session struct {
	ID    string `json:"sessionId"`
	Modes *Modes `json:"modes,omitempty"`
}

// Modes are a session's modes, when the agent has any.
type Modes struct {
	CurrentModeID  string `json:"currentModeId"`
	AvailableModes []Mode `json:"availableModes"`
}

// Mode is one session mode.
type Mode struct {
	ID          string `json:"id"`
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
}

// Has reports whether the session offers mode id.
func (m *Modes) Has(id string) bool {
	if m == nil {
		return false
	}
	for _, x := range m.AvailableModes {
		if x.ID == id {
			return true
		}
	}
	return false
}

type setModeParams struct {
	SessionID string `json:"sessionId"`
	ModeID    string `json:"modeId"`
}

type promptParams struct {
	SessionID string         `json:"sessionId"`
	Prompt    []contentBlock `json:"prompt"`
}

type cancelParams struct {
	SessionID string `json:"sessionId"`
}

type contentBlock struct {
	Type string `json:"type"`
	Text string `json:"text,omitempty"`
}

// PromptResult is session/prompt's answer.
type PromptResult struct {
	StopReason string          `json:"stopReason"`
	Usage      *promptUsage    `json:"usage,omitempty"`
	Meta       json.RawMessage `json:"_meta,omitempty"`
}

type promptUsage struct {
	InputTokens       int64 `json:"inputTokens"`
	OutputTokens      int64 `json:"outputTokens"`
	CachedReadTokens  int64 `json:"cachedReadTokens"`
	CachedWriteTokens int64 `json:"cachedWriteTokens"`
	ThoughtTokens     int64 `json:"thoughtTokens"`
}

type sessionNotification struct {
	SessionID string `json:"sessionId"`
	Update    update `json:"update"`
}

// update is a session/update's update: the fields of every kind this
// client reads, by its sessionUpdate discriminator.
type update struct {
	Kind    string          `json:"sessionUpdate"`
	Content json.RawMessage `json:"content"` // a content block (chunks), or tool call content (a list)
	Meta    json.RawMessage `json:"_meta"`
	toolFields
	Entries []agentstream.PlanEntry `json:"entries"` // plan
	Cost    *struct {
		Amount   float64 `json:"amount"`
		Currency string  `json:"currency"`
	} `json:"cost"` // usage_update
	CurrentModeID string `json:"currentModeId"` // current_mode_update
}

// toolFields are a tool call's, in a tool_call, a tool_call_update, and a
// permission request's toolCall.
type toolFields struct {
	ToolCallID string          `json:"toolCallId"`
	Title      string          `json:"title"`
	ToolKind   string          `json:"kind"`
	Status     string          `json:"status"`
	RawInput   json.RawMessage `json:"rawInput"`
	RawOutput  json.RawMessage `json:"rawOutput"`
}

type permissionParams struct {
	SessionID string `json:"sessionId"`
	ToolCall  struct {
		toolFields
		Content json.RawMessage `json:"content"`
		Meta    json.RawMessage `json:"_meta"`
	} `json:"toolCall"`
	Options []PermissionOption `json:"options"`
}

// PermissionOption is one answer a permission request offers.
type PermissionOption struct {
	ID   string `json:"optionId"`
	Name string `json:"name"`
	Kind string `json:"kind"`
}

type permissionResult struct {
	Outcome permissionOutcome `json:"outcome"`
}

type permissionOutcome struct {
	Outcome  string `json:"outcome"` // selected | cancelled
	OptionID string `json:"optionId,omitempty"`
}
