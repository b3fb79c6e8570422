package cli

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/vibeteam/vibeteam/core/state"
)

func countEvents(evs []state.Event, typ string) int {
	n := 0
	for _, e := range evs {
		if e.Kind() == typ {
			n++
		}
	}
	return n
}

func TestInteractiveQueueInOrderThenDoneWithoutExit(t *testing.T) {
	p := newProject(t)
	p.write("wf.yaml", `id: q
stages:
  - id: s
    tasks:
      - { id: a, adapter: tui, pendingInputs: ["first", "second", "third"] }
`)
	r := p.run("run", "wf.yaml")
	wantCode(t, r, 0)
	if got := p.read("rec.txt"); got != "line:first\nline:second\nline:third\n" {
		t.Errorf("the TUI received %q", got)
	}
	s := p.only()
	if s.TaskStatus["a"] != state.TaskDone || s.Tasks["a"].Reason != "idle" {
		t.Errorf("task %s (%s), want DONE on idle", s.TaskStatus["a"], s.Tasks["a"].Reason)
	}
	if s.Tasks["a"].ExitCode != nil {
		t.Errorf("DONE on idle should not wait for an exit code")
	}
	if len(s.Tasks["a"].PendingInputs) != 0 {
		t.Errorf("queue left in the session: %v", s.Tasks["a"].PendingInputs)
	}
	pidAlive(t, p.read("tui.pid"), false)
	log := p.read(".vibeteam/logs/" + s.ID + "/a.log")
	if !strings.Contains(log, "reply: third") {
		t.Errorf("task log lacks the last reply:\n%s", log)
	}
	r = p.run("show", s.ID)
	if !strings.Contains(r.stdout, "last screen:") || !strings.Contains(r.stdout, "| reply: third") {
		t.Errorf("show lacks the last screen:\n%s", r.stdout)
	}
}

func TestInteractivePromptTurnRunsBeforeDone(t *testing.T) {
	p := newProject(t)
	p.write("wf.yaml", `id: pr
stages:
  - id: s
    tasks:
      - { id: a, adapter: tui, prompt: "hello there", pendingInputs: ["after"] }
`)
	wantCode(t, p.run("run", "wf.yaml"), 0)
	if got := p.read("rec.txt"); got != "line:hello there\nline:after\n" {
		t.Errorf("the TUI received %q", got)
	}
	log := p.read(".vibeteam/logs/" + p.only().ID + "/a.log")
	if !strings.Contains(log, "reply: after") {
		t.Errorf("DONE before the last turn ran:\n%s", log)
	}
}

func TestKeepAliveLeavesTheProcessRunningForTheRest(t *testing.T) {
	p := newProject(t)
	p.write("wf.yaml", `id: ka
stages:
  - id: one
    tasks:
      - { id: a, adapter: tui, keepAlive: true }
  - id: two
    tasks:
      - { id: check, adapter: shell, executionMode: headless, prompt: "kill -0 $(cat tui.pid) && echo alive > alive.txt" }
`)
	r := p.run("run", "wf.yaml")
	wantCode(t, r, 0)
	if !p.exists("alive.txt") {
		t.Error("the keepAlive process was not running during the next stage")
	}
	s := p.only()
	if s.TaskStatus["a"] != state.TaskDone {
		t.Errorf("keepAlive task %s", s.TaskStatus["a"])
	}
	if countEvents(p.events(s.ID), "kept_alive") != 1 {
		t.Error("no kept_alive event")
	}
	// No child outlives vibeteam.
	pidAlive(t, p.read("tui.pid"), false)
}

func TestAutoPolicyAnswersWithoutAskingAnyone(t *testing.T) {
	p := newProject(t)
	p.write(".vibeteam/adapters/tui.yaml", strings.Replace(p.read(".vibeteam/adapters/tui.yaml"), "args: [", "args: [-menu-first, ", 1))
	p.write("wf.yaml", `id: auto
stages:
  - id: s
    tasks:
      - { id: a, adapter: tui, pendingInputs: ["please ask me"] }
`)
	r := p.run("run", "wf.yaml", "--auto-approve")
	wantCode(t, r, 0)
	if got := p.read("rec.txt"); got != "menu:1\nline:please ask me\nanswer:y\n" {
		t.Errorf("the TUI received %q", got)
	}
	evs := p.events(p.only().ID)
	if n := countEvents(evs, "interaction"); n != 0 {
		t.Errorf("%d interaction events; the policy should have answered", n)
	}
	var actions []string
	for _, e := range evs {
		if e.Kind() == "auto_action" {
			actions = append(actions, e.Fields()["state"].(string)+"="+e.Fields()["keys"].(string))
			if e.Fields()["match"] == "" {
				t.Errorf("auto_action without the matched text: %v", e.Fields())
			}
		}
	}
	if strings.Join(actions, ",") != "interaction_trust=1,interaction_confirm=y" {
		t.Errorf("auto actions %v", actions)
	}
}

func TestNoTerminalParksWithTheScreen(t *testing.T) {
	p := newProject(t)
	p.write("wf.yaml", `id: park
stages:
  - id: s
    tasks:
      - { id: a, adapter: tui, pendingInputs: ["show the menu", "later"] }
      - { id: b, adapter: fake, executionMode: headless, prompt: "sleep=20s" }
`)
	r := p.run("run", "wf.yaml", "--auto-approve")
	wantCode(t, r, 3)
	if !strings.Contains(r.stderr, "Allow this command?") || !strings.Contains(r.stderr, "interaction_menu") {
		t.Errorf("stderr lacks the screen excerpt:\n%s", r.stderr)
	}
	s := p.only()
	if s.Status != state.StatusWaiting || s.TaskStatus["a"] != state.TaskWaitingForUser {
		t.Errorf("session %s, task %s; want waiting, WAITING_FOR_USER", s.Status, s.TaskStatus["a"])
	}
	if s.TaskStatus["b"] == state.TaskDone {
		t.Errorf("the sibling was not stopped")
	}
	if q := s.Tasks["a"].PendingInputs; len(q) != 1 || q[0] != "later" {
		t.Errorf("remaining queue %v, want [later]", q)
	}
	if !strings.Contains(s.Tasks["a"].Excerpt, "Allow this command?") {
		t.Errorf("excerpt not saved: %q", s.Tasks["a"].Excerpt)
	}
	pidAlive(t, p.read("tui.pid"), false)

	// --on-interaction=fail turns the same into a failure.
	p2 := newProject(t)
	p2.write("wf.yaml", "id: f\nstages:\n  - id: s\n    tasks:\n      - { id: a, adapter: tui, pendingInputs: [\"ask\"] }\n")
	r = p2.run("run", "wf.yaml", "--on-interaction", "fail")
	wantCode(t, r, 1)
	if !strings.Contains(r.stderr, "(y/n)") {
		t.Errorf("stderr lacks the excerpt:\n%s", r.stderr)
	}
}

func TestResumeReRunsTheParkedTaskWithItsRemainingQueue(t *testing.T) {
	p := newProject(t)
	p.write("wf.yaml", `id: park
stages:
  - id: s
    tasks:
      - { id: a, adapter: tui, pendingInputs: ["ask first", "then this"] }
`)
	wantCode(t, p.run("run", "wf.yaml"), 3)
	id := p.only().ID
	r := p.run("resume", id, "--auto-approve")
	wantCode(t, r, 0)
	// The first run typed "ask first" and parked on the y/n question; the
	// resumed run starts the TUI again and sends only what was left.
	if got := p.read("rec.txt"); got != "line:ask first\nline:then this\n" {
		t.Errorf("the TUI received %q", got)
	}
	if s := p.only(); s.Status != state.StatusCompleted || s.Tasks["a"].Attempts != 2 {
		t.Errorf("after resume: %s, attempts %d", s.Status, s.Tasks["a"].Attempts)
	}
}

func TestInteractiveTimeout(t *testing.T) {
	p := newProject(t)
	p.write(".vibeteam/adapters/slowtui.yaml", strings.NewReplacer("name: tui", "name: slowtui", "-work, 300ms", "-work, 60s").Replace(p.read(".vibeteam/adapters/tui.yaml")))
	p.write("wf.yaml", `id: to
stages:
  - id: s
    tasks:
      - { id: a, adapter: slowtui, prompt: "a long turn", timeout: 1s }
`)
	r := p.run("run", "wf.yaml", "--grace", "500ms")
	wantCode(t, r, 1)
	s := p.only()
	if s.TaskStatus["a"] != state.TaskError || s.Tasks["a"].Reason != "timeout" {
		t.Errorf("task %s (%s), want ERROR timeout", s.TaskStatus["a"], s.Tasks["a"].Reason)
	}
	if !strings.Contains(r.stderr, "timeout") {
		t.Errorf("stderr does not say timeout:\n%s", r.stderr)
	}
	pidAlive(t, p.read("tui.pid"), false)
}

func TestInactivityTimeoutOfAnAdapter(t *testing.T) {
	p := newProject(t)
	p.write(".vibeteam/adapters/quiet.yaml", fmt.Sprintf(`name: quiet
command: %s
inactivityTimeout: 500ms
modes:
  headless: { args: [], prompt: { position: arg } }
`, fakeAgent))
	p.write("wf.yaml", "id: i\nstages:\n  - id: s\n    tasks:\n      - { id: a, adapter: quiet, executionMode: headless, prompt: \"print=one sleep=30s\" }\n")
	start := time.Now()
	r := p.run("run", "wf.yaml", "--grace", "500ms")
	wantCode(t, r, 1)
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("took %s", d)
	}
	if s := p.only(); s.Tasks["a"].Reason != "inactivity_timeout" {
		t.Errorf("reason %q, want inactivity_timeout", s.Tasks["a"].Reason)
	}
}

// Output resets the inactivity limit, however long the task runs: four
// lines 300 ms apart take 900 ms under a 500 ms limit, and the task is DONE;
// a pause longer than the limit after them is not.
func TestOutputKeepsATaskActive(t *testing.T) {
	p := newProject(t)
	steady := "print=a sleep=300ms print=b sleep=300ms print=c sleep=300ms print=d"
	p.write("wf.yaml", "id: steady\nstages:\n  - id: s\n    tasks:\n"+
		"      - { id: steady, adapter: fake, executionMode: headless, prompt: \""+steady+"\", inactivityTimeout: 500ms }\n"+
		"      - { id: stalls, adapter: fake, executionMode: headless, prompt: \""+steady+" sleep=30s\", inactivityTimeout: 500ms }\n")
	wantCode(t, p.run("run", "wf.yaml", "--grace", "200ms", "--keep-going"), 1)
	s := p.only()
	if s.TaskStatus["steady"] != state.TaskDone {
		t.Errorf("steady task %s (%s): output did not count as activity", s.TaskStatus["steady"], s.Tasks["steady"].Reason)
	}
	if s.Tasks["stalls"].Reason != "inactivity_timeout" {
		t.Errorf("stalling task: reason %q, want inactivity_timeout", s.Tasks["stalls"].Reason)
	}
}

func TestHeadlessModeWithUsePTY(t *testing.T) {
	p := newProject(t)
	p.write(".vibeteam/adapters/ptyheadless.yaml", fmt.Sprintf(`name: ptyheadless
command: %s
modes:
  headless: { args: [], prompt: { position: arg }, usePTY: true }
`, fakeAgent))
	p.write("wf.yaml", `id: u
stages:
  - id: s
    tasks:
      - { id: pty, adapter: ptyheadless, executionMode: headless, prompt: "tty=pty.txt print=hello" }
      - { id: pipe, adapter: fake, executionMode: headless, prompt: "tty=pipe.txt" }
`)
	wantCode(t, p.run("run", "wf.yaml"), 0)
	if got := p.read("pty.txt"); got != "tty" {
		t.Errorf("usePTY task saw %q", got)
	}
	if got := p.read("pipe.txt"); got != "notty" {
		t.Errorf("plain headless task saw %q", got)
	}
	if s := p.only(); s.Tasks["pty"].ExitCode == nil || *s.Tasks["pty"].ExitCode != 0 {
		t.Errorf("usePTY task: %+v", s.Tasks["pty"])
	}
}

// A turn that is never seen working (an adapter without a working state, or
// a turn faster than a state check) still counts once its idle screen has
// settled.
func TestTurnsWithoutAWorkingState(t *testing.T) {
	p := newProject(t)
	noWorking := strings.Replace(p.read(".vibeteam/adapters/tui.yaml"), "  - { name: working, pattern: 'esc to interrupt' }\n", "", 1)
	p.write(".vibeteam/adapters/tuinw.yaml", strings.Replace(noWorking, "name: tui", "name: tuinw", 1))
	p.write("wf.yaml", `id: nw
stages:
  - id: s
    tasks:
      - { id: a, adapter: tuinw, pendingInputs: ["first", "second"], timeout: 20s }
  - id: fast
    tasks:
      - { id: b, adapter: tui, extraArgs: ["-work", "0s"], pendingInputs: ["/cost", "/review"], timeout: 20s }
`)
	wantCode(t, p.run("run", "wf.yaml"), 0)
	if got := p.read("rec.txt"); got != "line:first\nline:second\nline:/cost\nline:/review\n" {
		t.Errorf("the TUIs received %q", got)
	}
	s := p.only()
	if s.Tasks["a"].Reason != "idle" || s.Tasks["b"].Reason != "idle" {
		t.Errorf("reasons %q %q, want idle", s.Tasks["a"].Reason, s.Tasks["b"].Reason)
	}
}

// A queue that was sent in full is not sent again on resume.
func TestResumeDoesNotResendASentQueue(t *testing.T) {
	p := newProject(t)
	p.write("wf.yaml", `id: rs
stages:
  - id: s
    tasks:
      - { id: a, adapter: tui, pendingInputs: ["only one, then ask"] }
`)
	wantCode(t, p.run("run", "wf.yaml"), 3)
	s := p.only()
	if q := s.Tasks["a"].PendingInputs; len(q) != 0 {
		t.Fatalf("queue left %v", q)
	}
	wantCode(t, p.run("resume", s.ID), 0)
	if got := p.read("rec.txt"); got != "line:only one, then ask\n" {
		t.Errorf("the TUI received %q; the sent item came again", got)
	}
}

// A task's own inactivityTimeout wins over its adapter's, and silence while
// a person is asked does not count.
func TestTaskInactivityTimeoutPausesWhileAsking(t *testing.T) {
	p := newProject(t)
	p.write("wf.yaml", `id: ia
stages:
  - id: s
    tasks:
      - { id: silent, adapter: fake, executionMode: headless, prompt: "sleep=30s", inactivityTimeout: 700ms }
`)
	wantCode(t, p.run("run", "wf.yaml", "--grace", "500ms"), 1)
	if s := p.only(); s.Tasks["silent"].Reason != "inactivity_timeout" {
		t.Errorf("reason %q", s.Tasks["silent"].Reason)
	}

	p2 := newProject(t)
	p2.write("wf.yaml", "id: ask\nstages:\n  - id: s\n    tasks:\n      - { id: a, adapter: tui, pendingInputs: [\"ask\"], inactivityTimeout: 1s }\n")
	c, cmd, screen := terminalSession(t, p2, "run", "wf.yaml")
	expectString(t, c, "reply › ", screen)
	time.Sleep(2500 * time.Millisecond) // a person thinking, longer than the timeout
	_, _ = c.SendLine("y")
	if code := waitExit(t, cmd, screen); code != 0 {
		t.Fatalf("exit %d: the wait for a person counted as inactivity\n%s", code, screen.String())
	}
}

// Turns that leave the screen exactly as it was (a full history scrolls the
// same lines) still count once the screen has settled.
func TestTurnsThatLeaveAnIdenticalScreen(t *testing.T) {
	p := newProject(t)
	q := strings.TrimSuffix(strings.Repeat(`"x", `, 16), ", ")
	// The budget: each of the 16 turns ends on an idle screen that must stay
	// quiet for 1 s (no working state to see), about 18 s on a loaded
	// machine; the timeout only stops a hang.
	p.write("wf.yaml", "id: h\nstages:\n  - id: s\n    tasks:\n      - { id: a, adapter: tui, extraArgs: [\"-work\", \"0s\"], pendingInputs: ["+q+"], timeout: 180s }\n")
	wantCode(t, p.run("run", "wf.yaml", "--grace", "300ms"), 0)
	if n := strings.Count(p.read("rec.txt"), "line:x\n"); n != 16 {
		t.Errorf("%d of 16 inputs reached the TUI", n)
	}
}
