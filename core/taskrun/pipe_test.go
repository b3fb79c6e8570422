package taskrun

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/vibeteam/vibeteam/core/budget"
	"github.com/vibeteam/vibeteam/core/events"
	"github.com/vibeteam/vibeteam/core/runner"
	"github.com/vibeteam/vibeteam/core/state"
	"github.com/vibeteam/vibeteam/core/workflow"
)

// agentAdapter is a headless adapter whose output is claude's stream-json.
const agentAdapter = `name: agent
command: agent
modes:
  headless:
    args: []
    output: claude-stream-json
    prompt: { position: arg }
`

// pipeRun runs task t (adapter shell unless set, headless) through the
// pipe driver with fake processes, and returns what the run reported and
// its host.
type pipeRun struct {
	ok      bool
	why     string
	host    *fakeHost
	failed  []string
	elapsed time.Duration
}

func runPipe(t *testing.T, ctx context.Context, t0 workflow.Task, programs map[string]fakeProgram, prompt string) pipeRun {
	return runPipeOn(t, ctx, pipeHost(t, programs), t0, prompt)
}

func pipeHost(t *testing.T, programs map[string]fakeProgram) *fakeHost {
	return &fakeHost{cfg: Settings{
		SessionID: "s", BaseDir: t.TempDir(), Registry: registry(t, map[string]string{"agent": agentAdapter}),
		Choices: Choices{Grace: time.Second, Interaction: InteractionPark}, Processes: &fakeStarter{programs: programs},
	}}
}

func runPipeOn(t *testing.T, ctx context.Context, h *fakeHost, t0 workflow.Task, prompt string) pipeRun {
	t.Helper()
	if t0.Adapter == "" {
		t0.Adapter = "shell"
	}
	t0.ExecutionMode = "headless"
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	h.cancel = cancel
	var r pipeRun
	start := time.Now()
	r.ok, r.why = Run(ctx, h, t0, prompt, func(_, why string) { r.failed = append(r.failed, why) }, nil)
	r.elapsed, r.host = time.Since(start), h
	return r
}

// A task's timeout stops its process at exactly the timeout (fake time),
// fails it, and names it its stage's failure before the process is gone.
func TestPipeTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		forever := func(p *fakeProc) runner.Result {
			if !p.sleep(24 * time.Hour) {
				return stopped
			}
			return runner.Result{}
		}
		task := workflow.Task{ID: "a", Prompt: "forever", Timeout: workflow.Duration(5 * time.Minute)}
		r := runPipe(t, context.Background(), task, map[string]fakeProgram{"forever": forever}, "forever")
		rec := r.host.record()
		if r.ok || rec.Reason != timeoutReason || r.why != "timed out after 5m0s" {
			t.Fatalf("ok %v, why %q, reason %q", r.ok, r.why, rec.Reason)
		}
		if r.elapsed != 5*time.Minute {
			t.Errorf("stopped after %s of fake time, want 5m", r.elapsed)
		}
		if len(r.failed) != 1 || r.failed[0] != r.why {
			t.Errorf("named failing %q", r.failed)
		}
		if got := r.host.statuses; len(got) != 2 || got[0] != state.TaskRunning || got[1] != state.TaskError {
			t.Errorf("statuses %v", got)
		}
	})
}

// Inactivity counts from the last output: a process that prints every
// minute lives on; silent for longer than the limit, it is stopped then.
func TestPipeInactivityCountsFromTheLastOutput(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		talksThenStops := func(p *fakeProc) runner.Result {
			for i := 0; i < 3; i++ {
				if !p.sleep(time.Minute) {
					return stopped
				}
				p.print(fmt.Sprintf("tick %d\n", i))
			}
			if !p.sleep(time.Hour) {
				return stopped
			}
			return runner.Result{}
		}
		task := workflow.Task{ID: "a", Prompt: "talk", InactivityTimeout: workflow.Duration(90 * time.Second)}
		r := runPipe(t, context.Background(), task, map[string]fakeProgram{"talk": talksThenStops}, "talk")
		if r.ok || r.host.record().Reason != inactivityReason {
			t.Fatalf("ok %v, why %q, reason %q", r.ok, r.why, r.host.record().Reason)
		}
		if want := 3*time.Minute + 90*time.Second; r.elapsed != want {
			t.Errorf("stopped after %s of fake time, want %s (the last output, then the limit)", r.elapsed, want)
		}
		if n := len(r.host.eventsOf(events.TaskOutput)); n != 3 {
			t.Errorf("%d output events, want 3", n)
		}
	})
}

// The queue is written to stdin, each input checkpointed as sent, then
// stdin is closed: the process reads to EOF and the task is DONE.
func TestPipeFeedsTheQueueThenEOF(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var got []string
		reader := func(p *fakeProc) runner.Result {
			lines, ok := p.readAll()
			if !ok {
				return stopped
			}
			got = lines
			return runner.Result{}
		}
		task := workflow.Task{ID: "a", Prompt: "read", PendingInputs: []string{"one", "two"}}
		r := runPipe(t, context.Background(), task, map[string]fakeProgram{"read": reader}, "read")
		if !r.ok || r.host.status() != state.TaskDone {
			t.Fatalf("ok %v, why %q, status %s", r.ok, r.why, r.host.status())
		}
		if strings.Join(got, "") != "one\ntwo\n" {
			t.Errorf("the process read %q", got)
		}
		if rec := r.host.record(); len(rec.PendingInputs) != 0 {
			t.Errorf("still queued: %q", rec.PendingInputs)
		}
		ins := r.host.eventsOf(events.TaskInput)
		if len(ins) != 2 || ins[0].(events.TaskIn).Source != "queue" {
			t.Errorf("input events %+v", ins)
		}
	})
}

// An exit that leaves queued inputs unsent is not DONE, even with 0.
func TestPipeExitWithInputsUnsent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		quits := func(p *fakeProc) runner.Result { return runner.Result{} }
		task := workflow.Task{ID: "a", Prompt: "quit", PendingInputs: []string{"never read"}}
		programs := map[string]fakeProgram{"quit": quits}
		r := runPipe(t, context.Background(), task, programs, "quit")
		if r.ok || r.host.record().Reason != unsentReason || r.why != "exited (code 0) with 1 queued input(s) unsent" {
			t.Fatalf("ok %v, why %q, reason %q", r.ok, r.why, r.host.record().Reason)
		}
	})
}

// A run that ends (Ctrl-C, a failure elsewhere) stops the process: the task
// is pending again, to run on resume, not failed.
func TestPipeInterruptLeavesThePendingTask(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		forever := func(p *fakeProc) runner.Result {
			p.sleep(24 * time.Hour)
			return runner.Result{} // exits 0 on SIGTERM: still not DONE
		}
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(10*time.Second, cancel)
		r := runPipe(t, ctx, workflow.Task{ID: "a", Prompt: "forever"}, map[string]fakeProgram{"forever": forever}, "forever")
		if r.ok || r.host.status() != state.TaskPending || r.host.record().Reason != stoppedReason {
			t.Fatalf("ok %v, status %s, reason %q", r.ok, r.host.status(), r.host.record().Reason)
		}
		if r.elapsed != 10*time.Second {
			t.Errorf("stopped after %s of fake time", r.elapsed)
		}
	})
}

// Complete declares the task DONE and stops its process at once.
func TestPipeCompleteStopsTheProcess(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ended := make(chan bool, 1)
		forever := func(p *fakeProc) runner.Result {
			ended <- !p.sleep(24 * time.Hour)
			return stopped
		}
		h := pipeHost(t, map[string]fakeProgram{"forever": forever})
		var r pipeRun
		done := make(chan struct{})
		go func() {
			defer close(done)
			r = runPipeOn(t, context.Background(), h, workflow.Task{ID: "a", Prompt: "forever"}, "forever")
		}()
		time.Sleep(time.Minute)
		synctest.Wait()
		h.attempt().Complete() // as `vibeteam`'s :done does
		<-done
		if !r.ok || r.host.record().Reason != completedByUser || !<-ended {
			t.Fatalf("ok %v, reason %q", r.ok, r.host.record().Reason)
		}
	})
}

// A budget spent by what the agent reports while it runs stops it then:
// the task ends for reason budget with what it reported in its record.
func TestPipeStopsAnAgentOnItsBudget(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		spends := func(p *fakeProc) runner.Result {
			for i := 0; i < 10; i++ {
				if !p.sleep(time.Minute) {
					return stopped
				}
				p.print(fmt.Sprintf(`{"type":"assistant","message":{"id":"m%d","content":[{"type":"text","text":"step %d"}],"usage":{"input_tokens":100,"output_tokens":100}},"session_id":"s-1"}`+"\n", i, i))
			}
			return runner.Result{}
		}
		meter := budget.NewMeter(budget.Limit{Tokens: 500}, nil)
		ctx := WithMeter(context.Background(), meter)
		r := runPipe(t, ctx, workflow.Task{ID: "a", Adapter: "agent", Prompt: "spend"}, map[string]fakeProgram{"spend": spends}, "spend")
		rec := r.host.record()
		if r.ok || rec.Reason != BudgetReason || rec.Agent == nil || rec.Agent.SessionID != "s-1" {
			t.Fatalf("ok %v, why %q, reason %q, agent %+v", r.ok, r.why, rec.Reason, rec.Agent)
		}
		if r.elapsed != 3*time.Minute {
			t.Errorf("stopped after %s of fake time, want 3m (600 tokens of 500)", r.elapsed)
		}
		if said := r.host.eventsOf(events.AgentMessage); len(said) != 3 {
			t.Errorf("%d agent messages, want 3", len(said))
		}
	})
}
