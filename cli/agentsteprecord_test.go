package cli

import (
	"bytes"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vibeteam/vibeteam/core/state"
)

// v2AgentSession puts a project that the vibeteam of session format 2 left
// into p (testdata/v2agentsteps/<name>: its grimoire, files and sessions,
// the base dir written @BASE@ and the fake agent @AGENT@). That vibeteam
// kept an agent step's task record under tasks["name@address"].
func (p *project) v2AgentSession(name string) {
	p.t.Helper()
	src := filepath.Join("testdata", "v2agentsteps", name)
	err := filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		b = bytes.ReplaceAll(bytes.ReplaceAll(b, []byte("@BASE@"), []byte(p.dir)), []byte("@AGENT@"), []byte(fakeAgent))
		p.write(rel, string(b))
		return nil
	})
	if err != nil {
		p.t.Fatal(err)
	}
}

// utcExec runs the binary as exec does, its times shown in UTC (as the
// testdata's show was).
func (p *project) utcExec(args ...string) result {
	p.t.Helper()
	cmd := p.command(args...)
	cmd.Env = append(cmd.Env, "TZ=UTC")
	return runResult(p.t, cmd)
}

// wantNoStepTasks fails unless the session file keeps no agent step's task
// under tasks or taskStatus (the ids "name@address").
func wantNoStepTasks(t *testing.T, p *project, id string) {
	t.Helper()
	var raw struct {
		Version    int                        `json:"version"`
		Tasks      map[string]json.RawMessage `json:"tasks"`
		TaskStatus map[string]string          `json:"taskStatus"`
	}
	readJSON(t, state.NewManager(p.dir).SessionPath(id), &raw)
	if raw.Version != state.FormatVersion || len(raw.Tasks) != 0 || len(raw.TaskStatus) != 0 {
		t.Errorf("session file: version %d, tasks %v, taskStatus %v; want version %d and both empty", raw.Version, raw.Tasks, raw.TaskStatus, state.FormatVersion)
	}
}

// A session of format 2 parked at an agent's question in iteration 2 of a
// loop is read with each agent step's record in its run: show prints what
// that vibeteam printed, sessions --json too, and resume --answer
// continues the agent's own session there and completes the grimoire.
func TestV2AgentStepSessionAnsweredOnResume(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	p.v2AgentSession("question")
	const id = "5550d2aa"

	wantOldShow(t, p, id, "question")
	list := p.utcExec("sessions", "--json")
	wantCode(t, list, 0)
	if want := readFile(t, filepath.Join("testdata", "v2agentsteps", "question.sessions.json")); list.stdout != want {
		t.Errorf("sessions --json:\n%s\nwant:\n%s", list.stdout, want)
	}

	s := p.only()
	first, asked := s.Runs["1.1/0"], s.Runs["1.2/0"]
	if first == nil || first.Task == nil || first.Task.Status != state.TaskDone || first.Task.Agent == nil || first.Task.Agent.SessionID != "sess-one" {
		t.Fatalf("iteration 1's agent run: %+v", first)
	}
	if asked == nil || asked.Task == nil || asked.Task.Status != state.TaskWaitingForUser || asked.Task.Reason != "question" || asked.Task.Question == nil {
		t.Fatalf("iteration 2's agent run: %+v", asked)
	}
	if len(s.Tasks) != 0 || len(s.TaskStatus) != 0 {
		t.Errorf("left under tasks: %v, taskStatus: %v", s.Tasks, s.TaskStatus)
	}
	if got := s.WaitingFor("question"); len(got) != 1 || got[0] != "impl@1.2-0" {
		t.Errorf("waiting for an answer: %v", got)
	}

	r := p.exec("resume", id, "--answer", "SQLite")
	wantCode(t, r, 0)
	var argv struct{ Argv []string }
	readJSON(t, p.path("argv.json"), &argv)
	if got := strings.Join(argv.Argv[1:], " "); got != "record=argv.json --resume sess-q cat=continued.jsonl -- SQLite" {
		t.Errorf("the continued run's argv: %s", got)
	}
	for file, want := range map[string]int{"prep.t": 1, "after.t": 1} {
		if n := p.lines(file); n != want {
			t.Errorf("%s: ran %d time(s) in all, want %d\n%s", file, n, want, r.stderr)
		}
	}
	s = p.only()
	if s.Status != state.StatusCompleted {
		t.Fatalf("status %s: %s\n%s", s.Status, s.Error, r.stderr)
	}
	asked = s.Runs["1.2/0"]
	if rec := asked.Task; asked.Status != "done" || rec == nil || rec.Status != state.TaskDone || rec.Attempts != 2 || rec.Agent.Result == "" {
		t.Errorf("iteration 2's agent run after the answer: %+v (task %+v)", asked, asked.Task)
	}
	if asked.Summary != "used sqlite" || s.Runs["1.2/1"].Status != "done" {
		t.Errorf("summary %q; check %+v", asked.Summary, s.Runs["1.2/1"])
	}
	wantNoStepTasks(t, p, id)
}

// A session of format 2 killed (-9) in an agent step, its task's record in
// the journal only: show prints what that vibeteam printed, and resume runs
// the step again from its record (a second attempt) and completes.
func TestV2AgentStepSessionKilledResumes(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	p.v2AgentSession("killed")
	const id = "b89544e1"

	wantOldShow(t, p, id, "killed")
	s := p.only()
	if run := s.Runs["1"]; run == nil || run.Task == nil || run.Task.Status != state.TaskRunning || run.Task.Pid == 0 || run.Task.Attempts != 1 {
		t.Fatalf("the killed agent step's run: %+v", run)
	}

	p.write("go", "")
	r := p.exec("resume", id)
	wantCode(t, r, 0)
	for file, want := range map[string]int{"prep.t": 1, "impl.t": 2, "after.t": 1} {
		if n := p.lines(file); n != want {
			t.Errorf("%s: ran %d time(s) in all, want %d\n%s", file, n, want, r.stderr)
		}
	}
	s = p.only()
	run := s.Runs["1"]
	if s.Status != state.StatusCompleted || run.Status != "done" || run.Task == nil || run.Task.Status != state.TaskDone || run.Task.Attempts != 2 || run.Task.Agent.SessionID != "sess-k" {
		t.Errorf("status %s; the agent step's run %+v (task %+v)\n%s", s.Status, run, run.Task, r.stderr)
	}
	wantNoStepTasks(t, p, id)
}

// An agent step's task record is journaled with its run: vibeteam killed
// (-9) while the agent runs leaves a session whose run holds the running
// task, pid and all (nothing under tasks), so resume stops the agent it
// left behind and runs the step again as its second attempt.
func TestAgentStepRecordSurvivesAKill(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	continuingAdapter(p, false)
	fence := "```"
	p.write("done.jsonl", `{"type":"system","subtype":"init","session_id":"sess-k"}
{"type":"result","subtype":"success","is_error":false,"result":"Done.\n\n`+fence+`json\n{\"success\": true}\n`+fence+`","session_id":"sess-k"}
`)
	p.write("g.yaml", `name: slow
steps:
  - name: prep
    type: script
    command: echo prep >> prep.t
  - name: impl
    type: agent
    adapter: structured
    spell: |
      pidfile=impl.pid stamp=impl.t exec=test_-f_go_||_(touch_asleep_&&_sleep_60) cat=done.jsonl
`)
	cmd := p.command("run", "g.yaml")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var s *state.Session
	waitFor(t, func() bool {
		list, err := state.NewManager(p.dir).List()
		if err != nil || len(list) != 1 {
			return false
		}
		s = list[0]
		run := s.Runs["1"]
		return run != nil && run.Task != nil && run.Task.Status == state.TaskRunning && run.Task.Pid > 0
	})
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	if len(s.Tasks) != 0 || len(s.TaskStatus) != 0 {
		t.Errorf("an agent step's task kept under tasks %v, taskStatus %v", s.Tasks, s.TaskStatus)
	}
	// Asleep, past its look for "go": made before, it would finish, and
	// end on writing to the pipe of the killed vibeteam, before resume
	// could stop it.
	waitFor(t, func() bool { return p.exists("impl.pid") && p.exists("asleep") })
	agent := p.read("impl.pid")
	pidAlive(t, agent, true) // left running by the killed vibeteam

	p.write("go", "")
	r := p.exec("resume", s.ID, "--grace", "1s")
	wantCode(t, r, 0)
	pidAlive(t, agent, false)
	if n := countEvents(p.events(s.ID), "orphan_stopped"); n != 1 {
		t.Errorf("%d orphan_stopped events, want 1", n)
	}
	s = p.only()
	if run := s.Runs["1"]; run.Status != "done" || run.Task.Status != state.TaskDone || run.Task.Attempts != 2 || p.lines("impl.t") != 2 || p.lines("prep.t") != 1 {
		t.Errorf("after resume: run %+v, task %+v; impl ran %d time(s), prep %d\n%s", run, run.Task, p.lines("impl.t"), p.lines("prep.t"), r.stderr)
	}
	wantNoStepTasks(t, p, s.ID)
}

// resume --reload runs an agent step that had not finished as the edited
// grimoire says, afresh: not as the continuation of its agent's session
// (which a usage limit would otherwise make it), and the steps that
// finished keep their task records.
func TestReloadRunsAnUnfinishedAgentStepAfresh(t *testing.T) {
	t.Parallel()
	c := limitCases[0] // claude
	p := limitProject(t, c, 2*time.Hour)
	fence := "```"
	p.write("first.jsonl", `{"type":"system","subtype":"init","session_id":"sess-1"}
{"type":"result","subtype":"success","is_error":false,"result":"`+fence+`json\n{\"success\": true}\n`+fence+`","session_id":"sess-1","usage":{"input_tokens":7,"output_tokens":1}}
`)
	p.write("fresh.jsonl", `{"type":"system","subtype":"init","session_id":"sess-2"}
{"type":"result","subtype":"success","is_error":false,"result":"`+fence+`json\n{\"success\": true, \"summary\": \"afresh\"}\n`+fence+`","session_id":"sess-2"}
`)
	grimoire := func(spell string) string {
		return `name: reloaded
steps:
  - name: first
    type: agent
    adapter: claude
    spell: |
      cat=first.jsonl
  - name: impl
    type: agent
    adapter: claude
    spell: |
      ` + spell + "\n"
	}
	p.write("g.yaml", grimoire("cat=limited.jsonl exit=1"))
	r := p.exec("run", "g.yaml")
	wantCode(t, r, 3)
	s := p.only()
	if run := s.Runs["1"]; run == nil || run.Task == nil || run.Task.Status != state.TaskLimited {
		t.Fatalf("the limited step's run: %+v\n%s", run, r.stderr)
	}
	p.write("g.yaml", grimoire("cat=fresh.jsonl"))
	r = p.exec("resume", s.ID, "--reload")
	wantCode(t, r, 0)
	if argv := continuedArgv(t, p); strings.Contains(argv, "--resume") || !strings.Contains(argv, "cat=fresh.jsonl") {
		t.Errorf("the reloaded step ran as %s", argv)
	}
	s = p.only()
	if run := s.Runs["1"]; run.Summary != "afresh" || run.Task.Attempts != 1 || run.Task.Agent.SessionID != "sess-2" {
		t.Errorf("the reloaded step's run %+v, task %+v", run, run.Task)
	}
	if first := s.Runs["0"].Task; first == nil || first.Agent == nil || first.Agent.SessionID != "sess-1" {
		t.Errorf("the finished step's task record after the reload: %+v", first)
	}
}

// wantOldShow checks that show prints session id as the old vibeteam did
// (testdata/v2agentsteps/NAME.show).
func wantOldShow(t *testing.T, p *project, id, name string) {
	t.Helper()
	show := p.utcExec("show", id)
	wantCode(t, show, 0)
	golden := strings.ReplaceAll(readFile(t, filepath.Join("testdata", "v2agentsteps", name+".show")), "@BASE@", p.dir)
	if show.stdout != golden {
		t.Errorf("show of the old session:\n%s\nwant (as the old vibeteam printed it):\n%s", show.stdout, golden)
	}
}
