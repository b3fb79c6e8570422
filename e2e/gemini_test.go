//go:build e2e

package e2e

import (
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
