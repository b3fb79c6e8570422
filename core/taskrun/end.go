package taskrun

import (
	"fmt"
	"time"

	"github.com/vibeteam/vibeteam/core/events"
	"github.com/vibeteam/vibeteam/core/runner"
	"github.com/vibeteam/vibeteam/core/sandbox"
	"github.com/vibeteam/vibeteam/core/state"
	"github.com/vibeteam/vibeteam/core/vocab"
)

// outcome is how an attempt ended: the status the task ends in (done,
// failed, stopped as pending, limited, waiting for a person), why (its
// record's Reason), what to tell, and its process's result when it ran.
type outcome struct {
	status state.TaskStatus
	reason vocab.Reason
	msg    string
	res    *runner.Result
}

// doneWith is a DONE outcome.
func doneWith(reason vocab.Reason, res runner.Result) outcome {
	return outcome{status: state.TaskDone, reason: reason, res: &res}
}

// stoppedWith is the outcome of a task stopped before it finished: pending,
// to run again on resume.
func stoppedWith(res runner.Result) outcome {
	return outcome{status: state.TaskPending, reason: stoppedReason, msg: "stopped before it finished", res: &res}
}

// waitingWith is the outcome of a task that waits for a person.
func waitingWith(reason vocab.Reason, msg string, res runner.Result) outcome {
	return outcome{status: state.TaskWaitingForUser, reason: reason, msg: msg, res: &res}
}

// failedWith is a failed outcome.
func failedWith(reason vocab.Reason, msg string, res runner.Result) outcome {
	return outcome{status: state.TaskError, reason: reason, msg: msg, res: &res}
}

// end records the attempt's outcome in the task's record, status and
// events, and reports whether it ended DONE, and if not, why.
func (a *Attempt) end(o outcome) (bool, string) {
	host, t := a.host, a.task
	now := time.Now()
	refused := a.refusals.Found()
	switch {
	case refused == "":
	case o.status == state.TaskError:
		// A failure the sandbox caused says so, whatever the agent made
		// of it.
		o.reason, o.msg = sandbox.RefusedReason, sandbox.RefusedReason+": "+refused+" ("+o.msg+")"
	default:
		host.Emit(t.ID, events.Warn{Warning: fmt.Sprintf("task %s: %s", t.ID, refused)})
	}
	if a.log != nil && !a.kept && a.procGone() {
		// Its process is gone: the output is whole, and the record says
		// whether it has a file. (One still exiting, an ACP agent whose
		// turn ended done, may yet write: its log closes after it.)
		_ = a.log.Close()
	}
	host.UpdateRecord(t.ID, false, func(rec *state.TaskRecord) {
		rec.EndedAt = &now
		rec.Reason = o.reason
		rec.Error = o.msg
		rec.SandboxRefused = refused
		if res := o.res; res != nil && res.Err == nil && res.Signal == "" {
			code := res.ExitCode
			rec.ExitCode = &code
		}
		if a.log != nil {
			rec.OutputTail = a.log.Tail()
			rec.LogPath = a.log.Path()
		}
	})
	ev := events.TaskStatusChange{Reason: o.reason, Error: o.msg}
	if o.status == state.TaskDone && o.reason == vocab.ReasonIdle {
		// A DONE that rested on the fallback rule says so.
		ev.Evidence = a.evidence
	}
	if o.res != nil {
		code := o.res.ExitCode
		ev.ExitCode, ev.Signal = &code, o.res.Signal
	}
	host.SetStatus(t.ID, o.status, ev)
	if tr := a.cfg.Tracer; tr != nil {
		tr.TaskEnded(t.ID, host.ReadRecord(t.ID))
	}
	host.Emit(t.ID, events.TaskEnd{Status: o.status, Reason: ev.Reason, Error: ev.Error, Evidence: ev.Evidence, ExitCode: ev.ExitCode, Signal: ev.Signal})
	return o.status == state.TaskDone, o.msg
}

// procGone reports whether the attempt's process has ended.
func (a *Attempt) procGone() bool {
	select {
	case <-a.proc.Done():
		return true
	default:
		return false
	}
}

// judgeExit judges a process that exited by itself, as its exit, queue and
// (for an agent) report say.
func (a *Attempt) judgeExit() outcome {
	res := a.proc.Result()
	if o, judged := a.drv.judge(res); judged {
		return o
	}
	unsent := a.unsent()
	if a.stream != nil {
		if st, reason, msg, judged := a.judgeAgent(res); judged {
			return outcome{status: st, reason: reason, msg: msg, res: &res}
		}
	}
	switch {
	case unsent > 0 && (res.Success() || res.Err == nil && res.Signal == ""):
		// An exit, even 0, that leaves inputs unsent is not what the
		// workflow asked for.
		return failedWith(unsentReason, fmt.Sprintf("exited (code %d) with %d queued input(s) unsent", res.ExitCode, unsent), res)
	case res.Success():
		return doneWith(exitReason, res)
	case res.Err != nil:
		return failedWith(exitReason, res.Err.Error(), res)
	case res.Signal != "":
		return failedWith(signalReason, "killed by signal "+res.Signal, res)
	default:
		return failedWith(exitReason, fmt.Sprintf("exit code %d", res.ExitCode), res)
	}
}
