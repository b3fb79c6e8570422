package workflow

import (
	"math"
	"strconv"

	"gopkg.in/yaml.v3"

	"github.com/vibeteam/vibeteam/core/budget"
	"github.com/vibeteam/vibeteam/internal/yamlnode"
)

// budgetKeys are the keys of a grimoire's or an agent step's budget:.
var budgetKeys = []string{"tokens", "cost_usd"}

// budget reads `budget: { tokens: N, cost_usd: X }`: at least one of them,
// each positive.
func (p *parser) budget(n *yaml.Node, field string) *budget.Limit {
	var l budget.Limit
	seen, ok := p.Fields(n, field, "a mapping with tokens, cost_usd or both", budgetKeys, func(kv yamlnode.Pair) {
		f := field + "." + kv.Key.Value
		switch kv.Key.Value {
		case "tokens":
			t, _ := p.Int(kv.Val, f, 1, math.MaxInt)
			l.Tokens = int64(t)
		case "cost_usd":
			l.CostUSD = p.dollars(kv.Val, f)
		}
	})
	if !ok {
		return nil
	}
	if len(seen) == 0 {
		p.Fail(p.Deref(n), field, "needs tokens, cost_usd or both (a number of tokens, an amount in US dollars)")
		return nil
	}
	if l.IsZero() {
		return nil // a value was refused, and reported
	}
	return &l
}

// dollars reads a positive amount of US dollars: 1, 0.5, 2.25.
func (p *parser) dollars(n *yaml.Node, field string) float64 {
	n = p.Deref(n)
	p.Pos[field] = p.At(n)
	if n.Kind == yaml.ScalarNode && (n.ShortTag() == "!!int" || n.ShortTag() == "!!float") {
		if v, err := strconv.ParseFloat(n.Value, 64); err == nil && v > 0 && !math.IsInf(v, 0) {
			return v
		}
	}
	p.MustBe(n, field, "an amount in US dollars above 0, such as 2.50")
	return 0
}
