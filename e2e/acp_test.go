//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vibeteam/vibeteam/e2e/fakeanthropic"
	"github.com/vibeteam/vibeteam/e2e/fakegemini"
	"github.com/vibeteam/vibeteam/e2e/fakeopenai"
)

// The five agents the tier drives over the Agent Client Protocol: the
// adapter's name (and the CLI it runs), and the ACP command it needs.
var acpAgents = []struct{ name, acpBin string }{
	{"claude", "claude-agent-acp"},
	{"codex", "codex-acp"},
	{"gemini", "gemini"},
	{"opencode", "opencode"},
	{"qwen", "qwen"},
}

// acpRule: a user message containing trigger (lower case) makes the model
// run command through the agent's shell tool.
type acpRule struct{ trigger, command string }

// The continuation messages vibeteam sends when it loads an agent session
// again (core/taskrun): after `resume --allow`, and after an interruption.
const (
	grantedTrigger     = "permission granted"
	interruptedTrigger = "interrupted"
	// freshSessionTrigger is in the note of a fresh session that replaces
	// one the agent could not load.
	freshSessionTrigger = "could not be continued"
)

// acpModel is one fake model's behaviour, the same for every agent: a user
// message matching a rule calls its command; a tool result ends the turn
// with done; anything else (side requests among them) gets a short text.
type acpModel struct {
	rules []acpRule
	done  string
	// always, when set, is the answer to every main-loop request.
	always string
}

// decide answers by the latest user text (userText, when the request's
// latest item is one) or tool result (isResult); offers says whether the
// request offers the agent's shell tool (side requests do not).
func (m acpModel) decide(userText string, isResult, offers bool) (command, text string) {
	switch {
	case !offers:
		return "", "Create a file"
	case m.always != "":
		return "", m.always
	case isResult:
		return "", m.done
	}
	low := strings.ToLower(userText)
	for _, r := range m.rules {
		if strings.Contains(low, r.trigger) {
			return r.command, ""
		}
	}
	return "", "OK."
}

// newACPWorld is a world for agent run over ACP, its fake model server
// scripted by m.
func newACPWorld(t *testing.T, agent string, m acpModel) *world {
	t.Helper()
	for _, a := range acpAgents {
		if a.name == agent {
			needAgent(t, a.acpBin)
		}
	}
	if m.done == "" {
		m.done = acpDone
	}
	w := newACPAgentWorld(t, agent, m)
	w.timeout = acpRunTimeout
	return w
}

func newACPAgentWorld(t *testing.T, agent string, m acpModel) *world {
	switch agent {
	case "claude":
		return newWorld(t, worldOptions{approveKey: true, script: func(c fakeanthropic.Call) fakeanthropic.Reply {
			cmd, text := m.decide(c.Last.Text, c.Last.Type == "tool_result", c.HasLast && !fakeanthropic.IsSideRequest(c.Request))
			if cmd != "" {
				return fakeanthropic.Bash(cmd, "Run a command")
			}
			return fakeanthropic.Text(text)
		}})
	case "codex":
		// Escalated: in workspace-write codex runs a plain touch in its
		// sandbox without asking; a command that asks to run outside it
		// is what reaches the client as a permission request.
		w := newCodexWorld(t, openaiScript(m, "exec_command", func(cmd string) fakeopenai.Reply { return fakeopenai.Exec(cmd, true) }))
		w.env = append(w.env, "NO_BROWSER=1")
		return w
	case "opencode":
		return newOpencodeWorld(t, openaiScript(m, "bash", fakeopenai.Bash))
	case "gemini":
		w := newGeminiWorld(t, func(c fakegemini.Call) fakegemini.Reply {
			offers := c.HasLast && c.Request.HasTool("run_shell_command")
			cmd, text := m.decide(c.Last.Text, c.Last.FunctionResponse != nil, offers)
			if cmd != "" {
				return fakegemini.Shell(cmd)
			}
			return fakegemini.Text(text)
		})
		// gemini --acp has no trust dialog to answer: the folder is
		// trusted up front, as its ACP clients do.
		w.env = append(w.env, "GEMINI_CLI_TRUST_WORKSPACE=true")
		return w
	case "qwen":
		return newQwenWorld(t, openaiScript(m, "run_shell_command", func(cmd string) fakeopenai.Reply {
			return fakeopenai.Reply{Call: &fakeopenai.FunctionCall{Name: "run_shell_command", Arguments: map[string]any{"command": cmd, "description": "Run a command"}}}
		}))
	}
	t.Fatalf("unknown ACP agent %q", agent)
	return nil
}

// acpRunTimeout bounds each vibeteam run of the ACP tier, and acpTaskTimeout
// each task: opencode and qwen take up to a minute to start on a loaded
// 2-core machine.
const (
	acpRunTimeout  = 5 * time.Minute
	acpTaskTimeout = "280s"
)

// acpWorkflow is the world's workflow of one acp task asked to create the
// file, with the ACP tier's task timeout.
func (w *world) acpWorkflow() string {
	w.t.Helper()
	path := w.workflow("acp")
	data, err := os.ReadFile(path)
	if err != nil {
		w.t.Fatal(err)
	}
	w.write(path, strings.Replace(string(data), "timeout: "+w.taskTimeout(), "timeout: "+acpTaskTimeout, 1))
	return path
}

// acpDone is the model's last word after a tool's result.
const acpDone = "Done: the file is there."

func openaiScript(m acpModel, tool string, call func(string) fakeopenai.Reply) fakeopenai.Script {
	return func(c fakeopenai.Call) fakeopenai.Reply {
		text := ""
		if c.HasLast && c.Last.IsUserMessage() {
			text = c.Last.Text()
		}
		cmd, reply := m.decide(text, c.HasLast && c.Last.IsCallOutput(), c.HasLast && c.Request.HasTool(tool))
		if cmd != "" {
			return call(cmd)
		}
		return fakeopenai.Text(reply)
	}
}

// newQwenWorld is a world for Qwen Code: OpenAI auth selected in HOME's
// settings, OPENAI_BASE_URL at a fake OpenAI-compatible server (chat
// completions) running script.
func newQwenWorld(t *testing.T, script fakeopenai.Script) *world {
	t.Helper()
	needAgent(t, "qwen")
	w := newBareWorld(t, "qwen", worldRoot(t))
	w.openai = fakeopenai.New(t, script)
	w.write(filepath.Join(w.home, ".qwen", "settings.json"), `{"security":{"auth":{"selectedType":"openai"}}}`+"\n")
	w.env = []string{"OPENAI_API_KEY=sk-test-e2e", "OPENAI_BASE_URL=" + w.openai.URL() + "/v1", "OPENAI_MODEL=fake-model"}
	return w
}

// userTextsAfter is, for each main-loop model request after the first
// skip ones, the text of every user message of its conversation.
func (w *world) userTextsAfter(skip int) [][]string {
	var out [][]string
	switch {
	case w.server != nil:
		reqs := w.server.MessageRequests()
		for _, r := range reqs[min(skip, len(reqs)):] {
			if r.Messages == nil || fakeanthropic.IsSideRequest(r.Messages) {
				continue
			}
			var texts []string
			for _, m := range r.Messages.Messages {
				for _, b := range m.Content {
					if m.Role == "user" && b.Type == "text" {
						texts = append(texts, b.Text)
					}
				}
			}
			out = append(out, texts)
		}
	case w.openai != nil:
		reqs := w.openai.MainRequests()
		for _, r := range reqs[min(skip, len(reqs)):] {
			out = append(out, r.Responses.UserTexts())
		}
	case w.gemini != nil:
		reqs := w.gemini.MainRequests()
		for _, r := range reqs[min(skip, len(reqs)):] {
			out = append(out, r.Generate.UserTexts())
		}
	}
	return out
}

// modelRequests counts the main-loop requests the fake model got so far.
func (w *world) modelRequests() int {
	switch {
	case w.server != nil:
		return len(w.server.MessageRequests())
	case w.openai != nil:
		return len(w.openai.MainRequests())
	case w.gemini != nil:
		return len(w.gemini.MainRequests())
	}
	return 0
}

// assertConversationGoesOn checks that a model request after the first
// skip ones carried both the task's first prompt and the continuation
// message (containing trigger): the agent's session went on, it was not a
// fresh one.
func (w *world) assertConversationGoesOn(skip int, trigger string) {
	w.t.Helper()
	for _, texts := range w.userTextsAfter(skip) {
		first, cont := false, false
		for _, t := range texts {
			first = first || strings.Contains(t, createTrigger)
			cont = cont || strings.Contains(strings.ToLower(t), trigger)
		}
		if first && cont {
			return
		}
	}
	w.t.Errorf("no model request after the resume carried the first prompt and the %q message in one conversation (a fresh session?):\n%s", trigger, w.modelSummary())
}

// acpEvents counts the task's agent events by kind, and sums the input
// tokens of its agent.usage events.
func (w *world) acpEvents(s *session) (map[string]int, float64) {
	kinds, tokens := map[string]int{}, 0.0
	for _, e := range w.events(s.ID) {
		kinds[e.str("event")]++
		if e.str("event") == "agent.usage" {
			if v, ok := e["input_tokens"].(float64); ok {
				tokens += v
			}
		}
	}
	return kinds, tokens
}

// forEachACPAgent runs test once per agent, as a subtest.
func forEachACPAgent(t *testing.T, test func(t *testing.T, agent string)) {
	for _, a := range acpAgents {
		t.Run(a.name, func(t *testing.T) { test(t, a.name) })
	}
}

// --auto-approve over ACP: the file is created (the permission answered by
// the adapter's policy, by option kind), the task is DONE on end_turn, its
// ACP session id is journaled, and the agent's tokens reach agent.usage.
func TestACPAutoApproveCreatesFile(t *testing.T) {
	forEachACPAgent(t, func(t *testing.T, agent string) {
		w := newACPWorld(t, agent, acpModel{rules: []acpRule{{createTrigger, "touch " + createdFile}}})
		r := w.run("run", w.acpWorkflow(), "--base-dir", w.project, "--auto-approve")
		if r.code != 0 {
			t.Fatalf("%s, want 0", r)
		}
		s := w.only()
		w.assertDone(s)
		w.assertCreated()
		rec := s.Tasks["agent"]
		if rec.Mode != "acp" || rec.Reason != "end_turn" || rec.Agent == nil || rec.Agent.SessionID == "" || rec.Agent.Result != acpDone {
			t.Errorf("the task's record: mode %q reason %q agent %+v", rec.Mode, rec.Reason, rec.Agent)
		}
		kinds, tokens := w.acpEvents(s)
		for _, k := range []string{"agent.init", "agent.tool_call", "agent.message", "agent.usage"} {
			if kinds[k] == 0 {
				t.Errorf("no %s event (events: %v)", k, kinds)
			}
		}
		if tokens <= 0 {
			t.Errorf("agent.usage carries no input tokens (events: %v)", kinds)
		}
	})
}

// Without --auto-approve and with no terminal: the agent's permission
// request parks the session (exit 3) and creates nothing; `resume --allow
// TOOL` loads the same ACP session, the tool runs, the task is DONE, and the
// fake model sees the first conversation go on.
func TestACPParkThenResumeAllow(t *testing.T) {
	forEachACPAgent(t, func(t *testing.T, agent string) {
		w := newACPWorld(t, agent, acpModel{rules: []acpRule{{createTrigger, "touch " + createdFile}, {grantedTrigger, "touch " + createdFile}}})
		r := w.run("run", w.acpWorkflow(), "--base-dir", w.project)
		if r.code != 3 {
			t.Fatalf("%s, want 3 (parked at the permission)", r)
		}
		s := w.only()
		rec := s.Tasks["agent"]
		if s.TaskStatus["agent"] != "WAITING_FOR_USER" || rec.Agent == nil || rec.Agent.SessionID == "" || len(rec.Agent.Denials) == 0 {
			t.Fatalf("task %s, record %+v", s.TaskStatus["agent"], rec)
		}
		if _, err := os.Stat(filepath.Join(w.project, createdFile)); err == nil {
			t.Fatalf("%s exists although no one allowed the command", createdFile)
		}
		tool := rec.Agent.Denials[0].Tool
		if !strings.Contains(r.stderr, "--allow "+tool) {
			t.Errorf("the way out (--allow %s) is not said:\n%s", tool, r.stderr)
		}
		if show := w.run("show", s.ID, "--base-dir", w.project); !strings.Contains(show.stdout, createdFile) {
			t.Errorf("show lacks the question:\n%s", show.stdout)
		}
		firstSession, before := rec.Agent.SessionID, w.modelRequests()
		afterGeminisMinute(agent)
		r = w.run("resume", s.ID, "--base-dir", w.project, "--allow", tool)
		if r.code != 0 {
			t.Fatalf("%s, want 0", r)
		}
		if _, err := os.Stat(filepath.Join(w.project, createdFile)); err != nil {
			t.Errorf("the resumed agent did not create the file: %v", err)
		}
		s = w.only()
		w.assertDone(s)
		if got := s.Tasks["agent"].Agent; got == nil || got.SessionID != firstSession {
			t.Errorf("the resumed run's agent session: %+v, want %s", got, firstSession)
		}
		w.assertConversationGoesOn(before, grantedTrigger)
	})
}

// afterGeminisMinute waits, for gemini, until the clock's minute is past
// the one its session began in. gemini 0.61 names a session's file by the
// minute it began and its id; a session/load within that same minute makes
// a fresh record under the same name, which hides the conversation
// ("No previous sessions found for this project"), and vibeteam's resume
// can only start afresh (the CLI test TestACPResumeOfAnUnloadableSessionStartsFresh covers that). A
// person's resume is rarely that quick; the test's always is.
func afterGeminisMinute(agent string) {
	if agent == "gemini" {
		time.Sleep(time.Until(time.Now().UTC().Truncate(time.Minute).Add(time.Minute + 500*time.Millisecond)))
	}
}

// Ctrl-C while the agent's tool runs: vibeteam cancels the turn, stops the
// agent (no process left) and saves the session with the ACP session id;
// `resume` loads that session and the agent goes on to DONE.
func TestACPInterruptMidToolThenResume(t *testing.T) {
	forEachACPAgent(t, func(t *testing.T, agent string) {
		started := "e2e-started.txt"
		w := newACPWorld(t, agent, acpModel{rules: []acpRule{
			// A fresh session (the agent kept none) is told so first.
			{freshSessionTrigger, "touch " + createdFile},
			{createTrigger, "touch " + started + " && sleep 300"},
			{interruptedTrigger, "touch " + createdFile},
		}})
		cmd := w.command("run", w.acpWorkflow(), "--base-dir", w.project, "--auto-approve")
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		var out strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		waitUntil(t, acpRunTimeout-time.Minute, done, func() bool {
			_, err := os.Stat(filepath.Join(w.project, started))
			return err == nil
		})
		_ = cmd.Process.Signal(syscall.SIGINT)
		var err error
		select {
		case err = <-done:
		case <-time.After(acpRunTimeout):
			t.Errorf("vibeteam still running %s after Ctrl-C", acpRunTimeout)
			err = stopProcess(cmd, done)
		}
		r := &result{args: []string{"run (Ctrl-C)"}, code: exitCode(err), stderr: out.String()}
		w.addRun(r)
		w.reapTasks()
		if r.code == 0 {
			t.Fatalf("exit 0 after Ctrl-C:\n%s", r.stderr)
		}
		s := w.only()
		rec := s.Tasks["agent"]
		if rec == nil || rec.Agent == nil || rec.Agent.SessionID == "" || s.TaskStatus["agent"] == "DONE" {
			t.Fatalf("after Ctrl-C: task %s, record %+v", s.TaskStatus["agent"], rec)
		}
		firstSession, before := rec.Agent.SessionID, w.modelRequests()
		afterGeminisMinute(agent)
		r2 := w.run("resume", s.ID, "--base-dir", w.project, "--auto-approve")
		if r2.code != 0 {
			t.Fatalf("%s, want 0", r2)
		}
		s = w.only()
		w.assertDone(s)
		if _, err := os.Stat(filepath.Join(w.project, createdFile)); err != nil {
			t.Errorf("the resumed agent did not create the file: %v", err)
		}
		if got := s.Tasks["agent"].Agent; got == nil || got.SessionID != firstSession {
			t.Errorf("the resumed run's agent session: %+v, want %s", got, firstSession)
		}
		w.assertConversationGoesOn(before, interruptedTrigger)
	})
}

// waitUntil polls cond until it holds, failing the test when vibeteam
// exits first or the bound passes.
func waitUntil(t *testing.T, bound time.Duration, exited <-chan error, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(bound)
	for !cond() {
		select {
		case err := <-exited:
			t.Fatalf("vibeteam exited (%v) before the condition held", err)
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("condition not met within %s", bound)
		}
	}
}

// A grimoire agent step in ACP mode: its outputs and summary come from the
// agent's final message, as in headless mode.
func TestACPAgentStepOutputs(t *testing.T) {
	forEachACPAgent(t, func(t *testing.T, agent string) {
		final := "Done.\n\n```json\n{\"success\": true, \"summary\": \"ran on " + agent + "\", \"outputs\": {\"cli\": \"" + agent + "\"}}\n```"
		w := newACPWorld(t, agent, acpModel{always: final})
		g := filepath.Join(w.root, "step.yaml")
		w.write(g, fmt.Sprintf("name: e2e-step\nsteps:\n  - name: work\n    type: agent\n    adapter: %s\n    executionMode: acp\n    spell: \"Report what you did.\\n\"\n    timeout: "+acpTaskTimeout+"\n", agent))
		r := w.run("run", g, "--base-dir", w.project, "--auto-approve")
		if r.code != 0 {
			t.Fatalf("%s, want 0", r)
		}
		run, ok := w.only().Runs["0"]
		if !ok || run.Status != "done" || run.Summary != "ran on "+agent || fmt.Sprint(run.Outputs["cli"]) != agent {
			b, _ := json.Marshal(run)
			t.Errorf("the step's run: %s", b)
		}
		if run.Task == nil || run.Task.Mode != "acp" {
			t.Errorf("the step did not run over ACP: %+v", run.Task)
		}
	})
}
