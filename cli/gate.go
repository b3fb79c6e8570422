package cli

import (
	"fmt"
	"strings"
	"time"

	"github.com/vibeteam/vibeteam/core/beads"
	"github.com/vibeteam/vibeteam/core/events"
	"github.com/vibeteam/vibeteam/core/state"
	"github.com/vibeteam/vibeteam/internal/excerpt"
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

// How the merge queue and gate events read, in run's output and in log.

func queuedLine(p events.MergeQueue) string {
	return fmt.Sprintf("waiting for the merge queue: another merge into %s is under way", safe(p.Base))
}

func gateStartLine(p events.GateStart) string {
	what := safe(p.Branch)
	if len(p.Batch) > 1 {
		what = fmt.Sprintf("a batch of %d (%s)", len(p.Batch), safe(strings.Join(p.Batch, ", ")))
	}
	msg := fmt.Sprintf("gate (%s) checks %s merged into %s at %s", safe(excerpt.FirstLineMarked(p.Command)),
		what, safe(p.Base), shortCommit(p.Commit))
	if p.Attempt > 1 {
		msg += fmt.Sprintf(" (try %d: %s moved during the last)", p.Attempt, safe(p.Base))
	}
	return msg
}

// batchLine is a batch of merges formed, gated or bisected.
func batchLine(p events.MergeBatch) string {
	what := fmt.Sprintf("batch of %d into %s (%s)", len(p.Branches), safe(p.Base), safe(strings.Join(p.Branches, ", ")))
	switch p.Phase {
	case "formed":
		return what + " formed at " + shortCommit(p.Commit) + ": gated once"
	case "gated":
		if p.Green {
			return what + ": gate green, all of it lands"
		}
		return what + ": gate red"
	case "bisected":
		return what + " bisected: its halves are gated in order"
	}
	return what + ": " + safe(p.Phase)
}

// gateEndLine is the end of a gate run; green says which glyph it gets.
func gateEndLine(p events.GateEnd) (string, bool) {
	return gateVerdict(p.Green, p.ExitCode, p.Reason, time.Duration(p.DurationMS)*time.Millisecond), p.Green
}

func gateVerdict(green bool, code int, reason string, d time.Duration) string {
	if green {
		return "gate green in " + logDuration(d)
	}
	why := fmt.Sprintf("exit %d", code)
	if reason != "" {
		why = safe(reason)
	}
	return fmt.Sprintf("gate red (%s) after %s", why, logDuration(d))
}

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

func shortCommit(c string) string {
	if len(c) > 12 {
		c = c[:12]
	}
	return safe(c)
}
