package report

import (
	"strings"
	"time"

	"github.com/vibeteam/vibeteam/core/events"
	"github.com/vibeteam/vibeteam/core/state"
	"github.com/vibeteam/vibeteam/core/vocab"
)

// folder turns one session's events into its rows' tracks: the session's
// own track (a bead's row, or a session's first row) and, for a single
// session, one track per step (iterations on one row) or stage task.
type folder struct {
	session *track
	perStep bool // route step and task events to rows of their own
	rows    map[string]*track
	order   []string // row keys, as they first appeared
	labels  map[string]rowInfo
	// stepStart is when the step at each address last started, and
	// taskStart when each task did: a failed one's bar begins there.
	stepStart map[string]time.Time
	taskStart map[string]time.Time
	models    map[string]string // task id → the model its agent said it runs
	merge     string            // the last merge commit
	steps     []Slow            // every step run that ended, for the slowest
}

type rowInfo struct {
	label, detail string
	depth         int
	task          bool
}

func newFolder(perStep bool) *folder {
	return &folder{session: newTrack(), perStep: perStep, rows: map[string]*track{}, labels: map[string]rowInfo{},
		stepStart: map[string]time.Time{}, taskStart: map[string]time.Time{}, models: map[string]string{}}
}

// stepKey is a step's row: its address without iteration numbers ("2.3/0"
// is step 0 of iteration 3 of step 2: its row is "2/0").
func stepKey(addr string) string {
	parts := strings.Split(addr, "/")
	for i, p := range parts {
		parts[i], _, _ = strings.Cut(p, ".")
	}
	return strings.Join(parts, "/")
}

// taskAddress is the address of an agent step's task ("impl@2.1-0" →
// "2.1/0"); false for a stage's task.
func taskAddress(task string) (string, bool) {
	at := strings.LastIndexByte(task, '@')
	if at < 0 {
		return "", false
	}
	addr := strings.ReplaceAll(task[at+1:], "-", "/")
	for _, c := range addr {
		if (c < '0' || c > '9') && c != '.' && c != '/' {
			return "", false
		}
	}
	return addr, addr != ""
}

// row is the track an event about a step at addr, or a task, goes to;
// the session's own when rows are not per step.
func (f *folder) row(addr, task string) *track {
	if !f.perStep {
		return f.session
	}
	key := ""
	switch {
	case addr != "":
		key = stepKey(addr)
	case task != "":
		if a, ok := taskAddress(task); ok {
			key = stepKey(a)
		} else {
			key = "task:" + task
			if _, ok := f.labels[key]; !ok {
				f.labels[key] = rowInfo{label: task, task: true}
			}
		}
	default:
		return f.session
	}
	t := f.rows[key]
	if t == nil {
		t = newTrack()
		f.rows[key] = t
		f.order = append(f.order, key)
	}
	return t
}

// fold applies every event in order, then closes what is left open at
// end (the run's end, or now for a run still going).
func (f *folder) fold(evs []state.Event) {
	for _, e := range evs {
		f.event(e)
	}
}

func (f *folder) event(e state.Event) {
	at := e.Time
	f.session.seen(at)
	switch p := e.Payload.(type) {
	case events.SessionStart, events.SessionResume:
		for _, s := range []State{Waiting, Limited, Blocked, Failed} {
			f.session.end(s, at)
		}
		f.session.begin(Running, at)
	case events.SessionEnd:
		f.sessionEnd(p, at)
	case events.StepStarted:
		f.stepStart[p.Address] = at
		t := f.row(p.Address, "")
		f.label(p.Address, p.Name, string(p.Type))
		if t != f.session {
			t.begin(Running, at)
		}
	case events.StepCompleted:
		f.stepCompleted(p, at)
	case events.TaskStart:
		f.taskStart[e.Task] = at
		t := f.row("", e.Task)
		if info, ok := f.labels["task:"+e.Task]; ok && p.Name != "" {
			info.label, info.detail = p.Name, p.Adapter
			f.labels["task:"+e.Task] = info
		}
		if t != f.session {
			t.begin(Running, at)
		}
	case events.TaskStatusChange:
		t := f.row("", e.Task)
		if p.Status == state.TaskWaitingForUser {
			t.begin(Waiting, at)
		} else {
			t.end(Waiting, at)
		}
	case events.InteractionNeeded:
		f.row("", e.Task).begin(Waiting, at)
	case events.TaskEnd:
		f.taskEnd(e.Task, p, at)
	case events.AgentStart:
		if p.Model != "" {
			f.models[e.Task] = p.Model
		}
	case events.Limited:
		if p.Waiting {
			f.row("", e.Task).begin(Limited, at)
		}
	case events.LimitResume:
		f.row("", e.Task).end(Limited, at)
	default:
		f.mergeEvent(e.Payload, at)
	}
}

// mergeEvent folds a merge step's events: its review, its wait for the
// merge queue, its gate runs, the merge itself.
func (f *folder) mergeEvent(p events.Payload, at time.Time) {
	switch p := p.(type) {
	case events.MergeWait:
		f.row(p.Address, "").begin(Waiting, at)
	case events.MergeQueue:
		f.row(p.Address, "").begin(Queued, at)
	case events.GateStart:
		t := f.row(p.Address, "")
		t.end(Queued, at)
		t.begin(Gating, at)
		t.gateAt, t.gateCmd = at, p.Command
	case events.GateEnd:
		t := f.row(p.Address, "")
		t.end(Gating, at)
		start := t.gateAt
		if start.IsZero() || start.After(at) {
			start = at.Add(-time.Duration(p.DurationMS) * time.Millisecond)
		}
		kind := Red
		switch {
		case strings.Contains(p.Reason, "bisect"):
			kind = Bisected
		case p.Green:
			kind = Green
		}
		t.marks = append(t.marks, Mark{Kind: kind, Start: start, End: at, Command: t.gateCmd, Commit: p.Commit, Exit: p.ExitCode})
		t.gateAt, t.gateCmd = time.Time{}, ""
	case events.MergeDone:
		t := f.row(p.Address, "")
		t.end(Queued, at)
		t.end(Waiting, at)
		t.begin(Merged, at)
		f.merge = p.Commit
	}
}

func (f *folder) sessionEnd(p events.SessionEnd, at time.Time) {
	for _, t := range f.rows {
		t.endAll(at)
	}
	f.session.endAll(at)
	switch state.Status(p.Status) {
	case state.StatusWaiting, state.StatusPendingMerge:
		f.session.begin(Waiting, at)
	case state.StatusLimited:
		f.session.begin(Limited, at)
	case state.StatusBlocked:
		f.session.begin(Blocked, at)
	case state.StatusFailed:
		f.session.begin(Failed, at)
	}
}

func (f *folder) stepCompleted(p events.StepCompleted, at time.Time) {
	t := f.row(p.Address, "")
	f.label(p.Address, p.Name, string(p.Type))
	if t != f.session {
		for _, s := range []State{Running, Waiting, Queued, Merged} {
			t.end(s, at)
		}
	}
	start, ok := f.stepStart[p.Address]
	if !ok {
		start = at.Add(-time.Duration(p.DurationMS) * time.Millisecond)
	}
	// A step's row shows the step that failed in the colour of its end; a
	// bead's row goes on showing what it did, and its colour after the
	// session's end says how it ended.
	switch {
	case t == f.session:
	case p.Status == vocab.StepFailed:
		t.add(Failed, start, at)
	case p.Status == vocab.StepBlocked:
		t.add(Blocked, start, at)
	}
	t.seen(at)
	if p.Status != vocab.StepSkipped && p.Type != vocab.StepLoop && p.Type != vocab.StepStage {
		f.steps = append(f.steps, Slow{What: "step", Name: p.Name, Duration: time.Duration(p.DurationMS) * time.Millisecond})
	}
}

func (f *folder) taskEnd(task string, p events.TaskEnd, at time.Time) {
	t := f.row("", task)
	t.end(Waiting, at)
	t.end(Limited, at)
	if _, step := taskAddress(task); step || t == f.session {
		return
	}
	// A stage's task: its row is its own.
	t.end(Running, at)
	if start, ok := f.taskStart[task]; ok {
		if p.Status == state.TaskError {
			t.add(Failed, start, at)
		}
		f.steps = append(f.steps, Slow{What: "task", Name: f.labels["task:"+task].label, Duration: at.Sub(start)})
	}
}

// label names the row of the step at addr by the step.
func (f *folder) label(addr, name, typ string) {
	if !f.perStep {
		return
	}
	key := stepKey(addr)
	if _, ok := f.labels[key]; !ok {
		f.labels[key] = rowInfo{label: name, detail: typ, depth: strings.Count(key, "/")}
	}
}

// finish closes every stretch still open at end.
func (f *folder) finish(end time.Time) {
	for _, t := range f.rows {
		t.endAll(end)
	}
	f.session.endAll(end)
}
