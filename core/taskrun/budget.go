package taskrun

import (
	"context"

	"github.com/vibeteam/vibeteam/adapters"
	"github.com/vibeteam/vibeteam/core/agentstream"

	"github.com/vibeteam/vibeteam/core/budget"
	"github.com/vibeteam/vibeteam/core/events"
	"github.com/vibeteam/vibeteam/core/state"
	"github.com/vibeteam/vibeteam/core/vocab"
)

// BudgetReason is why a task ended when a budget was spent: its agent was
// stopped, or not started (TaskRecord.Reason).
const BudgetReason = vocab.ReasonBudget

// The meter a task's spend is added to travels with the context: the
// session's, under it a step's when the step has a budget of its own.
type meterKey struct{}

// WithMeter gives ctx the meter the spend of the tasks run under it adds
// to.
func WithMeter(ctx context.Context, m *budget.Meter) context.Context {
	return context.WithValue(ctx, meterKey{}, m)
}

// MeterOf is ctx's meter (nil: none).
func MeterOf(ctx context.Context) *budget.Meter {
	m, _ := ctx.Value(meterKey{}).(*budget.Meter)
	return m
}

// refuseForBudget tells that an agent was not started for a budget spent,
// and returns why.
func refuseForBudget(host Host, taskID string, m *budget.Meter, what string) string {
	tokens, cost := m.Spent()
	host.Emit(taskID, events.Budget{What: what, Tokens: tokens, CostUSD: cost})
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
func (tr *Attempt) meterStream(m *budget.Meter, format adapters.Output) {
	if m == nil {
		return
	}
	tr.stream.spend.atEnd = func(sum agentstream.Summary) bool {
		switch format {
		case adapters.OutputCodexJSON, adapters.OutputGeminiStreamJSON:
			return true
		case adapters.OutputClaudeStreamJSON, outputACP:
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
func (tr *Attempt) endedOnItsOwn() bool {
	select {
	case <-tr.proc.Done():
		return tr.proc.Result().Success()
	default:
		return false
	}
}

// stopForBudget stops the agent whose budget is spent; what it reported
// until then is its record's, and the task ends for reason budget.
func (tr *Attempt) stopForBudget(what string) outcome {
	host, t := tr.host, tr.task
	tr.proc.Stop(tr.cfg.Grace)
	res := tr.proc.Result()
	sum, text := tr.stream.finish()
	if text != "" && tr.log != nil {
		_, _ = tr.log.Write([]byte(text))
	}
	host.UpdateRecord(t.ID, false, func(rec *state.TaskRecord) { rec.Agent = recordSummary(sum) })
	tokens, cost := tr.stream.spend.meter.Spent()
	host.Emit(t.ID, events.Budget{What: what, Tokens: tokens, CostUSD: cost, Stopped: true})
	return failedWith(BudgetReason, budgetMessage(what, true), res)
}
