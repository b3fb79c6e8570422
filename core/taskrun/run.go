package taskrun

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vibeteam/vibeteam/adapters"
	"github.com/vibeteam/vibeteam/core/events"
	"github.com/vibeteam/vibeteam/core/runner"
	"github.com/vibeteam/vibeteam/core/sandbox"
	"github.com/vibeteam/vibeteam/core/state"
	"github.com/vibeteam/vibeteam/core/vocab"
	"github.com/vibeteam/vibeteam/core/workflow"
)

// Capture keeps what a task's agent wrote (an agent step reads its result
// from it): its stdout headless, its screen's text in a terminal.
type Capture interface{ Write(p []byte) }

// Attempt is one attempt of one task: one process, from its launch to its
// end.
type Attempt struct {
	ctx     context.Context
	host    Host
	cfg     Settings
	task    workflow.Task
	adapter adapters.Adapter
	drv     driver
	proc    runner.Process
	log     *state.TaskLog
	capture Capture          // nil: nothing kept
	failing func(why string) // names this task as the stage's failure at once
	kept    bool             // DONE with its process left running (keepAlive)
	// evidence says how its last turn was shown to have run (an idle DONE).
	evidence string

	// completed is closed when the task is declared DONE without waiting for
	// its process to exit (manual completion, or idle with an empty queue).
	completed     chan struct{}
	completeOnce  sync.Once
	completeCause vocab.Reason

	lastOutput chan struct{} // pinged on every output chunk (inactivity timeout)
	overBudget chan string   // what was spent, once a budget is: the agent is stopped
	// lastOutputAt is when the last chunk came (UnixNano), 0 before one.
	lastOutputAt atomic.Int64
	// wake ends the wait loop's watch of a process on its own goroutine
	// (WatchHere) whenever anything but the process's output comes: a
	// completion, a budget spent.
	wake *runner.Wake

	stream *agentStream // an agent's structured report; nil for text
	// refusals watches the output for a write the sandbox refused; nil
	// unsandboxed.
	refusals *sandbox.Watch
	// next, set when a person allowed a denial or answered a question at
	// the terminal, makes the task continue its agent's session at once.
	next *followUp
	// prior is what made this run a continuation (nil for a first run).
	prior *followUp
	// codexHome, for a codex-json run, is where its thread's rollout is;
	// startedAt is when the run started (what the rollout held before is
	// an earlier run's).
	codexHome string
	startedAt time.Time
}

// Run runs one task to its end and reports whether it ended DONE, and if
// not, why. failing names the task as its stage's failure as soon as it is
// one (before its process is gone); capture, when not nil, keeps what the
// agent wrote.
func Run(ctx context.Context, host Host, t workflow.Task, prompt string, failing func(taskID, why string), capture Capture) (ok bool, why string) {
	var next *followUp
	for {
		ok, why, next = runOnce(ctx, host, t, prompt, failing, capture, next)
		if next == nil {
			return ok, why
		}
	}
}

// runOnce is one run of the task: its first, or the continuation of its
// agent's session with what a person allowed or answered (now). again is
// set when a person did so at the terminal: the task continues at once.
func runOnce(ctx context.Context, host Host, t workflow.Task, prompt string, failing func(taskID, why string), capture Capture, now *followUp) (ok bool, why string, again *followUp) {
	a := &Attempt{
		ctx: ctx, host: host, cfg: host.Settings(), task: t, prior: now, capture: capture,
		failing:    func(why string) { failing(t.ID, why) },
		completed:  make(chan struct{}),
		lastOutput: make(chan struct{}, 1),
		overBudget: make(chan string, 1),
		wake:       runner.NewWake(),
	}
	defer a.wake.Close()
	l, reason, err := a.prepare(prompt)
	defer l.cleanup()
	if err == nil {
		reason, err = startFailedReason, a.openLog(l)
	}
	if err != nil {
		return a.failStart(reason, err)
	}
	if err := a.recordStart(l); err != nil {
		return a.failStart(startFailedReason, err)
	}
	if err := a.start(l); err != nil {
		return a.failStart(startFailedReason, err)
	}
	defer host.Ended(t.ID)
	defer warnUntested(host, a.cfg, t)()
	fed := a.drv.feed(l)
	ok, why = a.end(a.wait(ctx, a.inactivity(), fed))
	<-fed // the process is gone or stopped: the writer has failed or finished
	if !a.kept {
		a.closeLogs()
	}
	return ok, why, a.next
}

// launch is what an attempt starts: its mode and prompt (a continuation's,
// when it continues an agent's session), the adapter's launch config, the
// process's spec, and the inputs queued for it.
type launch struct {
	mode    adapters.Mode
	prompt  string
	first   string                 // the task's own prompt (prompt may be a continuation's)
	prev    state.TaskRecord       // the task's record before this attempt
	cont    *adapters.Continuation // the agent session continued; nil: afresh
	lc      adapters.LaunchConfig
	argv    []string // the command and its arguments
	spec    runner.Spec
	logPath string
	queue   []string
	cleanup func() // removes the launch files once the process is gone
}

// modeOf is how the task runs: its execution mode, headless when the run
// forces it, interactive by default.
func modeOf(t workflow.Task, cfg Settings) adapters.Mode {
	switch mode := adapters.Mode(t.ExecutionMode); {
	case cfg.ForceHeadless:
		return adapters.Headless
	case mode == "":
		return adapters.Interactive
	default:
		return mode
	}
}

// prepare makes the launch: the agent session it continues, its MCP
// servers, the adapter's launch config and the driver it calls for, and
// the files it needs. reason says why it cannot start, with err.
func (a *Attempt) prepare(prompt string) (l *launch, reason vocab.Reason, err error) {
	t, cfg := a.task, a.cfg
	l = &launch{mode: modeOf(t, cfg), prompt: prompt, first: prompt, cleanup: func() {}}
	l.prev = a.host.ReadRecord(t.ID)
	cont, followPrompt := continuation(l.mode, l.prev, a.prior)
	if cont != nil && cont.Fresh {
		note, warning := lostSessionNote(l.prev, prompt)
		a.host.Emit(t.ID, events.Warn{Adapter: t.Adapter, Warning: "task " + t.ID + ": " + warning})
		l.prompt, l.cont = note, cont
	} else if cont != nil {
		// The agent's own session goes on, told what it may do now or
		// what the person answered; its first prompt is in that session
		// already.
		l.prompt, l.cont = followPrompt, cont
	}
	servers, err := mcpServers(a.host, t, resolveDir(cfg.BaseDir, t.Cwd), cfg.Strict)
	if err != nil {
		return l, startFailedReason, err
	}
	a.adapter, err = cfg.Registry.New(t.Adapter, adapters.Options{Cwd: t.Cwd, Env: t.Env, Name: t.DisplayName(), AutoApprove: cfg.AutoApprove, Sandboxed: cfg.Sandbox != nil, Continue: cont, MCP: servers})
	if err != nil {
		return l, startFailedReason, err
	}
	if l.lc, err = a.adapter.LaunchConfig(l.mode, l.prompt, t.ExtraArgs); err != nil {
		return l, startFailedReason, err
	}
	l.argv = append([]string{l.lc.Command}, l.lc.Args...)
	a.drv = newDriver(a, l.mode, l.lc)
	if meter := MeterOf(a.ctx); a.drv.reportsSpend() {
		if what, over := meter.Exceeded(); over {
			// An agent that reports its spend does not start on a budget
			// already spent (a cost claude gave at the end of the last run).
			return l, BudgetReason, fmt.Errorf("%s", refuseForBudget(a.host, t.ID, meter, what))
		}
	}
	l.spec = runner.Spec{
		Command: l.lc.Command, Args: l.lc.Args, Dir: resolveDir(cfg.BaseDir, l.lc.Cwd),
		Env: l.lc.Env, Cols: l.lc.Cols, Rows: l.lc.Rows, Tag: cfg.SessionID + "/" + t.ID,
	}
	if cfg.Tracer != nil {
		l.spec.Env = withEnv(l.spec.Env, cfg.Tracer.TaskStarting(t.ID))
	}
	if err := Sandboxed(cfg.Sandbox, t.Adapter, &l.spec, authEnv(cfg.Sandbox, cfg.Registry, t.Adapter), t.Sandbox); err != nil {
		return l, startFailedReason, err
	}
	a.refusals = l.spec.Sandbox.Watch()
	if len(l.lc.Files) > 0 {
		if l.cleanup, err = writeLaunchFiles(&l.spec, l.lc.Files); err != nil {
			return l, startFailedReason, err
		}
	}
	return l, "", nil
}

// withEnv is env with extra's variables added (a copy: env may be the
// adapter's own map).
func withEnv(env, extra map[string]string) map[string]string {
	if len(extra) == 0 {
		return env
	}
	out := make(map[string]string, len(env)+len(extra))
	for k, v := range env {
		out[k] = v
	}
	for k, v := range extra {
		out[k] = v
	}
	return out
}

// openLog opens the task's log, where a session keeps one.
func (a *Attempt) openLog(l *launch) (err error) {
	if a.cfg.Manager == nil {
		return nil
	}
	l.logPath = a.cfg.Manager.TaskLogPath(a.cfg.SessionID, a.task.ID)
	open := state.OpenTaskLog
	if a.drv.shortLog(a.capture) {
		// A command's output, often a line or two: kept in the session, a
		// file only when there is more (making a file can cost more than
		// running the command).
		open = state.OpenShortTaskLog
	}
	a.log, err = open(l.logPath, a.cfg.TailLines)
	return err
}

// recordStart records the attempt in the task's record, with the queue of
// inputs it starts with, and its prompt in the history, and journals them
// before the process starts: a save that failed refuses the start.
func (a *Attempt) recordStart(l *launch) error {
	t := a.task
	if l.prompt != "" {
		// On the line of the start, which follows.
		a.host.StartHistory("prompt", t.ID, l.prompt)
	}
	// The queue survives in the session: a resumed task continues with what
	// was not yet sent (nothing, once it has all been sent).
	err := a.host.RecordStart(t.ID, func(rec *state.TaskRecord) {
		l.queue = rec.PendingInputs
		if rec.Attempts == 0 {
			l.queue = append([]string(nil), t.PendingInputs...)
		}
		now := time.Now()
		*rec = state.TaskRecord{
			Status:        rec.Status, // where a step run holds the record
			Adapter:       t.Adapter,
			Mode:          string(l.mode),
			Argv:          l.argv,
			StartedAt:     &now,
			LogPath:       l.logPath,
			PendingInputs: l.queue,
			Attempts:      rec.Attempts + 1,
			Allowed:       rec.Allowed, // for the rest of the run
		}
	})
	if err != nil {
		return fmt.Errorf("not started: the session can no longer be saved (%w)", err)
	}
	return nil
}

// start starts the process through the driver and tells the session it
// runs.
func (a *Attempt) start(l *launch) error {
	proc, err := a.drv.start(l, a.output)
	if err != nil {
		a.closeLogs()
		if st, serr := os.Stat(l.spec.Dir); serr != nil || !st.IsDir() {
			// Looked at only now: a stat before every start costs more
			// than an echo does.
			return fmt.Errorf("cwd %s is not a directory", l.spec.Dir)
		}
		return err
	}
	a.proc = proc
	t := a.task
	pidStart, _ := runner.StartTime(proc)
	a.host.UpdateRecord(t.ID, false, func(rec *state.TaskRecord) { rec.Pid, rec.PidStart = proc.Pid(), pidStart })
	a.host.Running(a)
	a.host.SetStatus(t.ID, state.TaskRunning, events.TaskStatusChange{})
	a.host.Emit(t.ID, events.TaskStart{
		Adapter: t.Adapter, Name: t.DisplayName(), Mode: string(l.mode),
		Argv: l.argv, Pid: proc.Pid(), Cwd: l.spec.Dir,
	})
	return nil
}

// failStart ends an attempt whose process did not start.
func (a *Attempt) failStart(reason vocab.Reason, err error) (bool, string, *followUp) {
	msg, t := err.Error(), a.task
	now := time.Now()
	a.host.UpdateRecord(t.ID, false, func(rec *state.TaskRecord) {
		rec.Reason, rec.Error, rec.EndedAt = reason, msg, &now
	})
	a.host.SetStatus(t.ID, state.TaskError, events.TaskStatusChange{Reason: reason, Error: msg})
	a.host.Emit(t.ID, events.TaskEnd{Status: state.TaskError, Reason: reason, Error: msg})
	return false, msg, nil
}

// output takes a chunk of the process's output: to the log, the capture
// and the events, as text (an agent's structured lines become events).
func (a *Attempt) output(c runner.Chunk) {
	text := c.Clean
	if a.stream != nil && c.Stream == "stdout" {
		// The log and the display get what the agent did, as text; the
		// JSON lines are events.
		text = []byte(a.stream.write(c.Raw))
	}
	if a.log != nil && len(text) > 0 {
		_, _ = a.log.Write(text)
	}
	// The raw output: an agent's tool results are in its JSON lines.
	_, _ = a.refusals.Write(c.Clean)
	if a.capture != nil && c.Stream != "stderr" {
		a.capture.Write(c.Clean)
	}
	a.lastOutputAt.Store(time.Now().UnixNano())
	select {
	case a.lastOutput <- struct{}{}:
	default:
	}
	if len(text) > 0 {
		a.host.Emit(a.task.ID, events.TaskOut{Stream: c.Stream, Text: string(text), Raw: string(c.Raw)})
	}
}

// inactivity is how long the task may go without output: its own limit,
// else its adapter's.
func (a *Attempt) inactivity() time.Duration {
	if a.task.InactivityTimeout > 0 {
		return time.Duration(a.task.InactivityTimeout)
	}
	return a.adapter.InactivityTimeout()
}

// closeLogs closes the task's log files; a kept-alive task's logs stay open
// until its process is stopped.
func (a *Attempt) closeLogs() {
	if a.log != nil {
		_ = a.log.Close()
	}
	if a.drv != nil {
		a.drv.closeLogs()
	}
}

// popQueue removes the first queued input and checkpoints the rest.
func (a *Attempt) popQueue() []string {
	var rest []string
	a.host.UpdateRecord(a.task.ID, true, func(rec *state.TaskRecord) {
		if len(rec.PendingInputs) > 0 {
			rec.PendingInputs = rec.PendingInputs[1:]
		}
		rest = append([]string(nil), rec.PendingInputs...)
	})
	return rest
}

// send writes text to the process and records it as the task's input.
func (a *Attempt) send(text, source string) error {
	if err := a.proc.Send(text); err != nil {
		return err
	}
	a.host.History("input", a.task.ID, strings.TrimRight(text, "\r\n"))
	a.host.Emit(a.task.ID, events.TaskIn{Text: text, Source: source})
	return nil
}

// unsent is how many queued inputs were never sent.
func (a *Attempt) unsent() int {
	return len(a.host.ReadRecord(a.task.ID).PendingInputs)
}

// completeWith declares the task DONE without waiting for its process.
func (a *Attempt) completeWith(cause vocab.Reason) {
	a.completeOnce.Do(func() {
		a.completeCause = cause
		close(a.completed)
		a.wake.Fire()
	})
}

// resolveDir makes a task cwd absolute against the base dir.
func resolveDir(baseDir, cwd string) string {
	switch {
	case cwd == "":
		return baseDir
	case filepath.IsAbs(cwd):
		return cwd
	}
	return filepath.Join(baseDir, cwd)
}

// TaskID is the attempt's task.
func (a *Attempt) TaskID() string { return a.task.ID }

// Process is the attempt's process (nil before its start).
func (a *Attempt) Process() runner.Process { return a.proc }

// Send queues text for the task: written to its stdin (pipe) or typed
// into its terminal.
func (a *Attempt) Send(text string) error { return a.drv.deliver(input{text: text}) }

// SendLine types text followed by Enter (a newline on a pipe).
func (a *Attempt) SendLine(text string) error {
	return a.drv.deliver(input{text: text, enter: true})
}

// Attached tells the task that a person has its terminal (true) or gave
// it back (false): meanwhile nothing is answered or typed for them.
func (a *Attempt) Attached(attached bool) {
	_ = a.drv.deliver(input{attach: attached, detach: !attached})
}

// Complete declares the task DONE without waiting for its process (manual
// completion): the process is stopped.
func (a *Attempt) Complete() { a.completeWith(completedByUser) }

// Terminal is the task's PTY, for attaching; false when it runs without
// one.
func (a *Attempt) Terminal() (*runner.Terminal, bool) {
	if ts, ok := a.drv.(*terminal); ok && ts.term != nil {
		return ts.term, true
	}
	return nil, false
}

// StopKept stops the process of a task kept alive once DONE, and closes
// its logs.
func (a *Attempt) StopKept(grace time.Duration) {
	a.proc.Stop(grace)
	a.closeLogs()
}
