package render

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
)

// AgentOutput is the JSON block the system prompt asks every agent to end its
// final message with.
type AgentOutput struct {
	Success bool           `json:"success"`
	Summary string         `json:"summary,omitempty"`
	Outputs map[string]any `json:"outputs,omitempty"`
	Error   string         `json:"error,omitempty"`
}

// ErrNoAgentOutput is returned when an agent's text has no usable block; the
// step then fails (and .previous.failed is true for the next).
var ErrNoAgentOutput = errors.New("agent output did not contain a valid JSON block")

// ParseAgentOutput finds the agent's result in text: the last fenced ```json
// block that holds an object with a boolean "success". Earlier blocks and
// blocks that do not qualify are passed over, since agents quote JSON while
// they work and the contract is about how they end. A summary or error that
// is not a string is kept as its JSON text rather than lost.
func ParseAgentOutput(text string) (AgentOutput, error) {
	blocks := jsonBlocks(text)
	for i := len(blocks) - 1; i >= 0; i-- {
		if out, ok := parseAgentBlock(blocks[i]); ok {
			return out, nil
		}
	}
	return AgentOutput{}, ErrNoAgentOutput
}

// ParseAgentOutputNotIn is ParseAgentOutput passing over the blocks that
// the prompt itself holds: a terminal's transcript shows the prompt the
// agent was given, and an example block in a spell or the system prompt is
// not the agent's answer.
func ParseAgentOutputNotIn(text, prompt string) (AgentOutput, error) {
	quoted := map[string]bool{}
	for _, b := range jsonBlocks(prompt) {
		quoted[normalizeBlock(b)] = true
	}
	blocks := jsonBlocks(text)
	for i := len(blocks) - 1; i >= 0; i-- {
		if quoted[normalizeBlock(blocks[i])] {
			continue
		}
		if out, ok := parseAgentBlock(blocks[i]); ok {
			return out, nil
		}
	}
	return AgentOutput{}, ErrNoAgentOutput
}

// normalizeBlock compares blocks whatever their indentation and wrapping.
func normalizeBlock(b string) string { return strings.Join(strings.Fields(b), " ") }

func parseAgentBlock(block string) (AgentOutput, bool) {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal([]byte(block), &raw); err != nil {
		return AgentOutput{}, false
	}
	var out AgentOutput
	if err := json.Unmarshal(raw["success"], &out.Success); err != nil || raw["success"] == nil {
		return AgentOutput{}, false
	}
	out.Summary = textField(raw["summary"])
	out.Error = textField(raw["error"])
	if o := raw["outputs"]; o != nil && string(o) != "null" {
		if err := json.Unmarshal(o, &out.Outputs); err != nil {
			// outputs must be an object: its keys are what later steps
			// read as .step.outputs.KEY.
			return AgentOutput{}, false
		}
	}
	return out, true
}

func textField(m json.RawMessage) string {
	if m == nil || string(m) == "null" {
		return ""
	}
	var s string
	if json.Unmarshal(m, &s) == nil {
		return s
	}
	var b bytes.Buffer
	if json.Compact(&b, m) == nil {
		return b.String()
	}
	return string(m)
}

// jsonBlocks returns the contents of the fenced code blocks of text whose
// info string is json, in order, the way CommonMark reads fences: up to
// three spaces of indent, three or more backticks (or tildes), closed by a
// fence of the same character at least as long; a block left open runs to
// the end of the text.
func jsonBlocks(text string) []string {
	var blocks []string
	lines := strings.SplitAfter(text, "\n")
	for i := 0; i < len(lines); i++ {
		char, n, info, ok := fence(lines[i])
		if !ok {
			continue
		}
		var body strings.Builder
		j := i + 1
		for ; j < len(lines); j++ {
			if c, m, rest, ok := fence(lines[j]); ok && c == char && m >= n && strings.TrimSpace(rest) == "" {
				break
			}
			body.WriteString(lines[j])
		}
		if lang, _, _ := strings.Cut(strings.TrimSpace(info), " "); strings.EqualFold(lang, "json") {
			blocks = append(blocks, body.String())
		}
		i = j
	}
	return blocks
}

// fence reads a fence line: its character, its length and the info string.
func fence(line string) (char byte, n int, info string, ok bool) {
	line = strings.TrimRight(line, "\r\n")
	indent := len(line) - len(strings.TrimLeft(line, " "))
	if indent > 3 {
		return 0, 0, "", false
	}
	line = line[indent:]
	if line == "" || line[0] != '`' && line[0] != '~' {
		return 0, 0, "", false
	}
	char = line[0]
	for n < len(line) && line[n] == char {
		n++
	}
	if n < 3 || char == '`' && strings.IndexByte(line[n:], '`') >= 0 {
		return 0, 0, "", false
	}
	return char, n, line[n:], true
}
