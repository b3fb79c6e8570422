//go:build e2e

package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vibeteam/vibeteam/e2e/fakeopenai"
)

// The real Codex TUI, no terminal, --auto-approve, on a fresh CODEX_HOME
// (its slowest start, with a splash screen before the trust dialog): the
// auto-policy answers the trust dialog and an approval dialog (the model
// asks to run its command outside the sandbox), the command runs, and the
// task is DONE only after the model got the prompt and answered it. No
// process of the task (Codex's app-server daemon included) outlives
// vibeteam (reapTasks checks every run).
func TestCodexInteractiveAutoApprove(t *testing.T) {
	w := newCodexWorld(t, fakeopenai.CreateFile(true))
	r := w.run("run", w.workflow(""), "--base-dir", w.project, "--auto-approve")
	if r.code != 0 {
		t.Errorf("%s, want 0", r)
	}
	s := w.only()
	w.assertDone(s)
	w.assertPromptBeforeDone(s, "agent", createPrompt)
	w.assertCreated()
	if log := w.taskLog(s.ID, "agent", false); !logShows(log, fakeopenai.DoneText) {
		t.Errorf("the task log lacks the model's final reply %q:\n%s", fakeopenai.DoneText, clipTail(log, 3000))
	}
	answered := w.autoAnswered(s)
	for _, st := range []string{"interaction_trust", "interaction_approval"} {
		if answered[st] == 0 {
			t.Errorf("no auto_action for %s (answered: %v)", st, answered)
		}
	}
	if rec := s.Tasks["agent"]; rec == nil || rec.Mode != "interactive" {
		t.Errorf("task record %+v, want mode interactive", rec)
	}
}

// The real Codex TUI, no terminal, no --auto-approve, fresh CODEX_HOME:
// nobody can answer "Trust this folder?", so the session parks (exit 3)
// there, and the task is never DONE (the splash screen before the dialog
// is not an idle prompt). No process of the task outlives vibeteam.
func TestCodexInteractiveNoTerminalParks(t *testing.T) {
	w := newCodexWorld(t, nil)
	r := w.run("run", w.workflow(""), "--base-dir", w.project)
	if r.code != 3 {
		t.Errorf("%s, want 3 (parked)", r)
	}
	if !strings.Contains(r.stderr, "Trust this folder?") {
		t.Errorf("stderr does not show the screen that waits (the trust dialog):\n%s", r.stderr)
	}
	s := w.only()
	if _, ok := w.taskDoneAt(s, "agent"); ok {
		t.Errorf("the task was DONE although nobody trusted the folder")
	}
	if s.Status != "waiting" {
		t.Errorf("session status %q, want waiting", s.Status)
	}
	if got := s.TaskStatus["agent"]; got != "WAITING_FOR_USER" {
		t.Errorf("task agent %q, want WAITING_FOR_USER", got)
	}
	if evs := eventsOf(w.events(s.ID), "interaction"); len(evs) == 0 || evs[0].str("state") != "interaction_trust" {
		t.Errorf("interaction events %v, want one for interaction_trust", evs)
	}
	if n := len(w.openai.MainRequests()); n != 0 {
		t.Errorf("the model was called %d times before the folder was trusted", n)
	}
	if _, err := os.Stat(filepath.Join(w.project, createdFile)); err == nil {
		t.Errorf("%s exists although nobody trusted the folder", createdFile)
	}
}

// codex exec --json, --auto-approve (the workspace-write sandbox): the
// prompt reaches the model, the command runs, the task is DONE.
func TestCodexHeadless(t *testing.T) {
	w := newCodexWorld(t, nil)
	r := w.run("run", w.workflow("headless"), "--base-dir", w.project, "--auto-approve", "--headless")
	if r.code != 0 {
		t.Errorf("%s, want 0", r)
	}
	s := w.only()
	w.assertDone(s)
	w.assertPromptBeforeDone(s, "agent", createPrompt)
	w.assertCreated()
	log := w.taskLog(s.ID, "agent", false)
	if strings.Contains(log, `{"type":`) || !strings.Contains(log, "▸ command_execution") || !logShows(log, fakeopenai.DoneText) {
		t.Errorf("the task log is not the readable run (the command, the model's reply %q):\n%s", fakeopenai.DoneText, clipTail(log, 3000))
	}
	rec := s.Tasks["agent"]
	if rec == nil || rec.Mode != "headless" || rec.Agent == nil {
		t.Fatalf("task record %+v, want mode headless with the agent's report", rec)
	}
	if a := rec.Agent; a.SessionID == "" || a.Result != fakeopenai.DoneText || a.ToolCalls < 1 || a.Turns != 1 || a.IsError {
		t.Errorf("the agent's report: %+v", *a)
	}
	w.assertReport(s, "agent", fakeopenai.DoneText)
}

// codex exec without --auto-approve runs in its read-only sandbox, where
// the command fails. exec --json says nothing of it; the thread's rollout
// does: the session parks at the denial, and resume --allow continues the
// thread in the workspace-write sandbox, where the command runs.
func TestCodexHeadlessReadOnlyParksThenAllow(t *testing.T) {
	script := func(c fakeopenai.Call) fakeopenai.Reply {
		switch {
		case c.HasLast && c.Last.Type == "function_call_output" && strings.Contains(string(c.Last.Output), "Read-only"):
			return fakeopenai.Text("I could not create it.")
		case c.HasLast && c.Last.Type == "function_call_output":
			return fakeopenai.Text(fakeopenai.DoneText)
		}
		return fakeopenai.Reply{Call: &fakeopenai.FunctionCall{Name: "exec_command", Arguments: map[string]any{"cmd": "touch " + createdFile}}}
	}
	w := newCodexWorld(t, script)
	r := w.run("run", w.workflow("headless"), "--base-dir", w.project, "--headless")
	if r.code != 3 {
		t.Fatalf("%s, want 3 (parked at the denial)", r)
	}
	s := w.only()
	rec := s.Tasks["agent"]
	if rec == nil || rec.Reason != "permission_denied" || rec.Agent == nil || len(rec.Agent.Denials) != 1 || !strings.Contains(rec.Excerpt, "Read-only file system") {
		t.Fatalf("record %+v", rec)
	}
	// The tool is named as codex reported it: exec --json's
	// command_execution item where codex ran the command in its own
	// bubblewrap sandbox, the rollout's exec_command where exec --json said
	// nothing of it. The resume types what the hint says, as a person would.
	tool := ""
	for _, name := range []string{"exec_command", "command_execution"} {
		if strings.Contains(r.stderr, "--allow "+name) {
			tool = name
		}
	}
	if tool == "" {
		t.Fatalf("the way on is not said:\n%s", r.stderr)
	}
	r = w.run("resume", s.ID, "--base-dir", w.project, "--headless", "--allow", tool)
	if r.code != 0 {
		t.Fatalf("%s, want 0", r)
	}
	if _, err := os.Stat(filepath.Join(w.project, createdFile)); err != nil {
		t.Errorf("the continued thread did not create the file: %v", err)
	}
	s = w.only()
	w.assertDone(s)
	after := s.Tasks["agent"]
	argv := strings.Join(after.Argv, " ")
	if after.Agent == nil || after.Agent.SessionID != rec.Agent.SessionID || !strings.Contains(argv, "--sandbox workspace-write resume "+rec.Agent.SessionID) {
		t.Fatalf("the thread was not continued in the wider sandbox: %+v\nargv %s", after.Agent, argv)
	}
	// codex reports a continued thread's usage since its start: the
	// continuation's own share is about the first run's, not first + own.
	if first, own := rec.Agent.Tokens.Input, after.Agent.Tokens.Input; own <= 0 || own >= first*3/2 {
		t.Errorf("input tokens: first run %d, continuation %d: counted twice?", first, own)
	}
}
