package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/signal"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	ucli "github.com/urfave/cli/v2"

	"github.com/vibeteam/vibeteam/core/events"
	"github.com/vibeteam/vibeteam/core/state"
)

// logPoll is how often log --follow looks for new lines, and whether the
// session still runs, once it has read everything there is.
const logPoll = 100 * time.Millisecond

func logCommand(streams IO) *ucli.Command {
	return &ucli.Command{
		Name:      "log",
		Usage:     "print a session's event log: a step tree for grimoires, a line per event for stage workflows",
		ArgsUsage: "ID",
		Description: `Reads .vibeteam/logs/<id>.jsonl. A grimoire's steps show as a tree
(loop iterations under their loop, the last lines of a failed step's output
under it); stage workflows show a line per stage and task event. Events this
version does not know print as "name key=value ...".

With --follow, lines are printed as they are written until the session
finishes (or its vibeteam is gone); an interrupt stops following.

Exit codes: 0 printed; 1 the session has no event log (yet), or it could
not be read; 2 usage error or no such session; 130/143/129 interrupted.`,
		Flags: []ucli.Flag{
			baseDirFlag,
			&ucli.BoolFlag{Name: "follow", Aliases: []string{"f"}, Usage: "keep printing new events until the session finishes"},
			&ucli.BoolFlag{Name: "json", Usage: "print the JSONL lines as they are, one event a line"},
		},
		Action: func(c *ucli.Context) error {
			mgr, id, err := sessionArg(c)
			if err != nil {
				return err
			}
			ctx := c.Context
			if ctx == nil {
				ctx = context.Background()
			}
			l := &logRun{mgr: mgr, id: id, path: mgr.EventLogPath(id), follow: c.Bool("follow"), streams: streams}
			// Written in blocks, flushed whenever the end of what the log
			// holds so far is reached.
			w := bufio.NewWriter(streams.Out)
			if c.Bool("json") {
				l.out = &rawPrinter{w: w}
			} else {
				l.out = newLogPrinter(w)
			}
			if l.follow {
				sigs := make(chan os.Signal, 1)
				signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
				defer signal.Stop(sigs)
				l.sigs = sigs
			}
			return l.run(ctx)
		},
	}
}

// logOutput turns the complete lines of an event log into output.
type logOutput interface {
	line(raw []byte, n int)
	// idle is called when every line written so far has been handled:
	// what is held back is written out.
	idle()
	// finished reports whether the last line was the session's end.
	finished() bool
	// failed is the first write error.
	failed() error
}

type logRun struct {
	mgr     *state.Manager
	id      string
	path    string
	follow  bool
	streams IO
	out     logOutput
	sigs    chan os.Signal
}

// interrupted returns the exit error for a stop asked while following, or
// nil when none was.
func (l *logRun) interrupted(ctx context.Context) error {
	select {
	case s := <-l.sigs:
		return &exitError{code: interruptCode(s)}
	case <-ctx.Done():
		return &exitError{code: ExitInterrupted}
	default:
		return nil
	}
}

// wait blocks for one poll interval, or until a stop is asked.
func (l *logRun) wait(ctx context.Context, tick <-chan time.Time) error {
	select {
	case s := <-l.sigs:
		return &exitError{code: interruptCode(s)}
	case <-ctx.Done():
		return &exitError{code: ExitInterrupted}
	case <-tick:
		return nil
	}
}

func (l *logRun) run(ctx context.Context) error {
	var tick <-chan time.Time
	if l.follow {
		t := time.NewTicker(logPoll)
		defer t.Stop()
		tick = t.C
	}
	f, err := os.Open(l.path)
	// A session that runs opens its log right after taking its lock:
	// --follow waits for it.
	for l.follow && errors.Is(err, fs.ErrNotExist) && l.mgr.Running(l.id) {
		if werr := l.wait(ctx, tick); werr != nil {
			return werr
		}
		f, err = os.Open(l.path)
	}
	if errors.Is(err, fs.ErrNotExist) {
		if s, lerr := l.mgr.Load(l.id); lerr == nil && s.Backlog != nil {
			return exitf(ExitFailed, "session %s is a backlog run: each bead's events are in its own session's log (vibeteam show %s names them; then vibeteam log SESSION)", l.id, l.id)
		}
		return exitf(ExitFailed, "session %s has no event log yet (%s)", l.id, l.path)
	}
	if err != nil {
		return exitf(ExitFailed, "%v", err)
	}
	defer f.Close()
	src := &lineSource{r: bufio.NewReader(f)}
	running, gone := false, false
	for {
		line, ok, err := src.next()
		if err != nil {
			return exitf(ExitFailed, "read %s: %v", l.path, err)
		}
		if ok {
			l.out.line(line, src.n)
			if err := l.out.failed(); err != nil {
				return exitf(ExitFailed, "%v", err)
			}
			if l.follow {
				if err := l.interrupted(ctx); err != nil {
					return err
				}
			}
			continue
		}
		// Everything written so far is shown.
		l.out.idle()
		if err := l.out.failed(); err != nil {
			return exitf(ExitFailed, "%v", err)
		}
		if !l.follow {
			running = l.mgr.Running(l.id)
			break
		}
		if l.out.finished() {
			break
		}
		if gone {
			break
		}
		if !l.mgr.Running(l.id) {
			// Its vibeteam is gone, and wrote all it will before it let go
			// of the lock: one more pass reads the lines that came between
			// the end of the file and the check.
			gone = true
			continue
		}
		if err := l.wait(ctx, tick); err != nil {
			return err
		}
	}
	if len(src.partial) > 0 && !running {
		// Cut short by a crash (in a running session, it is being written).
		fmt.Fprintf(l.streams.Err, "vibeteam: the log's last line is incomplete (%d bytes); not shown\n", len(src.partial))
	}
	if running {
		fmt.Fprintf(l.streams.Err, "vibeteam: session %s is still running; vibeteam log -f %s follows it\n", l.id, l.id)
	}
	return nil
}

// lineSource reads the complete lines of a file that may still grow: a last
// line without its newline is kept until the rest of it is written.
type lineSource struct {
	r       *bufio.Reader
	partial []byte
	n       int // complete lines read
}

// next returns the next complete line without its line ending, or false at
// the current end of the file.
func (s *lineSource) next() ([]byte, bool, error) {
	b, err := s.r.ReadBytes('\n')
	s.partial = append(s.partial, b...)
	if err == nil {
		line := bytes.TrimSuffix(s.partial[:len(s.partial)-1], []byte("\r"))
		s.partial = nil
		s.n++
		return line, true, nil
	}
	if errors.Is(err, io.EOF) {
		return nil, false, nil
	}
	return nil, false, err
}

// rawPrinter is --json: the lines as they are.
type rawPrinter struct {
	w    *bufio.Writer
	err  error
	last string
}

func (p *rawPrinter) line(raw []byte, _ int) {
	if p.err != nil {
		return
	}
	if _, p.err = p.w.Write(raw); p.err == nil {
		p.err = p.w.WriteByte('\n')
	}
	var head struct {
		Event string `json:"event"`
	}
	p.last = ""
	if json.Unmarshal(raw, &head) == nil {
		p.last = head.Event
	}
}

func (p *rawPrinter) idle() {
	if p.err == nil {
		p.err = p.w.Flush()
	}
}

func (p *rawPrinter) finished() bool { return p.last == events.SessionFinished }
func (p *rawPrinter) failed() error  { return p.err }

// logPrinter writes events as text: a time column, then for grimoire steps
// a tree indented by address depth, for the rest one line per event. All
// text from the log goes through safe: it holds agents' output.
type logPrinter struct {
	w     *bufio.Writer
	err   error
	last  string
	tasks map[string]*logTask
	// pending is a step start not printed yet: when its completion comes
	// next, the step gets one line instead of two.
	pending *state.Event
	// open are the addresses of the steps started and not completed,
	// innermost last: other events are indented under them.
	open []string
}

type logTask struct {
	name    string
	started time.Time
}

func newLogPrinter(w *bufio.Writer) *logPrinter {
	return &logPrinter{w: w, tasks: map[string]*logTask{}}
}

func (p *logPrinter) finished() bool { return p.last == events.SessionFinished }
func (p *logPrinter) failed() error  { return p.err }

// idle shows a step that started and has not completed yet, and writes
// out what is held back.
func (p *logPrinter) idle() {
	p.flushPending(" …")
	if p.err == nil {
		p.err = p.w.Flush()
	}
}

const (
	logNoStamp   = "         " // as wide as a stamp
	logFailTail  = 3           // output lines shown under a failed step
	logBlockTail = 20          // context lines shown under a blocked workflow
)

func logStamp(t time.Time) string {
	if t.IsZero() {
		return "--:--:-- "
	}
	return t.Local().Format("15:04:05") + " "
}

func (p *logPrinter) println(s string) {
	if p.err != nil {
		return
	}
	_, p.err = p.w.WriteString(s + "\n")
}

func (p *logPrinter) line(raw []byte, n int) {
	trimmed := bytes.TrimSpace(raw)
	if len(trimmed) == 0 {
		return
	}
	var e state.Event
	if err := json.Unmarshal(trimmed, &e); err != nil {
		p.flushPending("")
		p.last = ""
		text := string(trimmed)
		if len(text) > 200 {
			text = text[:200] + "…"
		}
		p.println(fmt.Sprintf("%s(line %d is not an event: %s)", logNoStamp, n, safe(text)))
		return
	}
	p.event(e)
}

func (p *logPrinter) event(e state.Event) {
	f := e.Fields
	if e.Type == events.WorkflowStepCompleted && p.pending != nil && fieldStr(p.pending.Fields, "address") == fieldStr(f, "address") {
		p.pending = nil // the completion says it all
	} else {
		p.flushPending("")
	}
	p.last = e.Type
	at := logStamp(e.Time)
	in := p.nested()
	task := p.taskLabel(e.Task)
	switch e.Type {
	case events.SessionStarted, events.SessionResumed:
		verb := "started"
		if e.Type == events.SessionResumed {
			verb = "resumed"
			if from := fieldStr(f, "from"); from != "" {
				verb += " from " + safe(from)
			}
		}
		msg := fmt.Sprintf("session %s %s", safe(e.Session), verb)
		if wf := fieldStr(f, "workflow"); wf != "" {
			msg += ": workflow " + safe(wf)
		}
		p.println(at + msg)
	case events.SessionFinished:
		status := fieldStr(f, "status")
		msg := fmt.Sprintf("%s session %s finished: %s", logSessionGlyph(status), safe(e.Session), safe(status))
		var why []string
		if t := fieldStr(f, "failedTask"); t != "" {
			why = append(why, "task "+p.taskLabel(t))
		}
		for _, k := range []string{"reason", "error"} {
			if v := fieldStr(f, k); v != "" {
				why = append(why, safe(v))
			}
		}
		if len(why) > 0 {
			msg += " (" + strings.Join(why, ": ") + ")"
		}
		p.println(at + msg)
	case events.SessionState:
		// Derived from the task statuses, which are shown: it would say
		// IDLE while a task still runs (--json keeps it).
	case events.Error:
		p.println(at + in + "error: " + safe(fieldStr(f, "error")))
	case events.StageStarted:
		msg := "stage"
		if i, ok := fieldNum(f, "index"); ok {
			msg += " " + strconv.Itoa(int(i)+1)
		}
		msg += " " + safe(fieldStr(f, "stage"))
		if n, ok := fieldNum(f, "tasks"); ok {
			msg += fmt.Sprintf(": %d task(s)", int(n))
		}
		p.println(at + in + msg)
	case events.StageCompleted:
		p.println(at + in + "✓ stage " + safe(fieldStr(f, "stage")) + " done")
	case events.TaskStarted:
		t := p.task(e.Task)
		if name := fieldStr(f, "name"); name != "" {
			t.name = name
		}
		t.started = e.Time
		var about []string
		for _, k := range []string{"adapter", "mode"} {
			if v := fieldStr(f, k); v != "" {
				about = append(about, safe(v))
			}
		}
		if pid, ok := fieldNum(f, "pid"); ok {
			about = append(about, fmt.Sprintf("pid %d", int64(pid)))
		}
		msg := "task " + p.taskLabel(e.Task) + " started"
		if len(about) > 0 {
			msg += " (" + strings.Join(about, ", ") + ")"
		}
		p.println(at + in + msg)
	case events.TaskStatus:
		// The end of a run (DONE, ERROR, back to PENDING when stopped) is
		// said by the task_finished that always follows, and a plain
		// RUNNING by task_started: only the changes in between (waiting
		// for a person, answered) get a line of their own.
		status := fieldStr(f, "status")
		reason := fieldStr(f, "reason")
		switch state.TaskStatus(status) {
		case state.TaskDone, state.TaskError:
			return
		case state.TaskRunning:
			if reason == "" {
				return
			}
		case state.TaskPending:
			if reason == "stopped" {
				return
			}
		}
		msg := "task " + task + ": " + safe(status)
		if reason != "" {
			msg += " (" + safe(reason) + ")"
		}
		p.println(at + in + msg)
	case events.TaskFinished:
		status := fieldStr(f, "status")
		reason := fieldStr(f, "reason")
		msg := fmt.Sprintf("%s task %s %s", glyphChar(status), task, safe(status))
		if reason == "stopped" {
			msg = fmt.Sprintf("■ task %s stopped (it runs again on resume)", task)
		}
		var about []string
		code, hasCode := fieldNum(f, "exit_code")
		if !hasCode {
			code, hasCode = fieldNum(f, "exitCode") // logs written before 0.x spelt it so
		}
		if hasCode && code != -1 && reason != "stopped" {
			about = append(about, fmt.Sprintf("exit %d", int64(code)))
		}
		if sig := fieldStr(f, "signal"); sig != "" {
			about = append(about, safe(sig))
		}
		if reason != "" && reason != "exit" && reason != "stopped" {
			about = append(about, safe(reason))
		}
		if len(about) > 0 {
			msg += " (" + strings.Join(about, ", ") + ")"
		}
		if t := p.tasks[e.Task]; t != nil && !t.started.IsZero() && !e.Time.IsZero() {
			msg += " after " + logDuration(e.Time.Sub(t.started))
		}
		if er := fieldStr(f, "error"); er != "" {
			msg += ": " + safe(er)
		}
		p.println(at + in + msg)
	case events.TaskInput:
		msg := "task " + task + " ← "
		if src := fieldStr(f, "source"); src != "" {
			msg += safe(src) + ": "
		}
		p.println(at + in + msg + safe(fieldStr(f, "text")))
	case events.TaskOutput:
		for _, l := range strings.Split(strings.TrimSuffix(fieldStr(f, "text"), "\n"), "\n") {
			p.println(at + in + "task " + task + " | " + safeLine(l))
		}
	case events.Interaction:
		what := safe(fieldStr(f, "state"))
		if why := fieldStr(f, "why"); why != "" {
			what += ": " + safe(why)
		}
		p.println(at + in + "task " + task + " needs a person (" + what + ")")
		if ex := fieldStr(f, "excerpt"); ex != "" {
			for _, l := range strings.Split(ex, "\n") {
				p.println(logNoStamp + in + "  | " + safeLine(l))
			}
		}
	case events.AutoAction:
		msg := "task " + task + ": auto-approve answered " + safe(fieldStr(f, "state"))
		if a := fieldStr(f, "action"); a != "" {
			msg += " with " + safe(a)
		}
		p.println(at + in + msg)
	case events.StateSeen:
		// A screen no state of the adapter matches has no name: nothing to say.
		if st := fieldStr(f, "state"); st != "" {
			p.println(at + in + "task " + task + ": screen state " + safe(st))
		}
	case events.QueueSent:
		msg := "task " + task + ": sent a queued input"
		if n, ok := fieldNum(f, "remaining"); ok {
			msg += fmt.Sprintf(" (%d left)", int(n))
		}
		p.println(at + in + msg)
	case events.KeptAlive:
		p.println(at + in + fmt.Sprintf("task %s DONE, process kept alive (pid %s)", task, logValue(f["pid"])))
	case events.OrphanStopped:
		p.println(at + in + fmt.Sprintf("task %s: stopped a process left running (pid %s)", task, logValue(f["pid"])))
	case events.TemplateWarned:
		msg := "warning"
		if s := fieldStr(f, "step"); s != "" {
			msg += " (" + safe(s) + ")"
		}
		p.println(at + in + msg + ": " + safe(fieldStr(f, "warning")))
	case events.WorkflowStarted:
		verb := "started"
		if b, _ := f["resumed"].(bool); b {
			verb = "resumed"
		}
		msg := "grimoire " + safe(fieldStr(f, "grimoire")) + " " + verb
		if src := fieldStr(f, "source"); src != "" {
			msg += " (" + safe(src) + ")"
		}
		if b := fieldStr(f, "bead"); b != "" {
			msg += ", bead " + safe(b)
		}
		p.println(at + msg)
	case events.WorkflowStepStarted:
		p.open = append(p.open, fieldStr(f, "address"))
		p.pending = &e
	case events.WorkflowStepCompleted:
		p.closeStep(fieldStr(f, "address"))
		p.stepCompleted(e)
	case events.LoopIteration:
		msg := "iteration " + logValue(f["iteration"])
		if m, ok := fieldNum(f, "max"); ok && m > 0 {
			msg += fmt.Sprintf("/%d", int(m))
		}
		p.println(at + logIndent(fieldStr(f, "address")) + "  " + msg)
	case events.WorkflowBlocked:
		msg := "⊘ workflow blocked"
		if s := fieldStr(f, "step"); s != "" {
			msg += " at " + safe(s)
			if a := fieldStr(f, "address"); a != "" {
				msg += " (" + safe(a) + ")"
			}
		}
		if r := fieldStr(f, "reason"); r != "" {
			msg += ": " + safe(r)
		}
		p.println(at + msg)
		lines := logTail(fieldStr(f, "context"), logBlockTail)
		for _, l := range lines {
			p.println(logNoStamp + "  | " + safeLine(l))
		}
	case events.MergeQueued:
		p.println(at + in + "■ " + queuedLine(f))
	case events.GateStarted:
		p.println(at + in + "▸ " + gateStartLine(f))
	case events.GateFinished:
		line, green := gateEndLine(f)
		glyph := "✗ "
		if green {
			glyph = "✓ "
		}
		p.println(at + in + glyph + line)
		if lp := fieldStr(f, "log_path"); lp != "" && !green {
			p.println(logNoStamp + in + "    log: " + safe(lp))
		}
	case events.WorkflowCompleted:
		var stats []string
		if n, ok := fieldNum(f, "steps"); ok {
			stats = append(stats, fmt.Sprintf("%d step(s)", int(n)))
		}
		if n, _ := fieldNum(f, "skipped"); n > 0 {
			stats = append(stats, fmt.Sprintf("%d skipped", int(n)))
		}
		if ms, ok := fieldNum(f, "duration_ms"); ok {
			stats = append(stats, logDuration(time.Duration(ms)*time.Millisecond))
		}
		var names []string
		if list, ok := f["failed_steps"].([]any); ok {
			for _, v := range list {
				names = append(names, safe(fmt.Sprint(v)))
			}
		}
		failed, _ := fieldNum(f, "failed")
		nfailed := max(int(failed), len(names))
		var msg string
		if nfailed > 0 {
			// The workflow went on past these by design; it still is not
			// a clean success.
			msg = fmt.Sprintf("! workflow completed with %d failed step(s)", nfailed)
			if len(names) > 0 {
				msg += ": " + strings.Join(names, ", ")
			}
		} else {
			msg = "✓ workflow completed"
		}
		if len(stats) > 0 {
			msg += " (" + strings.Join(stats, ", ") + ")"
		}
		p.println(at + msg)
	default:
		p.println(at + in + logGeneric(e))
	}
}

// flushPending prints the start of a step whose completion did not follow
// at once: a loop, a step with events of its own, or one still running.
func (p *logPrinter) flushPending(suffix string) {
	if p.pending == nil {
		return
	}
	e := *p.pending
	p.pending = nil
	f := e.Fields
	p.println(logStamp(e.Time) + logIndent(fieldStr(f, "address")) + "▸ " + logStepName(f) + suffix)
}

func (p *logPrinter) closeStep(addr string) {
	for i := len(p.open) - 1; i >= 0; i-- {
		if p.open[i] == addr {
			p.open = append(p.open[:i], p.open[i+1:]...)
			return
		}
	}
}

// nested is the indent of an event that happens inside the innermost open
// step (an agent step's task, a stage step's stages).
func (p *logPrinter) nested() string {
	if len(p.open) == 0 {
		return ""
	}
	return logIndent(p.open[len(p.open)-1]) + "  "
}

func (p *logPrinter) stepCompleted(e state.Event) {
	f := e.Fields
	status := fieldStr(f, "status")
	in := logIndent(fieldStr(f, "address"))
	msg := logStepGlyph(status) + " " + logStepName(f)
	ran := status == "done" || status == "failed" || status == "blocked" || status == "stopped"
	if ms, ok := fieldNum(f, "duration_ms"); ok && ran {
		msg += " " + logDuration(time.Duration(ms)*time.Millisecond)
	}
	if code, ok := fieldNum(f, "exit_code"); ok && ran && (fieldStr(f, "type") == "script" || code != 0) {
		msg += fmt.Sprintf(" exit %d", int64(code))
	}
	reason := safe(logFirstLine(fieldStr(f, "reason")))
	switch status {
	case "done":
		if s := fieldStr(f, "summary"); s != "" {
			msg += " — " + safe(logFirstLine(s))
		}
	case "failed", "blocked":
		msg += " " + status
		if reason != "" {
			msg += ": " + reason
		}
	case "skipped":
		msg += " skipped"
		if reason != "" {
			msg += " (" + reason + ")"
		}
	case "stopped":
		msg += " stopped (it runs again on resume)"
	case "waiting":
		msg += " waiting for a person"
	default:
		msg += " " + safe(status)
		if reason != "" {
			msg += ": " + reason
		}
	}
	p.println(logStamp(e.Time) + in + msg)
	if status != "failed" {
		return
	}
	for _, l := range logTail(fieldStr(f, "output"), logFailTail) {
		p.println(logNoStamp + in + "    | " + safeLine(l))
	}
	if lp := fieldStr(f, "log_path"); lp != "" {
		p.println(logNoStamp + in + "    log: " + safe(lp))
	}
}

func (p *logPrinter) task(id string) *logTask {
	t := p.tasks[id]
	if t == nil {
		t = &logTask{}
		p.tasks[id] = t
	}
	return t
}

func (p *logPrinter) taskLabel(id string) string {
	if t := p.tasks[id]; t != nil {
		return taskLabel(t.name, id)
	}
	return safe(id)
}

// treeIndent is the indent of a step at addr: two columns, then four more
// per level of loop ("2.3/0" is one level down).
func logIndent(addr string) string {
	return "  " + strings.Repeat("    ", strings.Count(addr, "/"))
}

func logStepName(f map[string]any) string {
	s := safe(fieldStr(f, "name"))
	if s == "" {
		s = "step " + safe(fieldStr(f, "address"))
	}
	if t := fieldStr(f, "type"); t != "" {
		s += " (" + safe(t) + ")"
	}
	return s
}

func logSessionGlyph(status string) string {
	switch state.Status(status) {
	case state.StatusCompleted:
		return "✓"
	case state.StatusFailed:
		return "✗"
	case state.StatusBlocked:
		return "⊘"
	case state.StatusCancelled:
		return "■"
	}
	return "·"
}

func logStepGlyph(status string) string {
	switch status {
	case "done":
		return "✓"
	case "failed":
		return "✗"
	case "skipped":
		return "–"
	case "blocked":
		return "⊘"
	case "stopped":
		return "■"
	case "waiting":
		return "…"
	}
	return "?"
}

// genericEvent is "name key=value ..." for an event this version does not
// know, fields in key order.
func logGeneric(e state.Event) string {
	var b strings.Builder
	name := e.Type
	if name == "" {
		name = "?"
	}
	b.WriteString(safe(name))
	if e.Task != "" {
		b.WriteString(" task=" + logValue(e.Task))
	}
	keys := make([]string, 0, len(e.Fields))
	for k := range e.Fields {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		b.WriteString(" " + safe(k) + "=" + logValue(e.Fields[k]))
	}
	return b.String()
}

// fmtValue is a field's value for one line: a plain word as is, any other
// string quoted (which escapes what is not printable), the rest as JSON.
func logValue(v any) string {
	switch v := v.(type) {
	case string:
		if v == "" || strings.ContainsAny(v, " \t\n\"'=\\") || safe(v) != v {
			return strconv.Quote(v)
		}
		return v
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64)
	case nil:
		return "null"
	}
	b, err := json.Marshal(v)
	if err != nil {
		return safe(fmt.Sprint(v))
	}
	return safe(string(b))
}

func fieldStr(f map[string]any, k string) string {
	switch v := f[k].(type) {
	case nil:
		return ""
	case string:
		return v
	default:
		return logValue(v)
	}
}

func fieldNum(f map[string]any, k string) (float64, bool) {
	v, ok := f[k].(float64)
	return v, ok
}

func logFirstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return strings.TrimSpace(s[:i]) + " …"
	}
	return s
}

// tailLines is the last n non-blank lines of s, after a line that says how
// many came before when there were more.
func logTail(s string, n int) []string {
	var lines []string
	for _, l := range strings.Split(strings.ReplaceAll(s, "\r\n", "\n"), "\n") {
		if strings.TrimSpace(l) != "" {
			lines = append(lines, l)
		}
	}
	if len(lines) <= n {
		return lines
	}
	more := len(lines) - n
	return append([]string{fmt.Sprintf("… (%d line(s) before)", more)}, lines[more:]...)
}

func logDuration(d time.Duration) string {
	switch {
	case d < time.Second:
		return d.Round(time.Millisecond).String()
	case d < time.Minute:
		return d.Round(100 * time.Millisecond).String()
	}
	return d.Round(time.Second).String()
}
