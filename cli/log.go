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
	"github.com/vibeteam/vibeteam/core/vocab"
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
	ended bool // the last event was session_finished
	text  *eventText
	// pending is a step start not printed yet: when its completion comes
	// next, the step gets one line instead of two.
	pending *pendingStep
	// open are the addresses of the steps started and not completed,
	// innermost last: other events are indented under them.
	open []string
}

func newLogPrinter(w *bufio.Writer) *logPrinter {
	return &logPrinter{w: w, text: newEventText(plainMark)}
}

func (p *logPrinter) finished() bool { return p.ended }
func (p *logPrinter) failed() error  { return p.err }

// idle shows a step that started and has not completed yet, and writes
// out what is held back.
func (p *logPrinter) idle() {
	p.flushPending(" …")
	if p.err == nil {
		p.err = p.w.Flush()
	}
}

const logNoStamp = "         " // as wide as a stamp

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
		p.ended = false
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
	if c, ok := e.Payload.(events.StepCompleted); ok && p.pending != nil && p.pending.Address == c.Address {
		p.pending = nil // the completion says it all
	} else {
		p.flushPending("")
	}
	if _, piece := e.Payload.(events.AgentSaid); !piece {
		p.print(e.Time, p.nested(), p.text.flush())
	}
	_, p.ended = e.Payload.(events.SessionEnd)
	in := p.nested()
	switch f := e.Payload.(type) {
	case events.SessionStart, events.SessionResume, events.SessionEnd, events.Started, events.Completed, events.Blocked:
		in = "" // the session's own lines: at the left
	case events.StepStarted:
		p.open = append(p.open, f.Address)
		p.pending = &pendingStep{StepStarted: f, at: e.Time}
		return
	case events.StepCompleted:
		p.closeStep(f.Address)
		in = logIndent(f.Address)
	case events.Iteration:
		in = logIndent(f.Address) + "  "
	case events.TaskOut:
		// Each line of output is an event's line, with its time.
		for _, l := range p.text.lines(e) {
			p.print(e.Time, in, []string{l})
		}
		return
	}
	p.print(e.Time, in, p.text.lines(e))
}

// print writes an event's lines: the first after the time column and
// indent, the ones under it after an empty time column.
func (p *logPrinter) print(at time.Time, indent string, lines []string) {
	for i, l := range lines {
		stamp := logNoStamp
		if i == 0 {
			stamp = logStamp(at)
		}
		p.println(stamp + indent + l)
	}
}

// pendingStep is a step start held back, and when it was.
type pendingStep struct {
	events.StepStarted
	at time.Time
}

// flushPending prints the start of a step whose completion did not follow
// at once: a loop, a step with events of its own, or one still running.
func (p *logPrinter) flushPending(suffix string) {
	if p.pending == nil {
		return
	}
	s := *p.pending
	p.pending = nil
	p.println(logStamp(s.at) + logIndent(s.Address) + "▸ " + logStepName(s.Name, s.Address, s.Type) + suffix)
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

// treeIndent is the indent of a step at addr: two columns, then four more
// per level of loop ("2.3/0" is one level down).
func logIndent(addr string) string {
	return "  " + strings.Repeat("    ", strings.Count(addr, "/"))
}

func logStepName(name, address string, typ vocab.StepType) string {
	s := safe(name)
	if s == "" {
		s = "step " + safe(address)
	}
	if typ != "" {
		s += " (" + safe(typ) + ")"
	}
	return s
}

// genericEvent is "name key=value ..." for an event this version does not
// know, fields in key order.
func logGeneric(e state.Event) string {
	var b strings.Builder
	name := e.Kind()
	fields := e.Fields()
	if name == "" {
		name = "?"
	}
	b.WriteString(safe(name))
	if e.Task != "" {
		b.WriteString(" task=" + logValue(e.Task))
	}
	keys := make([]string, 0, len(fields))
	for k := range fields {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		b.WriteString(" " + safe(k) + "=" + logValue(fields[k]))
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

func logDuration(d time.Duration) string {
	switch {
	case d < time.Second:
		return d.Round(time.Millisecond).String()
	case d < time.Minute:
		return d.Round(100 * time.Millisecond).String()
	}
	return d.Round(time.Second).String()
}
