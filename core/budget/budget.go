// Package budget meters what agents spend (tokens, dollars) against
// limits: a run's (--max-cost, --max-tokens), a grimoire's and an agent
// step's budget:. Meters nest: what a step spends counts against its
// grimoire's meter and the run's, and a scheduler running many sessions in
// one process gives them one parent meter for the whole backlog.
package budget

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
)

// Limit is what may be spent; a zero field is no limit.
type Limit struct {
	Tokens  int64   `json:"tokens,omitempty"`
	CostUSD float64 `json:"cost_usd,omitempty"`
}

// IsZero reports whether l limits nothing.
func (l Limit) IsZero() bool { return l.Tokens <= 0 && l.CostUSD <= 0 }

// String is the limit as a person reads it: "50,000 tokens, $1.00".
func (l Limit) String() string {
	var parts []string
	if l.Tokens > 0 {
		parts = append(parts, Count(l.Tokens)+" tokens")
	}
	if l.CostUSD > 0 {
		parts = append(parts, Dollars(l.CostUSD))
	}
	if len(parts) == 0 {
		return "no limit"
	}
	return strings.Join(parts, ", ")
}

// Meter adds up spend against a limit, and against its parent's. Safe for
// concurrent use; a nil *Meter meters nothing and is never exceeded.
type Meter struct {
	parent *Meter
	limit  Limit
	name   string // which budget it is, in what Exceeded says

	mu     sync.Mutex
	tokens int64
	cost   float64
}

// NewMeter returns a meter with limit under parent (nil for none).
func NewMeter(limit Limit, parent *Meter) *Meter {
	return &Meter{parent: parent, limit: limit}
}

// Named gives m a name (such as "the step's budget") that Exceeded
// reports with what was spent; call it before m is shared.
func (m *Meter) Named(name string) *Meter {
	m.name = name
	return m
}

// Add records spend on m and every meter above it.
func (m *Meter) Add(tokens int64, cost float64) {
	for ; m != nil; m = m.parent {
		m.mu.Lock()
		m.tokens += tokens
		m.cost += cost
		m.mu.Unlock()
	}
}

// Spent is what was added to m (and to the meters under it).
func (m *Meter) Spent() (tokens int64, cost float64) {
	if m == nil {
		return 0, 0
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.tokens, m.cost
}

// Limit is m's own limit.
func (m *Meter) Limit() Limit {
	if m == nil {
		return Limit{}
	}
	return m.limit
}

// Parent is the meter m counts against besides its own limit.
func (m *Meter) Parent() *Meter {
	if m == nil {
		return nil
	}
	return m.parent
}

// Exceeded reports whether m's limit or one above it is reached, and what
// was spent of which: "cost $1.23 of $1.00", "tokens 51,200 of 50,000",
// followed by the meter's name in parentheses when it has one. Reaching a
// limit counts: a budget of 50,000 tokens is spent at 50,000.
func (m *Meter) Exceeded() (what string, over bool) {
	for ; m != nil; m = m.parent {
		tokens, cost := m.Spent()
		switch {
		case m.limit.CostUSD > 0 && cost >= m.limit.CostUSD:
			what = fmt.Sprintf("cost %s of %s", Dollars(cost), Dollars(m.limit.CostUSD))
		case m.limit.Tokens > 0 && tokens >= m.limit.Tokens:
			what = fmt.Sprintf("tokens %s of %s", Count(tokens), Count(m.limit.Tokens))
		default:
			continue
		}
		if m.name != "" {
			what += " (" + m.name + ")"
		}
		return what, true
	}
	return "", false
}

// Report is the spend of m against its limit, for a person: "12,400 of
// 50,000 tokens, $0.31 of $1.00"; a part without a limit is the spend
// alone ("12,400 tokens").
func (m *Meter) Report() string {
	tokens, cost := m.Spent()
	return Against(tokens, cost, m.Limit())
}

// Against says spend against limit as Report does.
func Against(tokens int64, cost float64, limit Limit) string {
	t := Count(tokens) + " tokens"
	if limit.Tokens > 0 {
		t = Count(tokens) + " of " + Count(limit.Tokens) + " tokens"
	}
	c := Dollars(cost)
	if limit.CostUSD > 0 {
		c += " of " + Dollars(limit.CostUSD)
	}
	return t + ", " + c
}

// Dollars is an amount as "$1.23" (four places under a cent, so small
// runs do not read as free).
func Dollars(v float64) string {
	if v != 0 && v < 0.01 && v > -0.01 {
		return "$" + strconv.FormatFloat(v, 'f', 4, 64)
	}
	return "$" + strconv.FormatFloat(v, 'f', 2, 64)
}

// Count is n with thousands separated: 51,200.
func Count(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, r := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// Tokens is what a budget counts of a run's token report: input and output
// (cache reads and writes are priced apart; a cost budget covers them).
func Tokens(input, output int64) int64 { return input + output }
