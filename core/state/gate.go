package state

import "time"

// GateRun is one run of a merge step's gate: what it checked and how it
// went. Session.Gates keeps the latest (MaxGateRuns).
type GateRun struct {
	Step       string    `json:"step"`
	Address    string    `json:"address"`
	Attempt    int       `json:"attempt"` // 2 and more: the base moved during the one before
	Command    string    `json:"command"`
	Base       string    `json:"base"`        // the base branch
	BaseCommit string    `json:"base_commit"` // its commit the merge was computed on
	Commit     string    `json:"commit"`      // the merge commit the gate checked
	Started    time.Time `json:"started"`
	DurationMS int64     `json:"duration_ms"`
	Green      bool      `json:"green"`
	ExitCode   int       `json:"exit_code"`        // -1: killed (timeout, interrupt) or not started
	Reason     string    `json:"reason,omitempty"` // why it is red, beyond its exit code (a timeout)
	LogPath    string    `json:"log_path,omitempty"`
	// Batch, for a candidate of several merges gated at once, is their
	// branches, oldest first.
	Batch []string `json:"batch,omitempty"`
}

// MaxGateRuns is how many gate runs a session keeps.
const MaxGateRuns = 10

// AddGateRun appends a gate run, dropping the oldest beyond MaxGateRuns.
func (s *Session) AddGateRun(g GateRun) {
	s.Gates = append(s.Gates, g)
	if n := len(s.Gates); n > MaxGateRuns {
		s.Gates = append([]GateRun(nil), s.Gates[n-MaxGateRuns:]...)
	}
}
