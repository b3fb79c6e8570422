//go:build e2e

package e2e

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/vibeteam/vibeteam/e2e/fakeopenai"
)

// opencode run --format json against a fake OpenAI-compatible provider:
// the prompt reaches the model, the bash tool runs the command in the
// task's directory, the task is DONE.
//
// vibeteam starts outside the project (--base-dir points at it), as from
// another directory of a shell: opencode takes its working directory from
// $PWD, so a task started with a stale PWD works in the wrong place.
func TestOpencodeHeadless(t *testing.T) {
	w := newOpencodeWorld(t, nil)
	w.dir = w.root
	r := w.run("run", w.workflow("headless"), "--base-dir", w.project, "--auto-approve", "--headless")
	if r.code != 0 {
		t.Errorf("%s, want 0", r)
	}
	s := w.only()
	w.assertDone(s)
	w.assertPromptBeforeDone(s, "agent", createPrompt)
	w.assertCreated()
	if _, err := os.Stat(filepath.Join(w.dir, createdFile)); err == nil {
		t.Errorf("opencode created %s in %s, where vibeteam started (its PWD), not in the task's directory %s: the task's environment keeps vibeteam's PWD",
			createdFile, w.dir, w.project)
	}
	if log := w.taskLog(s.ID, "agent", false); !logShows(log, fakeopenai.DoneText) {
		t.Errorf("the task log lacks the model's final reply %q:\n%s", fakeopenai.DoneText, clipTail(log, 3000))
	}
	w.assertReport(s, "agent", fakeopenai.DoneText)
}

// The opencode TUI, no terminal, --auto-approve (--auto: no permission is
// asked): the prompt is submitted, the bash tool runs the command, and the
// task is DONE once the reply is on the screen.
func TestOpencodeInteractiveAutoApprove(t *testing.T) {
	w := newOpencodeWorld(t, nil)
	r := w.run("run", w.workflow(""), "--base-dir", w.project, "--auto-approve")
	if r.code != 0 {
		t.Errorf("%s, want 0", r)
	}
	s := w.only()
	w.assertDone(s)
	w.assertPromptBeforeDone(s, "agent", createPrompt)
	w.assertCreated()
}
