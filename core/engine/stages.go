package engine

import (
	"context"
	"fmt"
	"sync"

	"github.com/vibeteam/vibeteam/core/events"

	"github.com/vibeteam/vibeteam/core/flow"
	"github.com/vibeteam/vibeteam/core/state"
	"github.com/vibeteam/vibeteam/core/workflow"
)

// stageRunner runs a stage step: its tasks in parallel.
type stageRunner struct {
	host    stepHost
	prompts map[string]string
	// failedTask names the task whose failure failed the last stage.
	failedTask string
}

func (r *stageRunner) Run(ctx context.Context, st *workflow.Step, at flow.Addr) flow.Result {
	failed, reason := runStage(ctx, r.host, *st, r.prompts)
	parked := r.host.parked()
	switch {
	case parked != "":
		return flow.Result{Status: flow.Waiting, Reason: string(parked)}
	case ctx.Err() != nil:
		return flow.Result{Status: flow.Stopped, Reason: "interrupted"}
	case failed != "" && taskReason(r.host, failed) == BudgetReason:
		r.host.setBlockedReason(BlockedBudget)
		return flow.Result{Status: flow.Blocked, Reason: fmt.Sprintf("task %q: %s", failed, reason)}
	case failed != "":
		r.failedTask = failed
		return flow.Result{Status: flow.Failed, Reason: reason}
	}
	return flow.Result{Status: flow.Done}
}

// runStage starts every task of st that is not DONE and waits for all of
// them. The first failure stops the others.
func runStage(ctx context.Context, host stepHost, st workflow.Step, prompts map[string]string) (failedTask, reason string) {
	stageCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		wg       sync.WaitGroup
		failOnce sync.Once
	)
	keepGoing, mcp := host.settings().KeepGoing, host.workflowMCP()
	// The first task to fail is the one named, even if a later one finishes
	// failing first (a timeout waits out its grace period before it ends).
	// It stops the others unless the run keeps going.
	failing := func(taskID, why string) {
		if ctx.Err() != nil {
			return
		}
		failOnce.Do(func() {
			failedTask, reason = taskID, why
			if !keepGoing {
				cancel()
			}
		})
	}
	run := func(t workflow.Task) {
		t.MCP = workflow.MergeMCP(mcp, t.MCP)
		if ok, why := runTask(stageCtx, host, t, prompts[t.ID], failing, nil); !ok && stageCtx.Err() == nil {
			failing(t.ID, why)
		}
	}
	var todo []workflow.Task
	for _, t := range st.Tasks {
		if host.status(t.ID) != state.TaskDone {
			todo = append(todo, t)
		}
	}
	if len(todo) == 1 {
		run(todo[0]) // no goroutine to hand it to and back
		return failedTask, reason
	}
	for _, t := range todo {
		wg.Add(1)
		go func(t workflow.Task) {
			defer wg.Done()
			run(t)
		}(t)
	}
	wg.Wait()
	return failedTask, reason
}

// taskReason is why a task ended, as its record says.
func taskReason(host stepHost, id string) string {
	if rec := host.taskRecord(id); rec != nil {
		return rec.Reason
	}
	return ""
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
