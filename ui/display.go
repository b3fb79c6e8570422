package ui

import (
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/mattn/go-runewidth"

	"github.com/vibeteam/vibeteam/core"
	"github.com/vibeteam/vibeteam/core/events"
	"github.com/vibeteam/vibeteam/core/state"
	"github.com/vibeteam/vibeteam/core/vocab"
	"github.com/vibeteam/vibeteam/core/workflow"
)

// Display renders core events: a live board redrawn in place on a
// terminal, timestamped status lines otherwise, task output with
// --verbose. Agent output is shown only with --verbose.
//
// Every text that comes from a workflow, a session or an agent goes through
// Safe before it is printed: such text must never drive the terminal.
//
// Its state is its loop's (see loop): the engine's goroutines, the
// prompter and the command only send it messages. Its owner ends it with
// Close.
type Display struct {
	*loop
	streams Streams
	verbose bool
	color   bool
	// width is the terminal's width in columns, 0 when unknown.
	width func() int

	// The loop's own state, from here on.
	stageN int
	// rank is each stage task's place in the file: the board follows it,
	// not the order the tasks happened to start in.
	rank     map[string]int
	tasks    map[string]*taskView
	order    []string // tasks of the current stage, in declared order
	drawn    []int    // display width of each board line on screen
	partial  map[string]string
	finished bool

	// text says what an event means, as `vibeteam log` says it.
	text *eventText

	held     bool     // a prompt owns the terminal: no redraws, lines wait
	heldOut  []string // lines printed while held
	prompter *Prompter
}

// maxHeldLines bounds what is kept back while a prompt owns the terminal.
const maxHeldLines = 2000

type taskView struct {
	id, name, adapter string
	status            vocab.TaskStatus
	started, ended    time.Time
	note              string
}

// NewDisplay starts a display's loop; Close ends it.
func NewDisplay(streams Streams, verbose bool) *Display {
	d := &Display{
		streams: streams,
		verbose: verbose,
		color:   streams.ErrTTY && os.Getenv("NO_COLOR") == "",
		tasks:   map[string]*taskView{},
		partial: map[string]string{},
	}
	d.width = stderrWidth(streams)
	d.text = newEventText(d.paintMark)
	d.loop = startLoop(d.redraw)
	return d
}

// Close ends the display's loop, once every message sent before has been
// applied, and waits for it.
func (d *Display) Close() { d.close() }

// hold stops drawing while a prompt owns the terminal.
func (d *Display) hold() {
	d.call(func() {
		d.clearBoard()
		d.held = true
	})
}

// release prints what was held back and resumes the board.
func (d *Display) release() {
	d.call(func() {
		d.held = false
		for _, l := range d.heldOut {
			fmt.Fprintln(d.streams.Err, l)
		}
		d.heldOut = nil
		d.redraw()
	})
}

// SetPrompter has p ask about the tasks that wait, instead of a line
// saying they do.
func (d *Display) SetPrompter(p *Prompter) {
	d.call(func() { d.prompter = p })
}

// Attach learns the workflow's stages and, at a terminal, starts the
// redraws.
func (d *Display) Attach(ctrl *core.SessionController) {
	sess := ctrl.Session()
	stages, rank := len(sess.WorkflowDefinition.Stages()), taskRanks(sess.WorkflowDefinition)
	d.call(func() {
		d.stageN = stages
		d.text.stages = stages
		d.rank = rank
		if d.streams.ErrTTY {
			d.startTicking(250 * time.Millisecond)
		}
	})
}

// Finish stops the redraws and leaves the final board on screen.
func (d *Display) Finish() {
	d.call(func() {
		d.stopTicking()
		d.redraw()
		d.finished = true
		d.drawn = nil
	})
}

// Note prints a message between board redraws.
func (d *Display) Note(msg string) {
	d.send(func() { d.print(d.stamp() + msg) })
}

// Handle is the orchestrator's subscriber: it hands e to the loop.
func (d *Display) Handle(e core.Event) {
	d.send(func() { d.show(e) })
}

// show renders one event (in the loop).
func (d *Display) show(e core.Event) {
	if p, ok := e.Payload.(events.TaskOut); ok {
		if !d.verbose {
			// Nothing to show: no redraw either. A busy agent's output
			// comes in thousands of pieces, and a redraw of the board for
			// each filled the terminal with copies of it.
			return
		}
		d.mirror(e.Task, p.Text)
		d.redraw()
		return
	}
	board, tell := d.board(e)
	if _, piece := e.Payload.(events.AgentSaid); !piece && d.verbose {
		d.printLines("", d.text.flush())
	}
	if p, ok := e.Payload.(events.InteractionNeeded); ok && d.prompter != nil {
		label := d.labelOf(e.Task)
		tell = func() { d.prompter.enqueue(e, p, label) }
	}
	shown := d.shows(e)
	if shown {
		d.printLines(d.indent(e), d.text.lines(e))
	} else {
		d.text.see(e)
	}
	if board || shown {
		d.redraw()
	}
	// The prompter is told once the event is on screen.
	if tell != nil {
		tell()
	}
}

// board follows the event on the board (its stage, its tasks), and
// reports whether the board changed, and what to tell the prompter.
func (d *Display) board(e core.Event) (changed bool, tell func()) {
	switch p := e.Payload.(type) {
	case events.StageStart:
		d.order = nil
	case events.StageEnd:
		if d.streams.ErrTTY {
			// The stage's final board stays on screen above the next one.
			rows := d.boardRows(d.width())
			d.order = nil
			for _, r := range rows {
				d.print(r.text)
			}
		}
		d.order = nil
	case events.TaskStart:
		tv := d.view(e.Task)
		tv.name, tv.adapter = p.Name, p.Adapter
		tv.started, tv.ended, tv.note = e.Time, time.Time{}, ""
	case events.TaskStatusChange:
		d.view(e.Task).status = p.Status
	case events.TaskEnd:
		tell = d.taskEnd(e, p)
	case events.KeepAlive:
		d.view(e.Task).note = fmt.Sprintf("kept alive, pid %d", p.Pid)
	case events.StepStarted:
		d.order = nil // the board shows the tasks of this step only
	default:
		return false, nil
	}
	return true, tell
}

// taskEnd ends a task on the board; while a person is asked (the
// board hidden), the end of a sibling is said in one line instead: tell
// says it.
func (d *Display) taskEnd(e core.Event, p events.TaskEnd) (tell func()) {
	tv := d.view(e.Task)
	tv.status, tv.ended = p.Status, e.Time
	if p.Reason != "" && p.Reason != vocab.ReasonExit {
		tv.note = string(p.Reason)
	}
	if d.held && d.prompter != nil && p.Reason != vocab.ReasonStopped {
		prompter, line := d.prompter, d.text.taskEndLine(e, p)
		return func() { prompter.note(line, false) }
	}
	return nil
}

// shows reports whether the display prints lines for e. On a terminal
// the board shows the tasks: their starts and ends get no line of their
// own. An agent's doings are shown with --verbose.
func (d *Display) shows(e core.Event) bool {
	switch p := e.Payload.(type) {
	case events.TaskStart, events.TaskEnd, events.KeepAlive:
		return !d.streams.ErrTTY
	case events.StepStarted:
		return p.Type == vocab.StepAgent || p.Type == vocab.StepStage || p.Type == vocab.StepLoop
	case events.InteractionNeeded:
		return d.prompter == nil // else the prompter asks
	case events.SessionStart, events.SessionResume, events.StageStart, events.StageEnd, events.RunError,
		events.Limited, events.LimitResume, events.Warn, events.TemplateWarning, events.Budget,
		events.MergeWait, events.MergeDone, events.MergeQueue, events.GateStart, events.GateEnd, events.MergeBatch,
		events.Iteration, events.StepCompleted, events.Blocked:
		return true
	case events.AgentStart, events.AgentSaid, events.AgentThought, events.ToolCall, events.ToolResult,
		events.Plan, events.Usage, events.AgentFailure, events.Denial, events.Question:
		return d.verbose
	}
	return false
}

// indent indents a grimoire step's lines by their depth in loops,
// and the lines of an event inside a step under it.
func (d *Display) indent(e core.Event) string {
	switch p := e.Payload.(type) {
	case events.StepStarted:
		return indentOf(p.Address)
	case events.StepCompleted:
		return indentOf(p.Address)
	case events.Iteration:
		return indentOf(p.Address) + "  "
	}
	return ""
}

// printLines prints an event's lines as one message: the first
// after the time stamp and indent, the ones under it after the indent.
func (d *Display) printLines(indent string, lines []string) {
	if len(lines) == 0 {
		return
	}
	msg := d.stamp() + indent + lines[0]
	for _, l := range lines[1:] {
		msg += "\n" + indent + l
	}
	d.print(msg)
}

// indentOf indents a grimoire step's line by its depth in loops.
func indentOf(addr string) string {
	return strings.Repeat("  ", strings.Count(addr, "/"))
}

// taskRanks is each stage task's place in its stage, as the file has it.
func taskRanks(def *workflow.Definition) map[string]int {
	rank := map[string]int{}
	for _, st := range def.Stages() {
		for i, t := range st.Tasks {
			rank[t.ID] = i
		}
	}
	return rank
}

func (d *Display) view(id string) *taskView {
	tv := d.tasks[id]
	if tv == nil {
		tv = &taskView{id: id, name: id, status: vocab.TaskPending}
		d.tasks[id] = tv
	}
	found := false
	for _, o := range d.order {
		if o == id {
			found = true
			break
		}
	}
	if !found {
		d.order = append(d.order, id)
		// In the file's order; a task the file does not rank (a stage
		// step's) keeps its place after the ranked ones.
		rank := func(id string) int {
			if r, ok := d.rank[id]; ok {
				return r
			}
			return len(d.rank)
		}
		slices.SortStableFunc(d.order, func(a, b string) int { return rank(a) - rank(b) })
	}
	return tv
}

func (d *Display) nameOf(id string) string {
	if tv := d.tasks[id]; tv != nil && tv.name != "" {
		return tv.name
	}
	return id
}

// labelOf names a task in messages, safe to print: "Name (id)", or "id".
func (d *Display) labelOf(id string) string { return TaskLabel(d.nameOf(id), id) }

// TaskLabel is how every message names a task: by its name and, when that
// differs, its id, the key of `show` and of the files under .vibeteam/.
func TaskLabel(name, id string) string {
	if name == "" || name == id {
		return Safe(id)
	}
	return Safe(name) + " (" + Safe(id) + ")"
}

// mirror writes complete lines of a task's output, prefixed by its name.
func (d *Display) mirror(taskID, text string) {
	buf := d.partial[taskID] + text
	lines := strings.Split(buf, "\n")
	d.partial[taskID] = lines[len(lines)-1]
	for _, l := range lines[:len(lines)-1] {
		d.print(d.paint("2", "["+Safe(d.nameOf(taskID))+"]") + " " + SafeLine(strings.TrimRight(l, "\r")))
	}
}

// print prints a permanent line above the live board.
func (d *Display) print(line string) {
	if d.held {
		// Bounded: --verbose output of busy tasks must not pile up while
		// a person takes their time.
		if len(d.heldOut) >= maxHeldLines {
			d.heldOut = append(d.heldOut[:0], d.heldOut[len(d.heldOut)-maxHeldLines/2:]...)
		}
		d.heldOut = append(d.heldOut, line)
		return
	}
	d.clearBoard()
	fmt.Fprintln(d.streams.Err, line)
}

func (d *Display) stamp() string {
	if d.streams.ErrTTY {
		return ""
	}
	return time.Now().Format("15:04:05.000") + " "
}

// paintMark is a status's glyph in its colour.
func (d *Display) paintMark(m mark) string {
	if m.colour == "" {
		return m.glyph
	}
	return d.paint(m.colour, m.glyph)
}

func (d *Display) paint(code, s string) string {
	if !d.color {
		return s
	}
	return "\x1b[" + code + "m" + s + "\x1b[0m"
}

// clearBoard erases the board: up to its first line, then to the end
// of the screen.
func (d *Display) clearBoard() {
	if d.streams.ErrTTY {
		eraseBoard(d.streams.Err, d.drawn, d.width())
	}
	d.drawn = nil
}

// redraw draws one line per task of the current stage, in place.
func (d *Display) redraw() {
	if !d.streams.ErrTTY || d.finished || d.held || len(d.order) == 0 {
		return
	}
	d.clearBoard()
	var b strings.Builder
	for _, r := range d.boardRows(d.width()) {
		b.WriteString(r.text + "\n")
		d.drawn = append(d.drawn, r.width)
	}
	// One write: a redraw is never seen half done.
	_, _ = io.WriteString(d.streams.Err, b.String())
}

// boardRow is one board line and its width in columns (its colour codes
// take none).
type boardRow struct {
	text  string
	width int
}

// boardRows is one line per task of the current stage, fitted to a
// terminal of cols columns (0: unknown, 80 assumed). A line is kept
// shorter than the terminal: one that filled it would wrap, and each redraw
// would then leave a copy behind. Names take the room there is; when it
// runs short, what gives way is the adapter, then the name (down to 10
// columns), then the end of the line.
func (d *Display) boardRows(cols int) []boardRow {
	if cols <= 0 {
		cols = 80
	}
	avail := cols - 1
	type cells struct{ glyph, name, adapter, status, elapsed string }
	var all []cells
	nameW, adW, statusW := 0, 0, 0
	for _, id := range d.order {
		tv := d.tasks[id]
		c := cells{glyph: d.paintMark(taskMark(tv.status)), name: TaskLabel(tv.name, id), adapter: Safe(tv.adapter), status: Safe(tv.status)}
		if !tv.started.IsZero() {
			end := tv.ended
			if end.IsZero() {
				end = time.Now()
			}
			c.elapsed = end.Sub(tv.started).Round(100 * time.Millisecond).String()
		}
		if tv.note != "" {
			c.status += " (" + Safe(tv.note) + ")"
		}
		nameW = max(nameW, runewidth.StringWidth(c.name))
		adW = max(adW, runewidth.StringWidth(c.adapter))
		statusW = max(statusW, runewidth.StringWidth(c.status))
		all = append(all, c)
	}
	adW, statusW = min(adW, 12), min(statusW, 40)
	const lead, elapsedW = 4, 8 // "  ● ", " 12m3.4s"
	total := func() int {
		n := lead + nameW + 2 + statusW + elapsedW
		if adW > 0 {
			n += adW + 2
		}
		return n
	}
	if total() > avail && lead+10+2+statusW+elapsedW+adW+2 > avail {
		adW = 0
	}
	if over := total() - avail; over > 0 {
		nameW = max(10, nameW-over)
	}
	rows := make([]boardRow, 0, len(all))
	for _, c := range all {
		line := Fill(c.name, nameW) + "  "
		if adW > 0 {
			line += Fill(c.adapter, adW) + "  "
		}
		line += Fill(c.status, statusW)
		if c.elapsed != "" {
			line += " " + c.elapsed
		}
		line = Fit(strings.TrimRight(line, " "), avail-lead)
		rows = append(rows, boardRow{text: "  " + c.glyph + " " + line, width: lead + runewidth.StringWidth(line)})
	}
	return rows
}

// SessionTaskLabel names a task of sess as TaskLabel does.
func SessionTaskLabel(sess *state.Session, id string) string {
	if sess.WorkflowDefinition != nil {
		for _, st := range sess.WorkflowDefinition.Stages() {
			for _, t := range st.Tasks {
				if t.ID == id {
					return TaskLabel(t.DisplayName(), id)
				}
			}
		}
	}
	return Safe(id)
}
