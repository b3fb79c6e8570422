package events

// Merge queue and gate events (grimoire merge steps).
const (
	MergeQueued    = "workflow.merge_queued"  // step, address, base: another merge into the repository holds the queue; this one waits
	GateStarted    = "workflow.gate_started"  // see GateStart
	GateFinished   = "workflow.gate_finished" // see GateEnd
	MergeBatched   = "workflow.merge_batch"   // see MergeBatch
	MergeResolving = "workflow.merge_resolve" // see MergeResolve
)

// Phases of a conflict's resolution (MergeResolve.Phase).
const (
	ResolveBaseMerged = "base_merged" // the base merged into the branch cleanly: the merge is tried again
	ResolveConflicted = "conflicted"  // it conflicts too: Files
	ResolveAgent      = "agent"       // an agent was started to resolve it (Attempt)
	ResolveRefused    = "refused"     // the agent's result was refused: Reason
	ResolveResolved   = "resolved"    // the resolution was committed on the branch: Commit
)

// MergeResolve is workflow.merge_resolve: a merge step's conflict with
// its base being resolved in the bead's worktree.
type MergeResolve struct {
	Address string   `json:"address"`
	Attempt int      `json:"attempt,omitempty"`
	Base    string   `json:"base"`
	Branch  string   `json:"branch"`
	Commit  string   `json:"commit,omitempty"`
	Files   []string `json:"files,omitempty"`
	Phase   string   `json:"phase"`
	Reason  string   `json:"reason,omitempty"`
	Step    string   `json:"step"`
}

// MergeBatch is workflow.merge_batch: a batch of several merges this one
// is part of was formed (its candidate computed: the base plus each merge
// on the one before), gated once (Green), or, red, bisected: its halves
// are gated in order.
type MergeBatch struct {
	Address  string   `json:"address"`
	Base     string   `json:"base"`
	Branches []string `json:"branches"` // the batch, oldest first
	Commit   string   `json:"commit"`   // the candidate's tip
	Green    bool     `json:"green,omitempty"`
	Phase    string   `json:"phase"` // formed, gated, bisected
	Step     string   `json:"step"`
}

// GateStart is workflow.gate_started: a merge step's gate starts on a
// merge commit.
type GateStart struct {
	Address    string `json:"address"`
	Attempt    int    `json:"attempt"` // 2 and more: the base moved during the run before
	Base       string `json:"base"`
	BaseCommit string `json:"base_commit"`
	// Batch, for a candidate of several merges, is their branches.
	Batch   []string `json:"batch,omitempty"`
	Branch  string   `json:"branch"`
	Command string   `json:"command"`
	Commit  string   `json:"commit"` // the merge commit it checks
	Dir     string   `json:"dir"`    // the temporary worktree it runs in
	Step    string   `json:"step"`
}

// GateEnd is workflow.gate_finished.
type GateEnd struct {
	Address    string `json:"address"`
	Attempt    int    `json:"attempt"`
	Commit     string `json:"commit"`
	DurationMS int64  `json:"duration_ms"`
	ExitCode   int    `json:"exit_code"`
	Green      bool   `json:"green"`
	LogPath    string `json:"log_path,omitempty"`
	Reason     string `json:"reason,omitempty"` // a timeout
	Step       string `json:"step"`
}
