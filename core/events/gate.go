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
	Address    string `json:"address"`
	Attempt    int    `json:"attempt"` // 2 and more: the base moved during the run before
	Base       string `json:"base"`
	BaseCommit string `json:"base_commit"`
	Branch     string `json:"branch"`
	Command    string `json:"command"`
	Commit     string `json:"commit"` // the merge commit it checks
	Dir        string `json:"dir"`    // the temporary worktree it runs in
	Step       string `json:"step"`
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
