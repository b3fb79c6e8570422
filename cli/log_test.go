package cli

import (
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vibeteam/vibeteam/core/events"
	"github.com/vibeteam/vibeteam/core/state"
)

// logFixture is a base dir with one session, id, and its event log.
type logFixture struct {
	t    *testing.T
	dir  string
	id   string
	mgr  *state.Manager
	log  *state.EventLog
	at   time.Time // the time of the next event
	path string
}

func newLogFixture(t *testing.T, id string) *logFixture {
	t.Helper()
	dir := t.TempDir()
	mgr := state.NewManager(dir)
	if err := mgr.Save(&state.Session{ID: id, Workflow: "fix-bug", Status: state.StatusRunning}); err != nil {
		t.Fatal(err)
	}
	path := mgr.EventLogPath(id)
	l, err := state.OpenEventLog(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return &logFixture{t: t, dir: dir, id: id, mgr: mgr, log: l, path: path, at: time.Date(2026, 11, 23, 10, 0, 0, 0, time.Local)}
}

// emit appends one event, a second after the one before, written from its
// keys as any version (or a hand) might have.
func (f *logFixture) emit(typ, task string, fields map[string]any) {
	f.t.Helper()
	f.write(task, events.Other{Name: typ, Fields: fields})
}

func (f *logFixture) write(task string, p events.Payload) {
	f.t.Helper()
	f.at = f.at.Add(time.Second)
	if err := f.log.Write(state.Event{Time: f.at, Session: f.id, Task: task, Payload: p}); err != nil {
		f.t.Fatal(err)
	}
}

// step appends a grimoire event of kind typ, as this version writes it.
func (f *logFixture) step(typ string, p events.Payload) {
	f.t.Helper()
	if p.Kind() != typ {
		f.t.Fatalf("%T is %s, not %s", p, p.Kind(), typ)
	}
	f.write("", p)
}

// run runs the vibeteam binary on the fixture. (Not Main in-process: the
// commands share flag values that urfave/cli writes while parsing, so
// in-process runs must not overlap, and these tests run in parallel.)
func (f *logFixture) run(args ...string) result {
	f.t.Helper()
	return runResult(f.t, f.command(args...))
}

func (f *logFixture) command(args ...string) *exec.Cmd {
	cmd := exec.Command(vibeteam, append([]string{"--base-dir", f.dir}, args...)...)
	cmd.Dir = f.dir
	cmd.Env = append(os.Environ(), "NO_COLOR=1")
	return cmd
}

// untimed drops the time column of log's text output.
func untimed(t *testing.T, out string) string {
	t.Helper()
	var b strings.Builder
	for _, l := range strings.SplitAfter(out, "\n") {
		if l == "" {
			continue
		}
		if len(l) < 9 || l[2] != ':' && l[:9] != "         " {
			t.Fatalf("line without a time column: %q", l)
		}
		b.WriteString(l[9:])
	}
	return b.String()
}

// grimoireLog writes a grimoire that runs setup, then a loop of two
// iterations whose first has a failing test step, then blocks at review.
func grimoireLog(f *logFixture) {
	f.emit(events.SessionStarted, "", map[string]any{"workflow": "fix-bug", "pid": 42})
	f.step(events.WorkflowStarted, events.Started{Grimoire: "fix-bug", Source: "builtin:fix-bug", Bead: "vt-12", ID: f.id})
	f.step(events.WorkflowStepStarted, events.StepStarted{Name: "setup", Type: "script", Address: "0"})
	f.step(events.WorkflowStepCompleted, events.StepCompleted{Name: "setup", Type: "script", Address: "0", Status: "done", Success: true, DurationMS: 300})
	f.step(events.WorkflowStepStarted, events.StepStarted{Name: "fix", Type: "loop", Address: "1"})
	f.step(events.LoopIteration, events.Iteration{Loop: "fix", Address: "1.1", Iteration: 1, Max: 10})
	f.step(events.WorkflowStepStarted, events.StepStarted{Name: "tests", Type: "script", Address: "1.1/0", Iteration: 1})
	f.step(events.WorkflowStepCompleted, events.StepCompleted{Name: "tests", Type: "script", Address: "1.1/0", Iteration: 1, Status: "failed", ExitCode: 1,
		Output: "=== RUN TestA\nok\n--- FAIL: TestX \x1b]0;pwn\x07\nFAIL\n", Reason: "exit code 1", LogPath: "/l/tests.log", DurationMS: 1234})
	f.step(events.WorkflowStepStarted, events.StepStarted{Name: "coder", Type: "agent", Address: "1.1/1", Iteration: 1})
	f.emit(events.TaskStarted, "coder-1", map[string]any{"name": "coder", "adapter": "claude", "mode": "headless", "pid": 99})
	f.emit(events.TaskFinished, "coder-1", map[string]any{"status": "DONE", "reason": "exit", "exit_code": 0})
	f.step(events.WorkflowStepCompleted, events.StepCompleted{Name: "coder", Type: "agent", Address: "1.1/1", Iteration: 1, Status: "done", Success: true, Summary: "fixed TestX", DurationMS: 61000})
	f.step(events.LoopIteration, events.Iteration{Loop: "fix", Address: "1.2", Iteration: 2, Max: 10})
	f.step(events.WorkflowStepStarted, events.StepStarted{Name: "tests", Type: "script", Address: "1.2/0", Iteration: 2})
	f.step(events.WorkflowStepCompleted, events.StepCompleted{Name: "tests", Type: "script", Address: "1.2/0", Iteration: 2, Status: "done", Success: true, DurationMS: 900})
	f.step(events.WorkflowStepStarted, events.StepStarted{Name: "coder", Type: "agent", Address: "1.2/1", Iteration: 2})
	f.step(events.WorkflowStepCompleted, events.StepCompleted{Name: "coder", Type: "agent", Address: "1.2/1", Iteration: 2, Status: "skipped", Reason: "tests pass"})
	f.step(events.WorkflowStepCompleted, events.StepCompleted{Name: "fix", Type: "loop", Address: "1", Status: "done", Success: true, DurationMS: 65000})
	f.emit("future.thing", "", map[string]any{"n": 3, "what": "a b", "ok": true})
	f.step(events.WorkflowStepStarted, events.StepStarted{Name: "review", Type: "agent", Address: "2"})
	f.step(events.WorkflowStepCompleted, events.StepCompleted{Name: "review", Type: "agent", Address: "2", Status: "blocked", Reason: "timeout", DurationMS: 600000})
	f.step(events.WorkflowBlocked, events.Blocked{Reason: "timeout", Step: "review", Address: "2", Context: "looking at diff\nstill thinking\n"})
	f.emit(events.SessionFinished, "", map[string]any{"status": "blocked"})
}

const grimoireText = `session ID started: workflow fix-bug
grimoire fix-bug started (builtin:fix-bug), bead vt-12
  ✓ setup (script) 300ms exit 0
  ▸ fix (loop)
    iteration 1/10
      ✗ tests (script) 1.2s exit 1 failed: exit code 1
          | … (1 line(s) before)
          | ok
          | --- FAIL: TestX \x1b]0;pwn\a
          | FAIL
          log: /l/tests.log
      ▸ coder (agent)
        task coder (coder-1) started (claude, headless, pid 99)
        ✓ task coder (coder-1) DONE (exit 0) after 1s
      ✓ coder (agent) 1m1s — fixed TestX
    iteration 2/10
      ✓ tests (script) 900ms exit 0
      – coder (agent) skipped (tests pass)
  ✓ fix (loop) 1m5s
future.thing n=3 ok=true what="a b"
  ⊘ review (agent) 10m0s blocked: timeout
⊘ workflow blocked at review (2): timeout
  | looking at diff
  | still thinking
⊘ session ID finished: blocked
`

func TestLogGrimoireTree(t *testing.T) {
	t.Parallel()
	f := newLogFixture(t, "1a2b3c4d")
	grimoireLog(f)
	r := f.run("log", "1a2b")
	wantCode(t, r, 0)
	noControls(t, "log", r.stdout+r.stderr)
	if want := strings.ReplaceAll(grimoireText, "ID", f.id); untimed(t, r.stdout) != want {
		t.Errorf("log printed:\n%s\nwant:\n%s", untimed(t, r.stdout), want)
	}
	if !strings.HasPrefix(r.stdout, "10:00:01 session") {
		t.Errorf("the time column is not the events' local time:\n%s", r.stdout)
	}
	if r.stderr != "" {
		t.Errorf("stderr: %s", r.stderr)
	}
}

// A grimoire that went on past failed steps completed, but not cleanly.
func TestLogCompletedWithFailedSteps(t *testing.T) {
	t.Parallel()
	f := newLogFixture(t, "2b3c4d5e")
	f.step(events.WorkflowStepStarted, events.StepStarted{Name: "lint", Type: "script", Address: "0"})
	f.step(events.WorkflowStepCompleted, events.StepCompleted{Name: "lint", Type: "script", Address: "0", Status: "failed", ExitCode: 2, DurationMS: 100})
	f.step(events.WorkflowCompleted, events.Completed{DurationMS: 12345, Steps: 5, Failed: 2, Skipped: 1, FailedSteps: []string{"lint (0)", "tests (1.1/0)"}})
	r := f.run("log", f.id)
	wantCode(t, r, 0)
	out := untimed(t, r.stdout)
	if want := "! workflow completed with 2 failed step(s): lint (0), tests (1.1/0) (5 step(s), 1 skipped, 12.3s)\n"; !strings.HasSuffix(out, want) {
		t.Errorf("log printed:\n%s\nwant it to end with:\n%s", out, want)
	}
	if strings.Contains(out, "✓") {
		t.Errorf("a completion with failed steps shows as a success:\n%s", out)
	}
	if !strings.Contains(out, "  ✗ lint (script) 100ms exit 2 failed\n") {
		t.Errorf("no failed lint line:\n%s", out)
	}

	g := newLogFixture(t, "3c4d5e6f")
	g.step(events.WorkflowCompleted, events.Completed{DurationMS: 500, Steps: 1})
	r = g.run("log", g.id)
	wantCode(t, r, 0)
	if out := untimed(t, r.stdout); out != "✓ workflow completed (1 step(s), 500ms)\n" {
		t.Errorf("clean completion: %q", out)
	}
}

func TestLogStageWorkflow(t *testing.T) {
	t.Parallel()
	f := newLogFixture(t, "4d5e6f70")
	f.emit(events.SessionStarted, "", map[string]any{"workflow": "build"})
	f.emit(events.StageStarted, "", map[string]any{"stage": "code", "index": 0, "tasks": 2})
	f.emit(events.TaskStatus, "a", map[string]any{"status": "RUNNING"})
	f.emit(events.TaskStarted, "a", map[string]any{"name": "Coder", "adapter": "fake", "mode": "interactive", "pid": 7})
	// Noise: the derived session state (IDLE while a task still runs)
	// and a screen no state names are not printed.
	f.emit(events.SessionState, "", map[string]any{"state": "IDLE"})
	f.emit(events.StateSeen, "a", map[string]any{"state": "", "seq": 1})
	f.emit(events.TaskStatus, "a", map[string]any{"status": "WAITING_FOR_USER", "reason": "interaction_menu"})
	f.emit(events.TaskStatus, "a", map[string]any{"status": "RUNNING", "reason": "answered"})
	f.emit(events.TaskStatus, "a", map[string]any{"status": "ERROR", "reason": "exit"})
	f.emit(events.TaskFinished, "a", map[string]any{"status": "ERROR", "reason": "exit", "exit_code": 1, "error": "exit code 1"})
	f.emit(events.TaskStarted, "b", map[string]any{"adapter": "fake", "mode": "headless", "pid": 8})
	f.emit(events.TaskStatus, "b", map[string]any{"status": "PENDING", "reason": "stopped"})
	f.emit(events.TaskFinished, "b", map[string]any{"status": "PENDING", "reason": "stopped", "exit_code": 0})
	f.emit(events.StageCompleted, "", map[string]any{"stage": "code", "index": 0})
	f.emit(events.SessionFinished, "", map[string]any{"status": "failed", "failedTask": "a", "reason": "exit code 1"})
	r := f.run("log", f.id)
	wantCode(t, r, 0)
	want := `session 4d5e6f70 started: workflow build
stage 1 code: 2 task(s)
task Coder (a) started (fake, interactive, pid 7)
task Coder (a): WAITING_FOR_USER (interaction_menu)
task Coder (a): RUNNING (answered)
✗ task Coder (a) ERROR (exit 1) after 6s: exit code 1
task b started (fake, headless, pid 8)
■ task b stopped (it runs again on resume) after 2s
✓ stage code done
✗ session 4d5e6f70 finished: failed (task Coder (a): exit code 1)
`
	if got := untimed(t, r.stdout); got != want {
		t.Errorf("log printed:\n%s\nwant:\n%s", got, want)
	}
}

// A log written by an older version (task_finished's exit code spelt
// "exitCode") reads as one of today's; a line whose fields do not fit its
// kind is shown as it is rather than dropped.
func TestLogReadsOldLines(t *testing.T) {
	t.Parallel()
	f := newLogFixture(t, "5e6f7081")
	f.emit(events.TaskStarted, "a", map[string]any{"name": "a", "adapter": "shell", "mode": "headless", "pid": 7})
	f.emit(events.TaskFinished, "a", map[string]any{"status": "ERROR", "reason": "exit", "exitCode": 3})
	f.emit(events.StageStarted, "", map[string]any{"stage": "x", "index": "first"})
	r := f.run("log", f.id)
	wantCode(t, r, 0)
	want := `task a started (shell, headless, pid 7)
✗ task a ERROR (exit 3) after 1s
stage_started index=first stage=x
`
	if got := untimed(t, r.stdout); got != want {
		t.Errorf("log printed:\n%s\nwant:\n%s", got, want)
	}
}

// --json prints the lines as they are; a last line still being written is
// not printed by either form.
func TestLogJSONIsTheRawLines(t *testing.T) {
	t.Parallel()
	f := newLogFixture(t, "5e6f7081")
	grimoireLog(f)
	whole, err := os.ReadFile(f.path)
	if err != nil {
		t.Fatal(err)
	}
	fh, err := os.OpenFile(f.path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fh.WriteString(`{"time":"2026-11-23T10:00:00Z","event":"sess`); err != nil {
		t.Fatal(err)
	}
	fh.Close()
	r := f.run("log", "--json", f.id)
	wantCode(t, r, 0)
	if r.stdout != string(whole) {
		t.Errorf("--json printed:\n%s\nthe file holds:\n%s", r.stdout, whole)
	}
	if !strings.Contains(r.stderr, "last line is incomplete") {
		t.Errorf("the cut line is not mentioned: %q", r.stderr)
	}
	r = f.run("log", f.id)
	wantCode(t, r, 0)
	if got := untimed(t, r.stdout); got != strings.ReplaceAll(grimoireText, "ID", f.id) {
		t.Errorf("log with a cut last line printed:\n%s", got)
	}
}

// startLog runs log in the background; done yields its exit code.
func startLog(t *testing.T, f *logFixture, args ...string) (*syncBuffer, chan int) {
	t.Helper()
	cmd := f.command(args...)
	out := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	done := make(chan int, 1)
	go func() {
		err := cmd.Wait()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			code = -1
		}
		done <- code
	}()
	return out, done
}

func waitLogExit(t *testing.T, done chan int, out *syncBuffer) int {
	t.Helper()
	select {
	case code := <-done:
		return code
	case <-time.After(15 * time.Second):
		t.Fatalf("log -f did not return:\n%s", out.String())
	}
	return -1
}

// -f prints what is there, then what comes, a line only once it is whole,
// and returns at the end of the session.
func TestLogFollow(t *testing.T) {
	t.Parallel()
	f := newLogFixture(t, "6f708192")
	lock, err := f.mgr.Lock(f.id)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Release()
	f.emit(events.SessionStarted, "", map[string]any{"workflow": "fix-bug"})
	out, done := startLog(t, f, "log", f.id, "-f")
	waitFor(t, func() bool { return strings.Contains(out.String(), "session 6f708192 started") })

	f.step(events.WorkflowStepStarted, events.StepStarted{Name: "tests", Type: "script", Address: "0"})
	waitFor(t, func() bool { return strings.Contains(out.String(), "▸ tests (script) …") })
	f.step(events.WorkflowStepCompleted, events.StepCompleted{Name: "tests", Type: "script", Address: "0", Status: "done", DurationMS: 50})
	waitFor(t, func() bool { return strings.Contains(out.String(), "✓ tests (script) 50ms exit 0") })

	// A line written in two parts shows once it is whole.
	fh, err := os.OpenFile(f.path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	if _, err := fh.WriteString(`{"time":"2026-11-23T10:00:09Z","event":"err`); err != nil {
		t.Fatal(err)
	}
	// log -f polls every 100ms: it sees the half line before the rest.
	before := out.String()
	deadline := time.Now().Add(300 * time.Millisecond)
	for time.Now().Before(deadline) {
		if out.String() != before {
			t.Fatalf("printed part of a line:\n%s", out.String())
		}
		select {
		case code := <-done:
			t.Fatalf("log -f returned %d before the session finished:\n%s", code, out.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
	if _, err := fh.WriteString(`or","session":"6f708192","error":"boom"}` + "\n"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return strings.Contains(out.String(), "error: boom") })
	f.emit(events.SessionFinished, "", map[string]any{"status": "completed"})
	if code := waitLogExit(t, done, out); code != 0 {
		t.Fatalf("exit %d:\n%s", code, out.String())
	}
	if got := out.String(); !strings.HasSuffix(got, "✓ session 6f708192 finished: completed\n") || strings.Count(got, "\n") != 5 {
		t.Errorf("log -f printed:\n%s", got)
	}
}

// -f also returns when the session's vibeteam is gone without a
// session_finished (killed), after the last lines it wrote.
func TestLogFollowEndsWhenTheSessionStopsRunning(t *testing.T) {
	t.Parallel()
	f := newLogFixture(t, "708192a3")
	lock, err := f.mgr.Lock(f.id)
	if err != nil {
		t.Fatal(err)
	}
	f.emit(events.SessionStarted, "", map[string]any{"workflow": "fix-bug"})
	out, done := startLog(t, f, "log", "--follow", f.id)
	waitFor(t, func() bool { return strings.Contains(out.String(), "started") })
	f.emit(events.Error, "", map[string]any{"error": "last words"})
	if err := lock.Release(); err != nil {
		t.Fatal(err)
	}
	if code := waitLogExit(t, done, out); code != 0 {
		t.Fatalf("exit %d:\n%s", code, out.String())
	}
	if !strings.Contains(out.String(), "error: last words") {
		t.Errorf("the last line was not printed:\n%s", out.String())
	}
}

// An interrupt stops following with the signal's exit code.
func TestLogFollowInterrupted(t *testing.T) {
	t.Parallel()
	f := newLogFixture(t, "8192a3b4")
	lock, err := f.mgr.Lock(f.id)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Release()
	f.emit(events.SessionStarted, "", map[string]any{"workflow": "fix-bug"})
	cmd := f.command("log", "-f", f.id)
	out := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill() }()
	waitFor(t, func() bool { return strings.Contains(out.String(), "started") })
	_ = cmd.Process.Signal(syscall.SIGINT)
	err = cmd.Wait()
	ee, ok := err.(*exec.ExitError)
	if !ok || ee.ExitCode() != ExitInterrupted {
		t.Fatalf("log -f after SIGINT: %v\n%s", err, out.String())
	}
	if got := out.String(); strings.Count(got, "\n") != 1 {
		t.Errorf("output after SIGINT:\n%s", got)
	}
}

func TestLogErrors(t *testing.T) {
	t.Parallel()
	f := newLogFixture(t, "92a3b4c5")
	args := []string{"log", "zzzz"}
	wantUsage(t, args, f.run(args...), `no session "zzzz"`)
	args = []string{"log", "92a3b4c6"}
	wantUsage(t, args, f.run(args...), `no session "92a3b4c6"; nearest: 92a3b4c5`)
	args = []string{"log"}
	wantUsage(t, args, f.run(args...), "log needs a session id")

	// A session whose log was never written.
	if err := f.mgr.Save(&state.Session{ID: "a3b4c5d6", Workflow: "x", Status: state.StatusFailed}); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"log", "a3b4"}, {"log", "-f", "a3b4"}} {
		r := f.run(args...)
		if r.code != ExitFailed || !strings.Contains(r.stderr, "session a3b4c5d6 has no event log yet") || r.stdout != "" {
			t.Errorf("%v: exit %d\nstdout: %s\nstderr: %s", args, r.code, r.stdout, r.stderr)
		}
	}
}

// A line that is not an event is shown, not skipped.
func TestLogMalformedLine(t *testing.T) {
	t.Parallel()
	f := newLogFixture(t, "b4c5d6e7")
	f.emit(events.Error, "", map[string]any{"error": "one"})
	fh, err := os.OpenFile(f.path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = fh.WriteString("not json \x1b[2J\n")
	fh.Close()
	f.emit(events.Error, "", map[string]any{"error": "two"})
	r := f.run("log", f.id)
	wantCode(t, r, 0)
	noControls(t, "log", r.stdout)
	if want := "error: one\n(line 2 is not an event: not json \\x1b[2J)\nerror: two\n"; untimed(t, r.stdout) != want {
		t.Errorf("log printed:\n%s", r.stdout)
	}
}

// The shell completes log's argument with session ids, and its flags.
func TestLogCompletion(t *testing.T) {
	t.Parallel()
	f := newLogFixture(t, "c5d6e7f8")
	env := []string{"VIBETEAM_BASE_DIR=" + f.dir}
	if got := completeIn(t, f.dir, env, "log", "c5"); len(got) != 1 || got[0] != f.id {
		t.Errorf("log c5 completes to %q", got)
	}
	got := completeIn(t, f.dir, env, "log", "--")
	for _, want := range []string{"--follow", "--json", "--base-dir"} {
		if !slices.Contains(got, want) {
			t.Errorf("log -- completions %q lack %s", got, want)
		}
	}
}
