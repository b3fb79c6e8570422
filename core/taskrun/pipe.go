package taskrun

import (
	"time"

	"github.com/vibeteam/vibeteam/adapters"
	"github.com/vibeteam/vibeteam/core/agentstream"
	"github.com/vibeteam/vibeteam/core/runner"
	"github.com/vibeteam/vibeteam/core/state"
)

// pipe is the headless driver: the process gets its prompt in argv (or on
// stdin), then the queued inputs, then EOF; its output is read as text, or
// as an agent's structured stream when its adapter names the format.
type pipe struct {
	a       *Attempt
	lc      adapters.LaunchConfig
	parser  agentstream.Parser // nil: the output is text
	noInput bool               // stdin is /dev/null: nothing to write
}

func (p *pipe) reportsSpend() bool { return p.parser != nil }

// shortLog: a command's output, often a line or two. An agent step's text
// is its result, and an agent's report is long: always in a file.
func (p *pipe) shortLog(capture Capture) bool { return p.parser == nil && capture == nil }

func (p *pipe) start(l *launch, out func(runner.Chunk)) (runner.Process, error) {
	a := p.a
	if p.parser != nil {
		if b, ok := p.parser.(interface{ SetBaseline(agentstream.Tokens) }); ok && l.cont != nil && l.prev.Agent != nil {
			// A continued thread reports its usage since its start
			// (codex): the earlier run's share is not counted twice.
			b.SetBaseline(l.prev.Agent.Tokens)
		}
		a.stream = newAgentStream(a.host, a.task.ID, p.parser)
		a.meterStream(MeterOf(a.ctx), p.lc.Output)
		if p.lc.Output == adapters.OutputCodexJSON {
			a.codexHome, a.startedAt = codexHome(l.spec.Env), time.Now()
		}
	}
	spec := l.spec
	// Input is the queue, then EOF: with nothing queued, /dev/null.
	p.noInput = p.lc.Stdin == "" && len(l.queue) == 0
	spec.NoInput = p.noInput
	// Both streams on one pipe, in the order they were written, when
	// nothing needs them apart (an agent's structured output and an agent
	// step's result are its stdout): a pipe less per start.
	spec.MergeOutput = a.stream == nil && a.capture == nil
	spec.WatchHere = true // by the wait loop, until anything else comes
	return a.cfg.processes().StartHeadless(spec, out)
}

// feed writes the prompt (when the adapter gives it on stdin) and the
// queue, then closes stdin: CLIs such as `claude -p` wait for EOF. It
// writes aside from the wait loop: a queue larger than the pipe blocks
// until the agent reads.
func (p *pipe) feed(l *launch) <-chan struct{} {
	fed := make(chan struct{})
	if p.noInput {
		close(fed)
		return fed
	}
	a, queue := p.a, l.queue
	go func() {
		defer close(fed)
		if p.lc.Stdin != "" {
			// The prompt, on stdin (too long for an argument, or the
			// adapter's way): whole before anything queued.
			if err := a.proc.Send(p.lc.Stdin); err != nil {
				_ = a.proc.CloseInput()
				return
			}
		}
		for len(queue) > 0 {
			if err := a.send(queue[0]+"\n", "queue"); err != nil {
				break
			}
			queue = a.popQueue()
		}
		_ = a.proc.CloseInput()
	}()
	return fed
}

func (p *pipe) watchFirst() bool { return true }

// signal: nothing of the pipe's own comes to the wait loop.
func (p *pipe) signal() <-chan struct{}   { return nil }
func (p *pipe) onSignal() (outcome, bool) { return outcome{}, false }

// deliver writes a person's input to stdin at once; there is no terminal
// to take over.
func (p *pipe) deliver(in input) error {
	switch {
	case in.attach || in.detach:
		return nil
	case in.enter:
		return p.a.send(in.text+"\n", "user")
	}
	return p.a.send(in.text, "user")
}

func (p *pipe) busy() bool { return false }

// judge: the exit and the agent's report say how it went.
func (p *pipe) judge(runner.Result) (outcome, bool) { return outcome{}, false }

func (p *pipe) interrupted(state.Status, runner.Result) (outcome, bool) { return outcome{}, false }

func (p *pipe) closeLogs() {}
