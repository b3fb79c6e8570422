//go:build e2e

package e2e

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/vibeteam/vibeteam/e2e/fakeanthropic"
	"github.com/vibeteam/vibeteam/handlers"
)

// Headless: claude -p with stream-json; --auto-approve pre-allows Bash.
func TestClaudeHeadless(t *testing.T) {
	w := newWorld(t, worldOptions{approveKey: true})
	wf := w.workflow("headless")
	r := w.run("run", wf, "--base-dir", w.project, "--auto-approve", "--headless")
	if r.code != 0 {
		t.Fatalf("%s, want 0", r)
	}
	w.assertCreated()
	s := w.only()
	w.assertDone(s)
	// The log is what the agent did, readable: the tool call and the
	// reply, not JSON lines.
	log := w.taskLog(s.ID, "agent", false)
	if strings.Contains(log, `{"type":`) || !strings.Contains(log, "▸ Bash") || !strings.Contains(log, "touch "+fakeanthropic.CreatedFile) || !strings.Contains(log, fakeanthropic.DoneText) {
		t.Errorf("the task log is not the readable run:\n%s", clipTail(log, 3000))
	}
	rec := s.Tasks["agent"]
	if rec == nil || rec.Mode != "headless" || rec.Agent == nil {
		t.Fatalf("task record %+v, want mode headless with the agent's report", rec)
	}
	if a := rec.Agent; a.SessionID == "" || a.Result != fakeanthropic.DoneText || a.ToolCalls != 1 || a.Turns < 2 || a.Tokens.Input == 0 || a.IsError || len(a.Denials) != 0 {
		t.Errorf("the agent's report: %+v", *a)
	}
	kinds := map[string]int{}
	for _, e := range w.events(s.ID) {
		kinds[e.str("event")]++
	}
	for _, k := range []string{"agent.init", "agent.tool_call", "agent.tool_result", "agent.message", "agent.usage"} {
		if kinds[k] == 0 {
			t.Errorf("no %s event", k)
		}
	}
}

// Headless without --auto-approve: claude -p is denied Bash and exits 0.
// That is no success: the session parks with the denial; resume --allow
// Bash continues claude's own session (--resume, --allowedTools=Bash)
// with a message, the model calls Bash again, and the file is made.
func TestClaudeHeadlessDenialThenAllow(t *testing.T) {
	granted := "permission granted"
	script := func(c fakeanthropic.Call) fakeanthropic.Reply {
		switch {
		case fakeanthropic.IsSideRequest(c.Request):
			return fakeanthropic.Text("Create a file")
		case !c.HasLast:
			return fakeanthropic.Text("OK.")
		case c.Last.Type == "tool_result" && c.Last.IsError:
			return fakeanthropic.Text("I was not allowed to run it.")
		case c.Last.Type == "tool_result":
			return fakeanthropic.Text(fakeanthropic.DoneText)
		case c.Last.Type == "text" && (strings.Contains(strings.ToLower(c.Last.Text), fakeanthropic.CreateTrigger) || strings.Contains(strings.ToLower(c.Last.Text), granted)):
			return fakeanthropic.Bash("touch "+fakeanthropic.CreatedFile, "Create a file")
		}
		return fakeanthropic.Text("OK.")
	}
	w := newWorld(t, worldOptions{approveKey: true, script: script})
	wf := w.workflow("headless")
	r := w.run("run", wf, "--base-dir", w.project, "--headless")
	if r.code != 3 {
		t.Fatalf("%s, want 3 (parked at the denial)", r)
	}
	if !strings.Contains(r.stderr, "--allow Bash") {
		t.Errorf("the way out is not said:\n%s", r.stderr)
	}
	s := w.only()
	rec := s.Tasks["agent"]
	if s.Status != "waiting" || rec == nil || rec.Reason != "permission_denied" || rec.Agent == nil || len(rec.Agent.Denials) != 1 || rec.Agent.Denials[0].Tool != "Bash" {
		t.Fatalf("session %s, record %+v", s.Status, rec)
	}
	if !strings.Contains(rec.Excerpt, "touch "+fakeanthropic.CreatedFile) {
		t.Errorf("the excerpt does not show the denied command: %q", rec.Excerpt)
	}
	if _, err := os.Stat(filepath.Join(w.project, fakeanthropic.CreatedFile)); err == nil {
		t.Fatal("the file exists although Bash was denied")
	}
	firstSession := rec.Agent.SessionID
	before := len(w.server.MessageRequests())

	r = w.run("resume", s.ID, "--base-dir", w.project, "--headless", "--allow", "Bash")
	if r.code != 0 {
		t.Fatalf("%s, want 0", r)
	}
	// (Not assertCreated: the first run's tool call failed, by design.)
	if _, err := os.Stat(filepath.Join(w.project, fakeanthropic.CreatedFile)); err != nil {
		t.Errorf("the continued agent did not create the file: %v", err)
	}
	s = w.only()
	w.assertDone(s)
	rec = s.Tasks["agent"]
	if rec.Agent == nil || rec.Agent.SessionID != firstSession || rec.Attempts != 2 || len(rec.Agent.Denials) != 0 {
		t.Errorf("the continued run: %+v (first session %s)", rec, firstSession)
	}
	argv := strings.Join(rec.Argv, " ")
	if !strings.Contains(argv, "--allowedTools=Bash") || !strings.Contains(argv, "--resume "+firstSession) {
		t.Errorf("argv of the continued run: %s", argv)
	}
	// The continued request carries the earlier conversation: the same
	// session, not a new one.
	reqs := w.server.MessageRequests()[before:]
	found := false
	for _, q := range reqs {
		if q.Messages == nil {
			continue
		}
		if last, ok := q.Messages.LastUserBlock(); ok && strings.Contains(strings.ToLower(last.Text), granted) && len(q.Messages.Messages) > 2 {
			found = true
		}
	}
	if !found {
		t.Errorf("no request continued the conversation with the grant:\n%s", w.modelSummary())
	}
}

// An API error is the agent's failure, named, whatever claude's exit code.
func TestClaudeHeadlessAPIError(t *testing.T) {
	script := func(c fakeanthropic.Call) fakeanthropic.Reply {
		return fakeanthropic.Reply{Status: 400}
	}
	w := newWorld(t, worldOptions{approveKey: true, script: script})
	r := w.run("run", w.workflow("headless"), "--base-dir", w.project, "--auto-approve", "--headless")
	if r.code != 1 {
		t.Fatalf("%s, want 1", r)
	}
	rec := w.only().Tasks["agent"]
	if rec == nil || rec.Reason != "agent_error" || !strings.Contains(rec.Error, "400") {
		t.Errorf("record %+v, want agent_error naming the API's 400", rec)
	}
}

// Interactive, no terminal, --auto-approve: the adapter's auto-policy
// answers Claude Code's start-up dialogs in the PTY.
func TestClaudeInteractiveAutoApprove(t *testing.T) {
	for _, tc := range []struct {
		name       string
		approveKey bool
		want       []string // states the auto-policy must have answered
	}{
		{"key-approved", true, []string{"interaction_trust"}},
		{"key-dialog", false, []string{"interaction_trust", "interaction_api_key"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t, worldOptions{approveKey: tc.approveKey})
			wf := w.workflow("")
			r := w.run("run", wf, "--base-dir", w.project, "--auto-approve")
			if r.code != 0 {
				t.Fatalf("%s, want 0", r)
			}
			w.assertCreated()
			s := w.only()
			w.assertDone(s)
			if rec := s.Tasks["agent"]; rec == nil || rec.Mode != "interactive" {
				t.Errorf("task record %+v, want mode interactive", rec)
			}
			answered := map[string]bool{}
			for _, e := range eventsOf(w.events(s.ID), "auto_action") {
				if e.str("state") == "" || e.str("keys") == "" {
					t.Errorf("auto_action event without state or keys: %v", e)
				}
				answered[e.str("state")] = true
			}
			for _, st := range tc.want {
				if !answered[st] {
					t.Errorf("no auto_action for %s (answered: %v)", st, answered)
				}
			}
		})
	}
}

// Interactive, no terminal, --auto-approve, and a tool call that the
// injected --allowedTools does not cover (NotebookEdit): Claude Code asks
// for permission and the auto-policy answers the menu.
func TestClaudeInteractiveAutoApprovePermission(t *testing.T) {
	root := worldRoot(t)
	nb := filepath.Join(root, "project", "e2e.ipynb")
	script := fakeanthropic.Sequence(fakeanthropic.CreateTrigger, fakeanthropic.DoneText, "OK.", "Create a file",
		fakeanthropic.Bash("touch "+fakeanthropic.CreatedFile, "Create a file"),
		fakeanthropic.CallTool("Read", map[string]any{"file_path": nb}),
		fakeanthropic.CallTool("NotebookEdit", map[string]any{
			"notebook_path": nb, "new_source": "print('vibeteam e2e')", "cell_type": "code", "edit_mode": "insert",
		}),
	)
	w := newWorldIn(t, root, worldOptions{approveKey: true, script: script})
	w.write(nb, emptyNotebook)
	r := w.run("run", w.workflow(""), "--base-dir", w.project, "--auto-approve")
	if r.code != 0 {
		t.Fatalf("%s, want 0", r)
	}
	w.assertCreated()
	s := w.only()
	w.assertDone(s)
	if b, _ := os.ReadFile(nb); !strings.Contains(string(b), "vibeteam e2e") {
		t.Errorf("the notebook was not edited:\n%s", b)
	}
	var states []string
	for _, e := range eventsOf(w.events(s.ID), "auto_action") {
		states = append(states, e.str("state"))
	}
	if !slices.Contains(states, "interaction_permission") {
		t.Errorf("no auto_action for interaction_permission; auto_action states: %v", states)
	}
}

const emptyNotebook = `{"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
`

// Interactive, no terminal, no --auto-approve: nobody can answer the trust
// dialog, so the session parks (exit 3) with the screen in the message;
// resuming it with --auto-approve then finishes the work.
func TestClaudeInteractiveNoTerminalParks(t *testing.T) {
	w := newWorld(t, worldOptions{approveKey: true})
	wf := w.workflow("")
	r := w.run("run", wf, "--base-dir", w.project)
	if r.code != 3 {
		t.Fatalf("%s, want 3 (parked)", r)
	}
	if !strings.Contains(r.stderr, "trust this folder") {
		t.Errorf("stderr does not show the screen that waits (the trust dialog):\n%s", r.stderr)
	}
	s := w.only()
	if s.Status != "waiting" {
		t.Errorf("session status %q, want waiting", s.Status)
	}
	if got := s.TaskStatus["agent"]; got != "WAITING_FOR_USER" {
		t.Errorf("task agent %q, want WAITING_FOR_USER", got)
	}
	if rec := s.Tasks["agent"]; rec == nil || !strings.Contains(rec.Excerpt, "trust this folder") {
		t.Errorf("the task record keeps no excerpt of the trust dialog: %+v", rec)
	}
	if !strings.Contains(r.stderr, "vibeteam resume "+s.ID) {
		t.Errorf("stderr does not say how to resume %s:\n%s", s.ID, r.stderr)
	}
	if evs := eventsOf(w.events(s.ID), "interaction"); len(evs) == 0 || evs[0].str("state") != "interaction_trust" {
		t.Errorf("interaction events %v, want one for interaction_trust", evs)
	}
	if n := len(w.server.MessageRequests()); n != 0 {
		t.Errorf("the model was called %d times before the folder was trusted", n)
	}
	if _, err := os.Stat(filepath.Join(w.project, fakeanthropic.CreatedFile)); err == nil {
		t.Errorf("%s exists although nobody trusted the folder", fakeanthropic.CreatedFile)
	}
	if t.Failed() {
		return
	}

	r = w.run("resume", s.ID, "--base-dir", w.project, "--auto-approve")
	if r.code != 0 {
		t.Fatalf("%s, want 0", r)
	}
	w.assertCreated()
	w.assertDone(w.only())
}

// Interactive, no --auto-approve, a person at a terminal: vibeteam runs in
// a PTY of its own and pauses at each of Claude Code's questions with a
// panel ("… needs you: STATE ──", the screen, then `reply › `); the test
// types the answers as a person would.
func TestClaudeInteractiveAtTerminal(t *testing.T) {
	w := newWorld(t, worldOptions{approveKey: true})
	args := []string{"run", w.workflow(""), "--base-dir", w.project}
	s := w.startTTY(args...)
	answered := map[string]int{}
	s.answerPauses(func(p pause) string {
		reply, final := answerMenu(t, p)
		if final {
			answered[p.state]++
		}
		return reply
	}, 0)
	r := s.finish(w, args)
	if r.code != 0 {
		t.Fatalf("%s, want 0", r)
	}
	for _, st := range []string{"interaction_trust", "interaction_permission"} {
		if answered[st] == 0 {
			t.Errorf("vibeteam never asked about %s (answered: %v)", st, answered)
		}
	}
	for st, n := range answered {
		if n > 1 {
			t.Errorf("asked %d times about %s", n, st)
		}
	}
	w.assertCreated()
	sess := w.only()
	w.assertDone(sess)
	if evs := eventsOf(w.events(sess.ID), "auto_action"); len(evs) > 0 {
		t.Errorf("auto_action events without --auto-approve: %v", evs)
	}
}

// menuLabels are the options a person picks in Claude Code's menus.
var menuLabels = map[string]string{
	"interaction_trust":      "Yes, I trust this folder",
	"interaction_api_key":    "Yes",
	"interaction_permission": "Yes",
}

// answerMenu answers Claude Code's menus as a person would, from the
// screen vibeteam shows them: an arrow key (:up, :down) while the ❯ is not
// on the option to pick (2.1.331+ menus are unnumbered with "No" first),
// Enter once it is. final says the reply answers the question (an arrow
// only moves within it, and the person is asked again).
func answerMenu(t *testing.T, p pause) (reply string, final bool) {
	label, ok := menuLabels[p.state]
	if !ok {
		t.Errorf("pause: %s asks an unexpected question %q:\n%s", p.task, p.state, p.panel)
		return ":quit\r", true
	}
	m := handlers.FindOption(p.panel, label)
	switch {
	case m.OnOption():
		t.Logf("pause: %s %s; ❯ on %q: Enter", p.task, p.state, label)
		return "\r", true
	case m.Key() == "\x1b[B":
		t.Logf("pause: %s %s; :down toward %q", p.task, p.state, label)
		return ":down\r", false
	case m.Key() == "\x1b[A":
		t.Logf("pause: %s %s; :up toward %q", p.task, p.state, label)
		return ":up\r", false
	}
	t.Errorf("pause: %s %s: the option %q or the selection is not on the screen shown:\n%s", p.task, p.state, label, p.panel)
	return ":quit\r", true
}

// Two interactive tasks in one stage, at a terminal: their questions come
// one at a time, each task's once.
func TestClaudeParallelAtTerminal(t *testing.T) {
	w := newWorld(t, worldOptions{approveKey: true})
	ids := []string{"alpha", "beta"}
	args := []string{"run", w.workflow("", ids...), "--base-dir", w.project}
	s := w.startTTY(args...)
	answered := map[string]int{}
	s.answerPauses(func(p pause) string {
		reply, final := answerMenu(t, p)
		if final {
			answered[p.task+" "+p.state]++
		}
		return reply
	}, 0)
	r := s.finish(w, args)
	if r.code != 0 {
		t.Fatalf("%s, want 0", r)
	}
	for _, task := range []string{"Alpha", "Beta"} {
		for _, st := range []string{"interaction_trust", "interaction_permission"} {
			if n := answered[task+" "+st]; n != 1 {
				t.Errorf("%s was asked about %s %d times, want 1 (all: %v)", task, st, n, answered)
			}
		}
	}
	w.assertCreated()
	w.assertDone(w.only(), ids...)
}

// Two interactive tasks in one stage, no terminal, --auto-approve.
func TestClaudeParallelAutoApprove(t *testing.T) {
	w := newWorld(t, worldOptions{approveKey: true})
	ids := []string{"alpha", "beta"}
	r := w.run("run", w.workflow("", ids...), "--base-dir", w.project, "--auto-approve")
	if r.code != 0 {
		t.Fatalf("%s, want 0", r)
	}
	w.assertCreated()
	s := w.only()
	w.assertDone(s, ids...)
	trusted := map[string]bool{}
	for _, e := range eventsOf(w.events(s.ID), "auto_action") {
		if e.str("state") == "interaction_trust" {
			trusted[e.str("task")] = true
		}
	}
	for _, id := range ids {
		if !trusted[id] {
			t.Errorf("no auto_action answered %s's trust dialog", id)
		}
	}
}

// Interrupted while the agent waits for the model: vibeteam stops Claude
// Code's process group, saves the session (exit 130, cancelled), and a
// resume runs the task again to the end.
func TestClaudeInterruptAndResume(t *testing.T) {
	var hang atomic.Bool
	hang.Store(true)
	asked := make(chan struct{}, 1)
	release := make(chan struct{})
	normal := fakeanthropic.CreateFile()
	script := func(c fakeanthropic.Call) fakeanthropic.Reply {
		if hang.Load() && !fakeanthropic.IsSideRequest(c.Request) {
			// The model "thinks" until the test ends.
			select {
			case asked <- struct{}{}:
			default:
			}
			<-release
			return fakeanthropic.Text("too late")
		}
		return normal(c)
	}
	w := newWorld(t, worldOptions{approveKey: true, script: script})
	t.Cleanup(func() { close(release) }) // runs before the server closes
	args := []string{"run", w.workflow(""), "--base-dir", w.project, "--auto-approve"}
	cmd := w.command(args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-asked:
	case err := <-done:
		w.addRun(&result{args: args, code: exitCode(err), stderr: stderr.String(), duration: time.Since(start)})
		t.Fatalf("vibeteam exited before the agent called the model: %v", err)
	case <-time.After(runTimeout):
		_ = stopProcess(cmd, done)
		t.Fatalf("the agent never called the model")
	}
	sigAt := time.Now()
	_ = cmd.Process.Signal(syscall.SIGINT)
	var err error
	select {
	case err = <-done:
	case <-time.After(30 * time.Second):
		t.Errorf("vibeteam still running 30 s after SIGINT")
		err = stopProcess(cmd, done)
	}
	r := &result{args: args, code: exitCode(err), stderr: stderr.String(), duration: time.Since(start)}
	w.addRun(r)
	t.Logf("%s; stopped %s after SIGINT", r, time.Since(sigAt).Round(10*time.Millisecond))
	w.reapTasks()
	if r.code != 130 {
		t.Fatalf("%s, want 130", r)
	}
	s := w.only()
	if s.Status != "cancelled" {
		t.Errorf("session status %q, want cancelled", s.Status)
	}
	if !strings.Contains(r.stderr, "vibeteam resume "+s.ID) {
		t.Errorf("stderr does not say how to resume:\n%s", r.stderr)
	}

	hang.Store(false)
	r = w.run("resume", s.ID, "--base-dir", w.project, "--auto-approve")
	if r.code != 0 {
		t.Fatalf("%s, want 0", r)
	}
	w.assertCreated()
	w.assertDone(w.only())
}

// pendingInputs: after the prompt's turn, vibeteam types each queued input
// into Claude Code's prompt box at the idle screen, one turn each.
func TestClaudeQueuedInput(t *testing.T) {
	w := newWorld(t, worldOptions{approveKey: true})
	wf := filepath.Join(w.root, "wf.yaml")
	w.write(wf, `id: e2e-queue
stages:
  - id: only
    tasks:
      - id: agent
        adapter: claude
        timeout: 100s
        prompt: Say hello first.
        pendingInputs:
          - Now please `+fakeanthropic.CreateTrigger+` `+fakeanthropic.CreatedFile+`.
`)
	r := w.run("run", wf, "--base-dir", w.project, "--auto-approve")
	if r.code != 0 {
		t.Fatalf("%s, want 0", r)
	}
	w.assertCreated()
	s := w.only()
	w.assertDone(s)
	if evs := eventsOf(w.events(s.ID), "queue_sent"); len(evs) != 1 {
		t.Errorf("queue_sent events: %v, want 1", evs)
	}
	// The queued text arrived as one user message, not split by the Enter.
	var texts []string
	for _, req := range w.server.MessageRequests() {
		if last, ok := req.Messages.LastUserBlock(); ok && last.Type == "text" && !fakeanthropic.IsSideRequest(req.Messages) {
			texts = append(texts, last.Text)
		}
	}
	want := []string{"Say hello first.", "Now please " + fakeanthropic.CreateTrigger + " " + fakeanthropic.CreatedFile + "."}
	if !slices.Equal(texts, want) {
		t.Errorf("prompts the model got: %q, want %q", texts, want)
	}
}

// Ctrl-C at a pause, as a person at a terminal would: vibeteam stops the
// task, saves the session and exits 130 at once (README: exit codes).
func TestClaudeInterruptAtPause(t *testing.T) {
	w := newWorld(t, worldOptions{approveKey: true})
	args := []string{"run", w.workflow(""), "--base-dir", w.project}
	s := w.startTTY(args...)
	var interruptedAt time.Time
	s.answerPauses(func(p pause) string {
		if interruptedAt.IsZero() {
			interruptedAt = time.Now()
			t.Logf("pause: %s %s; typing Ctrl-C", p.task, p.state)
			return "\x03" // the PTY's line discipline sends SIGINT to vibeteam
		}
		t.Errorf("asked again after Ctrl-C: %s %s", p.task, p.state)
		return ""
	}, 20*time.Second)
	if interruptedAt.IsZero() {
		r := s.finish(w, args)
		t.Fatalf("%s: no pause to interrupt", r)
	}
	if !s.hasExited() {
		t.Errorf("vibeteam still running %s after Ctrl-C at the pause; its goroutines:\n%s",
			time.Since(interruptedAt).Round(time.Second), s.goroutines())
	}
	r := s.finish(w, args)
	if r.code != 130 {
		t.Fatalf("%s, want 130", r)
	}
	sess := w.only()
	if sess.Status != "cancelled" {
		t.Errorf("session status %q, want cancelled", sess.Status)
	}
	if !strings.Contains(r.stderr, "vibeteam resume "+sess.ID) {
		t.Errorf("the terminal does not say how to resume")
	}
}

// waitText waits until the terminal shows want, or vibeteam exits, or the
// time is up.
func (s *ttySession) waitText(want string, timeout time.Duration) bool {
	deadline := time.After(timeout)
	for {
		if strings.Contains(s.text(), want) {
			return true
		}
		select {
		case <-s.changed:
		case <-s.exited:
			return strings.Contains(s.text(), want)
		case <-deadline:
			return false
		}
	}
}

// Headless claude -p at a terminal, no --auto-approve: Bash is denied, and
// the person is asked; "o" (allow once) continues claude's own session
// with Bash allowed, and the file is made.
func TestClaudeHeadlessDenialAtTerminal(t *testing.T) {
	script := func(c fakeanthropic.Call) fakeanthropic.Reply {
		switch {
		case fakeanthropic.IsSideRequest(c.Request):
			return fakeanthropic.Text("Create a file")
		case c.HasLast && c.Last.Type == "tool_result" && c.Last.IsError:
			return fakeanthropic.Text("I was not allowed to run it.")
		case c.HasLast && c.Last.Type == "tool_result":
			return fakeanthropic.Text(fakeanthropic.DoneText)
		case c.HasLast && c.Last.Type == "text":
			return fakeanthropic.Bash("touch "+fakeanthropic.CreatedFile, "Create a file")
		}
		return fakeanthropic.Text("OK.")
	}
	w := newWorld(t, worldOptions{approveKey: true, script: script})
	args := []string{"run", w.workflow("headless"), "--base-dir", w.project}
	s := w.startTTY(args...)
	if !s.waitText("permission › ", 60*time.Second) {
		t.Fatalf("no permission question:\n%s", clipTail(s.text(), 3000))
	}
	if text := s.text(); !strings.Contains(text, "permission: task Agent (claude) was denied") || !strings.Contains(text, "touch "+fakeanthropic.CreatedFile) {
		t.Errorf("the question does not show the denied call:\n%s", clipTail(text, 3000))
	}
	s.send("o\r")
	r := s.finish(w, args)
	if r.code != 0 {
		t.Fatalf("%s, want 0", r)
	}
	if _, err := os.Stat(filepath.Join(w.project, fakeanthropic.CreatedFile)); err != nil {
		t.Errorf("the continued agent did not create the file: %v", err)
	}
	rec := w.only().Tasks["agent"]
	if argv := strings.Join(rec.Argv, " "); !strings.Contains(argv, "--allowedTools=Bash") || !strings.Contains(argv, "--resume "+rec.Agent.SessionID) {
		t.Errorf("not continued with Bash allowed: %s", argv)
	}
}
