package taskrun

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/vibeteam/vibeteam/core/events"
	"github.com/vibeteam/vibeteam/core/state"
	"github.com/vibeteam/vibeteam/core/workflow"
)

// lineAdapter drives testdata's fakeline: a line-oriented program that
// asks "Proceed? (y/n)" asks times, then shows a "> " prompt.
func lineAdapter(t *testing.T, asks int) string {
	return fmt.Sprintf(`name: line
command: %s
modes:
  interactive:
    args: [-record, rec.txt, -asks, "%d"]
    prompt: { position: none }
quietPeriod: 100ms
states:
  - { name: interaction_confirm, pattern: 'Proceed\? \(y/n\)' }
  - { name: interaction_idle, pattern: '(?m)^> $' }
autoPolicy:
  handlers:
    - { when: 'Proceed\? \(y/n\)', use: confirmYes }
`, fakeBinary(t, "fakeline"), asks)
}

// runTerminal runs an interactive task of fakeline through the terminal
// driver, in a goroutine; the run's result comes on the channel.
func runTerminal(t *testing.T, h *fakeHost, asks int) <-chan pipeRun {
	t.Helper()
	// A session of its own: a process is stopped with those of its tag
	// (session/task) that left its group.
	h.cfg.SessionID, h.cfg.BaseDir, h.cfg.Grace = t.Name(), t.TempDir(), time.Second
	h.cfg.Registry = registry(t, map[string]string{"line": lineAdapter(t, asks)})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	h.cancel = cancel
	out := make(chan pipeRun, 1)
	go func() {
		defer cancel()
		var r pipeRun
		start := time.Now()
		task := workflow.Task{ID: "a", Adapter: "line", ExecutionMode: "interactive", Timeout: workflow.Duration(50 * time.Second)}
		r.ok, r.why = Run(ctx, h, task, "", func(_, why string) { r.failed = append(r.failed, why) }, nil)
		r.elapsed, r.host = time.Since(start), h
		out <- r
	}()
	return out
}

func (h *fakeHost) received(t *testing.T) string {
	t.Helper()
	data, _ := os.ReadFile(filepath.Join(h.cfg.BaseDir, "rec.txt"))
	return string(data)
}

// eventually waits for cond, checked every 10 ms, for at most 20 s.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s", what)
		}
	}
}

// With --auto-approve the policy answers each question once, on the
// screen where it appeared; the idle prompt with nothing queued is DONE.
func TestTerminalAnswersEachQuestionOnceThenIsDoneOnIdle(t *testing.T) {
	t.Parallel()
	h := &fakeHost{cfg: Settings{Choices: Choices{AutoApprove: true, Interaction: InteractionPark}}}
	r := <-runTerminal(t, h, 2)
	if !r.ok || h.record().Reason != "idle" {
		t.Fatalf("ok %v, why %q, reason %q", r.ok, r.why, h.record().Reason)
	}
	if got := h.received(t); got != "answer:y\nanswer:y\n" {
		t.Errorf("fakeline received %q", got)
	}
	if n := len(h.eventsOf(events.AutoAction)); n != 2 {
		t.Errorf("%d auto actions, want 2", n)
	}
}

// Without a policy a person is asked (the question's status and event);
// what they type answers it, and the task goes on.
func TestTerminalAsksAPersonAndTypesTheirAnswer(t *testing.T) {
	t.Parallel()
	h := &fakeHost{cfg: Settings{Choices: Choices{Interaction: InteractionAsk}}}
	done := runTerminal(t, h, 1)
	eventually(t, "the question to a person", func() bool { return h.status() == state.TaskWaitingForUser })
	if asked := h.eventsOf(events.Interaction); len(asked) != 1 || asked[0].(events.InteractionNeeded).State != "interaction_confirm" {
		t.Fatalf("interaction events %+v", asked)
	}
	if err := h.attempt().Send("n"); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if !r.ok || h.received(t) != "answer:n\n" {
		t.Fatalf("ok %v, why %q; fakeline received %q", r.ok, r.why, h.received(t))
	}
	if st := h.statuses; len(st) != 4 || st[1] != state.TaskWaitingForUser || st[2] != state.TaskRunning || st[3] != state.TaskDone {
		t.Errorf("statuses %v", st)
	}
}

// With --on-interaction=park a question parks the session; the task
// stopped so is waiting for a person, not failed nor pending.
func TestTerminalParksOnAQuestion(t *testing.T) {
	t.Parallel()
	h := &fakeHost{cfg: Settings{Choices: Choices{Interaction: InteractionPark}}}
	r := <-runTerminal(t, h, 1)
	rec := h.record()
	if r.ok || h.status() != state.TaskWaitingForUser || rec.Reason != interactionParked || h.Parked() != state.StatusWaiting {
		t.Fatalf("ok %v, status %s, reason %q, parked %q", r.ok, h.status(), rec.Reason, h.Parked())
	}
	if h.received(t) != "" {
		t.Errorf("something was typed: %q", h.received(t))
	}
}
