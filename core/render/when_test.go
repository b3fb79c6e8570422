package render

import "testing"

func TestWhen(t *testing.T) {
	s := NewScope("g", map[string]string{"yes": "true", "word": "yes", "empty": ""})
	s.Record("impl", "", StepResult{Success: true, Outputs: map[string]any{
		"approved": false, "n": float64(3), "obj": map[string]any{"a": 1.0}, "list": []any{}, "null": nil,
	}})
	s.Record("tests", "", StepResult{Failed: true, ExitCode: 1})
	tests := []struct {
		name, expr string
		want       bool
		wantErr    string
	}{
		{name: "empty is no condition", expr: "", want: true},
		{name: "blank is no condition", expr: "  ", want: true},
		{name: "boolean true", expr: "{{.previous.failed}}", want: true},
		{name: "boolean false", expr: "{{.previous.success}}", want: false},
		{name: "spaces trimmed", expr: " {{.impl.success}}\n", want: true},
		{name: "literal", expr: "false", want: false},
		{name: "comparison", expr: "{{eq .tests.exit_code 1}}", want: true},
		{name: "not", expr: "{{not .impl.outputs.approved}}", want: true},
		{name: "string true from --set", expr: "{{.yes}}", want: true},
		{name: "and of steps", expr: `{{and .impl.success (step "tests").failed}}`, want: true},
		{name: "string", expr: "{{.word}}",
			wantErr: `step "fix": when "{{.word}}": must be true or false, got string "yes"`},
		{name: "number", expr: "{{.impl.outputs.n}}",
			wantErr: `step "fix": when "{{.impl.outputs.n}}": must be true or false, got number 3`},
		{name: "object", expr: "{{.impl.outputs.obj}}",
			wantErr: `step "fix": when "{{.impl.outputs.obj}}": must be true or false, got object {"a":1}`},
		{name: "array", expr: "{{.impl.outputs.list}}",
			wantErr: `step "fix": when "{{.impl.outputs.list}}": must be true or false, got array []`},
		{name: "null", expr: "{{.impl.outputs.null}}",
			wantErr: `step "fix": when "{{.impl.outputs.null}}": must be true or false, got null (an empty value)`},
		{name: "empty string", expr: "{{.empty}}",
			wantErr: `step "fix": when "{{.empty}}": must be true or false, got string (empty)`},
		{name: "text around a boolean", expr: "is {{.impl.success}}",
			wantErr: `step "fix": when "is {{.impl.success}}": must be true or false, got text "is true"`},
		{name: "case matters", expr: "True",
			wantErr: `step "fix": when "True": must be true or false, got text "True"`},
		{name: "whole step", expr: "{{.tests}}",
			wantErr: `step "fix": when "{{.tests}}": must be true or false, got object {"changed_files":[],"duration_ms":0,"exit_code":1,"failed":t...`},
		{name: "missing key", expr: "{{.tests.faild}}",
			wantErr: `step "fix": when "{{.tests.faild}}": no key "faild" in .tests (did you mean failed?)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := s.When("fix", tt.expr)
			switch {
			case tt.wantErr != "":
				if err == nil || err.Error() != tt.wantErr {
					t.Errorf("error = %v\nwant    %s", err, tt.wantErr)
				}
			case err != nil:
				t.Errorf("error: %v", err)
			case got != tt.want:
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

// The example of the spec: a fix runs only after a failure.
func TestWhenPreviousFailed(t *testing.T) {
	s := NewScope("", nil)
	s.Record("tests", "", StepResult{Failed: true})
	if run, err := s.When("fix", "{{.previous.failed}}"); err != nil || !run {
		t.Errorf("after a failure: %v, %v", run, err)
	}
	s.Record("tests", "", StepResult{Success: true})
	if run, err := s.When("fix", "{{.previous.failed}}"); err != nil || run {
		t.Errorf("after a success: %v, %v", run, err)
	}
}
