package state

import "time"

// Backlog is what a `run --ready` session holds instead of a workflow: the
// run's settings, so a resume goes on as the run would have, and each bead
// it took, with the session that works on it.
type Backlog struct {
	Grimoire string   `json:"grimoire,omitempty"` // the GRIMOIRE given; "" chooses one per bead
	Jobs     int      `json:"jobs"`
	Labels   []string `json:"labels,omitempty"`
	Limit    int      `json:"limit,omitempty"` // at most this many beads; 0: no bound
	Base     string   `json:"base,omitempty"`  // --base
	// Remote is --remote: the beads land on that remote's base.
	Remote string `json:"remote,omitempty"`
	// MaxTokens and MaxCostUSD bound the whole run's agents (0: none).
	MaxTokens  int64          `json:"maxTokens,omitempty"`
	MaxCostUSD float64        `json:"maxCostUsd,omitempty"`
	Beads      []*BacklogBead `json:"beads"`
}

// BacklogBead is one bead a backlog run took.
type BacklogBead struct {
	ID       string `json:"id"`
	Title    string `json:"title,omitempty"`
	Grimoire string `json:"grimoire"`
	Rule     string `json:"rule,omitempty"` // why that grimoire
	// Session is the bead's own session. It is chosen and saved here
	// before that session is created, so a kill in between leaves a name
	// to look for, never a bead nobody knows was started.
	Session string `json:"session"`
	// Status is the bead session's status as the backlog last saw it, or
	// "starting" before it exists, or "skipped" (Reason says why).
	Status    string     `json:"status"`
	Reason    string     `json:"reason,omitempty"`
	Step      string     `json:"step,omitempty"`
	StartedAt *time.Time `json:"startedAt,omitempty"`
	EndedAt   *time.Time `json:"endedAt,omitempty"`
	Tokens    int64      `json:"tokens,omitempty"`
	CostUSD   float64    `json:"costUsd,omitempty"`
	// Adapters are the agent CLIs the bead's grimoire runs (a usage limit
	// of one holds the beads that need it).
	Adapters []string `json:"adapters,omitempty"`
	// LimitedUntil is when the usage limit that stopped the bead resets.
	LimitedUntil *time.Time `json:"limitedUntil,omitempty"`
	// Next is what a person types to take the bead on, when its session
	// waits for them.
	Next string `json:"next,omitempty"`
}

// Backlog bead statuses besides the session statuses.
const (
	BeadStarting = "starting"
	BeadSkipped  = "skipped"
)
