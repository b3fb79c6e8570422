package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vibeteam/vibeteam/core/state"
)

// v2Session puts a stage-workflow session written by vibeteam before stage
// workflows kept their place as step runs (format v2: only
// currentStageIndex) into the project: testdata/v2sessions/<name>, its
// base dir written @BASE@.
func (p *project) v2Session(name, id string) {
	p.t.Helper()
	src := filepath.Join("testdata", "v2sessions", name)
	mgr := state.NewManager(p.dir)
	dst := map[string]string{
		"wf.yaml":       p.path("wf.yaml"),
		id + ".json":    mgr.SessionPath(id),
		id + ".journal": strings.TrimSuffix(mgr.SessionPath(id), ".json") + ".journal",
		id + ".jsonl":   mgr.EventLogPath(id),
	}
	for from, to := range dst {
		b, err := os.ReadFile(filepath.Join(src, from))
		if err != nil {
			p.t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Dir(to), 0o700); err != nil {
			p.t.Fatal(err)
		}
		if err := os.WriteFile(to, []byte(strings.ReplaceAll(string(b), "@BASE@", p.dir)), 0o600); err != nil {
			p.t.Fatal(err)
		}
	}
}

// lines is how many lines a task appended to a file (0: it never ran).
func (p *project) lines(rel string) int {
	p.t.Helper()
	if !p.exists(rel) {
		return 0
	}
	return strings.Count(p.read(rel), "\n")
}

// A session that failed in stage 2 of 3 under the old format (only
// currentStageIndex: 1) resumes at stage 2, running only its failed task,
// then stage 3.
func TestResumeV2FailedStageSession(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	const id = "3a94ff88"
	p.v2Session("failed", id)
	show := p.exec("show", id)
	wantCode(t, show, 0)
	if !strings.Contains(show.stdout, "stage     2/3") || !strings.Contains(show.stdout, "> stage 2 two") {
		t.Errorf("show of the old session:\n%s", show.stdout)
	}
	p.write("fixed", "")
	r := p.exec("resume", id)
	wantCode(t, r, 0)
	for file, want := range map[string]int{"first.t": 0, "ok.t": 0, "needs.t": 1, "last.t": 1} {
		if n := p.lines(file); n != want {
			t.Errorf("%s: the task ran %d time(s) on resume, want %d\n%s", file, n, want, r.stderr)
		}
	}
	s := p.only()
	if s.Status != state.StatusCompleted || s.CurrentStageIndex != 3 {
		t.Errorf("status %s at stage %d, want completed at 3", s.Status, s.CurrentStageIndex)
	}
	for key, name := range map[string]string{"0": "one", "1": "two", "2": "three"} {
		if run := s.Runs[key]; run == nil || run.Name != name || run.Type != "stage" || run.Status != "done" {
			t.Errorf("run %s: %+v, want stage %s done", key, run, name)
		}
	}
	if strings.Contains(r.stderr, "stage 1/3") || !strings.Contains(r.stderr, "stage 2/3 two") || !strings.Contains(r.stderr, "stage 3/3 three") {
		t.Errorf("resume started the wrong stages:\n%s", r.stderr)
	}
}

// A session killed with kill -9 in the middle of stage 2 of 3 under the old
// format (its place in the journal's stage lines): the task that was
// running runs again, the one that was DONE does not, and stage 1 does not.
func TestResumeV2KilledStageSession(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	const id = "45a230b3"
	p.v2Session("killed", id)
	sessions := p.exec("sessions", "--json")
	wantCode(t, sessions, 0)
	if !strings.Contains(sessions.stdout, `"stage": 1`) {
		t.Errorf("sessions of the old session:\n%s", sessions.stdout)
	}
	p.write("go", "") // the slow task ends at once this time
	r := p.exec("resume", id)
	wantCode(t, r, 0)
	for file, want := range map[string]int{"first.t": 0, "ok.t": 0, "slow.t": 1, "last.t": 1} {
		if n := p.lines(file); n != want {
			t.Errorf("%s: the task ran %d time(s) on resume, want %d\n%s", file, n, want, r.stderr)
		}
	}
	if strings.Contains(r.stderr, "stage 1/3") || !strings.Contains(r.stderr, "stage 2/3 two") {
		t.Errorf("resume started the wrong stages:\n%s", r.stderr)
	}
	s := p.only()
	if s.Status != state.StatusCompleted || s.TaskStatus["slow"] != state.TaskDone {
		t.Errorf("status %s, slow %s; want completed, DONE", s.Status, s.TaskStatus["slow"])
	}
	if run := s.Runs["0"]; run == nil || run.Status != "done" {
		t.Errorf("run of stage one: %+v", run)
	}
	if n := s.Tasks["ok"].Attempts; n != 1 {
		t.Errorf("ok ran %d times in all, want 1", n)
	}
}
