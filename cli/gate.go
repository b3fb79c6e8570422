package cli

import (
	"fmt"
	"time"

	"github.com/vibeteam/vibeteam/core/beads"
	"github.com/vibeteam/vibeteam/core/state"
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

// gateRunLine is one of a session's gate runs, for show.
func gateRunLine(g state.GateRun) string {
	glyph := "✓"
	if !g.Green {
		glyph = "✗"
	}
	line := fmt.Sprintf("%s %s: %s, on %s at %s", glyph, safe(g.Step), gateVerdict(g.Green, g.ExitCode, g.Reason, time.Duration(g.DurationMS)*time.Millisecond),
		safe(g.Base), shortCommit(g.BaseCommit))
	if g.Attempt > 1 {
		line += fmt.Sprintf(" (try %d)", g.Attempt)
	}
	if len(g.Batch) > 1 {
		line += fmt.Sprintf(", a batch of %d: %s", len(g.Batch), safe(strings.Join(g.Batch, ", ")))
	}
	return line
}
