package cli

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

// backlogBoard shows a backlog run: at a terminal, one line per bead (id,
// title, step, state, elapsed, tokens and cost) and a line of totals,
// redrawn in place and cut to the width; without one, a timestamped line
// for each bead that starts, changes step or ends.
type backlogBoard struct {
	streams IO
	// mu is the backlog's lock (backlogRun.mu): the records it draws.
	mu   *sync.Mutex
	sess *state.Session

	outMu       sync.Mutex // orders writes to the terminal
	drawn       []int      // widths of the lines on screen
	held        bool
	heldOut     []string
	finished    bool
	width       func() int
	events      io.Writer
	eventsClose func() error
	prompter    *prompter
	meter       *budget.Meter // the run's spend and budget
	// live is a running bead's spend so far, as its agents stream it.
	live func(id string) (tokens int64, usd float64, ok bool)

	tickStop, tickDone chan struct{}
}

func newBacklogBoard(streams IO, eventsFile string, mu *sync.Mutex) (*backlogBoard, error) {
	b := &backlogBoard{streams: streams, mu: mu, width: stderrWidth(streams)}
	var err error
	if b.events, b.eventsClose, err = openEvents(streams, eventsFile); err != nil {
		return nil, err
	}
	return b, nil
}

// start says the run began and, at a terminal, starts the redraws.
func (b *backlogBoard) start(sess *state.Session) {
	b.mu.Lock()
	b.sess = sess
	bl := sess.Backlog
	what := "each bead's own grimoire"
	if bl.Grimoire != "" {
		what = "grimoire " + safe(bl.Grimoire)
	}
	msg := fmt.Sprintf("backlog %s: the ready beads, %d at once, %s", sess.ID, bl.Jobs, what)
	if len(bl.Labels) > 0 {
		msg += ", labels " + safe(strings.Join(bl.Labels, ","))
	}
	if bl.Limit > 0 {
		msg += fmt.Sprintf(", at most %d", bl.Limit)
	}
	b.mu.Unlock()
	b.line(msg)
	if b.streams.ErrTTY {
		b.tickStop, b.tickDone = make(chan struct{}), make(chan struct{})
		go b.tick()
	}
}

func (b *backlogBoard) tick() {
	redrawEvery(500*time.Millisecond, b.redraw, b.tickStop, b.tickDone)
}

// finish stops the redraws and leaves the last board on screen.
func (b *backlogBoard) finish() {
	if b.tickStop != nil {
		close(b.tickStop)
		<-b.tickDone
		b.tickStop = nil
	}
	b.outMu.Lock()
	b.clearLocked()
	b.finished = true
	b.outMu.Unlock()
}

func (b *backlogBoard) close() {
	if b.eventsClose != nil {
		_ = b.eventsClose()
	}
}

// hold and release give the terminal to the prompter and back.
func (b *backlogBoard) hold() {
	b.outMu.Lock()
	defer b.outMu.Unlock()
	b.clearLocked()
	b.held = true
}

func (b *backlogBoard) release() {
	b.outMu.Lock()
	b.held = false
	for _, l := range b.heldOut {
		fmt.Fprintln(b.streams.Err, l)
	}
	b.heldOut = nil
	b.outMu.Unlock()
	b.redraw()
}

// line prints a line above the board (safe text only), timestamped.
func (b *backlogBoard) line(msg string) {
	b.outMu.Lock()
	defer b.outMu.Unlock()
	l := time.Now().Format("15:04:05") + " " + msg
	if b.held {
		if len(b.heldOut) < maxHeldLines {
			b.heldOut = append(b.heldOut, l)
		}
		return
	}
	b.clearLocked()
	fmt.Fprintln(b.streams.Err, l)
}

// event takes one event of a bead's session: its step for the board, its
// ends as lines, everything to --events.
func (b *backlogBoard) event(bd *state.BacklogBead, e core.Event) {
	if b.events != nil {
		b.outMu.Lock()
		writeEventLine(b.events, bd.ID, e)
		b.outMu.Unlock()
	}
	if step, ok := stepOf(e); ok {
		b.mu.Lock()
		bd.Step = step
		b.mu.Unlock()
		if !b.streams.ErrTTY {
			b.line(fmt.Sprintf("%s ▸ %s", safe(bd.ID), safe(step)))
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
		if b.prompter != nil {
			b.prompter.enqueue(e, p, safe(bd.ID)+" "+safe(e.Task))
		}
	case events.MergeDone:
		b.line(fmt.Sprintf("%s merged %s into %s (%s)", safe(bd.ID), safe(p.Branch), safe(p.Base), safe(p.Commit)))
	case events.Warn:
		b.line(fmt.Sprintf("%s warning: %s", safe(bd.ID), safe(p.Warning)))
	case events.RunError:
		b.line(fmt.Sprintf("%s error: %s", safe(bd.ID), safe(p.Error)))
	}
}

// beadEnded says how a bead's run ended.
func (b *backlogBoard) beadEnded(bd *state.BacklogBead) {
	b.mu.Lock()
	msg := fmt.Sprintf("%s %s %s", beadMark(bd.Status).glyph, safe(bd.ID), safe(bd.Status))
	if bd.Reason != "" {
		msg += ": " + safe(strings.TrimSpace(excerpt.FirstLine(bd.Reason)))
	}
	if bd.StartedAt != nil {
		msg += " after " + beadElapsed(bd, time.Now())
	}
	b.mu.Unlock()
	b.line(msg)
}

// redraw draws the board in place (at a terminal).
func (b *backlogBoard) redraw() {
	if !b.streams.ErrTTY {
		return
	}
	b.mu.Lock()
	lines := b.rows(b.width())
	b.mu.Unlock()
	b.outMu.Lock()
	defer b.outMu.Unlock()
	if b.held || b.finished {
		return
	}
	b.clearLocked()
	var sb strings.Builder
	for _, l := range lines {
		sb.WriteString(l + "\n")
		b.drawn = append(b.drawn, runewidth.StringWidth(l))
	}
	_, _ = io.WriteString(b.streams.Err, sb.String())
}

// rows are the board's lines, cut to cols (0: unknown, 80).
func (b *backlogBoard) rows(cols int) []string {
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
		l := fmt.Sprintf("%s %-10s %-13s %-12s %7s %12s  %s", beadMark(bd.Status).glyph, fit(safe(bd.ID), 10), fit(safe(bd.Status), 13),
			fit(safe(step), 12), beadElapsed(bd, now), spend(beadTokens, beadCost), safe(bd.Title))
		lines = append(lines, fit(l, cols-1))
	}
	var parts []string
	for _, st := range []string{string(state.StatusRunning), state.BeadStarting, string(state.StatusCompleted), string(state.StatusFailed), string(state.StatusBlocked), string(state.StatusPendingMerge), string(state.StatusWaiting), string(state.StatusLimited), state.BeadSkipped} {
		if n := counts[st]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, st))
		}
	}
	spent := spend(tokens, cost)
	if b.meter != nil && !b.meter.Limit().IsZero() {
		spent = b.meter.Report()
	}
	total := fmt.Sprintf("Σ %d bead(s): %s · %s · %s", len(b.sess.Backlog.Beads), strings.Join(parts, ", "), spent, now.Sub(b.sess.StartTime).Round(time.Second))
	return append(lines, fit(total, cols-1))
}

// clearLocked erases the board drawn (outMu held).
func (b *backlogBoard) clearLocked() {
	if b.streams.ErrTTY {
		eraseBoard(b.streams.Err, b.drawn, b.width())
	}
	b.drawn = nil
}
