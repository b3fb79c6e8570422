package engine

import (
	"github.com/vibeteam/vibeteam/core/events"
	"github.com/vibeteam/vibeteam/core/state"
	"github.com/vibeteam/vibeteam/core/taskrun"
	"github.com/vibeteam/vibeteam/core/vocab"
	"github.com/vibeteam/vibeteam/core/workflow"
)

// taskHost is all that one task's run needs from whoever runs it: the
// settings of the session, the task's record and status, its events, and a
// way to stop the session for a person. A taskRun reaches the session only
// through it — never the executor's lock or session — so the process
// handling (headless or in a terminal, the automation, the pauses) is one
// unit, whatever walks the steps.
type taskHost interface {
	settings() Options
	// updateRecord changes the task's record; checkpoint also records the
	// change in the session's journal.
	updateRecord(taskID string, checkpoint bool, change func(*state.TaskRecord))
	// recordStart changes and journals the task's record before its
	// process starts; an error is a failed save: it must not start.
	recordStart(taskID string, change func(*state.TaskRecord)) error
	// record returns a copy of the task's record.
	readRecord(taskID string) state.TaskRecord
	setStatus(taskID string, st state.TaskStatus, ev events.TaskStatusChange)
	// endsStage sets a task's status at its end where its stage's end
	// follows at once (the stage's only task to run): both are journaled
	// on the stage's line.
	endsStage(taskID string, st state.TaskStatus, ev events.TaskStatusChange)
	history(kind, taskID, text string)
	// startHistory adds to the history what a task starts with (its
	// prompt): journaled with the line of the task's start or failure,
	// which always follows, rather than on one of its own before it.
	startHistory(kind, taskID, text string)
	emit(taskID string, p events.Payload)
	// flushEvents delivers the events emitted until now, which a run holds
	// from a process's end to the next one's start.
	flushEvents()
	// park stops the session for a person (waiting) or fails it;
	// parked says whether and how it was.
	park(status state.Status, taskID, reason string)
	parked() state.Status
	// setLimit records the usage limit the session stopped on or waits
	// out (nil: none any more).
	setLimit(l *state.Limit)
	// allowForRun remembers tools a person allowed for the rest of the
	// run; allowedForRun reports whether all of tools are.
	allowForRun(tools []string)
	allowedForRun(tools []string) bool
	// running and ended tell the host which runs are live (for Send,
	// Terminal, Kill); keep hands it a DONE task whose process stays.
	running(tr *taskrun.Attempt)
	ended(taskID string)
	keep(tr *taskrun.Attempt)
}

// settings are the executor's options as a task's run and a step's
// runner read them: with the session's id and base dir.
func (x *Executor) settings() Options {
	o := x.opts
	o.SessionID, o.BaseDir = x.sess.ID, x.sess.BaseDir
	return o
}

func (x *Executor) allowForRun(tools []string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.runAllowed == nil {
		x.runAllowed = map[string]bool{}
	}
	for _, tool := range tools {
		x.runAllowed[tool] = true
	}
}

func (x *Executor) allowedForRun(tools []string) bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	for _, tool := range tools {
		if !x.runAllowed[tool] {
			return false
		}
	}
	return len(tools) > 0
}

func (x *Executor) parked() state.Status {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.parkStatus
}

func (x *Executor) running(tr *taskrun.Attempt) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.active[tr.TaskID()] = tr
}

func (x *Executor) ended(taskID string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	delete(x.active, taskID)
}

// stepHost is all a grimoire's step runners need of the session besides
// running tasks. A runner reaches the session only through it — never the
// executor's lock or session — so what a step does and how the session
// records it stay apart, and every change a runner makes is one call that
// also journals it.
type stepHost interface {
	taskHost
	// status is a task's status; taskRecord is a copy of its record (nil
	// when it has none yet).
	status(taskID string) state.TaskStatus
	taskRecord(taskID string) *state.TaskRecord
	// pendTasks marks tasks pending before they run: all of them (afresh),
	// or only those the session does not know yet.
	pendTasks(afresh bool, taskIDs ...string)
	// pendStepTask marks the task of an agent step's run (at key) pending
	// before it runs; the run holds its record from then on.
	pendStepTask(key, taskID string)
	// workflowMCP is the MCP servers the whole workflow declares.
	workflowMCP() []workflow.MCPServer
	// takeMergeDecision is a person's answer to the pending merge, used
	// up (one answer, one merge); an open merge intent is an approval.
	takeMergeDecision() (decision, reason string)
	// awaitReview records that a merge waits for a person's review.
	awaitReview()
	// setIntent records the git change about to be made (nil: none is
	// under way); merged records the merge's commit and closes its intent.
	setIntent(in *state.GitIntent)
	// openIntent is the kind of the git change under way ("": none).
	openIntent() string
	merged(commit string)
	// landedMerge is the merge commit this session recorded ("": none).
	landedMerge() string
	addGateRun(run state.GateRun)
	setBlockedReason(reason vocab.Reason)
}

func (x *Executor) awaitReview() {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.pendingMerge = true
}
