package reportpage

import (
	_ "embed"
	"fmt"
	"html/template"
	"io"
	"sort"
	"strconv"
	"time"

	"github.com/vibeteam/vibeteam/core/budget"
	"github.com/vibeteam/vibeteam/core/report"
)

//go:embed page.html.tmpl
var pageText string

var page = template.Must(template.New("page").Parse(pageText))

// view is what the template reads: every figure already formatted.
type view struct {
	R          *report.Report
	Title      string
	Started    string
	Ended      string
	Wall       string
	Generated  string
	Legend     []legendItem
	States     []stateTotal
	Timeline   timeline
	SpendRows  []spendRow
	Agents     []spendRow
	Total      spendRow
	Budgets    []spendRow
	Slowest    []slowRow
	Outcomes   []report.Outcome
	RowsLabel  string
	HasReports bool
}

type legendItem struct{ Class, Name string }

type stateTotal struct {
	Class, Name, Time, Share, Width string
}

type spendRow struct{ Name, Detail, Tokens, Cost, Runs string }

type slowRow struct{ What, Row, Name, Time, Share, Width string }

// Render writes r as a page; now is when it was made.
func Render(w io.Writer, r *report.Report, now time.Time) error {
	v := view{R: r, Title: fmt.Sprintf("vibeteam report %s", r.ID), Started: r.Start.Local().Format("2006-01-02 15:04:05 MST"),
		Ended: r.End.Local().Format("2006-01-02 15:04:05 MST"), Wall: Human(r.Wall()), Generated: now.Local().Format("2006-01-02 15:04:05 MST"),
		Timeline: layout(r), Outcomes: r.Outcomes, RowsLabel: "step", HasReports: r.Spend.Reported}
	switch r.Kind {
	case report.KindBacklog:
		v.RowsLabel = "bead"
	case report.KindStages:
		v.RowsLabel = "task"
	}
	for _, s := range report.States() {
		v.Legend = append(v.Legend, legendItem{Class: "s-" + string(s), Name: string(s)})
	}
	for _, k := range []report.MarkKind{report.Green, report.Red, report.Bisected} {
		v.Legend = append(v.Legend, legendItem{Class: "g-" + string(k), Name: "gate " + string(k)})
	}
	v.States = stateTotals(r)
	for _, row := range r.Rows {
		if row.Key == "session" && r.Kind != report.KindBacklog {
			continue
		}
		v.SpendRows = append(v.SpendRows, spendRow{Name: row.Label, Detail: row.Detail, Tokens: budget.Count(row.Tokens), Cost: budget.Dollars(row.CostUSD)})
	}
	for _, a := range r.Spend.Agents {
		name := a.Adapter
		if name == "" {
			name = "(unknown adapter)"
		}
		v.Agents = append(v.Agents, spendRow{Name: name, Detail: a.Model, Tokens: budget.Count(a.Tokens), Cost: budget.Dollars(a.CostUSD), Runs: strconv.Itoa(a.Runs)})
	}
	v.Total = spendRow{Name: "total", Tokens: budget.Count(r.Spend.Tokens), Cost: budget.Dollars(r.Spend.CostUSD)}
	for _, b := range r.Spend.Budgets {
		v.Budgets = append(v.Budgets, spendRow{Name: b.Name, Detail: b.Limit.String(), Tokens: budget.Against(b.Tokens, b.CostUSD, b.Limit)})
	}
	for _, s := range r.Slowest {
		v.Slowest = append(v.Slowest, slowRow{What: s.What, Row: s.Row, Name: s.Name, Time: Human(s.Duration),
			Share: percent(s.Share), Width: px(160 * s.Share)})
	}
	return page.Execute(w, v)
}

// stateTotals is the time the rows spent in each state, summed over rows
// (several beads at once add up), with each state's share of that sum.
func stateTotals(r *report.Report) []stateTotal {
	sums := map[report.State]time.Duration{}
	var all time.Duration
	for _, row := range r.Rows {
		if row.Key == "session" && r.Kind != report.KindBacklog {
			continue // the steps' rows say it in detail
		}
		for _, b := range row.Bars {
			d := b.End.Sub(b.Start)
			sums[b.State] += d
			all += d
		}
	}
	var out []stateTotal
	for _, s := range report.States() {
		if sums[s] < time.Millisecond {
			continue // a stretch no one would see
		}
		share := float64(sums[s]) / float64(all)
		out = append(out, stateTotal{Class: "s-" + string(s), Name: string(s), Time: Human(sums[s]), Share: percent(share), Width: px(240 * share)})
	}
	sort.SliceStable(out, func(i, j int) bool { return sums[report.State(out[i].Name)] > sums[report.State(out[j].Name)] })
	return out
}

func percent(v float64) string {
	return strconv.FormatFloat(v*100, 'f', 1, 64) + "%"
}
