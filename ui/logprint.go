package ui

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/vibeteam/vibeteam/core/events"
	"github.com/vibeteam/vibeteam/core/state"
	"github.com/vibeteam/vibeteam/core/vocab"
)

// LogPrinter writes events as text: a time column, then for grimoire steps
// a tree indented by address depth, for the rest one line per event. All
// text from the log goes through safe: it holds agents' output.
type LogPrinter struct {
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

// NewLogPrinter prints to w; Idle flushes it.
func NewLogPrinter(w *bufio.Writer) *LogPrinter {
	return &LogPrinter{w: w, text: newEventText(plainMark)}
}

// Finished reports whether the last event was the session's end.
func (p *LogPrinter) Finished() bool { return p.ended }

// Failed is the first write error.
func (p *LogPrinter) Failed() error { return p.err }

// Idle shows a step that started and has not completed yet, and writes
// out what is held back.
func (p *LogPrinter) Idle() {
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

func (p *LogPrinter) println(s string) {
	if p.err != nil {
		return
	}
	_, p.err = p.w.WriteString(s + "\n")
}

// Line prints the event on line n of a log.
func (p *LogPrinter) Line(raw []byte, n int) {
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
		p.println(fmt.Sprintf("%s(line %d is not an event: %s)", logNoStamp, n, Safe(text)))
		return
	}
	p.event(e)
}

func (p *LogPrinter) event(e state.Event) {
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
func (p *LogPrinter) print(at time.Time, indent string, lines []string) {
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
func (p *LogPrinter) flushPending(suffix string) {
	if p.pending == nil {
		return
	}
	s := *p.pending
	p.pending = nil
	p.println(logStamp(s.at) + logIndent(s.Address) + "▸ " + logStepName(s.Name, s.Address, s.Type) + suffix)
}

func (p *LogPrinter) closeStep(addr string) {
	for i := len(p.open) - 1; i >= 0; i-- {
		if p.open[i] == addr {
			p.open = append(p.open[:i], p.open[i+1:]...)
			return
		}
	}
}

// nested is the indent of an event that happens inside the innermost open
// step (an agent step's task, a stage step's stages).
func (p *LogPrinter) nested() string {
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
	s := Safe(name)
	if s == "" {
		s = "step " + Safe(address)
	}
	if typ != "" {
		s += " (" + Safe(typ) + ")"
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
	b.WriteString(Safe(name))
	if e.Task != "" {
		b.WriteString(" task=" + logValue(e.Task))
	}
	keys := make([]string, 0, len(fields))
	for k := range fields {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		b.WriteString(" " + Safe(k) + "=" + logValue(fields[k]))
	}
	return b.String()
}

// fmtValue is a field's value for one line: a plain word as is, any other
// string quoted (which escapes what is not printable), the rest as JSON.
func logValue(v any) string {
	switch v := v.(type) {
	case string:
		if v == "" || strings.ContainsAny(v, " \t\n\"'=\\") || Safe(v) != v {
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
		return Safe(fmt.Sprint(v))
	}
	return Safe(string(b))
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
