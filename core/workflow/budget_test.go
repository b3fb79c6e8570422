package workflow

import (
	"reflect"
	"strings"
	"testing"

	"github.com/vibeteam/vibeteam/core/budget"
)

func TestGrimoireBudgets(t *testing.T) {
	t.Parallel()
	const ok = ghead + `  - name: impl
    type: agent
    spell: implement
    budget: { cost_usd: 0.5 }
budget: { tokens: 120000, cost_usd: 3 }
`
	def, err := Parse([]byte(ok), "g.yaml", defaultOpts())
	if err != nil {
		t.Fatal(err)
	}
	if got, want := def.Budget, (&budget.Limit{Tokens: 120000, CostUSD: 3}); !reflect.DeepEqual(got, want) {
		t.Errorf("grimoire budget %+v, want %+v", got, want)
	}
	if got, want := def.Steps[0].Agent.Budget, (&budget.Limit{CostUSD: 0.5}); !reflect.DeepEqual(got, want) {
		t.Errorf("step budget %+v, want %+v", got, want)
	}

	const bad = ghead + `  - name: impl
    type: agent
    spell: implement
    budget: { tokens: 0, cost_usd: free }
  - name: test
    type: script
    command: go test ./...
    budget: { tokens: 10 }
  - name: other
    type: agent
    spell: implement
    budget: { tokns: 5 }
budget: {}
`
	_, err = Parse([]byte(bad), "g.yaml", defaultOpts())
	want := []string{
		`g.yaml:6:23: steps[0].budget.tokens: must be at least 1`,
		`g.yaml:6:36: steps[0].budget.cost_usd: must be an amount in US dollars above 0, such as 2.50`,
		`g.yaml:10:5: steps[1]: unknown key "budget" for a script step (it is a key of agent steps)`,
		`g.yaml:14:15: steps[2].budget: unknown key "tokns" (did you mean "tokens"?)`,
		`g.yaml:15:9: budget: needs tokens, cost_usd or both (a number of tokens, an amount in US dollars)`,
	}
	if got := errLines(err); !reflect.DeepEqual(got, want) {
		t.Errorf("errors:\n got: %s\nwant: %s", strings.Join(got, "\n      "), strings.Join(want, "\n      "))
	}
}
