package agentstream

import "testing"

// Before its result line, a claude run's tokens are the sum of its API
// calls so far, each counted once however many lines repeat its usage;
// the result's total then replaces them.
func TestClaudeTokensWhileItRuns(t *testing.T) {
	t.Parallel()
	p := &claudeParser{}
	feedStream(p, `
{"type":"system","subtype":"init","session_id":"s1"}
{"type":"assistant","message":{"id":"msg_1","content":[{"type":"text","text":"a"}],"usage":{"input_tokens":100,"output_tokens":5,"cache_read_input_tokens":900}},"session_id":"s1"}
{"type":"assistant","message":{"id":"msg_1","content":[{"type":"tool_use","id":"t1","name":"Bash","input":{}}],"usage":{"input_tokens":100,"output_tokens":30,"cache_read_input_tokens":900}},"session_id":"s1"}
{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t1","content":"ok"}]},"session_id":"s1"}
{"type":"assistant","message":{"id":"msg_2","content":[{"type":"text","text":"b"}],"usage":{"input_tokens":20,"output_tokens":7}},"session_id":"s1"}`)
	if got, want := p.Summary().Tokens, (Tokens{Input: 120, Output: 37, CacheRead: 900}); got != want {
		t.Fatalf("tokens while running %+v, want %+v", got, want)
	}
	feedStream(p, `{"type":"result","subtype":"success","result":"b","session_id":"s1","total_cost_usd":0.5,"usage":{"input_tokens":121,"output_tokens":40}}`)
	if got, want := p.Summary().Tokens, (Tokens{Input: 121, Output: 40}); got != want {
		t.Fatalf("tokens after the result %+v, want %+v", got, want)
	}
}
