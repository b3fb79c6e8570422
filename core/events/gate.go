package events

// Merge queue and gate events (grimoire merge steps).
const (
	MergeQueued  = "workflow.merge_queued"  // step, address, base: another merge into the repository holds the queue; this one waits
	GateStarted  = "workflow.gate_started"  // see GateStart
	GateFinished = "workflow.gate_finished" // see GateEnd
)

// GateStart is workflow.gate_started: a merge step's gate starts on a
// merge commit.
type GateStart struct {
	Step       string `json:"step"`
	Address    string `json:"address"`
	Attempt    int    `json:"attempt"` // 2 and more: the base moved during the run before
	Command    string `json:"command"`
	Base       string `json:"base"`
	Branch     string `json:"branch"`
	BaseCommit string `json:"base_commit"`
	Commit     string `json:"commit"` // the merge commit it checks
	Dir        string `json:"dir"`    // the temporary worktree it runs in
}

// GateEnd is workflow.gate_finished.
type GateEnd struct {
	Step       string `json:"step"`
	Address    string `json:"address"`
	Attempt    int    `json:"attempt"`
	Commit     string `json:"commit"`
	Green      bool   `json:"green"`
	ExitCode   int    `json:"exit_code"`
	DurationMS int64  `json:"duration_ms"`
	Reason     string `json:"reason,omitempty"` // a timeout
	LogPath    string `json:"log_path,omitempty"`
}
