package cli

import (
	"fmt"
	"strings"
	"testing"

	"github.com/vibeteam/vibeteam/core/state"
)

// By default the first failure stops the rest of its stage; --keep-going
// lets them finish.
func TestKeepGoingLetsTheStageFinish(t *testing.T) {
	wf := `id: kg
stages:
  - id: s
    tasks:
      - { id: bad, adapter: shell, executionMode: headless, prompt: "exit 3" }
      - { id: slow, adapter: shell, executionMode: headless, prompt: "sleep 1; echo done > slow.txt" }
  - id: after
    tasks:
      - { id: later, adapter: shell, executionMode: headless, prompt: "echo no > later.txt" }
`
	p := newProject(t)
	p.write("wf.yaml", wf)
	wantCode(t, p.run("run", "wf.yaml", "--grace", "300ms"), 1)
	if p.exists("slow.txt") {
		t.Error("without --keep-going the sibling ran to its end")
	}
	if s := p.only(); s.TaskStatus["slow"] == state.TaskDone {
		t.Errorf("stopped sibling is %s", s.TaskStatus["slow"])
	}

	p2 := newProject(t)
	p2.write("wf.yaml", wf)
	r := p2.run("run", "wf.yaml", "--keep-going", "--grace", "300ms")
	wantCode(t, r, 1)
	if !p2.exists("slow.txt") {
		t.Error("with --keep-going the sibling did not finish")
	}
	s := p2.only()
	if s.TaskStatus["slow"] != state.TaskDone || s.TaskStatus["bad"] != state.TaskError {
		t.Errorf("statuses %v", s.TaskStatus)
	}
	if p2.exists("later.txt") {
		t.Error("the next stage ran after a failed one")
	}
	if !strings.Contains(r.stderr, "task bad failed") {
		t.Errorf("the failure is not named:\n%s", r.stderr)
	}
}

// After a task fails, a fix to the workflow file is picked up by
// resume --reload; DONE tasks whose definition did not change are not run
// again, changed ones are, and --rerun forces one.
func TestResumeReloadPicksUpAFix(t *testing.T) {
	p := newProject(t)
	wf := `id: fix
stages:
  - id: one
    tasks:
      - { id: ok, adapter: shell, executionMode: headless, prompt: "echo 1 >> ok.txt" }
      - { id: same, adapter: shell, executionMode: headless, prompt: "echo 1 >> same.txt" }
  - id: two
    tasks:
      - { id: broken, adapter: shell, executionMode: headless, prompt: "exit 4" }
`
	p.write("wf.yaml", wf)
	r := p.run("run", "wf.yaml")
	wantCode(t, r, 1)
	id := p.only().ID
	if !strings.Contains(r.stderr, "--reload") {
		t.Errorf("the failure message does not mention --reload:\n%s", r.stderr)
	}

	// The fix: broken now works, and ok's command changed.
	fixed := strings.Replace(wf, `prompt: "exit 4"`, `prompt: "echo fixed > fixed.txt"`, 1)
	fixed = strings.Replace(fixed, `echo 1 >> ok.txt`, `echo 2 >> ok.txt`, 1)
	p.write("wf.yaml", fixed)

	// Without --reload the stored definition runs (and fails again), and
	// both the start and the failure point at --reload.
	r = p.run("resume", id)
	wantCode(t, r, 1)
	if !strings.Contains(r.stderr, "has changed since session") || !strings.Contains(r.stderr, "vibeteam resume --reload "+id) {
		t.Errorf("resume did not say the file changed:\n%s", r.stderr)
	}

	r = p.run("resume", "--reload", id)
	wantCode(t, r, 0)
	if got := p.read("fixed.txt"); got != "fixed\n" {
		t.Errorf("fixed task: %q", got)
	}
	if got := p.read("ok.txt"); got != "1\n2\n" {
		t.Errorf("ok.txt %q: a changed DONE task should run again", got)
	}
	if got := p.read("same.txt"); got != "1\n" {
		t.Errorf("same.txt %q: an unchanged DONE task ran again", got)
	}
	s := p.only()
	if s.Status != state.StatusCompleted || s.SourceDigest == "" {
		t.Errorf("session %s, digest %q", s.Status, s.SourceDigest)
	}
}

func TestResumeRerunForcesADoneTask(t *testing.T) {
	p := newProject(t)
	p.write("wf.yaml", `id: rr
stages:
  - id: one
    tasks:
      - { id: ok, adapter: shell, executionMode: headless, prompt: "echo x >> ok.txt" }
  - id: two
    tasks:
      - { id: flaky, adapter: shell, executionMode: headless, prompt: "test -f ready || exit 1" }
`)
	wantCode(t, p.run("run", "wf.yaml"), 1)
	id := p.only().ID
	p.write("ready", "")
	r := p.run("resume", id, "--rerun", "nope")
	wantCode(t, r, 2)
	if !strings.Contains(r.stderr, `no task "nope"`) {
		t.Errorf("unknown --rerun: %s", r.stderr)
	}
	wantCode(t, p.run("resume", id, "--rerun", "ok"), 0)
	if got := p.read("ok.txt"); got != "x\nx\n" {
		t.Errorf("ok.txt %q, want the forced task run twice", got)
	}
}

// Sessions carry a format version: v1 files (no version field) resume and
// are written back in this format; a newer format is refused with a clear
// message.
func TestSessionFormatVersions(t *testing.T) {
	p := newProject(t)
	p.write("wf.yaml", `id: v
stages:
  - id: one
    tasks:
      - { id: a, adapter: shell, executionMode: headless, prompt: "echo a >> a.txt" }
  - id: two
    tasks:
      - { id: b, adapter: shell, executionMode: headless, prompt: "test -f go" }
`)
	wantCode(t, p.run("run", "wf.yaml"), 1)
	s := p.only()
	if s.Version != state.FormatVersion {
		t.Errorf("new session has version %d", s.Version)
	}
	path := ".vibeteam/sessions/" + s.ID + ".json"
	version := fmt.Sprintf(`"version":%d,`, state.FormatVersion)
	v1 := strings.Replace(p.read(path), version, "", 1)
	if v1 == p.read(path) {
		t.Fatal("no version field to remove")
	}
	p.write(path, v1)
	p.write("go", "")
	wantCode(t, p.run("resume", s.ID), 0)
	if got := p.read("a.txt"); got != "a\n" {
		t.Errorf("a v1 session's DONE task ran again: %q", got)
	}
	if s := p.only(); s.Version != state.FormatVersion || s.Status != state.StatusCompleted {
		t.Errorf("after resume: version %d, status %s", s.Version, s.Status)
	}

	newer := state.FormatVersion + 1
	p.write(path, strings.Replace(p.read(path), version, fmt.Sprintf(`"version":%d,`, newer), 1))
	p.write(path, strings.Replace(p.read(path), `"status":"completed"`, `"status":"failed"`, 1))
	r := p.run("resume", s.ID)
	wantCode(t, r, 2)
	if !strings.Contains(r.stderr, fmt.Sprintf("format v%d by a newer vibeteam", newer)) {
		t.Errorf("a newer format is not refused clearly:\n%s", r.stderr)
	}
}
