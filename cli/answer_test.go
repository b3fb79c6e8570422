package cli

import (
	"fmt"
	"os/exec"
	"runtime"
	"strings"
	"syscall"
	"testing"

	"github.com/vibeteam/vibeteam/core/state"
)

// cpuHog keeps every core busy for the rest of the test, as a loaded CI
// machine does: answers must not depend on the TUI redrawing in time.
func cpuHog(t *testing.T) {
	t.Helper()
	for i := 0; i < runtime.NumCPU(); i++ {
		cmd := exec.Command("sh", "-c", "while :; do :; done")
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			_ = cmd.Wait()
		})
	}
}

// lineAdapter installs an adapter for fakeline whose question pattern is
// the naive one: it matches every old, answered question in the
// scrollback too.
func lineAdapter(p *project, args ...string) {
	quoted := make([]string, len(args))
	for i, a := range args {
		quoted[i] = fmt.Sprintf("%q", a)
	}
	p.write(".vibeteam/adapters/line.yaml", fmt.Sprintf(`name: line
command: %s
modes:
  interactive:
    args: [-record, rec.txt, %s]
    prompt: { position: none }
quietPeriod: 100ms
states:
  - { name: interaction_confirm, pattern: 'Proceed\? \(y/n\)' }
  - { name: interaction_idle, pattern: '(?m)^> $' }
autoPolicy:
  handlers:
    - { when: 'Proceed\? \(y/n\)', use: confirmYes }
`, fakeLine, strings.Join(quoted, ", ")))
}

func autoActions(p *project, id string) int { return countEvents(p.events(id), "auto_action") }

// A TUI that takes 2 s to react to a key (a loaded machine) gets exactly
// one answer: the question still on screen is the same appearance.
func TestSlowTUIGetsOneAnswer(t *testing.T) {
	p := newProject(t)
	cpuHog(t)
	p.write(".vibeteam/adapters/tui.yaml", strings.Replace(p.read(".vibeteam/adapters/tui.yaml"), "args: [", "args: [-menu-first, -react, 2s, ", 1))
	p.write("wf.yaml", "id: slow\nstages:\n  - id: s\n    tasks:\n      - { id: a, adapter: tui, pendingInputs: [\"hello\"], timeout: 60s }\n")
	r := p.run("run", "wf.yaml", "--auto-approve", "--grace", "300ms")
	wantCode(t, r, 0)
	if got := p.read("rec.txt"); got != "menu:1\nline:hello\n" {
		t.Errorf("the TUI received %q; want one answer to the menu and an untouched input line", got)
	}
	if n := autoActions(p, p.only().ID); n != 1 {
		t.Errorf("%d auto actions, want 1", n)
	}
}

// A line-oriented program keeps its answered questions in its scrollback;
// the naive pattern matches them all, yet each question is answered once.
func TestLineProgramGetsOneAnswerPerQuestion(t *testing.T) {
	for _, c := range []struct {
		name string
		args []string
		asks int
	}{
		{"three", []string{"-asks", "3"}, 3},
		{"scrolling", []string{"-asks", "6", "-between", "15"}, 6}, // the screen scrolls past old questions
		{"slow", []string{"-asks", "3", "-react", "1500ms"}, 3},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := newProject(t)
			cpuHog(t)
			lineAdapter(p, c.args...)
			p.write("wf.yaml", "id: line\nstages:\n  - id: s\n    tasks:\n      - { id: a, adapter: line, timeout: 60s }\n")
			r := p.run("run", "wf.yaml", "--auto-approve", "--grace", "300ms")
			wantCode(t, r, 0)
			want := strings.Repeat("answer:y\n", c.asks)
			if got := p.read("rec.txt"); got != want {
				t.Errorf("the program received %q, want %q", got, want)
			}
			s := p.only()
			if n := autoActions(p, s.ID); n != c.asks {
				t.Errorf("%d auto actions, want %d", n, c.asks)
			}
			if s.TaskStatus["a"] != state.TaskDone || s.Tasks["a"].Reason != "idle" {
				t.Errorf("task %s (%s), want DONE at the '> ' prompt", s.TaskStatus["a"], s.Tasks["a"].Reason)
			}
		})
	}
}

// The same question drawn again after it had gone is a new appearance: it
// gets its own answer.
func TestQuestionDrawnAgainIsAnsweredAgain(t *testing.T) {
	p := newProject(t)
	p.write(".vibeteam/adapters/tui.yaml", strings.Replace(p.read(".vibeteam/adapters/tui.yaml"), "args: [", "args: [-menu-first, -menu-twice, ", 1))
	p.write("wf.yaml", "id: twice\nstages:\n  - id: s\n    tasks:\n      - { id: a, adapter: tui, pendingInputs: [\"hi\"], timeout: 60s }\n")
	wantCode(t, p.run("run", "wf.yaml", "--auto-approve", "--grace", "300ms"), 0)
	if got := p.read("rec.txt"); got != "menu:1\nmenu:1\nline:hi\n" {
		t.Errorf("the TUI received %q", got)
	}
}

// An answer that gets no reaction at all leaves the question unchanged: it
// is never typed again; without a terminal the session parks.
func TestStuckQuestionIsNeverAnsweredTwice(t *testing.T) {
	p := newProject(t)
	ad := p.read(".vibeteam/adapters/tui.yaml")
	ad = strings.Replace(ad, "use: confirmYes", "send: x", 1) // faketui ignores x
	ad = strings.Replace(ad, "quietPeriod: 100ms", "quietPeriod: 100ms\nstuckAfter: 1500ms", 1)
	p.write(".vibeteam/adapters/tui.yaml", ad)
	p.write("wf.yaml", "id: stuck\nstages:\n  - id: s\n    tasks:\n      - { id: a, adapter: tui, pendingInputs: [\"please ask\"], timeout: 60s }\n")
	r := p.run("run", "wf.yaml", "--auto-approve", "--grace", "300ms")
	wantCode(t, r, 3)
	s := p.only()
	if n := autoActions(p, s.ID); n != 1 {
		t.Errorf("%d auto actions, want exactly 1", n)
	}
	if s.TaskStatus["a"] != state.TaskWaitingForUser {
		t.Errorf("task %s, want WAITING_FOR_USER", s.TaskStatus["a"])
	}
	var why string
	for _, e := range p.events(s.ID) {
		if e.Kind() == "interaction" {
			why, _ = e.Fields()["why"].(string)
		}
	}
	if !strings.Contains(why, "no reaction") {
		t.Errorf("interaction event why=%q", why)
	}
	if !strings.Contains(r.stderr, "(y/n)") {
		t.Errorf("stderr lacks the question:\n%s", r.stderr)
	}
}

// A process that exits with inputs still queued is an error naming them.
func TestExitWithUnsentInputsIsAnError(t *testing.T) {
	p := newProject(t)
	p.write("wf.yaml", "id: unsent\nstages:\n  - id: s\n    tasks:\n      - { id: a, adapter: tui, extraArgs: [-exit-after, \"1\"], pendingInputs: [\"one\", \"two\", \"three\"], timeout: 60s }\n")
	r := p.run("run", "wf.yaml", "--grace", "300ms")
	wantCode(t, r, 1)
	s := p.only()
	rec := s.Tasks["a"]
	if s.TaskStatus["a"] != state.TaskError || !strings.Contains(rec.Error, "2 queued input(s) unsent") {
		t.Errorf("task %s: %q", s.TaskStatus["a"], rec.Error)
	}
	if !strings.Contains(r.stderr, "unsent") {
		t.Errorf("stderr does not say so:\n%s", r.stderr)
	}
}

// An idle-looking start-up screen is no evidence that the prompt's turn
// ran: the task is DONE only after the turn, and says what showed it.
func TestSplashScreenIsNoEvidence(t *testing.T) {
	p := newProject(t)
	tui := p.read(".vibeteam/adapters/tui.yaml")
	noWorking := strings.Replace(tui, "  - { name: working, pattern: 'esc to interrupt' }\n", "", 1)
	p.write(".vibeteam/adapters/tuinw.yaml", strings.Replace(noWorking, "name: tui", "name: tuinw", 1))
	p.write("wf.yaml", `id: splash
stages:
  - id: s
    tasks:
      - { id: a, adapter: tui, prompt: "first prompt", extraArgs: [-splash, 2500ms], timeout: 60s }
      - { id: b, adapter: tuinw, prompt: "second prompt", extraArgs: [-splash, 2500ms], timeout: 60s }
`)
	wantCode(t, p.run("run", "wf.yaml", "--grace", "300ms"), 0)
	rec := p.read("rec.txt")
	for _, line := range []string{"line:first prompt", "line:second prompt"} {
		if !strings.Contains(rec, line) {
			t.Errorf("the TUI never ran %q before DONE: %q", line, rec)
		}
	}
	s := p.only()
	for id, want := range map[string]string{"a": "reply: first prompt", "b": "reply: second prompt"} {
		if log := p.read(".vibeteam/logs/" + s.ID + "/" + id + ".log"); !strings.Contains(log, want) {
			t.Errorf("task %s DONE before its turn ended:\n%s", id, log)
		}
	}
	evidence := map[string]string{}
	for _, e := range p.events(s.ID) {
		if e.Kind() == "task_finished" {
			evidence[e.Task], _ = e.Fields()["evidence"].(string)
		}
	}
	if evidence["a"] != "working" || evidence["b"] != "screen" {
		t.Errorf("evidence %v, want a: working, b: screen (the fallback, logged as such)", evidence)
	}
}

// An adapter with a working state is DONE only once that state was seen:
// a TUI that shows the submitted text over an idle-looking box seconds
// before its turn starts (opencode on a loaded machine) is not DONE then.
func TestShownPromptIsNoEvidenceWhereAWorkingStateExists(t *testing.T) {
	p := newProject(t)
	p.write("wf.yaml", "id: late\nstages:\n  - id: s\n    tasks:\n      - { id: a, adapter: tui, prompt: \"late prompt\", extraArgs: [-late, 3s], timeout: 60s }\n")
	wantCode(t, p.run("run", "wf.yaml", "--grace", "300ms"), 0)
	s := p.only()
	if log := p.read(".vibeteam/logs/" + s.ID + "/a.log"); !strings.Contains(log, "reply: late prompt") {
		t.Errorf("DONE before the turn ran:\n%s", log)
	}
	for _, e := range p.events(s.ID) {
		if e.Kind() == "task_finished" {
			if ev, _ := e.Fields()["evidence"].(string); ev != "working" {
				t.Errorf("evidence %q, want working", ev)
			}
		}
	}
}

// A prompt whose turn never shows is never DONE: without a terminal the
// session parks.
func TestNoEvidenceParks(t *testing.T) {
	p := newProject(t)
	ad := strings.Replace(p.read(".vibeteam/adapters/tui.yaml"), "quietPeriod: 100ms", "quietPeriod: 100ms\nstuckAfter: 1500ms", 1)
	p.write(".vibeteam/adapters/tui.yaml", ad)
	p.write("wf.yaml", "id: never\nstages:\n  - id: s\n    tasks:\n      - { id: a, adapter: tui, prompt: \"never runs\", extraArgs: [-splash, 60s], timeout: 60s }\n")
	r := p.run("run", "wf.yaml", "--grace", "300ms")
	wantCode(t, r, 3)
	s := p.only()
	if s.TaskStatus["a"] == state.TaskDone {
		t.Fatal("DONE on a splash screen")
	}
	if !strings.Contains(r.stderr, "no sign that its turn ran") {
		t.Errorf("stderr does not say why:\n%s", r.stderr)
	}
}
