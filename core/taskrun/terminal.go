package taskrun

import (
	"fmt"
	"os"
	"regexp"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/vibeteam/vibeteam/adapters"
	"github.com/vibeteam/vibeteam/core/events"
	"github.com/vibeteam/vibeteam/core/runner"
	"github.com/vibeteam/vibeteam/core/state"
	"github.com/vibeteam/vibeteam/core/vocab"
	"github.com/vibeteam/vibeteam/handlers"
	"github.com/vibeteam/vibeteam/internal/excerpt"
)

// How a task's turn was shown to have run (the evidence field of its
// task_finished event).
const (
	evidenceWorking = "working" // a working state was seen after the input
	evidenceScreen  = "screen"  // fallback: output followed, the input shows in the transcript, the idle screen settled
)

const (
	idleState      = "interaction_idle"
	interactionPfx = "interaction_"
	// stepCooldown: after a person's navigation key (an arrow, Tab) the
	// same question is asked again once the TUI has had time to redraw.
	stepCooldown = 600 * time.Millisecond
	submitDelay  = 120 * time.Millisecond
	excerptLines = 15
)

// answered is one appearance of a question that has had its answer: the
// screen it was answered on and where its match started. Later screens
// show it unchanged (the TUI has not redrawn yet), scrolled up (a
// line-oriented program keeps it in its scrollback), or gone; only a match
// below it, or any match once it has gone, is a new appearance.
type answered struct {
	state     string
	pattern   *regexp.Regexp
	lines     []string // its rendered text (trailing blank rows left out)
	rows      int      // the terminal's height
	row, col  int      // start of the answered match (col in bytes of its line)
	cursorRow int
	newlines  uint64 // newlines fed to the screen it was answered on
	at        time.Time
}

// shift finds how far the answered appearance has scrolled up on cur (0
// when it is where it was) and reports whether it is still shown.
func (a *answered) shift(cur []string, curNewlines uint64) (int, bool) {
	lf := int(curNewlines - a.newlines)
	if curNewlines < a.newlines {
		lf = 0
	}
	shownAt := func(s int) bool {
		r := a.row - s
		if r < 0 || r >= len(cur) || a.col > len(cur[r]) {
			return false
		}
		rest := strings.Join(cur[r:], "\n")[a.col:]
		if loc := a.pattern.FindStringIndex(rest); loc == nil || loc[0] != 0 {
			return false
		}
		// Scrolled: the lines above it moved up with it. (Not required in
		// place: a TUI may redraw a status line above its dialog.)
		for i := s; i < a.row && s > 0; i++ {
			if i-s >= len(cur) || a.lines[i] != cur[i-s] {
				return false
			}
		}
		return true
	}
	// A program that only writes lines scrolls by what did not fit below
	// the cursor; that estimate, when the screen agrees, wins over "in
	// place" on screens that repeat themselves line for line.
	if est := a.cursorRow + lf - (a.rows - 1); est > 0 && shownAt(est) {
		return est, true
	}
	for s := 0; s <= min(lf, a.row); s++ {
		if shownAt(s) {
			return s, true
		}
	}
	return 0, false
}

// terminal is the PTY driver: the task's process runs in a
// pseudo-terminal, its screen is rendered, and an interactive task is
// driven from what the screen shows (its adapter's states, the
// auto-policy, a person's answers). Its state is only touched by the wait
// loop (onSignal), but for its inbox.
type terminal struct {
	a        *Attempt
	automate bool // interactive: the screen's states drive the task
	rawLog   *os.File
	term     *runner.Terminal

	// inbox is what comes for the wait loop from other goroutines: the
	// newest screen (latest wins: the loop only cares about the newest),
	// a recheck due, a person's inputs; ready tells the loop there is
	// something in it.
	mu         sync.Mutex
	detection  *runner.Detection
	recheckDue bool
	inputs     []input
	ready      chan struct{}

	states     []adapters.State
	stuckAfter time.Duration // an answered question unchanged with no output this long is stuck

	// answers holds, per question state, the appearance last answered.
	answers map[string]*answered
	// stepState/stepAt: a person's navigation key; the question is asked
	// again after stepCooldown.
	stepState string
	stepAt    time.Time
	// shownAt: when the live, unanswered question of each state was first
	// seen; it is answered once it has settled (answerReady).
	shownAt map[string]time.Time
	quiet   time.Duration
	// minShown: a question is answered once shown this long (the
	// adapter's answerSettle; 0 for most).
	minShown time.Duration
	// choosing: a menu option being chosen by its label, one arrow key at
	// a time, checked on the screen before Enter.
	choosing *choice

	// The turn of the prompt or of the last input typed, and its evidence.
	awaitingTurn bool
	turnText     string    // what was submitted, looked for in the transcript
	typedAt      time.Time // when it was submitted (launch, for a prompt)
	turnRan      bool      // a working state was seen since
	settle       time.Duration

	waitingState string // non-empty while WAITING_FOR_USER
	asked        runner.Detection
	askedAt      int    // where the question the person was asked about starts
	lastSeen     string // state of the previous detection
	attached     bool   // a person has the terminal (:attach)
	// recheck wakes the wait loop for a fresh look at the screen, changed
	// or not: an unchanged screen is never reported again, yet time alone
	// decides that an answered question is stuck, that an idle screen has
	// settled, or that a navigation step is done.
	recheck *time.Timer
	wakeAt  time.Time
}

// wakeIn arms the recheck to fire within d, keeping an earlier wake-up.
func (ts *terminal) wakeIn(d time.Duration) {
	at := time.Now().Add(d)
	if !ts.wakeAt.IsZero() && ts.wakeAt.Before(at) {
		return
	}
	ts.wakeAt = at
	ts.recheck.Reset(d)
}

// quietFor reports whether no output has come since max(since, the last
// output) for d, and otherwise arranges to look again when it could be.
func (ts *terminal) quietFor(since time.Time, d time.Duration) bool {
	if out := ts.term.LastOutput(); out.After(since) {
		since = out
	}
	if left := d - time.Since(since); left > 0 {
		ts.wakeIn(left)
		return false
	}
	return true
}

// maxInputs bounds the inputs of a person waiting for the wait loop.
const maxInputs = 16

func (ts *terminal) reportsSpend() bool      { return false }
func (ts *terminal) shortLog(Capture) bool   { return false }
func (ts *terminal) watchFirst() bool        { return false }
func (ts *terminal) signal() <-chan struct{} { return ts.ready }

// feed: a terminal's queue is typed as its idle screens come.
func (ts *terminal) feed(*launch) <-chan struct{} {
	fed := make(chan struct{})
	close(fed)
	return fed
}

// start starts the task (interactive, or headless with an adapter that
// asks for a PTY) in a pseudo-terminal; its raw bytes go to a log of their
// own.
func (ts *terminal) start(l *launch, out func(runner.Chunk)) (runner.Process, error) {
	ad := ts.a.adapter
	if l.logPath != "" {
		raw := strings.TrimSuffix(l.logPath, ".log") + ".raw.log"
		var err error
		if ts.rawLog, err = os.OpenFile(raw, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600); err != nil {
			return nil, err
		}
	}
	ts.ready = make(chan struct{}, 1)
	ts.states = ad.States()
	ts.stuckAfter = ad.StuckAfter()
	ts.answers = map[string]*answered{}
	ts.shownAt = map[string]time.Time{}
	ts.quiet, ts.minShown = ad.QuietPeriod(), ad.AnswerSettle()
	ts.awaitingTurn, ts.turnText = l.prompt != "", l.prompt
	ts.typedAt = time.Now() // a prompt is given at launch
	ts.settle = max(time.Second, 4*ad.QuietPeriod())
	ts.recheck = time.AfterFunc(time.Hour, ts.recheckDueNow)
	ts.recheck.Stop()
	opts := runner.TerminalOptions{OnOutput: out, Quiet: ad.QuietPeriod()}
	if ts.rawLog != nil {
		opts.RawLog = ts.rawLog
	}
	if ts.automate {
		for _, s := range ts.states {
			opts.States = append(opts.States, runner.StatePattern{Name: s.Name, Pattern: s.Pattern})
		}
		opts.OnState = ts.screenChanged
	}
	term, err := runner.StartTerminal(l.spec, opts)
	if err != nil {
		return nil, err
	}
	ts.term = term
	return term, nil
}

// post changes the inbox and tells the wait loop.
func (ts *terminal) post(change func()) {
	ts.mu.Lock()
	change()
	ts.mu.Unlock()
	select {
	case ts.ready <- struct{}{}:
	default: // told already
	}
}

// screenChanged is the runner's OnState: the newest screen replaces one
// the loop has not looked at yet.
func (ts *terminal) screenChanged(d runner.Detection) {
	ts.post(func() { ts.detection = &d })
}

func (ts *terminal) recheckDueNow() { ts.post(func() { ts.recheckDue = true }) }

// deliver hands a person's input to the wait loop.
func (ts *terminal) deliver(in input) error {
	ts.mu.Lock()
	full := len(ts.inputs) >= maxInputs
	ts.mu.Unlock()
	if full {
		return fmt.Errorf("task %q has too many unsent replies", ts.a.task.ID)
	}
	ts.post(func() { ts.inputs = append(ts.inputs, in) })
	return nil
}

// onSignal takes what the inbox holds: a person's inputs first, then the
// newest screen, then a recheck. It never ends the attempt itself.
func (ts *terminal) onSignal() (outcome, bool) {
	ts.mu.Lock()
	inputs, d, recheck := ts.inputs, ts.detection, ts.recheckDue
	ts.inputs, ts.detection, ts.recheckDue = nil, nil, false
	ts.mu.Unlock()
	for _, in := range inputs {
		ts.apply(in)
	}
	if d != nil {
		ts.onDetection(*d)
	}
	if recheck {
		ts.onRecheck()
	}
	return outcome{}, false
}

// apply types a person's input; the task is RUNNING again.
func (ts *terminal) apply(in input) {
	a := ts.a
	switch {
	case in.attach:
		ts.attached = true
	case in.detach:
		ts.attached = false
		// Look at the screen as it is now.
		ts.lastSeen = ""
		if d, ok := ts.term.Detect(); ok {
			ts.onDetection(d)
		}
		return
	case in.enter:
		in.sentAt = ts.typeLine(in.text, "user")
	default:
		if err := a.send(in.text, "user"); err != nil {
			return
		}
	}
	if ts.waitingState != "" {
		// The answer counts for this appearance of the question: it is not
		// asked again while the TUI redraws past it.
		ts.answeredByPerson(in)
		ts.waitingState = ""
		a.host.SetStatus(a.task.ID, state.TaskRunning, events.TaskStatusChange{Reason: "answered"})
	}
}

// busy: silence while a person is asked, or has the terminal, is not
// inactivity.
func (ts *terminal) busy() bool { return ts.waitingState != "" || ts.attached }

// judge: the exit says how it went (a task whose screen said it was done
// has completed before).
func (ts *terminal) judge(runner.Result) (outcome, bool) { return outcome{}, false }

// interrupted: a task stopped while it waited for a person says so.
func (ts *terminal) interrupted(parkedAs state.Status, res runner.Result) (outcome, bool) {
	switch {
	case ts.waitingState == "" || parkedAs == "":
		return outcome{}, false
	case parkedAs == state.StatusFailed: // --on-interaction=fail
		// The session fails for want of a person: the task is failed too,
		// not left waiting for one.
		return failedWith("interaction_failed", "needed a person ("+ts.waitingState+") with --on-interaction=fail", res), true
	}
	return waitingWith(interactionParked, "parked while waiting for a person ("+ts.waitingState+")", res), true
}

func (ts *terminal) closeLogs() {
	if ts.rawLog != nil {
		_ = ts.rawLog.Close()
	}
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

// classify sets d's state to the first state with a live match on its
// screen and returns where that match starts. A question already answered
// there (still drawn, or left in the scrollback) is not live, so the states
// after it get their turn; stale is that answered appearance, and
// staleAt where it is now, when one was passed over.
func (ts *terminal) classify(d *runner.Detection) (start int, stale *answered, staleAt int) {
	d.State, d.Match = "", ""
	var lines []string
	found := func(name string, loc []int) (int, *answered, int) {
		d.State, d.Match = name, d.Screen[loc[0]:loc[1]]
		return loc[0], stale, staleAt
	}
	for _, s := range ts.states {
		locs := s.Pattern.FindAllStringIndex(d.Screen, -1)
		a := ts.answers[s.Name]
		if len(locs) == 0 {
			if a != nil {
				delete(ts.answers, s.Name) // gone: drawn again later, it is new
			}
			continue
		}
		if stateKind(s.Name) != "prompt" {
			return found(s.Name, locs[0])
		}
		// A program asks one question at a time: of several, the newest,
		// lowest one is live; the others were answered before.
		if a == nil {
			return found(s.Name, locs[len(locs)-1])
		}
		if lines == nil {
			lines = strings.Split(d.Screen, "\n")
		}
		shift, shown := a.shift(lines, d.Newlines)
		if !shown {
			delete(ts.answers, s.Name)
			return found(s.Name, locs[len(locs)-1])
		}
		oldRow, oldCol := a.row-shift, a.col
		{
			last := locs[len(locs)-1]
			row, col := position(d.Screen, last[0])
			if row > oldRow || (row == oldRow && col > oldCol) {
				return found(s.Name, last)
			}
		}
		if stale == nil {
			stale, staleAt = a, offset(lines, oldRow, oldCol)
		}
	}
	return 0, stale, staleAt
}

// position turns a byte offset of screen into its row and the byte column
// in that row.
func position(screen string, off int) (row, col int) {
	row = strings.Count(screen[:off], "\n")
	return row, off - lineStart(screen, off)
}

// offset is the byte offset of row, col on a screen split into lines.
func offset(lines []string, row, col int) int {
	off := 0
	for _, l := range lines[:row] {
		off += len(l) + 1
	}
	return off + col
}

func lineStart(s string, off int) int { return strings.LastIndexByte(s[:off], '\n') + 1 }

func (ts *terminal) patternOf(name string) *regexp.Regexp {
	for _, s := range ts.states {
		if s.Name == name {
			return s.Pattern
		}
	}
	return nil
}

// Settling before an answer: a question is answered once the screen has
// been quiet for the quiet period, or, when output never stops, once it
// has been shown for maxShown. A TUI may draw a dialog before it reads keys
// (codex, at start-up, reads its terminal-query replies and drops what else
// arrives): its adapter's answerSettle (ts.minShown) makes the question
// wait until it has been shown that long too.
const maxShown = 3 * time.Second

// answerReady reports whether the live question of state has settled, and
// otherwise arranges to look again.
func (ts *terminal) answerReady(state string) bool {
	first, ok := ts.shownAt[state]
	if !ok {
		first = time.Now()
		ts.shownAt[state] = first
	}
	shown := time.Since(first)
	if shown >= maxShown {
		return true
	}
	if shown < ts.minShown {
		ts.wakeIn(ts.minShown - shown)
		return false
	}
	if !ts.quietFor(time.Time{}, ts.quiet) { // since the last output
		if left := maxShown - shown; left > 0 {
			ts.wakeIn(left)
		}
		return false
	}
	return true
}

// dialogStart is where the dialog whose question matched at start begins
// on screen: below the last rule (a line of ─ or a box top) above the
// question's line, or at the top of the screen, but never above an older
// question already answered (stale, now at staleAt).
func dialogStart(screen string, start int, stale *answered, staleAt int) int {
	top := 0
	if stale != nil && staleAt < start {
		if nl := strings.IndexByte(screen[staleAt:], '\n'); nl >= 0 && staleAt+nl+1 <= lineStart(screen, start) {
			top = staleAt + nl + 1
		}
	}
	for off := lineStart(screen, start); off > top; {
		prev := lineStart(screen, off-1)
		if isRule(screen[prev : off-1]) {
			return off
		}
		off = prev
	}
	return top
}

// isRule reports whether a screen line is a horizontal rule or a box's top
// edge: what TUIs draw above a dialog.
func isRule(line string) bool {
	l := strings.TrimSpace(line)
	if strings.HasPrefix(l, "╭") || strings.HasPrefix(l, "┌") {
		return true
	}
	n := 0
	for _, r := range l {
		switch r {
		case '─', '━', '═', '-':
			n++
		default:
			return false
		}
	}
	return n >= 10
}

// choice is a menu option being chosen by its label.
type choice struct {
	state       string
	label       string
	description string
	top         int // where the dialog starts on the screen it was found on
	keys        string
	steps       int       // arrow keys sent
	stalled     int       // arrow keys that did not move the selection
	sentAt      time.Time // when the last arrow key was sent
	selected    int       // the selection's row before it
}

// maxChoiceSteps bounds the arrow keys sent to reach one option.
const maxChoiceSteps = 12

// continueChoice takes the next step of choosing ts.choosing's option on
// d's screen: Enter once the selection is on it, otherwise one arrow key
// toward it (looked at again once the TUI has redrawn). A label not on the
// screen, or a selection that does not move, is a question for a person:
// nothing is guessed.
func (ts *terminal) continueChoice(d runner.Detection, start int) {
	host, t := ts.a.host, ts.a.task
	ch := ts.choosing
	if ch.steps > 0 {
		if !ts.quietFor(ch.sentAt, ts.quiet) {
			return
		}
	}
	top := min(ch.top, lineStart(d.Screen, start))
	dialog := d.Screen[top:]
	m := handlers.FindOption(dialog, ch.label)
	fail := func(why string) {
		ts.choosing = nil
		ts.askedAt = start
		ts.askPerson(d, why)
	}
	switch {
	case m.Option < 0:
		fail(fmt.Sprintf("the option %q to choose is not on the screen%s", ch.label, ts.a.versionNote()))
		return
	case m.Selected < 0:
		fail(fmt.Sprintf("the option %q is on the screen but no selection marker is%s", ch.label, ts.a.versionNote()))
		return
	case m.OnOption():
		ts.choosing = nil
		ch.keys += "\r"
		ts.remember(d, start)
		_ = ts.a.proc.Send("\r")
		host.Emit(t.ID, events.AutoAct{State: d.State, Match: d.Match, Keys: ch.keys, Action: ch.description, Choose: ch.label})
		return
	}
	if ch.steps > 0 && m.Selected == ch.selected {
		if time.Since(ch.sentAt) < stepCooldown {
			ts.wakeIn(stepCooldown - time.Since(ch.sentAt))
			return
		}
		ch.stalled++
	}
	if ch.steps >= maxChoiceSteps || ch.stalled >= 2 {
		fail(fmt.Sprintf("the selection did not reach %q after %d arrow keys%s", ch.label, ch.steps, ts.a.versionNote()))
		return
	}
	key := m.Key()
	ch.keys += key
	ch.steps++
	ch.selected = m.Selected
	_ = ts.a.proc.Send(key)
	ch.sentAt = time.Now()
	ts.wakeIn(stepCooldown)
}

// remember records that d's question was answered (by the policy or by a
// person) at the match starting at off.
func (ts *terminal) remember(d runner.Detection, off int) {
	p := ts.patternOf(d.State)
	if p == nil {
		return
	}
	delete(ts.shownAt, d.State)
	if ts.awaitingTurn {
		// The turn goes on after the answer (a tool runs, then the model
		// is asked again): an idle screen shown before it resumes is not
		// its end. Its evidence is looked for from now.
		ts.typedAt, ts.turnRan = time.Now(), false
	}
	row, col := position(d.Screen, off)
	_, rows := ts.term.Size()
	ts.answers[d.State] = &answered{
		state: d.State, pattern: p, lines: strings.Split(d.Screen, "\n"), rows: rows,
		row: row, col: col, cursorRow: d.CursorRow, newlines: d.Newlines,
		at: time.Now(),
	}
	// Looked at again when it could be stuck, changed screen or not.
	ts.wakeIn(ts.stuckAfter)
}

// onDetection drives an interactive task from what its screen shows.
func (ts *terminal) onDetection(d runner.Detection) {
	host, t := ts.a.host, ts.a.task
	start, stale, staleAt := ts.classify(&d)
	kind := stateKind(d.State)
	for st := range ts.shownAt {
		if st != d.State {
			delete(ts.shownAt, st) // gone before it was answered
		}
	}
	if d.State != ts.lastSeen {
		// Logged on change only: a spinner changes the screen many times a
		// second without changing the state.
		ts.lastSeen = d.State
		host.Emit(t.ID, events.StateMatch{State: d.State, Match: d.Match, Seq: d.Seq})
	}
	if ts.waitingState == unknownState && d.State == "" {
		return // still a screen the adapter does not know: still asked
	}
	if ts.waitingState != "" && d.State != ts.waitingState {
		// The screen moved on (answered through attach, or by itself).
		ts.waitingState = ""
		host.SetStatus(t.ID, state.TaskRunning, events.TaskStatusChange{Reason: "answered"})
	}
	if ts.attached || ts.waitingState != "" {
		return
	}
	if kind == "working" {
		ts.turnRan = true
	}
	if kind != "prompt" && stale != nil && ts.stuck(stale, staleAt, d) {
		return
	}
	if kind == "" && len(ts.states) > 0 {
		ts.unmatched(d)
		return
	}
	if ts.choosing != nil && (kind != "prompt" || d.State != ts.choosing.state) {
		// The menu went away before its option was entered (the TUI moved
		// on by itself): nothing more to choose.
		ts.choosing = nil
	}
	switch kind {
	case "prompt":
		ts.onQuestion(d, start, stale, staleAt)
	case "idle":
		ts.onIdle(d, start)
	}
}

// onQuestion answers the live question on d's screen (at start) by the
// auto-policy, or asks a person, once it has settled.
func (ts *terminal) onQuestion(d runner.Detection, start int, stale *answered, staleAt int) {
	host, t := ts.a.host, ts.a.task
	if ts.choosing != nil {
		ts.continueChoice(d, start)
		return
	}
	if ts.stepState == d.State {
		if since := time.Since(ts.stepAt); since < stepCooldown {
			// A navigation key was sent; the TUI has not redrawn yet.
			ts.wakeIn(stepCooldown - since)
			return
		}
	}
	ts.stepState = ""
	if !ts.answerReady(d.State) {
		return
	}
	if ts.a.cfg.AutoApprove {
		// The handlers see the whole dialog, not an older question left
		// above it.
		ctx := handlers.Context{TaskID: t.ID, State: d.State, Screen: d.Screen[dialogStart(d.Screen, start, stale, staleAt):], Match: d.Match}
		if act := ts.a.adapter.AutoPolicy().Action(ctx); act != nil {
			if act.Choose != "" {
				ts.choosing = &choice{state: d.State, label: act.Choose, description: act.Description, top: len(d.Screen) - len(ctx.Screen)}
				ts.continueChoice(d, start)
				return
			}
			ts.remember(d, start)
			_ = ts.a.proc.Send(act.Keys)
			host.Emit(t.ID, events.AutoAct{State: d.State, Match: d.Match, Keys: act.Keys, Action: act.Description})
			return
		}
	}
	ts.askedAt = start
	ts.askPerson(d, "")
}

// onIdle ends the turn shown to have run on an idle screen: the next
// queued input is typed, or with none left the task is DONE.
func (ts *terminal) onIdle(d runner.Detection, start int) {
	host, t := ts.a.host, ts.a.task
	if ts.awaitingTurn {
		evidence := ts.turnEvidence(d, start)
		if evidence == "" {
			ts.idleWithoutEvidence(d)
			return
		}
		ts.awaitingTurn, ts.turnRan = false, false
		ts.a.evidence = evidence
	}
	queue := host.ReadRecord(t.ID).PendingInputs
	if len(queue) == 0 {
		ts.a.completeWith("idle")
		return
	}
	ts.submit(queue[0], "queue")
	ts.a.popQueue()
	host.Emit(t.ID, events.QueueSend{Text: queue[0], Remaining: len(queue) - 1})
}

// stuck reports (and handles) an answered question that is still shown,
// at offset at of d's screen, with no reaction since its answer for
// stuckAfter: the answer did not reach it, or it waits for something else.
// It is never typed into again; a person is asked, or the session parks.
func (ts *terminal) stuck(a *answered, at int, d runner.Detection) bool {
	row, _ := position(d.Screen, at)
	if ts.term.LastOutput().After(a.at) && (row != a.row || d.Newlines != a.newlines) {
		// It reacted: new lines came (a line-oriented program goes on
		// below its question) or the question moved. Output that only
		// redraws in place (a clock, a spinner around a dialog that
		// dropped the keys) is no reaction.
		return false
	}
	if left := ts.stuckAfter - time.Since(a.at); left > 0 {
		ts.wakeIn(left)
		return false
	}
	delete(ts.answers, a.state) // asked about as a question again
	d.State = a.state
	end := at
	if loc := a.pattern.FindStringIndex(d.Screen[at:]); loc != nil {
		end = at + loc[1]
	}
	d.Match = d.Screen[at:end]
	ts.askedAt = at
	ts.askPerson(d, "no reaction to its answer for "+ts.stuckAfter.String()+ts.a.versionNote())
	return true
}

// unknownState is what a task waits in when its screen matches none of its
// adapter's states and does not change (a dialog the adapter does not
// know: a newer CLI, most often).
const unknownState = "interaction_unknown"

// unmatched handles a screen that matches none of the adapter's states:
// once it has not changed for 3 × stuckAfter (no spinner, no clock: the
// CLI waits), a person is asked, or the session parks, naming the CLI's
// version and whether the adapter was tested with it. Nothing is typed.
func (ts *terminal) unmatched(d runner.Detection) {
	after := 3 * ts.stuckAfter
	why := fmt.Sprintf("the screen matches none of the %s adapter's states and has not changed for %s", ts.a.task.Adapter, after)
	if strings.TrimSpace(d.Screen) == "" {
		// A blank screen asks nothing: the CLI has not drawn its first
		// screen yet (opencode's TUI took over 45 s on a loaded machine).
		// It gets longer, and then a person is told what was seen.
		after = blankScreenStuck * ts.stuckAfter
		why = fmt.Sprintf("the %s CLI has drawn nothing: the screen stayed blank for %s", ts.a.task.Adapter, after)
	}
	if !ts.quietFor(time.Time{}, after) {
		return
	}
	d.State, d.Match = unknownState, ""
	ts.askedAt = 0
	ts.askPerson(d, why+ts.a.versionNote())
}

// blankScreenStuck is how many times stuckAfter a screen may stay blank
// before a person is asked (2 minutes at the default 10 s).
const blankScreenStuck = 12

// turnEvidence says how the current turn is known to have run, or "" when
// it is not (yet): a working state seen since it was submitted, or, for
// TUIs without one, output since, the submitted text shown in the
// transcript (outside the idle prompt itself), and an idle screen that has
// settled. An idle-looking splash screen before the turn is never enough.
func (ts *terminal) turnEvidence(d runner.Detection, idleAt int) string {
	if ts.turnRan {
		return evidenceWorking
	}
	if !ts.term.LastOutput().After(ts.typedAt) || !shownOutside(d, idleAt, ts.turnText) {
		return ""
	}
	if ts.hasWorkingState() && !answeredBelow(d, idleAt, ts.turnText) {
		// A turn too quick to be seen working shows its answer below the
		// submitted text. Without one, the text alone is no evidence: a CLI
		// may show it well before it starts the turn (opencode on a loaded
		// machine: the message shown, 4 s of quiet, no request yet).
		return ""
	}
	if !ts.quietFor(ts.typedAt, ts.settle) {
		return ""
	}
	return evidenceScreen
}

// hasWorkingState reports whether the adapter has a state that says a
// turn runs (one that is neither idle nor a question).
func (ts *terminal) hasWorkingState() bool {
	for _, st := range ts.states {
		if stateKind(st.Name) == "working" {
			return true
		}
	}
	return false
}

// answeredBelow reports whether a line of the transcript above the idle
// match (at idleAt) shows text (as shownOutside finds it) with a line that
// has a word below it: the turn's answer.
func answeredBelow(d runner.Detection, idleAt int, text string) bool {
	want := shownText(text)
	if want == "" {
		return true
	}
	lines := strings.Split(d.Screen[:idleAt], "\n")
	for i, l := range lines {
		if !strings.Contains(strings.Join(strings.Fields(l), " "), want) {
			continue
		}
		for _, after := range lines[i+1:] {
			// Borders and rules (the idle box's top edge) are not words.
			if strings.IndexFunc(after, func(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }) >= 0 {
				return true
			}
		}
	}
	return false
}

// shownText is what of a submitted text a transcript is searched for: its
// first line, spaces collapsed, at most 40 runes (long lines wrap; the
// start is enough).
func shownText(text string) string {
	return excerpt.Runes(excerpt.OneLine(excerpt.FirstLine(text), 0), 40, "")
}

// shownOutside reports whether text (its first line, spaces collapsed) is
// on d's screen outside its idle match (at idleAt), where a transcript
// shows what was submitted. An empty text (a bare Enter) cannot be looked
// for: any output then counts.
func shownOutside(d runner.Detection, idleAt int, text string) bool {
	want := shownText(text)
	if want == "" {
		return true
	}
	screen := d.Screen[:idleAt] + "\n" + d.Screen[idleAt+len(d.Match):]
	for _, l := range strings.Split(screen, "\n") {
		if strings.Contains(strings.Join(strings.Fields(l), " "), want) {
			return true
		}
	}
	return false
}

// idleWithoutEvidence waits on an idle screen whose turn shows no sign of
// having run. After stuckAfter without output it is a question for a
// person, never a DONE.
func (ts *terminal) idleWithoutEvidence(d runner.Detection) {
	if !ts.quietFor(ts.typedAt, ts.stuckAfter) {
		return
	}
	ts.askPerson(d, "idle, with no sign that its turn ran"+ts.a.versionNote())
}

// submit types text then Enter as a new turn.
func (ts *terminal) submit(text, source string) {
	ts.typedAt = ts.typeLine(text, source)
	ts.awaitingTurn, ts.turnRan = true, false
	ts.turnText = text
	// The turn may leave the screen exactly as it was, which would never be
	// reported: look again once it could have settled.
	ts.wakeIn(ts.settle)
}

// onRecheck takes a fresh look at the screen, changed or not.
func (ts *terminal) onRecheck() {
	ts.wakeAt = time.Time{}
	if d, ok := ts.term.Detect(); ok {
		ts.onDetection(d)
	}
}

// typeLine types text and then Enter, and returns when Enter was sent:
// output after that instant may be the turn (a fast TUI redraws before this
// returns). The pause between them keeps TUIs that detect pastes by timing
// (Ink) from taking the Enter as a newline.
func (ts *terminal) typeLine(text, source string) time.Time {
	if text != "" {
		_ = ts.a.send(text, source)
		time.Sleep(submitDelay)
	}
	at := time.Now()
	_ = ts.a.proc.Send("\r")
	return at
}

// askPerson marks the task WAITING_FOR_USER and, depending on the policy,
// asks the CLI or parks/fails the session. why, when set, says why a
// screen that is not a fresh question needs a person.
func (ts *terminal) askPerson(d runner.Detection, why string) {
	host, t := ts.a.host, ts.a.task
	ts.waitingState = d.State
	ts.asked = d
	shown := excerpt.ScreenEnd(d.Screen, excerptLines)
	host.UpdateRecord(t.ID, false, func(rec *state.TaskRecord) {
		rec.Reason = vocab.WaitingOn(d.State)
		rec.Excerpt = shown
	})
	host.SetStatus(t.ID, state.TaskWaitingForUser, events.TaskStatusChange{State: d.State, Why: why})
	host.Emit(t.ID, events.InteractionNeeded{State: d.State, Excerpt: shown, Name: t.DisplayName(), Adapter: t.Adapter, Why: why})
	what := d.State
	if why != "" {
		what += ": " + why
	}
	switch ts.a.cfg.Interaction {
	case InteractionPark:
		host.Park(state.StatusWaiting, t.ID, "task "+t.ID+" needs a person ("+what+")")
	case InteractionFail:
		host.Park(state.StatusFailed, t.ID, "task "+t.ID+" needs a person ("+what+") and --on-interaction=fail")
	}
}

// navigationKeys are replies that move within a question without
// answering it: the person is asked again once the TUI has redrawn.
var navigationKeys = map[string]bool{"\x1b[A": true, "\x1b[B": true, "\x1b[C": true, "\x1b[D": true, "\t": true}

// answeredByPerson records a person's reply to the question they were
// asked: it is that appearance's one answer, unless it only navigated.
func (ts *terminal) answeredByPerson(r input) {
	d := ts.asked
	switch {
	case stateKind(d.State) != "prompt":
		// An idle screen without evidence: what the person typed is the
		// turn now.
		if r.enter {
			ts.turnText, ts.typedAt, ts.turnRan = r.text, r.sentAt, false
		}
		ts.wakeIn(ts.settle)
	case !r.enter && navigationKeys[r.text]:
		ts.stepState, ts.stepAt = d.State, time.Now()
		ts.wakeIn(stepCooldown)
	default:
		ts.remember(d, ts.askedAt)
	}
}

// versionNote names the task's CLI version and whether the adapter was
// tested with it, for a message about a screen the adapter did not handle:
// " (claude: 2.1.332 (Claude Code), newer than the tested 2.1.197)".
func (tr *Attempt) versionNote() string {
	if tr.cfg.Registry == nil {
		return ""
	}
	v := tr.cfg.Registry.ProbeVersion(tr.task.Adapter, 5*time.Second)
	if v.Line == "" && v.Err == nil {
		return ""
	}
	return " (" + tr.task.Adapter + ": " + v.String() + ")"
}
