package core

import (
	"encoding/json"
	"fmt"
	"slices"

	"github.com/vibeteam/vibeteam/core/flow"
	"github.com/vibeteam/vibeteam/core/state"
	"github.com/vibeteam/vibeteam/core/workflow"
)

// reloadSession puts def, a fresh load of the session's workflow file, in
// place of the definition the session started with. Tasks are matched by
// id: a DONE task stays DONE unless its definition changed or rerun names
// it; tasks that are new are PENDING, and tasks that are gone are dropped.
// The run continues at the first stage that has work left.
func reloadSession(sess *state.Session, def *workflow.Definition, digest string, rerun []string) (changed []string, err error) {
	old := map[string]workflow.Task{}
	for _, st := range sess.WorkflowDefinition.Stages() {
		for _, t := range st.Tasks {
			old[t.ID] = t
		}
	}
	status := map[string]state.TaskStatus{}
	for _, st := range def.Stages() {
		for _, t := range st.Tasks {
			prev, existed := old[t.ID]
			switch {
			case !existed:
				status[t.ID] = state.TaskPending
				changed = append(changed, t.ID)
			case !sameTask(prev, t):
				status[t.ID] = state.TaskPending
				changed = append(changed, t.ID)
				// Its queue is the new definition's, from the start.
				delete(sess.Tasks, t.ID)
			default:
				status[t.ID] = sess.TaskStatus[t.ID]
				if status[t.ID] == "" {
					status[t.ID] = state.TaskPending
				}
			}
		}
	}
	for id := range sess.Tasks {
		if _, ok := status[id]; !ok {
			delete(sess.Tasks, id)
		}
	}
	for _, r := range sess.Runs {
		// An agent step that runs again runs the new definition afresh, as
		// a changed stage task does: not as the continuation of its
		// agent's session. A finished one keeps its record.
		if r.Task != nil && !finishedRun(r) {
			r.Task = nil
		}
	}
	sess.WorkflowDefinition = def
	sess.Workflow, sess.Goal = def.ID, def.Goal
	sess.SourceDigest = digest
	sess.TaskStatus = status
	if err := rerunTasks(sess, rerun); err != nil {
		return nil, err
	}
	return changed, nil
}

// rerunTasks makes the named tasks run again (and so their stage), DONE or
// not.
func rerunTasks(sess *state.Session, ids []string) error {
	var known []string
	for id := range sess.TaskStatus {
		known = append(known, id)
	}
	slices.Sort(known)
	for _, id := range ids {
		if _, ok := sess.TaskStatus[id]; !ok {
			return fmt.Errorf("--rerun %s: the workflow has no task %q (tasks: %v)", id, id, known)
		}
		sess.TaskStatus[id] = state.TaskPending
		delete(sess.Tasks, id)
	}
	sess.RewindStages(firstStageWithWork(sess))
	return nil
}

// firstStageWithWork is the index of the first stage with a task that is
// not DONE (the number of stages when every task is).
func firstStageWithWork(sess *state.Session) int {
	stages := sess.WorkflowDefinition.Stages()
	for i, st := range stages {
		for _, t := range st.Tasks {
			if sess.TaskStatus[t.ID] != state.TaskDone {
				return i
			}
		}
	}
	return len(stages)
}

// finishedRun reports whether a grimoire's run is one a resume passes over
// rather than runs again (a failed run is one the grimoire went on from by
// design: a failure that blocks is recorded as blocked).
func finishedRun(r *state.StepRun) bool {
	switch flow.Status(r.Status) {
	case flow.Done, flow.Skipped, flow.Failed:
		return true
	}
	return false
}

func sameTask(a, b workflow.Task) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return string(ja) == string(jb)
}
