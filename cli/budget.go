package cli

import (
	ucli "github.com/urfave/cli/v2"

	"github.com/vibeteam/vibeteam/core/budget"
)

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
