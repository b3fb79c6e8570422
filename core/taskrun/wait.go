package taskrun

import (
	"context"
	"fmt"
	"time"

	"github.com/vibeteam/vibeteam/core/events"
	"github.com/vibeteam/vibeteam/core/state"
	"github.com/vibeteam/vibeteam/core/vocab"
)

// limits are an attempt's time limits: its timeout and its inactivity
// limit, counted from its start and from its last output.
type limits struct {
	start      time.Time
	timeoutAt  time.Time // zero: none
	inactivity time.Duration
	lastOutput func() int64 // when the last output came (UnixNano), 0 before any
}

func (a *Attempt) limits(inactivity time.Duration) limits {
	l := limits{start: time.Now(), inactivity: inactivity, lastOutput: a.lastOutputAt.Load}
	if a.task.Timeout > 0 {
		l.timeoutAt = l.start.Add(time.Duration(a.task.Timeout))
	}
	return l
}

// quietUntil is when the inactivity limit is reached, output aside.
func (l limits) quietUntil() time.Time {
	last := l.start
	if at := l.lastOutput(); at > last.UnixNano() {
		last = time.Unix(0, at)
	}
	return last.Add(l.inactivity)
}

// nearest is the first limit to come (zero: none).
func (l limits) nearest() time.Time {
	deadline := l.timeoutAt
	if l.inactivity > 0 && (deadline.IsZero() || l.quietUntil().Before(deadline)) {
		deadline = l.quietUntil()
	}
	return deadline
}

// timers are the channels of the limits' timers; stop stops them.
func (l limits) timers() (timeout, idle <-chan time.Time, idleTimer *time.Timer, stop func()) {
	var tm *time.Timer
	if !l.timeoutAt.IsZero() {
		tm = time.NewTimer(time.Until(l.timeoutAt))
		timeout = tm.C
	}
	if l.inactivity > 0 {
		idleTimer = time.NewTimer(time.Until(l.quietUntil()))
		idle = idleTimer.C
	}
	return timeout, idle, idleTimer, func() {
		if tm != nil {
			tm.Stop()
		}
		if idleTimer != nil {
			idleTimer.Stop()
		}
	}
}

// wait blocks until the attempt ends: its process's exit, its completion,
// a limit, a budget spent, or the run's end (ctx).
func (a *Attempt) wait(ctx context.Context, inactivity time.Duration, fed <-chan struct{}) outcome {
	lim := a.limits(inactivity)
	// The process runs: what the run had to say until now goes out, off
	// the path from its start to its end.
	a.host.FlushEvents()
	// Its end, most often the first thing to come: watched here, and the
	// loop has the rest once anything else comes.
	if a.drv.watchFirst() && WatchHere(ctx, a.proc, a.wake, lim.nearest()) {
		return a.exited(fed)
	}
	return a.supervise(ctx, lim, fed)
}

// supervise is the wait loop: one case for each thing that may come, each
// handled by a function of its own.
func (a *Attempt) supervise(ctx context.Context, lim limits, fed <-chan struct{}) outcome {
	timeout, idle, idleTimer, stop := lim.timers()
	defer stop()
	signal := a.drv.signal()
	for {
		select {
		case <-signal:
			if o, ended := a.drv.onSignal(); ended {
				return o
			}
		case <-a.proc.Done():
			return a.exited(fed)
		case <-a.completed:
			return a.onCompleted()
		case <-timeout:
			return a.stopFailing(timeoutReason, fmt.Sprintf("timed out after %s", time.Duration(a.task.Timeout)))
		case <-idle:
			if a.drv.busy() {
				// Silence while a person is asked, or has the terminal, is
				// not inactivity.
				idleTimer.Reset(lim.inactivity)
				continue
			}
			return a.stopFailing(inactivityReason, fmt.Sprintf("no output for %s", lim.inactivity))
		case <-a.lastOutput:
			if idleTimer != nil {
				idleTimer.Reset(lim.inactivity)
			}
		case what := <-a.overBudget:
			if a.endedOnItsOwn() {
				continue // judged as it ended; the next agent does not start
			}
			return a.stopForBudget(what)
		case <-ctx.Done():
			return a.interrupted()
		}
	}
}

// exited is the end of a process that exited by itself.
func (a *Attempt) exited(fed <-chan struct{}) outcome {
	<-fed // a writer of its input ends once the process is gone
	return a.judgeExit()
}

// onCompleted ends a task declared DONE before its process exited: the
// process is stopped, or kept (keepAlive) when the task completed itself.
func (a *Attempt) onCompleted() outcome {
	if a.task.KeepAlive && a.completeCause != completedByUser {
		a.kept = true
		a.host.Keep(a)
		a.host.Emit(a.task.ID, events.KeepAlive{Pid: a.proc.Pid()})
		return outcome{status: state.TaskDone, reason: "kept_alive"}
	}
	a.proc.Stop(a.cfg.Grace)
	return outcome{status: state.TaskDone, reason: a.completeCause}
}

// stopFailing stops the process for a limit reached: the task fails, and
// is named its stage's failure before its process is gone.
func (a *Attempt) stopFailing(reason vocab.Reason, msg string) outcome {
	a.failing(msg)
	a.proc.Stop(a.cfg.Grace)
	return failedWith(reason, msg, a.proc.Result())
}

// interrupted ends an attempt whose run ends (Ctrl-C, a failure elsewhere,
// the session parked): stopped, not failed, and never DONE even if it
// exits 0 on SIGTERM: it runs again on resume.
func (a *Attempt) interrupted() outcome {
	select {
	case <-a.proc.Done():
		// It had ended on its own just before: that is its result.
		if res := a.proc.Result(); res.Success() {
			return doneWith(exitReason, res)
		}
	default:
	}
	if c, ok := a.drv.(interface{ cancelTurn() }); ok {
		// A protocol's turn is cancelled first (ACP: session/cancel,
		// its pending permissions answered, a bounded wait).
		c.cancelTurn()
	}
	a.proc.Stop(a.cfg.Grace)
	res := a.proc.Result()
	if o, ok := a.drv.interrupted(a.host.Parked(), res); ok {
		return o
	}
	return stoppedWith(res)
}
