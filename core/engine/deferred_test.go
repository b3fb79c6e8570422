package engine

import (
	"testing"

	"github.com/vibeteam/vibeteam/core/state"
)

// A deferred change rides on the next line when the two can share it, and
// is written on a line of its own before it when they cannot.
func TestWithDeferred(t *testing.T) {
	t.Parallel()
	key0, key1 := "0", "1"
	stageStart := state.Change{Run: &state.StepRun{Name: "s0", Status: "running"}, RunKey: key0, Cursor: &key0}
	prompt := state.Change{History: &state.HistoryEntry{Kind: "prompt", TaskID: "t0", Text: "echo 0"}}
	running := state.Change{Task: "t0", Status: state.TaskRunning, Record: &state.TaskRecord{Pid: 7}}

	both, ok := withDeferred(prompt, stageStart)
	if !ok || both.Run == nil || both.RunKey != key0 || *both.Cursor != key0 || both.History == nil {
		t.Fatalf("prompt with the stage's start: %v %+v", ok, both)
	}
	all, ok := withDeferred(running, both)
	if !ok || all.Task != "t0" || all.Status != state.TaskRunning || all.Record.Pid != 7 || all.Run == nil || all.History == nil {
		t.Fatalf("the task's start with both: %v %+v", ok, all)
	}
	record := state.Change{Task: "t0", Record: &state.TaskRecord{Pid: 8}}
	if c, ok := withDeferred(record, running); !ok || c.Status != state.TaskRunning || c.Record.Pid != 8 {
		t.Errorf("a later record of the same task keeps the status: %v %+v", ok, c)
	}
	if c, ok := withDeferred(state.Change{Run: &state.StepRun{Status: "done"}, RunKey: key0}, stageStart); !ok || c.Run.Status != "done" {
		t.Errorf("a change of the same run supersedes: %v %+v", ok, c)
	}
	for name, pair := range map[string][2]state.Change{
		"two runs":      {{Run: &state.StepRun{}, RunKey: key1}, stageStart},
		"two tasks":     {{Task: "t1", Status: state.TaskRunning}, running},
		"two histories": {prompt, prompt},
		"a header":      {running, {Session: []byte(`{}`)}},
	} {
		if _, ok := withDeferred(pair[0], pair[1]); ok {
			t.Errorf("%s: merged on one line", name)
		}
	}
}
