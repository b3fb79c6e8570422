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
//
// A call of a tool the request does not offer, when it offers ToolSearch
// (Claude Code 2.1.331+ defers MCP tools and some others), is preceded by
// the ToolSearch call that loads it, as the real model does; ToolSearch
// results do not count as calls.
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
				return Deferred(c.Request, calls[k])
			}
			return Text(done)
		case c.Last.Type == "text" && strings.Contains(strings.ToLower(c.Last.Text), trigger):
			if len(calls) == 0 {
				return Text(done)
			}
			return Deferred(c.Request, calls[0])
		}
		return Text(other)
	}
}

// Deferred is call, or, when its tool is not among the request's tools but
// ToolSearch is, the ToolSearch call that loads it first.
func Deferred(r *MessagesRequest, call Reply) Reply {
	if call.ToolUse == nil || r.HasTool(call.ToolUse.Name) || !r.HasTool(ToolSearch) || LoadedTool(r, call.ToolUse.Name) {
		return call
	}
	return CallTool(ToolSearch, map[string]any{"query": "select:" + call.ToolUse.Name, "max_results": 1})
}

// Offers reports whether the request makes tool available: among its
// tools, or (Claude Code 2.1.331+) deferred, named in its text for
// ToolSearch to load.
func Offers(r *MessagesRequest, tool string) bool {
	if r.HasTool(tool) {
		return true
	}
	if !r.HasTool(ToolSearch) {
		return false
	}
	if strings.Contains(r.SystemText(), tool) {
		return true
	}
	for _, m := range r.Messages {
		for _, b := range m.Content {
			if b.Type == "text" && strings.Contains(b.Text, tool) {
				return true
			}
		}
	}
	return false
}

// LoadedTool reports whether the conversation already loaded tool through
// ToolSearch.
func LoadedTool(r *MessagesRequest, tool string) bool {
	for _, m := range r.Messages {
		if m.Role != "assistant" {
			continue
		}
		for _, b := range m.Content {
			if b.Type == "tool_use" && b.Name == ToolSearch && strings.Contains(string(b.Input), "select:"+tool) {
				return true
			}
		}
	}
	return false
}

// countToolResults counts the conversation's tool results, those of
// ToolSearch left out.
func countToolResults(r *MessagesRequest) int {
	n := 0
	for _, m := range r.Messages {
		if m.Role != "user" {
			continue
		}
		for _, b := range m.Content {
			if b.Type == "tool_result" && r.ToolUseName(b.ToolUseID) != ToolSearch {
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
