// Package report folds a run's session files and event logs into what a
// report shows: a timeline of rows and coloured bars, gate marks, spend
// against budgets, the slowest steps and waits, and each row's outcome.
// It reads files only (a run by an older vibeteam, or one still going,
// reads as well) and never prints: a renderer turns a Report into a page.
package report

import (
	"time"

	"github.com/vibeteam/vibeteam/core/budget"
	"github.com/vibeteam/vibeteam/core/vocab"
)

// State is what a row was doing during a bar.
type State string

// The states a bar may have, in the order the legend shows them.
const (
	Running       = State(vocab.StepRunning) // an agent, a script, a step at work
	Waiting       = State(vocab.StepWaiting) // for a person: a question, a denial, a review
	Limited       = State(vocab.StepLimited) // an agent CLI's usage limit
	Queued  State = "queued"                 // for the repository's merge queue
	Gating  State = "gating"                 // the merge gate runs on the merge commit
	Merged  State = "merged"                 // landed; the run tidies up
	Failed        = State(vocab.StepFailed)
	Blocked       = State(vocab.StepBlocked)
)

// States lists every state, in legend order.
func States() []State {
	return []State{Running, Waiting, Limited, Queued, Gating, Merged, Failed, Blocked}
}

// rank is which state shows where several hold at once: the higher wins
// (a gate that runs inside a merge step that ends blocked shows as gating).
var rank = map[State]int{Running: 1, Failed: 2, Blocked: 3, Merged: 4, Waiting: 5, Limited: 6, Queued: 7, Gating: 8}

// MarkKind is how a gate run went.
type MarkKind string

// Gate mark kinds.
const (
	Green    MarkKind = "green"
	Red      MarkKind = "red"
	Bisected MarkKind = "bisected" // a red batch's gate, split to find the culprit
)

// Kind is what a report is about.
type Kind string

// Report kinds.
const (
	KindBacklog  Kind = "backlog"  // run --ready: one row per bead
	KindGrimoire Kind = "grimoire" // one row per step
	KindStages   Kind = "stages"   // a stage workflow: one row per task
)

// Report is everything a report page shows.
type Report struct {
	ID       string
	Kind     Kind
	Workflow string
	Status   string
	Running  bool // its vibeteam still runs: the end is the time it was read
	Start    time.Time
	End      time.Time
	Rows     []*Row
	Spend    Spend
	Slowest  []Slow
	Outcomes []Outcome
	// Problems are what could not be read (a damaged log, a bead's missing
	// session): the report shows what survives, and says what it lacks.
	Problems []string
}

// Wall is the run's duration.
func (r *Report) Wall() time.Duration { return r.End.Sub(r.Start) }

// Row is one line of the timeline: a bead, a step, or a task.
type Row struct {
	Key     string // the bead id, the step's address without iterations, the task id
	Label   string
	Detail  string // a bead's title, a step's type
	Depth   int    // a step's loop depth
	Session string
	Bars    []Bar  // in time order, not overlapping
	Marks   []Mark // gate runs
	Tokens  int64  // input + output, as budgets count them
	CostUSD float64
}

// Bar is one stretch of a row in one state. Start and End are the times
// of the events that began and ended it.
type Bar struct {
	State State
	Start time.Time
	End   time.Time
}

// Mark is one gate run.
type Mark struct {
	Kind    MarkKind
	Start   time.Time
	End     time.Time
	Command string
	Commit  string
	Exit    int
}

// Spend is what the agents spent, by row and by agent, against budgets.
type Spend struct {
	Tokens   int64
	CostUSD  float64
	Agents   []AgentSpend
	Budgets  []Budget
	Reported bool // some agent reported tokens or cost
}

// AgentSpend is one agent CLI's (and model's) spend.
type AgentSpend struct {
	Adapter string
	Model   string
	Runs    int
	Tokens  int64
	CostUSD float64
}

// Budget is a limit the run had, and what was spent of it.
type Budget struct {
	Name    string // "the run's (--max-tokens, --max-cost)", "the grimoire's"
	Limit   budget.Limit
	Tokens  int64
	CostUSD float64
}

// Slow is one of the longest steps, gates or waits.
type Slow struct {
	What     string // step | gate | wait
	Row      string
	Name     string
	Duration time.Duration
	Share    float64 // of the wall time, 0..1
}

// Outcome is how a row (a bead, or the session) ended.
type Outcome struct {
	Row     string
	Title   string
	Status  string
	Merge   string // the merge commit
	Reason  string
	Session string
	Next    string // the command to type next; "" when nothing is left
}
