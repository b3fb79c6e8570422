package render

import (
	"errors"
	"reflect"
	"testing"
)

func TestParseAgentOutput(t *testing.T) {
	tests := []struct {
		name, text string
		want       AgentOutput
		wantErr    bool
	}{
		{name: "the contract", text: "Done.\n\n```json\n{\"success\": true, \"summary\": \"Added it\", \"outputs\": {\"files\": [\"a.go\"], \"n\": 2}}\n```\n",
			want: AgentOutput{Success: true, Summary: "Added it", Outputs: map[string]any{"files": []any{"a.go"}, "n": 2.0}}},
		{name: "failure with error", text: "```json\n{\"success\": false, \"summary\": \"no\", \"error\": \"tests fail\"}\n```",
			want: AgentOutput{Success: false, Summary: "no", Error: "tests fail"}},
		{name: "the last block wins", text: "```json\n{\"success\": false}\n```\nthen\n```json\n{\"success\": true, \"summary\": \"second\"}\n```",
			want: AgentOutput{Success: true, Summary: "second"}},
		{name: "a later block that does not qualify is passed over", text: "```json\n{\"success\": true, \"summary\": \"real\"}\n```\n```json\n{\"other\": 1}\n```\n```json\nnot json\n```",
			want: AgentOutput{Success: true, Summary: "real"}},
		{name: "success as a string does not qualify", text: "```json\n{\"success\": true}\n```\n```json\n{\"success\": \"true\"}\n```",
			want: AgentOutput{Success: true}},
		{name: "blocks in other languages are ignored", text: "```json\n{\"success\": true}\n```\n```go\n{\"success\": false}\n```\n```\n{\"success\": false}\n```",
			want: AgentOutput{Success: true}},
		{name: "JSON upper case, indented fence, tildes, longer fence", text: "  ```JSON\n{\"success\": false}\n  ```\n~~~~json\n{\"success\": true, \"summary\": \"t\"}\n~~~~",
			want: AgentOutput{Success: true, Summary: "t"}},
		{name: "info string after json", text: "```json title=result\n{\"success\": true}\n```", want: AgentOutput{Success: true}},
		{name: "a fence inside a longer fence", text: "````json\n{\"success\": true, \"summary\": \"has ``` inside\"}\n````", want: AgentOutput{Success: true, Summary: "has ``` inside"}},
		{name: "unclosed block at the end", text: "text\n```json\n{\"success\": true}\n", want: AgentOutput{Success: true}},
		{name: "CRLF", text: "```json\r\n{\"success\": true}\r\n```\r\n", want: AgentOutput{Success: true}},
		{name: "summary not a string is kept as JSON", text: "```json\n{\"success\": true, \"summary\": {\"a\": 1}}\n```", want: AgentOutput{Success: true, Summary: `{"a":1}`}},
		{name: "null outputs", text: "```json\n{\"success\": true, \"outputs\": null}\n```", want: AgentOutput{Success: true}},
		{name: "outputs not an object does not qualify", text: "```json\n{\"success\": true, \"outputs\": [1]}\n```", wantErr: true},
		{name: "no block", text: "I did it. {\"success\": true}", wantErr: true},
		{name: "an array", text: "```json\n[{\"success\": true}]\n```", wantErr: true},
		{name: "no success", text: "```json\n{\"summary\": \"x\"}\n```", wantErr: true},
		{name: "indented four spaces is code, not a fence", text: "    ```json\n    {\"success\": true}\n    ```", wantErr: true},
		{name: "empty", text: "", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseAgentOutput(tt.text)
			if tt.wantErr {
				if !errors.Is(err, ErrNoAgentOutput) || err.Error() != "agent output did not contain a valid JSON block" {
					t.Errorf("error = %v, got %+v", err, got)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got  %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

// FuzzParseAgentOutput checks that no text makes the parser panic.
func FuzzParseAgentOutput(f *testing.F) {
	for _, s := range []string{"", "```json\n{\"success\": true}\n```", "```json\n", "````\n```json\n{}", "~~~json\n{\"success\":false,\"outputs\":{}}"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		_, _ = ParseAgentOutput(text)
	})
}

func TestParseAgentOutputNotInPrompt(t *testing.T) {
	t.Parallel()
	prompt := "Do it.\n```json\n{\"success\": true, \"summary\": \"example\"}\n```\n"
	transcript := "> Do it.\n  ```json\n  {\"success\": true,\n   \"summary\": \"example\"}\n  ```\nworking...\n"
	if _, err := ParseAgentOutputNotIn(transcript, prompt); err != ErrNoAgentOutput {
		t.Fatalf("the prompt's example passed for the answer: %v", err)
	}
	out, err := ParseAgentOutputNotIn(transcript+"```json\n{\"success\": false, \"error\": \"no\"}\n```\n", prompt)
	if err != nil || out.Success || out.Error != "no" {
		t.Fatalf("got %+v, %v", out, err)
	}
}
