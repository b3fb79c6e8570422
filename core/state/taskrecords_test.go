package state

import (
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vibeteam/vibeteam/core/workflow"
)

// A session of format 2 kept an agent step's task under
// Tasks["name@address"], its journal too: read, each such record is in its
// step run, status and all; a stage step's tasks and a task whose run is
// gone stay where they were, and Task and AllTasks find every one.
func TestFormat2AgentRecordsMoveIntoTheirRuns(t *testing.T) {
	t.Parallel()
	m := NewManager(t.TempDir())
	code := 0
	s := &Session{ID: "0123abd0", Version: 2, Status: StatusRunning, StartTime: time.Now(),
		WorkflowDefinition: &workflow.Definition{Kind: workflow.KindGrimoire, ID: "g"},
		Runs: map[string]*StepRun{
			"0":     {Name: "impl", Type: workflow.StepAgent, Status: "done"},
			"1":     {Name: "s", Type: workflow.StepStage, Status: "done"},
			"2.1/0": {Name: "fix", Type: workflow.StepAgent, Status: "running"},
			"3":     {Name: "other", Type: workflow.StepAgent, Status: "running"},
		},
		Tasks: map[string]*TaskRecord{
			"impl@0": {Adapter: "claude", ExitCode: &code, Attempts: 1},
			"t@1":    {Adapter: "codex"},
			"gone@4": {Adapter: "gemini"},
		},
		TaskStatus: map[string]TaskStatus{"impl@0": TaskDone, "t@1": TaskDone, "gone@4": TaskError, "other@3": TaskPending},
	}
	if err := m.Save(s); err != nil {
		t.Fatal(err)
	}
	// Saved, the file says format 2 again, as that vibeteam wrote it; its
	// journal then saw the loop's agent start.
	path := m.SessionPath(s.ID)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(strings.Replace(string(b), `"version": 3,`, `"version": 2,`, 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	line := `{"seq":1,"time":"2026-01-02T03:04:05Z","task":"fix@2.1-0","status":"RUNNING","record":{"adapter":"claude","mode":"headless","pid":42,"pidStart":7,"attempts":2}}` + "\n"
	if err := os.WriteFile(m.journalPath(s.ID), []byte(line), 0o600); err != nil {
		t.Fatal(err)
	}

	got, err := m.Load(s.ID)
	if err != nil {
		t.Fatal(err)
	}
	if r := got.Runs["0"].Task; r == nil || r.Status != TaskDone || r.Adapter != "claude" || r.ExitCode == nil || r.Attempts != 1 {
		t.Errorf("impl's run holds %+v", r)
	}
	if r := got.Runs["2.1/0"].Task; r == nil || r.Status != TaskRunning || r.Pid != 42 || r.Attempts != 2 {
		t.Errorf("fix's run holds %+v (from the journal)", r)
	}
	if r := got.Runs["3"].Task; r == nil || r.Status != TaskPending {
		t.Errorf("other's run (a status, no record yet) holds %+v", r)
	}
	if got.Runs["1"].Task != nil {
		t.Errorf("the stage step's run holds %+v", got.Runs["1"].Task)
	}
	var left []string
	for id := range got.Tasks {
		left = append(left, id)
	}
	slices.Sort(left)
	if strings.Join(left, " ") != "gone@4 t@1" || len(got.TaskStatus) != 2 {
		t.Errorf("left under tasks: %v, taskStatus: %v", left, got.TaskStatus)
	}

	for id, want := range map[string]struct {
		status  TaskStatus
		adapter string
		runKey  string
	}{
		"impl@0":    {TaskDone, "claude", "0"},
		"fix@2.1-0": {TaskRunning, "claude", "2.1/0"},
		"t@1":       {TaskDone, "codex", ""},
		"gone@4":    {TaskError, "gemini", ""},
	} {
		task, ok := got.Task(id)
		if !ok || task.Status != want.status || task.Record == nil || task.Record.Adapter != want.adapter || task.RunKey != want.runKey {
			t.Errorf("Task(%s) = %+v, %v", id, task, ok)
		}
	}
	if _, ok := got.Task("impl@1"); ok {
		t.Error("Task found a task at an address with no run")
	}
	var all []string
	for task := range got.AllTasks() {
		all = append(all, task.ID)
	}
	slices.Sort(all)
	if strings.Join(all, " ") != "fix@2.1-0 gone@4 impl@0 other@3 t@1" {
		t.Errorf("AllTasks: %v", all)
	}
}
