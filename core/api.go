package core

import (
	"github.com/vibeteam/vibeteam/core/engine"
	"github.com/vibeteam/vibeteam/core/runner"
	"github.com/vibeteam/vibeteam/core/state"
	"github.com/vibeteam/vibeteam/core/workflow"
)

// What the CLI asks a person, and what it may answer: the engine's types,
// given here so that the CLI talks to the core alone.
type (
	ReviewRequest     = engine.ReviewRequest
	PermissionRequest = engine.PermissionRequest
	QuestionRequest   = engine.QuestionRequest
	// Workspace is a bead's git worktree as the engine uses it; the CLI
	// provides it (see RunOptions.Workspace).
	Workspace     = engine.Workspace
	MergeOutcome  = engine.MergeOutcome
	MergeConflict = engine.MergeConflict
	BeadTracker   = engine.BeadTracker
	// MergeRequest asks a Workspace for a merge, with its gate (GateTry:
	// the merge commit it checks).
	MergeRequest = engine.MergeRequest
	GateTry      = engine.GateTry
	// BatchNews is a batch of merges formed, gated or bisected by a
	// merge queue that batches.
	BatchNews = engine.BatchNews
	// ConflictWorkspace is a Workspace that resolves a merge's conflict
	// in its worktree (on_conflict); BaseMerge is a merge of the base
	// into its branch there.
	ConflictWorkspace = engine.ConflictWorkspace
	BaseMerge         = engine.BaseMerge
)

// Answers to a merge review.
const (
	ReviewApprove = engine.ReviewApprove
	ReviewReject  = engine.ReviewReject
	ReviewLater   = engine.ReviewLater
)

// Answers to a denied tool call.
const (
	PermissionOnce  = engine.PermissionOnce
	PermissionAll   = engine.PermissionAll
	PermissionDeny  = engine.PermissionDeny
	PermissionLater = engine.PermissionLater
)

// What a task that needs a person does without one (--on-interaction).
const (
	InteractionAsk  = engine.InteractionAsk
	InteractionPark = engine.InteractionPark
	InteractionFail = engine.InteractionFail
)

// Why a task waits for a person (TaskRecord.Reason).
const (
	DeniedReason   = engine.DeniedReason
	QuestionReason = engine.QuestionReason
)

// A budget spent: why a session is blocked (Session.BlockedReason), and
// why its agent's task ended (TaskRecord.Reason).
const (
	BlockedBudget = engine.BlockedBudget
	BudgetReason  = engine.BudgetReason
)

// Why a merge step blocks at its gate (Session.BlockedReason).
const (
	BlockedGateRed     = engine.BlockedGateRed
	BlockedMergeMoving = engine.BlockedMergeMoving
)

// RenderPrompts renders a stage workflow's task prompts with vars, so a
// missing variable is reported before anything starts.
func RenderPrompts(def *workflow.Definition, vars map[string]string) (map[string]string, error) {
	return engine.RenderPrompts(def, vars)
}

// StepTaskID is the task id (and log name) of an agent step's run at an
// address.
func StepTaskID(name, address string) string { return engine.StepTaskID(name, address) }

// What the terminal UI does to a running session: type into a task, hand
// a person its terminal, complete, park or kill.

// SendLine types text followed by Enter into a running task.
func (c *SessionController) SendLine(taskID, text string) error {
	return c.Executor.SendLine(taskID, text)
}

// TaskStatus is a task's current status.
func (c *SessionController) TaskStatus(taskID string) state.TaskStatus {
	return c.Executor.TaskStatus(taskID)
}

// Park ends the run as waiting (resumable): the person chose to leave it.
func (c *SessionController) Park(taskID, reason string) { c.Executor.Park(taskID, reason) }

// Kill SIGKILLs every running task's process group at once (a second
// interrupt).
func (c *SessionController) Kill() { c.Executor.Kill() }

// Terminal is the PTY of a running interactive task, for attaching.
func (c *SessionController) Terminal(taskID string) (*runner.Terminal, error) {
	return c.Executor.Terminal(taskID)
}

// Attached tells a task that a person has its terminal (true) or gave it
// back (false).
func (c *SessionController) Attached(taskID string, attached bool) {
	c.Executor.Attached(taskID, attached)
}
