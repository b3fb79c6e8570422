// Package core is the facade the CLI drives: an Orchestrator holding one
// SessionController per session, each owning its SessionManager and
// WorkflowExecutor. Nothing here prints or reads the terminal; everything
// that happens is an Event.
package core

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/vibeteam/vibeteam/core/events"
	"github.com/vibeteam/vibeteam/core/vocab"

	"github.com/vibeteam/vibeteam/adapters"
	"github.com/vibeteam/vibeteam/core/budget"
	"github.com/vibeteam/vibeteam/core/engine"
	"github.com/vibeteam/vibeteam/core/sandbox"
	"github.com/vibeteam/vibeteam/core/state"
	"github.com/vibeteam/vibeteam/core/taskrun"
	"github.com/vibeteam/vibeteam/core/telemetry"
	"github.com/vibeteam/vibeteam/core/workflow"
)

// Event is what the core emits; it is also one line of the JSONL log.
type Event = state.Event

// ErrAlreadyCompleted is returned by LoadResumable for a completed
// session.
var ErrAlreadyCompleted = errors.New("session already completed")

// RunOptions are the per-invocation settings shared by run and resume.
type RunOptions struct {
	BaseDir string
	Vars    map[string]string // --set
	// SecretVars are variables of Vars that are secrets whatever their
	// names (--set-env, --set-file): the definition is told (MarkSecret).
	SecretVars []string
	// Choices are the person's (--auto-approve, --headless, --grace,
	// --on-interaction, --keep-going, --strict, --wait-limits), checked
	// once by the CLI: handed to the engine and each task whole.
	taskrun.Choices
	KeepSessions int // prune to this many after a session starts; 0 = no pruning
	// SourceDigest is the sha256 of the workflow file the definition came
	// from (run), or of its new version (resume with Reload).
	SourceDigest string
	// Reload, on resume, replaces the session's definition by this fresh
	// load of its file; Rerun names tasks to run again even if DONE.
	Reload *workflow.Definition
	Rerun  []string
	// Bead is the bead a grimoire works on (.bead); nil without one.
	// BeadSource says where it came from ("bd", or the file's path); Beads
	// follows the run with its status (nil for a file).
	Bead       map[string]any
	BeadSource string
	Beads      engine.BeadTracker
	// Workspace opens the bead's worktree for the session (created on
	// run, the same one again on resume); nil runs in the base dir.
	Workspace func(sessionID string) (engine.Workspace, error)
	// Review asks a person about a merge; nil when there is no terminal.
	Review func(ctx context.Context, r engine.ReviewRequest) (decision, reason string)
	// Permission asks a person about a headless agent's denied tool calls;
	// nil when there is no terminal.
	Permission func(ctx context.Context, r engine.PermissionRequest) string
	// Question asks a person what a headless agent asks; nil when there is
	// no terminal.
	Question func(ctx context.Context, r engine.QuestionRequest) string
	// Answer, on resume, answers the agents parked with a question: each
	// such task continues its agent's session with it.
	Answer string
	// MergeDecision answers a pending merge on resume (engine.ReviewApprove
	// or engine.ReviewReject, with MergeReason).
	MergeDecision, MergeReason string
	// Allow, on resume, allows tools to the agents that were denied them:
	// each such task continues its agent's own session with them allowed.
	Allow []string
	// MaxSpend is what the run may spend (--max-cost, --max-tokens),
	// besides the grimoire's and its steps' budgets; it is kept in the
	// session, and a resume without one keeps the one recorded.
	MaxSpend budget.Limit
	// Budget, when set, is a meter the session's spend counts against
	// too: one shared by every session a backlog run starts, so that its
	// limit holds for them all. The spend a resumed session recorded is
	// added to it as the session starts running.
	Budget *budget.Meter
	// Sandbox, when set, fences in the session's processes (core/sandbox);
	// nil: none. A resume is given the one the session recorded, unless
	// told otherwise.
	Sandbox *sandbox.Config
	// Telemetry, when set, exports the run to OpenTelemetry (the OTEL_*
	// variables say where); nil: nothing is exported.
	Telemetry *telemetry.Telemetry
	// SessionID, on run, is the id the new session takes (one made with
	// state.Manager.NewID and recorded elsewhere first, as a backlog run
	// does); "" makes a new one.
	SessionID string

	// prompts are a stage workflow's task prompts, rendered once by Start
	// or Resume before anything is saved, and handed to the engine.
	prompts map[string]string
}

// Orchestrator starts and resumes sessions: each gets a controller of its
// own, with the orchestrator's adapters and event subscribers.
type Orchestrator struct {
	registry    *adapters.Registry
	subscribers []func(Event)
}

// NewOrchestrator returns an orchestrator whose controllers create adapters
// from registry and deliver every event to each subscriber in turn (the
// --events file, then the display, say; a nil one is skipped). Subscribers
// are called from many goroutines.
func NewOrchestrator(registry *adapters.Registry, subscribers ...func(Event)) *Orchestrator {
	return &Orchestrator{registry: registry, subscribers: subscribers}
}

// Start creates a new session for def, takes its lock and saves it. Run it
// with the returned controller.
func (o *Orchestrator) Start(def *workflow.Definition, opts RunOptions) (*SessionController, error) {
	prompts, err := renderPrompts(def, opts.Vars)
	if err != nil {
		return nil, usagef("%s: %v", def.Source, err)
	}
	opts.prompts = prompts
	mgr := state.NewManager(opts.BaseDir)
	id := opts.SessionID
	if id == "" {
		if id, err = mgr.NewID(); err != nil {
			return nil, err
		}
	} else if mgr.Exists(id) {
		return nil, fmt.Errorf("session %s exists already", id)
	}
	lock, err := mgr.Lock(id)
	if err != nil {
		return nil, err
	}
	MarkSecret(def, opts.SecretVars)
	now := time.Now()
	sess := &state.Session{
		ID:                 id,
		Workflow:           def.ID,
		Goal:               def.Goal,
		Status:             state.StatusRunning,
		Vars:               opts.Vars,
		WorkflowDefinition: def,
		SourceDigest:       opts.SourceDigest,
		Bead:               opts.Bead,
		BeadSource:         opts.BeadSource,
		BaseDir:            opts.BaseDir,
		StartTime:          now,
		History:            []state.HistoryEntry{},
	}
	c, err := o.newController(mgr, lock, sess, opts, events.SessionStarted)
	if err != nil {
		return nil, err
	}
	if opts.KeepSessions > 0 {
		// Pruning never touches a session whose lock is held, so ours is safe.
		_ = mgr.Prune(opts.KeepSessions)
	}
	return c, nil
}

// Resume takes the lock of a session LoadResumable returned (and whose
// secrets RestoreVars put back), and prepares to continue it at its
// current stage: nothing of that is checked again here. Vars given now
// override the stored ones; an --answer or --allow with no agent parked at
// a question or a denial, and a prompt that does not render, are usage
// errors.
func (o *Orchestrator) Resume(sess *state.Session, opts RunOptions) (*SessionController, error) {
	mgr := state.NewManager(opts.BaseDir)
	id := sess.ID
	lock, err := mgr.Lock(id)
	if err != nil {
		return nil, err
	}
	fail := func(err error) (*SessionController, error) {
		_ = lock.Release()
		return nil, err
	}
	if sess.Broken != nil {
		sess.Damage = append(sess.Damage, AcceptedDamage(sess.Broken))
	}
	if sess.Vars == nil {
		sess.Vars = map[string]string{}
	}
	for k, v := range opts.Vars {
		sess.Vars[k] = v
	}
	sess.BaseDir = opts.BaseDir
	if opts.MergeDecision != "" {
		sess.MergeDecision, sess.MergeReason = opts.MergeDecision, opts.MergeReason
	}
	if opts.Answer != "" && !answerQuestions(sess, opts.Answer) {
		return fail(usagef("session %s: no agent of it asked a question; --answer is for a session parked at one (vibeteam show %s)", id, id))
	}
	if len(opts.Allow) > 0 && !allowDenied(sess, opts.Allow) {
		return fail(usagef("session %s: no agent of it was denied a tool; --allow is for a session parked at a denial (vibeteam show %s)", id, id))
	}
	switch {
	case opts.Reload != nil:
		// Variables made secret by --set-env or --set-file stay so in the
		// file's new version.
		secret := slices.Clone(sess.WorkflowDefinition.Secrets)
		if _, err := reloadSession(sess, opts.Reload, opts.SourceDigest, opts.Rerun); err != nil {
			return fail(err)
		}
		MarkSecret(sess.WorkflowDefinition, secret)
	case len(opts.Rerun) > 0:
		if err := rerunTasks(sess, opts.Rerun); err != nil {
			return fail(err)
		}
	}
	prompts, err := renderPrompts(sess.WorkflowDefinition, sess.Vars)
	if err != nil {
		return fail(usagef("session %s: %v", id, err))
	}
	opts.prompts = prompts
	return o.newController(mgr, lock, sess, opts, events.SessionResumed)
}

// DamagedJournalError refuses to resume a session whose journal is
// damaged in the middle: going on would lose what the lines after it
// recorded, and run those steps again.
type DamagedJournalError struct {
	ID     string
	Damage *state.JournalDamage
}

// Code is usage (exit 2): the person decides (--accept-damage).
func (e *DamagedJournalError) Code() int { return vocab.ExitUsage }

func (e *DamagedJournalError) Error() string {
	b := e.Damage
	return fmt.Sprintf("session %s: its journal is damaged at %s:%d (%s); resuming would lose %s. "+
		"vibeteam resume %s --accept-damage goes on from the last whole state before that line, running those steps again",
		e.ID, b.Path, b.Line, b.Why, b.LostText(), e.ID)
}

// AcceptedDamage is what a resume with --accept-damage says it does.
func AcceptedDamage(b *state.JournalDamage) string {
	again := "the line and " + b.LostText() + " are lost"
	if len(b.Again) > 0 {
		again += "; these run again: " + strings.Join(b.Again, ", ")
	}
	return fmt.Sprintf("%s:%d: the journal is damaged (%s); going on from the last whole state before that line (--accept-damage): %s", b.Path, b.Line, b.Why, again)
}

// eventGather is how long an event may wait to be written to the session's
// log with the ones that follow it (state.EventLog.Gather).
const eventGather = 20 * time.Millisecond

func (o *Orchestrator) newController(mgr *state.Manager, lock *state.Lock, sess *state.Session, opts RunOptions, firstEvent string) (*SessionController, error) {
	if !opts.MaxSpend.IsZero() {
		limit := opts.MaxSpend
		sess.RunBudget = &limit
	}
	// From here on, every file of the session writes its secrets as ***.
	state.AddSecrets(append(secretValues(sess), o.authValues(sess)...))
	elog, err := state.OpenEventLog(mgr.EventLogPath(sess.ID))
	if err != nil {
		_ = lock.Release()
		return nil, err
	}
	elog.Gather(eventGather)
	c := &SessionController{ID: sess.ID, Manager: mgr, lock: lock, events: elog, orch: o, trace: opts.Telemetry.Session(sess.ID)}
	var ws engine.Workspace
	if opts.Workspace != nil {
		// The session is on disk before its worktree and owner record
		// exist: a kill in between leaves a session to resume (or cancel
		// --clean), never a worktree owned by a session nobody can find.
		if err := mgr.Save(sess); err != nil {
			c.close()
			return nil, err
		}
		if ws, err = opts.Workspace(sess.ID); err != nil {
			if firstEvent == events.SessionStarted {
				// Nothing was made: a new session that could not start
				// leaves nothing behind.
				_ = mgr.Discard(sess.ID)
			}
			c.close()
			return nil, err
		}
		sess.Worktree, sess.Branch, sess.BaseBranch = ws.Dir(), ws.Branch(), ws.Base()
		if rw, ok := ws.(interface{ Remote() string }); ok {
			sess.Remote = rw.Remote()
		}
	}
	policy, stopEgress, err := sandboxPolicy(sess, opts.Sandbox, sess.Worktree, c.emit)
	if err != nil {
		c.close()
		return nil, err
	}
	c.stopEgress = stopEgress
	c.Executor = engine.New(sess, c.engineOptions(opts, ws, policy, mgr))
	if err := mgr.Save(sess); err != nil {
		c.close()
		return nil, err
	}
	first := events.SessionStart{Workflow: sess.Workflow, Goal: sess.Goal, Stage: sess.CurrentStageIndex, Pid: os.Getpid()}
	if firstEvent == events.SessionResumed {
		c.emit(Event{Time: time.Now(), Session: sess.ID, Payload: events.SessionResume(first)})
	} else {
		c.emit(Event{Time: time.Now(), Session: sess.ID, Payload: first})
	}
	// What a kill or a full disk left unfinished is said once: the run
	// rewrites the session whole, and goes on from what was.
	damage := sess.Damage
	if elog.Damage != "" {
		damage = append(damage, elog.Damage)
	}
	for _, d := range damage {
		c.emit(Event{Time: time.Now(), Session: sess.ID, Payload: events.Warn{Warning: d}})
	}
	sess.Damage = nil
	return c, nil
}

// SessionController runs one session: its executor, its manager, its lock
// and its event log.
type SessionController struct {
	ID       string
	Manager  *state.Manager
	Executor *engine.Executor

	orch *Orchestrator
	// stopEgress closes the sandbox's egress proxy (a no-op without one).
	stopEgress func()
	// trace follows the run for OpenTelemetry; nil: nothing is exported.
	trace  *telemetry.Session
	lock   *state.Lock
	events *state.EventLog
	once   sync.Once
}

// Run executes the session until it completes, fails or ctx is cancelled,
// then releases the lock. The returned outcome says how it ended.
func (c *SessionController) Run(ctx context.Context) (engine.Outcome, error) {
	defer c.close()
	out, err := c.Executor.Run(ctx)
	if err != nil {
		return out, err
	}
	end := events.SessionEnd{Status: out.Status}
	if out.FailedTask != "" {
		end.FailedTask, end.Reason = out.FailedTask, out.Reason
	}
	if totals := c.Executor.Session().AgentTotals(); totals.Runs > 0 {
		end.Agents = &totals
	}
	c.emit(Event{Time: time.Now(), Session: c.ID, Payload: end})
	return out, nil
}

// Session is the controller's session. Read it after Run returns.
func (c *SessionController) Session() *state.Session { return c.Executor.Session() }

// Send writes text to a running task.
func (c *SessionController) Send(taskID, text string) error { return c.Executor.Send(taskID, text) }

// CompleteTask marks an active task DONE and stops its process.
func (c *SessionController) CompleteTask(taskID string) error {
	return c.Executor.CompleteTask(taskID)
}

// Close releases the lock and event log of a controller that was never Run.
func (c *SessionController) Close() { c.close() }

func (c *SessionController) close() {
	c.once.Do(func() {
		if c.stopEgress != nil {
			c.stopEgress()
		}
		_ = c.events.Close()
		_ = c.lock.Release()
	})
}

// emit writes to this session's log and forwards to the orchestrator's
// subscribers. Output chunks are not logged: the task log holds them.
func (c *SessionController) emit(e Event) {
	if _, output := e.Payload.(events.TaskOut); !output {
		_ = c.events.Write(e)
		c.trace.Observe(e)
	}
	for _, sub := range c.orch.subscribers {
		if sub != nil {
			sub(e)
		}
	}
}

// engineOptions are the run's options as the session's engine takes them:
// the person's choices whole, and what the CLI and the controller made.
func (c *SessionController) engineOptions(opts RunOptions, ws engine.Workspace, policy *sandbox.Policy, mgr *state.Manager) engine.Options {
	return engine.Options{
		Settings: taskrun.Settings{
			Choices:    opts.Choices,
			Registry:   c.orch.registry,
			Manager:    mgr,
			Permission: opts.Permission,
			Question:   opts.Question,
			Sandbox:    policy,
			Tracer:     c.tracer(),
		},
		Prompts:   opts.prompts,
		Beads:     opts.Beads,
		Workspace: ws,
		Review:    opts.Review,
		Budget:    opts.Budget,
		Emit:      c.emit,
	}
}

// tracer is the run's task tracer: nil (no interface holding a nil
// pointer) when nothing is exported.
func (c *SessionController) tracer() taskrun.Tracer {
	if c.trace == nil {
		return nil
	}
	return c.trace
}

// allowDenied adds tools to what each task parked at a denial may use, and
// reports whether there was one.
func allowDenied(sess *state.Session, tools []string) bool {
	ids := sess.WaitingFor(engine.DeniedReason)
	for _, id := range ids {
		t, _ := sess.Task(id)
		t.Record.Allow(tools...)
	}
	return len(ids) > 0
}

// answerQuestions gives answer to each task parked with its agent's
// question, and reports whether there was one.
func answerQuestions(sess *state.Session, answer string) bool {
	ids := sess.WaitingFor(engine.QuestionReason)
	for _, id := range ids {
		t, _ := sess.Task(id)
		t.Record.Answer = answer
	}
	return len(ids) > 0
}
