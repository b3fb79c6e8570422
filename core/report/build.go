package report

import (
	"errors"
	"fmt"
	"io/fs"
	"sort"
	"time"

	"github.com/vibeteam/vibeteam/core/budget"
	"github.com/vibeteam/vibeteam/core/flow"
	"github.com/vibeteam/vibeteam/core/state"
	"github.com/vibeteam/vibeteam/core/workflow"
)

// Build reads the session id (a backlog run, a grimoire or a stage
// workflow) and its event logs; now ends what a run still going has open.
func Build(mgr *state.Manager, id string, now time.Time) (*Report, error) {
	s, err := mgr.Load(id)
	if err != nil {
		return nil, err
	}
	r := &Report{ID: s.ID, Workflow: s.Workflow, Status: string(s.Status), Running: mgr.Running(s.ID), Start: s.StartTime}
	r.End = runEnd(s, r.Running, now)
	if s.Backlog != nil {
		r.Kind = KindBacklog
		buildBacklog(mgr, r, s, now)
	} else {
		r.Kind = KindStages
		if s.WorkflowDefinition != nil && s.WorkflowDefinition.Kind == workflow.KindGrimoire {
			r.Kind = KindGrimoire
		}
		buildSession(mgr, r, s)
	}
	for _, row := range r.Rows {
		for _, b := range row.Bars {
			if b.Start.Before(r.Start) {
				r.Start = b.Start
			}
			if b.End.After(r.End) {
				r.End = b.End
			}
		}
	}
	r.slowest()
	return r, nil
}

// runEnd is when the run ended: its end time, now while it runs, or its
// last update when it was killed.
func runEnd(s *state.Session, running bool, now time.Time) time.Time {
	switch {
	case running:
		return now
	case s.EndTime != nil:
		return *s.EndTime
	}
	return s.UpdatedAt
}

// readLog reads a session's events; what cannot be read is a problem
// the report names, never a reason to show nothing.
func readLog(mgr *state.Manager, r *Report, id string) []state.Event {
	evs, err := state.ReadEvents(mgr.EventLogPath(id))
	switch {
	case errors.Is(err, fs.ErrNotExist):
		r.Problems = append(r.Problems, fmt.Sprintf("session %s has no event log (%s)", id, mgr.EventLogPath(id)))
	case err != nil:
		r.Problems = append(r.Problems, err.Error())
	}
	return evs
}

func buildBacklog(mgr *state.Manager, r *Report, s *state.Session, now time.Time) {
	bl := s.Backlog
	r.Spend.Budgets = budgets(s, nil)
	if l := (budget.Limit{Tokens: bl.MaxTokens, CostUSD: bl.MaxCostUSD}); !l.IsZero() {
		r.Spend.Budgets = append(r.Spend.Budgets, Budget{Name: "the run's (--max-tokens, --max-cost)", Limit: l})
	}
	agents := map[[2]string]*AgentSpend{}
	for _, bd := range bl.Beads {
		row := &Row{Key: bd.ID, Label: bd.ID, Detail: bd.Title, Session: bd.Session, Tokens: bd.Tokens, CostUSD: bd.CostUSD}
		r.Rows = append(r.Rows, row)
		out := Outcome{Row: bd.ID, Title: bd.Title, Status: bd.Status, Reason: bd.Reason, Session: bd.Session, Next: bd.Next}
		bs, err := mgr.Load(bd.Session)
		if err != nil || bd.Session == "" {
			if bd.Status != state.BeadSkipped {
				r.Problems = append(r.Problems, fmt.Sprintf("bead %s: its session %s cannot be read", bd.ID, bd.Session))
			}
			r.Outcomes = append(r.Outcomes, out)
			continue
		}
		f := newFolder(false)
		f.fold(readLog(mgr, r, bs.ID))
		end := r.End
		if len(f.session.open) > 0 && !r.Running && f.session.last.After(end) {
			end = f.session.last
		}
		f.finish(end)
		row.Bars, row.Marks = f.session.bars(), f.session.marks
		if t := bs.AgentTotals(); t.Runs > 0 {
			row.Tokens, row.CostUSD = budget.Tokens(t.Tokens.Input, t.Tokens.Output), t.CostUSD
		}
		addAgents(agents, bs, f.models)
		for _, st := range f.steps {
			st.Row = bd.ID
			r.Slowest = append(r.Slowest, st)
		}
		out.Merge = bs.Merged
		if out.Reason == "" {
			out.Reason = sessionReason(bs)
		}
		if out.Next == "" {
			out.Next = nextCommand(bs.ID, string(bs.Status), mgr.Running(bs.ID))
		}
		r.Outcomes = append(r.Outcomes, out)
	}
	r.Outcomes = append(r.Outcomes, Outcome{Row: "backlog", Status: string(s.Status), Reason: s.Error, Session: s.ID, Next: nextCommand(s.ID, string(s.Status), r.Running)})
	r.spendTotals(agents)
}

func buildSession(mgr *state.Manager, r *Report, s *state.Session) {
	f := newFolder(true)
	f.fold(readLog(mgr, r, s.ID))
	f.finish(r.End)
	head := &Row{Key: "session", Label: "session", Detail: s.Workflow, Session: s.ID, Bars: f.session.bars(), Marks: f.session.marks}
	r.Rows = append(r.Rows, head)
	var steps, tasks []string
	for _, k := range f.order {
		if f.labels[k].task {
			tasks = append(tasks, k)
		} else {
			steps = append(steps, k)
		}
	}
	flow.SortKeys(steps)
	byKey := map[string]*Row{}
	for _, k := range append(steps, tasks...) {
		info, t := f.labels[k], f.rows[k]
		row := &Row{Key: k, Label: info.label, Detail: info.detail, Depth: info.depth, Session: s.ID, Bars: t.bars(), Marks: t.marks}
		if row.Label == "" {
			row.Label = k
		}
		byKey[k] = row
		r.Rows = append(r.Rows, row)
	}
	for task := range s.AllTasks() {
		if task.Record == nil || task.Record.Agent == nil {
			continue
		}
		key := "task:" + task.ID
		if task.RunKey != "" {
			key = stepKey(task.RunKey)
		}
		a := task.Record.Agent
		if row := byKey[key]; row != nil {
			row.Tokens += budget.Tokens(a.Tokens.Input, a.Tokens.Output)
			row.CostUSD += a.CostUSD
		}
	}
	agents := map[[2]string]*AgentSpend{}
	addAgents(agents, s, f.models)
	r.Spend.Budgets = budgets(s, s.WorkflowDefinition)
	for _, st := range f.steps {
		st.Row, st.Name = st.Name, ""
		r.Slowest = append(r.Slowest, st)
	}
	r.Outcomes = append(r.Outcomes, Outcome{Row: "session", Title: s.Workflow, Status: string(s.Status), Merge: s.Merged,
		Reason: sessionReason(s), Session: s.ID, Next: nextCommand(s.ID, string(s.Status), r.Running)})
	r.spendTotals(agents)
}

// addAgents adds the spend of each task of s that reported, by adapter and
// model.
func addAgents(agents map[[2]string]*AgentSpend, s *state.Session, models map[string]string) {
	for task := range s.AllTasks() {
		rec := task.Record
		if rec == nil || rec.Agent == nil {
			continue
		}
		k := [2]string{rec.Adapter, models[task.ID]}
		a := agents[k]
		if a == nil {
			a = &AgentSpend{Adapter: k[0], Model: k[1]}
			agents[k] = a
		}
		a.Runs++
		a.Tokens += budget.Tokens(rec.Agent.Tokens.Input, rec.Agent.Tokens.Output)
		a.CostUSD += rec.Agent.CostUSD
	}
}

// budgets are the limits a session had: the run's and its grimoire's.
func budgets(s *state.Session, def *workflow.Definition) []Budget {
	var out []Budget
	if l := s.RunBudget; l != nil && !l.IsZero() {
		out = append(out, Budget{Name: "the run's (--max-tokens, --max-cost)", Limit: *l})
	}
	if def != nil && def.Budget != nil && !def.Budget.IsZero() {
		out = append(out, Budget{Name: "the grimoire's", Limit: *def.Budget})
	}
	return out
}

func (r *Report) spendTotals(agents map[[2]string]*AgentSpend) {
	for _, row := range r.Rows {
		r.Spend.Tokens += row.Tokens
		r.Spend.CostUSD += row.CostUSD
	}
	for _, a := range agents {
		r.Spend.Agents = append(r.Spend.Agents, *a)
		r.Spend.Reported = true
	}
	sort.Slice(r.Spend.Agents, func(i, j int) bool {
		a, b := r.Spend.Agents[i], r.Spend.Agents[j]
		if a.CostUSD != b.CostUSD {
			return a.CostUSD > b.CostUSD
		}
		if a.Tokens != b.Tokens {
			return a.Tokens > b.Tokens
		}
		return a.Adapter+a.Model < b.Adapter+b.Model
	})
	r.Spend.Reported = r.Spend.Reported || r.Spend.Tokens > 0 || r.Spend.CostUSD > 0
	for i := range r.Spend.Budgets {
		r.Spend.Budgets[i].Tokens, r.Spend.Budgets[i].CostUSD = r.Spend.Tokens, r.Spend.CostUSD
	}
}

// sessionReason is why a session stopped short, in its own words.
func sessionReason(s *state.Session) string {
	switch {
	case s.Status == state.StatusCompleted:
		return ""
	case s.BlockedReason != "":
		return string(s.BlockedReason)
	case s.Limit != nil:
		return "usage limit of " + s.Limit.Adapter + ": " + s.Limit.Message
	}
	return s.Error
}

// nextCommand is what a person types next for a session in status.
func nextCommand(id, status string, running bool) string {
	switch {
	case running:
		return "vibeteam log -f " + id
	case status == string(state.StatusCompleted), status == string(state.StatusCancelled), status == state.BeadSkipped:
		return ""
	case status == string(state.StatusPendingMerge):
		return "vibeteam resume " + id + " --approve-merge"
	}
	return "vibeteam resume " + id
}

// slowest keeps the longest steps, gates and waits, each with its share of
// the wall time.
func (r *Report) slowest() {
	items := r.Slowest
	for _, row := range r.Rows {
		for _, m := range row.Marks {
			items = append(items, Slow{What: "gate", Row: row.Label, Name: m.Command, Duration: m.End.Sub(m.Start)})
		}
		for _, b := range row.Bars {
			if b.State == Waiting || b.State == Limited || b.State == Queued {
				items = append(items, Slow{What: "wait", Row: row.Label, Name: string(b.State), Duration: b.End.Sub(b.Start)})
			}
		}
	}
	sort.SliceStable(items, func(i, j int) bool { return items[i].Duration > items[j].Duration })
	const perKind = 8
	seen := map[string]int{}
	r.Slowest = nil
	wall := r.Wall()
	for _, it := range items {
		kind := it.What
		if kind == "task" {
			kind = "step"
		}
		if seen[kind] >= perKind || it.Duration <= 0 {
			continue
		}
		seen[kind]++
		if wall > 0 {
			it.Share = float64(it.Duration) / float64(wall)
		}
		r.Slowest = append(r.Slowest, it)
	}
}
