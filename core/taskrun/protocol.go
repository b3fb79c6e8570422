package taskrun

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/vibeteam/vibeteam/adapters"
	"github.com/vibeteam/vibeteam/core/acp"
	"github.com/vibeteam/vibeteam/core/agentstream"
	"github.com/vibeteam/vibeteam/core/events"
	"github.com/vibeteam/vibeteam/core/runner"
	"github.com/vibeteam/vibeteam/core/state"
	"github.com/vibeteam/vibeteam/core/vocab"
)

// Reasons of an ACP turn's end, besides the protocol's stop reasons.
const (
	endTurnReason = acp.StopEndTurn
	// acpErrorReason: the agent answered session/prompt (or initialize,
	// session/new, session/load) with a JSON-RPC error, or went away.
	acpErrorReason = "acp_error"
)

// acpCancelWait bounds the wait for a cancelled turn's answer before the
// agent is stopped (Ctrl-C, cancel).
const acpCancelWait = 5 * time.Second

// acpContinue is what an agent whose turn was interrupted (Ctrl-C, a kill
// of vibeteam) is told when its session is loaded again.
const acpContinue = "Your last turn was interrupted. Please continue with the task where you left off."

// unloadableNote opens the prompt of a fresh session started because the
// agent could not load the one the task had.
const unloadableNote = "Note: an earlier session of this task could not be continued, so this is a fresh session. " +
	"Some of the work may already be done in this working tree: check before redoing it.\n\n"

// protocol is the ACP driver: the agent runs with stdio pipes, and
// core/acp speaks the protocol over them (see driver). Its session/update
// notifications become the agent events a headless stream's lines do.
type protocol struct {
	a      *Attempt
	lc     adapters.LaunchConfig
	client *acp.Client
	out    func(runner.Chunk)
	stdout *io.PipeWriter // the agent's stdout, to the client

	mu     sync.Mutex
	result acp.Outcome // the turn's end, once turned
	turned bool
	done   chan struct{} // closed once the session's work is over (feed's end)
	// turnEnded has a value once the turn has ended (result set): the
	// wait loop judges a turn that ended done without waiting for the
	// agent's exit.
	turnEnded chan struct{}
	asking    int // permission requests being asked of a person
}

func (p *protocol) reportsSpend() bool      { return true }
func (p *protocol) shortLog(Capture) bool   { return false }
func (p *protocol) watchFirst() bool        { return false }
func (p *protocol) signal() <-chan struct{} { return p.turnEnded }
func (p *protocol) closeLogs()              {}

// onSignal: a turn that ended done is judged at once, and the task is
// DONE while its agent, its stdin closed, exits: the turn is the evidence,
// not the exit (see judge), and the attempt still waits for the process
// before it returns, so nothing starts after it sooner. Any other end
// (failed, stopped, parked, limited) is judged once the process is gone.
func (p *protocol) onSignal() (outcome, bool) {
	p.mu.Lock()
	out, turned := p.result, p.turned
	p.mu.Unlock()
	if !turned || out.Status != acp.Done {
		return outcome{}, false
	}
	return p.judgeReport(true, nil)
}

// busy: while a person is asked, the agent waits silently.
func (p *protocol) busy() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.asking > 0
}

// deliver: a person's input goes nowhere; the protocol has no stdin of
// the person's (questions are permission requests, answered by Decide).
func (p *protocol) deliver(in input) error {
	if in.attach || in.detach {
		return nil
	}
	return fmt.Errorf("an acp task takes no typed input")
}

// acpParser gives the agent stream the client's summary, with the turn's
// end: a limit, an error.
type acpParser struct{ p *protocol }

func (acpParser) Feed([]byte) []agentstream.Event { return nil }

func (ap acpParser) Summary() agentstream.Summary {
	sum := ap.p.client.Summary()
	ap.p.mu.Lock()
	out, turned := ap.p.result, ap.p.turned
	ap.p.mu.Unlock()
	if turned && out.Status == acp.Limited {
		sum.Limit, sum.IsError, sum.Error = out.Limit, true, out.Error
	}
	return sum
}

func (p *protocol) start(l *launch, out func(runner.Chunk)) (runner.Process, error) {
	a := p.a
	p.out, p.done, p.turnEnded = out, make(chan struct{}), make(chan struct{}, 1)
	stdoutR, stdoutW := io.Pipe()
	p.stdout = stdoutW
	p.client = acp.Start(procWriter{p}, stdoutR, acp.Options{
		Agent:   fmt.Sprintf("%s (%s)", a.task.Adapter, strings.Join(l.argv, " ")),
		OnEvent: p.event,
		Decide:  p.decider(l).Decide,
	})
	a.stream = newAgentStream(a.host, a.task.ID, acpParser{p})
	a.meterStream(MeterOf(a.ctx), outputACP)
	spec := l.spec
	spec.NoInput, spec.MergeOutput, spec.WatchHere = false, false, false
	proc, err := a.cfg.processes().StartHeadless(spec, func(c runner.Chunk) {
		if c.Stream == "stdout" {
			// The protocol's messages, to the client: a pipe without a
			// buffer, so a flood waits for the client instead of growing.
			_, _ = stdoutW.Write(c.Raw)
			return
		}
		out(c)
	})
	if err != nil {
		_ = stdoutW.Close()
		_ = p.client.Wait()
		close(p.done)
		return nil, err
	}
	return proc, nil
}

// outputACP is the stream format the meter is told: the usage comes with
// the turn's result.
const outputACP adapters.Output = "acp"

// procWriter writes the client's messages to the agent's stdin.
type procWriter struct{ p *protocol }

func (w procWriter) Write(b []byte) (int, error) {
	if err := w.p.a.proc.Send(string(b)); err != nil {
		return 0, err
	}
	return len(b), nil
}

// event takes one of the client's events: emitted, metered, and written
// to the log as text, as a headless stream's.
func (p *protocol) event(ev agentstream.Event) {
	a := p.a
	if ev.Kind == agentstream.Init && ev.SessionID != "" {
		// Journaled at once: a vibeteam killed after this continues
		// this session (session/load), never a fresh one.
		sum := p.client.Summary()
		a.host.UpdateRecord(a.task.ID, true, func(rec *state.TaskRecord) { rec.Agent = recordSummary(sum) })
	}
	if text := a.stream.report([]agentstream.Event{ev}); text != "" {
		p.out(runner.Chunk{Stream: "agent", Raw: []byte(text), Clean: []byte(text)})
	}
}

// feed runs the session: initialize, session/new or session/load, the
// session mode, the prompt; then the agent's stdin is closed, and it is
// stopped if it does not exit.
func (p *protocol) feed(l *launch) <-chan struct{} {
	proc := p.a.proc
	go func() {
		defer close(p.done)
		// The agent's stdout ends with it (its output all delivered by
		// then): the client then ends, and so does a turn it was in.
		ended := make(chan struct{})
		go func() {
			defer close(ended)
			<-proc.Done()
			_ = p.stdout.Close()
		}()
		out := p.session(l)
		p.mu.Lock()
		p.result, p.turned = out, true
		p.mu.Unlock()
		p.turnEnded <- struct{}{} // once: the buffer holds it
		_ = proc.CloseInput()
		select {
		case <-ended:
		case <-time.After(acpCancelWait):
			proc.Stop(p.a.cfg.Grace)
			<-ended
		}
		_ = p.client.Wait()
	}()
	return p.done
}

// session is the session's work, up to the turn's end.
func (p *protocol) session(l *launch) acp.Outcome {
	a, c, spec := p.a, p.client, l.lc.ACP
	fail := func(err error) acp.Outcome {
		return acp.Outcome{Status: acp.Failed, Reason: acpErrorReason, Error: err.Error()}
	}
	if _, err := c.Initialize(a.ctx); err != nil {
		return fail(err)
	}
	servers := make([]acp.MCPServer, len(spec.MCP))
	for i, s := range spec.MCP {
		servers[i] = acp.MCPServer{Name: s.Name, Command: s.Command, Args: s.Args, Env: s.Env}
	}
	cwd, prompt := l.spec.Dir, l.prompt
	var sess acp.Session
	var err error
	if spec.Load != "" {
		sess, err = c.LoadSession(a.ctx, spec.Load, cwd, servers)
		var refused *acp.RPCError
		if errors.As(err, &refused) && l.first != "" {
			// The agent has no such session (gemini keeps none whose
			// only turn was cancelled at its permission question):
			// rather than fail, a fresh one starts with the task's
			// prompt, told so, and the person is warned.
			a.host.Emit(a.task.ID, events.Warn{Adapter: a.task.Adapter, Warning: fmt.Sprintf("task %s: the agent could not load its session %s (%s): starting a fresh session with the task's prompt", a.task.ID, spec.Load, refused.Error())})
			sess, err = c.NewSession(a.ctx, cwd, servers)
			prompt = unloadableNote + l.first
		}
	} else {
		sess, err = c.NewSession(a.ctx, cwd, servers)
	}
	if err != nil {
		return fail(err)
	}
	if m := spec.SessionMode; m != "" && sess.Modes != nil && sess.Modes.CurrentModeID != m {
		if !sess.Modes.Has(m) {
			a.host.Emit(a.task.ID, events.Warn{Adapter: a.task.Adapter, Warning: fmt.Sprintf("the agent has no session mode %q: it stays in %q", m, sess.Modes.CurrentModeID)})
		} else if err := c.SetMode(a.ctx, m); err != nil {
			return fail(err)
		}
	}
	// Not a.ctx: a Ctrl-C cancels the turn through cancel (session/cancel,
	// then a bounded wait for its answer), from the wait loop.
	res, err := c.Prompt(context.Background(), prompt)
	out := acp.Judge(res, err, c.Parked(), time.Now())
	if out.Status == acp.Failed && err != nil {
		out.Reason = acpErrorReason
	}
	return out
}

// cancelTurn is the wait loop's, before it stops the agent on a Ctrl-C:
// session/cancel, every pending permission answered cancelled, and a
// bounded wait for the turn's answer.
func (p *protocol) cancelTurn() {
	_ = p.client.Cancel()
	select {
	case <-p.done:
	case <-p.a.proc.Done():
	case <-time.After(acpCancelWait):
	}
}

// decider answers permission requests: the adapter's policy with
// --auto-approve, the tools a person allowed, else a person at this
// terminal, else parked (the turn is cancelled; the task waits for
// `resume --allow TOOL`, which loads the same session).
func (p *protocol) decider(l *launch) acp.Policy {
	a := p.a
	pol := acp.Policy{AutoApprove: l.lc.ACP.AutoApprove, Allowed: slices.Clone(l.lc.ACP.Allow)}
	if a.cfg.Interaction == InteractionAsk && a.cfg.Permission != nil {
		pol.Ask = p.ask
	}
	return pol
}

// ask asks the person at the terminal about one permission request: the
// tool, its input, and the agent's options.
func (p *protocol) ask(ctx context.Context, perm acp.Permission) acp.Decision {
	a, t := p.a, p.a.task
	if a.host.AllowedForRun([]string{perm.Tool}) {
		return perm.Allow()
	}
	p.mu.Lock()
	p.asking++
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		p.asking--
		p.mu.Unlock()
	}()
	denial := agentstream.Denial{Tool: perm.Tool, ToolID: perm.ToolID, Input: perm.Input, Message: acpAsks(perm)}
	switch a.cfg.Permission(ctx, PermissionRequest{TaskID: t.ID, Name: t.DisplayName(), Adapter: t.Adapter, Denials: []agentstream.Denial{denial}, Tools: []string{perm.Tool}}) {
	case PermissionOnce:
		return perm.Allow()
	case PermissionAll:
		a.host.AllowForRun([]string{perm.Tool})
		return perm.Allow()
	case PermissionDeny:
		return perm.Reject()
	}
	return acp.Decision{Park: true}
}

// acpAsks says a permission request as a person reads it.
func acpAsks(perm acp.Permission) string {
	names := make([]string, len(perm.Options))
	for i, o := range perm.Options {
		names[i] = o.Name
	}
	return fmt.Sprintf("%s (options: %s)", perm.Title, strings.Join(names, " / "))
}

// judge: the turn says how the run went, not the agent's exit (its stdin
// was closed, or it was stopped, once the turn ended).
func (p *protocol) judge(res runner.Result) (outcome, bool) {
	p.mu.Lock()
	out, turned := p.result, p.turned
	p.mu.Unlock()
	if !turned {
		return outcome{}, false
	}
	switch out.Status {
	case acp.Parked:
		return p.park(res), true
	case acp.Done, acp.Limited:
		if o, judged := p.judgeReport(out.Status == acp.Done, &res); judged {
			return o, true
		}
	case acp.Stopped:
		p.record()
		return stoppedWith(res), true
	}
	p.record()
	msg := out.Error
	if out.Reason == acpErrorReason && !res.Success() && res.Err == nil {
		msg += fmt.Sprintf(" (the agent exited: %s)", exitText(res))
	}
	return failedWith(vocab.Reason(out.Reason), msg, res), true
}

// judgeReport judges a turn that ended done (or limited) as a headless
// agent's report: its summary recorded, a final message that asks a
// question asked, a limit waited out or parked. res is the process's end;
// nil while it is still exiting (none is recorded then).
func (p *protocol) judgeReport(done bool, res *runner.Result) (outcome, bool) {
	if st, reason, msg, judged := p.a.judgeAgent(runner.Result{}); judged {
		return outcome{status: st, reason: reason, msg: msg, res: res}, true
	}
	if done {
		return outcome{status: state.TaskDone, reason: endTurnReason, res: res}, true
	}
	return outcome{}, false
}

// park ends a turn cancelled for a permission no one here could answer:
// the task waits for `resume --allow TOOL`, which loads the session and
// tells the agent to go on (or, with --on-interaction=fail, fails).
func (p *protocol) park(res runner.Result) outcome {
	a, t := p.a, p.a.task
	p.record()
	sum := p.client.Summary()
	what := denialText(sum.Denials)
	if a.cfg.Interaction == InteractionFail {
		return failedWith(DeniedReason, "the agent asks to run "+what+" (--on-interaction=fail)", res)
	}
	for _, d := range sum.Denials {
		a.host.Emit(t.ID, events.Denial{Tool: d.Tool, ToolID: d.ToolID, Input: rawOrNull(d.Input), Message: d.Message})
	}
	a.host.UpdateRecord(t.ID, false, func(rec *state.TaskRecord) { rec.Excerpt = "asks: " + what })
	tools := sum.DeniedTools()
	a.host.Park(state.StatusWaiting, t.ID, fmt.Sprintf("task %s: the agent asks to run %s; allow it with: vibeteam resume ID --allow %s", t.ID, what, strings.Join(tools, " --allow ")))
	return waitingWith(DeniedReason, "the agent asks to run "+what, res)
}

// record puts the run's summary (its session id first) in the record.
func (p *protocol) record() {
	sum, text := p.a.stream.finish()
	if text != "" && p.a.log != nil {
		_, _ = p.a.log.Write([]byte(text))
	}
	p.a.host.UpdateRecord(p.a.task.ID, false, func(rec *state.TaskRecord) { rec.Agent = recordSummary(sum) })
}

// interrupted: stopped, with the session recorded, for resume to load it.
func (p *protocol) interrupted(state.Status, runner.Result) (outcome, bool) {
	p.record()
	return outcome{}, false
}

func exitText(res runner.Result) string {
	if res.Signal != "" {
		return "signal " + res.Signal
	}
	return fmt.Sprintf("code %d", res.ExitCode)
}

// acpContinuation is the agent session an acp task continues: as a
// headless agent's after a denial, a question or a limit; and after any
// other end that was not DONE (a Ctrl-C, a kill of vibeteam), the same
// session, told to go on, never a fresh one that redoes the work.
func acpContinuation(prev state.TaskRecord, now *followUp) (*adapters.Continuation, string) {
	if prev.Agent == nil || prev.Agent.SessionID == "" {
		return nil, ""
	}
	switch prev.Reason {
	case DeniedReason, QuestionReason, LimitReason:
		return continuation(adapters.Headless, prev, now)
	}
	return &adapters.Continuation{Session: prev.Agent.SessionID, Allow: slices.Clone(prev.Allowed)}, acpContinue
}
