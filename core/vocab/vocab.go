// Package vocab holds the words vibeteam's state, events, engine and UI
// share: the statuses of a session, a task and a step, the step types, the
// reasons a task ends or a grimoire blocks, and the session's overall
// state. Each is a type of its own, so a switch or a comparison names a
// constant, never a string typed out again.
//
// The values are the words the session file and the event log have always
// carried. Two cases live side by side because the files of older versions
// spell them so and must read back: a task's status is UPPERCASE (the first
// stage workflows' TaskStatus), everything added since is lowercase
// snake_case. Changing either would break sessions and logs on disk.
//
// UnmarshalText takes any value: a session or a log written by a newer
// vibeteam may carry a word this one does not know; it reads back as it
// was and is shown as it is, never dropped (Known tells them apart).
package vocab

// SessionStatus is a session's status (Session.status).
type SessionStatus string

// Session statuses.
const (
	SessionRunning      SessionStatus = "running"
	SessionWaiting      SessionStatus = "waiting"
	SessionCompleted    SessionStatus = "completed"
	SessionFailed       SessionStatus = "failed"
	SessionCancelled    SessionStatus = "cancelled"
	SessionPendingMerge SessionStatus = "pending_merge"
	SessionBlocked      SessionStatus = "blocked"
	// SessionLimited: an agent stopped on a usage limit; the session
	// continues it on resume.
	SessionLimited SessionStatus = "limited"
)

// SessionStatuses are the session statuses this version knows.
var SessionStatuses = []SessionStatus{SessionRunning, SessionWaiting, SessionCompleted, SessionFailed,
	SessionCancelled, SessionPendingMerge, SessionBlocked, SessionLimited}

// TaskStatus is one task's status.
type TaskStatus string

// Task statuses (UPPERCASE: see the package comment).
const (
	TaskPending        TaskStatus = "PENDING"
	TaskRunning        TaskStatus = "RUNNING"
	TaskWaitingForUser TaskStatus = "WAITING_FOR_USER"
	TaskDone           TaskStatus = "DONE"
	TaskError          TaskStatus = "ERROR"
	// TaskLimited: its agent stopped on a usage limit; it runs again,
	// continuing the agent's session, on resume.
	TaskLimited TaskStatus = "LIMITED"
)

// TaskStatuses are the task statuses this version knows.
var TaskStatuses = []TaskStatus{TaskPending, TaskRunning, TaskWaitingForUser, TaskDone, TaskError, TaskLimited}

// StepStatus is the status of one step run.
type StepStatus string

// Step statuses.
const (
	StepRunning StepStatus = "running"
	StepDone    StepStatus = "done"
	StepFailed  StepStatus = "failed"
	StepSkipped StepStatus = "skipped" // its when was false
	StepBlocked StepStatus = "blocked" // the workflow cannot go on without a person
	StepStopped StepStatus = "stopped" // interrupted; runs again on resume
	StepWaiting StepStatus = "waiting" // parked for a person; runs again on resume
	// StepLimited: its agent stopped on a usage limit; it runs again
	// (continuing the agent's session) on resume.
	StepLimited StepStatus = "limited"
)

// StepStatuses are the step statuses this version knows.
var StepStatuses = []StepStatus{StepRunning, StepDone, StepFailed, StepSkipped, StepBlocked, StepStopped, StepWaiting, StepLimited}

// StepType is what a step is. A stage workflow has only stage steps; a
// grimoire may have all.
type StepType string

// Step types.
const (
	StepStage  StepType = "stage"  // tasks that run in parallel
	StepAgent  StepType = "agent"  // one agent run on a rendered spell
	StepScript StepType = "script" // one shell command
	StepLoop   StepType = "loop"   // nested steps, repeated
	StepMerge  StepType = "merge"  // the worktree merged back
)

// StepTypes are the step types of a grimoire, in the order messages list them.
var StepTypes = []StepType{StepAgent, StepScript, StepLoop, StepMerge, StepStage}

// Reason says why a task ended (TaskRecord.reason, task_finished) or why
// a grimoire blocked (Session.blockedReason, workflow.blocked).
type Reason string

// Why a task ended.
const (
	ReasonExit            Reason = "exit"    // its process exited
	ReasonSignal          Reason = "signal"  // its process was killed by a signal
	ReasonStopped         Reason = "stopped" // vibeteam stopped it; it runs again on resume
	ReasonTimeout         Reason = "timeout" // it (or, blocked, the grimoire) ran longer than its timeout
	ReasonStartFailed     Reason = "start_failed"
	ReasonInactivity      Reason = "inactivity_timeout"
	ReasonCompletedByUser Reason = "completed_by_user"
	ReasonParked          Reason = "interaction_parked"
	ReasonInputsUnsent    Reason = "inputs_unsent"
	ReasonBudget          Reason = "budget" // a budget was spent: the agent was stopped, or not started
	ReasonSandboxRefused  Reason = "sandbox_refused"
	ReasonIdle            Reason = "idle"              // DONE: the terminal went idle with nothing left to send
	ReasonAgentError      Reason = "agent_error"       // the agent said its run failed (is_error, turn.failed, status error)
	ReasonDenied          Reason = "permission_denied" // the agent was refused a tool call: the task waits for a person
	ReasonQuestion        Reason = "question"          // the agent's final message asks the person something
	ReasonUnreadable      Reason = "unreadable_output" // a line of the agent's stream could not be read, even cut
	ReasonUsageLimit      Reason = "usage_limit"       // the agent stopped on a usage or rate limit its CLI reported
)

// WaitingOn is why a terminal task waits for a person: the screen's state
// (an interaction state of its adapter) it waits in.
func WaitingOn(screenState string) Reason { return Reason("waiting:" + screenState) }

// Why a grimoire blocked (besides ReasonTimeout and ReasonBudget).
const (
	BlockedStepFailed     Reason = "step_failed"
	BlockedMaxIterations  Reason = "max_iterations"
	BlockedTemplate       Reason = "template" // a when, input or command that cannot be rendered
	BlockedMergeConflict  Reason = "merge_conflict"
	BlockedMergeRefused   Reason = "merge_refused"  // git would overwrite local changes in the base checkout
	BlockedMergeRejected  Reason = "merge_rejected" // a person rejected the merge
	BlockedNothingToMerge Reason = "nothing_to_merge"
	BlockedGateRed        Reason = "merge_gate_red"    // the gate failed on the merged result; the base did not move
	BlockedMergeMoving    Reason = "merge_base_moving" // the base moved during every run of the gate
	// A conflict no agent was asked to resolve: a conflicting file is
	// binary, which no conflict marker can show.
	BlockedMergeBinary Reason = "merge_conflict_binary"
	// The agent resolving a conflict deleted a conflicted file.
	BlockedMergeDeleted Reason = "merge_conflict_deleted"
)

// Reasons are the reasons this version knows.
var Reasons = []Reason{ReasonExit, ReasonSignal, ReasonStopped, ReasonTimeout, ReasonStartFailed,
	ReasonInactivity, ReasonCompletedByUser, ReasonParked, ReasonInputsUnsent, ReasonBudget, ReasonSandboxRefused,
	ReasonIdle, ReasonAgentError, ReasonDenied, ReasonQuestion, ReasonUnreadable, ReasonUsageLimit,
	BlockedStepFailed, BlockedMaxIterations, BlockedTemplate, BlockedMergeConflict, BlockedMergeRefused,
	BlockedMergeRejected, BlockedNothingToMerge, BlockedGateRed, BlockedMergeMoving, BlockedMergeBinary, BlockedMergeDeleted}

// SessionState is the state a session's tasks make together
// (session_state), as a dashboard shows it.
type SessionState string

// Session states.
const (
	StateRunning  SessionState = "RUNNING"
	StateAwaiting SessionState = "AWAITING_INTERACTION"
	StateIdle     SessionState = "IDLE"
	StateError    SessionState = "ERROR"
)

// SessionStates are the session states this version knows.
var SessionStates = []SessionState{StateRunning, StateAwaiting, StateIdle, StateError}
