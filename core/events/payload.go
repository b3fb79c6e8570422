package events

import (
	"encoding/json"

	"github.com/vibeteam/vibeteam/core/agentstream"
	"github.com/vibeteam/vibeteam/core/vocab"
)

// Payload is what one event says: one Go type per event kind. The type's
// JSON fields are the event's keys in the flat log line; they are declared
// in the order of their keys, so a line's keys come out sorted without a
// second pass (a test holds every type to it).
type Payload interface {
	Kind() string
}

// SessionStart is session_started.
type SessionStart struct {
	Goal     string `json:"goal"`
	Pid      int    `json:"pid"`
	Stage    int    `json:"stage"` // the stage it starts at
	Workflow string `json:"workflow"`
}

// SessionResume is session_resumed; its fields are session_started's.
type SessionResume SessionStart

// AgentTotals are the session's agents' totals (state.AgentTotals).
type AgentTotals struct {
	Tokens    agentstream.Tokens `json:"tokens"`
	CostUSD   float64            `json:"costUsd,omitempty"`
	ToolCalls int                `json:"toolCalls,omitempty"`
	Runs      int                `json:"runs"` // task runs with a structured report
}

// SessionEnd is session_finished.
type SessionEnd struct {
	Agents     *AgentTotals        `json:"agents,omitempty"` // when an agent reported
	FailedTask string              `json:"failedTask,omitempty"`
	Reason     string              `json:"reason,omitempty"`
	Status     vocab.SessionStatus `json:"status"`
}

// SessionStateChange is session_state: the state derived from the tasks'
// statuses changed.
type SessionStateChange struct {
	State vocab.SessionState `json:"state"`
}

// RunError is error: something vibeteam could not do (save a checkpoint, …).
type RunError struct {
	Error string `json:"error"`
}

// StageStart is stage_started.
type StageStart struct {
	Index int    `json:"index"`
	Stage string `json:"stage"`
	Tasks int    `json:"tasks"`
}

// StageEnd is stage_completed.
type StageEnd struct {
	Index int    `json:"index"`
	Stage string `json:"stage"`
}

// TaskStart is task_started.
type TaskStart struct {
	Adapter string   `json:"adapter"`
	Argv    []string `json:"argv"`
	Cwd     string   `json:"cwd"`
	Mode    string   `json:"mode"`
	Name    string   `json:"name"`
	Pid     int      `json:"pid"`
}

// TaskOut is task_output: clean lines of a task's output. It is not
// written to the session's log (the task's log file holds the output).
type TaskOut struct {
	Raw    string `json:"raw,omitempty"` // as the terminal got it, escapes and all
	Stream string `json:"stream"`
	Text   string `json:"text"`
}

// TaskIn is task_input: text typed or sent to a task.
type TaskIn struct {
	Source string `json:"source"`
	Text   string `json:"text"`
}

// TaskStatusChange is task_status.
type TaskStatusChange struct {
	Error    string           `json:"error,omitempty"`
	Evidence string           `json:"evidence,omitempty"` // what a DONE by the idle rule rested on
	ExitCode *int             `json:"exit_code,omitempty"`
	Reason   vocab.Reason     `json:"reason,omitempty"`
	Signal   string           `json:"signal,omitempty"`
	State    string           `json:"state,omitempty"` // WAITING_FOR_USER: the screen's state
	Status   vocab.TaskStatus `json:"status"`
	Why      string           `json:"why,omitempty"` // WAITING_FOR_USER: why a person is needed
}

// TaskEnd is task_finished.
type TaskEnd struct {
	Error    string           `json:"error,omitempty"`
	Evidence string           `json:"evidence,omitempty"`
	ExitCode *int             `json:"exit_code,omitempty"`
	Reason   vocab.Reason     `json:"reason,omitempty"`
	Signal   string           `json:"signal,omitempty"`
	Status   vocab.TaskStatus `json:"status"`
}

// UnmarshalJSON also reads the exit code under "exitCode", as logs of
// older versions spelt it.
func (e *TaskEnd) UnmarshalJSON(data []byte) error {
	type plain TaskEnd
	var v struct {
		plain
		Old *int `json:"exitCode"`
	}
	if err := json.Unmarshal(data, &v); err != nil {
		return err
	}
	*e = TaskEnd(v.plain)
	if e.ExitCode == nil {
		e.ExitCode = v.Old
	}
	return nil
}

// OrphanStop is orphan_stopped: a process left by a vibeteam that died was
// stopped.
type OrphanStop struct {
	Pid int `json:"pid"`
}

// InteractionNeeded is interaction: a task waits for a person.
type InteractionNeeded struct {
	Adapter string `json:"adapter"`
	Excerpt string `json:"excerpt"` // the screen's last lines
	Name    string `json:"name"`
	State   string `json:"state"`
	Why     string `json:"why,omitempty"`
}

// AutoAct is auto_action: the auto-policy answered a screen.
type AutoAct struct {
	Action string `json:"action"`
	Choose string `json:"choose,omitempty"` // the option it chose
	Keys   string `json:"keys"`
	Match  string `json:"match"`
	State  string `json:"state"`
}

// StateMatch is state: a state check matched a (changed) screen.
type StateMatch struct {
	Match string `json:"match"`
	Seq   uint64 `json:"seq"`
	State string `json:"state"`
}

// QueueSend is queue_sent: a pendingInputs item was typed.
type QueueSend struct {
	Remaining int    `json:"remaining"`
	Text      string `json:"text"`
}

// KeepAlive is kept_alive: DONE, its process left running (keepAlive).
type KeepAlive struct {
	Pid int `json:"pid"`
}

// TemplateWarning is template_warning, e.g. {{raw}} in a command.
type TemplateWarning struct {
	Step    string `json:"step"`
	Warning string `json:"warning"`
}

// Warn is warning: something that did not stop the run (a bead status
// update that failed, a worktree left behind, an untested CLI version).
type Warn struct {
	Adapter string `json:"adapter,omitempty"` // an untested CLI: its adapter,
	Tested  string `json:"tested,omitempty"`  // the version tested,
	Version string `json:"version,omitempty"` // and the one found
	Warning string `json:"warning"`
}

// AgentStart is agent.init.
type AgentStart struct {
	MCPServers []agentstream.MCPServer `json:"mcp_servers,omitempty"`
	Model      string                  `json:"model,omitempty"`
	SessionID  string                  `json:"session_id"`
}

// AgentSaid is agent.message.
type AgentSaid struct {
	Delta bool   `json:"delta"` // a piece of a streamed message
	Text  string `json:"text"`
}

// AgentThought is agent.thinking.
type AgentThought struct {
	Text string `json:"text"`
}

// ToolCall is agent.tool_call.
type ToolCall struct {
	Input  json.RawMessage `json:"input"`            // the tool's JSON input; null without one
	Status string          `json:"status,omitempty"` // where the agent reports it (ACP)
	Tool   string          `json:"tool"`
	ToolID string          `json:"tool_id"`
}

// ToolResult is agent.tool_result.
type ToolResult struct {
	DurationMS int64  `json:"duration_ms"`
	IsError    bool   `json:"is_error"`
	Output     string `json:"output"` // at most 2 KiB
	Tool       string `json:"tool"`
	ToolID     string `json:"tool_id"`
}

// Plan is agent.plan: the agent's plan, whole, each time it changes.
type Plan struct {
	Entries []agentstream.PlanEntry `json:"entries"`
}

// Usage is agent.usage.
type Usage struct {
	CacheReadTokens  int64 `json:"cache_read_tokens"`
	CacheWriteTokens int64 `json:"cache_write_tokens"`
	InputTokens      int64 `json:"input_tokens"`
	OutputTokens     int64 `json:"output_tokens"`
}

// AgentFailure is agent.error: an error the agent CLI reported.
type AgentFailure struct {
	Error string `json:"error"`
}

// Denial is agent.denied: a tool call the agent was not allowed to make.
type Denial struct {
	Input   json.RawMessage `json:"input"`
	Message string          `json:"message"`
	Tool    string          `json:"tool"`
	ToolID  string          `json:"tool_id"`
}

// Question is agent.question: the agent's final message asks the person.
type Question struct {
	QuestionKind string   `json:"kind"` // permission | choice | text
	Options      []string `json:"options,omitempty"`
	Text         string   `json:"text"`
}

// Budget is budget.spent: a budget was spent; its agent was stopped
// (Stopped) or not started.
type Budget struct {
	CostUSD float64 `json:"cost_usd"` // what the agents under the task's meter spent
	Stopped bool    `json:"stopped"`
	Tokens  int64   `json:"tokens"`
	What    string  `json:"what"` // e.g. "cost $1.02 of $1.00 (the grimoire's budget)"
}

// MergeWait is workflow.merge_pending: a merge waits for a person's review.
type MergeWait struct {
	Address string `json:"address"`
	Base    string `json:"base"`
	Bead    string `json:"bead"`
	Branch  string `json:"branch"`
	Commits string `json:"commits"`
	Stat    string `json:"stat"`
	Step    string `json:"step"`
}

// MergeDone is workflow.merged.
type MergeDone struct {
	Address string `json:"address"`
	Base    string `json:"base"`
	Branch  string `json:"branch"`
	Commit  string `json:"commit"`
	// QueuedMS is how long the merge waited for the repository's merge
	// queue (none when it was free).
	QueuedMS int64  `json:"queued_ms,omitempty"`
	Step     string `json:"step"`
}

// MergeQueue is workflow.merge_queued: another merge into the repository
// holds the queue; this one waits.
type MergeQueue struct {
	Address string `json:"address"`
	Base    string `json:"base"`
	Step    string `json:"step"`
}

// Limited is agent.limited: a headless agent's CLI reported a usage or
// rate limit.
type Limited struct {
	Adapter string `json:"adapter"`
	Message string `json:"message"`
	Reason  string `json:"reason,omitempty"`   // why it does not wait, when it does not
	ResetAt string `json:"reset_at,omitempty"` // RFC 3339; absent when the CLI gave none
	Until   string `json:"until,omitempty"`    // when the wait ends
	Waiting bool   `json:"waiting"`            // the run waits (--wait-limits)
}

// LimitResume is agent.limit_resumed: the wait is over; the agent's own
// session continues.
type LimitResume struct {
	Adapter string `json:"adapter"`
}

// Other is an event of a kind this version does not know (a newer
// vibeteam's log), or whose fields do not fit its type: its fields as they
// were read.
type Other struct {
	Name   string
	Fields map[string]any
}

func (SessionStart) Kind() string       { return SessionStarted }
func (SessionResume) Kind() string      { return SessionResumed }
func (SessionEnd) Kind() string         { return SessionFinished }
func (SessionStateChange) Kind() string { return SessionState }
func (RunError) Kind() string           { return Error }
func (StageStart) Kind() string         { return StageStarted }
func (StageEnd) Kind() string           { return StageCompleted }
func (TaskStart) Kind() string          { return TaskStarted }
func (TaskOut) Kind() string            { return TaskOutput }
func (TaskIn) Kind() string             { return TaskInput }
func (TaskStatusChange) Kind() string   { return TaskStatus }
func (TaskEnd) Kind() string            { return TaskFinished }
func (OrphanStop) Kind() string         { return OrphanStopped }
func (InteractionNeeded) Kind() string  { return Interaction }
func (AutoAct) Kind() string            { return AutoAction }
func (StateMatch) Kind() string         { return StateSeen }
func (QueueSend) Kind() string          { return QueueSent }
func (KeepAlive) Kind() string          { return KeptAlive }
func (TemplateWarning) Kind() string    { return TemplateWarned }
func (Warn) Kind() string               { return Warning }
func (AgentStart) Kind() string         { return AgentInit }
func (AgentSaid) Kind() string          { return AgentMessage }
func (AgentThought) Kind() string       { return AgentThinking }
func (ToolCall) Kind() string           { return AgentToolCall }
func (ToolResult) Kind() string         { return AgentToolResult }
func (Usage) Kind() string              { return AgentUsage }
func (AgentFailure) Kind() string       { return AgentError }
func (Denial) Kind() string             { return AgentDenied }
func (Question) Kind() string           { return AgentQuestion }
func (Plan) Kind() string               { return AgentPlan }
func (Budget) Kind() string             { return BudgetSpent }
func (Started) Kind() string            { return WorkflowStarted }
func (StepStarted) Kind() string        { return WorkflowStepStarted }
func (StepCompleted) Kind() string      { return WorkflowStepCompleted }
func (Iteration) Kind() string          { return LoopIteration }
func (Blocked) Kind() string            { return WorkflowBlocked }
func (Completed) Kind() string          { return WorkflowCompleted }
func (MergeWait) Kind() string          { return MergePending }
func (MergeDone) Kind() string          { return Merged }
func (MergeQueue) Kind() string         { return MergeQueued }
func (GateStart) Kind() string          { return GateStarted }
func (GateEnd) Kind() string            { return GateFinished }
func (MergeBatch) Kind() string         { return MergeBatched }
func (MergeResolve) Kind() string       { return MergeResolving }
func (Limited) Kind() string            { return AgentLimited }
func (LimitResume) Kind() string        { return AgentLimitResumed }
func (o Other) Kind() string            { return o.Name }

// MarshalJSON writes the fields as read, keys sorted.
func (o Other) MarshalJSON() ([]byte, error) {
	if o.Fields == nil {
		return []byte("{}"), nil
	}
	return json.Marshal(o.Fields)
}

func decodeAs[T Payload](data []byte) (Payload, error) {
	var v T
	err := json.Unmarshal(data, &v)
	return v, err
}

var decoders = map[string]func([]byte) (Payload, error){
	SessionStarted:        decodeAs[SessionStart],
	SessionResumed:        decodeAs[SessionResume],
	SessionFinished:       decodeAs[SessionEnd],
	SessionState:          decodeAs[SessionStateChange],
	Error:                 decodeAs[RunError],
	StageStarted:          decodeAs[StageStart],
	StageCompleted:        decodeAs[StageEnd],
	TaskStarted:           decodeAs[TaskStart],
	TaskOutput:            decodeAs[TaskOut],
	TaskInput:             decodeAs[TaskIn],
	TaskStatus:            decodeAs[TaskStatusChange],
	TaskFinished:          decodeAs[TaskEnd],
	OrphanStopped:         decodeAs[OrphanStop],
	Interaction:           decodeAs[InteractionNeeded],
	AutoAction:            decodeAs[AutoAct],
	StateSeen:             decodeAs[StateMatch],
	QueueSent:             decodeAs[QueueSend],
	KeptAlive:             decodeAs[KeepAlive],
	TemplateWarned:        decodeAs[TemplateWarning],
	Warning:               decodeAs[Warn],
	AgentInit:             decodeAs[AgentStart],
	AgentMessage:          decodeAs[AgentSaid],
	AgentThinking:         decodeAs[AgentThought],
	AgentToolCall:         decodeAs[ToolCall],
	AgentToolResult:       decodeAs[ToolResult],
	AgentUsage:            decodeAs[Usage],
	AgentError:            decodeAs[AgentFailure],
	AgentDenied:           decodeAs[Denial],
	AgentQuestion:         decodeAs[Question],
	AgentPlan:             decodeAs[Plan],
	BudgetSpent:           decodeAs[Budget],
	WorkflowStarted:       decodeAs[Started],
	WorkflowStepStarted:   decodeAs[StepStarted],
	WorkflowStepCompleted: decodeAs[StepCompleted],
	LoopIteration:         decodeAs[Iteration],
	WorkflowBlocked:       decodeAs[Blocked],
	WorkflowCompleted:     decodeAs[Completed],
	MergePending:          decodeAs[MergeWait],
	Merged:                decodeAs[MergeDone],
	MergeQueued:           decodeAs[MergeQueue],
	GateStarted:           decodeAs[GateStart],
	GateFinished:          decodeAs[GateEnd],
	MergeBatched:          decodeAs[MergeBatch],
	MergeResolving:        decodeAs[MergeResolve],
	AgentLimited:          decodeAs[Limited],
	AgentLimitResumed:     decodeAs[LimitResume],
}

// Kinds lists every kind this version knows.
func Kinds() []string {
	out := make([]string, 0, len(decoders))
	for k := range decoders {
		out = append(out, k)
	}
	return out
}

// Decode reads an event's fields (a JSON object; keys it does not know
// are ignored) as the payload of kind. A kind it does not know, or fields
// that do not fit the kind's type, come back as Other: a log written by
// another version still reads.
func Decode(kind string, fields []byte) Payload {
	if dec, ok := decoders[kind]; ok {
		if p, err := dec(fields); err == nil {
			return p
		}
	}
	o := Other{Name: kind}
	_ = json.Unmarshal(fields, &o.Fields)
	return o
}
