package ui

import (
	"fmt"
	"strings"
	"time"

	"github.com/vibeteam/vibeteam/core/events"
	"github.com/vibeteam/vibeteam/internal/excerpt"
)

// How the merge queue and gate events read, in run's output and in log.

func queuedLine(p events.MergeQueue) string {
	return fmt.Sprintf("waiting for the merge queue: another merge into %s is under way", Safe(p.Base))
}

func gateStartLine(p events.GateStart) string {
	what := Safe(p.Branch)
	if len(p.Batch) > 1 {
		what = fmt.Sprintf("a batch of %d (%s)", len(p.Batch), Safe(strings.Join(p.Batch, ", ")))
	}
	msg := fmt.Sprintf("gate (%s) checks %s merged into %s at %s", Safe(excerpt.FirstLineMarked(p.Command)),
		what, Safe(p.Base), ShortCommit(p.Commit))
	if p.Attempt > 1 {
		msg += fmt.Sprintf(" (try %d: %s moved during the last)", p.Attempt, Safe(p.Base))
	}
	return msg
}

// batchLine is a batch of merges formed, gated or bisected.
func batchLine(p events.MergeBatch) string {
	what := fmt.Sprintf("batch of %d into %s (%s)", len(p.Branches), Safe(p.Base), Safe(strings.Join(p.Branches, ", ")))
	switch p.Phase {
	case "formed":
		return what + " formed at " + ShortCommit(p.Commit) + ": gated once"
	case "gated":
		if p.Green {
			return what + ": gate green, all of it lands"
		}
		return what + ": gate red"
	case "bisected":
		return what + " bisected: its halves are gated in order"
	}
	return what + ": " + Safe(p.Phase)
}

// gateEndLine is the end of a gate run; green says which glyph it gets.
func gateEndLine(p events.GateEnd) (string, bool) {
	return GateVerdict(p.Green, p.ExitCode, p.Reason, time.Duration(p.DurationMS)*time.Millisecond), p.Green
}

// GateVerdict is how a gate run ended, in a few words.
func GateVerdict(green bool, code int, reason string, d time.Duration) string {
	if green {
		return "gate green in " + logDuration(d)
	}
	why := fmt.Sprintf("exit %d", code)
	if reason != "" {
		why = Safe(reason)
	}
	return fmt.Sprintf("gate red (%s) after %s", why, logDuration(d))
}

// ShortCommit is a commit id cut to 12 characters, safe to print.
func ShortCommit(c string) string {
	if len(c) > 12 {
		c = c[:12]
	}
	return Safe(c)
}

// limitEventLine renders agent.limited: "claude usage limit: waiting until
// 15:04 (resets in 2h3m)".
func limitEventLine(p events.Limited, now time.Time) string {
	adapter := Safe(p.Adapter)
	var reset *time.Time
	if t, err := time.Parse(time.RFC3339, p.ResetAt); err == nil {
		reset = &t
	}
	resets := "reset time not given"
	if reset != nil {
		resets = "resets in " + max(reset.Sub(now), 0).Round(time.Second).String()
	}
	if p.Waiting {
		until := ""
		if t, err := time.Parse(time.RFC3339, p.Until); err == nil {
			until = t.Local().Format("15:04:05")
		}
		return fmt.Sprintf("%s usage limit: waiting until %s (%s)", adapter, until, resets)
	}
	line := fmt.Sprintf("%s usage limit (%s): the session stops", adapter, resets)
	if p.Reason != "" {
		line += "; " + Safe(p.Reason)
	}
	return line
}
