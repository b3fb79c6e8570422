package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/vibeteam/vibeteam/core"
	"github.com/vibeteam/vibeteam/core/engine"
	"github.com/vibeteam/vibeteam/core/state"
)

// display renders core events: a live board redrawn in place on a terminal,
// timestamped status lines otherwise, JSONL with --events, task output with
// --verbose. Agent output is shown only with --verbose.
type display struct {
	streams IO
	verbose bool
	color   bool

	events      io.Writer
	eventsClose func() error

	mu        sync.Mutex
	stage     string
	stageIdx  int
	stageN    int
	stageAt   time.Time
	tasks     map[string]*taskView
	order     []string // tasks of the current stage, in declared order
	drawn     int      // board lines currently on screen
	partial   map[string]string
	finished  bool
	tickStop  chan struct{}
	tickDone  chan struct{}
	sessionID string

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
	id, name, adapter, status string
	started, ended            time.Time
	note                      string
}

func newDisplay(streams IO, verbose bool, events string) (*display, error) {
	d := &display{
		streams: streams,
		verbose: verbose,
		color:   streams.ErrTTY && os.Getenv("NO_COLOR") == "",
		tasks:   map[string]*taskView{},
		partial: map[string]string{},
	}
	switch events {
	case "":
	case "-":
		d.events = streams.Out
	default:
		f, err := os.OpenFile(events, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
		if err != nil {
			return nil, fmt.Errorf("--events: %w", err)
		}
		d.events, d.eventsClose = f, f.Close
	}
	return d, nil
}

// attach learns the workflow's stages and starts the redraw ticker.
func (d *display) attach(ctrl *core.SessionController) {
	d.mu.Lock()
	sess := ctrl.Session()
	d.sessionID = sess.ID
	d.stageN = len(sess.WorkflowDefinition.Stages())
	d.mu.Unlock()
	if d.streams.ErrTTY {
		d.tickStop, d.tickDone = make(chan struct{}), make(chan struct{})
		go d.tick()
	}
}

func (d *display) tick() {
	defer close(d.tickDone)
	t := time.NewTicker(250 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-d.tickStop:
			return
		case <-t.C:
			d.mu.Lock()
			d.redrawLocked()
			d.mu.Unlock()
		}
	}
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
	d.drawn = 0
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
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.events != nil {
		if b, err := json.Marshal(e); err == nil {
			_, _ = d.events.Write(append(b, '\n'))
		}
	}
	f := e.Fields
	switch e.Type {
	case core.EvSessionStarted, core.EvSessionResumed:
		verb := "started"
		if e.Type == core.EvSessionResumed {
			verb = "resumed"
		}
		d.printLocked(fmt.Sprintf("%ssession %s %s: workflow %v", d.stamp(), e.Session, verb, f["workflow"]))
	case engine.EvStageStarted:
		d.stage, d.stageAt = fmt.Sprint(f["stage"]), e.Time
		d.stageIdx, _ = f["index"].(int)
		d.order = nil
		d.printLocked(fmt.Sprintf("%sstage %d/%d %s: %v task(s)", d.stamp(), d.stageIdx+1, d.stageN, d.stage, f["tasks"]))
	case engine.EvStageCompleted:
		if d.streams.ErrTTY {
			// The stage's final board stays on screen above the next one.
			rows := d.boardRowsLocked()
			d.order = nil
			for _, r := range rows {
				d.printLocked(r)
			}
		}
		d.printLocked(fmt.Sprintf("%s%s stage %s done (%s)", d.stamp(), d.paint("32", "✓"), f["stage"], e.Time.Sub(d.stageAt).Round(10*time.Millisecond)))
		d.order = nil
	case engine.EvTaskStarted:
		tv := d.view(e.Task)
		tv.name, tv.adapter = fmt.Sprint(f["name"]), fmt.Sprint(f["adapter"])
		tv.started, tv.ended, tv.note = e.Time, time.Time{}, ""
		if !d.streams.ErrTTY {
			d.printLocked(fmt.Sprintf("%stask %s started (%s, %v, pid %v)", d.stamp(), tv.name, tv.adapter, f["mode"], f["pid"]))
		}
	case engine.EvTaskStatus:
		tv := d.view(e.Task)
		tv.status = fmt.Sprint(f["status"])
	case engine.EvTaskFinished:
		tv := d.view(e.Task)
		tv.status, tv.ended = fmt.Sprint(f["status"]), e.Time
		if r, _ := f["reason"].(string); r != "" && r != "exit" {
			tv.note = r
		}
		if !d.streams.ErrTTY {
			msg := fmt.Sprintf("%stask %s %s", d.stamp(), d.nameOf(e.Task), tv.status)
			if tv.note == "stopped" {
				msg = fmt.Sprintf("%stask %s stopped (it runs again on resume)", d.stamp(), d.nameOf(e.Task))
			} else if code, ok := f["exitCode"]; ok && code != -1 {
				msg += fmt.Sprintf(" (exit %v", code)
				if tv.note != "" {
					msg += ", " + tv.note
				}
				msg += ")"
			} else if tv.note != "" {
				msg += " (" + tv.note + ")"
			}
			if !tv.started.IsZero() {
				msg += " after " + e.Time.Sub(tv.started).Round(10*time.Millisecond).String()
			}
			d.printLocked(msg)
		}
	case engine.EvTaskOutput:
		if d.verbose {
			d.mirrorLocked(e.Task, fmt.Sprint(f["text"]))
		}
	case engine.EvInteraction:
		if d.prompter != nil {
			d.prompter.enqueue(e)
			break
		}
		what := fmt.Sprint(f["state"])
		if why, ok := f["why"].(string); ok && why != "" {
			what += ": " + why
		}
		msg := fmt.Sprintf("%stask %s needs a person (%s); its screen:", d.stamp(), d.nameOf(e.Task), what)
		for _, l := range strings.Split(fmt.Sprint(f["excerpt"]), "\n") {
			msg += "\n  | " + l
		}
		d.printLocked(msg)
	case engine.EvKeptAlive:
		tv := d.view(e.Task)
		tv.note = fmt.Sprintf("kept alive, pid %v", f["pid"])
		if !d.streams.ErrTTY {
			d.printLocked(fmt.Sprintf("%stask %s DONE, process kept alive (pid %v)", d.stamp(), d.nameOf(e.Task), f["pid"]))
		}
	case "error":
		d.printLocked(d.stamp() + "error: " + fmt.Sprint(f["error"]))
	}
	d.redrawLocked()
}

func (d *display) view(id string) *taskView {
	tv := d.tasks[id]
	if tv == nil {
		tv = &taskView{id: id, name: id, status: string(state.TaskPending)}
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
	}
	return tv
}

func (d *display) nameOf(id string) string {
	if tv := d.tasks[id]; tv != nil && tv.name != "" {
		return tv.name
	}
	return id
}

// mirrorLocked writes complete lines of a task's output, prefixed by its name.
func (d *display) mirrorLocked(taskID, text string) {
	buf := d.partial[taskID] + text
	lines := strings.Split(buf, "\n")
	d.partial[taskID] = lines[len(lines)-1]
	for _, l := range lines[:len(lines)-1] {
		d.printLocked(d.paint("2", "["+d.nameOf(taskID)+"]") + " " + strings.TrimRight(l, "\r"))
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

func (d *display) paint(code, s string) string {
	if !d.color {
		return s
	}
	return "\x1b[" + code + "m" + s + "\x1b[0m"
}

func (d *display) clearBoardLocked() {
	if !d.streams.ErrTTY || d.drawn == 0 {
		return
	}
	fmt.Fprintf(d.streams.Err, "\x1b[%dA\x1b[J", d.drawn)
	d.drawn = 0
}

// redrawLocked draws one line per task of the current stage, in place.
func (d *display) redrawLocked() {
	if !d.streams.ErrTTY || d.finished || d.held || len(d.order) == 0 {
		return
	}
	d.clearBoardLocked()
	rows := d.boardRowsLocked()
	fmt.Fprint(d.streams.Err, strings.Join(rows, "\n")+"\n")
	d.drawn = len(rows)
}

// boardRowsLocked is one line per task of the current stage.
func (d *display) boardRowsLocked() []string {
	var rows []string
	for _, id := range d.order {
		tv := d.tasks[id]
		elapsed := ""
		if !tv.started.IsZero() {
			end := tv.ended
			if end.IsZero() {
				end = time.Now()
			}
			elapsed = end.Sub(tv.started).Round(100 * time.Millisecond).String()
		}
		status := tv.status
		if tv.note != "" {
			status += " (" + tv.note + ")"
		}
		rows = append(rows, fmt.Sprintf("  %s %-20s %-10s %-28s %s", d.glyph(tv.status), trunc(tv.name, 20), trunc(tv.adapter, 10), status, elapsed))
	}
	return rows
}

func (d *display) glyph(status string) string {
	switch state.TaskStatus(status) {
	case state.TaskDone:
		return d.paint("32", "✓")
	case state.TaskError:
		return d.paint("31", "✗")
	case state.TaskWaitingForUser:
		return d.paint("33", "?")
	case state.TaskRunning:
		return d.paint("36", "●")
	}
	return "·"
}

func trunc(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}
