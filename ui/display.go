package cli

import (
	"encoding/json"
	"fmt"
	"github.com/vibeteam/vibeteam/core/events"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/mattn/go-runewidth"

	"github.com/vibeteam/vibeteam/core"
	"github.com/vibeteam/vibeteam/core/state"
	"github.com/vibeteam/vibeteam/core/vocab"
	"github.com/vibeteam/vibeteam/core/workflow"
)

// display renders core events: a live board redrawn in place on a terminal,
// timestamped status lines otherwise, JSONL with --events, task output with
// --verbose. Agent output is shown only with --verbose.
//
// Every text that comes from a workflow, a session or an agent goes through
// safe before it is printed: such text must never drive the terminal.
type display struct {
	streams IO
	verbose bool
	color   bool
	// width is the terminal's width in columns, 0 when unknown.
	width func() int

	events      io.Writer
	eventsClose func() error

	mu     sync.Mutex
	stageN int
	// rank is each stage task's place in the file: the board follows it,
	// not the order the tasks happened to start in.
	rank      map[string]int
	tasks     map[string]*taskView
	order     []string // tasks of the current stage, in declared order
	drawn     []int    // display width of each board line on screen
	partial   map[string]string
	finished  bool
	tickStop  chan struct{}
	tickDone  chan struct{}
	sessionID string

	// text says what an event means, as `vibeteam log` says it.
	text *eventText

	held     bool     // a prompt owns the terminal: no redraws, lines wait
	heldOut  []string // lines printed while held
	prompter *prompter
}

// hold stops drawing while a prompt owns the terminal.
func (d *display) hold() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.clearBoardLocked()
	d.held = true
}

// release prints what was held back and resumes the board.
func (d *display) release() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.held = false
	for _, l := range d.heldOut {
		fmt.Fprintln(d.streams.Err, l)
	}
	d.heldOut = nil
	d.redrawLocked()
}

// maxHeldLines bounds what is kept back while a prompt owns the terminal.
const maxHeldLines = 2000

type taskView struct {
	id, name, adapter string
	status            vocab.TaskStatus
	started, ended    time.Time
	note              string
}

func newDisplay(streams IO, verbose bool, events string) (*display, error) {
	d := &display{
		streams: streams,
		verbose: verbose,
		color:   streams.ErrTTY && os.Getenv("NO_COLOR") == "",
		tasks:   map[string]*taskView{},
		partial: map[string]string{},
	}
	d.width = stderrWidth(streams)
	d.text = newEventText(d.paintMark)
	var err error
	if d.events, d.eventsClose, err = openEvents(streams, events); err != nil {
		return nil, err
	}
	return d, nil
}

// attach learns the workflow's stages and starts the redraw ticker.
func (d *display) attach(ctrl *core.SessionController) {
	d.mu.Lock()
	sess := ctrl.Session()
	d.sessionID = sess.ID
	d.stageN = len(sess.WorkflowDefinition.Stages())
	d.text.stages = d.stageN
	d.rank = taskRanks(sess.WorkflowDefinition)
	d.mu.Unlock()
	if d.streams.ErrTTY {
		d.tickStop, d.tickDone = make(chan struct{}), make(chan struct{})
		go d.tick()
	}
}

// tick redraws the board for its elapsed times, and at once when the
// terminal is resized, so its lines are cut to the new width before the
// terminal wraps them.
func (d *display) tick() {
	redrawEvery(250*time.Millisecond, func() {
		d.mu.Lock()
		d.redrawLocked()
		d.mu.Unlock()
	}, d.tickStop, d.tickDone)
}

// finish stops the ticker and leaves the final board on screen.
func (d *display) finish() {
	if d.tickStop != nil {
		close(d.tickStop)
		<-d.tickDone
		d.tickStop = nil
	}
	d.mu.Lock()
	d.redrawLocked()
	d.finished = true
	d.drawn = nil
	d.mu.Unlock()
}

func (d *display) close() {
	if d.eventsClose != nil {
		_ = d.eventsClose()
	}
}

// note prints a message between board redraws.
func (d *display) note(msg string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.printLocked(d.stamp() + msg)
}

func (d *display) handle(e core.Event) {
	// What the prompter is told is told after d.mu is let go: no UI lock
	// is held while another is taken.
	var tell func()
	defer func() {
		if tell != nil {
			tell()
		}
	}()
	d.mu.Lock()
	defer d.mu.Unlock()
	d.writeEventLocked(e)
	if p, ok := e.Payload.(events.TaskOut); ok {
		if !d.verbose {
			// Nothing to show: no redraw either. A busy agent's output
			// comes in thousands of pieces, and a redraw of the board for
			// each filled the terminal with copies of it.
			return
		}
		d.mirrorLocked(e.Task, p.Text)
		d.redrawLocked()
		return
	}
	board, toldEnd := d.boardLocked(e)
	tell = toldEnd
	if _, piece := e.Payload.(events.AgentSaid); !piece && d.verbose {
		d.printLinesLocked("", d.text.flush())
	}
	if p, ok := e.Payload.(events.InteractionNeeded); ok && d.prompter != nil {
		prompter, label := d.prompter, d.labelOf(e.Task)
		tell = func() { prompter.enqueue(e, p, label) }
	}
	shown := d.shows(e)
	if shown {
		d.printLinesLocked(d.indentLocked(e), d.text.lines(e))
	} else {
		d.text.see(e)
	}
	if board || shown {
		d.redrawLocked()
	}
}

// writeEventLocked writes e to the --events file, as the event log has
// it: secrets as ***.
func (d *display) writeEventLocked(e core.Event) {
	if d.events == nil {
		return
	}
	if b, err := json.Marshal(e); err == nil {
		_, _ = d.events.Write(append(state.RedactJSON(b), '\n'))
	}
}

// boardLocked follows the event on the board (its stage, its tasks), and
// reports whether the board changed, and what to tell the prompter.
func (d *display) boardLocked(e core.Event) (changed bool, tell func()) {
	switch p := e.Payload.(type) {
	case events.StageStart:
		d.order = nil
	case events.StageEnd:
		if d.streams.ErrTTY {
			// The stage's final board stays on screen above the next one.
			rows := d.boardRowsLocked(d.width())
			d.order = nil
			for _, r := range rows {
				d.printLocked(r.text)
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
		tell = d.taskEndLocked(e, p)
	case events.KeepAlive:
		d.view(e.Task).note = fmt.Sprintf("kept alive, pid %d", p.Pid)
	case events.StepStarted:
		d.order = nil // the board shows the tasks of this step only
	default:
		return false, nil
	}
	return true, tell
}

// taskEndLocked ends a task on the board; while a person is asked (the
// board hidden), the end of a sibling is said in one line instead: tell
// says it.
func (d *display) taskEndLocked(e core.Event, p events.TaskEnd) (tell func()) {
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
func (d *display) shows(e core.Event) bool {
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

// indentLocked indents a grimoire step's lines by their depth in loops,
// and the lines of an event inside a step under it.
func (d *display) indentLocked(e core.Event) string {
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

// printLinesLocked prints an event's lines as one message: the first
// after the time stamp and indent, the ones under it after the indent.
func (d *display) printLinesLocked(indent string, lines []string) {
	if len(lines) == 0 {
		return
	}
	msg := d.stamp() + indent + lines[0]
	for _, l := range lines[1:] {
		msg += "\n" + indent + l
	}
	d.printLocked(msg)
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

func (d *display) view(id string) *taskView {
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

func (d *display) nameOf(id string) string {
	if tv := d.tasks[id]; tv != nil && tv.name != "" {
		return tv.name
	}
	return id
}

// labelOf names a task in messages, safe to print: "Name (id)", or "id".
func (d *display) labelOf(id string) string { return taskLabel(d.nameOf(id), id) }

// taskLabel is how every message names a task: by its name and, when that
// differs, its id, the key of `show` and of the files under .vibeteam/.
func taskLabel(name, id string) string {
	if name == "" || name == id {
		return safe(id)
	}
	return safe(name) + " (" + safe(id) + ")"
}

// mirrorLocked writes complete lines of a task's output, prefixed by its name.
func (d *display) mirrorLocked(taskID, text string) {
	buf := d.partial[taskID] + text
	lines := strings.Split(buf, "\n")
	d.partial[taskID] = lines[len(lines)-1]
	for _, l := range lines[:len(lines)-1] {
		d.printLocked(d.paint("2", "["+safe(d.nameOf(taskID))+"]") + " " + safeLine(strings.TrimRight(l, "\r")))
	}
}

// printLocked prints a permanent line above the live board.
func (d *display) printLocked(line string) {
	if d.held {
		// Bounded: --verbose output of busy tasks must not pile up while
		// a person takes their time.
		if len(d.heldOut) >= maxHeldLines {
			d.heldOut = append(d.heldOut[:0], d.heldOut[len(d.heldOut)-maxHeldLines/2:]...)
		}
		d.heldOut = append(d.heldOut, line)
		return
	}
	d.clearBoardLocked()
	fmt.Fprintln(d.streams.Err, line)
}

func (d *display) stamp() string {
	if d.streams.ErrTTY {
		return ""
	}
	return time.Now().Format("15:04:05.000") + " "
}

// paintMark is a status's glyph in its colour.
func (d *display) paintMark(m mark) string {
	if m.colour == "" {
		return m.glyph
	}
	return d.paint(m.colour, m.glyph)
}

func (d *display) paint(code, s string) string {
	if !d.color {
		return s
	}
	return "\x1b[" + code + "m" + s + "\x1b[0m"
}

// clearBoardLocked erases the board: up to its first line, then to the end
// of the screen.
func (d *display) clearBoardLocked() {
	if d.streams.ErrTTY {
		eraseBoard(d.streams.Err, d.drawn, d.width())
	}
	d.drawn = nil
}

// redrawLocked draws one line per task of the current stage, in place.
func (d *display) redrawLocked() {
	if !d.streams.ErrTTY || d.finished || d.held || len(d.order) == 0 {
		return
	}
	d.clearBoardLocked()
	var b strings.Builder
	for _, r := range d.boardRowsLocked(d.width()) {
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

// boardRowsLocked is one line per task of the current stage, fitted to a
// terminal of cols columns (0: unknown, 80 assumed). A line is kept
// shorter than the terminal: one that filled it would wrap, and each redraw
// would then leave a copy behind. Names take the room there is; when it
// runs short, what gives way is the adapter, then the name (down to 10
// columns), then the end of the line.
func (d *display) boardRowsLocked(cols int) []boardRow {
	if cols <= 0 {
		cols = 80
	}
	avail := cols - 1
	type cells struct{ glyph, name, adapter, status, elapsed string }
	var all []cells
	nameW, adW, statusW := 0, 0, 0
	for _, id := range d.order {
		tv := d.tasks[id]
		c := cells{glyph: d.paintMark(taskMark(tv.status)), name: taskLabel(tv.name, id), adapter: safe(tv.adapter), status: safe(tv.status)}
		if !tv.started.IsZero() {
			end := tv.ended
			if end.IsZero() {
				end = time.Now()
			}
			c.elapsed = end.Sub(tv.started).Round(100 * time.Millisecond).String()
		}
		if tv.note != "" {
			c.status += " (" + safe(tv.note) + ")"
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
		line := fill(c.name, nameW) + "  "
		if adW > 0 {
			line += fill(c.adapter, adW) + "  "
		}
		line += fill(c.status, statusW)
		if c.elapsed != "" {
			line += " " + c.elapsed
		}
		line = fit(strings.TrimRight(line, " "), avail-lead)
		rows = append(rows, boardRow{text: "  " + c.glyph + " " + line, width: lead + runewidth.StringWidth(line)})
	}
	return rows
}

// safe makes text that comes from outside vibeteam — workflow files,
// session files, agents — harmless to print: every non-printable rune is
// shown escaped as Go quotes it (ESC as \x1b, BEL as \a, a right-to-left
// override as \u202e), and so is each byte of invalid UTF-8. Printable
// unicode is kept. Otherwise a task name could retitle or clear the
// person's terminal, or hide text from them.
func safe[S ~string](text S) string {
	s := string(text)
	i := 0
	for i < len(s) {
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 || !strconv.IsPrint(r) {
			break
		}
		i += n
	}
	if i == len(s) {
		return s
	}
	var b strings.Builder
	b.WriteString(s[:i])
	for i < len(s) {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case strconv.IsPrint(r):
			b.WriteString(s[i : i+n])
		default:
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
		}
		i += n
	}
	return b.String()
}

// safeLine is safe for one line of an agent's output or screen: tabs, which
// are common there (`go test`) and harmless, are expanded rather than
// shown as \t.
func safeLine(s string) string {
	if !strings.Contains(s, "\t") {
		return safe(s)
	}
	var b strings.Builder
	col := 0
	for _, r := range s {
		if r == '\t' {
			n := 8 - col%8
			b.WriteString(strings.Repeat(" ", n))
			col += n
			continue
		}
		b.WriteRune(r)
		col += runewidth.RuneWidth(r)
	}
	return safe(b.String())
}

// fit cuts printable text to at most w columns, marking the cut with "…".
func fit(s string, w int) string {
	if w <= 0 {
		return ""
	}
	return runewidth.Truncate(s, w, "…")
}

// fill fits s to exactly w columns.
func fill(s string, w int) string {
	return runewidth.FillRight(fit(s, w), w)
}

// pad pads s with spaces to at least w columns.
func pad(s string, w int) string {
	return runewidth.FillRight(s, w)
}

// sessionTaskLabel names a task of sess as taskLabel does.
func sessionTaskLabel(sess *state.Session, id string) string {
	if sess.WorkflowDefinition != nil {
		for _, st := range sess.WorkflowDefinition.Stages() {
			for _, t := range st.Tasks {
				if t.ID == id {
					return taskLabel(t.DisplayName(), id)
				}
			}
		}
	}
	return safe(id)
}
