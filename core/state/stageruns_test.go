package state

import (
	"testing"
	"time"

	"github.com/vibeteam/vibeteam/core/workflow"
)

func threeStages() *workflow.Definition {
	def := &workflow.Definition{Kind: workflow.KindStages, ID: "three"}
	for _, id := range []string{"one", "two", "three"} {
		def.Steps = append(def.Steps, workflow.Step{Type: workflow.StepStage, ID: id, Tasks: []workflow.Task{{ID: id + "-task"}}})
	}
	return def
}

// A stage workflow written before stage workflows had step runs kept its
// place in currentStageIndex alone, moved on by the journal's stage lines:
// read, its stages before that index are done runs, and the one at it has
// none (it runs on resume).
func TestOldStageSessionGetsItsRuns(t *testing.T) {
	t.Parallel()
	m := NewManager(t.TempDir())
	s := &Session{Version: 2, ID: "0123abcd", Status: StatusRunning, WorkflowDefinition: threeStages(), StartTime: time.Now(),
		TaskStatus: map[string]TaskStatus{"one-task": TaskPending, "two-task": TaskPending, "three-task": TaskPending}, Tasks: map[string]*TaskRecord{}}
	if err := m.Save(s); err != nil {
		t.Fatal(err)
	}
	j, err := m.OpenJournal(s)
	if err != nil {
		t.Fatal(err)
	}
	zero, two := 0, 2
	for _, c := range []Change{{Stage: &zero}, {Task: "one-task", Status: TaskDone}, {Stage: &two}} {
		if err := j.Append(c, false); err != nil {
			t.Fatal(err)
		}
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	got, err := m.Load(s.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.CurrentStageIndex != 2 || len(got.Runs) != 2 {
		t.Fatalf("stage %d, runs %v; want 2 and the runs of stages one and two", got.CurrentStageIndex, got.Runs)
	}
	for key, name := range map[string]string{"0": "one", "1": "two"} {
		if r := got.Runs[key]; r == nil || r.Name != name || r.Type != workflow.StepStage || r.Status != "done" {
			t.Errorf("run %s: %+v, want stage %s done", key, r, name)
		}
	}
	// A grimoire keeps its place in its runs already: nothing is made up.
	g := &Session{ID: "4567abcd", WorkflowDefinition: &workflow.Definition{Kind: workflow.KindGrimoire, Steps: threeStages().Steps}, CurrentStageIndex: 2}
	g.upgradeStageRuns()
	if len(g.Runs) != 0 {
		t.Errorf("a grimoire got runs %v", g.Runs)
	}
}

// Rewinding a stage workflow (resume --rerun, --reload) drops the runs of
// the stages from there on, so that they run again.
func TestRewindStagesDropsTheLaterRuns(t *testing.T) {
	t.Parallel()
	s := &Session{WorkflowDefinition: threeStages(), CurrentStageIndex: 3, Runs: map[string]*StepRun{}}
	for _, k := range []string{"0", "1", "2"} {
		s.Runs[k] = &StepRun{Type: workflow.StepStage, Status: "done"}
	}
	s.RewindStages(1)
	if s.CurrentStageIndex != 1 || len(s.Runs) != 1 || s.Runs["0"] == nil {
		t.Errorf("stage %d, runs %v; want 1 and the run of stage one only", s.CurrentStageIndex, s.Runs)
	}
}
