package engine

import (
	"context"
	"fmt"
	"github.com/vibeteam/vibeteam/core/events"

	"github.com/vibeteam/vibeteam/core/flow"
	"github.com/vibeteam/vibeteam/core/state"
	"github.com/vibeteam/vibeteam/core/workflow"
)

// stageRunner runs a stage step: its tasks in parallel.
type stageRunner struct {
	x       *Executor
	prompts map[string]string
	// failedTask names the task whose failure failed the last stage.
	failedTask string
}

func (r *stageRunner) Run(ctx context.Context, st *workflow.Step, at flow.Addr) flow.Result {
	failed, reason := r.x.runStage(ctx, *st, r.prompts)
	r.x.mu.Lock()
	parked := r.x.parkStatus
	r.x.mu.Unlock()
	switch {
	case parked != "":
		return flow.Result{Status: flow.Waiting, Reason: string(parked)}
	case ctx.Err() != nil:
		return flow.Result{Status: flow.Stopped, Reason: "interrupted"}
	case failed != "" && r.x.taskReason(failed) == BudgetReason:
		r.x.mu.Lock()
		r.x.sess.BlockedReason = BlockedBudget
		r.x.mu.Unlock()
		return flow.Result{Status: flow.Blocked, Reason: fmt.Sprintf("task %q: %s", failed, reason)}
	case failed != "":
		r.failedTask = failed
		return flow.Result{Status: flow.Failed, Reason: reason}
	}
	return flow.Result{Status: flow.Done}
}

// stageStore keeps a stage workflow's place as the spec has it: the index
// of the current stage; the stages before it are done.
type stageStore struct{ x *Executor }

func (s stageStore) Finished(at flow.Addr) (flow.Result, bool) {
	s.x.mu.Lock()
	defer s.x.mu.Unlock()
	if at[0].Index < s.x.sess.CurrentStageIndex {
		return flow.Result{Status: flow.Done}, true
	}
	return flow.Result{}, false
}

func (s stageStore) Started(at flow.Addr, st *workflow.Step) {
	x, i := s.x, at[0].Index
	x.mu.Lock()
	x.sess.CurrentStageIndex = i
	x.checkpointLocked(state.Change{Stage: &i}, true)
	x.mu.Unlock()
	x.emit("", events.StageStart{Stage: st.ID, Index: i, Tasks: len(st.Tasks)})
}

func (s stageStore) Ended(at flow.Addr, st *workflow.Step, r flow.Result) {
	s.x.stopStrays()
	if r.Status == flow.Done {
		s.x.emit("", events.StageEnd{Stage: st.ID, Index: at[0].Index})
	}
}

// stageScope: stage workflows have no step conditions or results.
type stageScope struct{}

func (stageScope) When(*workflow.Step) (bool, error)        { return true, nil }
func (stageScope) Record(*workflow.Step, flow.Result)       {}
func (stageScope) EnterLoop(*workflow.Step)                 {}
func (stageScope) Iteration(*workflow.Step, flow.Addr, int) {}
func (stageScope) ExitLoop(*workflow.Step)                  {}
