package engine

import (
	"strings"
	"time"

	"github.com/vibeteam/vibeteam/adapters"
	"github.com/vibeteam/vibeteam/core/runner"
	"github.com/vibeteam/vibeteam/core/state"
	"github.com/vibeteam/vibeteam/handlers"
)

// Interaction policies when a task needs a person.
const (
	InteractionAsk  = "ask"  // emit EvInteraction; the CLI asks at the terminal
	InteractionPark = "park" // no terminal: park the session as waiting (exit 3)
	InteractionFail = "fail" // no terminal, --on-interaction=fail: the session fails
)

// Events of interactive tasks.
const (
	EvInteraction = "interaction" // a task waits for a person: state, excerpt
	EvAutoAction  = "auto_action" // the auto-policy answered: state, match, keys
	EvStateSeen   = "state"       // a state check matched a (changed) screen
	EvQueueSent   = "queue_sent"  // a pendingInputs item was typed
	EvKeptAlive   = "kept_alive"  // DONE, process left running (keepAlive)
)

const (
	idleState      = "interaction_idle"
	interactionPfx = "interaction_"
	actionCooldown = 600 * time.Millisecond
	submitDelay    = 120 * time.Millisecond
	excerptLines   = 15
)

// terminalState is the automation state of one interactive task; it is only
// touched by the task's wait loop.
type terminalState struct {
	automate     bool
	term         *runner.Terminal
	detections   chan runner.Detection
	awaitingTurn bool // a prompt or input was given and its turn has not run yet
	turnRan      bool
	lastActed    string
	lastActedAt  time.Time
	waitingState string // non-empty while WAITING_FOR_USER
	lastSeen     string // state of the previous detection
	attached     bool   // a person has the terminal (:attach)
	// recheck wakes the wait loop for a fresh look at the screen, changed
	// or not: when a cooldown ends (an answer whose keys were ignored leaves
	// the question on an unchanged screen, which would never be reported
	// again), and when an idle screen may have settled.
	recheck *time.Timer
	wakeAt  time.Time
	typedAt time.Time     // when the last input (or the prompt, at start) was given
	settle  time.Duration // how long an idle screen must stay unchanged to count as a turn
}

// wakeIn arms the recheck to fire within d, keeping an earlier wake-up.
func (ts *terminalState) wakeIn(d time.Duration) {
	at := time.Now().Add(d)
	if !ts.wakeAt.IsZero() && ts.wakeAt.Before(at) {
		return
	}
	ts.wakeAt = at
	ts.recheck.Reset(d)
}

// idleSettled reports whether the screen has stayed unchanged (no output)
// for the settle time since the last input was given, and otherwise
// arranges to look again.
func (ts *terminalState) idleSettled() bool {
	since := ts.typedAt
	if out := ts.term.LastOutput(); out.After(since) {
		since = out
	}
	if left := ts.settle - time.Since(since); left > 0 {
		ts.wakeIn(left)
		return false
	}
	return true
}

// startTerminal starts an interactive task (or a headless one whose adapter
// asks for a PTY) in a pseudo-terminal.
func (x *Executor) startTerminal(tr *taskRun, spec runner.Spec, lc adapters.LaunchConfig, prompt string, onOutput func(runner.Chunk)) (runner.Process, error) {
	ts := &terminalState{
		automate:     tr.mode == adapters.Interactive,
		detections:   make(chan runner.Detection, 1),
		awaitingTurn: prompt != "",
		recheck:      time.NewTimer(time.Hour),
		settle:       max(time.Second, 4*tr.adapter.QuietPeriod()),
		typedAt:      time.Now(), // a prompt is given at launch
	}
	ts.recheck.Stop()
	opts := runner.TerminalOptions{OnOutput: onOutput, Quiet: tr.adapter.QuietPeriod()}
	if tr.rawLog != nil {
		opts.RawLog = tr.rawLog
	}
	if ts.automate {
		for _, s := range tr.adapter.States() {
			opts.States = append(opts.States, runner.StatePattern{Name: s.Name, Pattern: s.Pattern})
		}
		opts.OnState = func(d runner.Detection) {
			// Latest wins: the wait loop only cares about the newest screen.
			select {
			case ts.detections <- d:
			default:
				select {
				case <-ts.detections:
				default:
				}
				select {
				case ts.detections <- d:
				default:
				}
			}
		}
	}
	term, err := runner.StartTerminal(spec, opts)
	if err != nil {
		return nil, err
	}
	ts.term = term
	tr.term = ts
	return term, nil
}

func stateKind(name string) string {
	switch {
	case name == "":
		return ""
	case name == idleState:
		return "idle"
	case strings.HasPrefix(name, interactionPfx):
		return "prompt"
	}
	return "working"
}

// onDetection drives an interactive task from what its screen shows.
func (tr *taskRun) onDetection(d runner.Detection) {
	ts, x, t := tr.term, tr.x, tr.task
	kind := stateKind(d.State)
	if d.State != ts.lastSeen {
		// Logged on change only: a spinner changes the screen many times a
		// second without changing the state.
		ts.lastSeen = d.State
		x.emit(EvStateSeen, t.ID, map[string]any{"state": d.State, "match": d.Match, "seq": d.Seq})
	}
	if ts.waitingState != "" && d.State != ts.waitingState {
		// The screen moved on (answered through attach, or by itself).
		ts.waitingState = ""
		x.setStatus(t.ID, state.TaskRunning, map[string]any{"reason": "answered"})
	}
	if d.State != ts.lastActed {
		ts.lastActed = ""
	}
	if ts.attached {
		return
	}
	switch kind {
	case "working":
		ts.turnRan = true
	case "prompt":
		if ts.waitingState == d.State {
			return
		}
		if since := time.Since(ts.lastActedAt); ts.lastActed == d.State && since < actionCooldown {
			// The answer was sent; the TUI has not redrawn past the prompt
			// yet. Looked at again when the cooldown ends.
			ts.wakeIn(actionCooldown - since)
			return
		}
		if x.opts.AutoApprove {
			if act, match := tr.autoAction(d); act != nil {
				ts.answered(d.State)
				_ = tr.proc.Send(act.Keys)
				x.emit(EvAutoAction, t.ID, map[string]any{"state": d.State, "match": match, "keys": act.Keys, "action": act.Description})
				return
			}
		}
		tr.askPerson(d)
	case "idle":
		if ts.awaitingTurn && !ts.turnRan && !ts.idleSettled() {
			// The turn has not been seen working. A fast turn (a slash
			// command) or an adapter without a working state still ends on
			// an idle screen: it counts once that has stayed the same for
			// the settle time.
			return
		}
		ts.awaitingTurn, ts.turnRan = false, false
		x.mu.Lock()
		queue := append([]string(nil), x.record(t.ID).PendingInputs...)
		x.mu.Unlock()
		if len(queue) == 0 {
			tr.completeWith("idle")
			return
		}
		tr.typeLine(queue[0], "queue")
		tr.popQueue()
		ts.awaitingTurn = true
		// The turn may leave the screen exactly as it was, which would never
		// be reported: look again once it could have settled.
		ts.typedAt = time.Now()
		ts.wakeIn(ts.settle)
		x.emit(EvQueueSent, t.ID, map[string]any{"text": queue[0], "remaining": len(queue) - 1})
	}
}

// onRecheck takes a fresh look at the screen, changed or not: when an
// answer's cooldown ends, or when an idle screen may have settled.
func (tr *taskRun) onRecheck() {
	ts := tr.term
	ts.wakeAt = time.Time{}
	if d, ok := ts.term.Detect(); ok {
		tr.onDetection(d)
	}
}

// answered starts the cooldown after keys were sent for a question: the
// same question is not answered again until the TUI has had time to move
// on, and is looked at again when the cooldown ends.
func (ts *terminalState) answered(state string) {
	ts.lastActed, ts.lastActedAt = state, time.Now()
	ts.wakeIn(actionCooldown)
}

// typeLine types text and then Enter. The pause between them keeps TUIs
// that detect pastes by timing (Ink) from taking the Enter as a newline.
func (tr *taskRun) typeLine(text, source string) {
	if text != "" {
		_ = tr.send(text, source)
		time.Sleep(submitDelay)
	}
	_ = tr.proc.Send("\r")
}

// autoAction returns the first auto-policy handler action for d.
func (tr *taskRun) autoAction(d runner.Detection) (*handlers.Action, string) {
	pol := tr.adapter.AutoPolicy()
	if pol == nil {
		return nil, ""
	}
	for _, h := range pol.Handlers {
		loc := h.When.FindStringIndex(d.Screen)
		if loc == nil {
			continue
		}
		match := d.Screen[loc[0]:loc[1]]
		if h.Send != "" {
			return &handlers.Action{Keys: h.Send, Description: "send"}, match
		}
		fn, err := handlers.Lookup(h.Use)
		if err != nil {
			continue
		}
		if act := fn(handlers.Context{TaskID: tr.task.ID, State: d.State, Screen: d.Screen, Match: match}); act != nil {
			if act.Description == "" {
				act.Description = h.Use
			}
			return act, match
		}
	}
	return nil, ""
}

// askPerson marks the task WAITING_FOR_USER and, depending on the policy,
// asks the CLI or parks/fails the session.
func (tr *taskRun) askPerson(d runner.Detection) {
	ts, x, t := tr.term, tr.x, tr.task
	ts.waitingState = d.State
	excerpt := Excerpt(d.Screen, excerptLines)
	x.mu.Lock()
	rec := x.record(t.ID)
	rec.Reason = "waiting:" + d.State
	rec.Excerpt = excerpt
	x.mu.Unlock()
	x.setStatus(t.ID, state.TaskWaitingForUser, map[string]any{"state": d.State})
	x.emit(EvInteraction, t.ID, map[string]any{
		"state": d.State, "excerpt": excerpt, "name": t.DisplayName(), "adapter": t.Adapter,
	})
	switch x.opts.Interaction {
	case InteractionPark:
		x.park(state.StatusWaiting, t.ID, "task "+t.ID+" needs a person ("+d.State+")")
	case InteractionFail:
		x.park(state.StatusFailed, t.ID, "task "+t.ID+" needs a person ("+d.State+") and --on-interaction=fail")
	}
}

// Excerpt is the last n lines of a screen, runs of blank lines counted as
// one (TUIs pin their input box to the bottom, far from the text above).
func Excerpt(screen string, n int) string {
	var lines []string
	blank := true
	for _, l := range strings.Split(strings.TrimRight(screen, "\n"), "\n") {
		isBlank := strings.TrimSpace(l) == ""
		if isBlank && blank {
			continue
		}
		blank = isBlank
		lines = append(lines, l)
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
