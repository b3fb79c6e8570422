package ui

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/mattn/go-runewidth"

	"github.com/vibeteam/vibeteam/core"
	"github.com/vibeteam/vibeteam/core/budget"
	"github.com/vibeteam/vibeteam/core/events"
	"github.com/vibeteam/vibeteam/core/state"
	"github.com/vibeteam/vibeteam/internal/excerpt"
)

// Board shows a backlog run: at a terminal, one line per bead (id,
// title, step, state, elapsed, tokens and cost) and a line of totals,
// redrawn in place and cut to the width; without one, a timestamped line
// for each bead that starts, changes step or ends.
//
// What it writes, it writes in its loop (see loop): the beads' goroutines
// and the prompter only send. The bead records it draws are the backlog's,
// under the backlog's lock: their lines are made under that lock, outside
// the loop, and handed to it; the loop never takes it. Its owner ends it
// with Close.
type Board struct {
	*loop
	streams Streams
	// mu is the backlog's lock (backlogRun.mu): the records it draws.
	mu    *sync.Mutex
	sess  *state.Session
	width func() int
	// Prompter asks about the beads' tasks that wait (nil: no terminal).
	Prompter *Prompter
	// meter is the run's spend and budget; live a running bead's spend so
	// far, as its agents stream it. Both are set by Start, under mu, with
	// sess, so the redraws (which draw nothing before sess) see them.
	meter *budget.Meter
	live  func(id string) (tokens int64, usd float64, ok bool)

	tickStop, tickDone chan struct{}

	// The loop's own.
	drawn    []int // widths of the lines on screen
	held     bool
	heldOut  []string
	finished bool
}

// NewBoard is a backlog run's board; mu is the run's lock, which guards
// the bead records the board draws. Close ends it.
func NewBoard(streams Streams, mu *sync.Mutex) *Board {
	b := &Board{streams: streams, mu: mu, width: stderrWidth(streams)}
	b.loop = startLoop(nil)
	return b
}

// Close ends the board's loop, once every line sent before is written,
// and waits for it.
func (b *Board) Close() { b.close() }

// Start says the run began and, at a terminal, starts the redraws of the
// beads of sess, the spend of the run (meter) and of each running bead
// (live: its spend so far, ok false when it has none yet).
func (b *Board) Start(sess *state.Session, meter *budget.Meter, live func(id string) (tokens int64, usd float64, ok bool)) {
	b.mu.Lock()
	b.sess, b.meter, b.live = sess, meter, live
	bl := sess.Backlog
	what := "each bead's own grimoire"
	if bl.Grimoire != "" {
		what = "grimoire " + Safe(bl.Grimoire)
	}
	msg := fmt.Sprintf("backlog %s: the ready beads, %d at once, %s", sess.ID, bl.Jobs, what)
	if len(bl.Labels) > 0 {
		msg += ", labels " + Safe(strings.Join(bl.Labels, ","))
	}
	if bl.Limit > 0 {
		msg += fmt.Sprintf(", at most %d", bl.Limit)
	}
	b.mu.Unlock()
	b.Line(msg)
	if b.streams.ErrTTY {
		b.tickStop, b.tickDone = make(chan struct{}), make(chan struct{})
		go b.tick()
	}
}

func (b *Board) tick() {
	redrawEvery(500*time.Millisecond, b.redraw, b.tickStop, b.tickDone)
}

// Finish stops the redraws and leaves the last board on screen.
func (b *Board) Finish() {
	if b.tickStop != nil {
		close(b.tickStop)
		<-b.tickDone
		b.tickStop = nil
	}
	b.call(func() {
		b.clear()
		b.finished = true
	})
}

// hold and release give the terminal to the prompter and back.
func (b *Board) hold() {
	b.call(func() {
		b.clear()
		b.held = true
	})
}

func (b *Board) release() {
	rows := b.rowsNow()
	b.call(func() {
		b.held = false
		for _, l := range b.heldOut {
			fmt.Fprintln(b.streams.Err, l)
		}
		b.heldOut = nil
		b.draw(rows)
	})
}

// Line prints a line above the board (safe text only), timestamped.
func (b *Board) Line(msg string) {
	l := time.Now().Format("15:04:05") + " " + msg
	b.send(func() {
		if b.held {
			if len(b.heldOut) < maxHeldLines {
				b.heldOut = append(b.heldOut, l)
			}
			return
		}
		b.clear()
		fmt.Fprintln(b.streams.Err, l)
	})
}

// Event takes one event of a bead's session: its step for the board, its
// ends as lines.
func (b *Board) Event(bd *state.BacklogBead, e core.Event) {
	if step, ok := stepOf(e); ok {
		b.mu.Lock()
		bd.Step = step
		b.mu.Unlock()
		if !b.streams.ErrTTY {
			b.Line(fmt.Sprintf("%s ▸ %s", Safe(bd.ID), Safe(step)))
		}
	}
	switch p := e.Payload.(type) {
	case events.SessionStart, events.SessionResume:
		b.mu.Lock()
		if bd.Status == state.BeadStarting || bd.Status == string(state.StatusCancelled) {
			bd.Status = string(state.StatusRunning)
		}
		b.mu.Unlock()
	case events.InteractionNeeded:
		if b.Prompter != nil {
			b.Prompter.enqueue(e, p, Safe(bd.ID)+" "+Safe(e.Task))
		}
	case events.MergeDone:
		b.Line(fmt.Sprintf("%s merged %s into %s (%s)", Safe(bd.ID), Safe(p.Branch), Safe(p.Base), Safe(p.Commit)))
	case events.Warn:
		b.Line(fmt.Sprintf("%s warning: %s", Safe(bd.ID), Safe(p.Warning)))
	case events.RunError:
		b.Line(fmt.Sprintf("%s error: %s", Safe(bd.ID), Safe(p.Error)))
	}
}

// BeadEnded says how a bead's run ended.
func (b *Board) BeadEnded(bd *state.BacklogBead) {
	b.mu.Lock()
	msg := fmt.Sprintf("%s %s %s", beadMark(bd.Status).glyph, Safe(bd.ID), Safe(bd.Status))
	if bd.Reason != "" {
		msg += ": " + Safe(strings.TrimSpace(excerpt.FirstLine(bd.Reason)))
	}
	if bd.StartedAt != nil {
		msg += " after " + BeadElapsed(bd, time.Now())
	}
	b.mu.Unlock()
	b.Line(msg)
}

// redraw draws the board in place (at a terminal).
func (b *Board) redraw() {
	if rows := b.rowsNow(); rows != nil {
		b.send(func() { b.draw(rows) })
	}
}

// rowsNow are the board's lines now, at a terminal (nil otherwise).
func (b *Board) rowsNow() []string {
	if !b.streams.ErrTTY {
		return nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.rows(b.width())
}

// draw writes the board's lines in place of the last ones (in the loop).
func (b *Board) draw(lines []string) {
	if b.held || b.finished || !b.streams.ErrTTY {
		return
	}
	b.clear()
	var sb strings.Builder
	for _, l := range lines {
		sb.WriteString(l + "\n")
		b.drawn = append(b.drawn, runewidth.StringWidth(l))
	}
	_, _ = io.WriteString(b.streams.Err, sb.String())
}

// rows are the board's lines, cut to cols (0: unknown, 80).
func (b *Board) rows(cols int) []string {
	if b.sess == nil {
		return nil
	}
	if cols <= 0 {
		cols = 80
	}
	now := time.Now()
	var lines []string
	var tokens int64
	var cost float64
	counts := map[string]int{}
	for _, bd := range b.sess.Backlog.Beads {
		beadTokens, beadCost := bd.Tokens, bd.CostUSD
		if running := bd.Status == string(state.StatusRunning) || bd.Status == state.BeadStarting; running && b.live != nil {
			if t, c, ok := b.live(bd.ID); ok {
				beadTokens, beadCost = t, c
			}
		}
		tokens += beadTokens
		cost += beadCost
		counts[bd.Status]++
		step := bd.Step
		if bd.Status != string(state.StatusRunning) && bd.Status != state.BeadStarting {
			step = ""
		}
		l := fmt.Sprintf("%s %-10s %-13s %-12s %7s %12s  %s", beadMark(bd.Status).glyph, Fit(Safe(bd.ID), 10), Fit(Safe(bd.Status), 13),
			Fit(Safe(step), 12), BeadElapsed(bd, now), Spend(beadTokens, beadCost), Safe(bd.Title))
		lines = append(lines, Fit(l, cols-1))
	}
	var parts []string
	for _, st := range []string{string(state.StatusRunning), state.BeadStarting, string(state.StatusCompleted), string(state.StatusFailed), string(state.StatusBlocked), string(state.StatusPendingMerge), string(state.StatusWaiting), string(state.StatusLimited), state.BeadSkipped} {
		if n := counts[st]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, st))
		}
	}
	spent := Spend(tokens, cost)
	if b.meter != nil && !b.meter.Limit().IsZero() {
		spent = b.meter.Report()
	}
	total := fmt.Sprintf("Σ %d bead(s): %s · %s · %s", len(b.sess.Backlog.Beads), strings.Join(parts, ", "), spent, now.Sub(b.sess.StartTime).Round(time.Second))
	return append(lines, Fit(total, cols-1))
}

// clear erases the board drawn (in the loop).
func (b *Board) clear() {
	if b.streams.ErrTTY {
		eraseBoard(b.streams.Err, b.drawn, b.width())
	}
	b.drawn = nil
}

// stepOf is the step an event says a bead is at.
func stepOf(e core.Event) (string, bool) {
	p, ok := e.Payload.(events.StepStarted)
	return p.Name, ok && p.Name != ""
}
