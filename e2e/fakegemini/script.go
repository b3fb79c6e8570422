package fakegemini

import (
	"strings"
	"time"
)

// Text is a plain text reply that ends the turn.
func Text(s string) Reply { return Reply{Text: s} }

// Shell is a reply that asks the Gemini CLI to run command with its
// run_shell_command tool (offered in yolo mode).
func Shell(command string) Reply {
	return Reply{Call: &FunctionCall{Name: "run_shell_command", Args: map[string]any{"command": command, "description": "Create a file"}}}
}

// Names used by CreateFile.
const (
	CreateTrigger = "create the file"
	CreatedFile   = "e2e-created.txt"
	DoneText      = "Done: the file is there."
	OtherText     = "OK."
)

// CreateFile is the script of the end-to-end tests: a prompt containing
// "create the file" makes Gemini run `touch e2e-created.txt` when the
// request offers run_shell_command (else it only answers DoneText), and
// the function response ends the turn with DoneText.
func CreateFile() Script {
	return Sequence(CreateTrigger, DoneText, OtherText, Shell("touch "+CreatedFile))
}

// Sequence decides by the last part of the conversation:
//   - a function response: the next call (counting the responses in the
//     request), or the text done after the last one;
//   - user text containing trigger (case-insensitive): calls[0], when the
//     request offers that tool (done otherwise);
//   - anything else: the text other.
func Sequence(trigger, done, other string, calls ...Reply) Script {
	trigger = strings.ToLower(trigger)
	return func(c Call) Reply {
		switch {
		case !c.HasLast:
			return Text(other)
		case c.Last.FunctionResponse != nil:
			if k := c.Request.FunctionResponses(); k < len(calls) {
				return calls[k]
			}
			return Text(done)
		case strings.Contains(strings.ToLower(c.Last.Text), trigger):
			if len(calls) == 0 || (calls[0].Call != nil && !c.Request.HasTool(calls[0].Call.Name)) {
				return Text(done)
			}
			return calls[0]
		}
		return Text(other)
	}
}

// QuotaExceeded is the API's 429 RESOURCE_EXHAUSTED for a quota that
// resets after delay (see Reply.RetryDelay).
func QuotaExceeded(delay time.Duration) Reply {
	return Reply{Status: 429, RetryDelay: delay}
}
