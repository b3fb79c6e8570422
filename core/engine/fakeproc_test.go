package engine

import (
	"context"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/vibeteam/vibeteam/core/runner"
	"github.com/vibeteam/vibeteam/core/state"
	"github.com/vibeteam/vibeteam/core/taskrun"
	"github.com/vibeteam/vibeteam/core/workflow"
)

// fakeProcesses runs scripts without processes: each command is looked up
// in a table that says what it prints, how long it takes (fake time, under
// synctest) and how it exits.
type fakeProcesses struct {
	mu      sync.Mutex
	scripts map[string]fakeScript
	started []string
}

type fakeScript struct {
	output string
	takes  time.Duration
	exit   int
}

func (f *fakeProcesses) StartHeadless(spec runner.Spec, onOutput func(runner.Chunk)) (runner.Process, error) {
	cmd := spec.Args[len(spec.Args)-1]
	f.mu.Lock()
	sc := f.scripts[cmd]
	f.started = append(f.started, cmd)
	f.mu.Unlock()
	p := &fakeProc{done: make(chan struct{}), stop: make(chan struct{})}
	go func() {
		select {
		case <-time.After(sc.takes):
			if sc.output != "" {
				onOutput(runner.Chunk{Stream: "output", Raw: []byte(sc.output), Clean: []byte(sc.output)})
			}
			p.result = runner.Result{ExitCode: sc.exit}
		case <-p.stop:
			p.result = runner.Result{ExitCode: -1, Signal: "terminated"}
		}
		close(p.done)
	}()
	return p, nil
}

type fakeProc struct {
	done     chan struct{}
	stop     chan struct{}
	stopOnce sync.Once
	result   runner.Result
}

func (p *fakeProc) Pid() int                { return 0 }
func (p *fakeProc) Send(string) error       { return nil }
func (p *fakeProc) CloseInput() error       { return nil }
func (p *fakeProc) Done() <-chan struct{}   { return p.done }
func (p *fakeProc) Result() runner.Result   { return p.result }
func (p *fakeProc) Kill()                   { p.Stop(0) }
func (p *fakeProc) Stop(time.Duration)      { p.stopOnce.Do(func() { close(p.stop) }); <-p.done }
func script(name, cmd string) workflow.Step { return scriptStep(name, cmd, workflow.OnFailBlock, "") }

func scriptStep(name, cmd, onFail, onSuccess string) workflow.Step {
	return workflow.Step{Type: workflow.StepScript, Name: name, Script: &workflow.ScriptStep{Command: cmd, OnFail: onFail, OnSuccess: onSuccess}}
}

func runFake(t *testing.T, def *workflow.Definition, procs *fakeProcesses, ctx context.Context) (*state.Session, Outcome) {
	t.Helper()
	sess := &state.Session{ID: "fake", Workflow: def.ID, WorkflowDefinition: def, BaseDir: t.TempDir()}
	x := New(sess, Options{Settings: taskrun.Settings{Processes: procs, Choices: taskrun.Choices{Grace: time.Second}}})
	out, err := x.Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return sess, out
}

// The interpreter walks a loop with fake processes: outputs flow into
// later steps' commands, on_fail: continue goes on, exit_loop leaves.
func TestInterpreterWithFakeProcesses(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		procs := &fakeProcesses{scripts: map[string]fakeScript{
			"echo setup":       {output: "ready\n", takes: time.Second},
			"test '1' -ge 2":   {exit: 1, takes: time.Minute},
			"test '2' -ge 2":   {takes: time.Minute},
			"echo 'ready' end": {output: "ready end\n"},
		}}
		def := &workflow.Definition{Kind: workflow.KindGrimoire, ID: "g", Steps: []workflow.Step{
			script("setup", "echo setup"),
			{Type: workflow.StepLoop, Name: "l", Loop: &workflow.LoopStep{MaxIterations: 5, OnMaxIterations: workflow.OnMaxBlock, Steps: []workflow.Step{
				scriptStep("try", "test {{.l.iteration}} -ge 2", workflow.OnFailContinue, workflow.OnSuccessExitLoop),
			}}},
			script("end", "echo {{.setup.output}} end"),
		}}
		start := time.Now()
		sess, out := runFake(t, def, procs, context.Background())
		if out.Status != state.StatusCompleted {
			t.Fatalf("status %s: %s", out.Status, out.Reason)
		}
		if got := strings.Join(procs.started, " | "); got != "echo setup | test '1' -ge 2 | test '2' -ge 2 | echo 'ready' end" {
			t.Errorf("ran %s", got)
		}
		if sess.Runs["1.1/0"].Status != "failed" || sess.Runs["1.2/0"].Status != "done" || sess.Runs["2"].Output != "ready end" {
			t.Errorf("runs: %+v %+v %+v", sess.Runs["1.1/0"], sess.Runs["1.2/0"], sess.Runs["2"])
		}
		// Fake time: a second and two minutes passed, in no time.
		if took := time.Since(start); !aboutFake(took, time.Second+2*time.Minute) {
			t.Errorf("the run took %v of fake time", took)
		}
	})
}

// A script step's timeout stops its process and blocks the grimoire, at
// exactly the timeout (fake time).
func TestScriptTimeoutWithFakeProcesses(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		procs := &fakeProcesses{scripts: map[string]fakeScript{"sleep forever": {takes: 24 * time.Hour}}}
		step := script("slow", "sleep forever")
		step.Timeout = workflow.Duration(5 * time.Minute)
		def := &workflow.Definition{Kind: workflow.KindGrimoire, ID: "g", Steps: []workflow.Step{step, script("after", "echo after")}}
		start := time.Now()
		sess, out := runFake(t, def, procs, context.Background())
		if out.Status != state.StatusBlocked || !strings.Contains(sess.Runs["0"].Reason, "timed out after 5m0s") {
			t.Fatalf("status %s, run %+v", out.Status, sess.Runs["0"])
		}
		if took := time.Since(start); !aboutFake(took, 5*time.Minute) {
			t.Errorf("stopped after %v of fake time, want 5m", took)
		}
		if len(procs.started) != 1 {
			t.Errorf("ran %v after the block", procs.started)
		}
	})
}

// An interrupt stops the running step at once, however long it would run.
func TestInterruptWithFakeProcesses(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		procs := &fakeProcesses{scripts: map[string]fakeScript{"long": {takes: time.Hour}}}
		def := &workflow.Definition{Kind: workflow.KindGrimoire, ID: "g", Steps: []workflow.Step{script("long", "long"), script("next", "next")}}
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(10*time.Second, cancel)
		start := time.Now()
		sess, out := runFake(t, def, procs, ctx)
		if out.Status != state.StatusCancelled || sess.Runs["0"].Status != "stopped" || sess.Runs["1"] != nil {
			t.Fatalf("status %s, runs %+v", out.Status, sess.Runs)
		}
		if took := time.Since(start); !aboutFake(took, 10*time.Second) {
			t.Errorf("stopped after %v of fake time", took)
		}
	})
}

// aboutFake reports whether a fake time is want, give or take what the
// runner's look at the machine's real processes may add (it sleeps 100 µs
// at a time for one caught in the middle of its exec, as other tests'
// processes may be): far less than any step's time here.
func aboutFake(took, want time.Duration) bool {
	return took >= want && took < want+100*time.Millisecond
}
