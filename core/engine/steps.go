package engine

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/vibeteam/vibeteam/core/events"
	"github.com/vibeteam/vibeteam/core/flow"
	"github.com/vibeteam/vibeteam/core/render"
	"github.com/vibeteam/vibeteam/core/runner"
	"github.com/vibeteam/vibeteam/core/sandbox"
	"github.com/vibeteam/vibeteam/core/state"
	"github.com/vibeteam/vibeteam/core/taskrun"
	"github.com/vibeteam/vibeteam/core/workflow"
)

// tailBuffer keeps the last limit bytes written to it.
type tailBuffer struct {
	mu    sync.Mutex
	limit int
	buf   []byte
	cut   bool
}

func (b *tailBuffer) Write(p []byte) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = append(b.buf, p...)
	if len(b.buf) > 2*b.limit {
		b.buf = append(b.buf[:0], b.buf[len(b.buf)-b.limit:]...)
		b.cut = true
	}
}

func (b *tailBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.buf) > b.limit {
		return string(b.buf[len(b.buf)-b.limit:])
	}
	return string(b.buf)
}

// lazyLog is a step's log file, created only once more than keep bytes
// have been written to it.
type lazyLog struct {
	mu   sync.Mutex
	open func() (*os.File, string)
	keep int
	head []byte
	f    *os.File
	path string
	gave bool // open failed: the session's tail is all there is
}

func (l *lazyLog) Write(p []byte) {
	p = state.RedactBytes(p) // a secret the step prints is written as ***
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case l.f != nil:
		_, _ = l.f.Write(p)
	case l.gave:
	case len(l.head)+len(p) <= l.keep:
		l.head = append(l.head, p...)
	default:
		if l.f, l.path = l.open(); l.f == nil {
			l.gave = true
			return
		}
		_, _ = l.f.Write(l.head)
		_, _ = l.f.Write(p)
		l.head = nil
	}
}

// Path is the log file's path, "" when none was needed.
func (l *lazyLog) Path() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.path
}

func (l *lazyLog) Close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f != nil {
		_ = l.f.Close()
	}
}

// captureLimit bounds what a step keeps of its output in memory; the log
// file has it all.
const captureLimit = 4 << 20

// shell runs script steps: /bin/sh, found once.
var shell = func() string {
	if _, err := os.Stat("/bin/sh"); err == nil {
		return "/bin/sh"
	}
	return "sh"
}()

// maxInlineScript is the longest command given to sh -c: Linux takes at
// most 128 KiB in one argument (MAX_ARG_STRLEN), and the environment
// shares the space.
const maxInlineScript = 96 << 10

// scriptFile writes a command to a private temporary file for sh to run.
func scriptFile(cmd string) (string, error) {
	f, err := os.CreateTemp("", "vibeteam-script-*.sh")
	if err != nil {
		return "", err
	}
	_, err = f.WriteString(cmd)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(f.Name())
		return "", err
	}
	return f.Name(), nil
}

// scriptRunner runs a script step: its command through sh -c, in the
// grimoire's directory, stdout and stderr together as its output.
type scriptRunner struct{ g *grimoire }

func (r scriptRunner) Run(ctx context.Context, step *workflow.Step, at flow.Addr) flow.Result {
	g, host := r.g, r.g.host
	g.mu.Lock()
	cmd, warnings, err := g.scope.Command(step.Label(), step.Script.Command)
	g.mu.Unlock()
	for _, w := range warnings {
		host.emit("", events.TemplateWarning{Step: step.Label(), Warning: w})
	}
	if err != nil {
		g.stepStarted(step, at, nil)
		return flow.Result{Status: flow.Blocked, Reason: fmt.Sprintf("template: %s: %v", step.PosOf("command"), err)}
	}
	g.stepStarted(step, at, map[string]string{"command": cmd})

	name := logName(step, at)
	// Most scripts print little: their output is whole in the session and
	// in the step's event. A log file is written once it is more than
	// that (creating a file costs more than running `echo`).
	log := &lazyLog{open: func() (*os.File, string) { return g.openStepLog(name) }, keep: events.OutputLimit}
	defer log.Close()
	out := &tailBuffer{limit: captureLimit}
	onOutput := func(c runner.Chunk) {
		out.Write(c.Clean)
		log.Write(c.Clean)
		host.emit(name, events.TaskOut{Stream: c.Stream, Text: string(c.Clean)})
	}
	proc, plan, cleanup, err := r.start(step, cmd, onOutput)
	defer cleanup()
	if err != nil {
		return flow.Result{Status: flow.Failed, ExitCode: -1, Reason: err.Error()}
	}
	result := func(res runner.Result) flow.Result {
		// As $(...) reads it: without the trailing newlines (the log
		// keeps them).
		return flow.Result{Output: strings.TrimRight(out.String(), "\n"), ExitCode: res.ExitCode, LogPath: log.Path()}
	}
	exited := func() flow.Result { res := proc.Result(); return scriptExit(step, plan, result(res), res) }
	return r.wait(ctx, step, proc, exited, result)
}

// start starts a script's shell in its sandbox (plan), its command inline
// or, when longer than one argument may be, in a file (cleanup removes it).
func (r scriptRunner) start(step *workflow.Step, cmd string, onOutput func(runner.Chunk)) (proc runner.Process, plan *sandbox.Plan, cleanup func(), err error) {
	g := r.g
	cleanup = func() {}
	args := []string{"-c", cmd}
	if len(cmd) > maxInlineScript {
		// Longer than one argument may be (a bead's long description in
		// it): sh reads it from a file instead.
		file, err := scriptFile(cmd)
		if err != nil {
			return nil, nil, cleanup, fmt.Errorf("write the long command to a file: %w", err)
		}
		cleanup = func() { os.Remove(file) }
		args = []string{file}
	}
	spec := runner.Spec{
		Command: shell, Args: args, Dir: g.dir, Tag: g.tag,
		GroupOnly: true, NoInput: true, MergeOutput: true, WatchHere: true,
	}
	if err := sandboxed(g.cfg.Sandbox, &spec, nil, step.Sandbox); err != nil {
		return nil, nil, cleanup, err
	}
	proc, err = g.cfg.processes().StartHeadless(spec, onOutput)
	if err != nil {
		return nil, nil, cleanup, err
	}
	_ = proc.CloseInput()
	return proc, spec.Sandbox, cleanup, nil
}

// wait waits for a script's process to end (exited says how it went), its
// timeout or the run's end.
func (r scriptRunner) wait(ctx context.Context, step *workflow.Step, proc runner.Process, exited func() flow.Result, result func(runner.Result) flow.Result) flow.Result {
	var deadline time.Time
	if step.Timeout > 0 {
		deadline = time.Now().Add(time.Duration(step.Timeout))
	}
	r.g.host.flushEvents() // as a task does, once its process runs
	wake := runner.NewWake()
	defer wake.Close()
	if taskrun.WatchHere(ctx, proc, wake, deadline) {
		return exited()
	}
	var timeout <-chan time.Time
	if !deadline.IsZero() {
		t := time.NewTimer(time.Until(deadline))
		defer t.Stop()
		timeout = t.C
	}
	select {
	case <-proc.Done():
		return exited()
	case <-timeout:
		proc.Stop(r.g.cfg.Grace)
		fr := result(proc.Result())
		fr.Status, fr.Reason = flow.Failed, fmt.Sprintf("timed out after %s", time.Duration(step.Timeout))
		return fr
	case <-ctx.Done():
		proc.Stop(r.g.cfg.Grace)
		return stopped(ctx, result(proc.Result()))
	}
}

// scriptExit is how a script step went whose process exited by itself
// with res (fr: its output so far); a failure its sandbox (plan) caused
// says so.
func scriptExit(step *workflow.Step, plan *sandbox.Plan, fr flow.Result, res runner.Result) flow.Result {
	switch {
	case res.Success():
		fr.Status = flow.Done
		fr.ExitLoop = step.Script.OnSuccess == workflow.OnSuccessExitLoop
	case res.Err != nil:
		fr.Status, fr.Reason = flow.Failed, res.Err.Error()
	case res.Signal != "":
		fr.Status, fr.Reason = flow.Failed, "killed by signal "+res.Signal
	default:
		fr.Status, fr.Reason = flow.Failed, fmt.Sprintf("exit code %d", res.ExitCode)
	}
	if why := plan.Refused(fr.Output); fr.Status == flow.Failed && why != "" {
		fr.Reason = sandbox.RefusedReason + ": " + why + " (" + fr.Reason + ")"
	}
	return fr
}

// agentRunner runs an agent step: its spell rendered into a prompt, run
// through the same task machinery as a stage task (headless by default);
// its result is the AgentOutput block at the end of the agent's final text.
type agentRunner struct{ g *grimoire }

func (r agentRunner) Run(ctx context.Context, step *workflow.Step, at flow.Addr) flow.Result {
	g, host := r.g, r.g.host
	a := step.Agent
	g.mu.Lock()
	inputs, err := g.scope.RenderInputs(step.Label(), a.InputMap())
	var prompt string
	if err == nil {
		prompt, err = g.scope.AgentPrompt(step.Label(), g.spells, a.Spell, inputs)
	}
	g.mu.Unlock()
	if err != nil {
		g.stepStarted(step, at, nil)
		return flow.Result{Status: flow.Blocked, Reason: fmt.Sprintf("template: %s: %v", step.Pos, err)}
	}
	g.stepStarted(step, at, inputs)

	task := workflow.Task{
		ID:            logName(step, at),
		Name:          step.Label(),
		Adapter:       a.Adapter,
		ExecutionMode: a.ExecutionMode,
		Prompt:        prompt,
		ExtraArgs:     a.ExtraArgs,
		Cwd:           g.dir,
		Timeout:       step.Timeout,
		MCP:           workflow.MergeMCP(host.workflowMCP(), a.MCP),
		Sandbox:       step.Sandbox,
	}
	host.pendStepTask(at.Key(), task.ID)
	before := gitSnapshot(g.dir)
	out := &tailBuffer{limit: captureLimit}
	ok, why := runTask(stepMetered(ctx, step), host, task, prompt, func(string, string) {}, out)
	return r.result(ctx, task.ID, prompt, out, before, ok, why)
}

// result is how an agent step went whose task ended (ok, or not and why):
// its final text, the files it changed (since before) and the
// AgentOutput block that text ends with.
func (r agentRunner) result(ctx context.Context, taskID, prompt string, out *tailBuffer, before gitState, ok bool, why string) flow.Result {
	host := r.g.host
	parkedAs := host.parked()
	rec := host.taskRecord(taskID)
	logPath := ""
	if rec != nil {
		logPath = rec.LogPath
	}
	var text string
	if rec != nil && rec.Agent != nil && rec.Agent.HasResult {
		// The agent's own final message, read from its structured output
		// as it streamed.
		text = rec.Agent.Result
	} else {
		text = finalText(out.String())
	}
	res := flow.Result{Output: text, LogPath: logPath, ChangedFiles: before.changed()}
	if rec != nil && rec.ExitCode != nil {
		res.ExitCode = *rec.ExitCode
	}
	switch {
	case parkedAs != "":
		res.Status, res.Reason = parkedStep(parkedAs)
		return res
	case !ok && ctx.Err() != nil:
		return stopped(ctx, res)
	case !ok && rec != nil && rec.Reason == BudgetReason:
		res.Status, res.Reason = flow.Blocked, BlockedBudget.Because(why)
		return res
	case !ok:
		res.Status, res.Reason = flow.Failed, why
		if res.ExitCode == 0 {
			res.ExitCode = -1
		}
		return res
	}
	return refusedStep(agentOutput(res, text, prompt), rec)
}

// refusedStep is an agent step's result that failed, its task's sandbox
// having refused a write: its reason says so first, whatever the agent
// reported of it.
func refusedStep(res flow.Result, rec *state.TaskRecord) flow.Result {
	if res.Status == flow.Failed && rec != nil && rec.SandboxRefused != "" && !strings.Contains(res.Reason, sandbox.RefusedReason+": ") {
		res.Reason = sandbox.RefusedReason + ": " + rec.SandboxRefused + " (" + res.Reason + ")"
	}
	return res
}

// agentOutput reads the AgentOutput block of an agent step's final text
// into res: its outputs, and whether the agent said it succeeded.
func agentOutput(res flow.Result, text, prompt string) flow.Result {
	ao, err := render.ParseAgentOutputNotIn(text, prompt)
	if err != nil {
		res.Status, res.Reason = flow.Failed, err.Error()
		return res
	}
	res.Outputs, res.Summary = ao.Outputs, ao.Summary
	if !ao.Success {
		res.Status = flow.Failed
		res.Reason = "the agent reported success: false"
		if ao.Error != "" {
			res.Reason += ": " + ao.Error
		}
		return res
	}
	res.Status = flow.Done
	return res
}

// grimoireStageRunner runs a stage step of a grimoire: its tasks in
// parallel, each prompt rendered with the scope, each task keyed by the
// step's address so that a stage in a loop runs afresh every iteration.
type grimoireStageRunner struct{ g *grimoire }

func (r grimoireStageRunner) Run(ctx context.Context, step *workflow.Step, at flow.Addr) flow.Result {
	g, host := r.g, r.g.host
	st := *step
	st.Tasks = make([]workflow.Task, len(step.Tasks))
	prompts := map[string]string{}
	inputs := map[string]string{}
	suffix := "@" + strings.ReplaceAll(at.Key(), "/", "-")
	g.mu.Lock()
	for i, t := range step.Tasks {
		// A command line's bead text and outputs are data, quoted.
		p, _, err := g.scope.TaskPrompt(step.Label(), t.ID, t.Prompt, t.PromptIsCommand())
		if err != nil {
			g.mu.Unlock()
			g.stepStarted(step, at, nil)
			return flow.Result{Status: flow.Blocked, Reason: fmt.Sprintf("template: %s: %v", t.Pos, err)}
		}
		inputs[t.ID] = p
		t.ID += suffix
		if t.Cwd == "" {
			t.Cwd = g.dir
		}
		prompts[t.ID] = p
		st.Tasks[i] = t
	}
	g.mu.Unlock()
	g.stepStarted(step, at, inputs)
	ids := make([]string, len(st.Tasks))
	for i, t := range st.Tasks {
		ids[i] = t.ID
	}
	host.pendTasks(false, ids...)
	ctx, cancel := flow.WithTimeout(ctx, step)
	defer cancel()
	failedTask, reason := runStage(ctx, host, st, prompts)
	parkedAs := host.parked()
	parked := parkedAs != ""
	var lines []string
	for _, t := range st.Tasks {
		lines = append(lines, fmt.Sprintf("%s: %s", strings.TrimSuffix(t.ID, suffix), host.status(t.ID)))
	}
	res := flow.Result{Output: strings.Join(lines, "\n")}
	switch {
	case parked:
		res.Status, res.Reason = parkedStep(parkedAs)
	case ctx.Err() != nil:
		return stopped(ctx, res)
	case failedTask != "" && taskReason(host, failedTask) == BudgetReason:
		res.Status, res.Reason = flow.Blocked, fmt.Sprintf("%s: task %q: %s", BlockedBudget, strings.TrimSuffix(failedTask, suffix), reason)
	case failedTask != "":
		res.Status, res.Reason, res.ExitCode = flow.Failed, fmt.Sprintf("task %q: %s", strings.TrimSuffix(failedTask, suffix), reason), 1
	default:
		res.Status = flow.Done
	}
	return res
}

// finalText is an agent's final message, from its structured output when it
// has one (claude stream-json's result, codex --json's last agent_message),
// else all it printed.
func finalText(out string) string {
	if text, ok := structuredFinal(out); ok {
		return text
	}
	return out
}
