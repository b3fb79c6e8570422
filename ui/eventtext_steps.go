package ui

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/vibeteam/vibeteam/core/events"
	"github.com/vibeteam/vibeteam/core/state"
	"github.com/vibeteam/vibeteam/core/vocab"
	"github.com/vibeteam/vibeteam/internal/excerpt"
)

const (
	logFailTail  = 3  // output lines shown under a failed step
	logBlockTail = 20 // context lines shown under a blocked workflow
	agentSaysMax = 10 // lines of an agent's message shown under its first
)

// stepLines are the lines of a grimoire's events: its start and end, a
// step's, a loop's iterations, and where it blocked.
func (x *eventText) stepLines(e state.Event) ([]string, bool) {
	switch p := e.Payload.(type) {
	case events.Started:
		verb := "started"
		if p.Resumed {
			verb = "resumed"
		}
		msg := "grimoire " + Safe(p.Grimoire) + " " + verb
		if p.Source != "" {
			msg += " (" + Safe(p.Source) + ")"
		}
		if p.Bead != "" {
			msg += ", bead " + Safe(p.Bead)
		}
		return []string{msg}, true
	case events.StepStarted:
		return []string{"▸ " + logStepName(p.Name, p.Address, p.Type)}, true
	case events.StepCompleted:
		return x.stepCompletedLines(p), true
	case events.Iteration:
		msg := "iteration " + strconv.Itoa(p.Iteration)
		if p.Max > 0 {
			msg += fmt.Sprintf("/%d", p.Max)
		}
		return []string{msg}, true
	case events.Blocked:
		msg := x.paint(stepMark(vocab.StepBlocked)) + " workflow blocked"
		if p.Step != "" {
			msg += " at " + Safe(p.Step)
			if p.Address != "" {
				msg += " (" + Safe(p.Address) + ")"
			}
		}
		if p.Reason != "" {
			msg += ": " + Safe(p.Reason)
		}
		out := []string{msg}
		for _, l := range excerpt.LastLines(p.Context, logBlockTail) {
			out = append(out, "  | "+SafeLine(l))
		}
		return out, true
	case events.Completed:
		return []string{x.completedLine(p)}, true
	}
	return nil, false
}

// stepCompletedLines: "✓ tests (script) 1.2s exit 0", "✗ tests (script)
// 1.2s exit 1 failed: exit code 1" and the end of its output, "– check
// (script) skipped (tests pass)".
func (x *eventText) stepCompletedLines(p events.StepCompleted) []string {
	msg := x.paint(stepMark(p.Status)) + " " + logStepName(p.Name, p.Address, p.Type)
	ran := p.Status == vocab.StepDone || p.Status == vocab.StepFailed || p.Status == vocab.StepBlocked || p.Status == vocab.StepStopped
	if ran {
		msg += " " + logDuration(time.Duration(p.DurationMS)*time.Millisecond)
	}
	if ran && (p.Type == vocab.StepScript || p.ExitCode != 0) {
		msg += fmt.Sprintf(" exit %d", p.ExitCode)
	}
	reason := Safe(excerpt.FirstLineMarked(p.Reason))
	switch p.Status {
	case vocab.StepDone:
		if p.Summary != "" {
			msg += " — " + Safe(excerpt.FirstLineMarked(p.Summary))
		}
	case vocab.StepSkipped:
		msg += " skipped"
		if reason != "" {
			msg += " (" + reason + ")"
		}
	case vocab.StepStopped:
		msg += " stopped (it runs again on resume)"
	case vocab.StepWaiting:
		msg += " waiting for a person"
	default:
		msg += " " + Safe(p.Status)
		if reason != "" {
			msg += ": " + reason
		}
	}
	out := []string{msg}
	if p.Status != vocab.StepFailed {
		return out
	}
	for _, l := range excerpt.LastLines(p.Output, logFailTail) {
		out = append(out, "    | "+SafeLine(l))
	}
	if p.LogPath != "" {
		out = append(out, "    log: "+Safe(p.LogPath))
	}
	return out
}

// completedLine is a grimoire's end: "✓ workflow completed (5 step(s),
// 12.3s)", or "! workflow completed with 2 failed step(s): lint, tests".
func (x *eventText) completedLine(p events.Completed) string {
	stats := []string{fmt.Sprintf("%d step(s)", p.Steps)}
	if p.Skipped > 0 {
		stats = append(stats, fmt.Sprintf("%d skipped", p.Skipped))
	}
	stats = append(stats, logDuration(time.Duration(p.DurationMS)*time.Millisecond))
	names := make([]string, 0, len(p.FailedSteps))
	for _, v := range p.FailedSteps {
		names = append(names, Safe(v))
	}
	nfailed := max(p.Failed, len(names))
	var msg string
	if nfailed > 0 {
		// The workflow went on past these by design; it still is not
		// a clean success.
		msg = fmt.Sprintf("! workflow completed with %d failed step(s)", nfailed)
		if len(names) > 0 {
			msg += ": " + strings.Join(names, ", ")
		}
	} else {
		msg = x.paint(stepMark(vocab.StepDone)) + " workflow completed"
	}
	return msg + " (" + strings.Join(stats, ", ") + ")"
}

// agentLines are the lines of what a headless or ACP agent did, as its
// stream or its protocol says: its messages, thoughts, tool calls and
// their results, its plan, its token use, and what it asks or was denied.
func (x *eventText) agentLines(e state.Event) ([]string, bool) {
	task := x.label(e.Task)
	switch p := e.Payload.(type) {
	case events.AgentStart:
		msg := "task " + task + ": agent session " + Safe(p.SessionID)
		if p.Model != "" {
			msg += " (" + Safe(p.Model) + ")"
		}
		return []string{msg}, true
	case events.AgentSaid:
		if p.Delta {
			b := x.said[e.Task]
			if b == nil {
				b = &strings.Builder{}
				x.said[e.Task] = b
				x.order = append(x.order, e.Task)
			}
			b.WriteString(p.Text)
			return nil, true
		}
		return agentSays(task, p.Text), true
	case events.AgentThought:
		return []string{"task " + task + " thinks: " + Safe(excerpt.FirstLineMarked(p.Text))}, true
	case events.ToolCall:
		msg := "task " + task + " ▸ " + Safe(p.Tool)
		if in := compactJSON(p.Input); in != "" {
			msg += " " + Fit(Safe(in), 120)
		}
		if p.Status != "" {
			msg += " [" + Safe(p.Status) + "]"
		}
		return []string{msg}, true
	case events.ToolResult:
		msg := "task " + task + " ⎿ " + Safe(p.Tool)
		if p.IsError {
			msg += " error"
		}
		if p.DurationMS > 0 {
			msg += " after " + logDuration(time.Duration(p.DurationMS)*time.Millisecond)
		}
		if out := excerpt.FirstLineMarked(p.Output); out != "" {
			msg += ": " + Fit(Safe(out), 120)
		}
		return []string{msg}, true
	case events.Plan:
		out := []string{"task " + task + " plan:"}
		for _, en := range p.Entries {
			out = append(out, "  "+en.Mark()+" "+Safe(excerpt.FirstLineMarked(en.Content)))
		}
		return out, true
	case events.Usage:
		return []string{fmt.Sprintf("task %s used %d input and %d output tokens (cache: %d read, %d written)",
			task, p.InputTokens, p.OutputTokens, p.CacheReadTokens, p.CacheWriteTokens)}, true
	case events.AgentFailure:
		return []string{"task " + task + ": the agent reported an error: " + Safe(excerpt.FirstLineMarked(p.Error))}, true
	case events.Denial:
		return []string{"task " + task + " was denied " + Safe(p.Tool) + ": " + Safe(excerpt.FirstLineMarked(p.Message))}, true
	case events.Question:
		return []string{"task " + task + " asks: " + Safe(excerpt.FirstLineMarked(p.Text))}, true
	}
	return nil, false
}

// agentSays is an agent's message: its first line, then up to
// agentSaysMax more under it.
func agentSays(task, text string) []string {
	var lines []string
	for _, l := range strings.Split(strings.ReplaceAll(text, "\r\n", "\n"), "\n") {
		if strings.TrimSpace(l) != "" {
			lines = append(lines, l)
		}
	}
	if len(lines) == 0 {
		return nil
	}
	out := []string{"task " + task + " says: " + SafeLine(lines[0])}
	rest := lines[1:]
	if len(rest) > agentSaysMax {
		rest = append(rest[:agentSaysMax:agentSaysMax], fmt.Sprintf("… (%d more line(s))", len(rest)-agentSaysMax))
	}
	for _, l := range rest {
		out = append(out, "  | "+SafeLine(l))
	}
	return out
}

// compactJSON is a tool's JSON input on one line; "" for none.
func compactJSON(raw json.RawMessage) string {
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return excerpt.OneLine(string(raw), 0)
	}
	return b.String()
}
