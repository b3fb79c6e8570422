// Package events names every event vibeteam emits, in one place, with the
// fields each carries. An event is one line of a session's JSONL log
// (.vibeteam/logs/<id>.jsonl, and --events FILE):
//
//	{"time":"2026-11-23T10:00:00.123Z","event":"workflow.step.completed","session":"20261123-ab12","name":"tests","type":"script",...}
//
// time, event and session are on every line; task is there when the event
// is about one task (a stage task, or an agent step's run); the other keys
// are the event's fields: those of the event's Payload type (payload.go,
// one Go type per kind; the constants below are the kinds). Consumers must
// ignore keys they do not know: fields are added, never renamed.
package events

import "github.com/vibeteam/vibeteam/core/vocab"

// Session events.
const (
	SessionStarted  = "session_started"  // workflow, goal, stage, pid
	SessionResumed  = "session_resumed"  // as session_started
	SessionFinished = "session_finished" // status, failedTask, reason, agents (totals: tokens, costUsd, toolCalls, runs)
	SessionState    = "session_state"    // state: RUNNING | AWAITING_INTERACTION | IDLE | ERROR
	Error           = "error"            // error: something vibeteam could not do (save a checkpoint, …)
)

// Stage workflow events.
const (
	StageStarted   = "stage_started"   // stage, index, tasks
	StageCompleted = "stage_completed" // stage, index
)

// Task events: one process (a stage task, or the agent of an agent step).
const (
	TaskStarted    = "task_started"     // adapter, mode, argv, pid, cwd, name
	TaskOutput     = "task_output"      // stream (stdout | stderr; output: both, in order, where no parser reads stdout), text (clean lines), raw
	TaskInput      = "task_input"       // text, source
	TaskStatus     = "task_status"      // status, reason, error, exit_code, signal, state, why
	TaskFinished   = "task_finished"    // status, reason, exit_code, signal, error, evidence
	OrphanStopped  = "orphan_stopped"   // pid: a process left by a vibeteam that died was stopped
	Interaction    = "interaction"      // state, why, excerpt, name, adapter: a task waits for a person
	AutoAction     = "auto_action"      // state, match, keys: the auto-policy answered
	StateSeen      = "state"            // state: a state check matched a (changed) screen
	QueueSent      = "queue_sent"       // text: a pendingInputs item was typed
	KeptAlive      = "kept_alive"       // DONE, process left running (keepAlive)
	TemplateWarned = "template_warning" // step, warning: e.g. {{raw}} in a command
	Warning        = "warning"          // warning: something that did not stop the run (a bead status update that failed, a worktree left behind)
)

// Agent events: what a headless agent with a structured output did, as
// its stream says it (adapters' modes.headless.output), as it happens.
const (
	AgentInit       = "agent.init"        // session_id, model, mcp_servers [{name, status}]
	AgentMessage    = "agent.message"     // text, delta (a piece of a streamed message)
	AgentThinking   = "agent.thinking"    // text
	AgentToolCall   = "agent.tool_call"   // tool, tool_id, input (the tool's JSON input), status (ACP: pending, in_progress; sent again on each change)
	AgentToolResult = "agent.tool_result" // tool, tool_id, output (at most 2 KiB), is_error, duration_ms
	AgentUsage      = "agent.usage"       // input_tokens, output_tokens, cache_read_tokens, cache_write_tokens
	AgentError      = "agent.error"       // error: an error the agent CLI reported
	AgentDenied     = "agent.denied"      // tool, input, message: a tool call the agent was not allowed to make
	AgentQuestion   = "agent.question"    // kind (permission | choice | text), text, options: the agent's final message asks the person
	AgentPlan       = "agent.plan"        // entries [{content, priority, status}]: the agent's plan, whole (ACP)
)

// BudgetSpent: a budget was spent (what: "cost $1.02 of $1.00 (the
// grimoire's budget)"; tokens, cost_usd: what the agents under the task's
// meter spent); its agent was stopped (stopped: true) or not started.
const BudgetSpent = "budget.spent"

// Grimoire events (see the field structs below).
const (
	WorkflowStarted       = "workflow.started"
	WorkflowStepStarted   = "workflow.step.started"
	WorkflowStepCompleted = "workflow.step.completed"
	LoopIteration         = "loop.iteration"
	WorkflowBlocked       = "workflow.blocked"
	WorkflowCompleted     = "workflow.completed"
	MergePending          = "workflow.merge_pending" // step, address, bead, branch, base, stat, commits: waiting for a person's review
	Merged                = "workflow.merged"        // step, address, commit, branch, base
)

// OutputLimit bounds the output carried by a workflow.step.completed event;
// the whole text is in the step's log file (log_path).
const OutputLimit = 4096

// Started is workflow.started.
type Started struct {
	Bead     string `json:"bead"` // the bead's id; empty without one
	Grimoire string `json:"grimoire"`
	ID       string `json:"id"` // the session id
	Resumed  bool   `json:"resumed,omitempty"`
	Source   string `json:"source"` // the file it was read from, or builtin:NAME
}

// StepStarted is workflow.step.started.
type StepStarted struct {
	Address   string            `json:"address"`             // e.g. "2.3/0": step 0 of iteration 3 of step 2
	Inputs    map[string]string `json:"inputs,omitempty"`    // rendered: an agent's input, a script's command
	Iteration int               `json:"iteration,omitempty"` // of the innermost loop, from 1
	Name      string            `json:"name"`
	Type      vocab.StepType    `json:"type"`
}

// StepCompleted is workflow.step.completed.
type StepCompleted struct {
	Address    string           `json:"address"`
	DurationMS int64            `json:"duration_ms"`
	ExitCode   int              `json:"exit_code"`
	Iteration  int              `json:"iteration,omitempty"`
	LogPath    string           `json:"log_path,omitempty"`
	Name       string           `json:"name"`
	Output     string           `json:"output,omitempty"` // at most OutputLimit bytes, the end of it
	Reason     string           `json:"reason,omitempty"`
	Status     vocab.StepStatus `json:"status"`
	Success    bool             `json:"success"`
	Summary    string           `json:"summary,omitempty"`
	Truncated  bool             `json:"truncated,omitempty"`
	Type       vocab.StepType   `json:"type"`
}

// Iteration is loop.iteration: a loop starts its n-th iteration.
type Iteration struct {
	Address   string `json:"address"`
	Iteration int    `json:"iteration"`
	Loop      string `json:"loop"`
	Max       int    `json:"max"`
}

// Blocked is workflow.blocked.
type Blocked struct {
	Address string       `json:"address"` // the address of the step it is blocked at
	Context string       `json:"context"` // the failing step's output tail
	Reason  vocab.Reason `json:"reason"`
	Step    string       `json:"step"` // the step it is blocked at
}

// Completed is workflow.completed.
type Completed struct {
	DurationMS  int64    `json:"duration_ms"`
	Failed      int      `json:"failed"`       // step runs that failed (and the workflow went on by design)
	FailedSteps []string `json:"failed_steps"` // their names, with addresses
	Skipped     int      `json:"skipped"`      // steps whose when was false
	Steps       int      `json:"steps"`        // step runs that ran (done or failed)
}
