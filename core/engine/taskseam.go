package engine

import (
	"context"

	"github.com/vibeteam/vibeteam/core/events"
	"github.com/vibeteam/vibeteam/core/state"
	"github.com/vibeteam/vibeteam/core/taskrun"
	"github.com/vibeteam/vibeteam/core/workflow"
)

// The task's side of the session's words, as the engine's callers know
// them.
const (
	InteractionAsk  = taskrun.InteractionAsk
	InteractionPark = taskrun.InteractionPark
	InteractionFail = taskrun.InteractionFail

	PermissionOnce  = taskrun.PermissionOnce
	PermissionAll   = taskrun.PermissionAll
	PermissionDeny  = taskrun.PermissionDeny
	PermissionLater = taskrun.PermissionLater

	DeniedReason   = taskrun.DeniedReason
	QuestionReason = taskrun.QuestionReason
	BudgetReason   = taskrun.BudgetReason
	LimitReason    = taskrun.LimitReason
)

type (
	// PermissionRequest is what a person is asked about an agent's
	// denied tool calls.
	PermissionRequest = taskrun.PermissionRequest
	// QuestionRequest is the question an agent's final message asks.
	QuestionRequest = taskrun.QuestionRequest
)

// runTask runs one task to its end through the taskrun seam, host being
// the session (or a stage's view of it); capture, when set, keeps what the
// agent wrote.
func runTask(ctx context.Context, host taskHost, t workflow.Task, prompt string, failing func(taskID, why string), capture *tailBuffer) (ok bool, why string) {
	var c taskrun.Capture
	if capture != nil {
		c = capture
	}
	return taskrun.Run(ctx, seam{host}, t, prompt, failing, c)
}

// seam is the engine's side of taskrun.Host: the session a task's run
// reaches, through the engine's own taskHost (which a stage may wrap).
type seam struct{ h taskHost }

func (s seam) Settings() taskrun.Settings { return s.h.settings().Settings }
func (s seam) UpdateRecord(taskID string, checkpoint bool, change func(*state.TaskRecord)) {
	s.h.updateRecord(taskID, checkpoint, change)
}
func (s seam) RecordStart(taskID string, change func(*state.TaskRecord)) error {
	return s.h.recordStart(taskID, change)
}
func (s seam) ReadRecord(taskID string) state.TaskRecord { return s.h.readRecord(taskID) }
func (s seam) SetStatus(taskID string, st state.TaskStatus, ev events.TaskStatusChange) {
	s.h.setStatus(taskID, st, ev)
}
func (s seam) History(kind, taskID, text string)      { s.h.history(kind, taskID, text) }
func (s seam) StartHistory(kind, taskID, text string) { s.h.startHistory(kind, taskID, text) }
func (s seam) Emit(taskID string, p events.Payload)   { s.h.emit(taskID, p) }
func (s seam) FlushEvents()                           { s.h.flushEvents() }
func (s seam) Park(status state.Status, taskID, reason string) {
	s.h.park(status, taskID, reason)
}
func (s seam) Parked() state.Status              { return s.h.parked() }
func (s seam) SetLimit(l *state.Limit)           { s.h.setLimit(l) }
func (s seam) AllowForRun(tools []string)        { s.h.allowForRun(tools) }
func (s seam) AllowedForRun(tools []string) bool { return s.h.allowedForRun(tools) }
func (s seam) Running(a *taskrun.Attempt)        { s.h.running(a) }
func (s seam) Ended(taskID string)               { s.h.ended(taskID) }
func (s seam) Keep(a *taskrun.Attempt)           { s.h.keep(a) }
