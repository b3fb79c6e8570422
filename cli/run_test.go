package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vibeteam/vibeteam/core/state"
)

func TestStagesRunInOrderAndTasksInParallel(t *testing.T) {
	p := newProject(t)
	p.write("wf.yaml", `id: par
stages:
  - id: one
    tasks:
      - { id: a, adapter: fake, executionMode: headless, prompt: "stamp=a.t sleep=400ms stamp=a.t" }
      - { id: b, adapter: fake, executionMode: headless, prompt: "stamp=b.t sleep=400ms stamp=b.t" }
  - id: two
    tasks:
      - { id: c, adapter: fake, executionMode: headless, prompt: "stamp=c.t" }
`)
	r := p.run("run", "wf.yaml")
	wantCode(t, r, 0)
	a, b, c := p.stamps("a.t"), p.stamps("b.t"), p.stamps("c.t")
	if !(a[0].Before(b[1]) && b[0].Before(a[1])) {
		t.Errorf("tasks of a stage did not overlap: a %v..%v, b %v..%v", a[0], a[1], b[0], b[1])
	}
	if !(c[0].After(a[1]) && c[0].After(b[1])) {
		t.Errorf("stage two started before stage one ended")
	}
	s := p.only()
	if s.Status != state.StatusCompleted {
		t.Errorf("status %s, want completed", s.Status)
	}
	for _, id := range []string{"a", "b", "c"} {
		if s.TaskStatus[id] != state.TaskDone {
			t.Errorf("task %s is %s, want DONE", id, s.TaskStatus[id])
		}
	}
	if s.WorkflowDefinition == nil || len(s.WorkflowDefinition.Stages()) != 2 {
		t.Errorf("session does not hold the full definition: %+v", s.WorkflowDefinition)
	}
	fi, err := os.Stat(state.NewManager(p.dir).SessionPath(s.ID))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("session file mode %v, %v; want 0600", fi.Mode().Perm(), err)
	}
}

func TestFailingTaskStopsTheRun(t *testing.T) {
	p := newProject(t)
	p.write("wf.yaml", `id: fail
stages:
  - id: one
    tasks:
      - { id: slow, adapter: fake, executionMode: headless, prompt: "pidfile=slow.pid sleep=30s" }
      - { id: bad, adapter: fake, executionMode: headless, prompt: "print=compiling print=oh_no_it_broke sleep=200ms exit=3" }
  - id: two
    tasks:
      - { id: never, adapter: fake, executionMode: headless, prompt: "stamp=never.t" }
`)
	start := time.Now()
	r := p.run("run", "wf.yaml")
	wantCode(t, r, 1)
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("run took %s; the failure should stop the slow sibling at once", d)
	}
	for _, want := range []string{"bad", "exit code 3", "oh no it broke"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("stderr does not say %q:\n%s", want, r.stderr)
		}
	}
	s := p.only()
	if s.Status != state.StatusFailed || s.TaskStatus["bad"] != state.TaskError {
		t.Errorf("status %s, bad %s; want failed, ERROR", s.Status, s.TaskStatus["bad"])
	}
	if s.TaskStatus["slow"] == state.TaskDone || s.TaskStatus["never"] != state.TaskPending {
		t.Errorf("slow %s, never %s; want not DONE, PENDING", s.TaskStatus["slow"], s.TaskStatus["never"])
	}
	if code := s.Tasks["bad"].ExitCode; code == nil || *code != 3 {
		t.Errorf("recorded exit code %v, want 3", code)
	}
	if p.exists("never.t") {
		t.Error("the next stage ran after a failure")
	}
	pidAlive(t, p.read("slow.pid"), false)
}

func TestResumeSkipsDoneTasks(t *testing.T) {
	p := newProject(t)
	p.write("wf.yaml", `id: resume
stages:
  - id: one
    tasks:
      - { id: first, adapter: fake, executionMode: headless, prompt: "stamp=first.t" }
  - id: two
    tasks:
      - { id: ok, adapter: fake, executionMode: headless, prompt: "stamp=ok.t" }
      - { id: needs, adapter: fake, executionMode: headless, prompt: "require=fixed stamp=needs.t" }
`)
	// --keep-going: ok is DONE however fast needs fails, instead of being
	// stopped (and then rightly run again) when needs fails first.
	wantCode(t, p.run("run", "wf.yaml", "--keep-going"), 1)
	s := p.only()
	if s.CurrentStageIndex != 1 {
		t.Fatalf("currentStageIndex %d, want 1", s.CurrentStageIndex)
	}
	p.write("fixed", "")
	r := p.run("resume", s.ID)
	wantCode(t, r, 0)
	if n := len(p.stamps("first.t")); n != 1 {
		t.Errorf("stage one ran %d times, want 1", n)
	}
	if n := len(p.stamps("ok.t")); n != 1 {
		t.Errorf("the DONE task of stage two ran %d times, want 1 (skipped on resume)", n)
	}
	if n := len(p.stamps("needs.t")); n != 1 {
		t.Errorf("the failed task ran to the end %d times, want 1", n)
	}
	s = p.only()
	if s.Status != state.StatusCompleted {
		t.Errorf("status %s after resume", s.Status)
	}
	r = p.run("resume", s.ID)
	wantCode(t, r, 0)
	if !strings.Contains(r.stderr, "already completed") {
		t.Errorf("resume of a completed session says: %s", r.stderr)
	}
}

func TestResumeUnknownIDListsNearest(t *testing.T) {
	p := newProject(t)
	p.write("wf.yaml", "id: x\nstages:\n  - id: s\n    tasks:\n      - { id: a, adapter: fake, executionMode: headless, prompt: print=hi }\n")
	wantCode(t, p.run("run", "wf.yaml"), 0)
	id := p.only().ID
	r := p.run("resume", id[:4]+"zzzz")
	wantCode(t, r, 2)
	if !strings.Contains(r.stderr, id) {
		t.Errorf("unknown id error does not list %s: %s", id, r.stderr)
	}
}

func TestArgvOrderInjectArgsEnvAndCwd(t *testing.T) {
	p := newProject(t)
	if err := os.MkdirAll(p.path("sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	p.write("wf.yaml", `id: argv
stages:
  - id: s
    tasks:
      - id: a
        adapter: fake
        executionMode: headless
        extraArgs: ["--extra", "1"]
        cwd: sub
        env: { FAKE_TASK: alpha }
        prompt: "record=rec.json"
      - id: b
        name: Bee
        adapter: fake
        executionMode: headless
        env: { FAKE_TASK: beta }
        prompt: "record=rec-b.json"
`)
	wantCode(t, p.run("run", "wf.yaml", "--auto-approve"), 0)
	var rec struct {
		Argv []string `json:"argv"`
		Env  []string `json:"env"`
		Cwd  string   `json:"cwd"`
	}
	readJSON(t, p.path("sub/rec.json"), &rec)
	want := []string{fakeAgent, "--mode=headless", "--extra", "1", "--injected", "yes", "record=rec.json"}
	if strings.Join(rec.Argv, "|") != strings.Join(want, "|") {
		t.Errorf("argv\n got %q\nwant %q", rec.Argv, want)
	}
	if real, _ := filepath.EvalSymlinks(p.path("sub")); rec.Cwd != real && rec.Cwd != p.path("sub") {
		t.Errorf("cwd %s, want %s", rec.Cwd, p.path("sub"))
	}
	if !contains(rec.Env, "FAKE_TASK=alpha") {
		t.Errorf("task env not passed")
	}
	readJSON(t, p.path("rec-b.json"), &rec)
	if !contains(rec.Env, "FAKE_TASK=beta") || contains(rec.Env, "FAKE_TASK=alpha") {
		t.Errorf("parallel tasks share adapter env")
	}
	// Without --auto-approve nothing is injected.
	p2 := newProject(t)
	p2.write("wf.yaml", "id: x\nstages:\n  - id: s\n    tasks:\n      - { id: a, adapter: fake, executionMode: headless, prompt: record=r.json }\n")
	wantCode(t, p2.run("run", "wf.yaml"), 0)
	readJSON(t, p2.path("r.json"), &rec)
	if contains(rec.Argv, "--injected") {
		t.Errorf("injectArgs added without --auto-approve: %q", rec.Argv)
	}
	// Names: the display name defaults to the id.
	names := map[string]string{}
	for _, e := range p.events(p.only().ID) {
		if e.Kind() == "task_started" {
			names[e.Task] = e.Fields()["name"].(string)
		}
	}
	if names["a"] != "a" || names["b"] != "Bee" {
		t.Errorf("task names %v, want a→a, b→Bee", names)
	}
}

func TestHeadlessQueueGoesToStdinThenEOF(t *testing.T) {
	p := newProject(t)
	p.write("wf.yaml", `id: stdin
stages:
  - id: s
    tasks:
      - { id: a, adapter: fake, executionMode: headless, prompt: "stdin record=r.json", pendingInputs: ["one", "two"] }
`)
	wantCode(t, p.run("run", "wf.yaml"), 0)
	var rec struct{ Stdin string }
	readJSON(t, p.path("r.json"), &rec)
	if rec.Stdin != "one\ntwo\n" {
		t.Errorf("stdin %q, want the queue then EOF", rec.Stdin)
	}
	s := p.only()
	if len(s.Tasks["a"].PendingInputs) != 0 {
		t.Errorf("queue not emptied in the session: %v", s.Tasks["a"].PendingInputs)
	}
	var prompts, inputs int
	for _, h := range s.History {
		switch h.Kind {
		case "prompt":
			prompts++
		case "input":
			inputs++
		}
	}
	if prompts != 1 || inputs != 2 {
		t.Errorf("history has %d prompts and %d inputs, want 1 and 2", prompts, inputs)
	}
}

func TestTemplatesAndMissingVariable(t *testing.T) {
	p := newProject(t)
	p.write("wf.yaml", `id: tmpl
goal: ship_it
stages:
  - id: s
    tasks:
      - { id: a, adapter: fake, executionMode: headless, prompt: "write=out.txt:{{.target}}-{{.goal}}" }
`)
	r := p.run("run", "wf.yaml")
	wantCode(t, r, 2)
	if !strings.Contains(r.stderr, `"target"`) {
		t.Errorf("missing variable not named: %s", r.stderr)
	}
	if len(p.sessions()) != 0 {
		t.Errorf("a session was created for an invalid run")
	}
	wantCode(t, p.run("run", "wf.yaml", "--set", "target=web"), 0)
	if got := p.read("out.txt"); got != "web-ship it" {
		t.Errorf("rendered %q", got)
	}
}

func TestNamedWorkflowLookup(t *testing.T) {
	p := newProject(t)
	p.write(".vibeteam/workflows/review.yml", "id: review\nstages:\n  - id: s\n    tasks:\n      - { id: a, adapter: fake, executionMode: headless, prompt: stamp=r.t }\n")
	wantCode(t, p.run("run", "review"), 0)
	if len(p.stamps("r.t")) != 1 {
		t.Error("named workflow did not run")
	}
	r := p.run("run", "nope")
	wantCode(t, r, 2)
	if !strings.Contains(r.stderr, "review.yaml") && !strings.Contains(r.stderr, "nope") {
		t.Errorf("not-found error: %s", r.stderr)
	}
}

func TestTimeoutIsAnError(t *testing.T) {
	p := newProject(t)
	p.write("wf.yaml", `id: to
stages:
  - id: s
    tasks:
      - { id: a, adapter: fake, executionMode: headless, prompt: "sleep=30s", timeout: 300ms }
`)
	r := p.run("run", "wf.yaml", "--grace", "1s")
	wantCode(t, r, 1)
	s := p.only()
	if s.TaskStatus["a"] != state.TaskError || s.Tasks["a"].Reason != "timeout" {
		t.Errorf("status %s reason %q, want ERROR timeout", s.TaskStatus["a"], s.Tasks["a"].Reason)
	}
}

func TestValidateReportsEveryProblemWithPosition(t *testing.T) {
	p := newProject(t)
	p.write("bad.yaml", `id: bad
stages:
  - id: s
    tasks:
      - id: a
        adapter: nosuch
        promt: hi
      - id: a
        adapter: fake
        executionMode: headless
`)
	r := p.run("validate", "bad.yaml")
	wantCode(t, r, 2)
	for _, want := range []string{"bad.yaml:6:18", `unknown adapter "nosuch"`, "fake", "bad.yaml:7:9", `did you mean "prompt"`, `duplicate task id "a"`, "headless task needs a prompt"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("validate output lacks %q:\n%s", want, r.stderr)
		}
	}
	p.write("broken.json", "{\"id\": \"x\",\n \"stages\": [\n}")
	r = p.run("validate", "broken.json")
	wantCode(t, r, 2)
	if !strings.Contains(r.stderr, "broken.json:") {
		t.Errorf("malformed JSON error lacks the file: %s", r.stderr)
	}
	r = p.run("run", "bad.yaml")
	wantCode(t, r, 2)
	p.write("ok.yaml", "id: ok\nstages:\n  - id: s\n    tasks:\n      - { id: a, adapter: fake }\n")
	wantCode(t, p.run("validate", "ok.yaml"), 0)
	r = p.run("validate", "--headless", "ok.yaml")
	wantCode(t, r, 2)
	if !strings.Contains(r.stderr, "--headless") {
		t.Errorf("--headless without a prompt does not say why: %s", r.stderr)
	}
}

func TestSessionsShowAndAdaptersCommands(t *testing.T) {
	p := newProject(t)
	p.write("wf.yaml", "id: listme\ngoal: list me\nstages:\n  - id: s\n    tasks:\n      - { id: a, adapter: fake, executionMode: headless, prompt: \"flood=2000 print=visible_tail\" }\n") // more than its tail: a log file
	wantCode(t, p.run("run", "wf.yaml"), 0)
	r := p.run("sessions", "--json")
	wantCode(t, r, 0)
	var rows []map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &rows); err != nil {
		t.Fatalf("sessions --json: %v\n%s", err, r.stdout)
	}
	if len(rows) != 1 || rows[0]["workflow"] != "listme" || rows[0]["status"] != "completed" || rows[0]["running"] != false || rows[0]["goal"] != "list me" {
		t.Errorf("sessions --json rows: %v", rows)
	}
	id := rows[0]["id"].(string)
	r = p.run("show", id)
	wantCode(t, r, 0)
	for _, want := range []string{id, "listme", "completed", "exit 0", "visible tail", ".log"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("show lacks %q:\n%s", want, r.stdout)
		}
	}
	r = p.run("adapters", "--json")
	wantCode(t, r, 0)
	var ads []map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &ads); err != nil {
		t.Fatal(err)
	}
	found := map[string]map[string]any{}
	for _, a := range ads {
		found[a["name"].(string)] = a
	}
	for _, n := range []string{"claude", "codex", "gemini", "opencode", "shell", "fake"} {
		if found[n] == nil {
			t.Errorf("adapters lacks %s", n)
		}
	}
	if f := found["fake"]; f != nil && (f["onPath"] != true || !strings.HasSuffix(f["source"].(string), "fake.yaml")) {
		t.Errorf("fake adapter row %v", f)
	}
}

func TestPruneKeepsNewestSessions(t *testing.T) {
	p := newProject(t)
	p.write("wf.yaml", "id: x\nstages:\n  - id: s\n    tasks:\n      - { id: a, adapter: fake, executionMode: headless, prompt: print=hi }\n")
	for i := 0; i < 4; i++ {
		wantCode(t, p.run("run", "wf.yaml", "--keep-sessions", "2"), 0)
	}
	if n := len(p.sessions()); n != 2 {
		t.Errorf("%d sessions kept, want 2", n)
	}
}

func TestEventsToStdout(t *testing.T) {
	p := newProject(t)
	p.write("wf.yaml", "id: x\nstages:\n  - id: s\n    tasks:\n      - { id: a, adapter: fake, executionMode: headless, prompt: print=hi }\n")
	r := p.run("run", "wf.yaml", "--events", "-")
	wantCode(t, r, 0)
	types := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("not JSONL: %q", line)
		}
		if m["time"] == nil || m["session"] == nil {
			t.Errorf("event lacks time/session: %v", m)
		}
		types[m["event"].(string)] = true
	}
	for _, want := range []string{"session_started", "stage_started", "task_started", "task_output", "task_finished", "session_state", "session_finished"} {
		if !types[want] {
			t.Errorf("no %s event in %v", want, types)
		}
	}
}

func TestDemoRunsWithoutAgents(t *testing.T) {
	p := newProject(t)
	r := p.run("run", "demo")
	wantCode(t, r, 0)
	if !p.exists(".vibeteam/demo/index.html") || !p.exists(".vibeteam/demo/server.txt") {
		t.Error("demo did not write its files")
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// pidAlive checks whether the process whose pid is in text is alive.
func pidAlive(t *testing.T, text string, want bool) {
	t.Helper()
	var pid int
	for _, c := range strings.TrimSpace(text) {
		pid = pid*10 + int(c-'0')
	}
	deadline := time.Now().Add(3 * time.Second)
	for {
		alive := processAlive(pid)
		if alive == want || time.Now().After(deadline) {
			if alive != want {
				t.Errorf("pid %d alive=%v, want %v", pid, alive, want)
			}
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// processAlive treats zombies as dead: in a container nobody may reap an
// orphan that was killed.
func processAlive(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return false
	}
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
		return s[i+2] != 'Z'
	}
	return true
}

// A task that exits 0 when told to stop is stopped, not DONE.
func TestStoppedTaskIsNotDoneEvenIfItExitsZero(t *testing.T) {
	p := newProject(t)
	p.write("wf.yaml", `id: g
stages:
  - id: s
    tasks:
      - { id: graceful, adapter: shell, executionMode: headless, prompt: "trap 'exit 0' TERM; sleep 30 & wait" }
      - { id: bad, adapter: fake, executionMode: headless, prompt: "sleep=300ms exit=2" }
`)
	wantCode(t, p.run("run", "wf.yaml", "--grace", "2s"), 1)
	s := p.only()
	if s.TaskStatus["graceful"] == state.TaskDone {
		t.Errorf("a task stopped by the failure of its sibling was recorded DONE")
	}
}

// A headless queue larger than the pipe buffer does not block timeouts.
func TestLargeHeadlessQueueDoesNotBlock(t *testing.T) {
	p := newProject(t)
	big := strings.Repeat("x", 200<<10)
	p.write("wf.yaml", "id: big\nstages:\n  - id: s\n    tasks:\n      - { id: a, adapter: fake, executionMode: headless, prompt: \"sleep=30s\", timeout: 1s, pendingInputs: [\""+big+"\"] }\n")
	start := time.Now()
	r := p.run("run", "wf.yaml", "--grace", "500ms")
	wantCode(t, r, 1)
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("took %s; the queue writer blocked the timeout", d)
	}
	if s := p.only(); s.Tasks["a"].Reason != "timeout" {
		t.Errorf("reason %q", s.Tasks["a"].Reason)
	}
}

// The task whose failure began first is named, not the first to finish.
func TestFirstFailureIsNamed(t *testing.T) {
	p := newProject(t)
	p.write("wf.yaml", `id: f
stages:
  - id: s
    tasks:
      - { id: first, adapter: fake, executionMode: headless, prompt: "ignoreterm sleep=30s", timeout: 300ms }
      - { id: second, adapter: fake, executionMode: headless, prompt: "sleep=30s", timeout: 4s }
`)
	r := p.run("run", "wf.yaml", "--grace", "5s")
	wantCode(t, r, 1)
	if !strings.Contains(r.stderr, "task first failed") {
		t.Errorf("stderr names the wrong task:\n%s", r.stderr)
	}
}

func TestValidateCatchesWhatWouldFailAtStart(t *testing.T) {
	p := newProject(t)
	p.write("wf.yaml", `id: v
stages:
  - id: s
    tasks:
      - { id: a, adapter: tui, executionMode: headless, prompt: "x" }
      - { id: b, adapter: fake, executionMode: headless, prompt: "{{.nope" }
      - { id: c, adapter: fake, executionMode: headless, prompt: "x", inactivityTimeout: -1s }
`)
	r := p.run("validate", "wf.yaml")
	wantCode(t, r, 2)
	for _, want := range []string{`wf.yaml:5:47: stages[0].tasks[0].adapter: adapter "tui" has no headless mode`, "wf.yaml:6:66: stages[0].tasks[1].prompt: template line 1: unclosed action", "inactivityTimeout"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("validate lacks %q:\n%s", want, r.stderr)
		}
	}
	p.write("ok.yaml", "id: ok\nstages:\n  - id: s\n    tasks:\n      - { id: a, adapter: tui, prompt: x }\n")
	r = p.run("validate", "--headless", "ok.yaml")
	if r.code != 2 || !strings.Contains(r.stderr, "--headless") || !strings.Contains(r.stderr, "no headless mode") {
		t.Errorf("--headless on an interactive-only adapter: %d\n%s", r.code, r.stderr)
	}
}

func TestValidateRejectsAQueueNothingWouldSend(t *testing.T) {
	p := newProject(t)
	p.write("wf.yaml", "id: q\nstages:\n  - id: s\n    tasks:\n      - { id: a, adapter: shell, prompt: \"cat\", pendingInputs: [\"x\"] }\n")
	r := p.run("validate", "wf.yaml")
	wantCode(t, r, 2)
	if !strings.Contains(r.stderr, "wf.yaml:5:") || !strings.Contains(r.stderr, "would never be sent") {
		t.Errorf("validate:\n%s", r.stderr)
	}
}
