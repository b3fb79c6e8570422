package render

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

// renderTimeFor sets the bound on a rendering's time for one test (not
// parallel: it is the package's), and returns what puts it back. The
// runaway cases expect the size or depth limit, which a loaded machine
// (-race, a busy CI) may reach after the usual 5 s.
func renderTimeFor(d time.Duration) func() {
	old := maxRenderTime
	maxRenderTime = d
	return func() { maxRenderTime = old }
}

func TestPrompt(t *testing.T) {
	defer renderTimeFor(2 * time.Minute)()
	vars := map[string]string{"target": "src/auth", "lang": "Go"}
	tests := []struct {
		name, text string
		vars       map[string]string
		goal, want string
		wantErr    string
	}{
		{name: "plain text unchanged", text: "Review {the} code }}", vars: vars, want: "Review {the} code }}"},
		{name: "plain text with nil vars", text: "hello", want: "hello"},
		{name: "variables", text: "Review {{.target}} in {{.lang}}", vars: vars, want: "Review src/auth in Go"},
		{name: "goal", text: "Goal: {{.goal}}", goal: "Add login", want: "Goal: Add login"},
		{name: "empty goal", text: "Goal: {{.goal}}.", want: "Goal: ."},
		{name: "set overrides goal", text: "{{.goal}}", vars: map[string]string{"goal": "mine"}, goal: "file", want: "mine"},
		{name: "conditionals", text: "{{if .target}}T={{.target}}{{else}}none{{end}}", vars: vars, want: "T=src/auth"},
		{name: "functions", text: `{{printf "%q" .lang}} {{len .target}}`, vars: vars, want: `"Go" 8`},
		{name: "no html escaping", text: "{{.x}}", vars: map[string]string{"x": "<a & b>"}, want: "<a & b>"},
		{name: "multi-line", text: "one\n{{.lang}}\nthree\n", vars: vars, want: "one\nGo\nthree\n"},
		{name: "missing variable", text: "Review {{.target}}", wantErr: `prompt of task "review": missing variable "target" (set it with --set target=...)`},
		{name: "missing variable in a condition", text: "{{if .strict}}x{{end}}", vars: vars, wantErr: `prompt of task "review": missing variable "strict" (set it with --set strict=...)`},
		{name: "unclosed action", text: "Review {{.target", vars: vars, wantErr: `prompt of task "review": line 1: unclosed action`},
		{name: "unknown function", text: "\n{{shout .target}}", vars: vars, wantErr: `prompt of task "review": line 2: function "shout" not defined`},
		{name: "field of a string", text: "{{.target.dir}}", vars: vars, wantErr: `prompt of task "review": line 1, column 9: at <.target.dir>: can't evaluate field dir in type interface {}`},
		{name: "runaway output", text: "{{range 100000000}}0123456789{{end}}", wantErr: `prompt of task "review": rendered prompt is larger than 8 MiB`},
		{name: "runaway recursion", text: `{{define "a"}}{{template "a"}}{{end}}{{template "a"}}`, wantErr: "exceeded maximum template depth"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Prompt("review", tt.text, tt.vars, tt.goal)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("error: %v", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("error = %v, want %q", err, tt.wantErr)
			case tt.wantErr != "" && !strings.HasPrefix(err.Error(), `prompt of task "review": `):
				t.Errorf("error %q does not name the task", err)
			case got != tt.want:
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestPromptDoesNotModifyVars(t *testing.T) {
	vars := map[string]string{"a": "1"}
	if _, err := Prompt("t", "{{.a}}{{.goal}}", vars, "g"); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(vars, map[string]string{"a": "1"}) {
		t.Errorf("vars = %v", vars)
	}
}

func TestParseSets(t *testing.T) {
	tests := []struct {
		in      []string
		want    map[string]string
		wantErr string
	}{
		{in: nil, want: map[string]string{}},
		{in: []string{"target=src"}, want: map[string]string{"target": "src"}},
		{in: []string{"a=1", "b=x=y", "c="}, want: map[string]string{"a": "1", "b": "x=y", "c": ""}},
		{in: []string{"a=1", "a=2"}, want: map[string]string{"a": "2"}},
		{in: []string{" a =v "}, want: map[string]string{"a": "v "}},
		{in: []string{"a=1", "novalue"}, wantErr: `--set "novalue": expected key=value`},
		{in: []string{"=v"}, wantErr: `--set "=v": the key before "=" is empty`},
		{in: []string{" =v"}, wantErr: `--set " =v": the key before "=" is empty`},
		{in: []string{""}, wantErr: `--set "": expected key=value`},
	}
	for _, tt := range tests {
		got, err := ParseSets(tt.in)
		if tt.wantErr != "" {
			if err == nil || err.Error() != tt.wantErr {
				t.Errorf("ParseSets(%q) error = %v, want %q", tt.in, err, tt.wantErr)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("ParseSets(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
		}
	}
}

// FuzzPrompt checks that no template text makes Prompt panic.
func FuzzPrompt(f *testing.F) {
	for _, s := range []string{"plain", "{{.a}}", "{{.goal}}", "{{if .a}}{{.b}}{{end}}", "{{", "{{range $i, $c := .a}}{{$c}}{{end}}"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		_, _ = Prompt("t", text, map[string]string{"a": "x", "b": "y"}, "g")
	})
}

// A template that loops without writing is stopped by time, not size.
func TestPromptThatLoopsForeverIsAnError(t *testing.T) {
	old := maxRenderTime
	maxRenderTime = 100 * time.Millisecond
	defer func() { maxRenderTime = old }()
	// Long enough to outlast the bound, short enough not to burn a core for
	// the rest of the test binary once abandoned.
	_, err := Prompt("t", "{{range 50000000}}{{end}}", nil, "")
	if err == nil || !strings.Contains(err.Error(), "rendering took longer than") {
		t.Fatalf("err = %v", err)
	}
}
