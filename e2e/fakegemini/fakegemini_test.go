package fakegemini

import (
	"bufio"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"
)

func post(t *testing.T, s *Server, path string, body any) *http.Response {
	t.Helper()
	b, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Post(s.URL()+path, "application/json", strings.NewReader(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

type candidateResp struct {
	Candidates []struct {
		Content Content `json:"content"`
	} `json:"candidates"`
}

func userText(s string) map[string]any {
	return map[string]any{"role": "user", "parts": []any{map[string]any{"text": s}}}
}

// The router's JSON request gets an object of its schema, with the
// preferred enum values.
func TestRouterGetsSchemaJSON(t *testing.T) {
	s := New(t, CreateFile())
	resp := post(t, s, "/v1beta/models/flash-lite:generateContent", map[string]any{
		"contents": []any{userText("Please create the file x.")},
		"generationConfig": map[string]any{"responseMimeType": "application/json", "responseJsonSchema": map[string]any{
			"type": "object", "properties": map[string]any{
				"reasoning":    map[string]any{"type": "string"},
				"model_choice": map[string]any{"type": "string", "enum": []any{"pro", "flash"}},
				"score":        map[string]any{"type": "integer"}}}}})
	var r candidateResp
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil || len(r.Candidates) != 1 {
		t.Fatalf("%+v %v", r, err)
	}
	var v map[string]any
	if err := json.Unmarshal([]byte(r.Candidates[0].Content.Text()), &v); err != nil {
		t.Fatal(err)
	}
	if v["model_choice"] != "flash" || v["reasoning"] != "ok" || v["score"] != float64(1) {
		t.Errorf("router reply %v", v)
	}
	if len(s.MainRequests()) != 0 {
		t.Errorf("the router call counted as a main request")
	}
}

// The main loop: the prompt gets run_shell_command when it is offered, the
// function response gets the done text; each as one SSE event.
func TestStreamCreateFile(t *testing.T) {
	s := New(t, CreateFile())
	tools := []any{map[string]any{"functionDeclarations": []any{map[string]any{"name": "run_shell_command"}}}}
	read := func(resp *http.Response) Part {
		t.Helper()
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				var r candidateResp
				if err := json.Unmarshal([]byte(d), &r); err != nil {
					t.Fatal(err)
				}
				return r.Candidates[0].Content.Parts[0]
			}
		}
		t.Fatal("no data line")
		return Part{}
	}
	p := read(post(t, s, "/v1beta/models/flash:streamGenerateContent?alt=sse", map[string]any{
		"contents": []any{userText("Please create the file x.")}, "tools": tools}))
	if p.FunctionCall == nil || p.FunctionCall.Name != "run_shell_command" || p.FunctionCall.Args["command"] != "touch "+CreatedFile {
		t.Fatalf("reply %+v, want the shell call", p)
	}
	p = read(post(t, s, "/v1beta/models/flash:streamGenerateContent?alt=sse", map[string]any{"tools": tools, "contents": []any{
		userText("Please create the file x."),
		map[string]any{"role": "model", "parts": []any{map[string]any{"functionCall": map[string]any{"name": "run_shell_command"}}}},
		map[string]any{"role": "user", "parts": []any{map[string]any{"functionResponse": map[string]any{"name": "run_shell_command", "response": map[string]any{"output": ""}}}}}}}))
	if p.Text != DoneText {
		t.Errorf("reply %+v, want %q", p, DoneText)
	}
	// Without the tool (default approval mode), the prompt only gets text.
	p = read(post(t, s, "/v1beta/models/flash:streamGenerateContent?alt=sse", map[string]any{
		"contents": []any{userText("Please create the file x.")}}))
	if p.Text != DoneText {
		t.Errorf("reply without the tool %+v, want %q", p, DoneText)
	}
	if n := len(s.MainRequests()); n != 3 {
		t.Errorf("%d main requests, want 3", n)
	}
}

// A spent quota is the API's 429 RESOURCE_EXHAUSTED, with the details the
// Gemini CLI reads: a per-minute QuotaFailure and the RetryInfo delay,
// also said in the message.
func TestQuotaExceeded(t *testing.T) {
	s := New(t, func(Call) Reply { return QuotaExceeded(time.Hour) })
	resp := post(t, s, "/v1beta/models/pro:streamGenerateContent?alt=sse", map[string]any{"contents": []any{userText("hi")}})
	var b struct {
		Error struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
			Status  string `json:"status"`
			Details []struct {
				Type       string `json:"@type"`
				RetryDelay string `json:"retryDelay"`
				Violations []struct {
					QuotaID string `json:"quotaId"`
				} `json:"violations"`
			} `json:"details"`
		} `json:"error"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&b); err != nil {
		t.Fatal(err)
	}
	e := b.Error
	if resp.StatusCode != 429 || e.Code != 429 || e.Status != "RESOURCE_EXHAUSTED" || !strings.HasSuffix(e.Message, "Please retry in 3600s.") {
		t.Fatalf("status %d, error %+v", resp.StatusCode, e)
	}
	types := map[string]int{}
	for i, d := range e.Details {
		types[d.Type] = i
	}
	retry, ok1 := types["type.googleapis.com/google.rpc.RetryInfo"]
	quota, ok2 := types["type.googleapis.com/google.rpc.QuotaFailure"]
	if !ok1 || !ok2 || e.Details[retry].RetryDelay != "3600s" || len(e.Details[quota].Violations) != 1 ||
		!strings.Contains(e.Details[quota].Violations[0].QuotaID, "PerMinute") {
		t.Errorf("details %+v", e.Details)
	}
	if m := s.MainRequests(); len(m) != 1 || m[0].Status != 429 {
		t.Errorf("the refusal is not recorded: %+v", m)
	}
}
