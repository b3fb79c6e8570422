package render

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"
)

// testScope is a run after an implement step and a failed test step.
func testScope() *Scope {
	s := NewScope("Add login", map[string]string{"target": "src/auth", "goal_note": "x"})
	s.SetBead(map[string]any{"id": "bd-42", "title": "Login page", "labels": []any{"ui", "auth"}})
	s.Record("implement", "implementation", StepResult{
		Output: "done", Success: true, Summary: "Added the page",
		Outputs:      map[string]any{"notes": "see PR", "count": float64(3), "nested": map[string]any{"k": "v"}, "none": nil},
		DurationMS:   1500,
		ChangedFiles: []string{"a.go", "b.go"},
	})
	s.Record("run-tests", "", StepResult{Output: "FAIL: TestLogin\n", Failed: true, ExitCode: 1})
	return s
}

func TestScopeRender(t *testing.T) {
	tests := []struct {
		name, text, want string
	}{
		{"plain text", "no template {here}", "no template {here}"},
		{"goal", "{{.goal}}", "Add login"},
		{"set variable", "{{.target}}", "src/auth"},
		{"bead field", "{{.bead.id}}: {{.bead.title}}", "bd-42: Login page"},
		{"bead list as JSON", "{{.bead.labels}}", `["ui","auth"]`},
		{"step output", "{{.implement.output}}", "done"},
		{"alias", "{{.implementation.summary}}", "Added the page"},
		{"success and failed", "{{.implement.success}} {{.implement.failed}}", "true false"},
		{"exit code", "{{(step \"run-tests\").exit_code}}", "1"},
		{"duration", "{{.implement.duration_ms}}", "1500"},
		{"changed files as JSON", "{{.implement.changed_files}}", `["a.go","b.go"]`},
		{"outputs key", "{{.implement.outputs.notes}}", "see PR"},
		{"number from JSON", "{{.implement.outputs.count}}", "3"},
		{"object as JSON", "{{.implement.outputs.nested}}", `{"k":"v"}`},
		{"null as empty", "[{{.implement.outputs.none}}]", "[]"},
		{"missing via index is empty", `[{{index .implement.outputs "absent"}}]`, "[]"},
		{"hyphenated step", `{{(step "run-tests").output}}`, "FAIL: TestLogin\n"},
		{"step function on a plain name", `{{(step "implement").output}}`, "done"},
		{"whole step as JSON", `{{step "run-tests"}}`, `{"changed_files":[],"duration_ms":0,"exit_code":1,"failed":true,"output":"FAIL: TestLogin\n","outputs":{},"status":"failed","success":false,"summary":""}`},
		{"previous is the last recorded", "{{.previous.failed}} {{.previous.exit_code}}", "true 1"},
		{"range over a list", "{{range .implement.changed_files}}<{{.}}>{{end}}", "<a.go><b.go>"},
		{"condition", "{{if .previous.failed}}fix{{else}}ok{{end}}", "fix"},
		{"no html escaping", "{{.v}}", "<a & 'b'>"},
		{"variable declaration prints nothing", "{{$x := .goal}}[{{$x}}]", "[Add login]"},
		{"defined template", `{{define "t"}}<{{.goal}}>{{end}}{{template "t" .}}`, "<Add login>"},
		{"printf result", `{{printf "%d files" (len .implement.changed_files)}}`, "2 files"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := testScope()
			s.Vars["v"] = "<a & 'b'>"
			got, err := s.Render("fix", "input.x", tt.text)
			if err != nil {
				t.Fatalf("error: %v", err)
			}
			if got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestScopeRenderErrors(t *testing.T) {
	defer renderTimeFor(2 * time.Minute)()
	tests := []struct {
		name, text, want string
	}{
		{"misspelt field of a step", "{{.implement.outptu}}",
			`step "fix": input.test_output: no key "outptu" in .implement (did you mean output?)`},
		{"the example of the issue", "{{.tests.outptu}}",
			`step "fix": input.test_output: no key "outptu" in .tests (did you mean output?)`},
		{"misspelt step", "{{.implemnt.output}}",
			`step "fix": input.test_output: no step or variable "implemnt" (did you mean implement?)`},
		{"unknown variable", "{{.nothing_like_it}}",
			`step "fix": input.test_output: no step or variable "nothing_like_it" (a step is there once it has finished; a variable is set with --set nothing_like_it=...)`},
		{"missing key under a missing output", "{{.implement.outputs.zzzzz.deeper}}",
			`step "fix": input.test_output: .implement.outputs.zzzzz is null, so it has no key "deeper"`},
		{"misspelt key of a result", "{{.implement.sumary}}",
			`step "fix": input.test_output: no key "sumary" in .implement (did you mean summary?)`},
		{"deep missing key", "{{.implement.outputs.nested.q}}",
			`step "fix": input.test_output: no key "q" in .implement.outputs.nested (it has k)`},
		{"key of null", "{{.implement.outputs.none.x}}",
			`step "fix": input.test_output: .implement.outputs.none is null, so it has no key "x"`},
		{"through step", `{{(step "run-tests").outptu}}`,
			`step "fix": input.test_output: no key "outptu" in (step "run-tests") (did you mean output?)`},
		{"unknown step in step", `{{step "run-test"}}`,
			`step "fix": input.test_output: no step "run-test" has finished (did you mean run-tests?)`},
		{"hyphen without step", `{{.run-tests.output}}`,
			`step "fix": input.test_output: bad character U+002D '-'`},
		{"misspelt bead field", "{{.bead.titel}}",
			`step "fix": input.test_output: no key "titel" in .bead (did you mean title?)`},
		{"unknown bead field", "{{.bead.zzzzzzzz}}",
			`step "fix": input.test_output: no key "zzzzzzzz" in .bead`},
		{"inside with, the chain is relative", "{{with .implement}}{{.outptu}}{{end}}",
			`step "fix": input.test_output: no key "outptu" in <.outptu>`},
		{"$ is the top", "{{with .implement}}{{$.implement.outptu}}{{end}}",
			`step "fix": input.test_output: no key "outptu" in .implement (did you mean output?)`},
		{"line of a multi-line text", "a\nb {{.implement.outptu}}",
			`step "fix": input.test_output: line 2: no key "outptu" in .implement (did you mean output?)`},
		{"syntax", "{{.goal", `step "fix": input.test_output: unclosed action`},
		{"loop_entry outside a loop", "{{.loop_entry.output}}",
			`step "fix": input.test_output: .loop_entry is defined only inside a loop`},
		{"runaway output", "{{range 100000000}}0123456789{{end}}",
			`step "fix": input.test_output: the rendered text is larger than 8 MiB`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := testScope()
			s.Record("tests", "", StepResult{Output: "ok"})
			_, err := s.Render("fix", "input.test_output", tt.text)
			if err == nil || err.Error() != tt.want {
				t.Errorf("error = %v\nwant    %s", err, tt.want)
			}
		})
	}
}

func TestScopeBeadEmpty(t *testing.T) {
	s := NewScope("g", nil)
	got, err := s.Render("a", "f", "{{if .bead}}bead{{else}}none{{end}}")
	if err != nil || got != "none" {
		t.Errorf("got %q, %v", got, err)
	}
	_, err = s.Render("a", "f", "{{.bead.title}}")
	if want := `step "a": f: no key "title" in .bead (this run has no bead)`; err == nil || err.Error() != want {
		t.Errorf("error = %v, want %s", err, want)
	}
}

func TestScopePrecedence(t *testing.T) {
	s := NewScope("file goal", map[string]string{"goal": "set goal", "tests": "a variable", "bead": "x", "previous": "y"})
	s.Record("tests", "", StepResult{Output: "step"})
	tests := []struct{ text, want string }{
		{"{{.goal}}", "set goal"},        // --set goal wins, as for stage prompts
		{"{{.tests.output}}", "step"},    // a step is more specific than a --set
		{"{{.bead}}", "{}"},              // reserved names cannot be set
		{"{{.previous.output}}", "step"}, // nor previous
	}
	for _, tt := range tests {
		got, err := s.Render("s", "f", tt.text)
		if err != nil || got != tt.want {
			t.Errorf("%s = %q, %v; want %q", tt.text, got, err, tt.want)
		}
	}
}

// The loop scoping of the spec: .previous undefined on the first step of
// the first iteration (pointing to .loop_entry), the last step of N-1 on the
// first step of N, .loop_entry the step before the loop, iterations from 1.
func TestScopeLoops(t *testing.T) {
	s := NewScope("g", nil)
	render := func(text string) (string, error) { return s.Render("tests", "input.x", text) }
	mustRender := func(text, want string) {
		t.Helper()
		got, err := render(text)
		if err != nil || got != want {
			t.Errorf("%s = %q, %v; want %q", text, got, err, want)
		}
	}

	_, err := render("{{.previous.output}}")
	if want := `step "tests": input.x: .previous is undefined: no step has run before this one`; err == nil || err.Error() != want {
		t.Errorf("before any step: %v", err)
	}
	s.Record("implement", "", StepResult{Output: "impl", Success: true})
	mustRender("{{.previous.output}}", "impl")

	s.EnterLoop("quality")
	if n := s.NextIteration(); n != 1 {
		t.Fatalf("first iteration = %d", n)
	}
	_, err = render("{{.previous.output}}")
	if want := `step "tests": input.x: .previous is undefined on the first step of loop "quality" (no step of it has run yet); use .loop_entry for the step before the loop`; err == nil || err.Error() != want {
		t.Errorf("first step of first iteration: %v", err)
	}
	mustRender("{{.loop_entry.output}} {{.loop_entry.success}}", "impl true")
	mustRender("{{.quality.iteration}}", "1")
	s.Record("tests", "", StepResult{Output: "FAIL", Failed: true, ExitCode: 1})
	mustRender("{{.previous.output}}", "FAIL")
	s.Record("fix", "", StepResult{Output: "fixed 1", Success: true})

	if n := s.NextIteration(); n != 2 {
		t.Fatalf("second iteration = %d", n)
	}
	mustRender("{{.previous.output}}", "fixed 1") // the last step of iteration 1
	mustRender("{{.loop_entry.output}}", "impl")
	mustRender("{{.quality.iteration}}", "2")
	mustRender("{{.tests.output}}", "FAIL") // iteration 1's until it runs again
	s.Record("tests", "", StepResult{Output: "ok", Success: true})
	mustRender("{{.tests.output}}", "ok")

	// A loop inside the loop, as its first step: its entry is the outer
	// loop's entry, not nothing.
	s.EnterLoop("inner")
	s.NextIteration()
	mustRender("{{.loop_entry.output}} {{.inner.iteration}} {{.quality.iteration}}", "ok 1 2")
	s.ExitLoop()
	mustRender("{{.previous.output}}", "ok") // nothing ran inside: back to the entry

	s.ExitLoop()
	mustRender("{{.quality.iteration}}", "2") // still there after the loop
	_, err = render("{{.loop_entry}}")
	if err == nil || !strings.Contains(err.Error(), "only inside a loop") {
		t.Errorf("loop_entry after the loop: %v", err)
	}
	// A loop that is the first step has an empty entry, never undefined.
	s2 := NewScope("", nil)
	s2.EnterLoop("l")
	s2.NextIteration()
	got, err := s2.Render("a", "f", "[{{.loop_entry.output}}] {{.loop_entry.success}}")
	if err != nil || got != "[] false" {
		t.Errorf("entry of a first loop = %q, %v", got, err)
	}
	// A loop recorded as a step keeps its iteration among its fields.
	s2.ExitLoop()
	s2.Record("l", "", StepResult{Output: "loop out"})
	got, err = s2.Render("a", "f", "{{.l.output}} {{.l.iteration}}")
	if err != nil || got != "loop out 1" {
		t.Errorf("loop result = %q, %v", got, err)
	}
}

// The session stores the scope as JSON; a resumed run must see the same.
func TestScopeJSONRoundTrip(t *testing.T) {
	s := testScope()
	s.EnterLoop("quality")
	s.NextIteration()
	s.Record("tests", "test_run", StepResult{Output: "o", ExitCode: 2, Failed: true})
	data, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	var back Scope
	if err := json.Unmarshal(data, &back); err != nil {
		t.Fatal(err)
	}
	const text = `{{.goal}} {{.bead.labels}} {{.implementation.outputs}} {{.test_run.exit_code}} {{.previous.output}} {{.loop_entry.output}} {{.quality.iteration}} {{eq .test_run.exit_code 2}}`
	want, err := s.Render("a", "f", text)
	if err != nil {
		t.Fatal(err)
	}
	got, err := back.Render("a", "f", text)
	if err != nil || got != want {
		t.Errorf("after JSON: %q, %v\nbefore:     %q", got, err, want)
	}
}

func TestScopeKeepsItsOwnCopy(t *testing.T) {
	outputs := map[string]any{"k": "v"}
	files := []string{"a"}
	bead := map[string]any{"title": "t"}
	s := NewScope("", nil)
	s.SetBead(bead)
	s.Record("a", "", StepResult{Outputs: outputs, ChangedFiles: files})
	outputs["k"], files[0], bead["title"] = "changed", "changed", "changed"
	got, err := s.Render("b", "f", "{{.a.outputs.k}} {{.a.changed_files}} {{.bead.title}}")
	if err != nil || got != `v ["a"] t` {
		t.Errorf("got %q, %v", got, err)
	}
}

func TestScopeResult(t *testing.T) {
	s := testScope()
	for _, name := range []string{"implement", "implementation"} {
		if r, ok := s.Result(name); !ok || r.Output != "done" {
			t.Errorf("Result(%q) = %v, %v", name, r, ok)
		}
	}
	if _, ok := s.Result("nope"); ok {
		t.Error("Result of an unknown step")
	}
}

func TestRenderInputs(t *testing.T) {
	s := testScope()
	got, err := s.RenderInputs("fix", map[string]string{"a": "{{.goal}}", "b": "plain"})
	if err != nil || !reflect.DeepEqual(got, map[string]string{"a": "Add login", "b": "plain"}) {
		t.Errorf("got %v, %v", got, err)
	}
	_, err = s.RenderInputs("fix", map[string]string{"test_output": "{{.run.outptu}}"})
	if err == nil || !strings.HasPrefix(err.Error(), `step "fix": input.test_output: no step or variable "run"`) {
		t.Errorf("error = %v", err)
	}
}

func TestIsReserved(t *testing.T) {
	for _, n := range []string{"goal", "bead", "previous", "loop_entry", "spell_content"} {
		if !IsReserved(n) {
			t.Errorf("%s is not reserved", n)
		}
	}
	if IsReserved("tests") {
		t.Error("tests is reserved")
	}
}

func TestScopeRenderThatLoopsForeverIsAnError(t *testing.T) {
	old := maxRenderTime
	maxRenderTime = 100 * time.Millisecond
	defer func() { maxRenderTime = old }()
	// It prints (nothing), so once abandoned it stops at its next value
	// rather than burning a core for the rest of the test binary.
	_, err := testScope().Render("s", "f", `{{range 1000000000}}{{""}}{{end}}`)
	if err == nil || !strings.Contains(err.Error(), `step "s": f: rendering took longer than`) {
		t.Fatalf("err = %v", err)
	}
}

func TestValueString(t *testing.T) {
	tests := []struct {
		v    any
		want string
	}{
		{nil, ""},
		{"s", "s"},
		{true, "true"},
		{3, "3"},
		{int64(-4), "-4"},
		{float64(2.5), "2.5"},
		{float64(1e21), "1e+21"},
		{[]any{"a", 1.0}, `["a",1]`},
		{map[string]any{"b": "<&>", "a": nil}, `{"a":null,"b":"<&>"}`},
		{[]string(nil), ""},
		{(*int)(nil), ""},
	}
	for _, tt := range tests {
		got, err := valueString(tt.v)
		if err != nil || got != tt.want {
			t.Errorf("valueString(%#v) = %q, %v; want %q", tt.v, got, err, tt.want)
		}
	}
}

// FuzzScopeTemplates checks that no template text makes rendering panic, as
// text, as a command, as a condition, or through the include rewriting.
func FuzzScopeTemplates(f *testing.F) {
	for _, s := range []string{
		"plain", "{{.goal}}", "{{.implement.outputs.nested.k}}", `{{(step "run-tests").output}}`,
		"{{.previous.x.y}}", "{{with .implement}}{{.outptu}}{{end}}", `{{define "a"}}{{.x}}{{end}}{{template "a" .}}`,
		`{{include "a.md" k={{.x}}}}`, `{{include "a.md" k="v" -}}`, "{{raw .goal}} '{{.goal}}'", "{{$x := 1}}{{$x}}",
		"{{range $i, $v := .bead.labels}}{{$i}}{{$v}}{{end}}", "{{", "{{include",
	} {
		f.Add(s)
	}
	s := testScope()
	f.Fuzz(func(t *testing.T, text string) {
		if strings.Contains(text, "range") {
			return // a range over a huge number only tests the time limit
		}
		_, _ = s.Render("s", "f", text)
		_, _, _ = s.Command("s", text)
		_, _ = s.When("s", text)
		_, _ = CommandWarnings("s", text)
		_, _ = rewriteIncludes(text)
	})
}
