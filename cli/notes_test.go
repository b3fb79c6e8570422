package cli

import (
	"strings"
	"testing"

	"github.com/vibeteam/vibeteam/core/state"
)

// While a person is asked about one task, the others are not lost from
// sight: a sibling that ends, and one that starts waiting, are each said in
// one line above the one reply prompt, which stays the last line.
func TestPauseSaysWhatOtherTasksDo(t *testing.T) {
	p := newProject(t)
	// Second asks later than First: its question comes while First's
	// prompt is up (or, on a slow machine, before: then the panel says so).
	p.write(".vibeteam/adapters/tui2.yaml", strings.NewReplacer("name: tui", "name: tui2", "rec.txt", "rec2.txt", "tui.pid", "tui2.pid", "-work, 300ms", "-work, 2500ms").Replace(p.read(".vibeteam/adapters/tui.yaml")))
	p.write("wf.yaml", `id: notes
stages:
  - id: s
    tasks:
      - { id: a, name: First, adapter: tui, pendingInputs: ["ask"] }
      - { id: b, name: Second, adapter: tui2, pendingInputs: ["ask"] }
      - { id: c, name: Third, adapter: shell, executionMode: headless, prompt: "while [ ! -e go.txt ]; do sleep 0.05; done" }
`)
	v := startVTerm(t, p, 80, 40, "run", "wf.yaml")
	v.waitText("First (a) needs you: interaction_confirm")
	v.waitText("reply ›")
	// Third ends once First's prompt is up.
	p.write("go.txt", "")
	screen := v.waitFor("the notes about Second and Third", func(s []string) bool {
		all := strings.Join(s, "\n")
		return strings.Contains(all, "Second (b) is waiting too") && strings.Contains(all, "task Third (c) DONE")
	})
	prompts := rowsWith(screen, "reply ›")
	if len(prompts) != 1 {
		t.Fatalf("%d reply prompts on screen, want 1\n%s", len(prompts), v.dump())
	}
	last := len(screen) - 1
	for last > 0 && screen[last] == "" {
		last--
	}
	if prompts[0] != last {
		t.Errorf("the reply prompt is not the last line\n%s", v.dump())
	}
	for _, s := range []string{"task Third (c) DONE", "Second (b) is waiting too", "│ Apply the change? (y/n)"} {
		if rows := rowsWith(screen, s); len(rows) != 1 || rows[0] > prompts[0] {
			t.Errorf("%q is on rows %v, want one row above the prompt (row %d)\n%s", s, rows, prompts[0], v.dump())
		}
	}
	if !strings.Contains(v.rawOutput(), "\a") {
		t.Error("no bell for the second waiting task")
	}

	v.send("y\r")
	v.waitText("Second (b) needs you: interaction_confirm")
	v.waitFor("the second prompt", func(s []string) bool { return len(rowsWith(s, "reply ›")) == 2 })
	v.send("y\r")
	if code := v.wait(); code != 0 {
		t.Fatalf("exit %d\n%s", code, v.dump())
	}
	if first, second := p.read("rec.txt"), p.read("rec2.txt"); first != "line:ask\nanswer:y\n" || second != "line:ask\nanswer:y\n" {
		t.Errorf("answers: %q %q", first, second)
	}
}

// --on-interaction=fail fails the task, not only the session, and every
// message names the task the same way.
func TestOnInteractionFailFailsTheTask(t *testing.T) {
	p := newProject(t)
	p.write("wf.yaml", "id: f\nstages:\n  - id: s\n    tasks:\n      - { id: a, name: Asker, adapter: tui, pendingInputs: [\"ask\"] }\n")
	r := p.run("run", "wf.yaml", "--on-interaction", "fail")
	wantCode(t, r, 1)
	s := p.only()
	if s.Status != state.StatusFailed || s.TaskStatus["a"] != state.TaskError {
		t.Errorf("session %s, task %s; want failed, ERROR", s.Status, s.TaskStatus["a"])
	}
	if rec := s.Tasks["a"]; rec.Reason != "interaction_failed" || !strings.Contains(rec.Error, "interaction_confirm") {
		t.Errorf("task record: reason %q, error %q; want the reason and the state it waited in", rec.Reason, rec.Error)
	}
	for _, want := range []string{"task Asker (a) needs a person (interaction_confirm)", "task Asker (a) ERROR", "task Asker (a) failed: needed a person (interaction_confirm)", "last output of Asker (a):"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
		}
	}
	for _, l := range strings.Split(r.stderr, "\n") {
		if strings.Contains(l, "task a ") || strings.Contains(l, "task Asker ") && !strings.Contains(l, "task Asker (a)") {
			t.Errorf("a line names the task otherwise: %q", l)
		}
	}
	show := p.run("show", s.ID)
	wantCode(t, show, 0)
	if !strings.Contains(show.stdout, "ERROR") || strings.Contains(show.stdout, "WAITING_FOR_USER") {
		t.Errorf("show disagrees with the failure:\n%s", show.stdout)
	}
}

// A panel's lines are cut with … to a narrow terminal, not wrapped mid-word.
func TestPanelLinesAreCutToTheWidth(t *testing.T) {
	p := newProject(t)
	p.write("wf.yaml", "id: narrow\nstages:\n  - id: s\n    tasks:\n      - { id: a, name: Asker, adapter: tui, pendingInputs: [\"ask\"] }\n")
	v := startVTerm(t, p, 50, 30, "run", "wf.yaml")
	screen := v.waitFor("the panel's hint", func(s []string) bool {
		return len(rowsWith(s, "── Enter: Enter")) == 1 && len(rowsWith(s, "reply ›")) == 1
	})
	hint := screen[rowsWith(screen, "── Enter: Enter")[0]]
	if !strings.HasSuffix(strings.TrimRight(hint, " "), "…") {
		t.Errorf("the hint line is not cut with …: %q\n%s", hint, v.dump())
	}
	if len(rowsWith(screen, ":quit")) != 0 {
		t.Errorf("the hint line wrapped onto the next row\n%s", v.dump())
	}
	v.send("y\r")
	if code := v.wait(); code != 0 {
		t.Fatalf("exit %d\n%s", code, v.dump())
	}
}
