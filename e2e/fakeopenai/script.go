package fakeopenai

import (
	"strings"
	"time"
)

// Text is a plain text reply that ends the turn.
func Text(s string) Reply { return Reply{Text: s} }

// Exec is a reply that asks Codex to run cmd with its exec_command tool.
// With escalate the call asks to run outside the sandbox, which makes the
// TUI show its approval dialog ("Would you like to run the following
// command?") whatever the sandbox mode.
func Exec(cmd string, escalate bool) Reply {
	args := map[string]any{"cmd": cmd}
	if escalate {
		args["sandbox_permissions"] = "require_escalated"
		args["justification"] = "The e2e test needs this file created."
	}
	return Reply{Call: &FunctionCall{Name: "exec_command", Arguments: args}}
}

// Bash is a reply that asks opencode to run command with its bash tool.
func Bash(command string) Reply {
	return Reply{Call: &FunctionCall{Name: "bash", Arguments: map[string]any{"command": command, "description": "Create a file"}}}
}

// Names used by CreateFile.
const (
	CreateTrigger = "create the file"
	CreatedFile   = "e2e-created.txt"
	DoneText      = "Done: the file is there."
	OtherText     = "OK."
)

// CreateFile is the script of the end-to-end tests: a prompt containing
// "create the file" makes Codex run `touch e2e-created.txt`, and the
// command's output ends the turn with DoneText. With escalate the command
// asks for approval.
func CreateFile(escalate bool) Script {
	return Sequence(CreateTrigger, DoneText, OtherText, Exec("touch "+CreatedFile, escalate))
}

// Sequence decides by the latest input item:
//   - a tool call's output: the next call (counting the outputs in the
//     request), or the text done after the last one;
//   - a user message containing trigger (case-insensitive): calls[0] (done
//     when there are no calls, or the request does not offer its tool: a
//     side request);
//   - anything else: the text other.
//
// Each reply depends only on the request, so a client that retries gets
// the same answer, and a conversation always ends: every call's output
// moves it one step on.
func Sequence(trigger, done, other string, calls ...Reply) Script {
	trigger = strings.ToLower(trigger)
	return func(c Call) Reply {
		switch {
		case !c.HasLast:
			return Text(other)
		case c.Last.IsCallOutput():
			if k := c.Request.CallOutputs(); k < len(calls) {
				return calls[k]
			}
			return Text(done)
		case c.Last.IsUserMessage() && strings.Contains(strings.ToLower(c.Last.Text()), trigger):
			if len(calls) == 0 || (calls[0].Call != nil && !c.Request.HasTool(calls[0].Call.Name)) {
				return Text(done)
			}
			return calls[0]
		}
		return Text(other)
	}
}

// Echo answers every request with "echo: " and the latest user message's
// text (or other when the latest item is not a user message).
func Echo(other string) Script {
	return func(c Call) Reply {
		if c.HasLast && c.Last.IsUserMessage() {
			return Text("echo: " + c.Last.Text())
		}
		return Text(other)
	}
}

// UsageLimit is the ChatGPT backend's answer to an account whose usage
// limit is spent until reset: a 429 whose error is usage_limit_reached,
// with the plan and resets_at. Codex does not retry it: it fails the turn
// with "You’ve hit your usage limit. … try again at 4:31 PM." (the reset
// in its local time, to the minute).
func UsageLimit(reset time.Time) Reply {
	return Reply{Status: 429, Error: &APIError{Type: "usage_limit_reached", Message: "The usage limit has been reached", PlanType: "plus", ResetsAt: reset}}
}

// QuotaError is a provider's refusal of an account out of quota, with
// status (one a client does not retry, such as 400 or 402: opencode
// retries every 429 for as long as it lasts) and the provider's message.
func QuotaError(status int, message string) Reply {
	return Reply{Status: status, Error: &APIError{Type: "insufficient_quota", Code: "insufficient_quota", Message: message}}
}
