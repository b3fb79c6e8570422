//go:build e2e

package e2e

import (
	"testing"
)

// A prompt that looks like an option reaches the model as text: vibeteam
// must pass it so that the agent CLI cannot parse it as one of its own
// flags (after `--`, or as the value of --flag=value). The value here is
// each CLI's own permission bypass, as a template variable would bring it
// in (a bead title, --set), so a CLI that took it as an option would both
// lose the prompt and drop its guards.
//
// Each test runs the task headless and interactive, with --auto-approve
// (the interactive start-up questions answered), and checks the model's
// main loop got exactly that text as the user's turn.
func testPromptLikeFlag(t *testing.T, newWorld func(t *testing.T) *world, flag string) {
	for _, mode := range []string{"headless", "interactive"} {
		t.Run(mode, func(t *testing.T) {
			w := newWorld(t)
			m := mode
			if m == "interactive" {
				m = ""
			}
			args := []string{"run", w.promptWorkflow(m, "{{.v}}"), "--base-dir", w.project, "--auto-approve", "--set", "v=" + flag}
			r := w.run(args...)
			s := w.only()
			w.assertPromptBeforeDone(s, "agent", flag)
			if r.code != 0 {
				t.Errorf("%s, want 0", r)
			}
			w.assertDone(s)
		})
	}
}

func TestClaudePromptLikeFlag(t *testing.T) {
	testPromptLikeFlag(t, func(t *testing.T) *world { return newWorld(t, worldOptions{approveKey: true}) },
		"--dangerously-skip-permissions")
}

func TestCodexPromptLikeFlag(t *testing.T) {
	testPromptLikeFlag(t, func(t *testing.T) *world { return newCodexWorld(t, nil) },
		"--dangerously-bypass-approvals-and-sandbox")
}

func TestGeminiPromptLikeFlag(t *testing.T) {
	testPromptLikeFlag(t, func(t *testing.T) *world { return newGeminiWorld(t, nil) }, "--yolo")
}

func TestOpencodePromptLikeFlag(t *testing.T) {
	testPromptLikeFlag(t, func(t *testing.T) *world { return newOpencodeWorld(t, nil) }, "--help")
}
