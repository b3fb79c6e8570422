//go:build e2e

package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vibeteam/vibeteam/e2e/fakegemini"
)

// gemini -p, --auto-approve (yolo: the shell tool is offered and runs):
// the prompt reaches the model, the command runs, the task is DONE.
func TestGeminiHeadless(t *testing.T) {
	w := newGeminiWorld(t, nil)
	r := w.run("run", w.workflow("headless"), "--base-dir", w.project, "--auto-approve", "--headless")
	if r.code != 0 {
		t.Errorf("%s, want 0", r)
	}
	s := w.only()
	w.assertDone(s)
	w.assertPromptBeforeDone(s, "agent", createPrompt)
	w.assertCreated()
	if log := w.taskLog(s.ID, "agent", false); !logShows(log, fakegemini.DoneText) {
		t.Errorf("the task log lacks the model's final reply %q:\n%s", fakegemini.DoneText, clipTail(log, 3000))
	}
	if rec := s.Tasks["agent"]; rec == nil || rec.Mode != "headless" {
		t.Errorf("task record %+v, want mode headless", rec)
	}
	w.assertReport(s, "agent", fakegemini.DoneText)
}

// The Gemini TUI, no terminal, --auto-approve: the prompt is submitted,
// the shell command runs without a question (yolo), and the task is DONE
// once the reply is on the screen.
func TestGeminiInteractiveAutoApprove(t *testing.T) {
	w := newGeminiWorld(t, nil)
	r := w.run("run", w.workflow(""), "--base-dir", w.project, "--auto-approve")
	if r.code != 0 {
		t.Errorf("%s, want 0", r)
	}
	s := w.only()
	w.assertDone(s)
	w.assertPromptBeforeDone(s, "agent", createPrompt)
	w.assertCreated()
	if log := w.taskLog(s.ID, "agent", false); !logShows(log, fakegemini.DoneText) {
		t.Errorf("the task log lacks the model's final reply %q:\n%s", fakegemini.DoneText, clipTail(log, 3000))
	}
}

// gemini -p without --auto-approve does not register its shell tool: the
// call is refused (tool_not_registered). That is a denial, not a success.
func TestGeminiHeadlessNotRegisteredParks(t *testing.T) {
	// The model asks for the shell tool whether or not it is offered, as a
	// model that knows the tool would.
	script := func(c fakegemini.Call) fakegemini.Reply {
		switch {
		case !c.HasLast:
			return fakegemini.Text(fakegemini.OtherText)
		case c.Last.FunctionResponse != nil && strings.Contains(string(c.Last.FunctionResponse.Response), `"error"`):
			return fakegemini.Text("I could not run it.")
		case c.Last.FunctionResponse != nil:
			return fakegemini.Text(fakegemini.DoneText)
		case strings.Contains(strings.ToLower(c.Last.Text), fakegemini.CreateTrigger),
			strings.Contains(strings.ToLower(c.Last.Text), "permission granted"):
			return fakegemini.Shell("touch " + fakegemini.CreatedFile)
		}
		return fakegemini.Text(fakegemini.OtherText)
	}
	w := newGeminiWorld(t, script)
	r := w.run("run", w.workflow("headless"), "--base-dir", w.project, "--headless")
	s := w.only()
	log := w.taskLog(s.ID, "agent", false)
	if r.code != 3 {
		t.Fatalf("%s, want 3 (parked at the denial)\nlog:\n%s", r, clipTail(log, 3000))
	}
	rec := s.Tasks["agent"]
	if rec == nil || rec.Reason != "permission_denied" || rec.Agent == nil || len(rec.Agent.Denials) == 0 || rec.Agent.Denials[0].Tool != "run_shell_command" {
		t.Fatalf("record %+v", rec)
	}
	// Allowed: gemini's own session goes on in yolo mode, and the shell
	// tool runs.
	r = w.run("resume", s.ID, "--base-dir", w.project, "--headless", "--allow", "run_shell_command")
	if r.code != 0 {
		t.Fatalf("%s, want 0", r)
	}
	s = w.only()
	w.assertDone(s)
	if _, err := os.Stat(filepath.Join(w.project, fakegemini.CreatedFile)); err != nil {
		t.Errorf("the continued agent did not create the file: %v", err)
	}
	argv := strings.Join(s.Tasks["agent"].Argv, " ")
	if a := s.Tasks["agent"].Agent; a == nil || a.SessionID != rec.Agent.SessionID || !strings.Contains(argv, "--resume "+rec.Agent.SessionID) || !strings.Contains(argv, "--approval-mode yolo") {
		t.Errorf("gemini's session was not continued: %+v\nargv %s", a, argv)
	}
}

// The Gemini TUI, no terminal, no --auto-approve, a folder not trusted yet:
// nobody can answer "Do you trust the files in this folder?", so the
// session parks (exit 3) there. (Gemini 0.61 sends the -i prompt to the
// model while the dialog is up; the shell call it gets back waits for an
// approval nobody gives, so nothing is run.)
func TestGeminiInteractiveNoTerminalParks(t *testing.T) {
	w := newGeminiWorld(t, nil)
	// Outside CI: with CI set, Gemini shows no trust dialog but exits 55
	// ("not running in a trusted directory"), a plain failure.
	w.env = append(w.env, "CI=")
	r := w.run("run", w.workflow(""), "--base-dir", w.project)
	if r.code != 3 {
		t.Fatalf("%s, want 3 (parked)", r)
	}
	s := w.only()
	if s.Status != "waiting" || s.TaskStatus["agent"] != "WAITING_FOR_USER" {
		t.Errorf("session %s, task %s", s.Status, s.TaskStatus["agent"])
	}
	if !strings.Contains(strings.ToLower(r.stderr), "trust") {
		t.Errorf("stderr does not show the trust question:\n%s", r.stderr)
	}
	if _, err := os.Stat(filepath.Join(w.project, createdFile)); err == nil {
		t.Errorf("%s exists although nobody trusted the folder or approved the command", createdFile)
	}
}
