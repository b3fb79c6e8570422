package ui

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/vibeteam/vibeteam/core/events"
	"github.com/vibeteam/vibeteam/core/state"
	"github.com/vibeteam/vibeteam/core/vocab"
)

// eventText says what an event means, in a line and the lines under it:
// the live display and `vibeteam log` print an event with it, so both say
// the same thing in the same words. The lines come without the time
// column and the indent, which are each printer's own; the lines under
// the first carry their indent relative to it. All text from an event goes
// through safe.
type eventText struct {
	// paint draws a status mark: in colour on a terminal, plain in a log.
	paint func(mark) string
	// stages is how many stages the workflow has (0: not known, as in a
	// log, where a stage line then says only its number).
	stages int
	tasks  map[string]*taskSeen
	// said is a streamed agent message per task, gathered until its end
	// (the next event of any other kind) so it is one line, not a line a
	// piece.
	said  map[string]*strings.Builder
	order []string // tasks with a message gathered, in the order they began
}

// taskSeen is what the events said of a task so far: its name and when its
// run started.
type taskSeen struct {
	name    string
	started time.Time
}

func newEventText(paint func(mark) string) *eventText {
	return &eventText{paint: paint, tasks: map[string]*taskSeen{}, said: map[string]*strings.Builder{}}
}

// plainMark is a mark as a log prints it: its glyph.
func plainMark(m mark) string { return m.glyph }

func (x *eventText) task(id string) *taskSeen {
	t := x.tasks[id]
	if t == nil {
		t = &taskSeen{}
		x.tasks[id] = t
	}
	return t
}

// label names a task in a line, safe to print: "Name (id)", or "id".
func (x *eventText) label(id string) string {
	if t := x.tasks[id]; t != nil {
		return TaskLabel(t.name, id)
	}
	return Safe(id)
}

// see learns what an event says of its task (its name, when it started),
// whether it is printed or not.
func (x *eventText) see(e state.Event) {
	if p, ok := e.Payload.(events.TaskStart); ok {
		t := x.task(e.Task)
		if p.Name != "" {
			t.name = p.Name
		}
		t.started = e.Time
	}
}

// flush is the agent messages gathered so far, each a line, and forgets
// them.
func (x *eventText) flush() []string {
	var out []string
	for _, id := range x.order {
		out = append(out, agentSays(x.label(id), x.said[id].String())...)
	}
	clear(x.said)
	x.order = x.order[:0]
	return out
}

// lines is what e says; nil when it says nothing a person reads. A streamed
// agent message is held until its end: flush gives it.
func (x *eventText) lines(e state.Event) []string {
	x.see(e)
	if out, ok := x.sessionLines(e); ok {
		return out
	}
	if out, ok := x.taskLines(e); ok {
		return out
	}
	if out, ok := x.agentLines(e); ok {
		return out
	}
	if out, ok := x.stepLines(e); ok {
		return out
	}
	return x.mergeLines(e)
}

// sessionLines are the lines of a session's and a stage's events, and of
// the warnings and errors of the run.
func (x *eventText) sessionLines(e state.Event) ([]string, bool) {
	switch p := e.Payload.(type) {
	case events.SessionStart:
		return []string{sessionLine(e.Session, "started", p.Workflow)}, true
	case events.SessionResume:
		return []string{sessionLine(e.Session, "resumed", p.Workflow)}, true
	case events.SessionEnd:
		msg := fmt.Sprintf("%s session %s finished: %s", x.paint(sessionMark(p.Status)), Safe(e.Session), Safe(p.Status))
		var why []string
		if p.FailedTask != "" {
			why = append(why, "task "+x.label(p.FailedTask))
		}
		if p.Reason != "" {
			why = append(why, Safe(p.Reason))
		}
		if len(why) > 0 {
			msg += " (" + strings.Join(why, ": ") + ")"
		}
		return []string{msg}, true
	case events.SessionStateChange:
		// Derived from the task statuses, which are shown: it would say
		// IDLE while a task still runs (--json keeps it).
		return nil, true
	case events.RunError:
		return []string{"error: " + Safe(p.Error)}, true
	case events.Warn:
		return []string{"warning: " + Safe(p.Warning)}, true
	case events.TemplateWarning:
		msg := "warning"
		if p.Step != "" {
			msg += " (" + Safe(p.Step) + ")"
		}
		return []string{msg + ": " + Safe(p.Warning)}, true
	case events.StageStart:
		of := ""
		if x.stages > 0 {
			of = "/" + strconv.Itoa(x.stages)
		}
		return []string{fmt.Sprintf("stage %d%s %s: %d task(s)", p.Index+1, of, Safe(p.Stage), p.Tasks)}, true
	case events.StageEnd:
		return []string{x.paint(taskMark(vocab.TaskDone)) + " stage " + Safe(p.Stage) + " done"}, true
	case events.Limited:
		return []string{x.paint(stepMark(vocab.StepStopped)) + " " + limitEventLine(p, e.Time)}, true
	case events.LimitResume:
		return []string{Safe(p.Adapter) + " usage limit reset: the agent's session continues"}, true
	case events.Budget:
		return []string{x.paint(stepMark(vocab.StepBlocked)) + " budget spent: " + Safe(p.What)}, true
	}
	return nil, false
}

func sessionLine(id, verb, workflow string) string {
	msg := fmt.Sprintf("session %s %s", Safe(id), verb)
	if workflow != "" {
		msg += ": workflow " + Safe(workflow)
	}
	return msg
}

// taskLines are the lines of a task's process: its start, its end, what
// it was sent and said, and a person it needs.
func (x *eventText) taskLines(e state.Event) ([]string, bool) {
	task := x.label(e.Task)
	switch p := e.Payload.(type) {
	case events.TaskStart:
		var about []string
		for _, v := range []string{p.Adapter, p.Mode} {
			if v != "" {
				about = append(about, Safe(v))
			}
		}
		about = append(about, fmt.Sprintf("pid %d", p.Pid))
		return []string{"task " + task + " started (" + strings.Join(about, ", ") + ")"}, true
	case events.TaskStatusChange:
		return x.statusLines(task, p), true
	case events.TaskEnd:
		return []string{x.taskEndLine(e, p)}, true
	case events.TaskIn:
		msg := "task " + task + " ← "
		if p.Source != "" {
			msg += Safe(p.Source) + ": "
		}
		return []string{msg + Safe(p.Text)}, true
	case events.TaskOut:
		var out []string
		for _, l := range strings.Split(strings.TrimSuffix(p.Text, "\n"), "\n") {
			out = append(out, "task "+task+" | "+SafeLine(l))
		}
		return out, true
	case events.InteractionNeeded:
		what := Safe(p.State)
		if p.Why != "" {
			what += ": " + Safe(p.Why)
		}
		out := []string{"task " + task + " needs a person (" + what + ")"}
		if p.Excerpt != "" {
			for _, l := range strings.Split(p.Excerpt, "\n") {
				out = append(out, "  | "+SafeLine(l))
			}
		}
		return out, true
	case events.AutoAct:
		msg := "task " + task + ": auto-approve answered " + Safe(p.State)
		if p.Action != "" {
			msg += " with " + Safe(p.Action)
		}
		return []string{msg}, true
	case events.StateMatch:
		// A screen no state of the adapter matches has no name: nothing to say.
		if p.State == "" {
			return nil, true
		}
		return []string{"task " + task + ": screen state " + Safe(p.State)}, true
	case events.QueueSend:
		return []string{fmt.Sprintf("task %s: sent a queued input (%d left)", task, p.Remaining)}, true
	case events.KeepAlive:
		return []string{fmt.Sprintf("task %s DONE, process kept alive (pid %d)", task, p.Pid)}, true
	case events.OrphanStop:
		return []string{fmt.Sprintf("task %s: stopped a process left running (pid %d)", task, p.Pid)}, true
	}
	return nil, false
}

// statusLines: the end of a run (DONE, ERROR, back to PENDING when
// stopped) is said by the task_finished that always follows, and a plain
// RUNNING by task_started: only the changes in between (waiting for a
// person, answered) get a line of their own.
func (x *eventText) statusLines(task string, p events.TaskStatusChange) []string {
	switch p.Status {
	case vocab.TaskDone, vocab.TaskError:
		return nil
	case vocab.TaskRunning:
		if p.Reason == "" {
			return nil
		}
	case vocab.TaskPending:
		if p.Reason == vocab.ReasonStopped {
			return nil
		}
	}
	msg := "task " + task + ": " + Safe(p.Status)
	if p.Reason != "" {
		msg += " (" + Safe(p.Reason) + ")"
	}
	return []string{msg}
}

// taskEndLine is a task's end: "✗ task Coder (a) ERROR (exit 1) after 6s:
// exit code 1", or a stopped task's "■ task b stopped (it runs again on
// resume)".
func (x *eventText) taskEndLine(e state.Event, p events.TaskEnd) string {
	task := x.label(e.Task)
	msg := fmt.Sprintf("%s task %s %s", x.paint(taskMark(p.Status)), task, Safe(p.Status))
	stopped := p.Reason == vocab.ReasonStopped
	if stopped {
		msg = fmt.Sprintf("%s task %s stopped (it runs again on resume)", x.paint(stepMark(vocab.StepStopped)), task)
	}
	var about []string
	if p.ExitCode != nil && *p.ExitCode != -1 && !stopped {
		about = append(about, fmt.Sprintf("exit %d", *p.ExitCode))
	}
	if p.Signal != "" {
		about = append(about, Safe(p.Signal))
	}
	if p.Reason != "" && p.Reason != vocab.ReasonExit && !stopped {
		about = append(about, Safe(p.Reason))
	}
	if len(about) > 0 {
		msg += " (" + strings.Join(about, ", ") + ")"
	}
	if t := x.tasks[e.Task]; t != nil && !t.started.IsZero() && !e.Time.IsZero() {
		msg += " after " + logDuration(e.Time.Sub(t.started))
	}
	if p.Error != "" {
		msg += ": " + Safe(p.Error)
	}
	return msg
}

// mergeLines are the lines of a bead's merge: its review, the queue, the
// gate and the merge itself; and of any event this version does not know.
func (x *eventText) mergeLines(e state.Event) []string {
	switch p := e.Payload.(type) {
	case events.MergeWait:
		return []string{fmt.Sprintf("%s merge of %s into %s waits for a review", x.paint(stepMark(vocab.StepStopped)), Safe(p.Branch), Safe(p.Base))}
	case events.MergeDone:
		return []string{fmt.Sprintf("%s merged %s into %s (%s)", x.paint(stepMark(vocab.StepDone)), Safe(p.Branch), Safe(p.Base), Safe(p.Commit))}
	case events.MergeQueue:
		return []string{x.paint(stepMark(vocab.StepStopped)) + " " + queuedLine(p)}
	case events.GateStart:
		return []string{"▸ " + gateStartLine(p)}
	case events.MergeBatch:
		return []string{"▸ " + batchLine(p)}
	case events.GateEnd:
		line, green := gateEndLine(p)
		m := stepMark(vocab.StepFailed)
		if green {
			m = stepMark(vocab.StepDone)
		}
		out := []string{x.paint(m) + " " + line}
		if p.LogPath != "" && !green {
			out = append(out, "    log: "+Safe(p.LogPath))
		}
		return out
	}
	return []string{logGeneric(e)}
}
