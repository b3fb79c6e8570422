package fakeanthropic

import "strings"

// Bash is a reply that asks the agent to run command with its Bash tool.
func Bash(command, description string) Reply {
	return Reply{ToolUse: &ToolUse{Name: "Bash", Input: map[string]any{"command": command, "description": description}}}
}

// Text is a plain text reply that ends the turn.
func Text(s string) Reply { return Reply{Text: s} }

// IsSideRequest reports whether a request is one of Claude Code's side
// requests (a session title or summary, a topic check, ...) rather than
// the agent's main loop. Side requests offer no tools; the main loop always
// offers Bash among its tools.
func IsSideRequest(r *MessagesRequest) bool { return !r.HasTool("Bash") }

// ToolScript answers the agent's main loop by the last user content block:
//   - a tool_result: the text done, ending the turn;
//   - user text containing trigger (case-insensitive): the tool call reply;
//   - anything else: the text other, ending the turn.
//
// Side requests get the short text title.
func ToolScript(trigger string, call Reply, done, other, title string) Script {
	return Sequence(trigger, done, other, title, call)
}

// Names used by CreateFile.
const (
	CreateTrigger = "create the file"
	CreatedFile   = "e2e-created.txt"
	DoneText      = "Done."
)

// CreateFile is the script of the end-to-end tests: a prompt containing
// "create the file" makes the agent run `touch e2e-created.txt` through its
// Bash tool, and the tool's result ends the turn with "Done.".
func CreateFile() Script {
	return ToolScript(CreateTrigger, Bash("touch "+CreatedFile, "Create a file"), DoneText, "OK.", "Create a file")
}

// Sequence answers user text containing trigger (case-insensitive) with
// calls[0], and each tool_result with the next call, counting the
// tool_result blocks of the conversation; after the last call it ends the
// turn with done. Other text gets other; side requests get title.
func Sequence(trigger, done, other, title string, calls ...Reply) Script {
	trigger = strings.ToLower(trigger)
	return func(c Call) Reply {
		if IsSideRequest(c.Request) {
			return Text(title)
		}
		switch {
		case !c.HasLast:
			return Text(other)
		case c.Last.Type == "tool_result":
			if k := countToolResults(c.Request); k < len(calls) {
				return calls[k]
			}
			return Text(done)
		case c.Last.Type == "text" && strings.Contains(strings.ToLower(c.Last.Text), trigger):
			if len(calls) == 0 {
				return Text(done)
			}
			return calls[0]
		}
		return Text(other)
	}
}

func countToolResults(r *MessagesRequest) int {
	n := 0
	for _, m := range r.Messages {
		if m.Role != "user" {
			continue
		}
		for _, b := range m.Content {
			if b.Type == "tool_result" {
				n++
			}
		}
	}
	return n
}

// CallTool is a reply that calls tool name with input.
func CallTool(name string, input map[string]any) Reply {
	return Reply{ToolUse: &ToolUse{Name: name, Input: input}}
}
