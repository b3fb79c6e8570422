package engine

import (
	"context"
	"fmt"
	"github.com/vibeteam/vibeteam/core/events"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vibeteam/vibeteam/adapters"
	"github.com/vibeteam/vibeteam/core/agentstream"
	"github.com/vibeteam/vibeteam/core/runner"
	"github.com/vibeteam/vibeteam/core/state"
	"github.com/vibeteam/vibeteam/core/workflow"
)

// taskRun is one attempt of one task.
type taskRun struct {
	host    taskHost
	cfg     taskSettings
	task    workflow.Task
	adapter adapters.Adapter
	mode    adapters.Mode
	proc    runner.Process
	log     *state.TaskLog
	rawLog  *os.File         // raw terminal bytes (PTY tasks only)
	term    *terminalState   // PTY tasks only
	replies chan reply       // a person's answers, applied by the wait loop
	failing func(why string) // names this task as the stage's failure at once
	kept    bool             // DONE with its process left running (keepAlive)
	// evidence says how its last turn was shown to have run (an idle DONE).
	evidence string

	// completed is closed when the task is declared DONE without waiting for
	// its process to exit (manual completion, or idle with an empty queue).
	completed     chan struct{}
	completeOnce  sync.Once
	completeCause string

	lastOutput chan struct{} // pinged on every output chunk (inactivity timeout)
	overBudget chan string   // what was spent, once a budget is: the agent is stopped
	// lastOutputAt is when the last chunk came (UnixNano), 0 before one.
	lastOutputAt atomic.Int64
	// wake ends the wait loop's watch of a headless process on its own
	// goroutine (watchHere) whenever anything but the process's output
	// comes: a reply, a completion, a budget spent.
	wake *runner.Wake

	stream *agentStream // a headless agent's structured output; nil for text
	// next, set when a person allowed a denial or answered a question at
	// the terminal, makes the task continue its agent's session at once.
	next *followUp
	// prior is what made this run a continuation (nil for a first run).
	prior *followUp
	ctx   context.Context
	// codexHome, for a codex-json run, is where its thread's rollout is;
	// startedAt is when the run started (what the rollout held before is
	// an earlier run's).
	codexHome string
	startedAt time.Time
}

// runTask runs one task to its end and reports whether it ended DONE, and if
// not, why; capture, when set, keeps what the agent wrote too: its stdout
// headless, its screen's text in a terminal (an agent step reads its
// result from it).
func runTask(ctx context.Context, host taskHost, t workflow.Task, prompt string, failing func(taskID, why string), capture *tailBuffer) (ok bool, why string) {
	var next *followUp
	for {
		ok, why, next = runTaskOnce(ctx, host, t, prompt, failing, capture, next)
		if next == nil {
			return ok, why
		}
	}
}

// runTaskOnce is one run of the task: its first, or the continuation of
// its agent's session with what a person allowed or answered (now). again
// is set when a person did so at the terminal: the task continues at once.
func runTaskOnce(ctx context.Context, host taskHost, t workflow.Task, prompt string, failing func(taskID, why string), capture *tailBuffer, now *followUp) (ok bool, why string, again *followUp) {
	cfg := host.settings()
	mode := adapters.Mode(t.ExecutionMode)
	switch {
	case cfg.ForceHeadless:
		mode = adapters.Headless
	case mode == "":
		mode = adapters.Interactive
	}
	fail := func(reason, msg string) (bool, string, *followUp) {
		now := time.Now()
		host.updateRecord(t.ID, false, func(rec *state.TaskRecord) {
			rec.Reason, rec.Error, rec.EndedAt = reason, msg, &now
		})
		host.setStatus(t.ID, state.TaskError, events.TaskStatusChange{Reason: reason, Error: msg})
		host.emit(t.ID, events.TaskEnd{Status: string(state.TaskError), Reason: reason, Error: msg})
		return false, msg, nil
	}

	prev := host.readRecord(t.ID)
	cont, followPrompt := continuation(mode, prev, now)
	if cont != nil {
		// The agent's own session goes on, told what it may do now or
		// what the person answered; its first prompt is in that session
		// already.
		prompt = followPrompt
	}
	servers, err := mcpServers(host, t, resolveDir(cfg.BaseDir, t.Cwd), cfg.Strict)
	if err != nil {
		return fail(startFailedReason, err.Error())
	}
	ad, err := cfg.Registry.New(t.Adapter, adapters.Options{Cwd: t.Cwd, Env: t.Env, Name: t.DisplayName(), AutoApprove: cfg.AutoApprove, Continue: cont, MCP: servers})
	if err != nil {
		return fail(startFailedReason, err.Error())
	}
	lc, err := ad.LaunchConfig(mode, prompt, t.ExtraArgs)
	if err != nil {
		return fail(startFailedReason, err.Error())
	}
	meter := meterOf(ctx)
	if what, over := meter.Exceeded(); over && mode == adapters.Headless && !lc.UsePTY && agentstream.New(lc.Output) != nil {
		// An agent that reports its spend does not start on a budget
		// already spent (a cost claude gave at the end of the last run).
		return fail(BudgetReason, refuseForBudget(host, t.ID, meter, what))
	}
	spec := runner.Spec{
		Command: lc.Command,
		Args:    lc.Args,
		Dir:     resolveDir(cfg.BaseDir, lc.Cwd),
		Env:     lc.Env,
		Cols:    lc.Cols,
		Rows:    lc.Rows,
		Tag:     cfg.SessionID + "/" + t.ID,
	}
	if err := sandboxedAgent(cfg.Sandbox, t.Adapter, &spec, cfg.authEnv(t.Adapter), t.Sandbox); err != nil {
		return fail(startFailedReason, err.Error())
	}
	if len(lc.Files) > 0 {
		cleanup, err := writeLaunchFiles(&spec, lc.Files)
		defer cleanup()
		if err != nil {
			return fail(startFailedReason, err.Error())
		}
	}

	logPath := ""
	var tlog *state.TaskLog
	if cfg.Manager != nil {
		logPath = cfg.Manager.TaskLogPath(cfg.SessionID, t.ID)
		open := state.OpenTaskLog
		if mode == adapters.Headless && !lc.UsePTY && agentstream.New(lc.Output) == nil && capture == nil {
			// A command's output, often a line or two: kept in the
			// session, a file only when there is more (making a file can
			// cost more than running the command). An agent step's text
			// is its result: always in a file.
			open = state.OpenShortTaskLog
		}
		tlog, err = open(logPath, cfg.TailLines)
		if err != nil {
			return fail(startFailedReason, err.Error())
		}
	}

	// The queue survives in the session: a resumed task continues with what
	// was not yet sent (nothing, once it has all been sent).
	var queue []string
	argv := append([]string{lc.Command}, lc.Args...)
	host.updateRecord(t.ID, false, func(rec *state.TaskRecord) {
		queue = rec.PendingInputs
		if rec.Attempts == 0 {
			queue = append([]string(nil), t.PendingInputs...)
		}
		now := time.Now()
		*rec = state.TaskRecord{
			Status:        rec.Status, // where a step run holds the record
			Adapter:       t.Adapter,
			Mode:          string(mode),
			Argv:          argv,
			StartedAt:     &now,
			LogPath:       logPath,
			PendingInputs: queue,
			Attempts:      rec.Attempts + 1,
			Allowed:       rec.Allowed, // for the rest of the run
		}
	})
	if prompt != "" {
		host.startHistory("prompt", t.ID, prompt)
	}

	tr := &taskRun{
		ctx: ctx, host: host, cfg: cfg, task: t, adapter: ad, mode: mode, log: tlog, prior: now,
		failing:    func(why string) { failing(t.ID, why) },
		completed:  make(chan struct{}),
		lastOutput: make(chan struct{}, 1),
		overBudget: make(chan string, 1),
		replies:    make(chan reply, 16),
		wake:       runner.NewWake(),
	}
	defer tr.wake.Close()
	if mode == adapters.Headless && !lc.UsePTY {
		if p := agentstream.New(lc.Output); p != nil {
			if b, ok := p.(interface{ SetBaseline(agentstream.Tokens) }); ok && cont != nil && prev.Agent != nil {
				// A continued thread reports its usage since its start
				// (codex): the earlier run's share is not counted twice.
				b.SetBaseline(prev.Agent.Tokens)
			}
			tr.stream = newAgentStream(host, t.ID, p)
			tr.meterStream(meter, lc.Output)
			if lc.Output == adapters.OutputCodexJSON {
				tr.codexHome, tr.startedAt = codexHome(spec.Env), time.Now()
			}
		}
	}
	onOutput := func(c runner.Chunk) {
		text := c.Clean
		if tr.stream != nil && c.Stream == "stdout" {
			// The log and the display get what the agent did, as text;
			// the JSON lines are events.
			text = []byte(tr.stream.write(c.Raw))
		}
		if tlog != nil && len(text) > 0 {
			_, _ = tlog.Write(text)
		}
		if capture != nil && c.Stream != "stderr" {
			capture.Write(c.Clean)
		}
		tr.lastOutputAt.Store(time.Now().UnixNano())
		select {
		case tr.lastOutput <- struct{}{}:
		default:
		}
		if len(text) > 0 {
			host.emit(t.ID, events.TaskOut{Stream: c.Stream, Text: string(text), Raw: string(c.Raw)})
		}
	}

	var proc runner.Process
	if mode == adapters.Headless && !lc.UsePTY {
		// Input is the queue, then EOF: with nothing queued, /dev/null.
		spec.NoInput = lc.Stdin == "" && len(queue) == 0
		// Both streams on one pipe, in the order they were written, when
		// nothing needs them apart (an agent's structured output and an
		// agent step's result are its stdout): a pipe less per start.
		spec.MergeOutput = tr.stream == nil && capture == nil
		spec.WatchHere = true // by the wait loop, until anything else comes
		proc, err = cfg.processes().StartHeadless(spec, onOutput)
	} else {
		if logPath != "" {
			raw := strings.TrimSuffix(logPath, ".log") + ".raw.log"
			if tr.rawLog, err = os.OpenFile(raw, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600); err != nil {
				tr.closeLogs()
				return fail(startFailedReason, err.Error())
			}
		}
		proc, err = tr.startTerminal(spec, prompt, onOutput)
	}
	if err != nil {
		tr.closeLogs()
		if st, serr := os.Stat(spec.Dir); serr != nil || !st.IsDir() {
			// Looked at only now: a stat before every start costs more
			// than an echo does.
			return fail(startFailedReason, fmt.Sprintf("cwd %s is not a directory", spec.Dir))
		}
		return fail(startFailedReason, err.Error())
	}
	tr.proc = proc

	start, _ := runner.StartTime(proc)
	host.updateRecord(t.ID, false, func(rec *state.TaskRecord) { rec.Pid, rec.PidStart = proc.Pid(), start })
	host.running(tr)
	defer host.ended(t.ID)
	host.setStatus(t.ID, state.TaskRunning, events.TaskStatusChange{})
	host.emit(t.ID, events.TaskStart{
		Adapter: t.Adapter, Name: t.DisplayName(), Mode: string(mode),
		Argv: argv, Pid: proc.Pid(), Cwd: spec.Dir,
	})
	defer warnUntested(host, cfg, t)()

	inputDone := make(chan struct{})
	if mode == adapters.Headless && !lc.UsePTY && !spec.NoInput {
		// Headless input is the queue; stdin is then closed because CLIs
		// such as `claude -p` wait for EOF. Written aside from the wait
		// loop: a queue larger than the pipe blocks until the agent reads.
		go func() {
			defer close(inputDone)
			if lc.Stdin != "" {
				// The prompt, on stdin (too long for an argument, or the
				// adapter's way): whole before anything queued.
				if err := proc.Send(lc.Stdin); err != nil {
					_ = proc.CloseInput()
					return
				}
			}
			for len(queue) > 0 {
				if err := tr.send(queue[0]+"\n", "queue"); err != nil {
					break
				}
				queue = tr.popQueue()
			}
			_ = proc.CloseInput()
		}()
	} else {
		close(inputDone)
	}

	inactivity := ad.InactivityTimeout()
	if t.InactivityTimeout > 0 {
		inactivity = time.Duration(t.InactivityTimeout)
	}
	ok, why = tr.wait(ctx, inactivity, inputDone)
	<-inputDone // the process is gone or stopped: the writer has failed or finished
	if !tr.kept {
		tr.closeLogs()
	}
	return ok, why, tr.next
}

// closeLogs closes the task's log files; a kept-alive task's logs stay open
// until its process is stopped.
func (tr *taskRun) closeLogs() {
	if tr.log != nil {
		_ = tr.log.Close()
	}
	if tr.rawLog != nil {
		_ = tr.rawLog.Close()
	}
}

// popQueue removes the first queued input and checkpoints the rest.
func (tr *taskRun) popQueue() []string {
	var rest []string
	tr.host.updateRecord(tr.task.ID, true, func(rec *state.TaskRecord) {
		if len(rec.PendingInputs) > 0 {
			rec.PendingInputs = rec.PendingInputs[1:]
		}
		rest = append([]string(nil), rec.PendingInputs...)
	})
	return rest
}

func (tr *taskRun) send(text, source string) error {
	if err := tr.proc.Send(text); err != nil {
		return err
	}
	tr.host.history("input", tr.task.ID, strings.TrimRight(text, "\r\n"))
	tr.host.emit(tr.task.ID, events.TaskIn{Text: text, Source: source})
	return nil
}

// unsent is how many queued inputs were never sent.
func (tr *taskRun) unsent() int {
	return len(tr.host.readRecord(tr.task.ID).PendingInputs)
}

// reply is a person's answer to a waiting task.
type reply struct {
	text   string
	enter  bool // type text, pause, then Enter
	attach bool // the person takes the terminal over: no automation meanwhile
	detach bool // and gives it back
	sentAt time.Time
}

// queueReply hands a person's answer to the wait loop.
func (tr *taskRun) queueReply(r reply) error {
	select {
	case tr.replies <- r:
		tr.wake.Fire()
		return nil
	default:
		return fmt.Errorf("task %q has too many unsent replies", tr.task.ID)
	}
}

// applyReply types a person's answer; the task is RUNNING again.
func (tr *taskRun) applyReply(r reply) {
	switch {
	case r.attach:
		if tr.term != nil {
			tr.term.attached = true
		}
	case r.detach:
		if tr.term != nil {
			tr.term.attached = false
			// Look at the screen as it is now.
			tr.term.lastSeen = ""
			if d, ok := tr.term.term.Detect(); ok {
				tr.onDetection(d)
			}
		}
		return
	case r.enter:
		r.sentAt = tr.typeLine(r.text, "user")
	default:
		if err := tr.send(r.text, "user"); err != nil {
			return
		}
	}
	if tr.term != nil && tr.term.waitingState != "" {
		// The answer counts for this appearance of the question: it is not
		// asked again while the TUI redraws past it.
		tr.term.answeredByPerson(r)
		tr.term.waitingState = ""
		tr.host.setStatus(tr.task.ID, state.TaskRunning, events.TaskStatusChange{Reason: "answered"})
	}
}

// complete declares the task DONE without waiting for its process.
func (tr *taskRun) complete() { tr.completeWith(completedByUser) }

func (tr *taskRun) completeWith(cause string) {
	tr.completeOnce.Do(func() {
		tr.completeCause = cause
		close(tr.completed)
		tr.wake.Fire()
	})
}

// wait blocks until the task ends: process exit, completion, timeout,
// inactivity, or cancellation.
func (tr *taskRun) wait(ctx context.Context, inactivity time.Duration, inputDone <-chan struct{}) (bool, string) {
	host, t := tr.host, tr.task
	start := time.Now()
	var timeoutAt time.Time
	if t.Timeout > 0 {
		timeoutAt = start.Add(time.Duration(t.Timeout))
	}
	// quietUntil is when the inactivity limit is reached, output aside.
	quietUntil := func() time.Time {
		last := start
		if at := tr.lastOutputAt.Load(); at > last.UnixNano() {
			last = time.Unix(0, at)
		}
		return last.Add(inactivity)
	}

	finish := func(st state.TaskStatus, reason string, res *runner.Result, msg string) (bool, string) {
		now := time.Now()
		if tr.log != nil && !tr.kept {
			// Its process is gone: the output is whole, and the record
			// says whether it has a file.
			_ = tr.log.Close()
		}
		host.updateRecord(t.ID, false, func(rec *state.TaskRecord) {
			rec.EndedAt = &now
			rec.Reason = reason
			rec.Error = msg
			if res != nil && res.Err == nil && res.Signal == "" {
				code := res.ExitCode
				rec.ExitCode = &code
			}
			if tr.log != nil {
				rec.OutputTail = tr.log.Tail()
				rec.LogPath = tr.log.Path()
			}
		})
		ev := events.TaskStatusChange{Reason: reason, Error: msg}
		if st == state.TaskDone && reason == "idle" {
			// A DONE that rested on the fallback rule says so.
			ev.Evidence = tr.evidence
		}
		if res != nil {
			code := res.ExitCode
			ev.ExitCode, ev.Signal = &code, res.Signal
		}
		host.setStatus(t.ID, st, ev)
		host.emit(t.ID, events.TaskEnd{Status: string(st), Reason: ev.Reason, Error: ev.Error, Evidence: ev.Evidence, ExitCode: ev.ExitCode, Signal: ev.Signal})
		return st == state.TaskDone, msg
	}

	exited := func() (bool, string) {
		<-inputDone // a headless writer ends once the process is gone
		return tr.judgeExit(finish)
	}

	// The process runs: what the run had to say until now goes out, off
	// the path from its start to its end.
	host.flushEvents()
	if tr.term == nil {
		// Its end, most often the first thing to come: watched here, and
		// the loop below has the rest once anything else comes.
		deadline := timeoutAt
		if inactivity > 0 && (deadline.IsZero() || quietUntil().Before(deadline)) {
			deadline = quietUntil()
		}
		if watchHere(ctx, tr.proc, tr.wake, deadline) {
			return exited()
		}
	}
	var timeout <-chan time.Time
	if t.Timeout > 0 {
		tm := time.NewTimer(time.Until(timeoutAt))
		defer tm.Stop()
		timeout = tm.C
	}
	var idleTimer *time.Timer
	var idle <-chan time.Time
	if inactivity > 0 {
		idleTimer = time.NewTimer(time.Until(quietUntil()))
		defer idleTimer.Stop()
		idle = idleTimer.C
	}
	var detections <-chan runner.Detection
	var recheck <-chan time.Time
	if tr.term != nil && tr.term.automate {
		detections = tr.term.detections
		recheck = tr.term.recheck.C
	}
	for {
		select {
		case d := <-detections:
			tr.onDetection(d)
		case <-recheck:
			tr.onRecheck()
		case r := <-tr.replies:
			tr.applyReply(r)
		case <-tr.proc.Done():
			return exited()
		case <-tr.completed:
			if tr.task.KeepAlive && tr.completeCause != completedByUser {
				tr.kept = true
				host.keep(tr)
				host.emit(t.ID, events.KeepAlive{Pid: tr.proc.Pid()})
				return finish(state.TaskDone, "kept_alive", nil, "")
			}
			tr.proc.Stop(tr.cfg.Grace)
			return finish(state.TaskDone, tr.completeCause, nil, "")
		case <-timeout:
			msg := fmt.Sprintf("timed out after %s", time.Duration(t.Timeout))
			tr.failing(msg)
			tr.proc.Stop(tr.cfg.Grace)
			res := tr.proc.Result()
			return finish(state.TaskError, timeoutReason, &res, msg)
		case <-idle:
			if tr.term != nil && (tr.term.waitingState != "" || tr.term.attached) {
				// Silence while a person is asked, or has the terminal, is
				// not inactivity.
				idleTimer.Reset(inactivity)
				continue
			}
			msg := fmt.Sprintf("no output for %s", inactivity)
			tr.failing(msg)
			tr.proc.Stop(tr.cfg.Grace)
			res := tr.proc.Result()
			return finish(state.TaskError, inactivityReason, &res, msg)
		case <-tr.lastOutput:
			if idleTimer != nil {
				idleTimer.Reset(inactivity)
			}
		case what := <-tr.overBudget:
			if tr.endedOnItsOwn() {
				continue // judged as it ended; the next agent does not start
			}
			return tr.stopForBudget(what, finish)
		case <-ctx.Done():
			select {
			case <-tr.proc.Done():
				// It had ended on its own just before: that is its result.
				if res := tr.proc.Result(); res.Success() {
					return finish(state.TaskDone, exitReason, &res, "")
				}
			default:
			}
			tr.proc.Stop(tr.cfg.Grace)
			// Stopped, not failed, and never DONE even if it exits 0 on
			// SIGTERM: it re-runs on resume.
			res := tr.proc.Result()
			parkedAs := host.parked()
			parked := parkedAs != ""
			failed := parkedAs == state.StatusFailed // --on-interaction=fail
			if failed && tr.term != nil && tr.term.waitingState != "" {
				// The session fails for want of a person: the task is
				// failed too, not left waiting for one.
				return finish(state.TaskError, "interaction_failed", &res, "needed a person ("+tr.term.waitingState+") with --on-interaction=fail")
			}
			if parked && tr.term != nil && tr.term.waitingState != "" {
				return finish(state.TaskWaitingForUser, interactionParked, &res, "parked while waiting for a person ("+tr.term.waitingState+")")
			}
			return finish(state.TaskPending, stoppedReason, &res, "stopped before it finished")
		}
	}
}

// judgeExit ends a task whose process exited by itself, as its exit,
// queue and (for an agent) final report say.
func (tr *taskRun) judgeExit(finish func(st state.TaskStatus, reason string, res *runner.Result, msg string) (bool, string)) (bool, string) {
	res := tr.proc.Result()
	unsent := tr.unsent()
	if tr.stream != nil {
		if st, reason, msg, judged := tr.judgeAgent(res); judged {
			return finish(st, reason, &res, msg)
		}
	}
	switch {
	case unsent > 0 && (res.Success() || res.Err == nil && res.Signal == ""):
		// An exit, even 0, that leaves inputs unsent is not what the
		// workflow asked for.
		msg := fmt.Sprintf("exited (code %d) with %d queued input(s) unsent", res.ExitCode, unsent)
		return finish(state.TaskError, unsentReason, &res, msg)
	case res.Success():
		return finish(state.TaskDone, exitReason, &res, "")
	case res.Err != nil:
		return finish(state.TaskError, exitReason, &res, res.Err.Error())
	case res.Signal != "":
		return finish(state.TaskError, signalReason, &res, "killed by signal "+res.Signal)
	default:
		return finish(state.TaskError, exitReason, &res, fmt.Sprintf("exit code %d", res.ExitCode))
	}
}

var (
	warnedMu sync.Mutex
	warned   = map[string]bool{} // session id + adapter: untested version reported
)

// warnUntested reports, once per session and adapter, that the task's CLI
// is not the version its adapter was tested with (newer or older), as a
// warning the run prints on stderr. The version is asked once per process,
// aside (gemini takes 2 s to print it), while the task runs; the function
// returned waits for the answer when the task ends first, so the warning is
// never lost nor emitted after the task.
func warnUntested(host taskHost, cfg taskSettings, t workflow.Task) (wait func()) {
	if cfg.Registry == nil {
		return func() {}
	}
	if vc := cfg.Registry.VersionCheck(t.Adapter); vc == nil || vc.Tested == "" {
		return func() {}
	}
	key := cfg.SessionID + "\x00" + t.Adapter
	warnedMu.Lock()
	done := warned[key]
	warned[key] = true
	warnedMu.Unlock()
	if done {
		return func() {}
	}
	probed := make(chan struct{})
	go func() {
		defer close(probed)
		v := cfg.Registry.ProbeVersion(t.Adapter, 5*time.Second)
		if !v.Untested() {
			return
		}
		host.emit(t.ID, events.Warn{
			Warning: fmt.Sprintf("%s %s: %s", t.Adapter, v.String(), v.Risk()),
			Adapter: t.Adapter, Version: v.Line, Tested: v.Tested,
		})
	}()
	return func() { <-probed }
}
