package render

import (
	"errors"
	"strconv"
	"strings"
	"testing"
)

// previewAfter is a preview scope at the point where tests (alias
// test_run) and impl have run, inside loop "quality" (body: fix, check),
// with one variable and a bead.
func previewAfter(t *testing.T) *dryTest {
	t.Helper()
	p := NewDryScope("", map[string]string{"target": "./..."}, map[string]any{"id": "bd-1", "title": "Fix it", "labels": []any{"a", "b"}})
	p.Declare("tests", "test_run", "line 3")
	p.Declare("impl", "", "line 7")
	p.Declare("quality", "", "line 10")
	p.Declare("fix", "", "line 12")
	p.Declare("check", "", "line 16")
	p.Declare("report", "", "line 20")
	p.DeclareLoop("quality", []string{"fix", "check"})
	p.Record("tests", "test_run", StepResult{})
	p.Record("impl", "", StepResult{})
	p.EnterLoop("quality")
	p.NextIteration()
	return &dryTest{p}
}

// dryTest is a dry scope whose renderings return their warnings.
type dryTest struct{ *Scope }

func (d *dryTest) collect() *[]string {
	warns := new([]string)
	d.Warn = func(_, w string) { *warns = append(*warns, w) }
	return warns
}

func (d *dryTest) Render(step, field, text string) (string, []string, error) {
	warns := d.collect()
	out, err := d.Scope.Render(step, field, text)
	return out, *warns, err
}

// When is "true", "false", or "" when only the run decides.
func (d *dryTest) When(step, expr string) (string, []string, error) {
	warns := d.collect()
	ok, err := d.Scope.When(step, expr)
	if errors.Is(err, ErrRunTime) {
		return "", *warns, nil
	}
	return strconv.FormatBool(ok), *warns, err
}

func (d *dryTest) AgentPrompt(step string, spells *Spells, spell string, inputs map[string]string) (PromptParts, []string, error) {
	warns := d.collect()
	pp, err := d.Scope.AgentPromptParts(step, spells, spell, inputs)
	return pp, *warns, err
}

func newDryTest(goal string) *dryTest { return &dryTest{NewDryScope(goal, nil, nil)} }

func TestPreviewRenderPlaceholders(t *testing.T) {
	t.Parallel()
	p := previewAfter(t)
	for _, tt := range []struct{ text, want string }{
		{"{{.tests.output}}", "⟨tests.output⟩"},
		{"{{.test_run.exit_code}}", "⟨test_run.exit_code⟩"},
		// Any key of outputs, at any depth: the agent chooses them.
		{"{{.impl.outputs.notes}} {{.impl.outputs.whatever.deep}}", "⟨impl.outputs.notes⟩ ⟨impl.outputs.whatever.deep⟩"},
		{`{{(step "impl").outputs.x}} {{step "tests"}}`, "⟨impl.outputs.x⟩ ⟨tests⟩"},
		{"{{$.tests.summary}}", "⟨tests.summary⟩"},
		{"{{.loop_entry.output}}|{{.quality.iteration}}", "⟨loop_entry.output⟩|⟨quality.iteration⟩"},
		{`{{printf "%q" .tests.output}}`, `⟨printf "%q" .tests.output⟩`},
		// Known values render as a run renders them.
		{"{{.bead.title}} {{.target}} {{.bead.labels}}", `Fix it ./... ["a","b"]`},
		// A condition only a run decides shows both branches.
		{"{{if .impl.failed}}again{{else}}done{{end}}", "⟨if .impl.failed⟩again⟨else⟩done⟨end⟩"},
		{"{{if .bead.title}}bead{{else}}none{{end}}", "bead"},
		{"{{range .impl.changed_files}}- {{.}}\n{{end}}", "⟨range .impl.changed_files⟩- ⟨impl.changed_files[]⟩\n⟨end⟩"},
		{"{{range $f := .impl.outputs.files}}{{$f.path}} {{end}}", "⟨range $f := .impl.outputs.files⟩⟨impl.outputs.files[].path⟩ ⟨end⟩"},
		{"{{with .impl.outputs.notes}}Notes: {{.}}{{end}}", "⟨with .impl.outputs.notes⟩Notes: ⟨impl.outputs.notes⟩⟨end⟩"},
		{"{{$x := .tests.output}}[{{$x}}]", "[⟨tests.output⟩]"},
		// What reaches a result without a field chain finds placeholders.
		{`{{with index . "tests"}}{{.output}}{{end}}`, "⟨tests.output⟩"},
	} {
		got, warns, err := p.Render("fix", "input.x", tt.text)
		if err != nil || len(warns) > 0 {
			t.Errorf("%s: %q, %v, %v", tt.text, got, warns, err)
			continue
		}
		if got != tt.want {
			t.Errorf("%s:\n got %q\nwant %q", tt.text, got, tt.want)
		}
	}
}

func TestPreviewReferenceErrors(t *testing.T) {
	t.Parallel()
	p := previewAfter(t)
	for _, tt := range []struct{ text, want string }{
		{"{{.tests.outptu}}", `step "fix": input.x: no key "outptu" in .tests (did you mean output?)`},
		{"{{.bead.titel}}", `step "fix": input.x: no key "titel" in .bead (did you mean title?)`},
		{"{{.report.output}}", `step "fix": input.x: step "report" has not run yet at this point (it is at line 20)`},
		{"{{.tesst.output}}", `step "fix": input.x: no step or variable "tesst" (did you mean tests?)`},
		{"{{.nothing_like_it}}", `no step or variable "nothing_like_it" (a step is there once it has finished; a variable is set with --set nothing_like_it=...)`},
		{"{{.quality.output}}", `no key "output" in .quality (a loop has only iteration)`},
		{"{{.tests.output.x}}", `.tests.output is a string: it has no key "x"`},
		{"{{.tests.output}", `bad character U+007D '}'`},
	} {
		_, _, err := p.Render("fix", "input.x", tt.text)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: error %v, want %q", tt.text, err, tt.want)
		}
	}

	// Every problem of a template is reported, each on its own.
	_, _, err := p.Render("fix", "input.x", "{{.tests.outptu}}\n{{.report.output}}")
	var multi interface{ Unwrap() []error }
	if !errors.As(err, &multi) || len(multi.Unwrap()) != 2 {
		t.Fatalf("want 2 errors, got %v", err)
	}
	if got := multi.Unwrap()[1].Error(); !strings.HasPrefix(got, `step "fix": input.x: line 2: step "report"`) {
		t.Errorf("second error %q", got)
	}
}

// In a loop, .previous on its first step and the steps after this one are
// defined from the second iteration on: a template may guard them, so they
// are warnings, shown as placeholders.
func TestPreviewLoopValuesFromTheSecondIteration(t *testing.T) {
	t.Parallel()
	p := previewAfter(t)
	for _, tt := range []struct{ text, want, warn string }{
		{"{{.check.output}}", "⟨check.output⟩", `step "check" has not run yet at this point (it is at line 16); in loop "quality" it has a result only from the second iteration on`},
		{"{{if gt .quality.iteration 1}}{{.previous.output}}{{end}}", "⟨if gt .quality.iteration 1⟩⟨previous.output⟩⟨end⟩", `.previous is undefined on the first step of loop "quality"`},
	} {
		got, warns, err := p.Render("fix", "input.x", tt.text)
		if err != nil || got != tt.want || len(warns) != 1 || !strings.Contains(warns[0], tt.warn) {
			t.Errorf("%s: %q, %q, %v", tt.text, got, warns, err)
		}
	}
}

func TestPreviewPreviousAndLoops(t *testing.T) {
	t.Parallel()
	p := newDryTest("")
	if _, _, err := p.Render("first", "command", "{{.previous.output}}"); err == nil || !strings.Contains(err.Error(), "no step has run before this one") {
		t.Errorf("previous before any step: %v", err)
	}
	if _, _, err := p.Render("first", "command", "{{.loop_entry.output}}"); err == nil || !strings.Contains(err.Error(), "only inside a loop") {
		t.Errorf("loop_entry outside a loop: %v", err)
	}
	p.Record("a", "", StepResult{})
	p.DeclareLoop("l", []string{"b"})
	p.EnterLoop("l")
	p.NextIteration()
	p.Record("b", "", StepResult{})
	if got, _, err := p.Render("c", "command", "{{.previous.failed}}"); err != nil || got != "⟨previous.failed⟩" {
		t.Errorf("previous in a loop after a step: %q, %v", got, err)
	}
	p.ExitLoop()
	if got, _, err := p.Render("d", "command", "{{.l.iteration}} {{.b.output}}"); err != nil || got != "⟨l.iteration⟩ ⟨b.output⟩" {
		t.Errorf("after the loop: %q, %v", got, err)
	}
}

func TestPreviewBead(t *testing.T) {
	t.Parallel()
	// Without a bead, .bead is empty as in a run; a key read from it is a
	// warning with a placeholder, not an error: the grimoire is fine.
	p := newDryTest("")
	got, warns, err := p.Render("s", "input.x", "{{.bead.title}}|{{if .bead}}bead{{else}}none{{end}}|{{.bead}}")
	if err != nil || got != "⟨bead.title⟩|none|{}" {
		t.Errorf("got %q, %v", got, err)
	}
	if len(warns) != 1 || !strings.Contains(warns[0], "no bead is given") {
		t.Errorf("warnings %q", warns)
	}
}

func TestPreviewCommand(t *testing.T) {
	t.Parallel()
	p := previewAfter(t)
	got, warns, err := p.Command("check", `go test {{.target}} && echo {{.tests.output}} '{{.impl.summary}}' "{{.bead.title}}" {{raw .impl.outputs.flags}}`)
	if err != nil {
		t.Fatal(err)
	}
	// Each value is quoted for where it lands, as the run will.
	if want := `go test './...' && echo '⟨tests.output⟩' '⟨impl.summary⟩' "Fix it" ⟨impl.outputs.flags⟩`; got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	if len(warns) != 1 || !strings.Contains(warns[0], "{{raw}}") {
		t.Errorf("warnings %q", warns)
	}
	// A condition known only at run time shows both branches, each value
	// placed as in its branch; the markers are no shell text.
	got, _, err = p.Command("check", `{{if (step "tests").failed}}echo "failed: {{.bead.title}}"{{else}}echo '{{.target}}' > x{{end}}`)
	if want := `⟨if (step "tests").failed⟩echo "failed: Fix it"⟨else⟩echo './...' > x⟨end⟩`; err != nil || got != want {
		t.Errorf("got  %s, %v\nwant %s", got, err, want)
	}
	// A value the shell would read as code is an error, with its line.
	if _, _, err := p.Command("check", "true\necho $(ls {{.tests.output}})"); err == nil || !strings.Contains(err.Error(), `step "check": command: line 2: {{.tests.output}} is inside $(...)`) {
		t.Errorf("a value inside $(...): %v", err)
	}
	if got, _, err := p.Command("x", "echo plain"); err != nil || got != "echo plain" {
		t.Errorf("plain command: %q, %v", got, err)
	}
}

func TestPreviewWhen(t *testing.T) {
	t.Parallel()
	p := previewAfter(t)
	for _, tt := range []struct{ expr, want, err string }{
		{"{{.impl.failed}}", "", ""},
		{`{{eq .target "./..."}}`, "true", ""},
		{`{{eq .bead.id "x"}}`, "false", ""},
		{"{{.target}}", "", "must be true or false"},
		{"{{.impl.faild}}", "", "did you mean failed?"},
	} {
		got, _, err := p.When("fix", tt.expr)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("%s: error %v, want %q", tt.expr, err, tt.err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("%s: %q, %v; want %q", tt.expr, got, err, tt.want)
		}
	}
}

func TestPreviewAgentPrompt(t *testing.T) {
	t.Parallel()
	base := project(t, map[string]string{
		".vibeteam/spells/fix.md":  "Fix {{.bead.title}}.\n{{include \"ctx.md\" out=.tests.output}}\nNotes: {{.impl.outputs.notes}}\nInput: {{.extra}}",
		".vibeteam/spells/ctx.md":  "Tests said: {{.out}} (exit {{.tests.exit_code}})",
		".vibeteam/spells/bad.md":  "{{include \"typo.md\"}}",
		".vibeteam/spells/bad2.md": "{{include \"ctx2.md\"}}",
		".vibeteam/spells/ctx2.md": "{{.tests.outptu}}",
	})
	sp := NewSpells(base)
	p := previewAfter(t)
	inputs, err := p.RenderInputs("fix", map[string]string{"extra": "{{.test_run.summary}}"})
	if err != nil {
		t.Fatal(err)
	}
	pp, warns, err := p.AgentPrompt("fix", sp, "fix", inputs)
	if err != nil || len(warns) > 0 {
		t.Fatalf("%v %v", warns, err)
	}
	want := "Fix Fix it.\nTests said: ⟨tests.output⟩ (exit ⟨tests.exit_code⟩)\nNotes: ⟨impl.outputs.notes⟩\nInput: ⟨test_run.summary⟩"
	if pp.Content != want {
		t.Errorf("content\n got %q\nwant %q", pp.Content, want)
	}
	if pp.Spell.Source != ".vibeteam/spells/fix.md" || pp.System.Source != "builtin:system-prompt.md" {
		t.Errorf("sources %q %q", pp.Spell.Source, pp.System.Source)
	}
	if !strings.Contains(pp.Prompt, want) || !strings.Contains(pp.Prompt, "How to finish") {
		t.Errorf("prompt %q", pp.Prompt)
	}

	if _, _, err := p.AgentPrompt("fix", sp, "fxi", nil); err == nil || !strings.Contains(err.Error(), `did you mean "fix"?`) {
		t.Errorf("unknown spell: %v", err)
	}
	if _, _, err := p.AgentPrompt("fix", sp, "bad", nil); err == nil || !strings.Contains(err.Error(), `partial "typo" not found`) {
		t.Errorf("unknown partial: %v", err)
	}
	_, _, err = p.AgentPrompt("fix", sp, "bad2", nil)
	if err == nil || !strings.Contains(err.Error(), `include "ctx2" (.vibeteam/spells/ctx2.md): line 1: no key "outptu" in .tests (did you mean output?)`) {
		t.Errorf("typo in a partial: %v", err)
	}

	// A partial's warning names the partial and its line.
	q := newDryTest("")
	sp2 := NewSpells(project(t, map[string]string{
		".vibeteam/spells/outer.md": "A\n{{include \"inner.md\"}}",
		".vibeteam/spells/inner.md": "B\n{{.bead.title}}",
	}))
	pp, warns, err = q.AgentPrompt("w", sp2, "outer", nil)
	if err != nil || pp.Content != "A\nB\n⟨bead.title⟩" || len(warns) != 1 ||
		!strings.HasPrefix(warns[0], `step "w": spell "outer" (.vibeteam/spells/outer.md): include "inner" (.vibeteam/spells/inner.md): line 2: reads .bead.title`) {
		t.Errorf("%q, %q, %v", pp.Content, warns, err)
	}

	// The built-in spells preview without a bead: the goal branch.
	q = newDryTest("ship it")
	q.Record("tests", "", StepResult{})
	pp, _, err = q.AgentPrompt("fix", sp, "fix-tests", map[string]string{"test_output": "⟨tests.output⟩"})
	if err != nil || !strings.Contains(pp.Content, "The goal of this work: ship it") || !strings.Contains(pp.Content, "⟨tests.output⟩") {
		t.Errorf("fix-tests: %q, %v", pp.Content, err)
	}
}

// TestDryRendersAsRun: a preview's scope is a run's Scope, dry. Whatever
// depends only on known values (the goal, --set variables, the bead, the
// grimoire's and step's names, inputs, include arguments, the template
// functions) renders in a preview exactly as in a run, through the same
// parse, functions, include and data, so that the two cannot drift.
func TestDryRendersAsRun(t *testing.T) {
	t.Parallel()
	sp := NewSpells(project(t, map[string]string{
		".vibeteam/spells/s.md": "{{include \"p.md\" who=.bead.title}} in {{.workflow.name}}/{{.step.name}}: {{.goal | title}} {{list 1 .target | toJson}} {{.bead.body}} {{.bead.labels | join \",\"}} {{.extra | quote}}",
		".vibeteam/spells/p.md": "hello {{.who | upper}} ({{.bead.type}}, {{.bead.design | default \"no design\"}})",
	}))
	bead := map[string]any{"id": "bd-1", "title": "fix it", "description": "the body", "issue_type": "bug", "labels": []any{"a", "b"}}
	vars := map[string]string{"target": "./... x"}
	run := NewScope("ship it", vars)
	run.SetBead(bead)
	dry := NewDryScope("ship it", vars, bead)
	type rendered struct {
		text, when, cmd, prompt string
		err                     error
	}
	render := func(s *Scope) (r rendered) {
		s.Workflow = "g"
		var errs []error
		r.text, r.err = s.Render("st", "input.x", `{{printf "%s|%s" .goal .bead.id}} {{.bead | keys | sortAlpha | join " "}}`)
		errs = append(errs, r.err)
		ok, err := s.When("st", `{{and (eq .bead.type "bug") (hasPrefix "./" .target)}}`)
		r.when = strconv.FormatBool(ok)
		errs = append(errs, err)
		r.cmd, _, err = s.Command("st", `go test {{.target}} && echo "{{.bead.title}}" '{{.goal}}'`)
		errs = append(errs, err)
		r.prompt, err = s.AgentPrompt("st", sp, "s", map[string]string{"extra": "an input"})
		errs = append(errs, err)
		r.err = errors.Join(errs...)
		return r
	}
	want, got := render(run), render(dry)
	if want.err != nil || got.err != nil {
		t.Fatalf("run: %v\npreview: %v", want.err, got.err)
	}
	if got != want {
		t.Errorf("preview renders otherwise than run:\npreview %+v\nrun     %+v", got, want)
	}
	if !strings.Contains(want.prompt, `hello FIX IT (bug, no design) in g/st: Ship It [1,"./... x"] the body a,b "an input"`) || want.when != "true" {
		t.Errorf("run rendered %+v", want)
	}
}

// A partial's warning names the partial, in a run as in a preview.
func TestPartialWarningNamesThePartial(t *testing.T) {
	t.Parallel()
	sp := NewSpells(project(t, map[string]string{
		".vibeteam/spells/s.md": "A\n{{include \"p.md\"}}",
		".vibeteam/spells/p.md": "notes: {{.impl.outputs.notes}}",
	}))
	s := NewScope("", nil)
	s.Record("impl", "", StepResult{Success: true})
	var warned []string
	s.Warn = func(_, w string) { warned = append(warned, w) }
	if _, err := s.AgentPrompt("fix", sp, "s", nil); err != nil {
		t.Fatal(err)
	}
	want := `step "fix": spell "s" (.vibeteam/spells/s.md): include "p" (.vibeteam/spells/p.md): .impl.outputs.notes is empty`
	if len(warned) != 1 || !strings.HasPrefix(warned[0], want) {
		t.Errorf("warnings %q, want one starting %q", warned, want)
	}
}
