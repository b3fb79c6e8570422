package engine

import (
	"context"

	"github.com/vibeteam/vibeteam/core/budget"
	"github.com/vibeteam/vibeteam/core/state"
	"github.com/vibeteam/vibeteam/core/taskrun"
	"github.com/vibeteam/vibeteam/core/workflow"
)

// sessionMeter is the meter of a session's spend: under the grimoire's
// budget, under the run's (--max-cost, --max-tokens), under parent.
func sessionMeter(sess *state.Session, parent *budget.Meter) *budget.Meter {
	m := parent
	if l := sess.RunBudget; l != nil && !l.IsZero() {
		m = budget.NewMeter(*l, m).Named("the run's budget, --max-cost/--max-tokens")
	}
	if def := sess.WorkflowDefinition; def != nil && def.Budget != nil && !def.Budget.IsZero() {
		m = budget.NewMeter(*def.Budget, m).Named("the grimoire's budget")
	}
	return budget.NewMeter(budget.Limit{}, m)
}

// Meter is what the session's agents have spent, under its budgets (its
// Exceeded says whether one of them is spent).
func (x *Executor) Meter() *budget.Meter { return x.meter }

// startMetering counts what the session had spent before this run (a
// resume) against its budgets, once, and gives ctx the session's meter.
func (x *Executor) startMetering(ctx context.Context) context.Context {
	x.mu.Lock()
	t := x.sess.AgentTotals()
	x.mu.Unlock()
	if t.Runs > 0 {
		x.meter.Add(budget.Tokens(t.Tokens.Input, t.Tokens.Output), t.CostUSD)
	}
	return taskrun.WithMeter(ctx, x.meter)
}

// stepMetered gives an agent step with a budget of its own a meter under
// the session's, for its run.
func stepMetered(ctx context.Context, step *workflow.Step) context.Context {
	if step.Agent == nil || step.Agent.Budget == nil || step.Agent.Budget.IsZero() {
		return ctx
	}
	return taskrun.WithMeter(ctx, budget.NewMeter(*step.Agent.Budget, taskrun.MeterOf(ctx)).Named("step "+step.Label()+"'s budget"))
}
