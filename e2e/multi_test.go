//go:build e2e

package e2e

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vibeteam/vibeteam/e2e/fakeanthropic"
	"github.com/vibeteam/vibeteam/e2e/fakegemini"
	"github.com/vibeteam/vibeteam/e2e/fakeopenai"
)

// One stage, claude and codex side by side, each against its own fake:
// both run, both are DONE on their agent's word.
func TestClaudeAndCodexInParallel(t *testing.T) {
	needCodex(t)
	w := newWorld(t, worldOptions{approveKey: true})
	addCodex(w, nil)
	wf := filepath.Join(w.root, "wf.yaml")
	w.write(wf, fmt.Sprintf(`id: e2e-pair
stages:
  - id: both
    tasks:
      - { id: claude, adapter: claude, executionMode: headless, timeout: 100s, prompt: %q }
      - { id: codex, adapter: codex, executionMode: headless, timeout: 100s, prompt: %q }
`, createPrompt, createPrompt))
	r := w.run("run", wf, "--base-dir", w.project, "--auto-approve", "--headless")
	if r.code != 0 {
		t.Fatalf("%s, want 0", r)
	}
	s := w.only()
	w.assertDone(s, "claude", "codex")
	for _, id := range []string{"claude", "codex"} {
		if a := s.Tasks[id].Agent; a == nil || a.SessionID == "" || a.ToolCalls == 0 {
			t.Errorf("%s's report: %+v", id, a)
		}
	}
	if len(w.server.MessageRequests()) == 0 || len(w.openai.MainRequests()) == 0 {
		t.Error("one of the agents never reached its model")
	}
}

// An agent step of a grimoire on each CLI: its AgentOutput (success,
// summary, outputs) comes from the agent's structured final message.
func TestAgentStepPerCLI(t *testing.T) {
	final := func(cli string) string {
		return "Done.\n\n```json\n{\"success\": true, \"summary\": \"ran on " + cli + "\", \"outputs\": {\"cli\": \"" + cli + "\"}}\n```"
	}
	for _, cli := range []string{"claude", "codex", "gemini", "opencode"} {
		t.Run(cli, func(t *testing.T) {
			var w *world
			switch cli {
			case "claude":
				w = newWorld(t, worldOptions{approveKey: true, script: func(c fakeanthropic.Call) fakeanthropic.Reply {
					if fakeanthropic.IsSideRequest(c.Request) {
						return fakeanthropic.Text("Step")
					}
					return fakeanthropic.Text(final(cli))
				}})
			case "codex":
				w = newCodexWorld(t, func(fakeopenai.Call) fakeopenai.Reply { return fakeopenai.Text(final(cli)) })
			case "gemini":
				w = newGeminiWorld(t, func(fakegemini.Call) fakegemini.Reply { return fakegemini.Text(final(cli)) })
			case "opencode":
				w = newOpencodeWorld(t, func(fakeopenai.Call) fakeopenai.Reply { return fakeopenai.Text(final(cli)) })
			}
			g := filepath.Join(w.root, "step.yaml")
			w.write(g, fmt.Sprintf(`name: e2e-step
steps:
  - name: work
    type: agent
    adapter: %s
    spell: "Report what you did.\n"
    timeout: 100s
`, cli))
			r := w.run("run", g, "--base-dir", w.project, "--auto-approve", "--headless")
			if r.code != 0 {
				t.Fatalf("%s, want 0", r)
			}
			run, ok := w.only().Runs["0"]
			if !ok || run.Status != "done" || run.Summary != "ran on "+cli || fmt.Sprint(run.Outputs["cli"]) != cli {
				t.Errorf("the step's run: %+v", run)
			}
			if !strings.Contains(r.stderr, "work") {
				t.Errorf("stderr:\n%s", r.stderr)
			}
		})
	}
}
