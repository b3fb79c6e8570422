package workflow

import (
	"reflect"
	"slices"
	"testing"
)

// stored is a definition as it comes back from a session file: no positions.
func stored() *Definition {
	return &Definition{
		Kind: KindStages, ID: "wf", Source: "wf.yaml",
		Steps: []Step{
			{Type: StepStage, ID: "plan", Tasks: []Task{
				{ID: "architect", Adapter: "claude", ExecutionMode: ModeHeadless, Prompt: "plan it"},
			}},
			{Type: StepStage, ID: "build", Tasks: []Task{
				{ID: "frontend", Adapter: "gemini", ExecutionMode: ModeInteractive},
				{ID: "backend", Adapter: "codex", ExecutionMode: ModeInteractive, Prompt: "build it"},
			}},
		},
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name   string
		change func(d *Definition)
		opts   LoadOptions
		want   []string
	}{
		{name: "valid", change: func(*Definition) {}, opts: defaultOpts()},
		{name: "no adapter registry", change: func(d *Definition) { d.Steps[0].Tasks[0].Adapter = "mine" }},
		{name: "unknown adapter", opts: defaultOpts(),
			change: func(d *Definition) { d.Steps[1].Tasks[0].Adapter = "clade" },
			want:   []string{`wf.yaml: stages[1].tasks[0].adapter: unknown adapter "clade" (known: claude, codex, gemini, opencode, shell)`}},
		{name: "empty registry", opts: LoadOptions{Adapters: emptyRegistry{}},
			change: func(d *Definition) {},
			want: []string{
				`wf.yaml: stages[0].tasks[0].adapter: unknown adapter "claude" (no adapters are registered)`,
				`wf.yaml: stages[1].tasks[0].adapter: unknown adapter "gemini" (no adapters are registered)`,
				`wf.yaml: stages[1].tasks[1].adapter: unknown adapter "codex" (no adapters are registered)`,
			}},
		{name: "no stages", change: func(d *Definition) { d.Steps = nil },
			want: []string{`wf.yaml: stages: a workflow needs at least one stage`}},
		{name: "no tasks", change: func(d *Definition) { d.Steps[1].Tasks = nil },
			want: []string{`wf.yaml: stages[1].tasks: stage "build" needs at least one task`}},
		{name: "missing ids and adapter", change: func(d *Definition) {
			d.ID = ""
			d.Steps[0].ID = ""
			d.Steps[0].Tasks[0].ID = ""
			d.Steps[0].Tasks[0].Adapter = ""
		}, want: []string{
			`wf.yaml: missing required key "id"`,
			`wf.yaml: stages[0]: missing required key "id"`,
			`wf.yaml: stages[0].tasks[0]: missing required key "id"`,
			`wf.yaml: stages[0].tasks[0]: missing required key "adapter"`,
		}},
		{name: "duplicates", change: func(d *Definition) {
			d.Steps[1].ID = "plan"
			d.Steps[1].Tasks[1].ID = "architect"
		}, want: []string{
			`wf.yaml: stages[1].id: duplicate stage id "plan" (first defined at stages[0].id)`,
			`wf.yaml: stages[1].tasks[1].id: duplicate task id "architect" (first defined at stages[0].tasks[0].id)`,
		}},
		{name: "bad mode", change: func(d *Definition) { d.Steps[1].Tasks[1].ExecutionMode = "Headless" },
			want: []string{`wf.yaml: stages[1].tasks[1].executionMode: must be "interactive", "headless" or "acp", got "Headless" (did you mean "headless"?)`}},
		{name: "empty mode is interactive", change: func(d *Definition) { d.Steps[1].Tasks[0].ExecutionMode = "" }},
		{name: "headless without prompt", change: func(d *Definition) { d.Steps[0].Tasks[0].Prompt = "\n" },
			want: []string{`wf.yaml: stages[0].tasks[0].prompt: a headless task needs a prompt`}},
		{name: "force headless", opts: LoadOptions{ForceHeadless: true}, change: func(d *Definition) {},
			want: []string{`wf.yaml: stages[1].tasks[0].prompt: task "frontend" has no prompt; --headless runs every task headless, and a headless task needs a prompt`}},
		{name: "negative timeout", change: func(d *Definition) { d.Steps[0].Tasks[0].Timeout = -1 },
			want: []string{`wf.yaml: stages[0].tasks[0].timeout: must be a positive duration`}},
		{name: "bad id", change: func(d *Definition) { d.Steps[0].Tasks[0].ID = "a\x1b[2J" },
			want: []string{`wf.yaml: stages[0].tasks[0].id: invalid task id "a\x1b[2J": must not contain control characters`}},
		{name: "grimoire", change: func(d *Definition) { d.Kind = KindGrimoire },
			want: []string{`wf.yaml: steps[0]: missing required key "name"`, `wf.yaml: steps[1]: missing required key "name"`}},
		{name: "unknown kind", change: func(d *Definition) { d.Kind = "bogus" },
			want: []string{`wf.yaml: kind: unknown kind "bogus"`}},
		{name: "unknown step type", change: func(d *Definition) { d.Steps[1].Type = "loop" },
			want: []string{`wf.yaml: stages[1]: step type "loop" is not supported yet`}},
		{name: "no source", change: func(d *Definition) { d.Source = ""; d.Steps[1].Tasks[0].Adapter = "" },
			want: []string{`stages[1].tasks[0]: missing required key "adapter"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			def := stored()
			tt.change(def)
			before := stripPos(def)
			errs := Validate(def, tt.opts)
			if got := errLines(errs.Err()); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("errors:\n got: %q\nwant: %q", got, tt.want)
			}
			if len(tt.want) == 0 && errs != nil {
				t.Errorf("Validate returned a non-nil empty list")
			}
			if !reflect.DeepEqual(stripPos(def), before) {
				t.Error("Validate modified the definition")
			}
		})
	}
}

type emptyRegistry struct{}

func (emptyRegistry) Has(string) bool { return false }
func (emptyRegistry) Names() []string { return nil }

func TestValidateNil(t *testing.T) {
	if errs := Validate(nil, LoadOptions{}); len(errs) != 1 {
		t.Errorf("Validate(nil) = %v, want one error", errs)
	}
}

// TestValidateMatchesParse checks that Parse and Validate word the semantic
// problems the same way: a definition stored when it was valid and checked
// again under other options (other adapters, --headless) must read like the
// file had been loaded with them.
func TestValidateMatchesParse(t *testing.T) {
	src := `id: wf
stages:
  - id: s
    tasks:
      - id: a
        adapter: mine
      - id: b
        adapter: claude
        executionMode: headless
        prompt: go
`
	def, err := Parse([]byte(src), "wf.yaml", LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	opts := LoadOptions{Adapters: fake{}, ForceHeadless: true}
	_, perr := Parse([]byte(src), "wf.yaml", opts)
	fromParse := perr.(ErrorList)
	fromValidate := Validate(def, opts)
	if len(fromParse) != 2 || len(fromParse) != len(fromValidate) {
		t.Fatalf("Parse: %v\nValidate: %v", fromParse, fromValidate)
	}
	// Positions differ (Parse points at values, Validate at tasks), so does
	// the order; the words must not.
	words := func(l ErrorList) []string {
		var out []string
		for _, e := range l {
			out = append(out, e.Field+": "+e.Msg)
		}
		slices.Sort(out)
		return out
	}
	if p, v := words(fromParse), words(fromValidate); !reflect.DeepEqual(p, v) {
		t.Errorf("Parse: %q\nValidate: %q", p, v)
	}
	// A definition still in memory keeps the positions of its tasks.
	for _, e := range fromValidate {
		if e.Pos.Line == 0 {
			t.Errorf("Validate lost the position: %v", e)
		}
	}
}

func TestNormalize(t *testing.T) {
	def := stored()
	def.Steps[1].Tasks[0].ExecutionMode = ""
	Normalize(def, LoadOptions{})
	if got := def.Steps[1].Tasks[0].ExecutionMode; got != ModeInteractive {
		t.Errorf("mode = %q, want interactive", got)
	}
	Normalize(def, LoadOptions{ForceHeadless: true})
	for _, s := range def.Steps {
		for _, task := range s.Tasks {
			if task.ExecutionMode != ModeHeadless {
				t.Errorf("task %s mode = %q, want headless", task.ID, task.ExecutionMode)
			}
		}
	}
	Normalize(nil, LoadOptions{})
}
