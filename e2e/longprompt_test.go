//go:build e2e

package e2e

import (
	"strings"
	"testing"

	"github.com/vibeteam/vibeteam/e2e/fakeanthropic"
	"github.com/vibeteam/vibeteam/e2e/fakegemini"
	"github.com/vibeteam/vibeteam/e2e/fakeopenai"
)

// TestClaudeHeadlessLongPrompt: a prompt of 1 MiB, far longer than one
// argument may be (128 KiB), reaches claude -p whole on its stdin, and the
// run goes on as any other.
func TestClaudeHeadlessLongPrompt(t *testing.T) {
	prompt, arrived := longPrompt(1 << 20)
	whole := false
	script := func(c fakeanthropic.Call) fakeanthropic.Reply {
		switch {
		case fakeanthropic.IsSideRequest(c.Request):
			return fakeanthropic.Text("Create a file")
		case c.HasLast && c.Last.Type == "text" && arrived(c.Last.Text):
			whole = true
			return fakeanthropic.Bash("touch "+fakeanthropic.CreatedFile, "Create a file")
		case c.HasLast && c.Last.Type == "tool_result":
			return fakeanthropic.Text(fakeanthropic.DoneText)
		}
		return fakeanthropic.Text("OK.")
	}
	w := newWorld(t, worldOptions{approveKey: true, script: script})
	wf := w.promptWorkflow("headless", prompt)
	r := w.run("run", wf, "--base-dir", w.project, "--auto-approve", "--headless")
	if r.code != 0 {
		t.Fatalf("%s, want 0", r)
	}
	if !whole {
		t.Error("the model did not get the whole long prompt")
	}
	w.assertCreated()
}

// TestCodexHeadlessLongPrompt: a 900 KiB prompt reaches codex exec whole
// on its stdin.
func TestCodexHeadlessLongPrompt(t *testing.T) {

	// codex 0.169 exits 1 on a 1 MiB prompt (a limit of its own, before
	// any request): 900 KiB, still far over one argument.
	prompt, arrived := longPrompt(900 << 10)
	whole := false
	create := fakeopenai.CreateFile(false)
	script := func(c fakeopenai.Call) fakeopenai.Reply {
		for _, text := range c.Request.UserTexts() {
			if arrived(text) {
				whole = true
			}
		}
		return create(c)
	}
	w := newCodexWorld(t, script)
	r := w.run("run", w.promptWorkflow("headless", prompt), "--base-dir", w.project, "--auto-approve", "--headless")
	if r.code != 0 {
		t.Fatalf("%s, want 0", r)
	}
	if !whole {
		t.Error("the model did not get the whole long prompt")
	}
	w.assertCreated()
}

// TestGeminiHeadlessLongPrompt: a 1 MiB prompt reaches gemini whole on its
// stdin (no --prompt: gemini reads a piped stdin as its prompt).
func TestGeminiHeadlessLongPrompt(t *testing.T) {
	prompt, arrived := longPrompt(1 << 20)
	whole := false
	create := fakegemini.CreateFile()
	script := func(c fakegemini.Call) fakegemini.Reply {
		for _, text := range c.Request.UserTexts() {
			if arrived(text) {
				whole = true
			}
		}
		return create(c)
	}
	w := newGeminiWorld(t, script)
	r := w.run("run", w.promptWorkflow("headless", prompt), "--base-dir", w.project, "--auto-approve", "--headless")
	if r.code != 0 {
		t.Fatalf("%s, want 0", r)
	}
	if !whole {
		t.Error("the model did not get the whole 1 MiB prompt")
	}
	w.assertCreated()
}

// longPrompt is a prompt of about size bytes that asks for the file to be
// created, and a test that a text holds all of it.
func longPrompt(size int) (prompt string, arrived func(text string) bool) {
	const marker = "END-OF-THE-LONG-PROMPT-7f3a"
	padding := strings.Repeat("This line only makes the prompt long. ", size/38)
	prompt = padding + createPrompt + " " + marker
	return prompt, func(text string) bool { return strings.Contains(text, prompt) }
}
