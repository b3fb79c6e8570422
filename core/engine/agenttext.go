package engine

import (
	"bufio"
	"encoding/json"
	"strings"
)

// structuredFinal finds an agent's final message in structured output: the
// result of claude's stream-json (`{"type":"result","result":...}`), or the
// last agent message of codex exec --json (`{"type":"item.completed",
// "item":{"type":"agent_message","text":...}}`, or the older
// `{"msg":{"type":"agent_message","message":...}}`). ok is false for output
// that holds neither: plain text.
func structuredFinal(out string) (text string, ok bool) {
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(make([]byte, 64<<10), captureLimit)
	var result, message string
	var haveResult, haveMessage bool
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if !strings.HasPrefix(line, "{") {
			continue
		}
		var ev struct {
			Type   string          `json:"type"`
			Result *string         `json:"result"`
			Item   *agentItem      `json:"item"`
			Msg    *codexLegacyMsg `json:"msg"`
		}
		if json.Unmarshal([]byte(line), &ev) != nil {
			continue
		}
		switch {
		case ev.Type == "result" && ev.Result != nil:
			result, haveResult = *ev.Result, true
		case ev.Type == "item.completed" && ev.Item != nil && ev.Item.Type == "agent_message":
			message, haveMessage = ev.Item.Text, true
		case ev.Msg != nil && ev.Msg.Type == "agent_message":
			message, haveMessage = ev.Msg.Message, true
		}
	}
	switch {
	case haveResult:
		return result, true
	case haveMessage:
		return message, true
	}
	return "", false
}

type agentItem struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

type codexLegacyMsg struct {
	Type    string `json:"type"`
	Message string `json:"message"`
}
