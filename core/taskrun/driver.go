package taskrun

import (
	"time"

	"github.com/vibeteam/vibeteam/adapters"
	"github.com/vibeteam/vibeteam/core/agentstream"
	"github.com/vibeteam/vibeteam/core/runner"
	"github.com/vibeteam/vibeteam/core/state"
)

// driver is how a task's process is run, one per way of talking to it:
//
//	pipe      headless: argv, stdin fed then closed, the output read as text
//	          or as an agent's structured stream (agentstream)
//	terminal  a PTY: the rendered screen, its states, the auto-policy
//	protocol  (to come) ACP: JSON-RPC 2.0 over the process's stdio
//
// The attempt (Attempt) does everything else, the same for every driver: it
// prepares the launch, records the start, supervises the process
// (timeout, inactivity, budgets, completion, cancellation, parking), judges
// its end and records it. A driver only starts, feeds and talks to its
// process, in this order:
//
//  1. reportsSpend and shortLog are asked before the start, once the launch
//     config is known; start then starts the process. Every chunk of output
//     goes to out, which logs it, captures it, emits it and keeps the task
//     from looking inactive. out runs on whichever goroutine watches the
//     process (the waiting one itself while watchFirst holds): it must not
//     block. A driver that reads an agent's report sets a.stream
//     (newAgentStream) before its first output: the run then meters the
//     spend, stops the agent when a budget is spent, and judges its end by
//     the report (denials, a question, a usage limit, an error).
//  2. feed writes the process's first input aside from the wait loop and
//     closes the channel it returns once it has stopped writing.
//  3. The run waits. With watchFirst it first watches the process on its
//     own goroutine (runner.WatchHere: no goroutine handoff on the way
//     from a process's end to the next start) until anything else comes.
//     Then it selects on the process, its timers and signal(): whatever the
//     driver's own goroutines or callbacks have for it (a screen changed, a
//     recheck is due, a protocol message came) is handled by onSignal, on
//     the wait loop's goroutine, where the run's state may be touched; it
//     ends the attempt when it returns an outcome (a protocol's turn that
//     ended done: judged at once, the process left to exit).
//  4. deliver takes a person's input (Send, SendLine, attach) from any
//     goroutine. busy reports whether silence now is not inactivity (a
//     person is being asked, or has the terminal).
//  5. At the end: judge says how a process that exited by itself went,
//     when the driver knows (a protocol's turn); false leaves it to the
//     attempt (the exit status, the queue, the agent's report in
//     a.stream). interrupted turns a stop (Ctrl-C, or the session parked)
//     into the outcome that says it, when the driver knows better than
//     "stopped" (it was waiting for a person). closeLogs closes what the
//     driver opened.
//
// A protocol (ACP) driver fits so (core/acp is the client). start
// launches the agent with stdio pipes through a.cfg.processes() (fakes in
// tests) and serves acp.Start over them; it sets a.stream to
// newAgentStream with a parser whose Summary is the client's (session id,
// result, usage, limit): the run then meters the spend, stops the agent
// on a budget, and judges its end as a headless agent's. The client's
// OnEvent hands its agentstream.Events to a.stream.report, which emits the
// same agent.message, tool call and usage events as a headless stream,
// meters them, and returns the text for the task's log (write it where
// a.output writes). feed runs the session: initialize, session/new (or
// session/load, for a continuation: l.cont) and session/prompt with
// l.prompt, then closes the agent's stdin so its process ends; a
// continuation's follow-up is a.next, as for a headless agent. A
// session/request_permission is answered as the other modes ask: with
// InteractionAsk, a.cfg.Permission (a person at this terminal); with park
// or fail, a.host.Park (see terminal.askPerson and judgeAgent for the
// words). Those calls are safe from the client's goroutines; what touches
// the attempt's own state (busy, a person's input) is handed to onSignal
// through signal(). busy is true while a person is asked; interrupted says
// "waiting for a person" when the session parked on a permission. The
// turn's end (acp.Judge: done, failed with a reason, stopped, limited,
// parked) is what judge returns once the process is gone: an outcome
// (see end.go's constructors; a limit goes through a.judgeLimit, which
// waits it out or parks the session as limited).
type driver interface {
	reportsSpend() bool
	shortLog(capture Capture) bool
	start(l *launch, out func(runner.Chunk)) (runner.Process, error)
	feed(l *launch) <-chan struct{}
	watchFirst() bool
	signal() <-chan struct{}
	onSignal() (outcome, bool)
	deliver(in input) error
	busy() bool
	judge(res runner.Result) (outcome, bool)
	interrupted(parkedAs state.Status, res runner.Result) (outcome, bool)
	closeLogs()
}

// newDriver is the driver of a task run in mode with launch config lc.
// The protocol driver is chosen here too, when lc asks for it.
func newDriver(a *Attempt, mode adapters.Mode, lc adapters.LaunchConfig) driver {
	if mode == adapters.ACP && lc.ACP != nil {
		return &protocol{a: a, lc: lc}
	}
	if mode == adapters.Headless && !lc.UsePTY {
		return &pipe{a: a, lc: lc, parser: agentstream.New(lc.Output)}
	}
	return &terminal{a: a, automate: mode == adapters.Interactive}
}

// input is a person's input to a running task.
type input struct {
	text   string
	enter  bool // type text, pause, then Enter
	attach bool // the person takes the terminal over: no automation meanwhile
	detach bool // and gives it back
	sentAt time.Time
}
