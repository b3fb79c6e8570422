package ui

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/term"

	"github.com/vibeteam/vibeteam/core"
	"github.com/vibeteam/vibeteam/core/engine"
	"github.com/vibeteam/vibeteam/core/events"
	"github.com/vibeteam/vibeteam/core/runner"
	"github.com/vibeteam/vibeteam/core/state"
	"github.com/vibeteam/vibeteam/core/vocab"
)

// detachKey ends :attach (Ctrl-]).
const detachKey = 0x1d

// Prompter asks the person at the controlling terminal about tasks that
// wait, one at a time, oldest first.
type Prompter struct {
	tty *os.File
	// out is tty for what the prompter writes: a secret shows as ***
	// (the screen of an attached task is written to tty as it is).
	out    io.Writer
	screen Screen
	ctrl   *core.SessionController
	// ctrls are the sessions of a backlog run, by id: a waiting task is
	// answered through its own session's controller.
	ctrls map[string]*core.SessionController

	mu         sync.Mutex
	queue      []waitingTask
	wake       chan struct{}
	asking     string
	attachedTo string
	done       chan struct{}
	stopped    bool

	// outMu orders what is written to the terminal: the panel, the reply
	// prompt and notes about other tasks. Taken before mu, never after.
	outMu    sync.Mutex
	atPrompt bool         // "reply › " is the last thing written; a reply is awaited
	notes    []promptNote // notes that wait for the next prompt
}

// promptNote is a line about another task; waiting names the task when
// the note says that it waits too.
type promptNote struct{ line, waiting string }

// maxNotes bounds the notes kept while the terminal is attached to an agent.
const maxNotes = 200

// Screen is what draws beside the prompter (a Display or a Board):
// hidden while a person is asked.
type Screen interface {
	hold()
	release()
}

type waitingTask struct {
	id, label, state, excerpt string // label and state are safe to print
	session                   string // the task's session (several in a backlog run)
	review                    *reviewAsk
	permission                *permissionAsk
	question                  *questionAsk
}

// questionAsk is a headless agent's question waiting for the person.
type questionAsk struct {
	req    engine.QuestionRequest
	answer chan string
}

// Question asks the person what a headless agent's final message asks
// (core.Options.Question). "" is no answer: later.
func (p *Prompter) Question(ctx context.Context, req engine.QuestionRequest) string {
	ask := &questionAsk{req: req, answer: make(chan string, 1)}
	return awaitAnswer(ctx, p, waitingTask{id: "question:" + req.TaskID, label: Safe(req.Name), state: string(vocab.ReasonQuestion), question: ask}, ask.answer, "")
}

// askQuestion shows the agent's question and its suggested answers and
// reads the person's: an option's number, or their own words.
func (p *Prompter) askQuestion(in *bufio.Reader, w waitingTask) bool {
	p.screen.hold()
	defer p.screen.release()
	q, t := w.question.req.Question, p.out
	p.outMu.Lock()
	fmt.Fprintf(t, "\n%s\n│ %s\n", p.boxLine(fmt.Sprintf("── question from task %s (%s) ──", w.label, Safe(w.question.req.Adapter))), SafeLine(q.Text))
	for i, o := range q.Options {
		fmt.Fprintf(t, "│  %d. %s\n", i+1, SafeLine(o))
	}
	hint := "type your answer"
	if len(q.Options) > 0 {
		hint = fmt.Sprintf("1-%d picks an answer, or type your own", len(q.Options))
	}
	fmt.Fprintln(t, p.boxLine(fmt.Sprintf("── %s; the agent's session continues with it · :later parks (vibeteam resume ID --answer TEXT)", hint)))
	p.outMu.Unlock()
	for {
		p.outMu.Lock()
		fmt.Fprint(t, "answer › ")
		p.outMu.Unlock()
		line, err := in.ReadString('\n')
		if err != nil {
			w.question.answer <- ""
			return false
		}
		line = strings.TrimSpace(line)
		switch {
		case line == "":
			continue
		case line == ":later" || line == ":quit":
			w.question.answer <- ""
			return true
		}
		if n, err := strconv.Atoi(line); err == nil && n >= 1 && n <= len(q.Options) {
			line = q.Options[n-1]
		}
		w.question.answer <- line
		return true
	}
}

// permissionAsk is a headless agent's denial waiting for the person.
type permissionAsk struct {
	req    engine.PermissionRequest
	answer chan string
}

// Permission asks the person about the tool calls a headless agent was
// denied (core.Options.Permission): allow once, allow for the run, deny,
// or later. It waits its turn after the tasks already waiting, and
// answers "later" if the session ends first.
func (p *Prompter) Permission(ctx context.Context, req engine.PermissionRequest) string {
	ask := &permissionAsk{req: req, answer: make(chan string, 1)}
	return awaitAnswer(ctx, p, waitingTask{id: "permission:" + req.TaskID, label: Safe(req.Name), state: "permission", permission: ask}, ask.answer, engine.PermissionLater)
}

// askPermission shows what a headless agent was denied and reads the
// person's answer.
func (p *Prompter) askPermission(in *bufio.Reader, w waitingTask) bool {
	p.screen.hold()
	defer p.screen.release()
	r, t := w.permission.req, p.out
	answer := func(a string) { w.permission.answer <- a }
	tools := Safe(strings.Join(r.Tools, ", "))
	p.outMu.Lock()
	fmt.Fprintf(t, "\n%s\n", p.boxLine(fmt.Sprintf("── permission: task %s (%s) was denied ──", w.label, Safe(r.Adapter))))
	for _, d := range r.Denials {
		line := d.Tool
		if len(d.Input) > 0 {
			line += " " + string(d.Input)
		}
		if d.Message != "" {
			line += " — " + d.Message
		}
		fmt.Fprintf(t, "│ %s\n", SafeLine(line))
	}
	fmt.Fprintln(t, p.boxLine(fmt.Sprintf("── o: allow once · a: allow %s for the run · d: deny (the task fails) · l: later (park; vibeteam resume ID --allow TOOL)", tools)))
	p.outMu.Unlock()
	for {
		p.outMu.Lock()
		fmt.Fprint(t, "permission › ")
		p.outMu.Unlock()
		line, err := in.ReadString('\n')
		if err != nil {
			answer(engine.PermissionLater)
			return false
		}
		switch strings.ToLower(strings.TrimSpace(line)) {
		case "o", "once", "y", "yes":
			answer(engine.PermissionOnce)
			return true
		case "a", "all":
			answer(engine.PermissionAll)
			return true
		case "d", "deny", "n", "no":
			answer(engine.PermissionDeny)
			return true
		case "l", "later", ":quit":
			answer(engine.PermissionLater)
			return true
		default:
			fmt.Fprintln(t, "o, a, d or l")
		}
	}
}

// reviewAsk is a merge waiting for the person's review.
type reviewAsk struct {
	req    engine.ReviewRequest
	answer chan [2]string // decision, reason
}

// Review asks the person about a merge (core.Options.Review): approve,
// reject (with a reason), or later. It waits its turn after the tasks
// already waiting, and answers "later" if the session ends first.
func (p *Prompter) Review(ctx context.Context, req engine.ReviewRequest) (string, string) {
	ask := &reviewAsk{req: req, answer: make(chan [2]string, 1)}
	a := awaitAnswer(ctx, p, waitingTask{id: "merge:" + req.Step, label: "merge " + Safe(req.Branch), state: "review", review: ask}, ask.answer, [2]string{engine.ReviewLater, ""})
	return a[0], a[1]
}

// awaitAnswer queues w to be asked after the tasks already waiting, and
// waits for its answer on ch; later when the session or the prompter ends
// first.
func awaitAnswer[T any](ctx context.Context, p *Prompter, w waitingTask, ch <-chan T, later T) T {
	p.mu.Lock()
	p.queue = append(p.queue, w)
	p.mu.Unlock()
	select {
	case p.wake <- struct{}{}:
	default:
	}
	select {
	case a := <-ch:
		return a
	case <-ctx.Done():
		return later
	case <-p.done:
		return later
	}
}

// askReview shows a merge for review and reads the person's decision.
func (p *Prompter) askReview(in *bufio.Reader, w waitingTask) bool {
	p.screen.hold()
	defer p.screen.release()
	r, t := w.review.req, p.out
	answer := func(decision, reason string) { w.review.answer <- [2]string{decision, reason} }
	p.outMu.Lock()
	fmt.Fprintf(t, "\n%s\n", p.boxLine(fmt.Sprintf("── review: merge %s into %s ──", Safe(r.Branch), Safe(r.Base))))
	if r.Bead != "" {
		fmt.Fprintf(t, "bead %s: %s\n", Safe(r.Bead), Safe(r.Title))
	}
	fmt.Fprintln(t, "commits:")
	for _, l := range strings.Split(strings.TrimRight(r.Commits, "\n"), "\n") {
		fmt.Fprintf(t, "│ %s\n", SafeLine(l))
	}
	fmt.Fprintln(t, "changes:")
	for _, l := range strings.Split(strings.TrimRight(r.Stat, "\n"), "\n") {
		fmt.Fprintf(t, "│ %s\n", SafeLine(l))
	}
	fmt.Fprintln(t, p.boxLine("── a: approve and merge · r: reject · d: the diff (in a pager) · l: later (park; vibeteam resume ID --approve-merge)"))
	p.outMu.Unlock()
	for {
		p.outMu.Lock()
		fmt.Fprint(t, "review › ")
		p.outMu.Unlock()
		line, err := in.ReadString('\n')
		if err != nil {
			answer(engine.ReviewLater, "")
			return false
		}
		switch strings.ToLower(strings.TrimSpace(line)) {
		case "a", "approve":
			answer(engine.ReviewApprove, "")
			return true
		case "r", "reject":
			fmt.Fprint(t, "reason (optional) › ")
			reason, _ := in.ReadString('\n')
			answer(engine.ReviewReject, strings.TrimSpace(reason))
			return true
		case "l", "later", ":quit":
			answer(engine.ReviewLater, "")
			return true
		case "d", "diff":
			p.pageDiff(r)
		default:
			fmt.Fprintln(t, "a, r, d or l")
		}
	}
}

// pageDiff shows the merge's diff in $PAGER (less) on the terminal.
func (p *Prompter) pageDiff(r engine.ReviewRequest) {
	pager := os.Getenv("PAGER")
	if pager == "" {
		pager = "less -R"
	}
	color := "always"
	if os.Getenv("NO_COLOR") != "" {
		color = "never"
	}
	cmd := exec.Command("sh", "-c", "git -c color.ui="+color+" diff \"$0\"...\"$1\" | "+pager, r.Base, r.Branch)
	cmd.Dir = r.Dir
	cmd.Stdin, cmd.Stdout, cmd.Stderr = p.tty, p.tty, p.tty
	if err := cmd.Run(); err != nil {
		fmt.Fprintf(p.tty, "diff: %s\n", Safe(err.Error()))
	}
}

// OpenTTY opens the controlling terminal, so prompts work with stdin piped.
func OpenTTY() (*os.File, error) {
	f, err := os.OpenFile("/dev/tty", os.O_RDWR, 0)
	if err != nil {
		return nil, err
	}
	if _, ok := ttyFd(f); !ok {
		f.Close()
		return nil, fmt.Errorf("/dev/tty is not a terminal")
	}
	return f, nil
}

// ttyFd returns the terminal's descriptor without f.Fd(), which would put
// the file in blocking mode so that a read deadline no longer interrupts a
// pending read (and an interrupt at a pause would hang).
func ttyFd(f *os.File) (int, bool) {
	fd, isTerm := -1, false
	if rc, err := f.SyscallConn(); err == nil {
		_ = rc.Control(func(d uintptr) {
			fd = int(d)
			isTerm = term.IsTerminal(fd)
		})
	}
	return fd, isTerm
}

// NewPrompter asks at the terminal tty, hiding screen while it does.
func NewPrompter(tty *os.File, screen Screen) *Prompter {
	return &Prompter{tty: tty, out: state.RedactWriter(tty), screen: screen, wake: make(chan struct{}, 1), done: make(chan struct{}), ctrls: map[string]*core.SessionController{}}
}

// Done is closed when Run has returned.
func (p *Prompter) Done() <-chan struct{} { return p.done }

// AddController lets the prompter answer the tasks of one more session
// (a backlog run's bead).
func (p *Prompter) AddController(ctrl *core.SessionController) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.ctrls[ctrl.ID] = ctrl
}

// controller is the controller of the waiting task's session.
func (p *Prompter) controller(w waitingTask) *core.SessionController {
	p.mu.Lock()
	defer p.mu.Unlock()
	if c, ok := p.ctrls[w.session]; ok {
		return c
	}
	return p.ctrl
}

// enqueue is called from the event handler when a task starts waiting (e,
// whose payload is ev); label names the task (safe to print).
func (p *Prompter) enqueue(e core.Event, ev events.InteractionNeeded, label string) {
	w := waitingTask{id: e.Task, session: e.Session, label: label, state: Safe(ev.State), excerpt: ev.Excerpt}
	if ev.Why != "" {
		w.state += " (" + Safe(ev.Why) + ")"
	}
	p.mu.Lock()
	for i, q := range p.queue {
		if q.id == w.id && q.session == w.session {
			p.queue[i] = w
			p.mu.Unlock()
			return
		}
	}
	p.queue = append(p.queue, w)
	busy := p.asking != "" && p.asking != w.id
	p.mu.Unlock()
	if busy {
		// Announced now, with a bell, and asked after the current one.
		p.noteAbout(w.id, "? task "+w.label+" is waiting too ("+w.state+"); it is asked next", true)
	}
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// note tells the person, in one line, about another task while a question
// is up (line is safe to print). With the reply prompt up, the line is
// inserted above the prompt's row, so the person goes on typing on the one
// prompt: index down and back up (the screen scrolls if the prompt is on
// the last row, so a row below it exists), save the cursor, insert a line
// at the prompt's row (which moves down), write the note there, and go back
// to the saved column one row down. While the panel is being drawn, or an
// agent has the terminal, the note waits for the next prompt or the end of
// the question.
func (p *Prompter) note(line string, bell bool) { p.noteAbout("", line, bell) }

// noteAbout is note; waiting names the task the note says waits too.
func (p *Prompter) noteAbout(waiting, line string, bell bool) {
	p.outMu.Lock()
	defer p.outMu.Unlock()
	if bell {
		_, _ = io.WriteString(p.tty, "\a")
	}
	if !p.atPrompt {
		if len(p.notes) >= maxNotes {
			p.notes = append(p.notes[:0], p.notes[len(p.notes)-maxNotes/2:]...)
		}
		p.notes = append(p.notes, promptNote{line, waiting})
		return
	}
	_, _ = io.WriteString(p.out, "\x1bD\x1bM\x1b7\r\x1b[L"+Fit(line, p.width()-1)+"\x1b8\x1bD")
}

// flushNotesLocked writes the notes that waited, one line each, at the
// start of a line. outMu is held.
func (p *Prompter) flushNotesLocked() {
	w := p.width()
	for _, n := range p.notes {
		fmt.Fprintf(p.out, "%s\n", Fit(n.line, w-1))
	}
	p.notes = nil
}

// boxLine is a line of a box (a panel's frame, hint or screen excerpt),
// cut with … to the terminal's width, as the board's lines are, rather
// than wrapped by the terminal mid-word.
func (p *Prompter) boxLine(s string) string { return Fit(s, p.width()-1) }

// width is the terminal's width in columns (80 when unknown).
func (p *Prompter) width() int {
	if fd, ok := ttyFd(p.tty); ok {
		if cols, _, err := term.GetSize(fd); err == nil && cols > 0 {
			return cols
		}
	}
	return 80
}

// Run asks until ctx ends. The read of the terminal is unblocked by closing
// it, so run returns promptly when the session ends.
func (p *Prompter) Run(ctx context.Context, ctrl *core.SessionController) {
	defer close(p.done)
	p.ctrl = ctrl
	go func() {
		<-ctx.Done()
		p.mu.Lock()
		p.stopped = true
		p.mu.Unlock()
		_ = p.tty.SetReadDeadline(past)
	}()
	in := bufio.NewReader(p.tty)
	for {
		p.mu.Lock()
		if p.stopped {
			p.mu.Unlock()
			return
		}
		if len(p.queue) == 0 {
			p.mu.Unlock()
			select {
			case <-p.wake:
				continue
			case <-ctx.Done():
				return
			}
		}
		w := p.queue[0]
		p.queue = p.queue[1:]
		p.asking = w.id
		p.mu.Unlock()
		if w.review != nil || w.permission != nil || w.question != nil {
			var ok bool
			switch {
			case w.review != nil:
				ok = p.askReview(in, w)
			case w.permission != nil:
				ok = p.askPermission(in, w)
			default:
				ok = p.askQuestion(in, w)
			}
			p.setAsking("")
			if !ok {
				return
			}
			continue
		}
		if p.controller(w).TaskStatus(w.id) != state.TaskWaitingForUser {
			p.setAsking("")
			continue
		}
		if !p.ask(in, w) {
			p.setAsking("")
			return
		}
		p.setAsking("")
	}
}

func (p *Prompter) setAsking(id string) {
	p.mu.Lock()
	p.asking = id
	p.mu.Unlock()
}

// ask shows the panel and applies one answer. It returns false when the
// terminal is gone.
func (p *Prompter) ask(in *bufio.Reader, w waitingTask) bool {
	p.screen.hold()
	defer p.screen.release()
	// Notes that came in while the reply was applied are shown before the
	// board comes back.
	defer func() {
		p.outMu.Lock()
		p.flushNotesLocked()
		p.outMu.Unlock()
	}()
	p.panel(w)
	t := p.out
	for {
		p.outMu.Lock()
		p.flushNotesLocked()
		fmt.Fprint(t, "reply › ")
		p.atPrompt = true
		p.outMu.Unlock()
		line, err := in.ReadString('\n')
		p.outMu.Lock()
		p.atPrompt = false
		p.outMu.Unlock()
		if err != nil {
			p.inputEnded(w)
			return false
		}
		if done, ok := p.reply(w, strings.TrimRight(line, "\r\n")); done {
			return ok
		}
	}
}

// panel shows what the task waits for, the tasks waiting after it, and
// the answers there are.
func (p *Prompter) panel(w waitingTask) {
	t := p.out
	p.outMu.Lock()
	defer p.outMu.Unlock()
	fmt.Fprintf(t, "\n%s\n", p.boxLine(fmt.Sprintf("── %s needs you: %s ──", w.label, w.state)))
	for _, l := range strings.Split(w.excerpt, "\n") {
		fmt.Fprintln(t, p.boxLine("│ "+SafeLine(l)))
	}
	p.mu.Lock()
	var others []string
	listed := map[string]bool{}
	for _, q := range p.queue {
		others = append(others, q.label)
		listed[q.id] = true
	}
	p.mu.Unlock()
	// A task listed here is not announced again by its note.
	kept := p.notes[:0]
	for _, n := range p.notes {
		if !listed[n.waiting] {
			kept = append(kept, n)
		}
	}
	p.notes = kept
	if len(others) > 0 {
		// Waiting since before this panel: announced here, asked next.
		fmt.Fprintf(t, "\a(%s is waiting too; it is next)\n", strings.Join(others, ", "))
	}
	fmt.Fprintln(t, p.boxLine("── Enter: Enter · one key: that key · text: text+Enter · :up :down :esc :tab · :attach · :done · :quit"))
}

// inputEnded parks the session when the terminal's input ended (Ctrl-D,
// or a terminal gone) and the prompter was not stopped: nobody will
// answer, so it must not wait for ever.
func (p *Prompter) inputEnded(w waitingTask) {
	p.mu.Lock()
	stopped := p.stopped
	p.mu.Unlock()
	if !stopped {
		fmt.Fprintln(p.out, "\n(no more input: parking the session)")
		p.controller(w).Park(w.id, "the terminal's input ended at a pause")
	}
}

// replyKeys are the replies that send a key.
var replyKeys = map[string]string{"": "\r", ":up": "\x1b[A", ":down": "\x1b[B", ":esc": "\x1b", ":tab": "\t"}

// reply applies one reply to the waiting task. done says the question is
// over (ok: the terminal is still there); else the person is asked again.
func (p *Prompter) reply(w waitingTask, line string) (done, ok bool) {
	ex := p.controller(w)
	var sendErr error
	switch key, isKey := replyKeys[line]; {
	case isKey:
		sendErr = ex.Send(w.id, key)
	case line == ":done":
		sendErr = ex.CompleteTask(w.id)
	case line == ":quit":
		ex.Park(w.id, "parked at the prompt")
		return true, true
	case line == ":attach":
		sendErr = p.attach(w)
	case strings.HasPrefix(line, ":") && len(line) > 1:
		fmt.Fprintf(p.out, "unknown command %s\n", Safe(line))
		return false, true
	case len([]rune(line)) == 1:
		sendErr = ex.Send(w.id, line)
	default:
		sendErr = ex.SendLine(w.id, line)
	}
	if sendErr != nil {
		fmt.Fprintf(p.out, "%s\n", Safe(sendErr.Error()))
		return ex.TaskStatus(w.id) != state.TaskWaitingForUser, true
	}
	return true, true
}

// attach hands the task's terminal to the person until Ctrl-].
func (p *Prompter) attach(w waitingTask) error {
	ex := p.controller(w)
	pt, err := ex.Terminal(w.id)
	if err != nil {
		return err
	}
	fd, _ := ttyFd(p.tty)
	old, err := term.MakeRaw(fd)
	if err != nil {
		return err
	}
	defer term.Restore(fd, old)
	fmt.Fprintf(p.tty, "\x1b[2J\x1b[H(attached to %s; Ctrl-] detaches)\r\n", w.label)
	if cols, rows, err := term.GetSize(fd); err == nil {
		_ = pt.Resize(cols, rows)
	}
	_, _ = io.WriteString(p.tty, strings.ReplaceAll(pt.Screen(), "\n", "\r\n"))
	pt.Mirror(p.tty)
	defer pt.Mirror(nil)
	ex.Attached(w.id, true)
	defer ex.Attached(w.id, false)
	p.mu.Lock()
	p.attachedTo = w.id
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		p.attachedTo = ""
		p.mu.Unlock()
	}()
	// The agent gets the person's window size while attached and its own
	// back afterwards, so its screen matches the adapter's patterns again.
	cols0, rows0 := pt.Size()
	defer func() { _ = pt.Resize(cols0, rows0) }()

	defer p.followAttached(fd, pt)()
	p.relay(pt, w.label)
	return nil
}

// followAttached gives the attached task the person's window size as it
// changes, and unblocks the terminal's read when the task ends; stop ends
// that and waits for it.
func (p *Prompter) followAttached(fd int, pt *runner.Terminal) (stop func()) {
	winch := make(chan os.Signal, 1)
	signal.Notify(winch, syscall.SIGWINCH)
	quit := make(chan struct{})
	watcher := make(chan struct{})
	go func() {
		defer close(watcher)
		for {
			select {
			case <-winch:
				if cols, rows, err := term.GetSize(fd); err == nil {
					_ = pt.Resize(cols, rows)
				}
			case <-pt.Done():
				// The task ended while attached: unblock the read.
				_ = p.tty.SetReadDeadline(past)
				return
			case <-quit:
				return
			}
		}
	}()
	return func() {
		close(quit)
		<-watcher
		signal.Stop(winch)
		_ = p.tty.SetReadDeadline(time.Time{})
	}
}

// relay sends what the person types to the attached task until Ctrl-],
// the task's end or the terminal's.
func (p *Prompter) relay(pt *runner.Terminal, label string) {
	buf := make([]byte, 1024)
	for {
		n, err := p.tty.Read(buf)
		if err != nil {
			fmt.Fprintf(p.tty, "\r\n(%s ended)\r\n", label)
			return
		}
		chunk := buf[:n]
		if i := strings.IndexByte(string(chunk), detachKey); i >= 0 {
			if i > 0 {
				_ = pt.Send(string(chunk[:i]))
			}
			fmt.Fprint(p.tty, "\r\n(detached)\r\n")
			return
		}
		if err := pt.Send(string(chunk)); err != nil {
			return
		}
		select {
		case <-pt.Done():
			return
		default:
		}
	}
}

// past is a read deadline that unblocks a pending read at once.
var past = time.Unix(1, 0)
