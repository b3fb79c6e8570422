// Package engine holds the WorkflowExecutor: it walks a definition's steps
// (a stage workflow's stages, a grimoire's steps) through the interpreter
// of core/flow, starts each task through a runner, records every state
// change in the session and emits events.
package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/vibeteam/vibeteam/core/events"

	"github.com/vibeteam/vibeteam/core/budget"
	"github.com/vibeteam/vibeteam/core/runner"
	"github.com/vibeteam/vibeteam/core/sandbox"
	"github.com/vibeteam/vibeteam/core/state"
	"github.com/vibeteam/vibeteam/core/taskrun"
	"github.com/vibeteam/vibeteam/core/vocab"
	"github.com/vibeteam/vibeteam/core/workflow"
)

// Overall session states derived from the tasks.
const (
	OverallRunning  = vocab.StateRunning
	OverallAwaiting = vocab.StateAwaiting
	OverallIdle     = vocab.StateIdle
	OverallError    = vocab.StateError
)

// defaultTailLines is how many clean output lines a session keeps per task.
const defaultTailLines = 20

// Options configure one executor.
type Options struct {
	// Settings are what each task's run reads (taskrun), the person's
	// Choices among them; the engine hands them on whole.
	taskrun.Settings
	Emit func(state.Event) // called synchronously; must not block for long
	// Prompts are a stage workflow's task prompts, rendered once before
	// the session was made or taken up again (core); nil renders them as
	// the run starts (the engine's own tests).
	Prompts map[string]string
	// Grimoires on a bead: Beads follows the run with the bead's status
	// (nil for a bead read from a file), Workspace is its worktree (nil:
	// steps run in the base dir, and a merge step cannot run), Review asks
	// a person about a merge (nil: no terminal, the merge waits).
	Beads     BeadTracker
	Workspace Workspace
	Review    func(ctx context.Context, r ReviewRequest) (decision, reason string)
	// Budget is a meter the session's spend counts against besides its
	// own budgets (a backlog's, shared by its sessions); nil: none.
	Budget *budget.Meter
}

// ProcessStarter starts one headless process: a script step's shell, a
// headless agent.
type ProcessStarter = taskrun.ProcessStarter

type realProcesses struct{}

func (realProcesses) StartHeadless(spec runner.Spec, onOutput func(runner.Chunk)) (runner.Process, error) {
	return runner.StartHeadless(spec, onOutput)
}

func (o Options) processes() ProcessStarter {
	if o.Processes != nil {
		return o.Processes
	}
	return realProcesses{}
}

// liveProcesses is the one way the run starts a headless process — a
// task's, a script step's, a merge gate's: through Options.Processes, and
// known until it ends, so that Kill reaches every one of them.
type liveProcesses struct {
	next    ProcessStarter
	sandbox *sandbox.Policy
	// warm makes the sandbox of a script's next step ahead (runner.Warmer),
	// while a Run goes on; nil: each makes its own.
	warm *runner.Warmer
	mu   sync.Mutex
	live []runner.Process
	// halted is why no process starts any more: a save of the session
	// failed, and what a process did from then on could not be recorded
	// (a resume would run it again).
	halted error
}

// halt refuses every start from now on, for err.
func (l *liveProcesses) halt(err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.halted == nil {
		l.halted = err
	}
}

func (l *liveProcesses) StartHeadless(spec runner.Spec, onOutput func(runner.Chunk)) (runner.Process, error) {
	l.mu.Lock()
	halted := l.halted
	l.mu.Unlock()
	if halted != nil {
		return nil, fmt.Errorf("not started: the session can no longer be saved (%w)", halted)
	}
	if err := sandboxed(l.sandbox, &spec, nil, nil); err != nil {
		return nil, err
	}
	if spec.WatchHere {
		// A script's step (the one start watched by its caller): many and
		// short, one after another in one worktree, in sandboxes alike.
		spec.Warm = l.warmer()
	}
	p, err := l.next.StartHeadless(spec, onOutput)
	if err != nil {
		return nil, err
	}
	l.mu.Lock()
	// The ended ones go now, rather than each watched by a goroutine of
	// its own: one more goroutine woken at every end, on the path from one
	// step to the next.
	l.live = append(slices.DeleteFunc(l.live, runner.Ended), p)
	l.mu.Unlock()
	return p, nil
}

// warmer is the run's Warmer, while one runs with a sandbox.
func (l *liveProcesses) warmer() *runner.Warmer {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.warm
}

// warmWhileRunning gives the run a Warmer when it has a sandbox, and
// returns what ends it, with the sandboxes it keeps, at the run's end.
func (l *liveProcesses) warmWhileRunning() (end func()) {
	if l.sandbox == nil {
		return func() {}
	}
	w := runner.NewWarmer()
	l.mu.Lock()
	l.warm = w
	l.mu.Unlock()
	return func() {
		l.mu.Lock()
		l.warm = nil
		l.mu.Unlock()
		w.Close()
	}
}

// running are the processes started that have not ended.
func (l *liveProcesses) running() []runner.Process {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.live = slices.DeleteFunc(l.live, runner.Ended)
	return slices.Clone(l.live)
}

// Outcome is how a run ended.
type Outcome struct {
	Status     state.Status
	FailedTask string // the task whose failure ended the run
	Reason     string
}

// Executor runs one session's workflow. Its sessionStore owns the session
// value: every mutation happens under its mu (which guards the run's state
// here too) and is recorded in the journal.
type Executor struct {
	sessionStore
	opts  Options
	procs *liveProcesses // every headless process of the run (opts.Processes)

	active map[string]*taskrun.Attempt
	kept   []*taskrun.Attempt // DONE with keepAlive: stopped when the run ends

	pendingMerge bool // a merge step waits for a review
	parkStatus   state.Status
	runAllowed   map[string]bool // tools a person allowed for the rest of the run
	parkTask     string
	parkReason   string
	// meter adds up what the session's agents spend, under its budgets.
	meter *budget.Meter
}

// New returns an executor for sess (new or reloaded for resume).
func New(sess *state.Session, opts Options) *Executor {
	if opts.Grace <= 0 {
		opts.Grace = runner.DefaultGrace
	}
	if opts.Interaction == "" {
		opts.Interaction = InteractionPark
	}
	if opts.TailLines <= 0 {
		opts.TailLines = defaultTailLines
	}
	if sess.TaskStatus == nil {
		sess.TaskStatus = map[string]state.TaskStatus{}
	}
	if sess.Tasks == nil {
		sess.Tasks = map[string]*state.TaskRecord{}
	}
	for _, st := range sess.WorkflowDefinition.Stages() {
		if sess.WorkflowDefinition.Kind == workflow.KindGrimoire {
			break // a grimoire's tasks are keyed by the address they run at
		}
		for _, t := range st.Tasks {
			if _, ok := sess.TaskStatus[t.ID]; !ok {
				sess.TaskStatus[t.ID] = state.TaskPending
			}
		}
	}
	// The agent steps' tasks are known by their runs: their statuses count
	// in the session's overall state as a stage's tasks do.
	held := map[string]string{}
	for key, r := range sess.Runs {
		if r != nil && r.Task != nil {
			held[state.StepTaskID(r.Name, key)] = key
		}
	}
	procs := &liveProcesses{next: opts.processes(), sandbox: opts.Sandbox}
	opts.Processes = procs
	return &Executor{
		sessionStore: sessionStore{sess: sess, manager: opts.Manager, emitTo: opts.Emit, events: newEventQueue(opts.Emit), held: held, halt: procs.halt},
		opts:         opts,
		procs:        procs,
		active:       map[string]*taskrun.Attempt{},
		meter:        sessionMeter(sess, opts.Budget),
	}
}

// Session returns the session; read it only when the executor is not running
// or through Snapshot.
func (x *Executor) Session() *state.Session { return x.sess }

// RenderPrompts renders every task prompt of def with vars, so a missing
// variable is reported before anything starts.
func RenderPrompts(def *workflow.Definition, vars map[string]string) (map[string]string, error) {
	out := map[string]string{}
	var errs []string
	for _, st := range def.Stages() {
		for _, t := range st.Tasks {
			p, err := t.RenderPrompt(vars, def.Goal)
			if err != nil {
				errs = append(errs, err.Error())
				continue
			}
			out[t.ID] = p
		}
	}
	if len(errs) > 0 {
		return nil, errors.New(strings.Join(errs, "\n"))
	}
	return out, nil
}

// Run executes the workflow from where its step runs say it stopped until
// it completes, fails or ctx is cancelled. The session is saved on every
// change.
func (x *Executor) Run(ctx context.Context) (Outcome, error) {
	// Events wait for the next process's start while the run goes on
	// (eventQueue); all are out when Run returns, the last defer's too.
	x.events.hold()
	defer x.events.release()
	grimoire := x.sess.WorkflowDefinition.Kind == workflow.KindGrimoire
	prompts := x.opts.Prompts
	if !grimoire && prompts == nil {
		var err error
		if prompts, err = RenderPrompts(x.sess.WorkflowDefinition, x.sess.Vars); err != nil {
			return Outcome{}, err
		}
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// Counted while the strays are stopped at its end, so that another
	// run in this process (a backlog's bead) keeps its tasks' daemons.
	defer runner.RunStarted()()
	defer x.stopStrays()
	defer x.stopKept()
	defer x.procs.warmWhileRunning()()
	x.stopOrphans()
	x.mu.Lock()
	x.cancelRun = cancel
	x.sess.Status = state.StatusRunning
	x.sess.EndTime = nil
	x.sess.Error = ""
	x.sess.Limit = nil // a limited task continues now, or meets its limit again
	if x.opts.Manager != nil {
		j, err := x.opts.Manager.OpenJournal(x.sess)
		if err != nil {
			x.mu.Unlock()
			return Outcome{}, err
		}
		x.journal = j
	}
	if x.journal == nil || !x.journal.Empty() {
		// What a resume found in the journal goes into the snapshot (and
		// a torn last line away). A new session's snapshot was saved when
		// it was made: a third write of it would only cost the start.
		x.compactLocked()
	}
	x.mu.Unlock()
	ctx = x.startMetering(ctx)

	if grimoire {
		return x.runGrimoire(ctx), nil
	}
	return x.runStages(ctx, prompts), nil
}

func (x *Executor) finish(status state.Status, failedTask, reason string) Outcome {
	x.mu.Lock()
	if x.writeErr != nil {
		// Nothing is reported done unless it is saved.
		status, failedTask, reason = state.StatusFailed, "", x.writeErr.Error()
	}
	now := time.Now()
	x.sess.Status = status
	x.sess.EndTime = &now
	switch {
	case failedTask != "" && status == state.StatusFailed:
		x.sess.Error = fmt.Sprintf("task %q failed: %s", failedTask, reason)
	case reason != "" && status != state.StatusCancelled:
		x.sess.Error = reason
	}
	x.compactLocked()
	if x.journal != nil {
		if err := x.journal.Close(); err != nil && x.writeErr == nil {
			x.writeErr = err
		}
		x.journal = nil // later changes (none expected) save whole
	}
	if x.writeErr != nil && (status != state.StatusFailed || failedTask != "") {
		// The last save failed: what the run did is not all on disk.
		status, failedTask, reason = state.StatusFailed, "", x.writeErr.Error()
		x.sess.Status, x.sess.Error = status, reason
	}
	x.mu.Unlock()
	return Outcome{Status: status, FailedTask: failedTask, Reason: reason}
}

// Overall returns the current derived session state.
func (x *Executor) Overall() vocab.SessionState {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.deriveLocked()
}

// Send queues text for a running task: written to its stdin (headless) or
// its terminal (interactive).
func (x *Executor) Send(taskID, text string) error {
	tr := x.attempt(taskID)
	if tr == nil {
		return fmt.Errorf("task %q is not running", taskID)
	}
	return tr.Send(text)
}

// attempt is the attempt of the running task taskID; nil when there is
// none.
func (x *Executor) attempt(taskID string) *taskrun.Attempt {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.active[taskID]
}

// Kill SIGKILLs every running process group at once (a second interrupt),
// a task's or a script step's: the stops in progress end without waiting
// out their grace.
func (x *Executor) Kill() {
	procs := x.procs.running()
	x.mu.Lock()
	for _, tr := range x.active { // a terminal's too (a headless one twice: harmless)
		if p := tr.Process(); p != nil {
			procs = append(procs, p)
		}
	}
	for _, tr := range x.kept {
		procs = append(procs, tr.Process())
	}
	x.mu.Unlock()
	for _, p := range procs {
		p.Kill()
	}
}

// SendLine types text followed by Enter into a running task.
func (x *Executor) SendLine(taskID, text string) error {
	tr := x.attempt(taskID)
	if tr == nil {
		return fmt.Errorf("task %q is not running", taskID)
	}
	return tr.SendLine(text)
}

// Terminal returns the PTY of a running interactive task, for attaching.
func (x *Executor) Terminal(taskID string) (*runner.Terminal, error) {
	if tr := x.attempt(taskID); tr != nil {
		if term, ok := tr.Terminal(); ok {
			return term, nil
		}
	}
	return nil, fmt.Errorf("task %q has no running terminal", taskID)
}

// Attached tells a task that a person has its terminal (true) or gave it
// back (false). While attached, nothing is answered or typed for them and
// the task does not complete on idle.
func (x *Executor) Attached(taskID string, attached bool) {
	if tr := x.attempt(taskID); tr != nil {
		tr.Attached(attached)
	}
}

// TaskStatus returns a task's current status.
func (x *Executor) TaskStatus(taskID string) state.TaskStatus { return x.status(taskID) }

// CompleteTask stops an active task's process and marks it DONE (manual
// completion).
func (x *Executor) CompleteTask(taskID string) error {
	tr := x.attempt(taskID)
	if tr == nil {
		return fmt.Errorf("task %q is not active", taskID)
	}
	tr.Complete()
	return nil
}

// stopOrphans stops task processes that a previous vibeteam left running
// when it died without stopping them, so a resumed task never runs twice.
func (x *Executor) stopOrphans() {
	x.mu.Lock()
	type orphan struct {
		task  string
		pid   int
		start uint64
	}
	var found []orphan
	for t := range x.sess.AllTasks() {
		if rec := t.Record; rec != nil && rec.Pid > 0 && rec.PidStart > 0 {
			found = append(found, orphan{t.ID, rec.Pid, rec.PidStart})
		}
	}
	x.mu.Unlock()
	for _, o := range found {
		if runner.StopOrphan(o.pid, o.start, x.opts.Grace, x.sess.ID+"/"+o.task) {
			x.emit(o.task, events.OrphanStop{Pid: o.pid})
		}
	}
}

// park ends the run with status (waiting, or failed) because task needs a
// person and none can be asked.
func (x *Executor) park(status state.Status, taskID, reason string) {
	x.mu.Lock()
	if x.parkStatus == "" {
		x.parkStatus, x.parkTask, x.parkReason = status, taskID, reason
	}
	cancel := x.cancelRun
	x.mu.Unlock()
	if cancel != nil {
		cancel()
	}
}

// Park ends the run as waiting (resumable), e.g. when the person chose
// :quit at the pause prompt.
func (x *Executor) Park(taskID, reason string) { x.park(state.StatusWaiting, taskID, reason) }

func (x *Executor) keep(tr *taskrun.Attempt) {
	x.mu.Lock()
	x.kept = append(x.kept, tr)
	x.mu.Unlock()
}

// stopStrays stops the daemons the tasks that ended left behind outside
// their process group, session and environment tag; call it only when no
// task runs.
func (x *Executor) stopStrays() {
	if n := runner.StopStrays(x.opts.Grace); n > 0 {
		x.emit("", events.Warn{Warning: fmt.Sprintf("stopped %d process(es) a task left running in a session of their own (a daemon)", n)})
	}
}

// stopKept stops keepAlive processes when the run ends: no child outlives
// vibeteam.
func (x *Executor) stopKept() {
	x.mu.Lock()
	kept := x.kept
	x.kept = nil
	x.mu.Unlock()
	var wg sync.WaitGroup
	for _, tr := range kept {
		wg.Add(1)
		go func(tr *taskrun.Attempt) {
			defer wg.Done()
			tr.StopKept(x.opts.Grace)
		}(tr)
	}
	wg.Wait()
}
