package core

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/vibeteam/vibeteam/core/events"

	"github.com/vibeteam/vibeteam/adapters"
	"github.com/vibeteam/vibeteam/core/engine"
	"github.com/vibeteam/vibeteam/core/state"
	"github.com/vibeteam/vibeteam/core/workflow"
)

func shellWorkflow(t *testing.T, id, marker string) *workflow.Definition {
	t.Helper()
	src := `id: ` + id + `
stages:
  - id: one
    tasks:
      - { id: t1, adapter: shell, executionMode: headless, prompt: "echo ` + marker + `-1; sleep 0.3; echo $$ > ` + marker + `.pid" }
      - { id: t2, adapter: shell, executionMode: headless, prompt: "echo ` + marker + `-2" }
  - id: two
    tasks:
      - { id: t3, adapter: shell, executionMode: headless, prompt: "echo ` + marker + `-3" }
`
	def, err := workflow.Parse([]byte(src), id+".yaml", workflow.LoadOptions{Adapters: adapters.NewRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	return def
}

// Two sessions in one process never mix events, logs or processes.
func TestTwoSessionsInOneOrchestrator(t *testing.T) {
	base := t.TempDir()
	var mu sync.Mutex
	bySession := map[string][]Event{}
	orch := NewOrchestrator(adapters.NewRegistry(), func(e Event) {
		mu.Lock()
		bySession[e.Session] = append(bySession[e.Session], e)
		mu.Unlock()
	})
	opts := RunOptions{BaseDir: base}
	c1, err := orch.Start(shellWorkflow(t, "wf-one", "alpha"), opts)
	if err != nil {
		t.Fatal(err)
	}
	c2, err := orch.Start(shellWorkflow(t, "wf-two", "beta"), opts)
	if err != nil {
		t.Fatal(err)
	}
	if c1.ID == c2.ID {
		t.Fatal("two sessions with one id")
	}
	var wg sync.WaitGroup
	outs := make([]engine.Outcome, 2)
	for i, c := range []*SessionController{c1, c2} {
		wg.Add(1)
		go func(i int, c *SessionController) {
			defer wg.Done()
			out, err := c.Run(context.Background())
			if err != nil {
				t.Error(err)
			}
			outs[i] = out
		}(i, c)
	}
	wg.Wait()
	for i, out := range outs {
		if out.Status != state.StatusCompleted {
			t.Errorf("session %d: %s", i, out.Status)
		}
	}
	mgr := state.NewManager(base)
	for _, tc := range []struct {
		c            *SessionController
		mine, theirs string
	}{{c1, "alpha", "beta"}, {c2, "beta", "alpha"}} {
		evs := bySession[tc.c.ID]
		if len(evs) == 0 {
			t.Fatalf("no events for %s", tc.c.ID)
		}
		for _, e := range evs {
			if text, _ := e.Fields()["text"].(string); strings.Contains(text, tc.theirs) {
				t.Errorf("session %s got output of the other session: %q", tc.c.ID, text)
			}
		}
		logged, err := state.ReadEvents(mgr.EventLogPath(tc.c.ID))
		if err != nil {
			t.Fatal(err)
		}
		states := 0
		for _, e := range logged {
			if e.Session != tc.c.ID {
				t.Errorf("event of %s in the log of %s", e.Session, tc.c.ID)
			}
			if e.Kind() == events.SessionState {
				states++
			}
		}
		if states == 0 {
			t.Errorf("no derived session_state events for %s", tc.c.ID)
		}
		s, err := mgr.Load(tc.c.ID)
		if err != nil || s.Workflow != "wf-"+map[string]string{"alpha": "one", "beta": "two"}[tc.mine] {
			t.Fatalf("session file of %s: %+v %v", tc.c.ID, s, err)
		}
		// Two lines: whole in the task's record (a log file only for more).
		out := strings.Join(s.Tasks["t1"].OutputTail, "\n")
		if !strings.Contains(out, tc.mine+"-1") || strings.Contains(out, tc.theirs) {
			t.Errorf("output of t1 in %s: %q", tc.c.ID, out)
		}
		if s.Tasks["t1"].Pid == 0 {
			t.Errorf("no pid recorded")
		}
	}
	if outs[0].Status == state.StatusCompleted && bySession[c1.ID][0].Kind() != events.SessionStarted {
		t.Errorf("first event %s", bySession[c1.ID][0].Kind())
	}
}

func TestResumeOfCompletedSessionIsRefused(t *testing.T) {
	base := t.TempDir()
	orch := NewOrchestrator(adapters.NewRegistry(), nil)
	c, err := orch.Start(shellWorkflow(t, "wf", "x"), RunOptions{BaseDir: base})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadResumable(state.NewManager(base), c.ID, false); !errors.Is(err, ErrAlreadyCompleted) {
		t.Errorf("resume of a completed session: %v", err)
	}
}
