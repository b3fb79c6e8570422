package engine

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/vibeteam/vibeteam/core/events"
	"github.com/vibeteam/vibeteam/core/flow"
	"github.com/vibeteam/vibeteam/core/runner"
	"github.com/vibeteam/vibeteam/core/sandbox"
	"github.com/vibeteam/vibeteam/core/state"
	"github.com/vibeteam/vibeteam/core/vocab"
	"github.com/vibeteam/vibeteam/core/workflow"
)

// Reasons a merge step blocks because of its gate (Session.BlockedReason).
const (
	BlockedGateRed     = vocab.BlockedGateRed
	BlockedMergeMoving = vocab.BlockedMergeMoving
)

// MergeRequest is what a merge step asks of its Workspace.
type MergeRequest struct {
	Message string
	// Gate, when set, checks each merge commit before the base moves.
	Gate Gate
	// Queued, when set, is called when another merge into the repository
	// holds the merge queue and this one waits for it.
	Queued func()
	// GateKey names the gate (command, timeout, sandbox): a merge queue
	// batches merges together only under the same gate.
	GateKey string
	// Batched, when set, is told of each batch of several merges this
	// one is part of (a merge queue that batches).
	Batched func(BatchNews)
}

// BatchNews is a batch of several merges formed, gated (Green) or
// bisected (Phase: formed, gated, bisected).
type BatchNews struct {
	Phase    string
	Branches []string
	Base     string
	Commit   string
	Green    bool
}

// Gate checks a merge before it lands: it runs in dir, a temporary
// worktree at the merge commit. green lets the merge land; an error
// (the context ended) stops it.
type Gate func(ctx context.Context, dir string, try GateTry) (green bool, err error)

// GateTry is the merge a gate checks.
type GateTry struct {
	Attempt                          int
	Base, Branch, BaseCommit, Commit string
	// Batch, for a candidate of several merges, is their branches.
	Batch []string
}

// GateResult is how one run of a gate ended.
type GateResult struct {
	Green    bool
	ExitCode int
	Reason   string // a timeout, a signal, a start failure
	Output   string // the end of what it printed (stdout and stderr)
	LogPath  string // all of it
	Duration time.Duration
	// Refused, for a red gate in a sandbox, is the write the sandbox
	// refused it and the sandbox: entry that would allow it.
	Refused string
}

// GateSpec is one run of a gate command.
type GateSpec struct {
	Command string
	Dir     string
	Timeout time.Duration // DefaultGateTimeout when 0
	Env     map[string]string
	Tag     string // carried by its processes (runner.Spec.Tag)
	// Sandbox, when set, is the sandbox the gate runs in.
	Sandbox *sandbox.Plan
	Grace   time.Duration // SIGTERM → SIGKILL when stopped
	// Log, when set, receives all it prints.
	Log func([]byte)
}

// RunGate runs a gate command with sh -c in spec.Dir, in a process group
// of its own, until it exits, its timeout passes (red) or ctx ends (the
// error; its processes are stopped either way).
func RunGate(ctx context.Context, procs ProcessStarter, spec GateSpec) (GateResult, error) {
	if procs == nil {
		procs = realProcesses{}
	}
	timeout := spec.Timeout
	if timeout <= 0 {
		timeout = time.Duration(workflow.DefaultGateTimeout)
	}
	grace := spec.Grace
	if grace <= 0 {
		grace = runner.DefaultGrace
	}
	start := time.Now()
	out := &tailBuffer{limit: captureLimit}
	refusals := spec.Sandbox.Watch()
	args := []string{"-c", spec.Command}
	if len(spec.Command) > maxInlineScript {
		file, err := scriptFile(spec.Command)
		if err != nil {
			return GateResult{ExitCode: -1}, err
		}
		defer os.Remove(file)
		args = []string{file}
	}
	proc, err := procs.StartHeadless(runner.Spec{
		Command: shell, Args: args, Dir: spec.Dir, Env: spec.Env, Tag: spec.Tag,
		GroupOnly: true, NoInput: true, MergeOutput: true, Sandbox: spec.Sandbox,
	}, func(c runner.Chunk) {
		out.Write(c.Clean)
		_, _ = refusals.Write(c.Clean)
		if spec.Log != nil {
			spec.Log(c.Clean)
		}
	})
	if err != nil {
		return GateResult{ExitCode: -1, Reason: "the gate did not start: " + err.Error(), Duration: time.Since(start)}, nil
	}
	_ = proc.CloseInput()
	t := time.NewTimer(timeout)
	defer t.Stop()
	res := GateResult{}
	select {
	case <-proc.Done():
	case <-t.C:
		proc.Stop(grace)
		res.Reason = fmt.Sprintf("timed out after %s", timeout)
	case <-ctx.Done():
		proc.Stop(grace)
		return GateResult{ExitCode: -1, Output: out.String(), Duration: time.Since(start)}, ctx.Err()
	}
	r := proc.Result()
	res.ExitCode, res.Output, res.Duration = r.ExitCode, strings.TrimRight(out.String(), "\n"), time.Since(start)
	switch {
	case res.Reason != "":
		res.ExitCode = -1
	case r.Err != nil:
		res.Reason = r.Err.Error()
	case r.Signal != "":
		res.Reason = "killed by signal " + r.Signal
	}
	res.Green = res.Reason == "" && r.Success()
	if !res.Green {
		res.Refused = refusals.Found()
	}
	return res, nil
}

// gateRunner runs a merge step's gate for the Workspace, once per merge
// computed, and keeps the last run's result.
type gateRunner struct {
	g    *grimoire
	step *workflow.Step
	at   flow.Addr

	mu   sync.Mutex
	last *GateResult
	runs int
}

func (r *gateRunner) run(ctx context.Context, dir string, try GateTry) (bool, error) {
	g, m := r.g, r.step.Merge
	g.host.emit("", events.GateStart{
		Step: r.step.Label(), Address: r.at.Key(), Attempt: try.Attempt, Command: m.Gate,
		Base: try.Base, Branch: try.Branch, BaseCommit: try.BaseCommit, Commit: try.Commit, Dir: dir, Batch: try.Batch,
	})
	// Each run its own log: a merge queue that batches gates a merge
	// more than once on the same attempt.
	r.mu.Lock()
	r.runs++
	nth := max(r.runs, try.Attempt)
	r.mu.Unlock()
	name := logName(r.step, r.at) + ".gate-" + strconv.Itoa(nth)
	f, logPath := g.openStepLog(name)
	var logMu sync.Mutex
	write := func(p []byte) {
		logMu.Lock()
		defer logMu.Unlock()
		if f != nil {
			_, _ = f.Write(state.RedactBytes(p))
		}
	}
	started := time.Now()
	plan, err := gatePlan(g.cfg.Sandbox, dir, r.step.Sandbox)
	if err != nil {
		return false, err
	}
	res, err := RunGate(ctx, g.cfg.processes(), GateSpec{
		Command: m.Gate, Dir: dir, Timeout: time.Duration(m.GateTimeout), Tag: g.tag, Grace: g.cfg.Grace, Log: write, Sandbox: plan,
		Env: map[string]string{
			"VIBETEAM_GATE_ATTEMPT": strconv.Itoa(try.Attempt),
			"VIBETEAM_GATE_BASE":    try.Base,
			"VIBETEAM_GATE_BRANCH":  try.Branch,
			"VIBETEAM_GATE_COMMIT":  try.Commit,
		},
	})
	if f != nil {
		_ = f.Close()
	}
	res.LogPath = logPath
	run := state.GateRun{
		Step: r.step.Label(), Address: r.at.Key(), Attempt: try.Attempt, Command: m.Gate,
		Base: try.Base, BaseCommit: try.BaseCommit, Commit: try.Commit, Started: started,
		DurationMS: res.Duration.Milliseconds(), Green: res.Green, ExitCode: res.ExitCode, Reason: res.Reason, LogPath: logPath,
		Batch: try.Batch,
	}
	if err != nil {
		run.Reason = "interrupted"
	}
	g.host.addGateRun(run)
	g.host.emit("", events.GateEnd{
		Step: r.step.Label(), Address: r.at.Key(), Attempt: try.Attempt, Commit: try.Commit,
		Green: res.Green, ExitCode: res.ExitCode, DurationMS: run.DurationMS, Reason: run.Reason, LogPath: logPath,
	})
	r.mu.Lock()
	r.last = &res
	r.mu.Unlock()
	return res.Green, err
}

// lastRun is the last run's result, nil when the gate never ran (or r is
// nil: the step has no gate).
func (r *gateRunner) lastRun() *GateResult {
	if r == nil {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.last
}

// FailureTail is the end of a failed command's output and, when they are
// further up, the failures it reported: what a blocked step's context
// shows.
func FailureTail(output string) string { return blockedContext(output) }
