package cli

import (
	"strings"
	"testing"
)

// evil is what a hostile workflow puts in its text: an OSC that retitles
// the terminal, a bell, and a sequence that clears the screen.
const (
	evil        = "\x1b]0;pwn\x07\x1b[2J"
	evilEscaped = `\x1b]0;pwn\a\x1b[2J`
)

// evilWorkflow has the sequence in its goal and a task's name, and a
// right-to-left override (valid in ids) in its id and the task's id.
const evilWorkflow = `id: "wf\u202Eevil"
goal: "goal \e]0;pwn\a\e[2J end"
stages:
  - id: "st\u202Eage"
    tasks:
      - { id: "a\u202Eb", name: "name \e]0;pwn\a\e[2J end", adapter: fake, executionMode: headless, prompt: "print=hello exit=1" }
`

func noControls(t *testing.T, what, out string) {
	t.Helper()
	if i := strings.IndexAny(out, "\x1b\x07"); i >= 0 {
		t.Errorf("%s writes a control character at byte %d:\n%q", what, i, out)
	}
}

// Text from workflow and session files never reaches the terminal raw:
// run, show and sessions print it escaped, and without a terminal their
// output holds no escape sequence at all.
func TestWorkflowTextIsEscaped(t *testing.T) {
	p := newProject(t)
	p.write("wf.yaml", evilWorkflow)
	r := p.run("run", "wf.yaml")
	wantCode(t, r, 1)
	noControls(t, "run", r.stdout+r.stderr)
	label := "name " + evilEscaped + ` end (a\u202eb)`
	for _, want := range []string{`workflow wf\u202eevil`, `stage 1/1 st\u202eage`, "task " + label + " started", "vibeteam: task " + label + " failed: exit code 1", "last output of " + label} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("run's stderr lacks %q:\n%s", want, r.stderr)
		}
	}
	id := p.only().ID

	show := p.run("show", id)
	wantCode(t, show, 0)
	noControls(t, "show", show.stdout+show.stderr)
	for _, want := range []string{`workflow  wf\u202eevil`, "goal      goal " + evilEscaped + " end", label, `stage 1 st\u202eage`} {
		if !strings.Contains(show.stdout, want) {
			t.Errorf("show lacks %q:\n%s", want, show.stdout)
		}
	}

	list := p.run("sessions")
	wantCode(t, list, 0)
	noControls(t, "sessions", list.stdout+list.stderr)
	for _, want := range []string{`wf\u202eevil`, "goal " + evilEscaped + " end"} {
		if !strings.Contains(list.stdout, want) {
			t.Errorf("sessions lacks %q:\n%s", want, list.stdout)
		}
	}

	// --verbose mirrors the task's output under its name (or its id, for
	// output that comes before the task's start is known).
	r = p.run("run", "wf.yaml", "--verbose")
	noControls(t, "run --verbose", r.stdout+r.stderr)
	if !strings.Contains(r.stderr, "[name "+evilEscaped+" end] hello") && !strings.Contains(r.stderr, `[a\u202eb] hello`) {
		t.Errorf("the mirrored output is not under the escaped name:\n%s", r.stderr)
	}
}

// On a terminal too, the text shows escaped and does nothing: the title is
// unchanged and nothing is cleared. vibeteam's own sequences (the board's
// redraws) are the only ones it writes.
func TestWorkflowTextIsEscapedOnATerminal(t *testing.T) {
	p := newProject(t)
	p.write("wf.yaml", evilWorkflow)
	v := startVTerm(t, p, 120, 40, "run", "wf.yaml")
	if code := v.wait(); code != 1 {
		t.Fatalf("exit %d\n%s", code, v.dump())
	}
	v.mu.Lock()
	title := v.vt.Title()
	v.mu.Unlock()
	if title != "" {
		t.Errorf("the workflow retitled the terminal: %q", title)
	}
	raw := v.rawOutput()
	for _, bad := range []string{"\x1b]", "\x07", "\x1b[2J"} {
		if strings.Contains(raw, bad) {
			t.Errorf("vibeteam wrote %q to the terminal", bad)
		}
	}
	screen := strings.Join(v.screen(), "\n")
	for _, want := range []string{"session ", "name " + evilEscaped + ` end (a\u202eb)`, "failed: exit code 1"} {
		if !strings.Contains(screen, want) {
			t.Errorf("the screen lacks %q:\n%s", want, screen)
		}
	}
}
