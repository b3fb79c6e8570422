package cli

import (
	"time"

	"github.com/vibeteam/vibeteam/core/beads"
	"github.com/vibeteam/vibeteam/ui"
)

// projectGate is the default merge gate of the project at base
// (config.yaml merge.gate, "" none), for loading grimoires; nil when the
// config cannot be read (what chooses a grimoire reports that).
func projectGate(base string) *string {
	cfg, err := beads.LoadConfig(base)
	if err != nil {
		return nil
	}
	return &cfg.Gate
}

// gateVerdict and shortCommit are the UI's, for land and show.
func gateVerdict(green bool, code int, reason string, d time.Duration) string {
	return ui.GateVerdict(green, code, reason, d)
}

func shortCommit(c string) string { return ui.ShortCommit(c) }
