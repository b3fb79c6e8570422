package engine

import (
	"context"

	"github.com/vibeteam/vibeteam/adapters"
	"github.com/vibeteam/vibeteam/core/agentstream"

	"github.com/vibeteam/vibeteam/core/budget"
	"github.com/vibeteam/vibeteam/core/events"
	"github.com/vibeteam/vibeteam/core/runner"
	"github.com/vibeteam/vibeteam/core/state"
	"github.com/vibeteam/vibeteam/core/workflow"
)

// BudgetReason is why a task ended when a budget was spent: its agent was
// stopped, or not started (TaskRecord.Reason).
const BudgetReason = "budget"

// The meter a task's spend is added to travels with the context: the
// session's, under it a step's when the step has a budget of its own.
type meterKey struct{}

func withMeter(ctx context.Context, m *budget.Meter) context.Context {
	return context.WithValue(ctx, meterKey{}, m)
}

func meterOf(ctx context.Context) *budget.Meter {
	m, _ := ctx.Value(meterKey{}).(*budget.Meter)
	return m
}

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
	return withMeter(ctx, x.meter)
}

// stepMetered gives an agent step with a budget of its own a meter under
// the session's, for its run.
func stepMetered(ctx context.Context, step *workflow.Step) context.Context {
	if step.Agent == nil || step.Agent.Budget == nil || step.Agent.Budget.IsZero() {
		return ctx
	}
	return withMeter(ctx, budget.NewMeter(*step.Agent.Budget, meterOf(ctx)).Named("step "+step.Label()+"'s budget"))
}

// refuseForBudget tells that an agent was not started for a budget spent,
// and returns why.
func refuseForBudget(host taskHost, taskID string, m *budget.Meter, what string) string {
	tokens, cost := m.Spent()
	host.emit(taskID, events.Budget{What: what, Tokens: tokens, CostUSD: cost})
	return budgetMessage(what, false)
}

// budgetMessage says what was spent, and what became of the agent.
func budgetMessage(what string, stopped bool) string {
	if stopped {
		return "budget spent: " + what + "; the agent was stopped"
	}
	return "budget spent: " + what + "; the agent was not started"
}

// streamSpend is what an agent's stream has reported spent so far, as
// added to its meter.
type streamSpend struct {
	meter *budget.Meter
	over  func(what string)
	// atEnd says whether the run's report so far is its last: the run
	// is over, and the process exits by itself.
	atEnd  func(agentstream.Summary) bool
	tokens int64
	cost   float64
}

// meterLocked adds to the meter what the run reported since the last
// call (parsers sum or set their totals as their CLI reports them; the
// summary is the run's total so far), and says when a budget is spent.
func (s *agentStream) meterLocked() {
	sp := &s.spend
	if sp.meter == nil {
		return
	}
	sum := s.parser.Summary()
	tokens := budget.Tokens(sum.Tokens.Input, sum.Tokens.Output)
	dt, dc := tokens-sp.tokens, sum.CostUSD-sp.cost
	if dt == 0 && dc == 0 {
		return
	}
	sp.tokens, sp.cost = tokens, sum.CostUSD
	sp.meter.Add(dt, dc)
	if what, over := sp.meter.Exceeded(); over && sp.over != nil && !sp.atEnd(sum) {
		sp.over(what)
	}
}

// meterStream makes the task's agent stream count its spend against m,
// and stop the agent once a budget is spent while it runs. A report that
// ends the run (claude's and gemini's result, codex's turn.completed: the
// only ones with gemini's and codex's usage) is counted, and stops the
// next agent instead: the run is over, its work done.
func (tr *taskRun) meterStream(m *budget.Meter, format adapters.Output) {
	if m == nil {
		return
	}
	tr.stream.spend.atEnd = func(sum agentstream.Summary) bool {
		switch format {
		case adapters.OutputCodexJSON, adapters.OutputGeminiStreamJSON:
			return true
		case adapters.OutputClaudeStreamJSON:
			return sum.HasResult
		}
		return false
	}
	tr.stream.spend.meter = m
	tr.stream.spend.over = func(what string) {
		select {
		case tr.overBudget <- what:
			tr.wake.Fire()
		default: // told already
		}
	}
}

// endedOnItsOwn reports whether the task's process has ended successfully
// by itself: a budget spent by its last report does not undo its work.
func (tr *taskRun) endedOnItsOwn() bool {
	select {
	case <-tr.proc.Done():
		return tr.proc.Result().Success()
	default:
		return false
	}
}

// stopForBudget stops the agent whose budget is spent; what it reported
// until then is its record's, and the task ends for reason budget.
func (tr *taskRun) stopForBudget(what string, finish func(st state.TaskStatus, reason string, res *runner.Result, msg string) (bool, string)) (bool, string) {
	host, t := tr.host, tr.task
	tr.proc.Stop(tr.cfg.Grace)
	res := tr.proc.Result()
	sum, text := tr.stream.finish()
	if text != "" && tr.log != nil {
		_, _ = tr.log.Write([]byte(text))
	}
	host.updateRecord(t.ID, false, func(rec *state.TaskRecord) { rec.Agent = recordSummary(sum) })
	tokens, cost := tr.stream.spend.meter.Spent()
	host.emit(t.ID, events.Budget{What: what, Tokens: tokens, CostUSD: cost, Stopped: true})
	return finish(state.TaskError, BudgetReason, &res, budgetMessage(what, true))
}
