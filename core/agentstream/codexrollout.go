package agentstream

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"
)

// sandboxRefusal is what a command refused by codex's sandbox prints: a
// write in the read-only sandbox, an operation it forbids.
var sandboxRefusal = regexp.MustCompile(`(?i)read-only file system|operation not permitted`)

// exitCode finds codex's "Process exited with code N" in a tool output.
var exitCode = regexp.MustCompile(`Process exited with code (\d+)`)

// CodexSandboxDenials finds the commands of a codex thread that its sandbox
// refused. `codex exec --json` prints nothing for them (no item at all, as
// of 0.169), but the thread's rollout file under CODEX_HOME/sessions holds
// each call and its output: a call that exited non-zero with a sandbox
// refusal in its output is a denial, as claude's permission_denials are.
// Only what was written since this run started counts: a continued thread
// holds the earlier runs too. No file, or none for the thread, is no
// denial.
func CodexSandboxDenials(codexHome, threadID string, since time.Time) []Denial {
	if codexHome == "" || threadID == "" || strings.ContainsAny(threadID, `/\*?[`) {
		return nil
	}
	files, _ := filepath.Glob(filepath.Join(codexHome, "sessions", "*", "*", "*", "rollout-*-"+threadID+".jsonl"))
	if len(files) == 0 {
		return nil
	}
	f, err := os.Open(files[len(files)-1])
	if err != nil {
		return nil
	}
	defer f.Close()
	type call struct {
		name string
		args json.RawMessage
	}
	calls := map[string]call{}
	var denials []Denial
	// A call's output may be a line of any length: read cut, never a stop
	// that loses the calls after it.
	lr := NewLineReader(f)
	for {
		ln, err := lr.Next()
		if err != nil {
			break
		}
		var line struct {
			Timestamp time.Time `json:"timestamp"`
			Type      string    `json:"type"`
			Payload   struct {
				Type      string          `json:"type"`
				Name      string          `json:"name"`
				Namespace string          `json:"namespace"`
				Arguments string          `json:"arguments"`
				CallID    string          `json:"call_id"`
				Output    json.RawMessage `json:"output"`
			} `json:"payload"`
		}
		if json.Unmarshal(ln.Text, &line) != nil || line.Type != "response_item" || line.Timestamp.Before(since) {
			continue
		}
		p := line.Payload
		switch p.Type {
		case "function_call":
			name := p.Name
			if p.Namespace != "" {
				name = p.Namespace + "__" + p.Name
			}
			calls[p.CallID] = call{name: name, args: normToolInput(json.RawMessage(p.Arguments))}
		case "function_call_output":
			out := outputText(p.Output)
			m := exitCode.FindStringSubmatch(out)
			if m == nil || m[1] == "0" || !sandboxRefusal.MatchString(out) {
				continue
			}
			c := calls[p.CallID]
			if c.name == "" {
				c.name = "command"
			}
			denials = append(denials, Denial{Tool: c.name, ToolID: p.CallID, Input: c.args, Message: refusalLine(out)})
		}
	}
	return denials
}

// outputText is a function_call_output's output: a string, or content
// parts with text.
func outputText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []struct {
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &parts) == nil {
		var b strings.Builder
		for _, p := range parts {
			b.WriteString(p.Text)
			b.WriteString("\n")
		}
		return b.String()
	}
	return string(raw)
}

// refusalLine is the line of out that says what the sandbox refused.
func refusalLine(out string) string {
	for _, l := range strings.Split(out, "\n") {
		if sandboxRefusal.MatchString(l) {
			return strings.TrimSpace(l)
		}
	}
	return ""
}
