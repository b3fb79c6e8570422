package cli

import (
	"fmt"
	"io"

	ucli "github.com/urfave/cli/v2"

	"github.com/vibeteam/vibeteam/core/budget"
	"github.com/vibeteam/vibeteam/core/state"
)

// showBudgets gives the session's spend against each budget it has: the
// run's (--max-cost, --max-tokens) and the grimoire's.
func showBudgets(out io.Writer, s *state.Session) {
	t := s.AgentTotals()
	tokens := budget.Tokens(t.Tokens.Input, t.Tokens.Output)
	if l := s.RunBudget; l != nil && !l.IsZero() {
		fmt.Fprintf(out, "budget    %s (the run's: --max-cost, --max-tokens)\n", budget.Against(tokens, t.CostUSD, *l))
	}
	if def := s.WorkflowDefinition; def != nil && def.Budget != nil && !def.Budget.IsZero() {
		fmt.Fprintf(out, "budget    %s (the grimoire's)\n", budget.Against(tokens, t.CostUSD, *def.Budget))
	}
}

func positiveCost(_ *ucli.Context, v float64) error {
	if !(v > 0) {
		return exitf(ExitUsage, "--max-cost must be an amount in US dollars above 0, such as 2.50, not %v", v)
	}
	return nil
}

func positiveTokens(_ *ucli.Context, v int64) error {
	if v <= 0 {
		return exitf(ExitUsage, "--max-tokens must be a number of tokens above 0, not %d", v)
	}
	return nil
}

// maxSpend is the run's --max-cost and --max-tokens.
func maxSpend(c *ucli.Context) budget.Limit {
	return budget.Limit{Tokens: c.Int64("max-tokens"), CostUSD: c.Float64("max-cost")}
}
