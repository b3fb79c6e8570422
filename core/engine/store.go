package engine

import (
	"context"
	"sync"
	"time"

	"github.com/vibeteam/vibeteam/core/events"
	"github.com/vibeteam/vibeteam/core/state"
	"github.com/vibeteam/vibeteam/core/vocab"
	"github.com/vibeteam/vibeteam/core/workflow"
)

// sessionStore is the session of a run and all that records it: the lock
// every change of the session is made under, the journal each change is
// appended to, and the events that tell it. The executor and its step and
// task runners (through stepHost and taskHost) change the session only
// through it.
type sessionStore struct {
	mu      sync.Mutex
	sess    *state.Session
	manager *state.Manager
	emitTo  func(state.Event) // Options.Emit
	events  *eventQueue       // to emitTo
	overall vocab.SessionState
	journal *state.Journal // while Run runs: changes are appended here
	// writeErr is a write of the session that failed, journal line and
	// whole snapshot alike: the run stops (cancelRun), and ends failed
	// naming it.
	writeErr  error
	cancelRun context.CancelFunc
	// halt stops every process start once a write failed (liveProcesses).
	halt func(error)
	// deferred is a change journaled with the next line rather than on
	// one of its own (deferLocked); the snapshot holds it in any case.
	deferred *state.Change
	// mergedLast: the last step to run in this run was a merge that
	// landed (merged), and no step started since; a stop that comes now
	// came too late to stop the merge.
	mergedLast bool
	// held are the tasks whose records their step runs hold (agent
	// steps'): task id → the run's address.
	held map[string]string
	// lively are the tasks (not held by step runs) whose status makes the
	// session's overall state: RUNNING, WAITING, ERROR. Made by a scan
	// when first needed, then kept by setStatus, so a run of many tasks
	// does not scan them all at each change of one. nil: to be made.
	lively map[string]state.TaskStatus
}

// makesOverall reports whether a task's status counts in the overall state.
func makesOverall(st state.TaskStatus) bool {
	return st == state.TaskRunning || st == state.TaskWaitingForUser || st == state.TaskError
}

func (s *sessionStore) updateRecord(taskID string, checkpoint bool, change func(*state.TaskRecord)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rec := s.record(taskID)
	change(rec)
	if checkpoint {
		s.checkpointRecordLocked(taskID, rec)
	}
}

// recordStart changes the task's record for an attempt about to start and
// journals it (with what was deferred: its stage's start, its prompt)
// before its process starts. A save that failed, now or before, is
// returned: nothing starts once one did (it could not be recorded).
func (s *sessionStore) recordStart(taskID string, change func(*state.TaskRecord)) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.writeErr != nil {
		return s.writeErr
	}
	rec := s.record(taskID)
	change(rec)
	s.checkpointRecordLocked(taskID, rec)
	return s.writeErr
}

// checkpointRecordLocked journals the task's record rec: in its step run
// where one holds it.
func (s *sessionStore) checkpointRecordLocked(taskID string, rec *state.TaskRecord) {
	if c, ok := s.heldChangeLocked(taskID); ok {
		s.checkpointLocked(c, false)
		return
	}
	cp := *rec
	s.checkpointLocked(state.Change{Task: taskID, Record: &cp}, false)
}

func (s *sessionStore) readRecord(taskID string) state.TaskRecord {
	s.mu.Lock()
	defer s.mu.Unlock()
	return *s.record(taskID)
}

func (s *sessionStore) history(kind, taskID, text string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.addHistoryLocked(kind, taskID, text)
}

func (s *sessionStore) startHistory(kind, taskID, text string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.deferLocked(state.Change{History: s.appendHistoryLocked(kind, taskID, text)})
}

func (s *sessionStore) pendTasks(afresh bool, taskIDs ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, id := range taskIDs {
		if _, ok := s.sess.TaskStatus[id]; afresh || !ok {
			s.sess.TaskStatus[id] = state.TaskPending
		}
	}
	s.lively = nil
}

// pendStepTask marks the task of the step run at key pending before it
// runs: the run holds its record (kept from the run's earlier attempts at
// this address: the agent's session, what a person allowed or answered).
func (s *sessionStore) pendStepTask(key, taskID string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	run := s.sess.Runs[key]
	if run == nil {
		return
	}
	if run.Task == nil {
		run.Task = &state.TaskRecord{}
	}
	run.Task.Status = state.TaskPending
	if s.held == nil {
		s.held = map[string]string{}
	}
	s.held[taskID] = key
}

// heldRunLocked is the step run that holds the task's record, and its
// address; nil for a stage's task.
func (s *sessionStore) heldRunLocked(taskID string) (string, *state.StepRun) {
	key, ok := s.held[taskID]
	if !ok {
		return "", nil
	}
	run := s.sess.Runs[key]
	if run == nil || run.Task == nil {
		return "", nil // its iteration was pruned
	}
	return key, run
}

// heldChangeLocked is the journal line of a change of a task whose step
// run holds its record: the run, record and all.
func (s *sessionStore) heldChangeLocked(taskID string) (state.Change, bool) {
	key, run := s.heldRunLocked(taskID)
	if run == nil {
		return state.Change{}, false
	}
	cp := *run
	return state.Change{Run: &cp, RunKey: key}, true
}

// taskRecord is a copy of a task's record.
func (s *sessionStore) taskRecord(id string) *state.TaskRecord {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.sess.Tasks[id]
	if _, run := s.heldRunLocked(id); run != nil {
		r = run.Task
	}
	if r != nil {
		cp := *r
		return &cp
	}
	return nil
}

func (s *sessionStore) takeMergeDecision() (decision, reason string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	decision, reason = s.sess.MergeDecision, s.sess.MergeReason
	s.sess.MergeDecision, s.sess.MergeReason = "", ""
	// A merge intent still open is a merge that was approved and begun
	// when vibeteam was killed: it is finished (git says whether the base
	// has the work already), not asked about again. An approval given again
	// on that resume (resume --approve-merge after a kill during the merge
	// it approved) is the same merge, still under way.
	if in := s.sess.Intent; in != nil && (in.Kind == state.IntentMerge || in.Kind == state.IntentResolve) && (decision == "" || decision == ReviewApprove) {
		decision = mergeUnderWay
	}
	return decision, reason
}

// setIntent records the git change about to be made (nil: none is under
// way) before git is asked to make it, so a resume after a kill knows to
// check what git did.
func (s *sessionStore) setIntent(in *state.GitIntent) {
	if in != nil {
		in.Time = time.Now()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sess.Intent = in
	s.checkpointLocked(state.Change{}, true)
}

func (s *sessionStore) landedMerge() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sess.Merged
}

func (s *sessionStore) merged(commit string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sess.Merged = commit
	s.sess.Intent = nil
	s.mergedLast = true
	s.checkpointLocked(state.Change{}, true)
}

func (s *sessionStore) addGateRun(run state.GateRun) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sess.AddGateRun(run)
	s.checkpointLocked(state.Change{}, true)
}

func (s *sessionStore) setBlockedReason(reason vocab.Reason) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sess.BlockedReason = reason
}

// setLimit records the limit the session stopped on or waits out (nil: none
// any more), with the session's header in the journal.
func (s *sessionStore) setLimit(l *state.Limit) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sess.Limit = l
	s.checkpointLocked(state.Change{}, true)
}

func (s *sessionStore) status(taskID string) state.TaskStatus {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, run := s.heldRunLocked(taskID); run != nil {
		return run.Task.Status
	}
	return s.sess.TaskStatus[taskID]
}

// setStatus records a task status change, saves, and emits the task (ev,
// with its status) and derived session state events.
func (s *sessionStore) setStatus(taskID string, st state.TaskStatus, ev events.TaskStatusChange) {
	s.setTaskStatus(taskID, st, ev, false)
}

func (s *sessionStore) endsStage(taskID string, st state.TaskStatus, ev events.TaskStatusChange) {
	s.setTaskStatus(taskID, st, ev, true)
}

// setTaskStatus sets and journals a task's status; deferred, the change
// waits for the line that follows at once (the stage's end).
func (s *sessionStore) setTaskStatus(taskID string, st state.TaskStatus, ev events.TaskStatusChange, deferred bool) {
	s.mu.Lock()
	// The end of a task is made durable; its other steps need only survive
	// vibeteam being killed.
	durable := st == state.TaskDone || st == state.TaskError
	var c state.Change
	if _, run := s.heldRunLocked(taskID); run != nil {
		run.Task.Status = st
		c, _ = s.heldChangeLocked(taskID)
	} else {
		s.sess.TaskStatus[taskID] = st
		if s.lively != nil {
			if makesOverall(st) {
				s.lively[taskID] = st
			} else {
				delete(s.lively, taskID)
			}
		}
		c = state.Change{Task: taskID, Status: st, Record: s.sess.Tasks[taskID]}
	}
	if deferred {
		s.deferLocked(c)
	} else {
		s.checkpointLocked(c, durable)
	}
	overall := s.deriveLocked()
	changed := overall != s.overall
	s.overall = overall
	s.mu.Unlock()
	ev.Status = st
	s.emit(taskID, ev)
	if changed {
		s.emit("", events.SessionStateChange{State: overall})
	}
}

// deriveLocked computes the overall state from the task statuses.
func (s *sessionStore) deriveLocked() vocab.SessionState {
	var running, waiting, failed bool
	see := func(st state.TaskStatus) {
		switch st {
		case state.TaskError:
			failed = true
		case state.TaskWaitingForUser:
			waiting = true
		case state.TaskRunning:
			running = true
		}
	}
	if s.lively == nil {
		s.lively = map[string]state.TaskStatus{}
		for id, st := range s.sess.TaskStatus {
			if makesOverall(st) {
				s.lively[id] = st
			}
		}
	}
	for _, st := range s.lively {
		see(st)
	}
	for id := range s.held {
		if _, run := s.heldRunLocked(id); run != nil {
			see(run.Task.Status)
		} else {
			delete(s.held, id) // pruned with its iteration
		}
	}
	switch {
	case failed:
		return OverallError
	case waiting:
		return OverallAwaiting
	case running:
		return OverallRunning
	}
	return OverallIdle
}

func (s *sessionStore) saveLocked() {
	if s.manager == nil {
		return
	}
	if err := s.manager.Save(s.sess); err != nil {
		s.writeFailedLocked(err)
	}
}

// writeFailedLocked records a failed write of the session and stops the
// run: going on would report as done what is not saved.
func (s *sessionStore) writeFailedLocked(err error) {
	// emit never calls back into the executor, so holding mu is fine.
	s.emit("", events.RunError{Error: err.Error()})
	if s.writeErr == nil {
		s.writeErr = err
	}
	if s.halt != nil {
		// Before the cancel: a step or a stage that starts on its way out
		// starts nothing.
		s.halt(err)
	}
	if s.cancelRun != nil {
		s.cancelRun()
	}
}

func (s *sessionStore) emit(taskID string, p events.Payload) {
	if s.emitTo == nil {
		return
	}
	s.events.add(state.Event{Time: time.Now(), Session: s.sess.ID, Task: taskID, Payload: p})
}

// flushEvents delivers the events held until now (eventQueue), and
// journals a change held for the line that follows it (a script step's
// start, held until its process runs).
func (s *sessionStore) flushEvents() {
	s.mu.Lock()
	if d := s.deferred; d != nil {
		s.deferred = nil
		s.checkpointLocked(*d, false)
	}
	s.mu.Unlock()
	if s.events != nil {
		s.events.flush()
	}
}

// record is the task's record, made when it has none yet: in its step run
// for an agent step's task, else under the session's Tasks.
func (s *sessionStore) record(taskID string) *state.TaskRecord {
	if _, run := s.heldRunLocked(taskID); run != nil {
		return run.Task
	}
	r := s.sess.Tasks[taskID]
	if r == nil {
		r = &state.TaskRecord{}
		s.sess.Tasks[taskID] = r
	}
	return r
}

func (s *sessionStore) addHistoryLocked(kind, taskID, text string) {
	s.checkpointLocked(state.Change{History: s.appendHistoryLocked(kind, taskID, text)}, false)
}

// appendHistoryLocked adds an entry to the session's history and returns it,
// for the journal.
func (s *sessionStore) appendHistoryLocked(kind, taskID, text string) *state.HistoryEntry {
	h := state.HistoryEntry{Time: time.Now(), Kind: kind, TaskID: taskID, Text: text}
	s.sess.History = append(s.sess.History, h)
	return &h
}

// checkpointLocked records a change of the session: appended to the
// journal, at the cost of the change rather than of the whole session.
func (s *sessionStore) checkpointLocked(c state.Change, durable bool) {
	if s.journal == nil {
		s.saveLocked()
		return
	}
	if d := s.deferred; d != nil {
		s.deferred = nil
		if merged, ok := withDeferred(c, *d); ok {
			c = merged
		} else {
			s.checkpointLocked(*d, false) // on two lines
		}
	}
	if err := s.journal.Record(s.sess, c, durable); err != nil {
		// The whole session written at once may still fit (the journal
		// line is gone; the snapshot holds the change).
		s.compactLocked()
		return
	}
	if s.journal.Due() {
		s.compactLocked()
	}
}

// deferLocked records a change that a kill may lose, because a line
// follows it at once (the start of a stage, whose tasks journal their own
// starts): it goes into that line, and costs no write of its own.
func (s *sessionStore) deferLocked(c state.Change) {
	if s.journal == nil {
		s.saveLocked()
		return
	}
	if s.deferred != nil {
		if merged, ok := withDeferred(c, *s.deferred); ok {
			s.deferred = &merged
			return
		}
		s.checkpointLocked(c, false) // writes the one before with it
		return
	}
	s.deferred = &c
}

// withDeferred is c with what a deferred change d holds besides, on one
// line; false when they cannot share one: two step runs, two tasks, two
// history entries. A change of the same run or task supersedes d's.
func withDeferred(c, d state.Change) (state.Change, bool) {
	switch {
	case c.Run != nil && d.Run != nil && c.RunKey != d.RunKey,
		c.Task != "" && d.Task != "" && c.Task != d.Task,
		c.History != nil && d.History != nil,
		d.Stage != nil || len(d.Session) > 0:
		return c, false
	}
	if c.Run == nil {
		c.Run, c.RunKey = d.Run, d.RunKey
	}
	switch {
	case c.Task == "":
		c.Task, c.Status, c.Record = d.Task, d.Status, d.Record
	case c.Task == d.Task:
		if c.Status == "" {
			c.Status = d.Status
		}
		if c.Record == nil {
			c.Record = d.Record
		}
	}
	if c.History == nil {
		c.History = d.History
	}
	if c.Cursor == nil {
		c.Cursor = d.Cursor
	}
	return c, true
}

// compactLocked writes the whole session and empties the journal.
func (s *sessionStore) compactLocked() {
	if s.journal == nil {
		s.saveLocked()
		return
	}
	if err := s.journal.Compact(s.sess); err != nil {
		s.writeFailedLocked(err)
		return
	}
	s.deferred = nil // the snapshot holds it
}

// workflowMCP is the MCP servers of the session's workflow.
func (s *sessionStore) workflowMCP() []workflow.MCPServer {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.sess.WorkflowDefinition == nil {
		return nil
	}
	return s.sess.WorkflowDefinition.MCP
}
