// Package taskrun runs one attempt of one task: it prepares the launch
// (mode, a continued agent session, MCP servers, launch files, budget,
// logs), starts the task's process through its driver (pipe, terminal, or
// protocol), feeds it, supervises it (timeout, inactivity, budgets, a
// person's replies, completion, cancellation) and judges its end. All it
// needs of the session is its Host.
package taskrun

import (
	"context"
	"fmt"
	"time"

	"github.com/vibeteam/vibeteam/adapters"
	"github.com/vibeteam/vibeteam/core/events"
	"github.com/vibeteam/vibeteam/core/runner"
	"github.com/vibeteam/vibeteam/core/sandbox"
	"github.com/vibeteam/vibeteam/core/state"
	"github.com/vibeteam/vibeteam/core/vocab"
)

// Host is all that one task's run needs from whoever runs it: the
// settings of the session, the task's record and status, its events, and a
// way to stop the session for a person. A run reaches the session only
// through it — never the executor's lock or session — so the process
// handling (whatever its driver, the automation, the pauses) is one unit,
// whatever walks the steps.
type Host interface {
	Settings() Settings
	// UpdateRecord changes the task's record; checkpoint also records the
	// change in the session's journal.
	UpdateRecord(taskID string, checkpoint bool, change func(*state.TaskRecord))
	// RecordStart changes the task's record for an attempt about to start
	// and journals it, before the process starts: an error is a save of
	// the session that failed (this one or an earlier one), and the
	// process must not start (what it did could not be recorded, and a
	// resume would run it again).
	RecordStart(taskID string, change func(*state.TaskRecord)) error
	// ReadRecord returns a copy of the task's record.
	ReadRecord(taskID string) state.TaskRecord
	SetStatus(taskID string, st state.TaskStatus, ev events.TaskStatusChange)
	History(kind, taskID, text string)
	// StartHistory adds to the history what a task starts with (its
	// prompt): journaled with the line of the task's start or failure,
	// which always follows, rather than on one of its own before it.
	StartHistory(kind, taskID, text string)
	Emit(taskID string, p events.Payload)
	// FlushEvents delivers the events emitted until now, which a run holds
	// from a process's end to the next one's start.
	FlushEvents()
	// Park stops the session for a person (waiting) or fails it; Parked
	// says whether and how it was.
	Park(status state.Status, taskID, reason string)
	Parked() state.Status
	// SetLimit records the usage limit the session stopped on or waits
	// out (nil: none any more).
	SetLimit(l *state.Limit)
	// AllowForRun remembers tools a person allowed for the rest of the
	// run; AllowedForRun reports whether all of tools are.
	AllowForRun(tools []string)
	AllowedForRun(tools []string) bool
	// Running and Ended tell the host which runs are live (for Send,
	// Terminal, Kill); Keep hands it a DONE task whose process stays.
	Running(a *Attempt)
	Ended(taskID string)
	Keep(a *Attempt)
}

// Settings are the session's settings a task run reads.
type Settings struct {
	// Choices are the person's, from run's and resume's flags: the same
	// value from the command line to here, embedded at each layer.
	Choices
	SessionID string
	BaseDir   string
	Registry  *adapters.Registry
	Manager   *state.Manager
	TailLines int // clean output lines kept in the session
	// Permission asks a person about the tool calls an agent was denied
	// (nil: no terminal, the session parks); Question asks them what the
	// agent asks ("" is no answer).
	Permission func(ctx context.Context, r PermissionRequest) string
	Question   func(ctx context.Context, r QuestionRequest) string
	// Processes starts the headless processes (nil: real ones).
	Processes ProcessStarter
	// Sandbox fences in every process of the run that runs the
	// repository's or an agent's code; nil: none.
	Sandbox *sandbox.Policy
	// Tracer follows each attempt for telemetry; nil: none.
	Tracer Tracer
}

// Choices are how a person asked a run to go: run's and resume's flags.
// One value goes from the command line to each task: the CLI fills it and
// checks it (Check) once; core, the engine and a task's run are handed it
// whole, embedded in their options, never copied field by field, so a new
// choice is one field here.
type Choices struct {
	AutoApprove   bool
	ForceHeadless bool
	Grace         time.Duration // SIGTERM → SIGKILL; 0: runner.DefaultGrace
	Interaction   string        // ask | park | fail; "": park
	// KeepGoing is the engine's: a failed task does not stop the others
	// of its stage.
	KeepGoing bool
	// Strict makes an MCP server whose command is not there fail the task.
	Strict bool
	// WaitLimits is how long in all a task may wait for its agent's usage
	// limits to reset; 0: the session stops as limited at once.
	WaitLimits time.Duration
}

// Check reports the first choice no run can take, in the words of the
// flag that gave it: a usage error (exit 2).
func (c Choices) Check() error {
	switch c.Interaction {
	case "", InteractionAsk, InteractionPark, InteractionFail:
	default:
		return &vocab.UsageError{Err: fmt.Errorf("--on-interaction must be ask, park or fail, not %q", c.Interaction)}
	}
	if c.Grace < 0 {
		return &vocab.UsageError{Err: fmt.Errorf("--grace must be 0 or more, not %s", c.Grace)}
	}
	if c.WaitLimits < 0 {
		return &vocab.UsageError{Err: fmt.Errorf("--wait-limits must be 0 or more, not %s", c.WaitLimits)}
	}
	return nil
}

// Tracer follows each attempt of a task for telemetry (core/telemetry).
// TaskStarting is called before its process starts, and what it returns
// is added to the process's environment (TRACEPARENT: an agent that
// exports its own telemetry nests it under the task's span); TaskEnded
// once the attempt's record is final, before its end is emitted.
type Tracer interface {
	TaskStarting(taskID string) map[string]string
	TaskEnded(taskID string, rec state.TaskRecord)
}

// ProcessStarter starts one headless process: a script step's shell, a
// headless agent. onOutput gets its output as it comes.
type ProcessStarter interface {
	StartHeadless(spec runner.Spec, onOutput func(runner.Chunk)) (runner.Process, error)
}

type realProcesses struct{}

func (realProcesses) StartHeadless(spec runner.Spec, onOutput func(runner.Chunk)) (runner.Process, error) {
	return runner.StartHeadless(spec, onOutput)
}

func (s Settings) processes() ProcessStarter {
	if s.Processes != nil {
		return s.Processes
	}
	return realProcesses{}
}

// Interaction policies when a task needs a person.
const (
	InteractionAsk  = "ask"  // emit events.Interaction; the CLI asks at the terminal
	InteractionPark = "park" // no terminal: park the session as waiting (exit 3)
	InteractionFail = "fail" // no terminal, --on-interaction=fail: the session fails
)

// Why a task ended, as recorded in its TaskRecord.Reason.
const (
	stoppedReason     = vocab.ReasonStopped
	timeoutReason     = vocab.ReasonTimeout
	startFailedReason = vocab.ReasonStartFailed
	exitReason        = vocab.ReasonExit
	signalReason      = vocab.ReasonSignal
	inactivityReason  = vocab.ReasonInactivity
	completedByUser   = vocab.ReasonCompletedByUser
	interactionParked = vocab.ReasonParked
	unsentReason      = vocab.ReasonInputsUnsent
)

// WatchHere watches proc, started with runner.Spec.WatchHere, on this
// goroutine until it is done (true), or until ctx ends, wake fires or the
// deadline (if not zero) passes (false: a goroutine of its own watches it
// from then on, and proc.Done tells its end).
func WatchHere(ctx context.Context, proc runner.Process, wake *runner.Wake, deadline time.Time) bool {
	w, ok := proc.(runner.HereWatcher)
	if !ok {
		return false
	}
	stop := context.AfterFunc(ctx, wake.Fire)
	defer stop()
	return w.WatchHere(wake, deadline)
}
