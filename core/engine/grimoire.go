package engine

import (
	"context"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/vibeteam/vibeteam/core/events"
	"github.com/vibeteam/vibeteam/core/flow"
	"github.com/vibeteam/vibeteam/core/render"
	"github.com/vibeteam/vibeteam/core/runner"
	"github.com/vibeteam/vibeteam/core/sandbox"
	"github.com/vibeteam/vibeteam/core/state"
	"github.com/vibeteam/vibeteam/core/vocab"
	"github.com/vibeteam/vibeteam/core/workflow"
)

// errWorkflowTimeout is the cause of a grimoire's context when its timeout
// has passed: the step running then is stopped and the workflow blocks.
var errWorkflowTimeout = fmt.Errorf("%w: the workflow ran longer than its timeout", flow.ErrTimeout)

// Reasons a grimoire blocks (Session.BlockedReason, workflow.blocked):
// vocab's, under the names the engine's code uses. A step run's Reason is
// prose that starts with one of them and ": " where it has one.
const (
	BlockedTimeout       = vocab.ReasonTimeout
	BlockedStepFailed    = vocab.BlockedStepFailed
	BlockedMaxIterations = vocab.BlockedMaxIterations
	BlockedTemplate      = vocab.BlockedTemplate
	BlockedMergeConflict = vocab.BlockedMergeConflict
	BlockedMergeRefused  = vocab.BlockedMergeRefused
	BlockedMergeRejected = vocab.BlockedMergeRejected
	BlockedMergeBinary   = vocab.BlockedMergeBinary
	BlockedMergeDeleted  = vocab.BlockedMergeDeleted
	// BlockedNothingToMerge: a merge step found no commit to bring (and
	// did not say allow_empty).
	BlockedNothingToMerge = vocab.BlockedNothingToMerge
	BlockedBudget         = vocab.ReasonBudget
)

// grimoire is one run of a grimoire as its step runners see it: the scope
// its templates see, where its steps run, and the host they record what
// they do through.
type grimoire struct {
	// host is all the step runners reach of the session; cfg its settings.
	host   stepHost
	cfg    Options
	bead   string // the bead's id and title ("" without a bead)
	title  string
	def    *workflow.Definition
	scope  *render.Scope
	spells *render.Spells
	dir    string // where steps run
	tag    string // carried by every script's processes

	mu sync.Mutex // guards scope against a render abandoned at its time limit
}

func (x *Executor) runGrimoire(ctx context.Context) Outcome {
	def := x.sess.WorkflowDefinition
	g := x.newGrimoire(def)
	if ws := x.opts.Workspace; ws != nil {
		g.dir = ws.Dir()
		x.mu.Lock()
		x.sess.Worktree, x.sess.Branch, x.sess.BaseBranch = ws.Dir(), ws.Branch(), ws.Base()
		x.mu.Unlock()
	} else if x.sess.Worktree != "" {
		// A session that worked in a bead's worktree never goes on in the
		// base dir, which is the user's own checkout.
		return x.finish(state.StatusBlocked, "", fmt.Sprintf("the session works in the worktree %s of bead %s, which was not opened: nothing ran", x.sess.Worktree, beadID(x.sess.Bead)))
	}
	// What bd says on stderr during the run is a warning of the run.
	if n, ok := x.opts.Beads.(interface{ SetNotice(func(string)) }); ok {
		n.SetNotice(func(l string) { x.emit("", events.Warn{Warning: "bd: " + l}) })
	}
	x.beadStatus(beadInProgress)
	x.mu.Lock()
	x.sess.WorkDir = g.dir
	x.sess.BlockedReason, x.sess.BlockedStep, x.sess.BlockedContext = "", "", ""
	x.sess.FailedSteps = nil
	resumed := len(x.sess.Runs) > 0
	x.mu.Unlock()
	x.emit("", events.Started{
		Grimoire: def.ID, Source: def.Source, Bead: beadID(x.sess.Bead), ID: x.sess.ID, Resumed: resumed,
	})
	// What scripts of a crashed run left behind stops before anything runs
	// again; what this run's leave stops when it ends.
	if resumed {
		runner.StopTagged(g.tag, x.opts.Grace)
	}
	defer runner.StopTagged(g.tag, x.opts.Grace)

	timeout := time.Duration(def.Timeout)
	if timeout <= 0 {
		timeout = time.Duration(workflow.DefaultGrimoireTimeout)
	}
	ctx, cancel := context.WithTimeoutCause(ctx, timeout, errWorkflowTimeout)
	defer cancel()

	start := time.Now()
	store := &runStore{x: x, def: def}
	in := &flow.Interpreter{
		Runners: map[vocab.StepType]flow.Runner{
			workflow.StepScript: scriptRunner{g},
			workflow.StepAgent:  agentRunner{g},
			workflow.StepStage:  grimoireStageRunner{g},
			workflow.StepMerge:  mergeRunner{g},
		},
		Scope:  &stepScope{g: g, store: store},
		Store:  store,
		Blocks: blocks,
	}
	out := in.Run(ctx, def.Steps)

	return x.grimoireEnd(ctx, def, out, start)
}

// newGrimoire is the run of def by this session: its scope (goal, vars,
// bead, the warnings of its templates), spells and where steps run.
func (x *Executor) newGrimoire(def *workflow.Definition) *grimoire {
	g := &grimoire{
		host:   x,
		cfg:    x.settings(),
		bead:   beadID(x.sess.Bead),
		def:    def,
		scope:  render.NewScope(def.Goal, x.sess.Vars),
		spells: render.NewSpells(x.sess.BaseDir),
		dir:    x.sess.BaseDir,
		tag:    x.sess.ID + "/script",
	}
	if goal, ok := x.sess.Vars["goal"]; ok {
		g.scope.Goal = goal
	}
	// {{.workflow.name}}; and the warning of an output key an agent did
	// not report, which renders empty.
	g.scope.Workflow = def.ID
	g.scope.Warn = func(step, w string) {
		x.emit("", events.TemplateWarning{Step: step, Warning: w})
	}
	if x.sess.Bead != nil {
		g.scope.SetBead(x.sess.Bead)
	}
	g.title, _ = x.sess.Bead["title"].(string)
	return g
}

// grimoireEnd is how the session ends once the interpreter returned out:
// parked, pending a merge, blocked, cancelled, waiting, failed or
// completed.
func (x *Executor) grimoireEnd(ctx context.Context, def *workflow.Definition, out flow.Outcome, start time.Time) Outcome {
	x.mu.Lock()
	parked, ptask, preason := x.parkStatus, x.parkTask, x.parkReason
	x.sess.IterationSummaries = iterationSummaries(def, x.sess.Runs)
	_, _, x.sess.FailedSteps = runTotals(x.sess.Runs)
	pending := x.pendingMerge
	// A stop that came while the merge landed, or once every step had
	// ended, stops nothing: git has the work, and the session is
	// completed (with a note), never cancelled.
	late := ctx.Err() != nil && (out.Status == flow.Done || out.Status == flow.Stopped && x.mergedLast)
	x.mu.Unlock()
	switch {
	case parked != "":
		return x.finish(parked, ptask, preason)
	case out.Status == flow.Waiting && pending:
		x.beadStatus(beadBlocked)
		return x.finish(state.StatusPendingMerge, "", fmt.Sprintf("step %q (%s): %s", out.Step, out.At, out.Reason))
	case out.Status == flow.Blocked || out.Status == flow.Stopped && errors.Is(context.Cause(ctx), flow.ErrTimeout):
		return x.block(out)
	case (out.Status == flow.Stopped || ctx.Err() != nil) && !late:
		return x.finish(state.StatusCancelled, "", "interrupted")
	case out.Status == flow.Waiting:
		return x.finish(state.StatusWaiting, "", fmt.Sprintf("step %q (%s): %s", out.Step, out.At, out.Reason))
	case out.Status == flow.Failed:
		return x.finish(state.StatusFailed, "", fmt.Sprintf("step %q (%s): %s", out.Step, out.At, out.Reason))
	}
	return x.complete(def, out, start, late)
}

// complete ends a grimoire whose steps all ran (or whose stop came too
// late, late, to stop its merge): its bead closed, its worktree removed.
func (x *Executor) complete(def *workflow.Definition, out flow.Outcome, start time.Time, late bool) Outcome {
	x.mu.Lock()
	x.sess.Cursor = ""
	steps, skipped, failed := runTotals(x.sess.Runs)
	x.mu.Unlock()
	x.emit("", events.Completed{
		DurationMS: time.Since(start).Milliseconds(), Steps: steps, Failed: len(failed), Skipped: skipped, FailedSteps: failed,
	})
	summary := fmt.Sprintf("Completed by vibeteam grimoire %s (session %s)", def.ID, x.sess.ID)
	if x.sess.Merged != "" {
		summary += fmt.Sprintf("; merged into %s as %s", x.sess.BaseBranch, x.sess.Merged)
	}
	if len(failed) > 0 {
		summary += fmt.Sprintf("; %d step(s) failed on the way: %s", len(failed), strings.Join(failed, ", "))
	}
	if late {
		note := x.lateStopNote(def, out)
		x.mu.Lock()
		x.sess.Note = note
		x.mu.Unlock()
		summary += "; " + note
	}
	x.beadClose(summary)
	x.cleanupAfterMerge()
	return x.finish(state.StatusCompleted, "", "")
}

// lateStopNote says that a stop came too late to stop anything: while the
// merge landed (and which steps after it did not run), or once every step
// had ended.
func (x *Executor) lateStopNote(def *workflow.Definition, out flow.Outcome) string {
	x.mu.Lock()
	merged, base, landed := x.sess.Merged, x.sess.BaseBranch, x.mergedLast
	x.mu.Unlock()
	if merged == "" || !landed {
		return "a stop came once every step had ended: the session completed"
	}
	note := fmt.Sprintf("a cancel came during the merge, which had landed (%s is at %s): the session completed", base, merged)
	if out.Status == flow.Stopped && len(out.At) > 0 {
		var left []string
		for _, s := range def.Steps[out.At[0].Index:] {
			left = append(left, s.Label())
		}
		note += "; the steps after the merge did not run: " + strings.Join(left, ", ")
	}
	return note
}

// blocks: a failed step blocks the grimoire when its on_fail says so.
func blocks(s *workflow.Step) bool {
	switch {
	case s.Script != nil:
		return s.Script.OnFail != workflow.OnFailContinue
	case s.Agent != nil:
		return s.Agent.OnFail == workflow.OnFailBlock
	}
	return true // a stage step whose task failed
}

// block ends the run as blocked, keeping why and what the step printed.
func (x *Executor) block(out flow.Outcome) Outcome {
	reason, why := BlockedStepFailed, out.Reason
	switch {
	case strings.HasPrefix(out.Reason, flow.ErrTimeout.Error()):
		reason = BlockedTimeout
	case strings.Contains(out.Reason, "iterations without a step exiting it"):
		reason = BlockedMaxIterations
	case strings.HasPrefix(out.Reason, "template: "):
		reason, why = BlockedTemplate, strings.TrimPrefix(out.Reason, "template: ")
	case strings.Contains(out.Reason, sandbox.RefusedReason+": "):
		reason = vocab.ReasonSandboxRefused
	default:
		for _, r := range []vocab.Reason{BlockedGateRed, BlockedMergeMoving, BlockedMergeConflict, BlockedMergeRefused, BlockedMergeRejected, BlockedBudget, BlockedNothingToMerge, BlockedMergeBinary, BlockedMergeDeleted} {
			if rest, ok := strings.CutPrefix(out.Reason, string(r)+": "); ok {
				reason, why = r, rest
			}
		}
	}
	x.mu.Lock()
	var context string
	if r := x.sess.Runs[out.At.Key()]; r != nil && strings.TrimSpace(r.Output) != "" {
		context = blockedContext(r.Output)
	} else {
		// A loop out of iterations, or a step stopped without output: the
		// last step run under its address, in walk order, that failed,
		// else the last that printed anything.
		at := out.At.Key()
		var keys []string
		for k, r := range x.sess.Runs {
			if r.Type != workflow.StepLoop && strings.TrimSpace(r.Output) != "" && (at == "" || strings.HasPrefix(k, at+".")) {
				keys = append(keys, k)
			}
		}
		flow.SortKeys(keys)
		pick := ""
		for i := len(keys) - 1; i >= 0; i-- {
			if x.sess.Runs[keys[i]].Status == flow.Failed {
				pick = keys[i]
				break
			}
		}
		if pick == "" && len(keys) > 0 {
			pick = keys[len(keys)-1]
		}
		if r := x.sess.Runs[pick]; r != nil {
			context = fmt.Sprintf("step %q (%s) %s:\n%s", r.Name, pick, r.Status, blockedContext(r.Output))
		}
	}
	if strings.TrimSpace(context) == "" {
		context = why // a template, a merge refused: the reason is all there is
	}
	x.sess.BlockedReason = reason
	x.sess.BlockedStep = out.Step
	x.sess.BlockedContext = context
	x.sess.Cursor = out.At.Key()
	x.mu.Unlock()
	x.emit("", events.Blocked{Reason: reason, Step: out.Step, Address: out.At.Key(), Context: context})
	x.beadStatus(beadBlocked)
	return x.finish(state.StatusBlocked, "", fmt.Sprintf("step %q (%s) blocked: %s", out.Step, out.At, why))
}

// failureLine picks out the lines of an output that report failures (test
// runners' FAIL, errors, panics), for the blocked context.
var failureLine = regexp.MustCompile(`(?i)(\bfail(ed|ure|ing)?\b|\berror\b|\bpanic\b|--- FAIL|✗|✘)`)

// blockedContext is the end of a step's output and, when they are further
// up, the failures it printed.
func blockedContext(output string) string {
	lines := strings.Split(strings.TrimRight(output, "\n"), "\n")
	const tail = 30
	var b strings.Builder
	if len(lines) > tail {
		var fails []string
		for _, l := range lines[:len(lines)-tail] {
			if failureLine.MatchString(l) {
				fails = append(fails, l)
			}
		}
		if len(fails) > 20 {
			fails = fails[len(fails)-20:]
		}
		if len(fails) > 0 {
			b.WriteString("failures reported earlier:\n")
			for _, l := range fails {
				b.WriteString("  " + l + "\n")
			}
			b.WriteString("last lines:\n")
		}
		lines = lines[len(lines)-tail:]
	}
	for _, l := range lines {
		b.WriteString(l + "\n")
	}
	return strings.TrimRight(b.String(), "\n")
}

// runTotals counts a session's step runs, in walk order: those that ran
// (done or failed; loops aside), those skipped, and the failed ones as
// "name (address)".
func runTotals(runs map[string]*state.StepRun) (steps, skipped int, failed []string) {
	keys := make([]string, 0, len(runs))
	for k := range runs {
		keys = append(keys, k)
	}
	flow.SortKeys(keys)
	for _, k := range keys {
		r := runs[k]
		switch {
		case r.Type == workflow.StepLoop:
		case r.Status == flow.Skipped:
			skipped++
		case r.Status == flow.Done:
			steps++
		case r.Status == flow.Failed:
			steps++
			failed = append(failed, fmt.Sprintf("%s (%s)", r.Name, k))
		}
	}
	return steps, skipped, failed
}

// beadID is the bead's id field, if any.
func beadID(bead map[string]any) string {
	if id, ok := bead["id"].(string); ok {
		return id
	}
	return ""
}

// iterationOf is the innermost loop iteration of an address (0 outside
// loops).
func iterationOf(at flow.Addr) int {
	for i := len(at) - 1; i >= 0; i-- {
		if at[i].Iteration > 0 {
			return at[i].Iteration
		}
	}
	return 0
}

// iterationSummaries is one line per loop iteration that ran: the loop, the
// iteration, and each step's outcome, e.g.
// "quality iteration 2: tests failed (exit 1), fix done".
func iterationSummaries(def *workflow.Definition, runs map[string]*state.StepRun) []string {
	type iter struct {
		key   string // the address of the iteration: "2.3"
		loop  string
		n     int
		steps []string
	}
	byKey := map[string]*iter{}
	keys := make([]string, 0, len(runs))
	for k := range runs {
		keys = append(keys, k)
	}
	flow.SortKeys(keys)
	var order []*iter
	for _, k := range keys {
		at, err := flow.ParseAddr(k)
		if err != nil || len(at) < 2 {
			continue
		}
		parent := at[:len(at)-1]
		if parent[len(parent)-1].Iteration == 0 {
			continue
		}
		pk := parent.Key()
		it := byKey[pk]
		if it == nil {
			loop := stepAt(def.Steps, parent)
			name := ""
			if loop != nil {
				name = loop.Label()
			}
			it = &iter{key: pk, loop: name, n: parent[len(parent)-1].Iteration}
			byKey[pk] = it
			order = append(order, it)
		}
		r := runs[k]
		desc := r.Name + " " + string(r.Status)
		if r.Type == workflow.StepScript && (r.Status == flow.Failed || r.Status == flow.Blocked) {
			desc += fmt.Sprintf(" (exit %d)", r.ExitCode)
		}
		it.steps = append(it.steps, desc)
	}
	out := make([]string, 0, len(order))
	for _, k := range keys {
		if r := runs[k]; r.Type == workflow.StepLoop && r.PrunedThrough > 0 {
			out = append(out, fmt.Sprintf("%s iterations 1-%d: finished, not kept (a session keeps the last %d iterations of a loop)", r.Name, r.PrunedThrough, state.KeptIterations))
		}
	}
	for _, it := range order {
		out = append(out, fmt.Sprintf("%s iteration %d: %s", it.loop, it.n, strings.Join(it.steps, ", ")))
	}
	return out
}

// stepAt finds the step an address points to.
func stepAt(steps []workflow.Step, at flow.Addr) *workflow.Step {
	var s *workflow.Step
	for i, f := range at {
		if f.Index >= len(steps) {
			return nil
		}
		s = &steps[f.Index]
		if i < len(at)-1 {
			if s.Loop == nil {
				return nil
			}
			steps = s.Loop.Steps
		}
	}
	return s
}

// stepScope is the flow.Scope of a run (a grimoire's, a stage workflow's):
// the render.Scope.
type stepScope struct {
	g     *grimoire
	store *runStore
}

func (s *stepScope) When(step *workflow.Step) (bool, error) {
	if step.When == "" {
		return true, nil
	}
	s.g.mu.Lock()
	defer s.g.mu.Unlock()
	ok, err := s.g.scope.When(step.Label(), step.When)
	if err != nil {
		return false, fmt.Errorf("template: %s: %v", step.PosOf("when"), err)
	}
	return ok, nil
}

func (s *stepScope) Record(step *workflow.Step, r flow.Result) {
	s.g.mu.Lock()
	defer s.g.mu.Unlock()
	s.g.scope.Record(step.Label(), step.Output, stepResult(r))
}

func (s *stepScope) EnterLoop(loop *workflow.Step) {
	s.g.mu.Lock()
	defer s.g.mu.Unlock()
	s.g.scope.EnterLoop(loop.Label())
}

func (s *stepScope) Iteration(loop *workflow.Step, at flow.Addr, n int) {
	s.g.mu.Lock()
	s.g.scope.NextIteration() // n: the interpreter counts as the scope does
	s.g.mu.Unlock()
	store := s.store
	if n <= store.PrunedThrough(at) {
		return // passed over on resume
	}
	store.prune(at, n)
	if !store.replaying(at.Iteration(n).Step(0)) {
		s.g.host.emit("", events.Iteration{
			Loop: loop.Label(), Address: at.Key(), Iteration: n, Max: loop.Loop.MaxIterations,
		})
	}
}

func (s *stepScope) ExitLoop(loop *workflow.Step) {
	s.g.mu.Lock()
	defer s.g.mu.Unlock()
	s.g.scope.ExitLoop()
}

// stepResult is a run's result as templates read it.
func stepResult(r flow.Result) render.StepResult {
	return render.StepResult{
		Output:       r.Output,
		Success:      r.Status == flow.Done,
		Failed:       r.Status == flow.Failed,
		ExitCode:     r.ExitCode,
		Summary:      r.Summary,
		Outputs:      r.Outputs,
		DurationMS:   r.Duration.Milliseconds(),
		ChangedFiles: r.ChangedFiles,
	}
}

// runStore keeps the runs in the session by address; the cursor is the
// address of the run in progress. Grimoires and stage workflows keep their
// place in it alike.
type runStore struct {
	x   *Executor
	def *workflow.Definition
	// stages: the runs are a stage workflow's stages. They are told as
	// stage_started and stage_completed, as they always were; and a failed
	// one is run again on resume (its DONE tasks skipped), since its
	// failure failed the workflow rather than being passed on.
	stages bool
}

func (s *runStore) finishedRun(at flow.Addr) (*state.StepRun, bool) {
	x := s.x
	x.mu.Lock()
	defer x.mu.Unlock()
	r := x.sess.Runs[at.Key()]
	if r == nil {
		return nil, false
	}
	if st := stepAt(s.def.Steps, at); st == nil || st.Label() != r.Name || st.Type != r.Type {
		// The grimoire was edited (resume --reload) and another step is at
		// this address now: it runs.
		return nil, false
	}
	switch flow.Status(r.Status) {
	case flow.Failed:
		if s.stages {
			return nil, false
		}
		fallthrough
	case flow.Done, flow.Skipped:
		cp := *r
		return &cp, true
	}
	return nil, false
}

func (s *runStore) Finished(at flow.Addr) (flow.Result, bool) {
	r, ok := s.finishedRun(at)
	if !ok {
		return flow.Result{}, false
	}
	res := flow.Result{
		Status: flow.Status(r.Status), Output: r.Output, Outputs: r.Outputs, Summary: r.Summary,
		ExitCode: r.ExitCode, ChangedFiles: r.ChangedFiles, LogPath: r.LogPath, ExitLoop: r.ExitLoop,
		Reason: r.Reason, Duration: time.Duration(r.DurationMS) * time.Millisecond,
	}
	return res, true
}

// replaying reports whether the run at is finished already: a resume
// walks past it again without running it.
func (s *runStore) replaying(at flow.Addr) bool {
	_, ok := s.finishedRun(at)
	return ok
}

// PrunedThrough is the last iteration of the loop at whose runs were
// dropped.
func (s *runStore) PrunedThrough(at flow.Addr) int {
	x := s.x
	x.mu.Lock()
	defer x.mu.Unlock()
	if r := x.sess.Runs[at.Key()]; r != nil {
		return r.PrunedThrough
	}
	return 0
}

// prune drops the runs of the iterations of the loop at that are more than
// state.KeptIterations before iteration n, as it starts.
func (s *runStore) prune(at flow.Addr, n int) {
	through := n - 1 - state.KeptIterations
	x := s.x
	key := at.Key()
	x.mu.Lock()
	defer x.mu.Unlock()
	r := x.sess.Runs[key]
	if through < 1 || r == nil || r.PrunedThrough >= through {
		return
	}
	r.PrunedThrough = through
	x.sess.PruneIterations(key, through)
	cp := *r
	x.checkpointLocked(state.Change{Run: &cp, RunKey: key}, false)
}

func (s *runStore) Started(at flow.Addr, step *workflow.Step) {
	x := s.x
	key := at.Key()
	now := time.Now()
	x.mu.Lock()
	if x.sess.Runs == nil {
		x.sess.Runs = map[string]*state.StepRun{}
	}
	attempts, pruned := 0, 0
	var task *state.TaskRecord
	if old := x.sess.Runs[key]; old != nil {
		attempts, pruned = old.Attempts, old.PrunedThrough
		if old.Name == step.Label() && old.Type == step.Type {
			// The same step runs again here: its task goes on from its
			// record (attempts, the agent's session, what a person
			// allowed or answered).
			task = old.Task
		}
	}
	run := &state.StepRun{Name: step.Label(), Type: step.Type, Status: vocab.StepRunning, Iteration: iterationOf(at), StartedAt: &now, Attempts: attempts + 1, PrunedThrough: pruned, Task: task}
	x.sess.Runs[key] = run
	x.sess.Cursor = key
	x.mergedLast = false
	if s.stages {
		x.sess.CurrentStageIndex = at[0].Index
	}
	cp := *run
	c := state.Change{Run: &cp, RunKey: key, Cursor: &key}
	switch step.Type {
	case workflow.StepStage:
		// Each task of a stage journals its start at once: the stage's
		// start goes with the first of them instead of on a line of its
		// own (a resume runs a stage without a finished run either way).
		x.deferLocked(c)
	case workflow.StepScript:
		// Journaled once its process runs (flushEvents), off the path from
		// the last step's end to this one's start: a kill before that
		// leaves the step not started, and a resume runs it, as it would
		// run a started one.
		x.deferLocked(c)
	default:
		x.checkpointLocked(c, false)
	}
	x.mu.Unlock()
	switch {
	case s.stages:
		x.emit("", events.StageStart{Stage: step.Label(), Index: at[0].Index, Tasks: len(step.Tasks)})
	case step.Type == workflow.StepLoop:
		x.emit("", events.StepStarted{Name: step.Label(), Type: step.Type, Address: key, Iteration: iterationOf(at)})
	}
}

func (s *runStore) Ended(at flow.Addr, step *workflow.Step, r flow.Result) {
	x := s.x
	key := at.Key()
	now := time.Now()
	output := r.Output
	if len(output) > state.StepOutputLimit {
		output = output[len(output)-state.StepOutputLimit:]
	}
	x.mu.Lock()
	if x.sess.Runs == nil {
		x.sess.Runs = map[string]*state.StepRun{}
	}
	run := x.sess.Runs[key]
	if run == nil {
		run = &state.StepRun{Name: step.Label(), Type: step.Type, Iteration: iterationOf(at)}
		x.sess.Runs[key] = run
	}
	if r.Duration == 0 && run.StartedAt != nil {
		r.Duration = now.Sub(*run.StartedAt) // a loop: all its iterations
	}
	run.Status = r.Status
	run.Output, run.Outputs, run.Summary = output, r.Outputs, r.Summary
	run.ExitCode, run.ExitLoop, run.ChangedFiles = r.ExitCode, r.ExitLoop, r.ChangedFiles
	run.Reason, run.LogPath, run.DurationMS = r.Reason, r.LogPath, r.Duration.Milliseconds()
	run.EndedAt = &now
	cp := *run
	// The end of a step is made durable: a resume never runs it again.
	// (With it, a stage's only task's end, which waited for this line.)
	x.checkpointLocked(state.Change{Run: &cp, RunKey: key}, true)
	x.mu.Unlock()
	if step.Type != workflow.StepLoop {
		// No task runs between two steps: what the step left goes, after
		// its end is saved (a kill while a stray takes its grace does not
		// run the step again).
		x.stopStrays()
	}
	if s.stages {
		if r.Status == flow.Done {
			x.emit("", events.StageEnd{Stage: step.Label(), Index: at[0].Index})
		}
		return
	}
	ev := events.StepCompleted{
		Name: step.Label(), Type: step.Type, Address: key, Iteration: iterationOf(at),
		Status: r.Status, Success: r.Status == flow.Done, ExitCode: r.ExitCode,
		Summary: r.Summary, Reason: r.Reason, LogPath: r.LogPath, DurationMS: r.Duration.Milliseconds(),
	}
	ev.Output = r.Output
	if len(ev.Output) > events.OutputLimit {
		ev.Output, ev.Truncated = ev.Output[len(ev.Output)-events.OutputLimit:], true
	}
	x.emit("", ev)
}

// stepStarted announces a step with what it was rendered to.
func (g *grimoire) stepStarted(step *workflow.Step, at flow.Addr, inputs map[string]string) {
	g.host.emit("", events.StepStarted{
		Name: step.Label(), Type: step.Type, Address: at.Key(), Iteration: iterationOf(at), Inputs: inputs,
	})
}

// stopped is the result of a step whose context ended: the workflow's
// timeout blocks it (and it runs again on resume), an interrupt stops it.
func stopped(ctx context.Context, r flow.Result) flow.Result {
	if cause := context.Cause(ctx); errors.Is(cause, flow.ErrTimeout) {
		r.Status, r.Reason = flow.Blocked, cause.Error()
		return r
	}
	r.Status, r.Reason = flow.Stopped, "interrupted"
	return r
}

// logName is the file name a step run's output goes to: its name and
// address ("tests@2.3-0").
func logName(step *workflow.Step, at flow.Addr) string {
	return StepTaskID(step.Label(), at.Key())
}

// StepTaskID is the task id (and log name) of a step run: the step's name
// at its address, e.g. "impl@2.1-0" for address "2.1/0".
func StepTaskID(name, address string) string { return state.StepTaskID(name, address) }

// openStepLog opens the log file of a step run (nil without a manager).
func (g *grimoire) openStepLog(name string) (*os.File, string) {
	m := g.cfg.Manager
	if m == nil {
		return nil, ""
	}
	path := m.TaskLogPath(g.cfg.SessionID, name)
	if err := os.MkdirAll(m.LogDir(g.cfg.SessionID), 0o700); err != nil {
		return nil, ""
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return nil, ""
	}
	return f, path
}
