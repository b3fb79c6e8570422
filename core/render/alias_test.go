package render

import (
	"strings"
	"testing"
)

// coven's names: .bead.body and .bead.type, a step's .status, .workflow.name
// and .step.name; and the bead fields bd omits when empty.
func TestCovenAliases(t *testing.T) {
	tests := []struct {
		name, text, want string
	}{
		{"bead body is the description", "{{.bead.body}}", "Needs a form"},
		{"bead type is issue_type", "{{.bead.type}}", "feature"},
		{"status of a failed step", `{{(step "run-tests").status}}`, "failed"},
		{"status of a successful step", "{{.implement.status}}", "success"},
		{"status in coven's when", `{{eq (step "run-tests").status "failed"}}`, "true"},
		{"workflow name", "{{.workflow.name}}", "implement-bead"},
		{"step name", "{{.step.name}}", "fix"},
		{"omitted design is empty", "[{{.bead.design}}]", "[]"},
		{"omitted assignee is empty", "[{{.bead.assignee}}]", "[]"},
		{"omitted notes with default", `{{.bead.notes | default "none"}}`, "none"},
		{"omitted dependencies are a list", "{{.bead.dependencies}}", "[]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := testScope()
			s.Workflow = "implement-bead"
			s.SetBead(map[string]any{"id": "bd-42", "title": "Login page", "description": "Needs a form", "issue_type": "feature"})
			got, err := s.Render("fix", "input.x", tt.text)
			if err != nil {
				t.Fatalf("Render(%q): %v", tt.text, err)
			}
			if got != tt.want {
				t.Errorf("Render(%q) = %q, want %q", tt.text, got, tt.want)
			}
		})
	}
}

// Without a bead, .bead stays empty and a field of it is an error.
func TestNoBeadStillAnError(t *testing.T) {
	s := NewScope("g", nil)
	_, err := s.Render("fix", "input.x", "{{.bead.body}}")
	if err == nil || !strings.Contains(err.Error(), "this run has no bead") {
		t.Fatalf("err = %v", err)
	}
}

// .workflow.name and .step.name are in the system prompt too.
func TestSystemPromptNames(t *testing.T) {
	dir := project(t, map[string]string{".vibeteam/system-prompt.md": "[{{.workflow.name}}/{{.step.name}}] {{.spell_content}}"})
	s := NewScope("g", nil)
	s.Workflow = "wf"
	got, err := s.AgentPrompt("review", NewSpells(dir), "Do {{.step.name}}\nnow", nil)
	if err != nil {
		t.Fatal(err)
	}
	if got != "[wf/review] Do review\nnow" {
		t.Fatalf("prompt = %q", got)
	}
}

// An output key the agent did not report renders empty, with a warning,
// wherever a template reads it; other unknown keys stay errors.
func TestMissingOutputIsEmpty(t *testing.T) {
	var warned []string
	s := testScope()
	s.Warn = func(step, w string) { warned = append(warned, step+"|"+w) }
	got, err := s.Render("fix", "input.issues", `[{{.implement.outputs.issues}}][{{.implementation.outputs.issues | default "[]"}}][{{(step "run-tests").outputs.x}}][{{.previous.outputs.y}}]`)
	if err != nil {
		t.Fatal(err)
	}
	if got != "[][[]][][]" {
		t.Errorf("got %q", got)
	}
	want := []string{
		`fix|step "fix": input.issues: .implement.outputs.issues is empty: the agent did not report "issues" in its outputs`,
		`fix|step "fix": input.issues: .implementation.outputs.issues is empty: the agent did not report "issues" in its outputs`,
		`fix|step "fix": input.issues: (step "run-tests").outputs.x is empty: the agent did not report "x" in its outputs`,
		`fix|step "fix": input.issues: .previous.outputs.y is empty: the agent did not report "y" in its outputs`,
	}
	if strings.Join(warned, "\n") != strings.Join(want, "\n") {
		t.Errorf("warnings:\n%s\nwant\n%s", strings.Join(warned, "\n"), strings.Join(want, "\n"))
	}
	// The scope itself is unchanged: the next rendering warns again.
	if _, ok := s.Steps["implement"].Outputs["issues"]; ok {
		t.Error("the scope's outputs were changed")
	}
	// In a when, a spell and a command as well.
	warned = nil
	if ok, err := s.When("fix", `{{not .implement.outputs.needs_fixes}}`); err != nil || !ok {
		t.Errorf("When = %v, %v", ok, err)
	}
	if _, err := s.AgentPrompt("fix", NewSpells(t.TempDir()), "Issues: {{.implement.outputs.issues}}\n.", nil); err != nil {
		t.Error(err)
	}
	if len(warned) != 2 {
		t.Errorf("warnings: %q", warned)
	}
	cmd, warnings, err := s.Command("report", "echo x{{.implement.outputs.absent}}y")
	if err != nil || cmd != "echo x''y" || len(warnings) != 1 || !strings.Contains(warnings[0], `.implement.outputs.absent is empty`) {
		t.Errorf("Command = %q, %q, %v", cmd, warnings, err)
	}
	// A misspelt step or result key is still an error.
	for text, want := range map[string]string{
		"{{.implemnt.outputs.x}}":  "did you mean implement?",
		"{{.implement.ouputs.x}}":  "did you mean output",
		"{{.goal.outputs.x}}":      "",
		"{{.bead.outputs.issues}}": "no key \"outputs\" in .bead",
	} {
		_, err := s.Render("fix", "input.x", text)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: err = %v, want %q", text, err, want)
		}
	}
}

// preview lists an output key read from an agent as optional.
func TestPreviewListsOptionalOutputs(t *testing.T) {
	p := newDryTest("g")
	p.Declare("review", "findings", "line 3")
	p.Record("review", "findings", StepResult{})
	out, warnings, err := p.Render("fix", "input.issues", "{{.findings.outputs.issues}} {{(step \"review\").outputs.a}} {{.findings.output}}")
	if err != nil {
		t.Fatal(err)
	}
	if out != "⟨findings.outputs.issues⟩ ⟨review.outputs.a⟩ ⟨findings.output⟩" || len(warnings) != 0 {
		t.Errorf("out %q, warnings %q", out, warnings)
	}
	if got := strings.Join(p.Optional(), " "); got != ".findings.outputs.issues .review.outputs.a" {
		t.Errorf("optional: %s", got)
	}
}
