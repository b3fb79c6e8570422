package engine

import (
	"context"
	"fmt"
	"sync"

	"github.com/vibeteam/vibeteam/core/events"
	"github.com/vibeteam/vibeteam/core/flow"
	"github.com/vibeteam/vibeteam/core/render"
	"github.com/vibeteam/vibeteam/core/state"
	"github.com/vibeteam/vibeteam/core/vocab"
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
	run := func(host taskHost, t workflow.Task) {
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
		// No goroutine to hand it to and back, and its end goes on the
		// line of the stage's, which follows.
		run(lastOfStage{host}, todo[0])
		return failedTask, reason
	}
	for _, t := range todo {
		wg.Add(1)
		go func(t workflow.Task) {
			defer wg.Done()
			run(host, t)
		}(t)
	}
	wg.Wait()
	return failedTask, reason
}

// lastOfStage is the host of a stage's only task left to run: the stage
// ends when it does, and the stage's end is journaled at once (the next
// line, whatever ended the task), so the task's end goes on that line.
type lastOfStage struct{ stepHost }

func (h lastOfStage) setStatus(taskID string, st state.TaskStatus, ev events.TaskStatusChange) {
	if st == state.TaskDone || st == state.TaskError {
		h.endsStage(taskID, st, ev)
		return
	}
	h.stepHost.setStatus(taskID, st, ev)
}

// taskReason is why a task ended, as its record says.
func taskReason(host stepHost, id string) vocab.Reason {
	if rec := host.taskRecord(id); rec != nil {
		return rec.Reason
	}
	return ""
}

// runStages runs a stage workflow: its stages are steps, run through the
// interpreter, store and scope a grimoire's steps run through, and kept by
// their address as its runs; a resume goes on at the first stage without a
// finished run.
func (x *Executor) runStages(ctx context.Context, prompts map[string]string) Outcome {
	def := x.sess.WorkflowDefinition
	stages := &stageRunner{host: x, prompts: prompts}
	store := &runStore{x: x, def: def, stages: true}
	g := &grimoire{host: x, def: def, scope: render.NewScope(def.Goal, x.sess.Vars)}
	in := &flow.Interpreter{
		Runners: map[vocab.StepType]flow.Runner{workflow.StepStage: stages},
		Scope:   &stepScope{g: g, store: store},
		Store:   store,
	}
	out := in.Run(ctx, def.Steps)
	x.mu.Lock()
	parked, ptask, preason := x.parkStatus, x.parkTask, x.parkReason
	x.mu.Unlock()
	switch {
	case parked != "":
		return x.finish(parked, ptask, preason)
	case out.Status == flow.Stopped || ctx.Err() != nil:
		return x.finish(state.StatusCancelled, "", "interrupted")
	case out.Status == flow.Failed:
		return x.finish(state.StatusFailed, stages.failedTask, out.Reason)
	case out.Status != flow.Done:
		return x.finish(state.StatusBlocked, "", fmt.Sprintf("%s (%s): %s", out.Step, out.At, out.Reason))
	}
	x.mu.Lock()
	x.sess.CurrentStageIndex = len(def.Steps)
	x.sess.Cursor = ""
	x.mu.Unlock()
	return x.finish(state.StatusCompleted, "", "")
}
