package taskrun

import (
	"fmt"
	"strings"
	"time"

	"github.com/vibeteam/vibeteam/core/agentstream"
	"github.com/vibeteam/vibeteam/core/events"
	"github.com/vibeteam/vibeteam/core/state"
	"github.com/vibeteam/vibeteam/core/vocab"
	"github.com/vibeteam/vibeteam/internal/excerpt"
)

// LimitReason: the task's agent stopped on a usage or rate limit its CLI
// reported; the task continues its agent's own session once it resets.
const LimitReason = vocab.ReasonUsageLimit

// Waiting for a limit whose reset time the CLI did not give: the first
// wait, doubled each time the limit is still there, never longer than
// limitBackoffMax (and never past --wait-limits in all).
const (
	limitBackoffFirst = time.Minute
	limitBackoffMax   = 30 * time.Minute
	// limitMargin is waited past a reset time the CLI gave (a quarter of
	// the wait when that is less): clocks differ, and claude gives the
	// reset to the second.
	limitMargin = 5 * time.Second
)

// limitContinue is what the agent is told when its session continues
// after the limit reset: the turn that was refused never ran.
const limitContinue = "The usage limit that stopped you has reset. Please continue with the task where you left off."

// limitWait is how long to wait out a limit now (0: do not), and why not
// when it does not: the reset time, else a backoff from how often this
// task met a limit already, all within bound.
func limitWait(lim *agentstream.Limit, now time.Time, bound, waited time.Duration, tries int) (time.Duration, string) {
	if bound <= 0 {
		return 0, ""
	}
	var d time.Duration
	if lim.ResetAt != nil {
		d = lim.ResetAt.Sub(now)
		if d > 0 {
			d += min(limitMargin, d/4)
		} else {
			// Passed already (codex names the minute, not the second; or
			// it passed while the CLI exited): the margin still, as no
			// wait at all would stop the session.
			d = limitMargin
		}
	} else {
		d = limitBackoffFirst << min(tries, 10)
		d = min(d, limitBackoffMax)
	}
	if waited+d > bound {
		if lim.ResetAt != nil {
			return 0, fmt.Sprintf("it resets in %s, beyond --wait-limits %s", shortDuration(d), shortDuration(bound))
		}
		return 0, fmt.Sprintf("it was still there after waiting %s of --wait-limits %s", shortDuration(waited), shortDuration(bound))
	}
	return d, ""
}

// judgeLimit handles a run that stopped on a usage or rate limit: the
// task waits it out and continues its agent's session (--wait-limits),
// or the session stops as limited, to be resumed after the reset.
func (tr *Attempt) judgeLimit(sum agentstream.Summary) (st state.TaskStatus, reason vocab.Reason, msg string, judged bool) {
	host, t, lim := tr.host, tr.task, sum.Limit
	var waited time.Duration
	tries := 0
	if tr.prior != nil {
		waited, tries = tr.prior.limitWaited, tr.prior.limitTries
	}
	now := time.Now()
	wait, why := limitWait(lim, now, tr.cfg.WaitLimits, waited, tries)
	if sum.SessionID == "" && wait > 0 {
		// Nothing to continue: the task starts afresh after the wait,
		// which is as good.
		why = ""
	}
	what := fmt.Sprintf("%s usage limit", t.Adapter)
	if lim.ResetAt != nil {
		what += ", resets " + lim.ResetAt.Local().Format("2006-01-02 15:04 MST")
	}
	ev := events.Limited{Adapter: t.Adapter, Message: lim.Message, Waiting: wait > 0}
	if lim.ResetAt != nil {
		ev.ResetAt = lim.ResetAt.UTC().Format(time.RFC3339)
	}
	if wait > 0 {
		ev.Until = now.Add(wait).UTC().Format(time.RFC3339)
	} else {
		ev.Reason = why
	}
	host.UpdateRecord(t.ID, false, func(rec *state.TaskRecord) { rec.Excerpt = "limited: " + excerpt.OneLine(lim.Message, 300) })
	host.SetLimit(&state.Limit{Adapter: t.Adapter, TaskID: t.ID, ResetAt: lim.ResetAt, Message: lim.Message, Waiting: wait > 0})
	host.Emit(t.ID, ev)
	if wait == 0 {
		msg := "the agent stopped on a " + what
		if why != "" {
			msg += " (" + why + ")"
		}
		host.Park(state.StatusLimited, t.ID, fmt.Sprintf("task %s: %s; continue after it with: vibeteam resume ID", t.ID, msg))
		return state.TaskLimited, LimitReason, msg, true
	}
	host.SetStatus(t.ID, state.TaskLimited, events.TaskStatusChange{Reason: LimitReason})
	timer := time.NewTimer(wait)
	defer timer.Stop()
	select {
	case <-timer.C:
	case <-tr.ctx.Done():
		// Stopped while waiting (Ctrl-C): the session is saved as limited,
		// and resume continues the agent's session.
		host.SetLimit(&state.Limit{Adapter: t.Adapter, TaskID: t.ID, ResetAt: lim.ResetAt, Message: lim.Message})
		host.Park(state.StatusLimited, t.ID, fmt.Sprintf("task %s: stopped while waiting out its %s; continue after it with: vibeteam resume ID", t.ID, what))
		return state.TaskLimited, LimitReason, "stopped while waiting out its " + what, true
	}
	host.SetLimit(nil)
	host.Emit(t.ID, events.LimitResume{Adapter: t.Adapter})
	tr.next = &followUp{limit: true, limitWaited: waited + wait, limitTries: tries + 1}
	return state.TaskLimited, LimitReason, "the agent waited out its " + what + "; its session continues", true
}

// shortDuration is d to the second, without zero minutes and seconds: 5h,
// 1h30m, 45s.
func shortDuration(d time.Duration) string {
	s := d.Round(time.Second).String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}
